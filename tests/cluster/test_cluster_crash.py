"""Crash safety of the controller (`gpuwardd --backend slurm`) on a real two-node Slurm
cluster (tests/cluster/slurmcluster.py): kill -9 of the controller with submissions in flight
loses no acknowledged submission and submits no job twice to Slurm, even when it dies between
sbatch's answer and the store's record of the Slurm id (every sbatch carries
--comment=gpuward:JOB:ATTEMPT, by which the restarted daemon finds the job); kill -9 of a node
agent turns its node stale, loses nothing of the controller's, and the node comes back with a
new agent.  Needs root, network namespaces, slurm-wlm and munge; exits 77 (skipped) with the
reason where they are missing."""
import collections
import json
import os
import shutil
import signal
import sys
import threading
import unittest

import slurmcluster
from slurmcluster import gwtest
from test_cluster_agents import Agents, AgentTokens  # noqa: E402

WHY_NOT = slurmcluster.why_not_here()


def slurm_jobs_by_name(c):
    """{job name: [Slurm job ids]} of every job Slurm lists, ended ones too."""
    jobs = collections.defaultdict(list)
    for line in c.cmd("squeue", "-h", "--states=all", "-o", "%i|%j").splitlines():
        sid, name = line.split("|", 1)
        jobs[name].append(int(sid))
    return jobs


def submitted_to_slurm(job):
    return [e["message"] for e in job["events"] if e["kind"] == "slurm_job"]


class Wrapper:
    """An sbatch first on the daemon's PATH: the real one, then, while the file `stall` exists,
    a pause before exiting, holding the daemon between sbatch's answer and its record of it."""

    def __init__(self, d):
        self.dir = os.path.join(d.dir, "wrap")
        os.makedirs(self.dir)
        os.chmod(self.dir, 0o777)  # the wrapper runs as the job's user
        self.stall, self.stalled = os.path.join(self.dir, "stall"), os.path.join(self.dir, "stalled")
        with open(os.path.join(self.dir, "sbatch"), "w") as f:
            f.write(f"""#!/bin/sh
{shutil.which("sbatch")} "$@"
rc=$?
if [ -e {self.stall} ]; then
    echo $$ > {self.stalled}.tmp && mv {self.stalled}.tmp {self.stalled}
    exec sleep 60
fi
exit $rc
""")
        os.chmod(os.path.join(self.dir, "sbatch"), 0o755)

    def env(self):
        return {"PATH": f"{self.dir}:{os.environ['PATH']}"}


@unittest.skipIf(WHY_NOT, f"no Slurm cluster here: {WHY_NOT}")
class ClusterCrash(unittest.TestCase):
    def setUp(self):
        self.users = gwtest.Users(prefix="gwcb")

    def tearDown(self):
        self.users.remove_all()

    def test_kill9_between_sbatch_and_its_record(self):
        user = self.users.add("u")
        with slurmcluster.SlurmCluster(nodes=2, gpus=4) as c, \
                gwtest.Daemon(gpus=4, extra=["--backend", "slurm"], env={"SLURM_CONF": c.conf}) as d:
            w = Wrapper(d)
            d.env.update(w.env())
            d.start()
            try:
                self.one_in_the_window(c, d, w, user)
            except BaseException:
                print(d.daemon_log()[-20000:], file=sys.stderr)
                raise

    def one_in_the_window(self, c, d, w, user):
        open(w.stall, "w").close()
        jid = d.submit("--gpus", "1", "--time", "10m", "--name", "window", "--", "sleep", "300", user=user.pw_uid)
        gwtest.wait_until(lambda: os.path.exists(w.stalled), 30, what="sbatch answered, the daemon not yet told")
        with open(w.stalled) as f:
            wrapper_pid = int(f.read())
        d.kill9()
        # Slurm's commands die with the daemon (their parent-death signal); the wrapper's pause
        # is stopped here all the same, by its PID.
        if gwtest.pid_alive(wrapper_pid):
            os.kill(wrapper_pid, signal.SIGKILL)
        os.unlink(w.stall)
        self.assertEqual(len(slurm_jobs_by_name(c)["window"]), 1, "in Slurm, not yet in the store")

        d.start()
        j = d.wait_job(jid, lambda j: any(" RUNNING on " in e["message"] for e in j["events"]), timeout=60,
                       what="the job followed in Slurm again")
        sids = slurm_jobs_by_name(c)["window"]
        self.assertEqual(len(sids), 1, f"submitted once: {sids}")
        self.assertEqual(j["state"], "RUNNING")
        self.assertIn(f"attempt 1 submitted to Slurm as job {sids[0]} (found by its tag after a restart)",
                      submitted_to_slurm(j))
        self.assertIn(f"job {jid}: attempt 1 submitted to Slurm as job {sids[0]}", d.daemon_log())
        comment = c.cmd("squeue", "-h", "-j", str(sids[0]), "-o", "%k").strip()
        self.assertEqual(comment, f"gpuward:{jid}:1")
        d.cli("cancel", str(jid), user=user.pw_uid)
        d.wait_state(jid, {"CANCELLED", "FAILED", "COMPLETED"}, timeout=30)

    def test_kill9_under_load_then_an_agent(self):
        users = [self.users.add(r) for r in ("a", "b", "c")]
        with slurmcluster.SlurmCluster(nodes=2, gpus=4) as c, \
                gwtest.Daemon(gpus=4, extra=["--backend", "slurm", "--listen",
                                             f"{c.ctl_addr}:{slurmcluster._free_port()}"],
                              env={"SLURM_CONF": c.conf}) as d:
            # A fixed port: the agents post to the restarted controller where they posted before.
            d.start()
            agents = Agents(c, d, AgentTokens(d))
            try:
                self.under_load(c, d, users, agents)
            except BaseException:
                print(d.daemon_log()[-20000:], file=sys.stderr)
                raise
            finally:
                agents.stop_all()

    def nodes(self, d):
        return {n["node"]: n for n in json.loads(d.cli("gpus", "--json").stdout).get("nodes", [])}

    def under_load(self, c, d, users, agents):
        for n in c.nodes:
            agents.start(n)
        gwtest.wait_until(lambda: sorted(self.nodes(d)) == sorted(c.nodes), 30, what="both agents reporting")

        # 50 submissions from 5 threads; the controller is killed when 20 have been answered.
        acked, lock, killed = [], threading.Lock(), threading.Event()

        def submitter(k):
            for i in range(10):
                user = users[(k + i) % len(users)]
                r = d.cli("submit", "--json", "--gpus", "1", "--time", "10m", "--name", f"load{k}-{i}", "--",
                          "sleep", "300",
                          user=user.pw_uid, check=False, timeout=60)
                if r.returncode == 0:
                    with lock:
                        acked.append((json.loads(r.stdout)["id"], user, f"load{k}-{i}"))
                        if len(acked) == 20 and not killed.is_set():
                            killed.set()
                            d.kill9()
                if killed.is_set():
                    return
        threads = [threading.Thread(target=submitter, args=(k,)) for k in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertTrue(killed.is_set(), "the controller was killed under load")
        self.assertGreaterEqual(len(acked), 20)

        d.start()
        # The agents' snapshots are in memory only: the nodes come back with their next posts.
        gwtest.wait_until(lambda: sorted(self.nodes(d)) == sorted(c.nodes), 30, what="both nodes known again")
        # Every acknowledged submission is there; each job in Slurm once, none twice.
        for jid, user, name in acked:
            self.assertEqual((d.job(jid)["user"], d.job(jid)["name"]), (user.pw_name, name))

        def all_in_slurm():
            jobs = {jid: d.job(jid) for jid, _, _ in acked}
            return jobs if all(j["state"] == "RUNNING" and submitted_to_slurm(j) for j in jobs.values()) else None
        jobs = gwtest.wait_until(all_in_slurm, 60, what="every acknowledged job in Slurm")
        by_name = slurm_jobs_by_name(c)
        for jid, _, name in acked:
            self.assertEqual(len(by_name[name]), 1, f"job {jid} in Slurm once: {by_name[name]}")
        twice = {name: sids for name, sids in by_name.items() if len(sids) > 1}
        self.assertEqual(twice, {}, "no job submitted twice")

        # kill -9 of an agent: its node turns stale, the controller's jobs are as they were,
        # and a new agent brings the node back.
        n1 = c.nodes[0]
        agents.stop(n1, signal.SIGKILL)
        gwtest.wait_until(lambda: self.nodes(d)[n1]["stale"], 30, what=f"{n1} stale")
        self.assertFalse(self.nodes(d)[c.nodes[1]]["stale"])
        for jid in jobs:
            self.assertEqual(d.job(jid)["state"], "RUNNING")
        agents.start(n1)
        gwtest.wait_until(lambda: not self.nodes(d)[n1]["stale"], 30, what=f"{n1} back")
        for jid, user, _ in acked:
            d.cli("cancel", str(jid), user=user.pw_uid, check=False)


if __name__ == "__main__":
    if WHY_NOT:
        print(f"skipped: no Slurm cluster here: {WHY_NOT}")
        sys.exit(77)
    unittest.main(verbosity=2)

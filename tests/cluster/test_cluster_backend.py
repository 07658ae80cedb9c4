"""gpuwardd --backend slurm on a real two-node Slurm cluster (tests/cluster/slurmcluster.py):
a user's jobs submitted through `gpuward submit` go to Slurm with sbatch as that user, Slurm
places them, gpuwardd follows them with squeue and stops them with scancel.  Needs root,
network namespaces, slurm-wlm and munge; exits 77 (skipped) with the reason where they are
missing."""
import os
import subprocess
import sys
import unittest

import slurmcluster
from slurmcluster import gwtest

WHY_NOT = slurmcluster.why_not_here()

# Each job writes where it runs, then sleeps until it is cancelled (bounded all the same).
JOB = 'echo "$CUDA_VISIBLE_DEVICES $SLURMD_NODENAME"; sleep 300'


def slurm_events(job):
    return [e["message"] for e in job["events"] if e["kind"] in ("slurm_job", "slurm")]


def slurm_id(job):
    for m in slurm_events(job):
        if " submitted to Slurm as job " in m:
            return int(m.rsplit(" ", 1)[1])
    return None


@unittest.skipIf(WHY_NOT, f"no Slurm cluster here: {WHY_NOT}")
class BackendSlurm(unittest.TestCase):
    def test_jobs_run_on_slurm_as_their_user(self):
        users = gwtest.Users(prefix="gws")
        try:
            with slurmcluster.SlurmCluster(nodes=2, gpus=4) as c, \
                    gwtest.Daemon(gpus=4, extra=["--backend", "slurm"], env={"SLURM_CONF": c.conf}) as d:
                try:
                    self.run_jobs(c, d, users.add("u"))
                except BaseException:
                    print(d.daemon_log()[-20000:], file=sys.stderr)
                    raise
        finally:
            users.remove_all()

    def run_jobs(self, c, d, user):
        d.start()
        out = os.path.join(d.work, "out")
        os.makedirs(out)
        os.chmod(out, 0o1777)
        ids = [d.submit("--gpus", "1", "--time", "10m", "--output", f"{out}/{i}.out", "--", "sh", "-c", JOB,
                        user=user.pw_uid) for i in range(10)]

        def written(jid):
            try:
                with open(os.path.join(out, f"{ids.index(jid)}.out")) as f:
                    return f.read().strip()
            except FileNotFoundError:
                return ""

        def settled():
            jobs = {jid: d.job(jid) for jid in ids}
            run = [j for j, v in jobs.items() if any(" RUNNING on " in m for m in slurm_events(v)) and written(j)]
            wait = [j for j, v in jobs.items() if j not in run and slurm_events(v)
                    and "PENDING" in slurm_events(v)[-1] and "(None)" not in slurm_events(v)[-1]]
            return (jobs, run, wait) if len(run) == 8 and len(wait) == 2 else None
        try:
            jobs, run, wait = gwtest.wait_until(settled, 60, what="8 jobs running in Slurm, 2 waiting")
        except AssertionError as e:
            self.fail(f"{e}: squeue {c.squeue()}")

        # Where each runs: 4 per node, each with a GPU of its own, as the job itself saw it.
        seen = {}
        for jid in run:
            cvd, node = written(jid).split()
            seen.setdefault(node, []).append(cvd)
            sid = slurm_id(jobs[jid])
            self.assertIsNotNone(sid, slurm_events(jobs[jid]))
            self.assertIn(f"Slurm job {sid}: RUNNING on {node}", slurm_events(jobs[jid]))
            self.assertEqual(jobs[jid]["state"], "RUNNING")
        self.assertEqual(sorted(seen), sorted(c.nodes))
        for node, cvds in seen.items():
            self.assertEqual(sorted(cvds), ["0", "1", "2", "3"], f"{node}: a GPU each")
        for jid in wait:
            self.assertRegex(slurm_events(jobs[jid])[-1], r"PENDING, .*\((Resources|Priority)\)")

        # A restarted daemon follows the same Slurm jobs again (their ids are in the store).
        d.stop()
        d.start()
        gwtest.wait_until(lambda: d.daemon_log().count("following Slurm job") == 10, 20,
                          what="the 10 Slurm jobs adopted again")
        for jid in ids:
            self.assertEqual(d.job(jid)["state"], "RUNNING")

        # gpuward show tells the Slurm job and its node; Slurm has the jobs as the user's.
        shown = d.cli("show", run[0]).stdout
        self.assertIn(f"Slurm job {slurm_id(jobs[run[0]])}", shown)
        self.assertIn(written(run[0]).split()[1], shown)
        owners = c.cmd("squeue", "-h", "-o", "%i %u").split()
        by_id = dict(zip(owners[0::2], owners[1::2]))
        for jid in ids:
            self.assertEqual(by_id.get(str(slurm_id(jobs[jid]))), user.pw_name, "the job is the user's, not root's")

        # gpuward cancel: scancel --signal=15 reaches the job's processes in Slurm, then a plain
        # scancel at the end of the grace; the job ends CANCELLED in gpuward.  To Slurm it is
        # FAILED when its batch script died of the signal first (squeue's exit_code, a wait
        # status, 15), CANCELLED when the plain scancel came first.
        victim = run[0]
        d.cli("cancel", victim, user=user.pw_uid)
        self.assertEqual(d.wait_state(victim, {"CANCELLED", "FAILED", "COMPLETED"}, timeout=30)["state"],
                         "CANCELLED")
        sid = slurm_id(jobs[victim])
        state, status = (f.strip() for f in c.cmd("squeue", "-h", "--states=all", "-j", str(sid), "-O",
                                                  "State:|,exit_code:").split("|"))
        self.assertIn(state, ("FAILED", "CANCELLED"))
        self.assertEqual(status, "15", "SIGTERM reached the batch script")
        ended = [m for m in slurm_events(d.job(victim)) if m.startswith(f"Slurm job {sid}: {state}, wait status 15")]
        self.assertEqual(len(ended), 1, slurm_events(d.job(victim)))
        self.assertRegex(ended[0], r"; ran on gw\w+n\d$", "the end names its node")

        # The rest cancelled, then a job that exits 3 ends FAILED with exit code 3.
        for jid in ids:
            if jid != victim:
                d.cli("cancel", jid, user=user.pw_uid)
        for jid in ids:
            d.wait_state(jid, {"CANCELLED", "FAILED", "COMPLETED"}, timeout=30)
        # Without --output its output goes to gpuward's own log (made for the user), which
        # gpuward logs shows.
        bad = d.submit("--gpus", "1", "--time", "10m", "--", "sh", "-c", "echo bye from $SLURMD_NODENAME; exit 3",
                       user=user.pw_uid)
        j = d.wait_state(bad, {"CANCELLED", "FAILED", "COMPLETED", "TIMEOUT"}, timeout=60)
        self.assertEqual((j["state"], j["exit_code"]), ("FAILED", 3), slurm_events(j))
        self.assertRegex(d.cli("logs", bad, user=user.pw_uid).stdout, r"bye from gw\w+n[12]")


if __name__ == "__main__":
    if WHY_NOT:
        print(f"skipped: no Slurm cluster here: {WHY_NOT}")
        sys.exit(77)
    unittest.main(verbosity=2)

"""Failures recovered across the nodes of a real two-node Slurm cluster
(tests/cluster/slurmcluster.py), with `gpuwardd --backend slurm` as the controller:
- a node that dies under a training job (its slurmd and the job's processes killed): Slurm
  ends the job NODE_FAIL, gpuward submits it again without that node, and the run resumes
  on the other node from its last.pt, each epoch once in results.csv;
- an Xid 79 on the GPU of a training job, seen by the node's agent (fake NVML): the node is
  drained in Slurm, later jobs go elsewhere, the job recovers on the other node.
Needs root, network namespaces, slurm-wlm and munge; exits 77 (skipped) with the reason
where they are missing."""
import os
import stat
import sys
import unittest

import slurmcluster
from slurmcluster import gwtest
from test_cluster_agents import Agents, AgentTokens  # noqa: E402

WHY_NOT = slurmcluster.why_not_here()

# A dead node is DOWN (and its jobs NODE_FAIL) after this many seconds of silence.
SLURMD_TIMEOUT = 6


def slurm_events(job):
    return [e["message"] for e in job["events"] if e["kind"] in ("slurm_job", "slurm")]


def running_node(job):
    """The node the job's current Slurm job runs on, from its newest "RUNNING on" event."""
    sid = None
    for m in slurm_events(job):
        if " submitted to Slurm as job " in m and m.startswith(f"attempt {job['attempt']} "):
            sid = m.split(" submitted to Slurm as job ")[1].split(",")[0]
    for m in reversed(slurm_events(job)):
        if sid and m.startswith(f"Slurm job {sid}: RUNNING on "):
            return m.rsplit(" ", 1)[1]
    return None


def yolo_wrapper(d):
    """A `yolo` that runs the fake trainer with the fake NVML of the node Slurm put it on
    (each node's agent reads its own directory, Agents.start)."""
    bindir = os.path.join(d.dir, "bin")
    os.makedirs(bindir, exist_ok=True)
    path = os.path.join(bindir, "yolo")
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\nGPUWARD_FAKE_NVML_DIR="{d.dir}/nvml-$SLURMD_NODENAME" exec {gwtest.TRAINER} "$@"\n')
    os.chmod(path, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    return path


@unittest.skipIf(WHY_NOT, f"no Slurm cluster here: {WHY_NOT}")
class ClusterRecover(unittest.TestCase):
    def controller(self, c, listen=False):
        extra = ["--backend", "slurm"] + (["--listen", f"{c.ctl_addr}:0"] if listen else [])
        return gwtest.Daemon(gpus=4, extra=extra, env={"SLURM_CONF": c.conf})

    def results_epochs(self, d, run):
        with open(os.path.join(d.work, "runs", "detect", run, "results.csv")) as f:
            return [int(float(line.split(",")[0])) for line in f.read().splitlines()[1:]]

    def dump(self, c, d, agents=None):
        for n in (c.nodes if agents else []):
            print(f"--- agent {n}:\n{agents.log(n)[-4000:]}", file=sys.stderr)
        print(f"--- squeue: {c.squeue()}\n--- daemon:\n{d.daemon_log()[-15000:]}", file=sys.stderr)

    def test_node_failure_resumes_on_another_node(self):
        with slurmcluster.SlurmCluster(nodes=2, gpus=4, slurmd_timeout=SLURMD_TIMEOUT) as c, \
                self.controller(c) as d:
            d.start()
            try:
                self.node_failure(c, d)
            except BaseException:
                self.dump(c, d)
                raise

    def node_failure(self, c, d):
        yolo = yolo_wrapper(d)
        jid = d.submit_api([yolo, "train", "epochs=8", "name=exp", "--epoch-seconds", "1"], yolo=True, retries=3)
        j = d.wait_job(jid, running_node, timeout=60, what="the job running on a node")
        dead = running_node(j)
        last = os.path.join(d.work, "runs", "detect", "exp", "weights", "last.pt")
        gwtest.wait_until(lambda: os.path.exists(last) and len(self.results_epochs(d, "exp")) >= 2, 60,
                          what="two epochs and a checkpoint")
        c.kill_node(dead)

        j = d.wait_state(jid, ("COMPLETED", "FAILED"), timeout=SLURMD_TIMEOUT * 10 + 60)
        self.assertEqual(j["state"], "COMPLETED", j["reason"])
        self.assertEqual(self.results_epochs(d, "exp"), list(range(1, 9)), "each epoch once, resumed, not redone")
        events = slurm_events(j)
        self.assertTrue(any(m.startswith("Slurm job ") and ": NODE_FAIL" in m for m in events), events)
        self.assertTrue(any(m.startswith(f"node {dead} excluded from the next attempts") for m in events), events)
        a = j["attempts"]
        self.assertGreaterEqual(len(a), 2)
        self.assertEqual(a[0]["class"], "lost")
        self.assertIn(f"NODE_FAIL on {dead}", a[0]["evidence"], "Slurm's word, not a local supervisor's")
        self.assertEqual(a[0]["node"], dead)
        self.assertTrue(a[1]["resumed_from"].endswith("runs/detect/exp/weights/last.pt"), a[1])
        for k in a[1:]:
            self.assertNotEqual(k["node"], dead)
        self.assertEqual(len({k["slurm_job"] for k in a}), len(a), "a Slurm job of its own each")
        self.assertTrue(all(isinstance(k["slurm_job"], int) for k in a), a)
        retry = [m for m in events if m.startswith("attempt 2 submitted")]
        self.assertIn(f"excluding {dead}", retry[0])
        self.assertIn("Resuming training", d.log_text(jid))
        # gpuward show lists each attempt's node and Slurm job.
        shown = d.cli("show", str(jid)).stdout
        self.assertIn(f"on {dead} as Slurm job {a[0]['slurm_job']}", shown)

    def test_xid_drains_the_node_and_the_job_recovers_elsewhere(self):
        with slurmcluster.SlurmCluster(nodes=2, gpus=4) as c, self.controller(c, listen=True) as d:
            d.start()
            agents = Agents(c, d, AgentTokens(d))
            try:
                for n in c.nodes:
                    agents.start(n)
                self.xid(c, d)
            except BaseException:
                self.dump(c, d, agents)
                raise
            finally:
                agents.stop_all()

    def xid(self, c, d):
        yolo = yolo_wrapper(d)
        jid = d.submit_api([yolo, "train", "epochs=5", "name=xid", "--epoch-seconds", "1", "--xid-at-epoch", "3",
                            "--xid", "79", "--fault-attempt", "1"], yolo=True, retries=3)
        j = d.wait_job(jid, running_node, timeout=60, what="the job running on a node")
        bad = running_node(j)
        j = d.wait_job(jid, lambda j: j["attempt"] >= 2, timeout=60, what="the job's second attempt")
        state, reason = c.node_state(bad)
        self.assertIn("DRAIN", state)
        self.assertRegex(reason, r"^gpuward: Xid 79 on GPU \d$")
        gpu = int(reason.rsplit(" ", 1)[1])

        # Later jobs go elsewhere, while the drained node's GPUs stand idle.
        later = [d.submit_api(["sleep", "300"]) for _ in range(2)]
        for k in later:
            self.assertNotEqual(running_node(d.wait_job(k, running_node, timeout=60, what=f"job {k} running")), bad)

        j = d.wait_state(jid, ("COMPLETED", "FAILED"), timeout=90)
        self.assertEqual(j["state"], "COMPLETED", j["reason"])
        a = j["attempts"]
        self.assertIn(a[0]["class"], ("gpu_fault", "cuda_error"))
        self.assertEqual(a[0]["node"], bad)
        self.assertNotEqual(a[1]["node"], bad)
        self.assertEqual(self.results_epochs(d, "xid"), [1, 2, 3, 4, 5])
        self.assertTrue(any(m.startswith(f"node {bad} excluded from the next attempts") for m in slurm_events(j)))
        # Recorded as the node's GPU, not as the controller's own GPU of that index.
        st, body = d.api("GET", "/api/v1/gpus/events")
        self.assertEqual(st, 200, body)
        self.assertTrue(any(e["node"] == bad and e["gpu"] == gpu and e["kind"] == "xid" and
                            f"node {bad}: Xid 79 on GPU {gpu}" in (e.get("message") or "")
                            for e in body["events"]), body)
        st, body = d.api("GET", f"/api/v1/gpus/{gpu}/events")
        self.assertFalse(any(e.get("node") for e in body.get("events", [])), body)
        self.assertIn(f"{bad}:{gpu}", d.cli("gpus", "--events").stdout)

        # The admin's way back: the GPU reset, the node resumed in Slurm.
        c.cmd("scontrol", "update", f"NodeName={bad}", "State=RESUME")
        self.assertNotIn("DRAIN", c.node_state(bad)[0])
        for k in later:
            d.cli("cancel", str(k))


if __name__ == "__main__":
    if WHY_NOT:
        print(f"skipped: no Slurm cluster here: {WHY_NOT}")
        sys.exit(77)
    unittest.main(verbosity=2)

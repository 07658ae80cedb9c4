"""MIG slices on the Slurm backend, on a real two-node Slurm cluster (tests/cluster/
slurmcluster.py): node 1's seven GPUs are declared as slices (gres.conf Type=a100_1g.10gb, the
name Slurm's AutoDetect=nvml gives an A100's 1g.10gb slices), node 2 has four whole GPUs of no
type.  gpuwardd --backend slurm reads the types from scontrol show node and asks sbatch for a
slice job's slices by that type; whole-GPU jobs are kept off node 1, where Slurm itself would
put them (a plain --gres=gpu:N takes any type).  One cluster and one daemon for the class.
Needs root, network namespaces, slurm-wlm and munge; exits 77 (skipped) where they are
missing."""
import os
import sys
import unittest

import slurmcluster
from slurmcluster import gwtest

WHY_NOT = slurmcluster.why_not_here()

# Each job writes what Slurm gave it, then sleeps until it is cancelled (bounded all the same).
JOB = 'echo "$CUDA_VISIBLE_DEVICES|$SLURM_JOB_GPUS|$SLURMD_NODENAME"; sleep 300'
SLICE_TYPE = "a100_1g.10gb"
ENDED = {"CANCELLED", "FAILED", "COMPLETED", "TIMEOUT"}


def slurm_events(job):
    return [e["message"] for e in job["events"] if e["kind"] in ("slurm_job", "slurm")]


def slurm_id(job):
    for m in slurm_events(job):
        if " submitted to Slurm as job " in m:
            return int(m.split(" submitted to Slurm as job ")[1].split()[0])
    return None


@unittest.skipIf(WHY_NOT, f"no Slurm cluster here: {WHY_NOT}")
class MigOnSlurm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.users = gwtest.Users(prefix="gwm")
        cls.c = slurmcluster.SlurmCluster(nodes=2, gpus=4, gpu_types={0: [(SLICE_TYPE, 7)]})
        cls.d = None
        try:
            cls.user = cls.users.add("u")
            cls.c.start()
            cls.d = gwtest.Daemon(gpus=4, extra=["--backend", "slurm"], env={"SLURM_CONF": cls.c.conf})
            cls.d.start()
            cls.out = os.path.join(cls.d.work, "out")
            os.makedirs(cls.out)
            os.chmod(cls.out, 0o1777)
            gwtest.wait_until(lambda: f"the cluster's GPUs: {SLICE_TYPE} (7 on 1 node), 4 GPUs of no type"
                              in cls.d.daemon_log(), 20, what="the cluster's GPU types read")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.d:
                cls.d.stop()
                cls.d.cleanup()
        finally:
            cls.c.stop()
            cls.users.remove_all()

    def tearDown(self):
        # What a test leaves running is cancelled, and gone from Slurm's running jobs, before
        # the next test.
        for j in self.d.cli_json("queue")["jobs"]:
            self.d.cli("cancel", j["id"], check=False)
        self.c.cmd("scancel", "--full", "--quiet", "--partition=gpu", check=False)
        gwtest.wait_until(lambda: all(s not in ("RUNNING", "PENDING", "COMPLETING")
                                      for s, _, _ in self.c.squeue().values()), 60, what="Slurm's jobs ended")
        gwtest.wait_until(lambda: not self.d.cli_json("queue")["jobs"], 60, what="gpuward's jobs ended")

    def submit(self, gpus, name):
        return self.d.submit("--gpus", gpus, "--time", "10m", "--output", f"{self.out}/{name}.out", "--",
                             "sh", "-c", JOB, user=self.user.pw_uid)

    def written(self, name):
        try:
            with open(os.path.join(self.out, f"{name}.out")) as f:
                return f.read().strip()
        except FileNotFoundError:
            return ""

    def test_two_slice_jobs_run_side_by_side_on_the_slice_node(self):
        ids = [self.submit("1g.10gb:1", f"slice{i}") for i in range(2)]
        seen = gwtest.wait_until(lambda: all(self.written(f"slice{i}") for i in range(2))
                                 and [self.written(f"slice{i}").split("|") for i in range(2)], 60,
                                 what="both slice jobs running")
        # Slurm placed both on node 1, each on a slice of its own, at the same time.
        self.assertEqual([node for _, _, node in seen], [self.c.nodes[0]] * 2, seen)
        self.assertNotEqual(seen[0][0], seen[1][0], "a slice each")
        self.assertEqual([cvd for cvd, _, _ in seen], [gpus for _, gpus, _ in seen],
                         "CUDA_VISIBLE_DEVICES is Slurm's, as SLURM_JOB_GPUS")
        for jid in ids:
            job = self.d.job(jid)
            self.assertEqual(job["state"], "RUNNING")
            sid = slurm_id(job)
            self.assertIn(f"attempt 1 submitted to Slurm as job {sid} (as --gres=gpu:{SLICE_TYPE}:1)",
                          slurm_events(job))
            shown = self.c.cmd("scontrol", "show", "job", str(sid), "--oneliner")
            self.assertIn(f"TresPerNode=gres:gpu:{SLICE_TYPE}:1", shown)

    def test_whole_gpu_jobs_never_land_on_the_slice_node(self):
        # Slurm's own doing without gpuward: a plain --gres=gpu:1 takes a slice as well as a
        # whole GPU (so gpuward keeps whole-GPU jobs off node 1 with --exclude).
        plain = self.c.sbatch("--gres=gpu:1", "--nodelist", self.c.nodes[0], "--wrap", "sleep 300")
        gwtest.wait_until(lambda: self.c.squeue().get(plain, ("",))[0] == "RUNNING", 30,
                          what="a plain sbatch --gres=gpu:1 running on the slice node")
        self.c.cmd("scancel", str(plain))
        # Five one-GPU jobs through gpuward: four run on node 2, the fifth waits for one of
        # them although node 1 has free slices.
        ids = [self.submit("1", f"whole{i}") for i in range(5)]
        jobs = gwtest.wait_until(
            lambda: (lambda js: js if sum(any(" RUNNING on " in m for m in slurm_events(j)) for j in js) == 4
                     and sum(bool(slurm_events(j)) and "PENDING" in slurm_events(j)[-1]
                             and "(None)" not in slurm_events(j)[-1] for j in js) == 1 else None)(
                [self.d.job(i) for i in ids]), 60, what="4 whole-GPU jobs running, 1 waiting")
        for j in jobs:
            self.assertIn("(kept off 1 node of MIG slices only)", " ".join(slurm_events(j)))
            for m in slurm_events(j):
                self.assertNotIn(f"RUNNING on {self.c.nodes[0]}", m)
        for i in range(5):
            w = self.written(f"whole{i}")
            if w:
                self.assertEqual(w.split("|")[2], self.c.nodes[1])

    def test_a_profile_no_node_has_is_refused_at_submission(self):
        p = self.d.cli("submit", "--gpus", "3g.40gb", "--", "true", check=False, user=self.user.pw_uid)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(f"no node of the Slurm cluster has 3g.40gb slices (a gres type 3g.40gb or ending in _3g.40gb); "
                      f"it has {SLICE_TYPE} (7 on 1 node), 4 GPUs of no type", p.stderr)
        self.assertEqual(self.d.cli_json("queue")["jobs"], [])


if __name__ == "__main__":
    if WHY_NOT:
        print(f"skipped: no Slurm cluster here: {WHY_NOT}")
        sys.exit(77)
    unittest.main(verbosity=2)

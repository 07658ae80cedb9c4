"""A real two-node Slurm cluster on this host (tests/cluster/slurmcluster.py): what gpuward's
cluster side stands on.  Plain sbatch, no gpuward yet: one-GPU jobs fill every GPU of both
nodes, each with a GPU of its own, the rest wait with a reason, and a job's processes carry
its Slurm job id in /proc/PID/cgroup.  Needs root, network namespaces, slurm-wlm and munge;
exits 77 (skipped) with the reason where they are missing."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import slurmcluster  # noqa: E402

WHY_NOT = slurmcluster.missing_prerequisites()

# Each job prints its id, node, GPUs and the PID of its batch shell, then sleeps until the
# cluster is torn down (bounded all the same).
JOB = 'echo "JOB $SLURM_JOB_ID $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES $$"; sleep 300'


def pid_alive(pid):
    """Running, or a zombie nobody has reaped yet (init reaps the killed job steps)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@unittest.skipIf(WHY_NOT, f"no Slurm cluster here: {WHY_NOT}")
class TwoNodes(unittest.TestCase):
    def test_one_gpu_jobs_fill_both_nodes(self):
        with slurmcluster.SlurmCluster(nodes=2, gpus=4) as c:
            jids = [c.sbatch("--gres=gpu:1", f"--job-name=g{i}", "--wrap", JOB) for i in range(10)]

            def settled():
                q = c.squeue()
                run = [j for j in jids if q.get(j, ("",))[0] == "RUNNING"]
                pend = [j for j in jids if q.get(j, ("",))[0] == "PENDING"
                        and q[j][1] not in ("", "None")]
                started = all(c.output(j).startswith("JOB ") for j in run)
                return (q, run, pend) if len(run) == 8 and len(pend) == 2 and started else None
            try:
                q, run, pend = slurmcluster._wait_until(settled, 60, "8 jobs running, 2 pending")
            except TimeoutError as e:
                self.fail(f"{e}: squeue {c.squeue()}; slurmctld log:\n{c.log('slurmctld.log')[-4000:]}")

            seen = {}   # node -> [CUDA_VISIBLE_DEVICES]
            pids = []
            for j in run:
                _, jid, node, cvd, pid = c.output(j).split()[:5]
                self.assertEqual(int(jid), j)
                self.assertEqual(q[j][2], node, "the job runs where squeue says")
                seen.setdefault(node, []).append(cvd)
                with open(f"/proc/{pid}/cgroup") as f:
                    cg = f.read()
                self.assertIn(f"freezer:/slurm_{node}/uid_0/job_{j}/step_batch", cg)
                pids.append(int(pid))
            self.assertEqual(sorted(seen), sorted(c.nodes), "both nodes run jobs")
            for node, cvds in seen.items():
                self.assertEqual(sorted(cvds), ["0", "1", "2", "3"],
                                 f"{node}: each job has a GPU of its own")
            for j in pend:
                self.assertIn(q[j][1], ("Resources", "Priority"), f"job {j} waits for GPUs")
            names = (c.bridge, *c.nodes)
            daemons = [p.pid for _, p in c.procs]

        # Everything the cluster made is gone once the block ends.
        for pid in pids + daemons:
            self.assertFalse(pid_alive(pid), f"pid {pid} still runs after the tear-down")
        netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        for name in names:
            self.assertNotIn(name, netns + links)
        self.assertFalse(os.path.exists(c.dir))


if __name__ == "__main__":
    if WHY_NOT:
        print(f"skipped: no Slurm cluster here: {WHY_NOT}")
        sys.exit(77)
    unittest.main(verbosity=2)

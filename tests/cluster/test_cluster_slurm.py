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


BUILD = os.environ.get("GW_BUILD_DIR") or os.path.join(os.path.dirname(__file__), "..", "..", "build")
PROBE = os.path.join(os.path.abspath(BUILD), "tests", "cluster", "gw-slurm-probe")


def probe(*args):
    """core/slurm.h's reading of args (tests/cluster/slurm_probe.c)."""
    return subprocess.run([PROBE, *args], capture_output=True, check=True).stdout.decode()


@unittest.skipIf(WHY_NOT, f"no Slurm cluster here: {WHY_NOT}")
@unittest.skipUnless(os.access(PROBE, os.X_OK), f"{PROBE} not built (set GW_BUILD_DIR)")
class CorePieces(unittest.TestCase):
    """core/slurm.h against the real thing: gpuward's sbatch command line as sbatch and
    slurmctld read it, and what the core reads in a job's /proc/PID/cgroup, squeue and
    scontrol."""

    def test_sbatch_argv_and_what_slurm_shows(self):
        with slurmcluster.SlurmCluster(nodes=2, gpus=4) as c:
            out = os.path.join(c.dir, "out")
            # 8 GPUs on nodes of 4: two whole nodes.  A quote and a % that must arrive as
            # they are; 61 s is 2 minutes to Slurm.
            span = probe(
                "sbatch", "--name", "span", "--gpus", "8", "--gpus-per-node", "4", "--max-nodes", "2",
                "--time", "61", "--output", f"{out}/span%1.log", "--cwd", out, "--",
                "sh", "-c", "echo \"it's $SLURM_JOB_NUM_NODES $CUDA_VISIBLE_DEVICES $$\"; sleep 300"
            ).split("\0")[:-1]
            self.assertEqual(span[0], "sbatch")
            a = int(c.cmd(*span).strip().split(";")[0])
            # A retry's backoff and a node to avoid.
            later = probe("sbatch", "--name", "later", "--gpus", "1", "--begin-in", "120",
                          "--exclude", c.nodes[0], "--output", f"{out}/later.log",
                          "--", "true").split("\0")[:-1]
            b = int(c.cmd(*later).strip().split(";")[0])

            def both():
                q = c.squeue()
                return q if q.get(a, ("",))[0] == "RUNNING" and q.get(b, ("", ""))[1] == "BeginTime" else None
            q = slurmcluster._wait_until(both, 30, "the 8-GPU job running, the other waiting")
            self.assertEqual(c.cmd("scontrol", "show", "hostnames", q[a][2]).split(), c.nodes,
                             "on both nodes")
            log = os.path.join(out, "span%1.log")
            slurmcluster._wait_until(lambda: os.path.exists(log) and os.path.getsize(log) > 0, 20,
                                     f"{log}, named with its % as it is")
            with open(log) as f:
                words, nodes, gpus, pid = f.read().split()
            self.assertEqual((words, nodes, gpus), ("it's", "2", "0,1,2,3"))

            def show(jid):
                return dict(kv.split("=", 1) for kv in
                            c.cmd("scontrol", "-o", "show", "job", str(jid)).split() if "=" in kv)
            sa, sb = show(a), show(b)
            self.assertEqual(sa["TimeLimit"], "00:02:00")
            self.assertEqual(sa["NumNodes"], "2")
            self.assertEqual(sa["JobName"], "span")
            self.assertEqual(sa["Requeue"], "0", "--no-requeue: gpuward decides retries")
            self.assertEqual(sb["ExcNodeList"], c.nodes[0])

            # What the core reads in them.
            self.assertEqual(probe("proc", f"/proc/{pid}/cgroup").strip(),
                             f"job={a} step=batch uid=0 node={sa['BatchHost']}")
            self.assertEqual(probe("state", q[a][0]).strip(), "RUNNING ok")
            self.assertEqual(probe("reason", q[b][1]).strip(), "Backoff waiting")
            c.cmd("scancel", str(a))
            # COMPLETING (its processes being stopped) still holds the GPUs: RUNNING to gpuward.
            ended = slurmcluster._wait_until(
                lambda: show(a)["JobState"] not in ("RUNNING", "COMPLETING") and show(a),
                30, "the cancelled job to end")
            self.assertEqual(probe("state", ended["JobState"]).strip(), "CANCELLED cancelled")

if __name__ == "__main__":
    if WHY_NOT:
        print(f"skipped: no Slurm cluster here: {WHY_NOT}")
        sys.exit(77)
    unittest.main(verbosity=2)

"""Per-job GPU telemetry, ETA and leak detection of gpuward's jobs on a real two-node Slurm
cluster (tests/cluster/slurmcluster.py): the controller (`gpuwardd --backend slurm`, no GPU
of its own, so nothing but the nodes' agents feeds it) records each job's points from the
snapshots of its node's agent as one host records its own jobs'.  A fake trainer on node 2
declares its memory and utilisation on the fake NVML of node 2's agent and leaks 400 MiB an
epoch: `gpuward show` has its telemetry (GPU-hours, utilisation), the series has points, the
ETA is known from results.csv on the shared disk, and the leak is told as on one host; the
report counts its GPU-hours once it ended.  Needs root, network namespaces, slurm-wlm and
munge; exits 77 (skipped) with the reason where they are missing."""
import json
import os
import re
import sys
import unittest

import slurmcluster
from slurmcluster import gwtest
from test_cluster_agents import Agents, AgentTokens  # noqa: E402
from test_cluster_reclaim import AGENT, node_cmd, slurm_id  # noqa: E402

WHY_NOT = slurmcluster.why_not_here()

EPOCHS, EPOCH_S, LEAK = 10, 3, 400


@unittest.skipIf(WHY_NOT, f"no Slurm cluster here: {WHY_NOT}")
class ClusterTelemetry(unittest.TestCase):
    def test_job_on_a_node_has_telemetry_series_eta_leak_and_gpu_hours(self):
        c = slurmcluster.SlurmCluster(nodes=2, gpus=4).__enter__()
        d_none = "/nonexistent-gwct"
        d = agents = None
        ok = False
        try:
            # The head node has no GPU (no NVML: no sampler of its own), so every point, and every
            # look at the job's epochs, comes from the nodes' agents.
            d = gwtest.Daemon(gpus=0, extra=["--backend", "slurm", "--listen", f"{c.ctl_addr}:0",
                                             "--nvml-lib", os.path.join(d_none, "libnvidia-ml.so.1")],
                              env={"SLURM_CONF": c.conf})
            d.start()
            self.assertIn("no local GPUs, as a Slurm controller needs none", d.daemon_log())
            agents = Agents(c, d, AgentTokens(d), interval=AGENT)
            for n in c.nodes:
                agents.start(n)
            n1, n2 = c.nodes
            c.cmd("scontrol", "update", f"NodeName={n1}", "State=DRAIN", "Reason=gwtest")  # the job goes to n2
            argv = [gwtest.TRAINER, f"epochs={EPOCHS}", "name=ctel", "--epoch-seconds", str(EPOCH_S),
                    "--mem-mib", "3000", "--leak-mib-per-epoch", str(LEAK), "--util", "80"]
            # The trainer's words stay arguments of their own (epochs=, name=), as in a plain
            # `yolo train ...`: the daemon reads the planned epochs and the run's name there.
            jid = d.submit("--gpus", "1", "--", "sh", "-c", node_cmd(agents, [argv[0], '"$@"']), "sh", *argv[1:])
            gwtest.wait_until(lambda: slurm_id(d.job(jid)), 30, what="the job's Slurm id")

            # The leak: told once, with the evidence, as on one host.
            gwtest.wait_until(lambda: d.events(jid, "leak") or d.job(jid)["state"] != "RUNNING" and
                              d.job(jid)["state"] != "PENDING", 90, what="a leak event or the job's end")
            leak = d.events(jid, "leak")
            self.assertTrue(leak, json.dumps(d.job(jid), indent=1))
            self.assertEqual(len(leak), 1, leak)
            m = re.match(r"^GPU \d+: baseline \+(\d+) MiB/epoch for \d+ epochs; OOM in ~\d+ epochs / ~\S+; "
                         r"leak_policy warn", leak[0]["message"])
            self.assertTrue(m, leak[0]["message"])
            # The agent samples once a second, its points stamped when they reach the controller:
            # an epoch's low and peak are a few points each, so the slope is near the truth.
            self.assertTrue(LEAK / 2 <= int(m.group(1)) <= LEAK * 2, leak[0]["message"])
            j = d.job(jid)
            self.assertEqual(j["state"], "RUNNING", j["reason"])
            tel = j["telemetry"]
            self.assertIsNotNone(tel, "telemetry of a job on a node")
            self.assertGreater(tel["gpu_hours"], 0)
            self.assertGreater(tel["samples"], 3)
            self.assertEqual(len(tel["gpus"]), 1, tel)
            self.assertGreater(tel["gpus"][0]["util_mean"], 30, "the trainer's 80% (75% in validation)")
            self.assertGreaterEqual(tel["gpus"][0]["mem_peak"], 3000 << 20, "its process's memory on the node")
            tr = j["training"]
            self.assertTrue(tr["leak"]["detected"], tr)
            self.assertIsNotNone(tr["eta"], f"the ETA from results.csv: {tr}")
            self.assertEqual(tr["epochs"], EPOCHS)

            st, series = d.api("GET", f"/api/v1/jobs/{jid}/series")
            self.assertEqual(st, 200, series)
            pts = next(iter(series["gpus"].values()), [])
            self.assertGreater(len(pts), 3, series)
            _, mem = d.api("GET", f"/api/v1/jobs/{jid}/series?metric=mem")
            vals = [v for _, v in next(iter(mem["gpus"].values()))]
            self.assertGreater(max(vals), min(vals), "the leak shows in the memory series")

            show = d.cli("show", str(jid)).stdout
            self.assertIn("Telemetry", show)
            self.assertRegex(show, r"GPU-hours: 0\.\d\d")
            self.assertIn("LEAK", show.upper())

            done = d.wait_state(jid, {"COMPLETED", "FAILED", "CANCELLED"}, timeout=60)
            self.assertEqual(done["state"], "COMPLETED", done["reason"])
            self.assertGreater(done["telemetry"]["gpu_hours"], 0)
            self.assertGreater(done["telemetry"]["samples"], 3)
            report = json.loads(d.cli("report", "--json").stdout)
            users = report["users"]
            self.assertEqual(len(users), 1, users)
            self.assertGreater(users[0]["gpu_hours"], 0)
            self.assertIsNotNone(users[0]["util_mean"], "the utilisation its agent measured")
            ok = True
        finally:
            if not ok and d:
                print(d.daemon_log()[-15000:], file=sys.stderr)
            if agents:
                agents.stop_all()
            if d:
                d.cleanup()
            c.__exit__(None, None, None)


if __name__ == "__main__":
    unittest.main()

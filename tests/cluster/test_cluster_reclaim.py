"""Idle GPUs taken back on a real two-node Slurm cluster (tests/cluster/slurmcluster.py): the
controller (`gpuwardd --backend slurm`) ties each agent's snapshot to its jobs by their Slurm
ids and feeds them to the idle decision one host makes.  A gpuward job hung on node 2 (its
process at 0% on the fake NVML of node 2's agent) is stopped through Slurm and ends RECLAIMED
with the evidence; one that validates longer than the idle timeout is not; a plain sbatch job
that hangs is only reported under the default slurm_foreign_jobs = watch, and cancelled with
reclaim.  Needs root, network namespaces, slurm-wlm and munge; exits 77 (skipped) with the
reason where they are missing."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

import slurmcluster
from slurmcluster import gwtest
from test_cluster_agents import Agents, AgentTokens  # noqa: E402

WHY_NOT = slurmcluster.why_not_here()

IDLE, WARN, GRACE = 4, 1, 2
# The agents' sample interval; the measurement in docs/CLUSTER-PERF.md runs with 1 and 2.
AGENT = int(os.environ.get("GW_RECLAIM_AGENT_INTERVAL", "1"))


def config(foreign=None):
    top = f"slurm_foreign_jobs = {foreign}\n" if foreign else ""
    return top + "".join(f"[policy.{p}]\nidle_timeout = {IDLE}\nwarn = {WARN}\ngrace = {GRACE}\n"
                         for p in ("default", "hpo"))


def node_cmd(agents, argv):
    """A shell line that runs argv with the fake NVML of whichever node Slurm runs it on, so
    that the node's agent lists its process (the fake trainer declares itself there)."""
    base = os.path.dirname(next(iter(agents.nvml.values())))
    return f'GPUWARD_FAKE_NVML_DIR={base}/nvml-$SLURMD_NODENAME exec {" ".join(argv)}'


def slurm_state(c, sid):
    out = c.cmd("scontrol", "-o", "show", "job", str(sid), check=False)
    m = re.search(r"\bJobState=(\S+)", out)
    return m.group(1) if m else None


class Cluster:
    """A cluster of 2 nodes x 4 GPUs, a controller with config cfg, an agent on each node."""

    def __init__(self, test, cfg):
        self.test, self.cfg = test, cfg

    def __enter__(self):
        self.c = slurmcluster.SlurmCluster(nodes=2, gpus=4).__enter__()
        try:
            self.d = gwtest.Daemon(gpus=4, config=self.cfg,
                                   extra=["--backend", "slurm", "--listen", f"{self.c.ctl_addr}:0"],
                                   env={"SLURM_CONF": self.c.conf})
            self.d.start()
            self.agents = Agents(self.c, self.d, AgentTokens(self.d), interval=AGENT)
            for n in self.c.nodes:
                self.agents.start(n)
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, *exc):
        if exc[0] is not None and getattr(self, "d", None):
            print(self.d.daemon_log()[-15000:], file=sys.stderr)
        if getattr(self, "agents", None):
            self.agents.stop_all()
        if getattr(self, "d", None):
            self.d.cleanup()
        self.c.__exit__(*exc)

    def drain(self, node):
        self.c.cmd("scontrol", "update", f"NodeName={node}", "State=DRAIN", "Reason=gwtest")

    def foreign(self, node, argv):
        """A plain sbatch job on node (no gpuward job); its Slurm id."""
        return self.c.sbatch("--gres=gpu:1", f"--nodelist={node}", "--wrap", node_cmd(self.agents, argv))

    def slurm_jobs(self):
        """{Slurm id: the slurm_jobs entry of gpuward gpus --json} over every node's GPUs."""
        out = {}
        for n in json.loads(self.d.cli("gpus", "--json").stdout).get("nodes", []):
            for g in n["gpus"]:
                for j in g["slurm_jobs"]:
                    out[j["id"]] = dict(j, node=n["node"], gpu=g["index"])
        return out


def slurm_id(job):
    for e in job["events"]:
        m = re.match(r"attempt \d+ submitted to Slurm as job (\d+)", e["message"] or "")
        if e["kind"] == "slurm_job" and m:
            return int(m.group(1))
    return None


@unittest.skipIf(WHY_NOT, f"no Slurm cluster here: {WHY_NOT}")
class ClusterReclaim(unittest.TestCase):
    def test_hung_job_reclaimed_through_slurm_validating_one_kept_foreign_one_reported(self):
        with Cluster(self, config()) as k:
            c, d = k.c, k.d
            n1, n2 = c.nodes
            # A plain sbatch job on node 1 that hangs at once; then node 1 takes no more jobs,
            # so gpuward's go to node 2.
            fid = k.foreign(n1, [gwtest.TRAINER, "--sleep-forever"])
            gwtest.wait_until(lambda: k.slurm_jobs().get(fid), 60, what=f"Slurm job {fid} on a GPU of {n1}")
            k.drain(n1)
            hung = d.submit("--gpus", "1", "--", "sh", "-c", node_cmd(k.agents, [gwtest.TRAINER, "--sleep-forever"]))
            val = d.submit("--gpus", "1", "--", "sh", "-c",
                           node_cmd(k.agents, [gwtest.TRAINER, "epochs=1", "--epoch-seconds", "0.5",
                                               "--long-validation", str(3 * IDLE + 1)]))
            # One that hangs and ignores SIGTERM: the plain scancel at the end of the grace ends it.
            stubborn = d.submit("--gpus", "1", "--", "sh", "-c",
                                node_cmd(k.agents, [gwtest.TRAINER, "--sleep-forever", "--ignore-sigterm"]))
            hsid = gwtest.wait_until(lambda: slurm_id(d.job(hung)), 30, what="the hung job's Slurm id")
            # Listed on its GPU by the agent at once, tied to gpuward's job by the next watch round.
            seen = gwtest.wait_until(lambda: (lambda e: e if e and e["gpuward_job"] else None)(k.slurm_jobs().get(hsid)),
                                     60, what=f"Slurm job {hsid} on a GPU, tied to job {hung}")
            self.assertEqual((seen["node"], seen["gpuward_job"], seen["foreign"]), (n2, hung, False))
            self.assertIn(f"{hsid} (root) = gpuward {hung}", d.cli("gpus").stdout)
            t_seen = time.monotonic()

            vsid = gwtest.wait_until(lambda: slurm_id(d.job(val)), 30, what="the validating job's Slurm id")
            gwtest.wait_until(lambda: (k.slurm_jobs().get(vsid) or {}).get("gpuward_job") == val, 60,
                              what=f"Slurm job {vsid} of job {val} on a GPU")

            j = d.wait_state(hung, "RECLAIMED", timeout=IDLE + WARN + GRACE + 30)
            took = time.monotonic() - t_seen
            # The hang is the job's start on its node (--sleep-forever hangs at once); the stop
            # is the SIGTERM through Slurm (the reclaim event).
            hang = next(e["time"] for e in j["events"] if e["kind"] == "slurm" and "RUNNING on" in e["message"])
            stop = next(e["time"] for e in j["events"] if e["kind"] == "reclaim")
            print(f"\nhung job {hung}: RUNNING on {n2} to SIGTERM {stop - hang:.2f}s, bound idle {IDLE}s + warn {WARN}s "
                  f"+ 2 samples of {AGENT}s = {IDLE + WARN + 2 * AGENT}s; over idle + warn: "
                  f"{(stop - hang - IDLE - WARN) / AGENT:.2f} samples; seen on its GPU to RECLAIMED {took:.1f}s",
                  file=sys.stderr)
            self.assertLessEqual(stop - hang, IDLE + WARN + 2 * AGENT + 1, "within the bound (+1 s for a busy host)")
            ev = [e["message"] for e in j["events"] if e["kind"] == "reclaim"]
            self.assertTrue(ev, j["events"])
            for needle in ("idle for", "util 0% (threshold 5%)", "no progress for", "not validating",
                           "not saving", "SIGTERM"):
                self.assertIn(needle, ev[-1])
            kinds = [e["kind"] for e in j["events"]]
            self.assertLess(kinds.index("warn"), kinds.index("reclaim"), kinds)
            self.assertRegex(j["reason"], r"^idle for \w+; evidence in the reclaim event$")
            show = d.cli("show", hung).stdout
            self.assertIn("RECLAIMED", show)
            self.assertIn("threshold 5%", show)
            self.assertIn(f"scancel --signal=15 --full {hsid}", d.daemon_log())
            gwtest.wait_until(lambda: slurm_state(c, hsid) not in ("RUNNING", "COMPLETING"), 30,
                              what=f"Slurm job {hsid} ended")
            print(f"Slurm's record of {hsid}: {slurm_state(c, hsid)}", file=sys.stderr)
            self.assertIn(slurm_state(c, hsid), ("CANCELLED", "FAILED"))

            # Slurm counts the one that died of the SIGTERM as FAILED (above); the one that outlived
            # the grace was cancelled by the plain scancel, and Slurm's record says so.
            s = d.wait_state(stubborn, "RECLAIMED", timeout=IDLE + WARN + GRACE + 30)
            ssid = slurm_id(s)
            self.assertIn(f"job {stubborn}: scancel {ssid}", d.daemon_log())
            gwtest.wait_until(lambda: slurm_state(c, ssid) == "CANCELLED", 30,
                              what=f"Slurm's record of {ssid} CANCELLED (it is {slurm_state(c, ssid)})")

            # The validating job outlives three idle timeouts at 2% and completes.
            v = d.wait_state(val, {"COMPLETED", "RECLAIMED", "FAILED", "CANCELLED"}, timeout=60)
            self.assertEqual(v["state"], "COMPLETED", v["reason"])
            vk = [e["kind"] for e in v["events"]]
            self.assertNotIn("warn", vk, v["events"])
            self.assertNotIn("reclaim", vk, v["events"])

            # The foreign job: reported idle, never cancelled under the default (watch).
            f = gwtest.wait_until(lambda: (lambda e: e if e and e["idle_action"] == "reported" else None)(
                k.slurm_jobs().get(fid)), 30, what=f"Slurm job {fid} reported idle")
            self.assertEqual((f["foreign"], f["gpuward_job"], f["node"]), (True, None, n1))
            self.assertGreaterEqual(f["idle_for"], IDLE)
            self.assertIn(f"Slurm job {fid} (user root, node {n1}, not submitted through gpuward): idle past its "
                          "warning, not cancelled (slurm_foreign_jobs = watch)", d.daemon_log())
            self.assertNotIn(f"scancel --signal=TERM --full {fid}", d.daemon_log())
            self.assertEqual(c.squeue()[fid][0], "RUNNING")
            gpus_out = d.cli("gpus").stdout
            self.assertIn(f"Slurm job {fid} (user root) is not gpuward's: idle", gpus_out)
            self.check_dashboard(k, n1, fid)

    def check_dashboard(self, k, node, fid):
        """The dashboard's GPUs view lists the nodes' GPUs and the idle foreign job (headless
        Chromium's DOM after the page's scripts ran; a guest's view, so no user)."""
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium:
            print("dashboard not checked: no chromium", file=sys.stderr)
            return
        url = f"http://{k.c.ctl_addr}:{k.d.port}/#gpus"
        p = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--timeout=5000", "--dump-dom",
                            url], capture_output=True, text=True, timeout=90)
        m = re.search(r'<div id="node-gpus">.*?</table>', p.stdout, re.S)
        self.assertTrue(m, p.stdout[-3000:])
        self.assertIn(f"<td>{node}</td><td>ok</td>", m.group(0))
        self.assertRegex(m.group(0), rf"<td>{fid}, not gpuward's: idle \d+s, reported</td>")

    def test_foreign_hung_job_cancelled_with_reclaim(self):
        with Cluster(self, config("reclaim")) as k:
            c, d = k.c, k.d
            n2 = c.nodes[1]
            fid = k.foreign(n2, [gwtest.TRAINER, "--sleep-forever"])
            gwtest.wait_until(lambda: k.slurm_jobs().get(fid), 60, what=f"Slurm job {fid} on a GPU of {n2}")
            gwtest.wait_until(lambda: fid not in c.squeue(), IDLE + WARN + GRACE + 30,
                              what=f"Slurm job {fid} cancelled")
            log = d.daemon_log()
            self.assertIn(f"Slurm job {fid} (user root, node {n2}, not submitted through gpuward): reclaim: idle for",
                          log)
            self.assertIn(f"scancel --signal=TERM --full {fid}", log)
            state = slurm_state(c, fid)
            print(f"\nSlurm's record of foreign job {fid}: {state}", file=sys.stderr)
            self.assertIn(state, ("CANCELLED", "FAILED"))

            # A stale snapshot never feeds a decision: its node's agent stops while a gpuward job
            # hangs there; the job is kept, its events say why; fresh snapshots again start
            # its idle window over, and it is reclaimed then.
            hung = d.submit("--gpus", "1", "--", "sh", "-c", node_cmd(k.agents, [gwtest.TRAINER, "--sleep-forever"]))
            hsid = gwtest.wait_until(lambda: slurm_id(d.job(hung)), 30, what="the hung job's Slurm id")
            node = gwtest.wait_until(lambda: k.slurm_jobs().get(hsid), 60, what=f"Slurm job {hsid} on a GPU")["node"]
            k.agents.stop(node, signal.SIGKILL)
            paused = gwtest.wait_until(lambda: [e for e in d.job(hung)["events"] if e["kind"] == "idle"
                                                and "idle watch paused" in e["message"]], 30, what="the pause told")
            self.assertRegex(paused[0]["message"], rf"node {node}'s last snapshot of Slurm job {hsid} is \S+ old, more "
                                                   rf"than 2 of its agent's intervals \({AGENT}s\): a stale snapshot never "
                                                   r"feeds a reclaim decision")
            time.sleep(IDLE + WARN + GRACE + 2)  # a daemon that decided on the stale snapshot would stop it now
            j = d.job(hung)
            self.assertEqual(j["state"], "RUNNING", j["events"])
            self.assertNotIn("reclaim", [e["kind"] for e in j["events"]])
            k.agents.start(node)
            j = d.wait_state(hung, "RECLAIMED", timeout=IDLE + WARN + GRACE + 30)
            resumed = [e for e in j["events"] if e["kind"] == "idle" and "idle watch resumed" in e["message"]]
            self.assertTrue(resumed, j["events"])
            self.assertLess(resumed[0]["time"], next(e["time"] for e in j["events"] if e["kind"] == "reclaim"))


@unittest.skipIf(not os.access(gwtest.GPUWARDD, os.X_OK), f"{gwtest.GPUWARDD} not built (set GW_BUILD_DIR)")
class ForeignSetting(unittest.TestCase):
    """slurm_foreign_jobs: a bad value stops the daemon with a message naming it (no cluster
    needed)."""

    def test_bad_value_is_refused_naming_the_setting(self):
        why = gwtest.start_failure("slurm_foreign_jobs = kill\n")
        self.assertIn("slurm_foreign_jobs: invalid value 'kill' (watch: an idle Slurm job gpuward did not submit "
                      "is reported; reclaim: it is cancelled like gpuward's own; ignore: not watched)", why)


if __name__ == "__main__":
    if WHY_NOT:
        print(f"skipped: no Slurm cluster here: {WHY_NOT}")
        sys.exit(77)
    unittest.main(verbosity=2)

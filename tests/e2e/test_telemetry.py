"""GPU telemetry: samples, attribution, rogue processes, Xid draining, /metrics."""
import os
import shutil
import signal
import subprocess
import time
import unittest

from gwtest import TRAINER, Daemon, DaemonTest, events_of, kinds, main, wait_until


class TelemetryTest(DaemonTest):
    def test_trainer_usage_in_gpus_metrics_and_series(self):
        jid = self.d.submit("--gpus", 2, "--", TRAINER, "epochs=200", "--epoch-seconds", "0.5", "--mem-mib", "3000",
                            "--util", "80")
        j = self.d.wait_state(jid, "RUNNING")
        g0 = j["gpus"][0]

        def trainer_seen():
            g = self.d.gpu_list()[g0]
            procs = [p for p in g["processes"] if p["job"] == jid]
            return g if procs and procs[0]["mem_used"] == 3000 << 20 else None
        g = wait_until(trainer_seen, what="the trainer's memory in /api/v1/gpus")
        self.assertEqual(g["job"], jid)
        self.assertEqual(g["job_info"]["id"], jid)
        self.assertGreaterEqual(g["util"], 50)
        self.assertIn("gw-fake-trainer", g["processes"][0]["command"])
        text = self.d.metrics()
        self.assertRegex(text, rf'gpuward_gpu_memory_used_bytes\{{gpu="{g0}",[^}}]*\}} {3000 << 20}')
        self.assertRegex(text, rf'gpuward_gpu_allocated\{{gpu="{g0}",uuid="[^"]*"\}} 1')
        self.assertRegex(text, rf'gpuward_gpu_job_info\{{gpu="{g0}",[^}}]*job="{jid}"[^}}]*\}} 1')
        self.assertRegex(text, rf'gpuward_job_gpu_memory_used_bytes\{{[^}}]*job="{jid}"')
        self.assertIn('gpuward_jobs{state="RUNNING"} 1', text)
        wait_until(lambda: (self.d.job(jid)["telemetry"] or {}).get("samples", 0) >= 4, what="telemetry samples")
        tel = self.d.job(jid)["telemetry"]
        self.assertEqual(sorted(x["index"] for x in tel["gpus"]), sorted(j["gpus"]))
        self.assertTrue(all(x["mem_peak"] == 3000 << 20 for x in tel["gpus"]))
        self.assertTrue(all(x["util_p95"] >= 50 for x in tel["gpus"]))
        st, s = self.d.api("GET", f"/api/v1/jobs/{jid}/series?metric=mem")
        self.assertEqual(st, 200)
        self.assertEqual(sorted(s["gpus"].keys()), sorted(str(x) for x in j["gpus"]))
        self.assertTrue(any(v == 3000 << 20 for _, v in s["gpus"][str(g0)]))
        self.d.cli("cancel", jid)
        j = self.d.job(jid)
        self.assertIsNotNone(j["telemetry"], "the summary stays in history")
        self.assertGreater(j["telemetry"]["gpu_hours"], 0)
        st, s = self.d.api("GET", f"/api/v1/jobs/{jid}/series?metric=util")
        self.assertEqual((st, s["resolution"]), (200, 60), "finished jobs serve the per-minute series")
        self.assertTrue(s["gpus"])

    def test_rogue_process_is_reported_not_attributed(self):
        jid = self.d.submit("--gpus", 4, "--", "sleep", "60")
        self.d.wait_state(jid, "RUNNING")
        rogue = subprocess.Popen(["sleep", "60"])
        try:
            self.d.write_procs(rogue.pid, [(2, 700, 5)])
            g = wait_until(lambda: (lambda g: g if any(p["pid"] == rogue.pid for p in g["processes"]) else None)(
                self.d.gpu_list()[2]), what="the rogue process")
            p = [p for p in g["processes"] if p["pid"] == rogue.pid][0]
            self.assertIsNone(p["job"])
            self.assertIn("sleep 60", p["command"])
            self.assertEqual(self.d.api("GET", "/api/v1/gpus")[1]["rogue_processes"], 1)
            self.assertIn("gpuward_rogue_processes 1", self.d.metrics())
            time.sleep(1.5)
            self.assertIsNone(rogue.poll(), "rogue_policy=report never kills")
        finally:
            rogue.kill()
            rogue.wait()

    def test_job_process_on_a_gpu_it_was_not_given(self):
        """CUDA_VISIBLE_DEVICES changed inside a job: its process on another job's GPU is told
        to both jobs, once, and counted with the rogue processes."""
        mine = self.d.submit("--", "sleep", "60")
        other = self.d.submit("--", "sleep", "60")
        own_gpu = self.d.wait_state(mine, "RUNNING")["gpus"][0]
        target = self.d.wait_state(other, "RUNNING")["gpus"][0]
        pid = self.d.wait_pid(mine)
        self.d.write_procs(pid, [(own_gpu, 500, 10), (target, 700, 5)])
        wait_until(lambda: events_of(self.d.job(mine), "stray"), what="the stray event")
        said = events_of(self.d.job(mine), "stray")[0]["message"]
        self.assertIn(f"runs on GPU {target}, which this job was not given (its GPUs: {own_gpu})", said)
        self.assertIn(f"process {pid} of job {mine}", events_of(self.d.job(other), "rogue")[0]["message"])
        procs = {g["index"]: [p for p in g["processes"] if p["pid"] == pid] for g in self.d.gpu_list()}
        self.assertEqual((procs[target][0]["job"], procs[target][0]["stray"]), (mine, True))
        self.assertFalse(procs[own_gpu][0]["stray"], "on its own GPU it is the job's")
        self.assertEqual(self.d.api("GET", "/api/v1/gpus")[1]["rogue_processes"], 1)
        self.assertIn(f"! pid {pid} of job {mine}, not on its GPUs", self.d.cli("gpus").stdout)
        time.sleep(1.5)
        self.assertEqual(len(events_of(self.d.job(mine), "stray")), 1, "told once, not at every sample")

    def test_xid_79_drains_the_gpu(self):
        events = os.path.join(self.d.state, "sim-nvml", "events")
        with open(events, "a") as f:
            f.write("gpu=1 xid=79\n")
        g = wait_until(lambda: (lambda g: g if g["health"] == "drained" else None)(self.d.gpu_list()[1]),
                       what="GPU 1 to be drained")
        self.assertIn("Xid 79", g["drain_reason"])
        self.assertIn("gpuward_xid_events_total 1", self.d.metrics())
        ids = [self.d.submit("--gpus", 1, "--", "sleep", "2") for _ in range(3)]
        blocked = self.d.submit("--gpus", 4, "--", "true")
        for i in ids:
            self.assertNotIn(1, self.d.wait_state(i, "RUNNING")["gpus"])
        self.assertEqual(self.d.job(blocked)["reason"], "Resources", "only 3 usable GPUs are left")
        # An admin may put it back.
        st, r = self.d.api("POST", "/api/v1/gpus/1/undrain")
        self.assertEqual((st, r["health"]), (200, "ok"))
        self.d.wait_state(blocked, "COMPLETED", timeout=30)

    def test_drain_api_refusals(self):
        st, r = self.d.api("POST", "/api/v1/gpus/9/drain", {"reason": "x"})
        self.assertEqual((st, r["field"]), (404, "index"))
        st, r = self.d.api("POST", "/api/v1/gpus/0/drain", {})
        self.assertEqual((st, r["field"]), (400, "reason"))
        st, body = self.d.tcp("POST", "/api/v1/gpus/0/drain", '{"reason": "x"}')
        self.assertEqual(st, 401)
        for path, body, field, message in (
                ("drain", {"reason": 5}, "reason", "reason: must be a string"),
                ("drain", {"reason": "x", "bogus": 1}, "bogus",
                 "bogus: not a field of a drain (it takes reason; docs/API.md)"),
                ("drain", {"why": "x"}, "why", "why: not a field of a drain"),
                ("undrain", {"reason": "fixed"}, "reason", "reason: an undrain takes no fields")):
            st, r = self.d.api("POST", f"/api/v1/gpus/0/{path}", body)
            self.assertEqual((st, r["field"]), (400, field), (path, body, r))
            self.assertTrue(r["error"].startswith(message), (path, body, r))
        # Undraining a GPU that is not drained is refused, as releasing a job that is not held.
        st, r = self.d.api("POST", "/api/v1/gpus/0/undrain")
        self.assertEqual((st, r["field"], r["error"]), (409, "index", "GPU 0 is not drained"))
        self.assertEqual({g["health"] for g in self.d.gpu_list()}, {"ok"}, "nothing changed")
        self.assertNotIn("GPU 0 undrained", self.d.daemon_log())

    def test_readyz_and_metrics_format(self):
        st, body = self.d.tcp("GET", "/readyz")
        self.assertEqual(st, 200)
        text = self.d.metrics()
        families = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")]
        self.assertEqual(len(families), len(set(families)), "each family once")
        for name in ("gpuward_gpu_utilization_ratio", "gpuward_jobs", "gpuward_queue_wait_seconds",
                     "process_resident_memory_bytes", "gpuward_reclaims_total"):
            self.assertIn(name, families)
        promtool = shutil.which("promtool")
        if not promtool:
            self.skipTest("promtool not installed (Debian package prometheus)")
        p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


class UsageReportTest(DaemonTest):
    """GET /api/v1/usage and gpuward report: GPU-hours, utilisation and outcomes per user."""

    def test_usage_per_user(self):
        busy = self.d.submit("--gpus", 2, "--", TRAINER, "epochs=200", "--epoch-seconds", "0.5", "--util", "80")
        self.d.wait_state(busy, "RUNNING")
        wait_until(lambda: (self.d.job(busy)["telemetry"] or {}).get("samples", 0) >= 2, what="samples")
        failed = self.d.submit("--", "sh", "-c", "sleep 0.5; exit 3")
        self.d.wait_state(failed, "FAILED")
        self.d.cli("cancel", busy)
        st, r = self.d.api("GET", "/api/v1/usage?days=1")
        self.assertEqual((st, r["days"]), (200, 1), r)
        (u,) = r["users"]
        self.assertEqual((u["user"], u["jobs"], u["states"]), ("root", 2, {"FAILED": 1, "CANCELLED": 1}))
        busy_j = self.d.job(busy)
        self.assertGreaterEqual(u["gpu_hours"], busy_j["telemetry"]["gpu_hours"] - 1e-6)
        self.assertGreater(u["util_mean"], 30, "the trainer's 80% weighs most, the idle job's little")
        self.assertEqual(u["reclaimed_gpu_hours"], 0)
        out = self.d.cli("report", "--days", "1").stdout
        self.assertIn("The last 1 day:", out)
        self.assertRegex(out, r"\nroot +2 +0\.\d +\d+% +0 +1 +1 +0 \(0\.0 GPU-h\) +0\n")
        for bad in ("0", "91", "x"):
            st, r = self.d.api("GET", f"/api/v1/usage?days={bad}")
            self.assertEqual((st, r["field"]), (400, "days"))
        p = self.d.cli("report", "--days", "91", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--days: '91' is not a number of days from 1 to 90", p.stderr)


class RogueKillTest(DaemonTest):
    extra = ("--rogue-policy", "kill")

    def test_rogue_on_an_allocated_gpu_is_killed_and_recorded(self):
        jid = self.d.submit("--gpus", 1, "--", "sleep", "60")
        gpu = self.d.wait_state(jid, "RUNNING")["gpus"][0]
        free_gpu = (gpu + 1) % 4
        on_job, on_free = subprocess.Popen(["sleep", "60"]), subprocess.Popen(["sleep", "60"])
        try:
            self.d.write_procs(on_job.pid, [(gpu, 500, 10)])
            self.d.write_procs(on_free.pid, [(free_gpu, 500, 10)])
            self.assertEqual(on_job.wait(timeout=20), -signal.SIGKILL)
            j = self.d.job(jid)
            ev = events_of(j, "rogue")
            self.assertTrue(ev and f"rogue process {on_job.pid}" in ev[0]["message"], j["events"])
            self.assertIn("sleep 60", ev[0]["message"])
            time.sleep(1.5)
            self.assertIsNone(on_free.poll(), "only GPUs that a job holds are defended")
            self.assertEqual(self.d.job(jid)["state"], "RUNNING")
        finally:
            for p in (on_job, on_free):
                p.kill()
                p.wait()


    def test_a_jobs_process_on_another_jobs_gpu_is_killed(self):
        pidfile = os.path.join(self.d.work, "child.pid")
        stray = self.d.submit("--", "sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait")
        holder = self.d.submit("--", "sleep", "60")
        self.d.wait_state(stray, "RUNNING")
        gpu = self.d.wait_state(holder, "RUNNING")["gpus"][0]
        child = int(wait_until(lambda: os.path.exists(pidfile) and open(pidfile).read().strip(), what="child pid"))
        self.d.write_procs(child, [(gpu, 500, 10)])
        ev = wait_until(lambda: [e for e in events_of(self.d.job(holder), "rogue") if "killed" in e["message"]],
                        what="the kill recorded")
        self.assertIn(f"rogue process {child} of job {stray}", ev[0]["message"])
        wait_until(lambda: not os.path.exists(f"/proc/{child}") or open(f"/proc/{child}/stat").read().split()[2] == "Z",
                   what="the stray process killed")
        self.assertEqual(self.d.job(holder)["state"], "RUNNING")


class ManyProcessesTest(DaemonTest):
    def test_a_thousand_processes_on_one_gpu(self):
        procs = [subprocess.Popen(["sleep", "60"]) for _ in range(1000)]
        try:
            for p in procs:
                self.d.write_procs(p.pid, [(3, 10, 0)])
            wait_until(lambda: len(self.d.gpu_list()[3]["processes"]) == 1000,
                       timeout=60, what="1000 processes on GPU 3")
            self.assertIn("gpuward_rogue_processes 1000", self.d.metrics())
        finally:
            for p in procs:
                p.kill()
            for p in procs:
                p.wait()
        wait_until(lambda: not self.d.gpu_list()[3]["processes"], timeout=30,
                   what="the processes to vanish")


class LostGpuTest(DaemonTest):
    def test_gpu_falling_off_the_bus(self):
        jid = self.d.submit("--gpus", 1, "--", "sleep", "60")
        gpu = self.d.wait_state(jid, "RUNNING")["gpus"][0]
        with open(os.path.join(self.d.state, "sim-nvml", "config"), "a") as f:
            f.write(f"gpu{gpu}.lost=1\n")
        os.utime(os.path.join(self.d.state, "sim-nvml", "config"))
        wait_until(lambda: self.d.gpu_list()[gpu]["health"] == "lost",
                   what="the GPU to be reported lost")
        self.assertIn("gpu", kinds(self.d.job(jid)), "the job is told its GPU changed health")
        self.assertTrue(any("lost" in e["message"] for e in self.d.job(jid)["events"]))
        other = self.d.submit("--gpus", 4, "--", "true")
        time.sleep(1)
        self.assertEqual(self.d.job(other)["state"], "PENDING", "a lost GPU takes no job")


class NoDriverTest(unittest.TestCase):
    def test_nvml_init_failure_is_one_clear_line(self):
        with Daemon() as d:
            os.makedirs(os.path.join(d.state, "sim-nvml"))
            with open(os.path.join(d.state, "sim-nvml", "config"), "w") as f:
                f.write("init_error=9\n")
            d.start()
            st, r = d.api("GET", "/api/v1/gpus")
            self.assertEqual((st, r["gpus"]), (200, []))
            self.assertIn("Driver Not Loaded", d.daemon_log())
            p = d.cli("submit", "--", "true", check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn("only 0 GPUs on this host", p.stderr)


if __name__ == "__main__":
    main()

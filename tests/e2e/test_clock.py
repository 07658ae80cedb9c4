"""Wall-clock steps: durations (rate limits, idle windows, runtimes, GPU-hours) follow the
monotonic clock, so a clock stepped an hour back or two days forward locks nobody out,
reclaims no busy job and charges no one for the step.  The daemon runs under libfaketime
with only its wall clock stepped (FAKETIME_DONT_FAKE_MONOTONIC), as a real step does; the
offset is a file the test rewrites (FAKETIME_NO_CACHE: read at every clock call)."""
import json
import os
import shutil
import tempfile
import time
import unittest

from gwtest import IS_ROOT, DaemonTest, Users, events_of, main, needs_readoption, wait_until

FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
IDLE, WARN = 6, 2


class Faketime:
    """A daemon whose wall clock the test steps with self.step()."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gwclk-")
        self.offset = os.path.join(self.tmp, "offset")
        self.step("+0")
        self.env = {"LD_PRELOAD": FAKETIME, "FAKETIME_TIMESTAMP_FILE": self.offset, "FAKETIME_NO_CACHE": "1",
                    "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                    # An ASan build refuses to start with a library preloaded ahead of its runtime.
                    "ASAN_OPTIONS": ":".join(filter(None, (os.environ.get("ASAN_OPTIONS"),
                                                          "verify_asan_link_order=0")))}
        try:
            super().setUp()
        except BaseException:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise

    def tearDown(self):
        try:
            super().tearDown()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def step(self, spec):
        """Sets the daemon's wall clock to real time + spec ("-1h", "+2d"), atomically."""
        tmp = self.offset + ".tmp"
        with open(tmp, "w") as f:
            f.write(spec + "\n")
        os.rename(tmp, self.offset)


@unittest.skipUnless(os.path.exists(FAKETIME), "needs libfaketime (Debian's faketime package)")
class ClockStepTest(Faketime, DaemonTest):
    gpus = 2
    config = "".join(f"[policy.{p}]\nidle_timeout = {IDLE}\nwarn = {WARN}\ngrace = 1\n" for p in ("default", "hpo"))

    @unittest.skipUnless(IS_ROOT, "needs root to make a user (admins are not rate-limited)")
    def test_step_back_an_hour_locks_nobody_out(self):
        users = Users()
        try:
            u = users.add("clk")

            def post(path, body):
                st, payload = self.d.raw_as(u.pw_uid, "POST", path, json.dumps(body).encode(), gid=u.pw_gid)
                return st, json.loads(payload)

            job = {"command": ["true"], "cwd": "/tmp"}
            st, r = post("/api/v1/jobs", job)
            self.assertEqual(st, 201, r)
            self.step("-1h")
            st, r = post("/api/v1/bookings", {"ngpus": 1, "start": "now+1h", "duration": "1h"})
            self.assertEqual(st, 201, f"reserve after a step back: {r}")
            st, r = post("/api/v1/jobs", job)
            self.assertEqual(st, 201, f"submit after a step back: {r}")
            self.d.wait_state(r["id"], "COMPLETED")
        finally:
            users.remove_all()

    def test_step_forward_two_days_reclaims_no_busy_job(self):
        # Busy by its log (a line a second), its GPU idle: the idle window is what a step moves.
        busy = self.d.submit("--", "sh", "-c", "while :; do echo step; sleep 1; done")
        self.d.wait_state(busy, "RUNNING")
        time.sleep(IDLE + 1)  # past its idle timeout: only its progress keeps it now
        self.step("+2d")
        # Watched past a whole idle window and warning after the step: still working, never warned.
        deadline = time.monotonic() + IDLE + WARN + 3
        while time.monotonic() < deadline:
            b = self.d.job(busy)
            self.assertEqual(b["state"], "RUNNING", b.get("reason"))
            self.assertEqual(events_of(b, "warn"), [], "a job writing its log every second was warned idle")
            time.sleep(0.5)
        tel = self.d.job(busy).get("telemetry") or {}
        self.assertLess(tel.get("gpu_hours", 0), 0.1, tel)

    def test_step_forward_two_days_charges_a_short_job_its_runtime(self):
        # finetune: never reclaimed, so that what it is charged is seen whatever the idle window does.
        short = self.d.submit("--idle-policy", "finetune", "--", "sleep", "5")
        self.d.wait_state(short, "RUNNING")
        self.step("+2d")
        # What `gpuward show` prints as Elapsed (the CLI is linked statically: libfaketime
        # cannot step its own clock, so the daemon's count is checked here).
        running = self.d.job(short)
        if running["state"] == "RUNNING":
            self.assertLess(running["runtime"], 60, running)
        st, q = self.d.api("GET", "/api/v1/quota")
        self.assertEqual(st, 200, q)
        self.assertLess(q["usage"]["gpu_hours_7d"], 0.1, f"a running job charged for the step: {q}")
        j = self.d.wait_job(short, lambda j: j["state"] not in ("PENDING", "RUNNING"), timeout=30)
        self.assertEqual(j["state"], "COMPLETED", j.get("reason"))
        runtime = j["end_time"] - j["start_time"]
        self.assertGreaterEqual(runtime, 4.5, j)
        self.assertLess(runtime, 60, f"a 5 s job ran {runtime:.0f} s by its times")
        self.assertLess((j.get("telemetry") or {}).get("gpu_hours", 0), 0.1, j.get("telemetry"))
        st, usage = self.d.api("GET", "/api/v1/usage")
        self.assertEqual(st, 200, usage)
        hours = sum(u["gpu_hours"] for u in usage["users"])
        self.assertLess(hours, 0.1, f"charged {hours:.1f} GPU-hours for a 5 s job: {usage}")
        report = self.d.cli("report").stdout
        self.assertNotRegex(report, r"\b4[789]\.\d", report)
        show = self.d.cli("show", short).stdout
        self.assertNotRegex(show, r"\b2d", show)


    @needs_readoption
    def test_a_restart_after_a_step_keeps_the_runtime_monotonic(self):
        """The daemon restarted after a +2 days step: the job it re-adopts has run seconds,
        not two days, so its one-hour time limit is far off and it is charged seconds."""
        jid = self.d.submit("--idle-policy", "finetune", "--time", "1h", "--", "sleep", "8")
        self.d.wait_state(jid, "RUNNING")
        self.step("+2d")
        self.d.stop()
        self.d.start()
        j = self.d.wait_job(jid, lambda j: j["state"] not in ("PENDING", "RUNNING"), timeout=30)
        self.assertEqual(j["state"], "COMPLETED", j.get("reason"))
        self.assertLess(j["end_time"] - j["start_time"], 60, j)
        self.assertIn("adopt", [e["kind"] for e in j["events"]])


@unittest.skipUnless(os.path.exists(FAKETIME), "needs libfaketime (Debian's faketime package)")
class BackoffStepTest(Faketime, DaemonTest):
    gpus = 1
    extra = ("--retry-backoff", "3")

    def test_step_back_an_hour_does_not_stretch_a_retry_backoff(self):
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(
            ["sh", "-c", "echo 'RuntimeError: CUDA error: unspecified launch failure' >&2; exit 1"], retries=1))
        self.assertEqual(st, 201, r)
        jid = r["id"]
        self.d.wait_job(jid, lambda j: j["attempt"] == 2 or j.get("reason") == "Backoff", timeout=30,
                        what="the first attempt to fail and its retry to wait")
        self.step("-1h")
        j = self.d.wait_job(jid, lambda j: j["attempt"] == 2 and j["state"] == "FAILED", timeout=40,
                            what="the retry to run (its backoff is 3 s, not an hour more)")
        self.assertEqual(len(j["attempts"]), 2, j)


if __name__ == "__main__":
    main()

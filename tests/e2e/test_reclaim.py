"""Idle-GPU reclamation: stalled jobs are warned, then stopped with evidence, and
their GPUs go to the next job; working ones (slow I/O, long validation, fine-tuning, GPUs used
by someone else) are never stopped.  Short timeouts come from the test's config file."""
import http.server
import json
import os
import pwd
import re
import subprocess
import threading
import time
import unittest

from gwtest import IS_ROOT, TRAINER, DaemonTest, events_of, kinds, main, start_failure, wait_until

IDLE, WARN, GRACE, SAMPLE = 3, 1, 1, 1
# The shortest wait from a hang to the end: the profile's three delays, and a sample interval
# each for noticing the idle window and the warning's end.
BOUND = IDLE + WARN + GRACE + 2 * SAMPLE


def evidence(j):
    """Why the job was reclaimed: its reclaim event (the job's reason stays one short line)."""
    ev = events_of(j, "reclaim")
    return ev[-1]["message"] if ev else f"no reclaim event; reason: {j['reason']}"


def make_config(protect_max=None, extra=""):
    """The test profiles: default and hpo with the short timeouts above."""
    pm = f"protect_max = {protect_max}\n" if protect_max is not None else ""
    return "".join(f"[policy.{p}]\nidle_timeout = {IDLE}\nwarn = {WARN}\ngrace = {GRACE}\n{pm}"
                   for p in ("default", "hpo")) + extra


class ReclaimTest(DaemonTest):
    """Hung jobs, under the built-in protect_max (1 h): a job hung right after a validation
    pass (its "all ..." results line last in the log) is not protected by it."""
    gpus = 2
    grace = 7  # --grace-seconds: a reclaim uses its profile's grace (GRACE) instead
    config = make_config()

    def test_hung_job_is_reclaimed_and_its_gpus_go_to_the_next_job(self):
        self.assertIn("gpuward_reclaims_total 0", self.d.metrics())
        jid = self.d.submit("--gpus", 2, "--", TRAINER, "--sleep-forever")
        self.d.wait_state(jid, "RUNNING")
        waiting = self.d.submit("--gpus", 2, "--", "sleep", "30")
        self.assertEqual(self.d.job(waiting)["state"], "PENDING")
        j = self.d.wait_state(jid, "RECLAIMED", timeout=BOUND + 10)
        # --sleep-forever stops writing at once: its log's last write is its start.
        self.assertLessEqual(j["end_time"] - j["start_time"], BOUND + 0.5, j["reason"])
        self.assertGreaterEqual(j["end_time"] - j["start_time"], IDLE + WARN - 0.5, "not before its time")
        reason = evidence(j)
        self.assertRegex(j["reason"], r"^idle for \w+; evidence in the reclaim event$")
        for needle in ("idle for", "GPU 0,1 util 0%/0% (threshold 5%)", "no progress for",
                       "log unchanged since", "not validating", "not saving", "SIGTERM"):
            self.assertIn(needle, reason)
        k = kinds(j)
        self.assertLess(k.index("warn"), k.index("terminate"), k)
        terminate = events_of(j, "terminate")[0]
        self.assertIn(f"SIGKILL in {GRACE}s", terminate["message"], "the profile's grace, not --grace-seconds")
        w = self.d.wait_state(waiting, "RUNNING", timeout=5)
        self.assertEqual(sorted(w["gpus"]), [0, 1])
        self.assertLessEqual(w["start_time"] - j["end_time"], 1.5, "GPUs handed on at once")
        log = self.d.log_text(jid)
        self.assertRegex(log, r"gpuward: WARNING: job \d+ has been idle for .* it will be stopped at "
                              r"\d\d:\d\d:\d\d unless it makes progress")
        show = self.d.cli("show", jid).stdout
        self.assertIn("RECLAIMED", show)
        self.assertIn("threshold 5%", show)
        self.assertIn("gpuward_reclaims_total 1", self.d.metrics())

    def test_hang_after_an_epoch_names_results_csv(self):
        jid = self.d.submit("--", TRAINER, "epochs=10", "--epoch-seconds", "0.3", "--hang-after-epoch", "2")
        j = self.d.wait_state(jid, "RECLAIMED", timeout=BOUND + 15)
        run = os.path.join(self.d.work, "runs", "detect", "train")
        hung_at = os.stat(os.path.join(run, "weights", "last.pt")).st_mtime  # its last write
        self.assertLessEqual(j["end_time"] - hung_at, BOUND + 0.5, j["reason"])
        reason = evidence(j)
        for needle in ("util 0% (threshold 5%)", "log unchanged since", "results.csv 2 rows since", "loss ",
                       "not validating (validation finished: \"all ", "not saving"):
            self.assertIn(needle, reason)
        self.assertEqual(j["attempts"][-1]["class"], "reclaimed")

    def test_hang_right_after_validation_is_reclaimed(self):
        # Epoch 3's results line is the last thing the job writes (no results.csv row, no
        # checkpoint after it), with the job past its idle timeout: the pass is over, and the
        # line must not protect the job for protect_max.
        jid = self.d.submit("--", TRAINER, "epochs=30", "--epoch-seconds", "1.5", "--hang-after-validation", "3")
        log_path = self.d.wait_state(jid, "RUNNING")["log_path"]
        results_line = re.compile(r"^ +all +128 +929 ", re.M)

        def epoch3_validated():
            # RUNNING is recorded before the supervisor creates the log.
            if not os.path.exists(log_path):
                return False
            with open(log_path, errors="replace") as f:
                return len(results_line.findall(f.read())) >= 3
        wait_until(epoch3_validated, timeout=30, interval=0.05, what="epoch 3's results line")
        hung_at = time.time()
        j = self.d.wait_state(jid, {"RECLAIMED", "COMPLETED", "FAILED"}, timeout=BOUND + 10)
        self.assertEqual(j["state"], "RECLAIMED", j["reason"])
        self.assertLessEqual(j["end_time"] - hung_at, BOUND + 0.5, j["reason"])
        reason = evidence(j)
        for needle in ("idle for", "util 0% (threshold 5%)", "results.csv 2 rows since",
                       "not validating (validation finished: \"all        128        929", "not saving"):
            self.assertIn(needle, reason)

    def test_trainer_ignoring_sigterm_is_killed(self):
        jid = self.d.submit("--", TRAINER, "--sleep-forever", "--ignore-sigterm")
        j = self.d.wait_state(jid, "RECLAIMED", timeout=BOUND + 10)
        k = kinds(j)
        self.assertIn("terminate", k)
        self.assertIn("kill", k)
        self.assertEqual(j["signal"], 9)

    def test_health_probe_is_evidence_only(self):
        class Ok(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *a):
                pass
        srv = http.server.HTTPServer(("127.0.0.1", 0), Ok)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        try:
            url = f"http://127.0.0.1:{srv.server_address[1]}/healthz"
            jid = self.d.submit("--health-url", url, "--", TRAINER, "--sleep-forever")
            j = self.d.wait_state(jid, "RECLAIMED", timeout=BOUND + 10)
            self.assertIn("health probe passing (not enough to keep a job)", evidence(j))
        finally:
            srv.shutdown()
            srv.server_close()
        # Nothing listens there any more: a failing probe is named too.
        jid = self.d.submit("--health-url", url, "--", TRAINER, "--sleep-forever")
        j = self.d.wait_state(jid, "RECLAIMED", timeout=BOUND + 10)
        self.assertIn("health probe failing (connection refused)", evidence(j))


class KeepTest(DaemonTest):
    """Jobs that must never be reclaimed, watched for three times the idle timeout or more.
    protect_max stays at its built-in hour: a long validation is protected by its log line."""
    gpus = 2
    # A profile of the config's own, with a long warning: time to come back.
    config = make_config(extra=f"[policy.patient]\nidle_timeout = {IDLE}\nwarn = 6\ngrace = {GRACE}\n")

    def assert_never_warned(self, jid):
        j = self.d.job(jid)
        self.assertNotIn("warn", kinds(j), j["events"])
        self.assertNotIn("terminate", kinds(j), j["events"])
        return j

    def test_slow_io_is_not_reclaimed(self):
        # util 1% for the whole run, but the log and results.csv advance.
        jid = self.d.submit("--", TRAINER, "epochs=12", "--epoch-seconds", "1", "--slow-io")
        self.d.wait_state(jid, "RUNNING")
        t0 = time.monotonic()
        j = self.d.wait_state(jid, {"COMPLETED", "RECLAIMED", "FAILED"}, timeout=60)
        self.assertGreaterEqual(time.monotonic() - t0, 3 * IDLE)
        self.assertEqual(j["state"], "COMPLETED", j["reason"])
        self.assert_never_warned(jid)

    def test_long_validation_is_not_reclaimed(self):
        # The log stands still on the validation bar for 10 s at util 2%.
        jid = self.d.submit("--", TRAINER, "epochs=1", "--epoch-seconds", "0.5", "--long-validation", str(3 * IDLE + 1))
        self.d.wait_state(jid, "RUNNING")
        j = self.d.wait_state(jid, {"COMPLETED", "RECLAIMED", "FAILED"}, timeout=60)
        self.assertEqual(j["state"], "COMPLETED", j["reason"])
        self.assert_never_warned(jid)

    def test_finetune_is_never_reclaimed_until_an_admin_changes_it(self):
        jid = self.d.submit("--idle-policy", "finetune", "--", TRAINER, "--sleep-forever")
        self.d.wait_state(jid, "RUNNING")
        time.sleep(3 * IDLE + 1)
        j = self.assert_never_warned(jid)
        self.assertEqual((j["state"], j["idle_policy"]), ("RUNNING", "finetune"))
        out = self.d.cli("admin", "set-policy", jid, "default").stdout
        self.assertIn("default", out)
        self.assertIn("policy", kinds(self.d.job(jid)))
        j = self.d.wait_state(jid, "RECLAIMED", timeout=BOUND + 10)
        self.assertEqual(j["idle_policy"], "default")

    def test_rogue_process_on_its_gpu_keeps_a_hung_job(self):
        jid = self.d.submit("--", TRAINER, "--sleep-forever")
        gpu = self.d.wait_state(jid, "RUNNING")["gpus"][0]
        rogue = subprocess.Popen(["sleep", "120"])
        try:
            self.d.write_procs(rogue.pid, [(gpu, 700, 0)])  # holds memory, computes nothing
            time.sleep(3 * IDLE + 1)
            j = self.assert_never_warned(jid)
            self.assertEqual(j["state"], "RUNNING")
        finally:
            rogue.kill()
            rogue.wait()
            os.unlink(os.path.join(self.d.state, "sim-nvml", "procs", str(rogue.pid)))
        # Its own GPU use was nothing all along: with the rogue gone it is reclaimed.
        j = self.d.wait_state(jid, "RECLAIMED", timeout=BOUND + 10)
        self.assertIn("util 0% (threshold 5%)", evidence(j))

    def test_declared_progress_file_keeps_a_job(self):
        # No GPU use and no log output, but --progress FILE advances every second.
        script = "while :; do echo epoch=$i total=99 >> prog.txt; i=$((i+1)); sleep 1; done"
        jid = self.d.submit("--progress", "prog.txt", "--", "sh", "-c", script)
        self.d.wait_state(jid, "RUNNING")
        undeclared = self.d.submit("--", "sh", "-c", script.replace("prog.txt", "other.txt"))
        j = self.d.wait_state(undeclared, "RECLAIMED", timeout=BOUND + 10)
        self.assertIn("log unchanged since", evidence(j))
        time.sleep(max(0, 3 * IDLE + 1 - (time.time() - self.d.job(jid)["start_time"])))
        self.assertEqual(self.assert_never_warned(jid)["state"], "RUNNING")

    def test_warning_is_withdrawn_when_the_job_comes_back(self):
        jid = self.d.submit("--idle-policy", "patient", "--", "sh", "-c", "sleep 5; echo back; sleep 60")
        self.d.wait_state(jid, "RUNNING")
        j = self.d.wait_job(jid, lambda j: "unwarn" in kinds(j), timeout=15, what="the warning to be withdrawn")
        k = kinds(j)
        self.assertLess(k.index("warn"), k.index("unwarn"))
        self.assertNotIn("terminate", k)
        self.assertIn("warning withdrawn", events_of(j, "unwarn")[0]["message"])
        log = self.d.log_text(jid)
        self.assertRegex(log, r"gpuward: WARNING: .*\nback\ngpuward: warning withdrawn")

    def test_busy_job_is_kept(self):
        jid = self.d.submit("--", TRAINER, "--sleep-forever", "--util", "40")
        self.d.wait_state(jid, "RUNNING")
        time.sleep(3 * IDLE + 1)
        self.assertEqual(self.assert_never_warned(jid)["state"], "RUNNING")


class PolicyAccessTest(DaemonTest):
    gpus = 1
    config = make_config(extra="[policy.finetune]\nallowed = gw-no-such-user,@gw-no-such-group\n")

    def test_unknown_profile_is_refused(self):
        p = self.d.cli("submit", "--idle-policy", "bogus", "--", "true", check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("no profile 'bogus'", p.stderr)
        self.assertIn("default, hpo, finetune", p.stderr)
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "cwd": "/", "idle_policy": "bogus"})
        self.assertEqual((st, r["field"]), (400, "idle_policy"))

    def test_policy_endpoint_refusals(self):
        jid = self.d.submit("--", "sleep", "30")
        st, r = self.d.api("POST", f"/api/v1/jobs/{jid}/policy", {"idle_policy": "nope"})
        self.assertEqual((st, r["field"]), (400, "idle_policy"))
        st, r = self.d.api("POST", f"/api/v1/jobs/{jid}/policy", {})
        self.assertEqual((st, r["field"]), (400, "idle_policy"))
        for body, field, message in (({"idle_policy": 5}, "idle_policy", "idle_policy: must be a string"),
                                     ({"idle_policy": "hpo", "bogus": 1}, "bogus",
                                      "bogus: not a field of a policy change (it takes idle_policy; docs/API.md)"),
                                     ({"policy": "hpo"}, "policy", "policy: not a field of a policy change")):
            st, r = self.d.api("POST", f"/api/v1/jobs/{jid}/policy", body)
            self.assertEqual((st, r["field"]), (400, field), (body, r))
            self.assertTrue(r["error"].startswith(message), (body, r))
        self.assertIn(self.d.job(jid)["idle_policy"], (None, "default"), "nothing changed")
        st, r = self.d.api("POST", "/api/v1/jobs/4242/policy", {"idle_policy": "hpo"})
        self.assertEqual(st, 404)
        st, r = self.d.api("POST", f"/api/v1/jobs/{jid}/policy", {"idle_policy": "hpo"})
        self.assertEqual((st, r["idle_policy"]), (200, "hpo"))
        st, _ = self.d.tcp("POST", f"/api/v1/jobs/{jid}/policy", json.dumps({"idle_policy": "hpo"}))
        self.assertEqual(st, 401)

    def test_user_who_may_not_use_finetune_is_refused(self):
        if not IS_ROOT:
            self.skipTest("needs root to act as nobody")
        nobody = pwd.getpwnam("nobody").pw_uid
        p = self.d.cli("submit", "--idle-policy", "finetune", "--", "true", user=nobody, check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("may not use profile 'finetune'", p.stderr)
        self.assertIn("ask an admin", p.stderr)
        # hpo is open to everyone; an admin (root here) may use finetune.
        jid = self.d.submit("--idle-policy", "hpo", "--", "true", user=nobody)
        self.d.wait_state(jid, "COMPLETED")
        jid = self.d.submit("--idle-policy", "finetune", "--", "true")
        self.d.wait_state(jid, "COMPLETED")
        # Changing a job's profile is for admins.
        sj = self.d.submit("--", "sleep", "30", user=nobody)
        p = self.d.cli("admin", "set-policy", sj, "finetune", user=nobody, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("admin", p.stderr)


class BadPolicyConfigTest(unittest.TestCase):
    def test_bad_profiles_stop_the_daemon_with_a_message(self):
        for conf, needle in (("[policy.default]\nutil_threshold = 200\n", "util_threshold"),
                             ("[policy.default]\nidle_timout = 3\n", "unknown key 'idle_timout'"),
                             ("[policy.Bad Name]\nidle_timeout = 3\n", "profile name")):
            self.assertIn(needle, start_failure(conf))


if __name__ == "__main__":
    main()

"""What one user's text may do to another's screen, and what a reader who is not a job's owner
is shown of it: names with terminal controls, evidence quoted from a job's log, command lines."""
import json
import time
import unittest

from gwtest import IS_ROOT, TRAINER, DaemonTest, main, start_failure, wait_until
from test_web import SSE

SECRET = "sk-gwsec-4f1c9e"
# The secret is put together by the job: it is in its log, not in its command line.
RAISE = "raise ValueError('api_key sk-gwsec-' + '4f1c9e')"
CUDA = ("import sys; print('RuntimeError: CUDA error: an illegal memory access was encountered (api_key sk-gwsec-'"
        " + '4f1c9e)', flush=True); sys.exit(1)")
ARG_SECRET = "--password=hunter2-gwsec"
HIDDEN = "evidence hidden: only the job's owner and admins may read its log"
NOBODY = 65534            # a signed-in user who is neither the job's owner nor an admin

RLO = "\u202e"            # right-to-left override: "gpj.exe" reads as "exe.jpg"
ESC = "\x1b"
BIDI = "\u200e\u200f\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069"
NASTY = [ESC, RLO, "\u200e", "\u200f", "\u202a", "\u2066", "\u2069", "\x9b", "\x07"]


class DisplaySpoofingTest(DaemonTest):
    def assert_clean(self, text, what):
        for ch in NASTY:
            self.assertNotIn(ch, text, f"{what} carries {ch!r}: {text!r}")

    def test_queue_and_schedule_neutralise_controls_and_bidi(self):
        name = f"evil{RLO}gpj.exe{ESC}[2J{ESC}]0;pwned\x07{BIDI}"
        jid = self.d.submit_api(["sleep", "60"], name=name, ngpus=4)
        queued = self.d.submit_api(["sleep", "60"], name=f"next{ESC}[31m{RLO}x", ngpus=4)
        self.assertEqual(self.d.job(jid)["name"], name, "the API keeps the name as given (JSON escapes it)")
        st, b = self.d.api("POST", "/api/v1/bookings", {"ngpus": 1, "start": time.time() + 7200, "duration": 3600,
                                                         "name": f"bk{ESC}[5m{RLO}"})
        self.assertEqual(st, 201, b)
        self.d.wait_state(jid, "RUNNING")
        out = self.d.cli("queue", "--all").stdout + self.d.cli("queue").stdout
        self.assertIn(str(queued), out)
        self.assertIn("evil?gpj.exe?[2J", out, out)
        self.assert_clean(out, "gpuward queue")
        out = self.d.cli("show", str(jid)).stdout
        self.assert_clean(out, "gpuward show")
        out = self.d.cli("reservations").stdout
        self.assert_clean(out, "gpuward bookings")
        st, s = self.d.api("GET", "/api/v1/schedule?hours=6")
        self.assertEqual(st, 200)
        self.assertIn(f"job {jid}", s["text"])
        self.assertIn("evil?gpj.exe?[2J", s["text"])
        self.assert_clean(s["text"], "schedule.text")
        out = self.d.cli("schedule", "--hours", "6").stdout
        self.assertIn(f"booking {b['id']}", out)
        self.assert_clean(out, "gpuward schedule")


class FailureEvidenceTest(DaemonTest):
    """A job's log is private to its owner and admins: so is what its reason, attempts and
    events quote from it.  Guests see no command line, directory or log path either."""

    def failing_job(self, code=RAISE, retries=0):
        return self.d.submit_api(["python3", "-c", code, ARG_SECRET], retries=retries)

    def assert_hidden(self, body, what, details_hidden):
        self.assertNotIn(SECRET, body, f"{what} leaks the log line")
        if details_hidden:
            self.assertNotIn("hunter2", body, f"{what} shows a guest the command line")
            self.assertNotIn(self.d.work, body, f"{what} shows a guest the directory")

    def test_reason_attempts_and_events_hide_the_log_from_others(self):
        sse = SSE(self.d.port)
        try:
            jid = self.failing_job()
            retried = self.failing_job(CUDA, retries=1)  # a retry's event quotes the line too
            j = self.d.wait_state(jid, "FAILED", timeout=60)
            r = self.d.wait_state(retried, "FAILED", timeout=60)
            # The owner (and an admin: root here) reads the evidence.
            self.assertEqual(j["reason"], f"user_error: ValueError: api_key {SECRET}")
            self.assertIn(SECRET, j["attempts"][0]["evidence"])
            self.assertEqual(len(r["attempts"]), 2, r["attempts"])
            self.assertTrue(all(SECRET in a["evidence"] for a in r["attempts"]), r["attempts"])
            self.assertTrue(any(SECRET in e["message"] for e in r["events"] if e["kind"] == "retry"), r["events"])
            for o in (j, r):
                self.assertNotIn("\\u001e", json.dumps(o), "no marker reaches a reader")
                self.assertNotIn("\\u001f", json.dumps(o), "no marker reaches a reader")

            # Anonymous TCP guests: the class and the exit, nothing of the log, no command line.
            st, lst = self.d.tcp_json("GET", "/api/v1/jobs?state=FAILED&fields=id,user,reason")
            self.assertEqual(st, 200, lst)
            row = next(x for x in lst["jobs"] if x["id"] == jid)
            self.assertEqual(row["reason"], f"user_error: exit 1 ({HIDDEN})")
            for k in (jid, retried):
                st, body = self.d.tcp("GET", f"/api/v1/jobs/{k}")
                self.assertEqual(st, 200)
                self.assert_hidden(body.decode(), "GET /api/v1/jobs/ID (guest)", True)
                g = json.loads(body)
                self.assertEqual((g["command"], g["cwd"], g["log_path"]), (None, None, None), g)
                self.assertTrue(all(a["evidence"] == f"exit 1 ({HIDDEN})" for a in g["attempts"]), g["attempts"])
            self.assertIn(HIDDEN, next(e["message"] for e in g["events"] if e["kind"] == "retry"))
            for path in ("/api/v1/jobs?state=FAILED", "/api/v1/jobs?state=FAILED&layout=rows", "/metrics"):
                st, body = self.d.tcp("GET", path)
                self.assertEqual(st, 200, path)
                self.assert_hidden(body.decode(), path, True)
            st, body = self.d.tcp("GET", f"/api/v1/jobs/{jid}/log")
            self.assertEqual(st, 403, "the log itself stays refused")
            # The event stream is one for every reader: a guest's view.
            seen, ended = "", set()
            while ended != {jid, retried}:
                ev = sse.next_event(("job", "job_event"), timeout=30)
                seen += ev["data"]
                data = json.loads(ev["data"])
                if data.get("state") == "FAILED":
                    ended.add(data.get("id"))
            self.assert_hidden(seen, "the event stream", True)

            # Another user signed in: the command line as before, still not the log's text.
            if IS_ROOT:
                st, body = self.d.raw_as(NOBODY, "GET", f"/api/v1/jobs/{retried}")
                self.assertEqual(st, 200)
                self.assertNotIn(SECRET, body.decode(), "another user reads the log line")
                o = json.loads(body)
                self.assertIn(ARG_SECRET, o["command"])
                st, body = self.d.raw_as(NOBODY, "GET", "/api/v1/jobs?state=FAILED&fields=id,reason,command")
                self.assertNotIn(SECRET, body.decode())
                self.assertIn(ARG_SECRET, body.decode())
        finally:
            sse.close()

    def test_cli_show_of_the_owner_quotes_the_log_line(self):
        jid = self.failing_job()
        self.d.wait_state(jid, "FAILED", timeout=60)
        out = self.d.cli("show", str(jid)).stdout
        self.assertIn(SECRET, out)
        self.assertNotIn(HIDDEN, out)


class GuestViewTest(DaemonTest):
    def test_guests_see_no_command_line_of_jobs_or_gpu_processes(self):
        jid = self.d.submit_api(["sh", "-c", "sleep 60", "sh", ARG_SECRET], name="train")
        pid = self.d.wait_pid(jid)
        self.d.write_procs(pid, [(0, 512, 30)])
        gpu = lambda gpus: next(g for g in gpus["gpus"] if g["job"] == jid)
        own = wait_until(lambda: (lambda g: g if g["processes"] else None)(gpu(self.d.api("GET", "/api/v1/gpus")[1])),
                         what="the job's process on its GPU")
        self.assertIn(ARG_SECRET, own["processes"][0]["command"], "its owner (root here) sees it")
        st, body = self.d.tcp("GET", "/api/v1/gpus")
        self.assertEqual(st, 200)
        self.assertNotIn("hunter2", body.decode())
        g = gpu(json.loads(body))
        self.assertEqual(g["processes"][0]["command"], None)
        self.assertEqual(g["job_info"]["name"], "train", "what runs where stays public")
        for path in ("/api/v1/jobs", f"/api/v1/jobs/{jid}", "/api/v1/jobs?layout=rows", "/api/v1/jobs?fields=command"):
            st, body = self.d.tcp("GET", path)
            self.assertEqual(st, 200, path)
            self.assertNotIn("hunter2", body.decode(), path)
        self.assertIn(ARG_SECRET, self.d.job(jid)["command"])
        st, who = self.d.tcp_json("GET", "/api/v1/whoami")
        self.assertEqual(who["role"], "guest")

    def test_guests_see_no_path_into_a_training_jobs_directory(self):
        jid = self.d.submit_api([TRAINER, "epochs=30", "name=privy", "--epoch-seconds", "1"])
        own = self.d.wait_job(jid, lambda j: (j.get("training") or {}).get("results_csv"), timeout=60,
                              what="its results.csv to be found")
        self.assertIn(self.d.work, own["training"]["results_csv"])
        for path in (f"/api/v1/jobs/{jid}", f"/api/v1/jobs/{jid}/eta", f"/api/v1/jobs/{jid}/snapshots?all=1"):
            st, body = self.d.tcp("GET", path)
            self.assertEqual(st, 200, path)
            self.assertNotIn(self.d.work, body.decode(), path)
        st, g = self.d.tcp_json("GET", f"/api/v1/jobs/{jid}")
        self.assertIsNone(g["training"]["results_csv"])
        self.assertIsNotNone(g["training"]["epoch"], "progress stays public")


class GuestJobDetailsTest(DaemonTest):
    """guest_job_details = true opens command lines to guests again, never the log's text."""
    config = "guest_job_details = true\n"

    def test_guests_see_details_but_not_the_log(self):
        jid = self.d.submit_api(["python3", "-c", RAISE, ARG_SECRET], retries=0)
        self.d.wait_state(jid, "FAILED", timeout=60)
        st, g = self.d.tcp_json("GET", f"/api/v1/jobs/{jid}")
        self.assertEqual(st, 200)
        self.assertIn(ARG_SECRET, g["command"])
        self.assertEqual(g["cwd"], self.d.work)
        self.assertNotIn(SECRET, json.dumps(g))

    def test_a_bad_value_is_refused_naming_the_setting(self):
        why = start_failure("guest_job_details = maybe\n")
        self.assertIn("guest", why)
        self.assertIn("maybe", why)


if __name__ == "__main__":
    main()

"""Bookings, quotas, rate limits, roles and tokens."""
import json
import pwd
import subprocess
import sys
import time
import unittest

from gwtest import IS_ROOT, DaemonTest, as_user, kinds, main, wait_until


class BookingTest(DaemonTest):
    def book(self, **body):
        return self.d.api("POST", "/api/v1/bookings", body)

    def test_booking_starts_and_stops_its_job(self):
        start = time.time() + 3
        st, b = self.book(ngpus=2, start=start, duration=4, name="finetune")
        self.assertEqual((st, b["state"], len(b["gpus"])), (201, "APPROVED", 2), b)
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["sleep", "60"], "cwd": self.d.work, "ngpus": 2,
                                                    "reservation": b["id"]})
        self.assertEqual(st, 201, r)
        jid = r["id"]
        # A job outside the booking that would run into it must not take its GPUs.
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["sleep", "60"], "cwd": self.d.work, "ngpus": 4,
                                                    "time_limit": 3600})
        other = r["id"]
        time.sleep(1)
        self.assertEqual(self.d.job(jid)["reason"], "Reservation")
        self.assertEqual(self.d.job(other)["state"], "PENDING")
        j = self.d.wait_state(jid, "RUNNING", timeout=10)
        self.assertGreaterEqual(j["start_time"], start - 0.05, "not before the booking starts")
        self.assertEqual(sorted(j["gpus"]), sorted(b["gpus"]))
        j = self.d.wait_state(jid, "TIMEOUT", timeout=15)
        self.assertIn("booking ended", j["reason"])
        self.assertLessEqual(j["end_time"], start + 4 + 2 + 1.5, "stopped at the end (grace 1 s)")
        self.assertIn("warn", kinds(j))
        self.d.wait_state(other, "RUNNING", timeout=10)
        self.d.cli("cancel", other)

    def test_releasing_a_booking_stops_its_running_job(self):
        """A released booking is over, as at its end: its job stops now, not at the old end,
        and leaves its GPU to others."""
        st, b = self.book(ngpus=1, start=time.time() + 1, duration=3600)
        self.assertEqual(st, 201, b)
        jid = self.d.submit("--reservation", b["id"], "--time", "2h", "--", "sleep", "300")
        self.d.wait_state(jid, "RUNNING", timeout=10)
        self.d.wait_pid(jid)
        t0 = time.time()
        self.d.cli("unreserve", b["id"])
        j = self.d.wait_state(jid, "TIMEOUT", timeout=10)
        self.assertRegex(j["reason"], r"^its booking ended early: released by \S+$")
        self.assertLess(j["end_time"] - t0, 1 + 2, "stopped at the release (grace 1 s)")
        self.assertEqual(self.d.api("GET", "/api/v1/bookings")[1]["bookings"], [])
        other = self.d.submit("--gpus", 4, "--time", "1h", "--", "true")
        self.d.wait_state(other, "COMPLETED")

    def test_refused_with_the_nearest_window(self):
        now = time.time()
        st, b = self.book(ngpus=2, start=now + 3600, duration=4 * 3600)
        self.assertEqual(st, 201)
        st, r = self.book(ngpus=4, start=now + 2 * 3600, duration=2 * 3600)
        self.assertEqual((st, r["field"]), (409, "start"), r)
        self.assertIn("nearest window for 4 GPUs", r["error"])
        self.assertAlmostEqual(r["nearest"]["start"], now + 5 * 3600, delta=1)
        self.assertEqual(len(self.d.api("GET", "/api/v1/bookings")[1]["bookings"]), 1, "nothing changed")

    def test_bad_bookings(self):
        for body, field in (({"ngpus": 0, "start": "now+1h", "duration": "1h"}, "ngpus"),
                            ({"ngpus": 9, "start": "now+1h", "duration": "1h"}, "ngpus"),
                            ({"ngpus": 1, "start": "yesterday", "duration": "1h"}, "start"),
                            ({"ngpus": 1, "start": time.time() - 3600, "duration": "1h"}, "start"),
                            ({"ngpus": 1, "start": "now+1h", "duration": "3fortnights"}, "duration")):
            st, r = self.book(**body)
            self.assertEqual((st, r["field"]), (400, field), (body, r))
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "cwd": self.d.work, "reservation": 99})
        self.assertEqual((st, r["field"]), (400, "reservation"))
        self.assertEqual(self.d.api("GET", "/api/v1/bookings")[1]["bookings"], [])

    def test_booking_fields_are_checked(self):
        """A wrong type or an unknown field is refused, never read as absent (name "" or a
        misleading "1 to 64 GPUs")."""
        ok = {"ngpus": 1, "start": "now+1h", "duration": "1h"}
        for extra, field, message in (
                ({"name": 5}, "name", "name: must be a string"),
                ({"ngpus": "2"}, "ngpus", "ngpus: must be an integer"),
                ({"ngpus": 1.5}, "ngpus", "ngpus: must be an integer"),
                ({"bogus": 1}, "bogus", "bogus: not a field of a booking (it takes ngpus, start, duration, name; "
                                        "docs/API.md)"),
                ({"gpus": 2}, "gpus", "gpus: not a field of a booking")):
            body = {**ok, **extra}
            st, r = self.book(**body)
            self.assertEqual((st, r["field"]), (400, field), (body, r))
            self.assertTrue(r["error"].startswith(message), (body, r))
        self.assertEqual(self.d.api("GET", "/api/v1/bookings")[1]["bookings"], [], "nothing booked")
        st, b = self.book(**ok, name="fine")
        self.assertEqual((st, b["name"]), (201, "fine"), b)

    def test_schedule_shows_bookings_and_jobs(self):
        self.book(ngpus=1, start=time.time() + 3600, duration=3600, name="later")
        self.d.submit("--gpus", 2, "--time", "2h", "--", "sleep", "60")
        st, s = self.d.api("GET", "/api/v1/schedule?hours=72")
        self.assertEqual(st, 200)
        kinds = {seg["kind"] for seg in s["segments"]}
        self.assertTrue({"running", "booking"} <= kinds, kinds)
        self.assertIn("GPU 0", s["text"])


class BookingQuotaTest(DaemonTest):
    """Bad bookings that quotas catch: one line each, nothing booked that should not be."""

    def test_too_long_too_far_and_overlapping_own(self):
        st, r = self.d.api("POST", "/api/v1/quota", {"subject": "default", "settings": [
            "max_booking_hours=2", "max_booking_gpus=2", "booking_horizon_hours=48"]})
        self.assertEqual(st, 200, r)
        now = time.time()
        # Beyond the horizon: refused, nothing stored.
        st, r = self.book(ngpus=1, start=now + 72 * 3600, duration=3600)
        self.assertEqual((st, r["field"]), (403, "start"), r)
        self.assertIn("booking_horizon_hours", r["error"])
        self.assertEqual(self.d.api("GET", "/api/v1/bookings")[1]["bookings"], [])
        # Longer than allowed: waits for an admin, and says which limit.
        st, b = self.book(ngpus=1, start=now + 3600, duration=3 * 3600)
        self.assertEqual((st, b["state"]), (201, "PENDING_APPROVAL"), b)
        self.assertIn("max_booking_hours", b["note"])
        # Overlapping one's own approved booking beyond max_booking_gpus: waits for an admin
        # too.  (The one awaiting approval holds nothing, so it does not count.)
        st, b1 = self.book(ngpus=1, start=now + 2 * 3600, duration=3600)
        self.assertEqual((st, b1["state"]), (201, "APPROVED"), b1)
        st, b2 = self.book(ngpus=2, start=now + 2 * 3600, duration=3600)
        self.assertEqual((st, b2["state"]), (201, "PENDING_APPROVAL"), b2)
        self.assertIn("already booked at the same time", b2["note"])
        p = self.d.cli("admin", "approve", b2["id"])
        self.assertIn(f"Approved booking {b2['id']}", p.stdout)
        p = self.d.cli("admin", "approve", b2["id"], check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("not awaiting approval", p.stderr)

    def book(self, **body):
        return self.d.api("POST", "/api/v1/bookings", body)

    def test_submit_into_an_ended_booking(self):
        st, b = self.book(ngpus=1, start=time.time() + 1, duration=2)
        self.assertEqual(st, 201, b)
        wait_until(lambda: not self.d.api("GET", "/api/v1/bookings")[1]["bookings"], timeout=15,
                   what="the booking to end")
        p = self.d.cli("submit", "--reservation", b["id"], "--", "true", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"booking {b['id']} does not exist or has ended", p.stderr)
        self.assertEqual(self.d.api("GET", "/api/v1/jobs")[1]["jobs"], [], "nothing queued")

    def test_cli_bad_input(self):
        for args, words in ((("reserve", "--gpus", "0", "--start", "now+1h", "--duration", "1h"), "--gpus"),
                            (("reserve", "--gpus", "1", "--start", "the day after", "--duration", "1h"), "--start"),
                            (("reserve", "--gpus", "1", "--start", "now+1h", "--duration", "0"), "--duration"),
                            (("unreserve", "twelve"), "not a booking id"),
                            (("admin", "quota", "set", "default", "max_gpu=1"), "unknown quota key"),
                            (("token", "create", "--expires", "1y"), "--expires"),
                            (("token", "create", "--expires", "30"), "give a unit"),
                            (("token", "revoke", "x"), "not a token id")):
            p = self.d.cli(*args, check=False)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(words, p.stderr.splitlines()[0], args)
        self.assertEqual(self.d.api("GET", "/api/v1/bookings")[1]["bookings"], [])
        self.assertEqual(self.d.api("GET", "/api/v1/tokens")[1]["tokens"], [])


class TokenTest(DaemonTest):
    def token(self, **body):
        st, r = self.d.api("POST", "/api/v1/tokens", body)
        self.assertEqual(st, 201, r)
        return r

    def tcp(self, path, token=None, auth=None):
        return self.d.tcp_json("GET", path, token=token, auth=auth)

    def test_bad_tokens(self):
        for body in ({"expires": "0d"}, {"expires": "forever"}, {"expires": -5}, {"expires": "3651d"}):
            st, r = self.d.api("POST", "/api/v1/tokens", body)
            self.assertEqual((st, r["field"]), (400, "expires"), (body, r))
        for body, field, message in (({"name": 5}, "name", "name: must be a string"),
                                     ({"name": ["ci"]}, "name", "name: must be a string"),
                                     ({"name": "ci", "bogus": 1}, "bogus",
                                      "bogus: not a field of a token (it takes name, expires, scope, node; docs/API.md)"),
                                     ({"expire": "30d"}, "expire", "expire: not a field of a token")):
            st, r = self.d.api("POST", "/api/v1/tokens", body)
            self.assertEqual((st, r["field"]), (400, field), (body, r))
            self.assertTrue(r["error"].startswith(message), (body, r))
        self.assertEqual(self.d.api("GET", "/api/v1/tokens")[1]["tokens"], [], "nothing made")
        t = self.token(name="ci", expires="30d")
        self.assertGreater(t["expires"], time.time() + 29 * 86400)
        self.assertEqual(self.tcp("/api/v1/whoami", t["token"])[1]["role"], "admin")
        st, r = self.tcp("/api/v1/jobs", auth="Bearer gw_123")
        self.assertEqual(st, 401)
        self.assertIn("64 hex digits", r["error"])
        self.d.cli("token", "revoke", t["id"])
        st, r = self.tcp("/api/v1/jobs", t["token"])
        self.assertEqual(st, 401)
        self.assertEqual(r["error"], f"token {t['id']} was revoked")
        self.assertEqual(self.d.api("GET", "/api/v1/tokens")[1]["tokens"], [])

    def test_last_used_is_written_once_a_minute(self):
        t = self.token(name="agent")
        listed = lambda: {x["id"]: x for x in self.d.api("GET", "/api/v1/tokens")[1]["tokens"]}[t["id"]]
        self.assertIsNone(listed()["last_used"], "never used yet")
        self.assertEqual(self.tcp("/api/v1/whoami", t["token"])[0], 200)
        first = listed()["last_used"]
        self.assertGreater(first, 0)
        time.sleep(1.1)
        for _ in range(3):
            self.assertEqual(self.tcp("/api/v1/whoami", t["token"])[0], 200)
        self.assertEqual(listed()["last_used"], first, "a use within the minute writes nothing")

    def test_expired_token(self):
        t = self.token(name="brief", expires=1)
        st, r = wait_until(lambda: (lambda sr: sr if sr[0] == 401 else None)(self.tcp("/api/v1/jobs", t["token"])),
                           timeout=15, interval=0.25, what="the token to expire")
        self.assertIn(f"token {t['id']} (brief) expired at ", r["error"])
        listed = self.d.api("GET", "/api/v1/tokens")[1]["tokens"]
        self.assertEqual([(x["id"], x["expired"]) for x in listed], [(t["id"], True)])
        self.assertIn("expired ", self.d.cli("token", "list").stdout)


class RefuseAnonymousTest(DaemonTest):
    extra = ("--tcp-anonymous", "refuse")

    def test_tcp_without_token_is_refused(self):
        st, body = self.d.tcp("GET", "/api/v1/jobs")
        self.assertEqual(st, 401)
        self.assertIn("token only", json.loads(body)["error"])
        self.assertEqual(self.d.tcp("GET", "/healthz")[0], 200)
        st, t = self.d.api("POST", "/api/v1/tokens", {"name": "ok"})
        self.assertEqual(self.d.tcp_json("GET", "/api/v1/jobs", token=t["token"])[0], 200)
        # The Unix socket is not affected.
        self.assertEqual(self.d.api("GET", "/api/v1/jobs")[0], 200)


class NoShowTest(DaemonTest):
    extra = ("--no-show", "2s")

    def test_unused_booking_is_released(self):
        st, b = self.d.api("POST", "/api/v1/bookings", {"ngpus": 2, "start": time.time() + 1, "duration": 60})
        self.assertEqual(st, 201, b)
        wait_until(lambda: not self.d.api("GET", "/api/v1/bookings")[1]["bookings"], timeout=15,
                   what="the booking to be released")
        self.assertIn("RELEASED", self.d.daemon_log())
        self.assertIn("no job ran in it for 2s", self.d.daemon_log())
        # Its GPUs are free for everyone again.
        jid = self.d.submit("--gpus", 4, "--time", "1h", "--", "true")
        self.d.wait_state(jid, "COMPLETED")


class QuotaTest(DaemonTest):
    def test_quota_wait_and_refuse(self):
        st, r = self.d.api("POST", "/api/v1/quota", {"subject": "default", "settings": ["max_gpus=2",
                                                                                        "max_time_limit=1h"]})
        self.assertEqual(st, 200, r)
        st, r = self.d.api("POST", "/api/v1/quota", {"subject": "default", "settings": ["max_gpu=2"]})
        self.assertEqual((st, r["field"]), (400, "settings"))
        self.assertIn("unknown quota key", r["error"])
        q = self.d.api("GET", "/api/v1/quota")[1]
        self.assertEqual(q["limits"]["max_gpus"]["value"], "2")
        p = self.d.cli("submit", "--time", "2h", "--", "true", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("max_time_limit", p.stderr)
        a = self.d.submit("--gpus", 2, "--time", "30m", "--", "sleep", "60")
        self.d.wait_state(a, "RUNNING")
        b = self.d.submit("--gpus", 1, "--time", "30m", "--", "true")
        wait_until(lambda: self.d.job(b)["reason"].startswith("Quota: max_gpus=2, 2 in use by job "), what="reason Quota")
        self.d.cli("cancel", a)
        self.d.wait_state(b, "COMPLETED")


class QuotaSubjectTest(DaemonTest):
    """An admin's typo in a quota is refused, not stored to never apply."""

    def quota(self, user):
        return self.d.api("GET", f"/api/v1/quota?user={user}")[1]["limits"]

    def test_unknown_subjects_and_fields(self):
        before = self.quota("nobody")
        for body, field, message in (
                ({"subject": "gw-no-such-user", "settings": ["max_gpus=1"]}, "subject",
                 "subject: no user 'gw-no-such-user' on this host"),
                ({"subject": "@gw-no-such-group", "settings": ["max_gpus=1"]}, "subject",
                 "subject: no group 'gw-no-such-group' on this host"),
                ({"subject": 5, "settings": ["max_gpus=1"]}, "subject", "subject: must be a string"),
                ({"subject": "nobody", "settings": "max_gpus=1"}, "settings",
                 "settings: must be a list of KEY=VALUE strings"),
                ({"subject": "nobody", "settings": [1]}, "settings", "settings: must be strings"),
                ({"subject": "nobody", "settings": ["max_gpus=1"], "bogus": 1}, "bogus",
                 "bogus: not a field of a quota setting (it takes subject, settings; docs/API.md)")):
            st, r = self.d.api("POST", "/api/v1/quota", body)
            self.assertEqual((st, r["field"]), (400, field), (body, r))
            self.assertEqual(r["error"], message, body)
        p = self.d.cli("admin", "quota", "set", "gw-no-such-user", "max_gpus=1", check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("no user 'gw-no-such-user' on this host", p.stderr)
        p = self.d.cli("admin", "quota", "set", "@gw-no-such-group", "max_gpus=1", check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("no group 'gw-no-such-group' on this host", p.stderr)
        self.assertEqual(self.quota("nobody"), before, "nothing changed")
        # Real accounts, real groups and the default still take quotas.
        self.d.cli("admin", "quota", "set", "nobody", "max_gpus=3")
        self.d.cli("admin", "quota", "set", "@root", "max_pending_jobs=7")
        self.d.cli("admin", "quota", "set", "default", "max_gpus=2")
        self.assertEqual(self.quota("nobody")["max_gpus"], {"value": "3", "from": "user"})
        self.assertEqual(self.quota("root")["max_pending_jobs"], {"value": "7", "from": "group"})


@unittest.skipUnless(IS_ROOT, "needs root to act as other users")
class BookingRateTest(DaemonTest):
    """The rate limit counts bookings made, not requests that were refused."""
    extra = ("--rate-limit", "1", "--rate-burst", "2")

    def test_refused_bookings_cost_nothing(self):
        nobody = pwd.getpwnam("nobody").pw_uid

        def book(body):
            st, payload = self.d.raw_as(nobody, "POST", "/api/v1/bookings", json.dumps(body).encode())
            return st, json.loads(payload)

        good = {"ngpus": 1, "start": "now+1h", "duration": "1h"}
        for bad in ({**good, "bogus": 1}, {**good, "name": 5}, {**good, "ngpus": "1"}, {**good, "ngpus": 0},
                    {**good, "start": "yesterday"}, {**good, "ngpus": 5}):  # 5: more than this host has
            st, r = book(bad)
            self.assertEqual(st, 400, (bad, r))
        self.assertEqual(self.d.api("GET", "/api/v1/bookings")[1]["bookings"], [])
        # The whole burst of 2 is still there.
        self.assertEqual(book(good)[0], 201)
        self.assertEqual(book({**good, "start": "now+3h"})[0], 201)
        st, r = book({**good, "start": "now+5h"})
        self.assertEqual(st, 429, r)
        self.assertEqual(len(self.d.api("GET", "/api/v1/bookings")[1]["bookings"]), 2)


@unittest.skipUnless(IS_ROOT, "needs root to act as other users")
class RolesTest(DaemonTest):
    def setUp(self):
        super().setUp()
        self.nobody = pwd.getpwnam("nobody").pw_uid

    def test_token_over_tcp(self):
        tok = self.d.cli_json("token", "create", "--name", "ci", user=self.nobody)["token"]
        body = {"command": ["id", "-u"], "cwd": "/tmp"}
        st, reply = self.d.tcp_json("POST", "/api/v1/jobs", body, token=tok)
        self.assertEqual(st, 201, reply)
        j = self.d.wait_state(reply["id"], "COMPLETED")
        self.assertEqual(j["user"], "nobody")
        self.assertEqual(self.d.log_text(reply["id"]).strip(), str(self.nobody))
        self.assertEqual(self.d.tcp_json("POST", "/api/v1/jobs", body, token="gw_" + "0" * 64)[0], 401)

    def test_rate_limit_429(self):
        codes = []
        script = f"""
import socket, json
body = json.dumps({{"command": ["true"], "cwd": "/tmp", "hold": True}}).encode()
for i in range(60):
    s = socket.socket(socket.AF_UNIX); s.connect({self.d.socket!r})
    s.sendall(b'POST /api/v1/jobs HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\nContent-Length: ' + str(len(body)).encode() + b'\\r\\n\\r\\n' + body)
    data = b''
    while True:
        c = s.recv(65536)
        if not c: break
        data += c
    head = data.split(b'\\r\\n\\r\\n')[0].decode()
    print(head.split()[1], [l.split(': ')[1] for l in head.split('\\r\\n') if l.lower().startswith('retry-after')])
"""
        out = subprocess.run(as_user(self.nobody) + [sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=60)
        lines = out.stdout.splitlines()
        codes = [l.split()[0] for l in lines]
        self.assertEqual(codes[:50], ["201"] * 50, out.stderr)
        self.assertIn("429", codes)
        retry = [l for l in lines if l.startswith("429")][0]
        self.assertRegex(retry, r"\['\d+'\]")


@unittest.skipUnless(IS_ROOT, "needs root to act as other users")
class SubmitLoopUnderRateLimitTest(DaemonTest):
    """A loop of `gpuward submit` past the burst slows down to the rate instead of failing
    half-way (as sbatch sleeps and retries when slurmctld is busy); the API still answers 429."""
    extra = ("--rate-limit", "60", "--rate-burst", "2")

    def test_the_cli_waits_out_the_rate_limit(self):
        nobody = pwd.getpwnam("nobody").pw_uid
        waits = 0
        for i in range(4):
            p = self.d.cli("submit", "-q", "--hold", "--cwd", "/tmp", "--", "true", user=nobody, cwd="/tmp")
            self.assertRegex(p.stdout, r"^\d+\n$")
            waits += "waiting 1 s, then trying again" in p.stderr
            if p.stderr:
                self.assertIn("too many submissions and bookings from nobody", p.stderr)
        self.assertGreaterEqual(waits, 1, "a burst of 2 with 4 submissions must have waited")
        st, jobs = self.d.api("GET", "/api/v1/jobs")
        self.assertEqual(len(jobs["jobs"]), 4, "each submitted once: a refused request created nothing")
        body = json.dumps({"command": ["true"], "cwd": "/tmp", "hold": True}).encode()
        codes = [self.d.raw_as(nobody, "POST", "/api/v1/jobs", body)[0] for _ in range(3)]
        self.assertIn(429, codes, "the API itself does not wait")


if __name__ == "__main__":
    main()

"""Bookings, quotas, rate limits, roles and tokens."""
import http.client
import json
import os
import pwd
import subprocess
import time
import unittest

from gwtest import GPUWARD, IS_ROOT, DaemonTest, main, wait_until


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
        self.assertIn("warn", [e["kind"] for e in j["events"]])
        self.d.wait_state(other, "RUNNING", timeout=10)
        self.d.cli("cancel", other)

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

    def test_schedule_shows_bookings_and_jobs(self):
        self.book(ngpus=1, start=time.time() + 3600, duration=3600, name="later")
        self.d.submit("--gpus", 2, "--time", "2h", "--", "sleep", "60")
        st, s = self.d.api("GET", "/api/v1/schedule?hours=72")
        self.assertEqual(st, 200)
        kinds = {seg["kind"] for seg in s["segments"]}
        self.assertTrue({"running", "booking"} <= kinds, kinds)
        self.assertIn("GPU 0", s["text"])


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
        wait_until(lambda: self.d.job(b)["reason"] == "Quota", what="reason Quota")
        self.d.cli("cancel", a)
        self.d.wait_state(b, "COMPLETED")


@unittest.skipUnless(IS_ROOT, "needs root to act as other users")
class RolesTest(DaemonTest):
    def setUp(self):
        super().setUp()
        self.nobody = pwd.getpwnam("nobody").pw_uid

    def test_token_over_tcp(self):
        p = self.d.cli("token", "create", "--name", "ci", "--json", user=self.nobody, check=False)
        if p.returncode != 0:  # the CLI verb may not exist yet: use the API as nobody
            out = subprocess.run(["setpriv", f"--reuid={self.nobody}", f"--regid={self.nobody}", "--clear-groups",
                                  "python3", "-c", f"""
import socket, json
s = socket.socket(socket.AF_UNIX); s.connect({self.d.socket!r})
s.sendall(b'POST /api/v1/tokens HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 13\\r\\nConnection: close\\r\\n\\r\\n{{"name":"ci"}}')
data = b''
while True:
    c = s.recv(65536)
    if not c: break
    data += c
print(data.split(b'\\r\\n\\r\\n', 1)[1].decode())
"""], capture_output=True, text=True, timeout=20)
            tok = json.loads(out.stdout)["token"]
        else:
            tok = json.loads(p.stdout)["token"]
        body = json.dumps({"command": ["id", "-u"], "cwd": "/tmp"})
        c = http.client.HTTPConnection("127.0.0.1", self.d.port, timeout=10)
        c.request("POST", "/api/v1/jobs", body=body, headers={"Authorization": f"Bearer {tok}"})
        r = c.getresponse()
        reply = json.loads(r.read())
        c.close()
        self.assertEqual(r.status, 201, reply)
        j = self.d.wait_state(reply["id"], "COMPLETED")
        self.assertEqual(j["user"], "nobody")
        self.assertEqual(self.d.log_text(reply["id"]).strip(), str(self.nobody))
        c = http.client.HTTPConnection("127.0.0.1", self.d.port, timeout=10)
        c.request("POST", "/api/v1/jobs", body=body, headers={"Authorization": "Bearer gw_" + "0" * 64})
        self.assertEqual(c.getresponse().status, 401)
        c.close()

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
        out = subprocess.run(["setpriv", f"--reuid={self.nobody}", f"--regid={self.nobody}", "--clear-groups",
                              "python3", "-c", script], capture_output=True, text=True, timeout=60)
        lines = out.stdout.splitlines()
        codes = [l.split()[0] for l in lines]
        self.assertEqual(codes[:50], ["201"] * 50, out.stderr)
        self.assertIn("429", codes)
        retry = [l for l in lines if l.startswith("429")][0]
        self.assertRegex(retry, r"\['\d+'\]")


if __name__ == "__main__":
    main()

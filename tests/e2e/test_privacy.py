"""What one user's text may do to another's screen, and what a reader who is not a job's owner
is shown of it: names with terminal controls, evidence quoted from a job's log, command lines."""
import json
import time
import unittest

from gwtest import DaemonTest, main, wait_until

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


if __name__ == "__main__":
    main()

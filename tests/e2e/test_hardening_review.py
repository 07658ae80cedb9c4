"""Defects found reviewing the hardening against hostile users, full disks and dying GPUs: what
a reader who is not a job's owner is shown of processes beside the job."""
import json
import subprocess
import sys

from gwtest import DaemonTest, events_of, main, wait_until

ARG_SECRET = "--password=hunter2-gwrev"
HIDDEN = "evidence hidden"


class RogueCommandLineTest(DaemonTest):
    """A process of no job on a job's GPU is told to the job with its command line: that line
    is another user's, and guests see no command line (the GPU events hide it from them too)."""
    gpus = 1

    def setUp(self):
        self.rogue = None
        super().setUp()

    def tearDown(self):
        try:
            super().tearDown()
        finally:
            if self.rogue:
                self.rogue.kill()
                self.rogue.wait(timeout=30)

    def test_guests_read_no_rogue_command_line_in_a_jobs_events(self):
        jid = self.d.submit("--gpus", 1, "--", "sleep", "60")
        self.d.wait_state(jid, "RUNNING")
        self.rogue = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", ARG_SECRET])
        self.d.write_procs(self.rogue.pid, [(0, 300, 5)])
        owner = self.d.wait_job(jid, lambda j: events_of(j, "rogue"), what="the job told of the rogue")
        told = [e["message"] for e in events_of(owner, "rogue")]
        self.assertEqual(len(told), 1, told)
        self.assertIn(ARG_SECRET, told[0], "the job's owner (an admin here) reads the whole line")
        self.assertIn(f"pid {self.rogue.pid} (", told[0])
        self.assertNotIn("\\u001e", json.dumps(owner), "no marker reaches a reader")

        st, body = self.d.tcp("GET", f"/api/v1/jobs/{jid}")
        self.assertEqual(st, 200)
        self.assertNotIn("hunter2", body.decode(), "a guest reads the rogue's command line in the job's events")
        g = json.loads(body)
        said = [e["message"] for e in events_of(g, "rogue")]
        self.assertEqual(len(said), 1, said)
        self.assertIn(f"pid {self.rogue.pid} (", said[0], "a guest still learns what happened")
        self.assertIn(HIDDEN, said[0])


if __name__ == "__main__":
    main()

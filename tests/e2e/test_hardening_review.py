"""Defects found reviewing the hardening against hostile users, full disks and dying GPUs: what
a reader who is not a job's owner is shown of processes beside the job, and when a job ended
that its supervisor told in an earlier boot."""
import json
import os
import signal
import subprocess
import sys
import time

from gwtest import TRAINER, DaemonTest, events_of, main, pid_alive, wait_until
from test_exit_report import gated_job, parent_of, stop_clean

ARG_SECRET = "--password=hunter2-gwrev"
HIDDEN = "evidence hidden"


class CheckedTest(DaemonTest):
    """Stops its daemon (its jobs cancelled first) and fails on what a sanitizer build reported
    in the daemon's log on the way out."""

    def tearDown(self):
        log = ""
        try:
            if self.d.proc and self.d.proc.poll() is None:
                for j in self.d.api("GET", "/api/v1/jobs")[1].get("jobs", []):
                    self.d.api("DELETE", f"/api/v1/jobs/{j['id']}?wait=1", timeout=30)
                self.d.stop()
            log = self.d.daemon_log()
        finally:
            super().tearDown()
        self.assertNotIn("Sanitizer", log)
        self.assertNotIn("runtime error", log)


class RogueCommandLineTest(CheckedTest):
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


class SetupPathsTest(CheckedTest):
    """Why a job could not be set up names its output file or working directory: paths that
    guests are not shown anywhere else (cwd, log_path are null for them)."""
    gpus = 1

    def test_guests_read_no_path_in_a_setup_failure(self):
        gone = os.path.join(self.d.work, "gwrev-private-dir")
        os.mkdir(gone)
        jid = self.d.submit_api(["true"], output=os.path.join(gone, "out.log"), hold=True, retries=0)
        os.rmdir(gone)                    # gone by the time it starts: its output cannot be opened
        st, r = self.d.api("POST", f"/api/v1/jobs/{jid}/release")
        self.assertEqual(st, 200, r)
        j = self.d.wait_job(jid, lambda j: events_of(j, "setup") and j["state"] not in ("PENDING", "RUNNING"),
                            what="the failed setup")
        told = [e["message"] for e in events_of(j, "setup")]
        self.assertIn(f"cannot open output file '{gone}/out.log'", told[0], "its owner reads why")
        st, body = self.d.tcp("GET", f"/api/v1/jobs/{jid}")
        self.assertEqual(st, 200)
        self.assertNotIn("gwrev-private-dir", body.decode(), "a guest reads the job's paths in its setup event")
        g = json.loads(body)
        self.assertEqual(len(events_of(g, "setup")), 1, g["events"])

    def test_guests_read_no_restore_target(self):
        jid = self.d.submit("--name", "snap", "--", TRAINER, "epochs=3", "name=snap", "--epoch-seconds", "2.5")
        self.d.wait_state(jid, "COMPLETED", timeout=60)
        snaps = self.d.cli_json("snapshots", jid)["snapshots"]
        self.assertTrue(snaps, "snapshots were taken")
        target = os.path.join(self.d.work, "gwrev-restored.pt")
        st, r = self.d.api("POST", f"/api/v1/jobs/{jid}/restore", {"snapshot": snaps[-1]["seq"], "to": target})
        self.assertEqual((st, r.get("to")), (200, target), r)
        self.assertIn(f"written to {target} as", r["message"])
        owner = [e["message"] for e in events_of(self.d.job(jid), "restore")]
        self.assertEqual(len(owner), 1, owner)
        self.assertIn(f"written to {target} as", owner[0], "its owner reads where")
        st, body = self.d.tcp("GET", f"/api/v1/jobs/{jid}")
        self.assertEqual(st, 200)
        self.assertNotIn("gwrev-restored", body.decode(), "a guest reads where a snapshot was restored")
        self.assertEqual(len(events_of(json.loads(body), "restore")), 1)

    def test_guests_read_no_checkpoint_path_in_a_retry(self):
        fault = os.path.join(self.d.work, "fault-once")
        jid = self.d.submit_api([TRAINER, "epochs=4", "name=gwrevexp", "--epoch-seconds", "0.2", "--crash-at-epoch",
                                 "2", "--fault-once", fault], time_limit=300, yolo=True)
        j = self.d.wait_state(jid, "COMPLETED", timeout=60)
        retry = [e["message"] for e in events_of(j, "retry")]
        self.assertEqual(len(retry), 1, j["events"])
        self.assertIn("gwrevexp/weights/last.pt", retry[0], "its owner reads where it resumes from")
        st, body = self.d.tcp("GET", f"/api/v1/jobs/{jid}")
        self.assertEqual(st, 200)
        self.assertIsNone(json.loads(body)["resume_from"])
        self.assertNotIn("gwrevexp", body.decode(), "a guest reads the checkpoint's path in the retry event")
        self.assertIn("resuming from", body.decode())


class EndToldInAnotherBoot(CheckedTest):
    """The exits journal outlives a reboot: a supervisor stopped with the host wrote its job's
    end with that boot's monotonic instant, which means nothing in the next boot."""
    gpus = 1

    def test_the_end_is_its_wall_time_not_the_restart(self):
        gate, marker = os.path.join(self.d.work, "gate"), os.path.join(self.d.work, "ran")
        jid = gated_job(self.d, gate, marker)
        self.d.wait_state(jid, "RUNNING")
        pid = self.d.wait_pid(jid)
        shim = parent_of(pid)
        self.d.stop()
        os.kill(shim, signal.SIGKILL)     # it tells nothing: the line below stands for it
        open(gate, "w").close()
        wait_until(lambda: not pid_alive(pid), what="the job to end")
        ended = time.time()
        # An instant of CLOCK_MONOTONIC no boot of this host has reached yet: another boot's.
        other_boot = (time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000) + 10 ** 13
        with open(os.path.join(self.d.state, "run", "exits"), "a") as f:
            f.write(f"\n{jid} 1 0 {int(ended * 1e6)} {other_boot}\n")
        time.sleep(4)
        restarted = time.time()
        self.d.start()
        j = self.d.wait_state(jid, ("COMPLETED", "FAILED", "PENDING"))
        self.assertEqual((j["state"], j["attempt"], j["reason"]), ("COMPLETED", 1, "exit 0"), j)
        self.assertLess(abs(j["end_time"] - ended), 1.0, f"ended at {ended}, restarted at {restarted}: {j}")
        self.assertEqual(j["attempts"][0]["end_time"], j["end_time"], j)
        stop_clean(self, self.d)


if __name__ == "__main__":
    main()

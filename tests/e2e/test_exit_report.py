"""How a job's end reaches the daemon.

The supervisor tells the daemon how and when the job ended on its report pipe, and appends the
same to the exits journal for a daemon that is not there to read the pipe:
  - with the journal unwritable, the end reaches the daemon on the pipe alone;
  - on a full state dir a job that exits 0 ends COMPLETED, once, and is never run again; the
    end the store refused is written once there is room, or read from the journal (whose room
    the daemon keeps in reserve) by the next daemon;
  - a job that ends while the daemon is down ends at the time it really ended, not at the
    daemon's restart;
  - a job killed by SIGKILL from outside gpuward says so, and is not retried.

The disk-full test mounts a small tmpfs as the state dir: root only (it skips with the reason
otherwise).  Every wait is bounded; every process started is stopped by PID."""
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import unittest

from gwtest import IS_ROOT, Daemon, DaemonTest, main, pid_alive, supervisor_done, wait_until

MiB = 1 << 20


def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def fill(path):
    """Writes a filler file until the file system is full; returns its path."""
    filler = os.path.join(path, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (MiB, 4096, 512, 1):
            for _ in range(8192):            # bounded: the file system is a few MiB
                try:
                    os.write(fd, b"\0" * size)
                except OSError:
                    break
    finally:
        os.close(fd)
    return filler


def gated_job(d, gate, marker, **kw):
    """A job that appends a line to marker (outside the state dir: its side effect), then waits
    for the gate file and exits 0."""
    script = f"echo ran >> {marker}; while [ ! -e {gate} ]; do sleep 0.05; done"
    return d.submit_api(["sh", "-c", script], **kw)


RUNNING, COMPLETED = 2, 3     # as stored (src/core/job.h)


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def stop_clean(test, d):
    """Stops the daemon; a sanitizer build reports what it found in its log on the way out."""
    d.stop()
    log = d.daemon_log()
    test.assertNotIn("Sanitizer", log)
    test.assertNotIn("runtime error", log)


def runs(marker):
    try:
        with open(marker) as f:
            return f.read().count("ran")
    except FileNotFoundError:
        return 0


class FullDisk(unittest.TestCase):
    """The state dir is a 16 MiB tmpfs the test fills."""

    def setUp(self):
        if not IS_ROOT:
            print("test_exit_report: SKIPPED: needs root to mount a tmpfs as the state dir", file=sys.stderr)
            raise unittest.SkipTest("needs root to mount a tmpfs as the state dir")
        self.d = Daemon(gpus=2)
        self.filler = None
        os.makedirs(self.d.state)
        p = run("mount", "-t", "tmpfs", "-o", "size=16m,mode=0755", "tmpfs", self.d.state)
        if p.returncode != 0:
            shutil.rmtree(self.d.dir, ignore_errors=True)
            raise unittest.SkipTest(f"cannot mount a tmpfs: {p.stderr.strip()}")

    def tearDown(self):
        try:
            result = getattr(getattr(self, "_outcome", None), "result", None)
            if result is not None and any(t is self for t, _ in result.errors + result.failures):
                print(self.d.daemon_log()[-20000:], file=sys.stderr)
            if self.filler and os.path.exists(self.filler):
                os.unlink(self.filler)
            self.d.cleanup()
        finally:
            run("umount", self.d.state)
            shutil.rmtree(self.d.dir, ignore_errors=True)

    def stored(self, jid):
        db = sqlite3.connect(f"file:{os.path.join(self.d.state, 'gpuward.db')}?mode=ro", uri=True, timeout=10)
        try:
            row = db.execute("SELECT state, attempt FROM jobs WHERE id = ?", (jid,)).fetchone()
            n = db.execute("SELECT COUNT(*) FROM job_attempts WHERE job_id = ?", (jid,)).fetchone()[0]
            return row + (n,)
        finally:
            db.close()

    def fill_until_refused(self):
        self.filler = fill(self.d.state)
        for _ in range(200):   # SQLite may have room left in its WAL for a few writes
            st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "cwd": "/", "hold": True})
            if st != 201:
                self.assertEqual(st, 507, r)
                return
        self.fail("200 submissions went through on a full state dir")

    def test_exit_0_on_a_full_disk_completes_once(self):
        self.d.start()
        gate, marker = os.path.join(self.d.work, "gate"), os.path.join(self.d.work, "ran")
        jid = gated_job(self.d, gate, marker)
        self.d.wait_state(jid, "RUNNING")
        wait_until(lambda: runs(marker) == 1, what="the job to start its work")
        shim = parent_of(self.d.wait_pid(jid))
        self.fill_until_refused()
        open(gate, "w").close()
        j = self.d.wait_state(jid, ("COMPLETED", "FAILED", "PENDING"), timeout=30)
        self.assertEqual((j["state"], j["attempt"]), ("COMPLETED", 1), j)
        self.assertEqual(j["reason"], "exit 0", j)
        log = self.d.daemon_log()
        self.assertIn(f"job {jid}: cannot record its end (COMPLETED: exit 0)", log)
        self.assertNotIn(f"job {jid}: FAILED", log)
        wait_until(lambda: supervisor_done(shim), what="the supervisor to be through with the job")
        time.sleep(1.5)        # a retry (backoff 1 s) would have run the job again by now
        self.assertEqual(runs(marker), 1, "the job ran a second time")
        self.assertEqual(self.d.job(jid)["state"], "COMPLETED")
        # Space back: the end is written; a restart finds it COMPLETED, with one attempt.
        os.unlink(self.filler)
        wait_until(lambda: self.stored(jid)[:2] != (RUNNING, 1), timeout=30, what="the end to be written")
        self.assertEqual(self.stored(jid)[:2], (COMPLETED, 1))
        # The daemon says so right after the write: the row can be read a moment before the line.
        wait_until(lambda: f"job {jid}: its end (COMPLETED) is recorded now" in self.d.daemon_log(), timeout=10,
                   what="the daemon to say the end is recorded")
        self.d.stop()
        self.d.start()
        j = self.d.job(jid)
        self.assertEqual((j["state"], j["attempt"], len(j["attempts"])), ("COMPLETED", 1, 1), j)
        self.assertEqual(j["attempts"][0]["class"], "ok", j)
        self.assertEqual(runs(marker), 1, "the job ran a second time")
        stop_clean(self, self.d)

    def test_stopped_while_full_the_end_still_counts(self):
        """The daemon stops before it could write the end (the disk still full): the next one
        reads it from the exits journal, whose room the daemon keeps in reserve, and does not
        run the job again."""
        self.d.start()
        gate, marker = os.path.join(self.d.work, "gate"), os.path.join(self.d.work, "ran")
        jid = gated_job(self.d, gate, marker)
        self.d.wait_state(jid, "RUNNING")
        shim = parent_of(self.d.wait_pid(jid))
        self.fill_until_refused()
        open(gate, "w").close()
        wait_until(lambda: f"job {jid}: cannot record its end (COMPLETED: exit 0)" in self.d.daemon_log(),
                   what="the end the store refused")
        wait_until(lambda: supervisor_done(shim), what="the supervisor to be through with the job")
        self.d.stop()
        self.assertIn(f"job {jid}: its end (COMPLETED: exit 0) could not be recorded before the daemon stopped",
                      self.d.daemon_log())
        os.unlink(self.filler)
        self.d.start()
        j = self.d.wait_state(jid, ("COMPLETED", "FAILED", "PENDING", "RUNNING"))
        self.assertEqual((j["state"], j["attempt"]), ("COMPLETED", 1), j)
        self.assertEqual([a["class"] for a in j["attempts"]], ["ok"], j)
        time.sleep(1.5)        # a retry (backoff 1 s) would have run the job again by now
        self.assertEqual(runs(marker), 1, "the job ran a second time")
        stop_clean(self, self.d)


class JournalUnwritable(DaemonTest):
    gpus = 1

    def test_the_end_is_told_on_the_pipe_alone(self):
        """The exits journal's path is a directory while the job ends: the supervisor cannot
        append its line, and the daemon learns the end from the report pipe."""
        gate, marker = os.path.join(self.d.work, "gate"), os.path.join(self.d.work, "ran")
        jid = gated_job(self.d, gate, marker)
        self.d.wait_state(jid, "RUNNING")
        shim = parent_of(self.d.wait_pid(jid))
        journal = os.path.join(self.d.state, "run", "exits")
        os.rename(journal, journal + ".away")   # the daemon keeps reading it by its descriptor
        os.mkdir(journal)
        try:
            open(gate, "w").close()
            j = self.d.wait_state(jid, ("COMPLETED", "FAILED", "PENDING"))
            wait_until(lambda: supervisor_done(shim), what="the supervisor to be through with the job")
        finally:
            os.rmdir(journal)
            os.rename(journal + ".away", journal)
        self.assertEqual((j["state"], j["attempt"], j["reason"]), ("COMPLETED", 1, "exit 0"), j)
        self.assertLess(j["end_time"] - j["start_time"], 30, j)
        time.sleep(1.5)        # a retry (backoff 1 s) would have run the job again by now
        self.assertEqual(runs(marker), 1, "the job ran a second time")
        stop_clean(self, self.d)


class EndWhileDown(DaemonTest):
    gpus = 1

    def test_end_time_is_the_real_end_not_the_restart(self):
        gate, marker = os.path.join(self.d.work, "gate"), os.path.join(self.d.work, "ran")
        jid = gated_job(self.d, gate, marker)
        self.d.wait_state(jid, "RUNNING")
        pid = self.d.wait_pid(jid)
        shim = parent_of(pid)
        self.d.stop()
        open(gate, "w").close()
        wait_until(lambda: not pid_alive(pid), what="the job to end while the daemon is down")
        ended = time.time()
        wait_until(lambda: supervisor_done(shim), what="its supervisor to be through with it")
        time.sleep(6)
        restarted = time.time()
        self.d.start()
        j = self.d.wait_state(jid, ("COMPLETED", "FAILED", "PENDING"))
        self.assertEqual((j["state"], j["attempt"]), ("COMPLETED", 1), j)
        # The job ended between the gate and the moment its pid was seen gone.
        self.assertLess(abs(j["end_time"] - ended), 1.0, f"ended at {ended}, restarted at {restarted}: {j}")
        self.assertEqual(j["attempts"][0]["end_time"], j["end_time"], j)
        stop_clean(self, self.d)

    def test_an_older_supervisors_line_without_a_time_is_read(self):
        """A journal line as supervisors before this change wrote it ("ID ATTEMPT STATUS"): the
        end is taken, at the time the daemon learns of it."""
        gate, marker = os.path.join(self.d.work, "gate"), os.path.join(self.d.work, "ran")
        jid = gated_job(self.d, gate, marker)
        self.d.wait_state(jid, "RUNNING")
        pid = self.d.wait_pid(jid)
        shim = parent_of(pid)
        self.d.stop()
        os.kill(shim, signal.SIGKILL)     # it tells nothing: the line below stands for it
        open(gate, "w").close()
        wait_until(lambda: not pid_alive(pid), what="the job to end")
        with open(os.path.join(self.d.state, "run", "exits"), "a") as f:
            f.write(f"\n{jid} 1 0\n")
        before = time.time()
        self.d.start()
        j = self.d.wait_state(jid, ("COMPLETED", "FAILED", "PENDING"))
        self.assertEqual((j["state"], j["attempt"], j["reason"]), ("COMPLETED", 1, "exit 0"), j)
        self.assertGreaterEqual(j["end_time"], before, j)
        stop_clean(self, self.d)


class PidTold(DaemonTest):
    gpus = 1

    def test_the_pid_of_a_job_that_ends_at_once_and_of_one_that_runs(self):
        """The supervisor tells a job's pid once the job has run a moment, or in the same write
        as its end when it ends sooner: either way the job's record has the pid it ran under."""
        quick, slow, gate = (os.path.join(self.d.work, n) for n in ("quick", "slow", "gate"))
        jid = self.d.submit_api(["sh", "-c", f"echo $$ > {quick}"])
        j = self.d.wait_state(jid, ("COMPLETED", "FAILED", "PENDING"))
        self.assertEqual((j["state"], j["pid"]), ("COMPLETED", int(open(quick).read())), j)
        jid = self.d.submit_api(["sh", "-c", f"echo $$ > {slow}.tmp; mv {slow}.tmp {slow}; "
                                             f"while [ ! -e {gate} ]; do sleep 0.05; done"])
        pid = self.d.wait_pid(jid)
        wait_until(lambda: os.path.exists(slow), what="the running job's own pid")
        self.assertEqual(pid, int(open(slow).read()))
        self.assertEqual(self.d.job(jid)["state"], "RUNNING")
        open(gate, "w").close()
        j = self.d.wait_state(jid, ("COMPLETED", "FAILED", "PENDING"))
        self.assertEqual((j["state"], j["pid"]), ("COMPLETED", pid), j)
        stop_clean(self, self.d)


class KilledFromOutside(DaemonTest):
    gpus = 1
    OUTSIDE = "killed by SIGKILL from outside gpuward (not a gpuward stop"

    def assert_killed(self, j):
        self.assertEqual((j["state"], j["attempt"]), ("FAILED", 1), j)
        self.assertTrue(j["reason"].startswith(self.OUTSIDE), j["reason"])
        # What is known of the OOM killer: its count did not change (the cgroup's, or the
        # host's where the job has no memory cgroup).
        self.assertRegex(j["reason"], r"not the kernel's OOM killer: the (cgroup|host)'s oom_kill count did not change\)$")
        self.assertEqual([a["class"] for a in j["attempts"]], ["killed"], j)
        self.assertEqual(j["signal"], signal.SIGKILL, j)

    def test_a_job_that_kills_itself(self):
        jid = self.d.submit_api(["sh", "-c", "kill -9 $$"])
        j = self.d.wait_state(jid, ("FAILED", "PENDING", "COMPLETED"))
        self.assert_killed(j)
        self.assertIn(f"job {jid}: FAILED: {self.OUTSIDE}", self.d.daemon_log())
        out = self.d.cli("show", str(jid)).stdout
        self.assertIn(self.OUTSIDE, out)
        stop_clean(self, self.d)

    def test_killed_by_pid_is_not_retried(self):
        jid = self.d.submit_api(["sleep", "600"], retries=3)
        self.d.wait_state(jid, "RUNNING")
        os.kill(self.d.wait_pid(jid), signal.SIGKILL)
        j = self.d.wait_state(jid, ("FAILED", "PENDING", "COMPLETED"))
        self.assert_killed(j)
        time.sleep(1.5)     # a retry (backoff 1 s) would be queued or running by now
        self.assertEqual((self.d.job(jid)["state"], self.d.job(jid)["attempt"]), ("FAILED", 1))
        stop_clean(self, self.d)

    def test_retried_when_asked(self):
        marker = os.path.join(self.d.work, "tries")
        script = f"echo x >> {marker}; [ $(wc -l < {marker}) -ge 2 ] && exit 0; kill -9 $$"
        jid = self.d.submit_api(["sh", "-c", script], retries=2, retry_on="killed")
        j = self.d.wait_state(jid, ("FAILED", "COMPLETED"), timeout=60)
        self.assertEqual((j["state"], j["attempt"]), ("COMPLETED", 2), j)
        self.assertEqual([a["class"] for a in j["attempts"]], ["killed", "ok"], j)
        stop_clean(self, self.d)


class SupervisorGone(DaemonTest):
    gpus = 1

    def test_a_supervisor_killed_is_lost_and_says_so(self):
        """Lost is for a supervisor that told nothing: here it is killed under a running daemon,
        which says so rather than blaming a restart that never happened.  The job it leaves
        behind is stopped: nothing of the attempt runs on, untracked, holding its GPU."""
        jid = self.d.submit_api(["sleep", "600"], retries=0)
        self.d.wait_state(jid, "RUNNING")
        pid = self.d.wait_pid(jid)
        try:
            os.kill(parent_of(pid), signal.SIGKILL)
            j = self.d.wait_state(jid, ("FAILED", "PENDING", "COMPLETED"))
            wait_until(lambda: not pid_alive(pid), timeout=10, what="the job its supervisor left to be stopped")
        finally:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
        if any(e["kind"] == "start" and "cgroup " in e["message"] for e in j["events"]):
            self.assertIn("lived on with its supervisor gone", " ".join(e["message"] for e in j["events"]), j)
        self.assertEqual((j["state"], j["attempt"]), ("FAILED", 1), j)
        self.assertEqual(j["attempts"][0]["class"], "lost", j)
        self.assertTrue(j["reason"].startswith("lost: its supervisor ended without telling how the job ended"),
                        j["reason"])
        self.assertNotIn("restarted", j["reason"])
        stop_clean(self, self.d)


if __name__ == "__main__":
    main()

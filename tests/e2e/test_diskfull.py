"""Disk full and a read-only state dir.

The daemon's state dir is a small file system of its own: a tmpfs that the test fills, and
an ext4 image (errors=remount-ro) that the kernel turns read-only under the running daemon.
Writes (submit, cancel, hold, release, token create, reserve) must fail with a clear
{"error": ...}: 507 when the disk is full, 503 when the file system is read-only, and the CLI
must print one line and exit 1; reads (queue, show, gpus, /healthz) keep working, a running
job keeps running, the daemon never exits.  Once space is back (the filler deleted, or the
file system repaired and the daemon restarted) writes work again, every acknowledged job is
there and `PRAGMA integrity_check` says ok.

Why ext4 and not `mount -o remount,ro` of the tmpfs: Linux refuses to remount read-only a
file system with files open for writing (EBUSY, "mount point is busy"), and the daemon holds
its database open.  What does happen on real machines is the kernel forcing a file system
read-only after an error (errors=remount-ro); /sys/fs/ext4/DEV/trigger_fs_error does that.

Root only (mount); without root, or where mounting fails, each test prints why and skips
(the run still exits 0).  Every mount is unmounted in a finally block, every loop is
bounded, the harness stops the daemon."""
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

from gwtest import (GPUWARD, IS_ROOT, TRAINER, UNDER_VALGRIND, Daemon, DaemonTest, main, needs_readoption, pid_alive,
                    supervisor_done, wait_until)

MiB = 1 << 20


def run(*cmd, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if check and p.returncode != 0:
        raise OSError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def mounts():
    with open("/proc/mounts") as f:
        return f.read().splitlines()


def stop_holders(mountpoint):
    """SIGTERM to the processes with files open on this test's own mount (the daemon's job
    launcher, job supervisors and jobs: all started by this test), by PID; waits for them."""
    def holders():
        out = run("fuser", "-m", mountpoint, check=False).stdout.split()
        return [int(p.rstrip("cemrf")) for p in out if p.rstrip("cemrf").isdigit()]
    for pid in holders():
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    wait_until(lambda: not holders(), timeout=20, what=f"the processes using {mountpoint} to exit")


def skip(why):
    print(f"test_diskfull: SKIPPED: {why}", file=sys.stderr, flush=True)
    raise unittest.SkipTest(why)


def integrity(state):
    db = sqlite3.connect(f"file:{os.path.join(state, 'gpuward.db')}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute("PRAGMA integrity_check").fetchall()
    finally:
        db.close()


def ignores_sigterm(pid):
    """Whether the process has SIGTERM set to SIG_IGN (bit 15 of SigIgn)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            line = next(l for l in f if l.startswith("SigIgn:"))
    except (OSError, StopIteration):
        return False
    return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))


def start_stubborn_job(d):
    """A running job that ignores SIGTERM (only the grace period's SIGKILL ends it); returns
    its id, its pid and its supervisor's pid."""
    jid = d.submit("--", TRAINER, "--sleep-forever", "--ignore-sigterm")
    d.wait_state(jid, "RUNNING")
    pid = d.wait_pid(jid)
    wait_until(lambda: ignores_sigterm(pid), what=f"job {jid} to ignore SIGTERM")
    with open(f"/proc/{pid}/stat") as f:
        shim = int(f.read().rsplit(")", 1)[1].split()[1])
    return jid, pid, shim


def fill(path):
    """Writes a filler file until the file system is full; returns its path."""
    filler = os.path.join(path, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (MiB, 4096, 512, 1):     # big blocks, then whatever is left
            for _ in range(8192):            # bounded: the file systems here are a few MiB
                try:
                    os.write(fd, b"\0" * size)
                except OSError:
                    break
    finally:
        os.close(fd)
    return filler


class StateDirFaults(unittest.TestCase):
    def setUp(self):
        if not IS_ROOT:
            skip("needs root to mount a small file system as the state dir")
        self.d = Daemon(gpus=4)
        self.mounted = None
        self.image = None
        self.filler = None

    def tearDown(self):
        try:
            if self.d.proc and self.d.proc.poll() is None and self._outcome_failed():
                print(self.d.daemon_log()[-20000:], file=sys.stderr)
            if self.filler and os.path.exists(self.filler):
                os.unlink(self.filler)       # so that the cleanup's cancels can be written
            self.d.cleanup()             # cancels the jobs, stops the daemon, removes what it can
        finally:
            if self.mounted and run("umount", self.mounted, check=False).returncode != 0:
                stop_holders(self.mounted)   # a test that failed half-way left a job there
                run("umount", self.mounted, check=False)
            if self.image:
                os.unlink(self.image)
            shutil.rmtree(self.d.dir, ignore_errors=True)

    def _outcome_failed(self):
        result = getattr(getattr(self, "_outcome", None), "result", None)
        return result is not None and any(t is self for t, _ in result.errors + result.failures)

    # --- helpers ---

    def start_running_job(self):
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["sleep", "600"], "cwd": "/", "ngpus": 1})
        self.assertEqual(st, 201, r)
        self.d.wait_state(r["id"], "RUNNING", timeout=20)
        return r["id"], self.d.wait_pid(r["id"])

    def assert_write_refused(self, resp, status, why, what):
        st, r = resp
        self.assertEqual(st, status, f"{what}: {r}")
        self.assertIsInstance(r.get("error"), str, what)
        self.assertIn("cannot be written", r["error"], what)
        self.assertIn(why, r["error"], what)

    def assert_cli_refused(self, why, *args):
        p = self.d.cli(*args, check=False)
        self.assertEqual(p.returncode, 1, f"gpuward {' '.join(args)}: {p.stdout} {p.stderr}")
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, f"gpuward {' '.join(args)} printed: {p.stderr!r}")
        self.assertIn(why, lines[0])

    def assert_reads_work(self, running, pending):
        for path in ("/healthz", "/api/v1/jobs", f"/api/v1/jobs/{running}", f"/api/v1/jobs/{pending}",
                     "/api/v1/gpus"):
            st, r = self.d.api("GET", path)
            self.assertEqual(st, 200, f"GET {path}: {r}")
        self.assertEqual(self.d.cli("queue").returncode, 0)
        self.assertEqual(self.d.cli("show", str(running)).returncode, 0)
        self.assertEqual(self.d.cli("gpus").returncode, 0)

    def writes_refused(self, status, why, running, running_pid, pending, held):
        """Every kind of write refused, the state unchanged, reads served, the job running."""
        # Submissions first: SQLite may still have room in its WAL for a few.
        acked = []
        for _ in range(200):
            st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "cwd": "/", "hold": True})
            if st != 201:
                self.assert_write_refused((st, r), status, why, "submit")
                break
            acked.append(r["id"])
        else:
            self.fail("200 submissions went through on a full state dir")
        self.assert_write_refused(self.d.api("POST", "/api/v1/jobs/batch",
                                             {"jobs": [{"command": ["true"], "cwd": "/"}]}),
                                  status, why, "batch submit")
        self.assert_write_refused(self.d.api("POST", f"/api/v1/jobs/{pending}/hold"), status, why, "hold")
        self.assertEqual(self.d.job(pending)["state"], "PENDING", "a hold that was not recorded is not done")
        self.assert_write_refused(self.d.api("POST", f"/api/v1/jobs/{held}/release"), status, why, "release")
        self.assertEqual(self.d.job(held)["state"], "HELD")
        self.assert_write_refused(self.d.api("POST", "/api/v1/tokens", {"name": "ci"}), status, why, "token create")
        self.assert_write_refused(self.d.api("POST", "/api/v1/gpus/3/drain", {"reason": "fan"}), status, why, "drain")
        quota = self.d.api("GET", "/api/v1/quota")[1]["limits"]
        self.assert_write_refused(self.d.api("POST", "/api/v1/quota", {"subject": "default", "settings": [
            "max_gpus=2", "max_pending_jobs=7"]}), status, why, "quota set")
        self.assertEqual(self.d.api("GET", "/api/v1/quota")[1]["limits"], quota, "a quota not recorded does not count")
        self.assertEqual(self.d.api("GET", "/api/v1/gpus")[1]["gpus"][3]["health"], "ok",
                         "a drain that was not recorded is not done")
        self.assert_cli_refused(why, "submit", "--gpus", "1", "--", "true")
        self.assert_cli_refused(why, "token", "create")
        self.assert_cli_refused(why, "reserve", "--gpus", "1", "--start", "now+2h", "--duration", "30m")
        self.assert_cli_refused(why, "hold", str(pending))
        # A cancel is recorded before anything is done: refused, nothing changes (a waiting
        # job stays as it was; a running one is not signalled and has no stop recorded).
        st, r = self.d.api("DELETE", f"/api/v1/jobs/{self.victim}")
        self.assert_write_refused((st, r), status, why, "cancel")
        self.assertIn("cannot cancel the job", r["error"])
        self.assertEqual(self.d.job(self.victim)["state"], "HELD", "a cancel that was not recorded is not done")
        self.assert_write_refused(self.d.api("DELETE", f"/api/v1/jobs/{running}"), status, why,
                                  "cancel of a running job")
        self.assert_cli_refused(why, "cancel", str(running))
        self.assertIsNone(self.d.proc.poll(), "the daemon exited")
        self.assert_reads_work(running, pending)
        j = self.d.job(running)
        self.assertEqual(j["state"], "RUNNING")
        self.assertNotIn("terminate", [e["kind"] for e in j["events"]])
        self.assertTrue(pid_alive(running_pid), "the running job was stopped")
        self.assertEqual(self.d.api("GET", "/healthz")[0], 200)
        self.assertTrue(pid_alive(running_pid), "a refused cancel stopped the job after all")
        return acked

    def writes_work(self, pending, held):
        # A short time limit lets it backfill past the 4-GPU job at the head of the queue.
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "cwd": "/", "time_limit": "1m"})
        self.assertEqual(st, 201, r)
        self.d.wait_state(r["id"], "COMPLETED", timeout=30)
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "cwd": "/", "hold": True})
        self.assertEqual(st, 201, r)
        st, r = self.d.api("POST", f"/api/v1/jobs/{r['id']}/release")
        self.assertEqual(st, 200, r)
        if self.d.job(pending)["state"] == "PENDING":
            st, r = self.d.api("POST", f"/api/v1/jobs/{pending}/hold")
            self.assertEqual(st, 200, r)
        self.assertEqual(self.d.cli("token", "create", check=False).returncode, 0)
        self.assertEqual(self.d.cli("reserve", "--gpus", "1", "--start", "now+2h", "--duration", "30m",
                                    check=False).returncode, 0)

    def prepare(self):
        """Starts the daemon on the mounted state dir: one job running (1 GPU), one PENDING
        (needs all 4 GPUs), one HELD."""
        self.d.start()
        running, pid = self.start_running_job()
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "cwd": "/", "ngpus": 4})
        self.assertEqual(st, 201, r)
        pending = r["id"]
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "cwd": "/", "hold": True})
        self.assertEqual(st, 201, r)
        held = r["id"]
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "cwd": "/", "hold": True})
        self.assertEqual(st, 201, r)
        self.victim = r["id"]            # cancelled while the state cannot be written
        wait_until(lambda: self.d.job(pending)["state"] == "PENDING", what="the 4-GPU job to wait")
        return running, pid, pending, held

    def assert_acked_exist(self, ids):
        for jid in ids:
            st, r = self.d.api("GET", f"/api/v1/jobs/{jid}")
            self.assertEqual(st, 200, f"acknowledged job {jid}: {r}")

    # --- the tests ---

    def test_disk_full(self):
        self.mount_tmpfs()
        running, pid, pending, held = self.prepare()
        filler = self.filler = fill(self.d.state)
        acked = self.writes_refused(507, "disk is full", running, pid, pending, held)
        self.assertIn("SQLITE_FULL", self.d.api("POST", "/api/v1/tokens", {})[1]["error"].replace(
            "database or disk is full", "SQLITE_FULL"))
        os.unlink(filler)
        self.writes_work(pending, held)
        self.assert_acked_exist(acked)
        self.assertEqual(integrity(self.d.state), [("ok",)])
        self.assertEqual(self.d.job(running)["state"], "RUNNING")
        self.assertTrue(pid_alive(pid))
        if UNDER_VALGRIND:
            return  # the restart below re-adopts the running job (see gwtest.needs_readoption)
        # And after a restart, what was acknowledged is still there; the refused cancels
        # left no trace, and cancels work again.
        self.d.stop()
        self.d.start()
        self.assert_acked_exist(acked + [running, pending, held, self.victim])
        self.assertEqual(self.d.job(self.victim)["state"], "HELD")
        self.assertEqual(self.d.job(running)["state"], "RUNNING")
        self.assert_cancel_works(self.victim, None)
        self.assert_cancel_works(running, pid)
        self.assertEqual(integrity(self.d.state), [("ok",)])

    def assert_cancel_works(self, jid, pid):
        st, r = self.d.api("DELETE", f"/api/v1/jobs/{jid}?wait=1", timeout=self.d.grace + 20)
        self.assertEqual(st, 200, r)
        j = self.d.job(jid)
        self.assertEqual((j["state"], j["attempt"]), ("CANCELLED", 1), j)
        self.assertIn("cancelled by", j["reason"])
        if pid:
            wait_until(lambda: not pid_alive(pid), what=f"job {jid}'s process to be gone")

    def mount_tmpfs(self):
        os.makedirs(self.d.state)
        p = run("mount", "-t", "tmpfs", "-o", "size=16m,mode=0755", "tmpfs", self.d.state, check=False)
        if p.returncode != 0:
            skip(f"cannot mount a tmpfs: {p.stderr.strip()}")
        self.mounted = self.d.state

    def fill_until_refused(self):
        """Fills the state dir, then submits until the store refuses (SQLite may have room left
        in its WAL for a few writes)."""
        self.filler = fill(self.d.state)
        for _ in range(200):
            st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "cwd": "/", "hold": True})
            if st != 201:
                self.assertEqual(st, 507, r)
                return
        self.fail("200 submissions went through on a full state dir")

    def cancelled_then_ended_on_a_full_disk(self):
        """A job whose cancel was recorded, whose end then could not be: returns its id."""
        self.mount_tmpfs()
        self.d.grace = 60              # the test ends the job itself, once the disk is full
        self.d.start()
        jid, pid, shim = start_stubborn_job(self.d)
        st, r = self.d.api("DELETE", f"/api/v1/jobs/{jid}")
        self.assertEqual(st, 202, r)
        self.assertIn("terminate", [e["kind"] for e in self.d.job(jid)["events"]], "the cancel is recorded")
        self.assertTrue(pid_alive(pid), "the job ignores SIGTERM")
        self.fill_until_refused()
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: f"job {jid}: cannot record its end" in self.d.daemon_log(),
                   what="the daemon to log the end it could not write")
        self.assertIn(f"job {jid}: cannot record its end (CANCELLED: cancelled by", self.d.daemon_log(),
                      "the log line names the job and why it ended")
        wait_until(lambda: supervisor_done(shim), what="the job's supervisor to be through with it")
        # The daemon answers with what it knows, not with the stale RUNNING row.
        j = self.d.job(jid)
        self.assertEqual(j["state"], "CANCELLED", j)
        self.assertEqual(self.d.api("DELETE", f"/api/v1/jobs/{jid}")[0], 409)
        return jid

    def stored_state(self, jid):
        db = sqlite3.connect(f"file:{os.path.join(self.d.state, 'gpuward.db')}?mode=ro", uri=True, timeout=10)
        try:
            return db.execute("SELECT state, attempt FROM jobs WHERE id = ?", (jid,)).fetchone()
        finally:
            db.close()

    def test_end_not_written_is_written_once_space_is_back(self):
        jid = self.cancelled_then_ended_on_a_full_disk()
        self.assertEqual(self.stored_state(jid), (2, 1), "RUNNING on disk while the disk is full")
        os.unlink(self.filler)
        wait_until(lambda: self.stored_state(jid) == (5, 1), timeout=30, what="the end to be written (CANCELLED)")
        # The daemon says so right after the write: the row can be read a moment before the line.
        wait_until(lambda: f"job {jid}: its end (CANCELLED) is recorded now" in self.d.daemon_log(), timeout=10,
                   what="the daemon to say the end is recorded")
        self.assertEqual(self.d.job(jid)["state"], "CANCELLED")
        self.d.stop()
        self.d.start()
        j = self.d.job(jid)
        self.assertEqual((j["state"], j["attempt"]), ("CANCELLED", 1), j)
        self.assertEqual(integrity(self.d.state), [("ok",)])

    def test_start_refused_while_full_then_runs(self):
        # The end that frees the GPUs and the start it allows share one transaction: when
        # that cannot be written the start is undone (the job must not run while the store
        # says it is queued), and it is tried again once the disk has room.
        self.mount_tmpfs()
        self.d.start()
        gate, marker = os.path.join(self.d.work, "gate"), os.path.join(self.d.work, "ran")
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done"],
                                                    "cwd": "/", "ngpus": 4})
        self.assertEqual(st, 201, r)
        first = r["id"]
        self.d.wait_state(first, "RUNNING")
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["sh", "-c", f"echo ran >> {marker}"], "cwd": "/"})
        self.assertEqual(st, 201, r)
        waiting = r["id"]
        self.fill_until_refused()
        open(gate, "w").close()
        wait_until(lambda: f"job {waiting}: its start was not recorded" in self.d.daemon_log() or
                   f"job {waiting}: cannot record its start" in self.d.daemon_log(),
                   what="the daemon to refuse the start it could not record")
        time.sleep(0.5)
        self.assertEqual(self.d.job(waiting)["state"], "PENDING")
        self.assertFalse(os.path.exists(marker), "the job ran although its start was not recorded")
        os.unlink(self.filler)
        j = self.d.wait_state(waiting, "COMPLETED", timeout=30)
        self.assertEqual(j["attempt"], 1)
        with open(marker) as f:
            self.assertEqual(f.read(), "ran\n")
        self.assertEqual(integrity(self.d.state), [("ok",)])

    def test_end_not_written_then_a_crash(self):
        self.down_before_the_end_is_written(self.d.kill9)

    def test_end_not_written_then_a_stop(self):
        jid = self.down_before_the_end_is_written(self.d.stop)
        log = self.d.daemon_log()
        self.assertIn(f"job {jid}: its end (CANCELLED: cancelled by", log)
        self.assertIn("could not be recorded before the daemon stopped", log)
        self.assertNotIn("Sanitizer", log)

    def down_before_the_end_is_written(self, stop):
        jid = self.cancelled_then_ended_on_a_full_disk()
        # Down before the end could be written: the next daemon must end it as cancelled
        # (the recorded stop and the kept exits journal), not as lost, and never retry it.
        stop()
        os.unlink(self.filler)
        self.d.start()
        j = self.d.wait_state(jid, ("CANCELLED", "FAILED", "PENDING", "RUNNING"))
        self.assertEqual((j["state"], j["attempt"]), ("CANCELLED", 1), j)
        self.assertIn("cancelled by", j["reason"])
        self.assertEqual([a["class"] for a in j["attempts"]], ["cancelled"])
        self.assertEqual(integrity(self.d.state), [("ok",)])
        return jid

    def test_read_only(self):
        fd, self.image = tempfile.mkstemp(prefix="gw-ro-", suffix=".img")
        os.close(fd)
        os.truncate(self.image, 32 * MiB)
        p = run("mkfs.ext4", "-q", "-F", self.image, check=False)
        if p.returncode != 0:
            skip(f"cannot make an ext4 image: {p.stderr.strip()}")
        os.makedirs(self.d.state)
        p = run("mount", "-o", "loop,errors=remount-ro", self.image, self.d.state, check=False)
        if p.returncode != 0:
            skip(f"cannot mount an ext4 image on a loop device: {p.stderr.strip()}")
        self.mounted = self.d.state
        dev = next(l.split()[0] for l in mounts() if l.split()[1] == self.d.state)
        trigger = f"/sys/fs/ext4/{os.path.basename(dev)}/trigger_fs_error"
        if not os.path.exists(trigger):
            skip(f"no {trigger} to force the file system read-only")
        os.chmod(self.d.state, 0o755)
        running, pid, pending, held = self.prepare()
        # The database runs with synchronous=NORMAL: a commit is in the page cache, and a
        # file system forced read-only drops what the kernel had not written back yet (as a
        # power cut would).  Written back first, so what is checked is the read-only state.
        os.sync()
        with open(trigger, "w") as f:
            f.write("gpuward test: read-only under the daemon\n")
        wait_until(lambda: os.statvfs(self.d.state).f_flag & os.ST_RDONLY or
                   any(l.split()[1] == self.d.state and "emergency_ro" in l for l in mounts()),
                   timeout=10, what="the file system to turn read-only")
        acked = self.writes_refused(503, "read-only", running, pid, pending, held)
        # Repair: what an operator does (stop what uses the file system, fsck, mount,
        # start).  The job's supervisor keeps its log there open: the job launcher and
        # supervisors the daemon left are stopped by their PIDs (all started by this test's
        # daemon: the mount is this test's own).  The job writes to its supervisor's pipe,
        # holds nothing there and lives on: the daemon, started again, stops it.
        self.d.stop()
        stop_holders(self.d.state)
        run("umount", self.d.state)
        self.mounted = None
        p = run("e2fsck", "-fy", self.image, check=False)
        self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
        run("mount", "-o", "loop,errors=remount-ro", self.image, self.d.state)
        self.mounted = self.d.state
        self.assertTrue(pid_alive(pid), "the job outlived its supervisor")
        self.d.start()
        wait_until(lambda: not pid_alive(pid), timeout=10, what="the job that outlived its supervisor to be stopped")
        self.assertIn("lived on with its supervisor gone", self.d.cli("show", str(running)).stdout)
        self.assert_acked_exist(acked + [running, pending, held, self.victim])
        self.writes_work(pending, held)
        self.assertEqual(self.d.job(self.victim)["state"], "HELD")
        self.assert_cancel_works(self.victim, None)
        jid, pid = self.start_running_job()
        self.assert_cancel_works(jid, pid)
        self.assertEqual(integrity(self.d.state), [("ok",)])


class CancelAcrossRestart(DaemonTest):
    """A cancel is recorded before the job is signalled: a daemon that goes down before the
    job's processes are gone ends it as CANCELLED when it comes back, never as lost, and
    never runs it again.  No root needed."""
    grace = 3

    @needs_readoption
    def test_processes_that_outlive_the_daemon_are_stopped(self):
        jid, pid, _ = start_stubborn_job(self.d)
        st, r = self.d.api("DELETE", f"/api/v1/jobs/{jid}")
        self.assertEqual(st, 202, r)
        self.d.kill9()
        self.assertTrue(pid_alive(pid), "the job ignores SIGTERM and outlived the daemon")
        self.d.start()
        j = self.d.wait_state(jid, ("CANCELLED", "FAILED", "COMPLETED"), timeout=self.grace + 30)
        self.assertEqual((j["state"], j["attempt"]), ("CANCELLED", 1), j)
        self.assertIn("cancelled by", j["reason"])
        self.assertIn("adopt", [e["kind"] for e in j["events"]])
        wait_until(lambda: not pid_alive(pid), what="the job's process to be gone")

    @needs_readoption
    def test_cancel_waiting_when_the_daemon_stops_says_what_to_check(self):
        """`gpuward cancel` waits for the processes to be gone; a daemon stopped meanwhile
        answers nothing, and the CLI says the cancel may still be carried out, and where to look."""
        self.d.grace = 8              # the daemon is stopped well within it
        self.d.stop()
        self.d.start()
        jid, pid, _ = start_stubborn_job(self.d)
        cli = subprocess.Popen([GPUWARD, "--socket", self.d.socket, "cancel", str(jid)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: "terminate" in [e["kind"] for e in self.d.job(jid)["events"]], what="the cancel")
            self.d.stop()
            out, err = cli.communicate(timeout=30)
        finally:
            if cli.poll() is None:
                cli.kill()
                cli.communicate()
        self.assertEqual(cli.returncode, 1, out)
        self.assertIn("closed the connection without answering", err)
        self.assertIn(f"the cancel may have been recorded before that (then it is carried out when gpuwardd is back); "
                      f"'gpuward show {jid}' tells", err)
        self.d.start()                # SIGKILL at the recorded stop plus its 8 s
        j = self.d.wait_state(jid, ("CANCELLED", "FAILED", "COMPLETED"), timeout=40)
        self.assertEqual(j["state"], "CANCELLED", j["reason"])
        wait_until(lambda: not pid_alive(pid), what="the job's process to be gone")

    def test_processes_gone_while_the_daemon_was_down(self):
        jid, pid, shim = start_stubborn_job(self.d)
        st, r = self.d.api("DELETE", f"/api/v1/jobs/{jid}")
        self.assertEqual(st, 202, r)
        self.d.kill9()
        # The supervisor too: no exit status is left behind (the job would be "lost", and
        # lost is in the default retry set).
        for p in (shim, pid):
            os.kill(p, signal.SIGKILL)
        wait_until(lambda: not pid_alive(pid) and not pid_alive(shim), what="the job and its supervisor to die")
        self.d.start()
        j = self.d.wait_state(jid, ("CANCELLED", "FAILED", "PENDING", "RUNNING"))
        self.assertEqual((j["state"], j["attempt"]), ("CANCELLED", 1), j)
        self.assertEqual([a["class"] for a in j["attempts"]], ["cancelled"])
        self.assertNotIn("retry", [e["kind"] for e in j["events"]])


class TornExitsJournal(DaemonTest):
    """A write to the exits journal that a full disk or a crash tore leaves an unfinished line:
    the next job's exit must not be glued onto it (unreadable, that job would count as lost and
    run again)."""

    @needs_readoption
    def test_exit_after_a_torn_line_is_read(self):
        jid = self.d.submit("--", "sh", "-c", "sleep 3; exit 5")
        self.d.wait_state(jid, "RUNNING")
        self.d.wait_pid(jid)
        self.d.kill9()
        with open(os.path.join(self.d.state, "run", "exits"), "a") as f:
            f.write("12 1 2")  # what a write cut short leaves: no newline
        self.d.start()
        j = self.d.wait_state(jid, ("FAILED", "COMPLETED"), timeout=30)
        self.assertEqual((j["state"], j["exit_code"], j["attempt"]), ("FAILED", 5, 1), j["reason"])
        self.assertNotIn("retry", [e["kind"] for e in j["events"]], "it ran once")


if __name__ == "__main__":
    main()

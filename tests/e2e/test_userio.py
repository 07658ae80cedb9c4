"""What a user's files can do to the daemon and its state disk.

- A restore whose target is a FIFO nobody reads (or a device) must not freeze the daemon's
  loop: /healthz, another user's queue and job starts go on, and the restore is refused with
  a 400 naming the target.
- One job printing without end must not fill the state disk: its log is capped (head and
  tail kept, a marker where output was dropped), an event says so, and other users can still
  submit.
- A sparse checkpoint is copied with its holes, and snapshots are capped per user and in all.

Real users are made with useradd (prefix gwdsk) and removed in a finally block; the disk
tests mount a small tmpfs on the state dir.  Root only: elsewhere each test skips with why."""
import os
import shutil
import socket
import stat
import subprocess
import sys
import time
import unittest

from gwtest import GPUWARD, IS_ROOT, TRAINER, Daemon, Users, events_of, main, start_failure, wait_until

MiB = 1 << 20


def skip_reason():
    if not IS_ROOT:
        return "needs root to create throwaway Unix users and mount a tmpfs"
    for tool in ("useradd", "userdel", "setpriv", "mount", "umount"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    return None


def as_user(u):
    return ["setpriv", f"--reuid={u.pw_uid}", f"--regid={u.pw_gid}", "--init-groups"]


class UserFilesTest(unittest.TestCase):
    gpus = 2
    extra = ()
    config = None
    tmpfs = None  # size of a tmpfs mounted on the state dir, e.g. "64m"

    def setUp(self):
        why = skip_reason()
        if why:
            print(f"test_userio: SKIPPED: {why}", file=sys.stderr, flush=True)
            self.skipTest(why)
        self.users = Users("gwdsk")
        self.mounted = None
        self.d = None
        try:
            self.alice = self.users.add("a")
            self.bob = self.users.add("b")
            self.d = Daemon(gpus=self.gpus, extra=self.extra, config=self.config)
            if self.tmpfs:
                os.makedirs(self.d.state, exist_ok=True)
                p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.tmpfs},mode=0755", "tmpfs",
                                    self.d.state], capture_output=True, text=True, timeout=30)
                if p.returncode != 0:
                    self.skipTest(f"cannot mount a tmpfs: {p.stderr.strip()}")
                self.mounted = self.d.state
            self.d.start()
        except BaseException:
            self.tearDown()
            raise

    def tearDown(self):
        try:
            if self.d:
                result = getattr(getattr(self, "_outcome", None), "result", None)
                if result is not None and any(t is self for t, _ in result.errors + result.failures):
                    print(self.d.daemon_log()[-20000:], file=sys.stderr)
                if self.mounted:
                    # The daemon first: its files are on the mount; then the mount, then the rest.
                    try:
                        for j in self.d.api("GET", "/api/v1/jobs", timeout=10)[1].get("jobs", []):
                            self.d.api("DELETE", f"/api/v1/jobs/{j['id']}?wait=1", timeout=30)
                    except Exception as e:
                        print(f"cleanup: {e}", file=sys.stderr)
                    self.d.stop()
                    subprocess.run(["umount", self.mounted], capture_output=True, timeout=60)
                self.d.cleanup()
        finally:
            self.users.remove_all()

    def cli(self, user, *args, timeout=60):
        cmd = as_user(user) + [GPUWARD, "--socket", self.d.socket, *[str(a) for a in args]]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.d.work)

    def submit(self, user, *args):
        p = self.cli(user, "submit", "--json", *args)
        self.assertEqual(p.returncode, 0, p.stderr)
        import json
        return json.loads(p.stdout)["id"]

    def user_dir(self, user, name):
        path = os.path.join(self.d.dir, name)
        os.makedirs(path)
        os.chown(path, user.pw_uid, user.pw_gid)
        return path


class RestoreTargets(UserFilesTest):
    def test_a_fifo_target_does_not_freeze_the_daemon(self):
        jid = self.submit(self.alice, "--name", "snap", "--", TRAINER, "epochs=3", "name=snap", "--epoch-seconds", "2.5")
        self.d.wait_state(jid, "COMPLETED", timeout=60)
        snaps = self.d.cli_json("snapshots", jid)["snapshots"]
        self.assertTrue(snaps, "snapshots were taken")
        seq = snaps[-1]["seq"]
        home = self.user_dir(self.alice, "alice")
        fifo = os.path.join(home, "x")
        os.mkfifo(fifo)
        os.chown(fifo, self.alice.pw_uid, self.alice.pw_gid)
        restore = subprocess.Popen(as_user(self.alice) + [GPUWARD, "--socket", self.d.socket, "restore", str(jid),
                                                          "--snapshot", str(seq), "--to", fifo, "--force"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=self.d.work)
        try:
            time.sleep(0.5)  # the restore's request is in (the daemon would be stuck in it by now)
            st, _ = self.d.tcp("GET", "/healthz", timeout=3)
            self.assertEqual(st, 200)
            p = self.cli(self.bob, "queue", timeout=5)
            self.assertEqual(p.returncode, 0, p.stderr)
            other = self.submit(self.bob, "--", "sleep", "30")
            self.d.wait_state(other, "RUNNING", timeout=10)
            out, err = restore.communicate(timeout=10)
            self.assertEqual(restore.returncode, 1, (out, err))
            self.assertIn("not a regular file", err)
            # The outcome is on the job for whoever looks later.
            ev = events_of(self.d.job(jid), "restore")
            self.assertTrue(ev and "restore failed" in ev[-1]["message"] and fifo in ev[-1]["message"], ev)
            # A device: refused the same way, through the API too, and never opened.
            st, r = self.d.api("POST", f"/api/v1/jobs/{jid}/restore", {"snapshot": seq, "to": "/dev/null",
                                                                         "force": True})
            self.assertEqual(st, 400, r)
            self.assertEqual(r.get("field"), "to", r)
            self.assertIn("not a regular file", r["error"])
            # A regular file still works, as the user.
            out_path = os.path.join(home, "restored.pt")
            p = self.cli(self.alice, "restore", jid, "--snapshot", seq, "--to", out_path)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(os.stat(out_path).st_uid, self.alice.pw_uid)
            self.assertEqual(os.stat(out_path).st_size, snaps[-1]["size"])
        finally:
            if restore.poll() is None:
                # Before the fix the daemon waits in the FIFO: read it to let it go.
                fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
                try:
                    deadline = time.time() + 10
                    while restore.poll() is None and time.time() < deadline:
                        try:
                            os.read(fd, 1 << 20)
                        except BlockingIOError:
                            time.sleep(0.05)
                finally:
                    os.close(fd)
                if restore.poll() is None:
                    restore.kill()
                restore.wait(timeout=10)


def log_path(d, jid):
    return os.path.join(d.state, "logs", f"{jid}.log")


class LogCap(UserFilesTest):
    tmpfs = "64m"
    config = "log_max = 1M\nstate_reserve = 0\n"

    def test_a_job_printing_without_end_keeps_its_log_under_the_cap(self):
        jid = self.submit(self.alice, "--", "sh", "-c", "yes | head -c 200000000; echo THE-END")
        j = self.d.wait_state(jid, {"COMPLETED", "FAILED"}, timeout=120)
        self.assertEqual(j["state"], "COMPLETED", j)
        text = self.d.log_text(jid)
        self.assertLessEqual(len(text), 1 << 20)
        self.assertTrue(text.startswith("y\ny\n"), text[:20])
        self.assertTrue(text.rstrip().endswith("THE-END"), text[-100:])
        self.assertRegex(text, r"\[gpuward: log capped at 1M: +\d+ bytes of output dropped here\]")
        ev = events_of(self.d.job(jid), "log_capped")
        self.assertTrue(ev, j.get("events"))
        m = ev[-1]["message"]
        self.assertRegex(m, r"^log capped at 1 MiB \(log_max\): \d+ bytes of output dropped;")
        dropped = int(m.split(": ")[1].split()[0])
        self.assertGreater(dropped, 200000000 - (1 << 20))
        self.assertIn("log capped at 1 MiB", self.cli(self.alice, "show", jid).stdout)
        self.assertIn("log capped at 1 MiB", self.d.daemon_log())
        # A follower whose offset the cut left past the end goes on from the end.
        st, body, headers = self.d.api("GET", f"/api/v1/jobs/{jid}/log?offset=150000000", raw=True)
        self.assertEqual((st, body), (200, b""))
        self.assertEqual(int(headers["X-Log-Offset"]), len(text.encode()))
        # The disk is not full: another user still submits, and the job runs.
        other = self.submit(self.bob, "--", "sh", "-c", "echo hello")
        self.d.wait_state(other, "COMPLETED", timeout=30)
        self.assertIn("hello", self.d.log_text(other))

    def test_failure_evidence_is_read_from_the_tail_after_a_cut(self):
        crash = "RuntimeError: CUDA error: an illegal memory access was encountered"
        jid = self.submit(self.alice, "--retries", "0", "--", "sh", "-c",
                          f"yes | head -c 5000000; echo '{crash}' >&2; exit 1")
        j = self.d.wait_state(jid, "FAILED", timeout=60)
        self.assertTrue(events_of(j, "log_capped"), j.get("events"))
        self.assertEqual(j["attempts"][0]["class"], "cuda_error", j["attempts"])
        self.assertIn("illegal memory access", j["attempts"][0]["evidence"])

    def test_bad_settings_stop_the_daemon(self):
        self.assertIn("log_max: invalid value '10K' (a size such as 64M, at least 64K, or 0 for none)",
                      start_failure("log_max = 10K\n"))
        self.assertIn("state_reserve: invalid value 'lots'", start_failure("state_reserve = lots\n"))


class LogReserve(UserFilesTest):
    tmpfs = "64m"
    # No cap to help (1G): the reserve alone, a quarter of the 64M disk (the setting is larger).
    config = "log_max = 1G\nstate_reserve = 256M\n"

    def test_logs_stop_growing_at_the_reserve(self):
        jid = self.submit(self.alice, "--", "sh", "-c", "yes | head -c 100000000; sleep 60")
        ev = wait_until(lambda: events_of(self.d.job(jid), "log_stopped"), timeout=60, what="a log_stopped event")
        self.assertIn("under state_reserve", ev[0]["message"])
        st, h = self.d.api("GET", "/healthz")
        self.assertEqual(st, 200)
        self.assertTrue(h["state_disk_low"], h)
        free = shutil.disk_usage(self.d.state).free
        self.assertGreater(free, 8 << 20, "the log left the reserve alone")
        # The store can still record: another user submits.
        other = self.submit(self.bob, "--", "sh", "-c", "echo hello")
        self.d.wait_state(other, {"RUNNING", "COMPLETED"}, timeout=30)
        self.assertIn("state disk low", self.d.daemon_log())
        # No snapshot eats into the reserve either.
        self.d.wait_state(other, "COMPLETED", timeout=30)
        train = self.submit(self.bob, "--", TRAINER, "epochs=2", "name=low", "project=bobruns", "--epoch-seconds", "2")
        self.d.wait_state(train, "COMPLETED", timeout=60)
        ev = events_of(self.d.job(train), "snapshot_refused")
        self.assertTrue(ev and "under state_reserve" in ev[0]["message"], ev)
        self.d.api("DELETE", f"/api/v1/jobs/{jid}?wait=1", timeout=30)
        with open(log_path(self.d, jid), "rb") as f:
            f.seek(-300, os.SEEK_END)
            tail = f.read().decode()
        self.assertIn("bytes of output dropped here: the state disk had less free than state_reserve", tail)


class SparseSnapshots(UserFilesTest):
    """With the default settings, on a 64M state disk: a 100 MiB checkpoint that is nearly all
    holes was copied in full, every epoch, and filled the disk."""
    tmpfs = "64m"

    def test_a_sparse_checkpoint_is_copied_with_its_holes(self):
        jid = self.submit(self.alice, "--", TRAINER, "epochs=3", "name=sparse", "--epoch-seconds", "2.5",
                          "--ckpt-zero-mib", "100")
        self.d.wait_state(jid, "COMPLETED", timeout=90)
        snaps = self.d.cli_json("snapshots", jid)["snapshots"]
        self.assertTrue(snaps, "snapshots were taken")
        snap_dir = os.path.join(self.d.state, "snapshots", str(jid))
        for s in snaps:
            path = os.path.join(snap_dir, f"e{s['epoch']}-{s['kind']}-{s['sha256'][:12]}.pt")
            st = os.stat(path)
            self.assertGreater(st.st_size, 100 << 20)
            self.assertLess(st.st_blocks * 512, 4 << 20, f"{path}: the holes are kept")
            self.assertEqual(st.st_size, s["size"])
        # Byte for byte what the run wrote, holes and all: a restore checks the sha256.
        home = self.user_dir(self.alice, "alice")
        p = self.cli(self.alice, "restore", jid, "--snapshot", snaps[-1]["seq"], "--to", os.path.join(home, "r.pt"))
        self.assertEqual(p.returncode, 0, p.stderr)
        other = self.submit(self.bob, "--", "true")
        self.d.wait_state(other, "COMPLETED", timeout=30)


class SnapshotCaps(UserFilesTest):
    def kept(self, jid):
        return [s for s in self.d.cli_json("snapshots", "--all", jid)["snapshots"] if not s["pruned"]]

    def kept_blocks(self, jid):
        snap_dir = os.path.join(self.d.state, "snapshots", str(jid))
        # best.pt and last.pt of one epoch are one file (a hard link): counted once.
        files = {st.st_ino: st for st in (os.stat(os.path.join(snap_dir, n)) for n in os.listdir(snap_dir)
                                         if not n.startswith("."))}
        return sum(st.st_blocks * 512 for st in files.values())

    def test_each_user_has_a_cap_and_best_copies_are_evicted_too(self):
        self.d.stop()
        self.d.config = "snapshot_cap_user = 300K\nsnapshot_keep_last = 10\n"
        self.d.start()
        jid = self.submit(self.alice, "--", TRAINER, "epochs=8", "name=capped", "--epoch-seconds", "1.5")
        self.d.wait_state(jid, "COMPLETED", timeout=90)
        every = self.d.cli_json("snapshots", "--all", jid)["snapshots"]
        kept = [s for s in every if not s["pruned"]]
        self.assertTrue(kept)
        self.assertLessEqual(self.kept_blocks(jid), 300 << 10)
        self.assertTrue(any(s["kind"] == "best" and s["pruned"] for s in every), "older best.pt copies evicted")
        newest_best = max(s["seq"] for s in every if s["kind"] == "best")
        self.assertIn(newest_best, [s["seq"] for s in kept], "the newest best.pt is the last to go")
        # Another user's copies are under their own cap, not alice's.
        other = self.submit(self.bob, "--", TRAINER, "epochs=2", "name=bobs", "project=bobruns",
                            "--epoch-seconds", "2.5")
        self.d.wait_state(other, "COMPLETED", timeout=60)
        self.assertTrue(self.kept(other))
        self.assertEqual([s["seq"] for s in self.kept(jid)], [s["seq"] for s in kept])

    def test_keep_last_applies_to_best_copies(self):
        self.d.stop()
        self.d.config = "snapshot_keep_last = 1\n"
        self.d.start()
        jid = self.submit(self.alice, "--", TRAINER, "epochs=4", "name=k1", "--epoch-seconds", "2.5")
        self.d.wait_state(jid, "COMPLETED", timeout=60)
        kept = self.kept(jid)
        self.assertEqual(sorted(s["kind"] for s in kept), ["best", "last"], kept)

    def test_a_copy_over_the_cap_is_refused_with_an_event(self):
        self.d.stop()
        self.d.config = "snapshot_cap_user = 16K\n"
        self.d.start()
        jid = self.submit(self.alice, "--", TRAINER, "epochs=3", "name=big", "--epoch-seconds", "2.5")
        self.d.wait_state(jid, "COMPLETED", timeout=60)
        self.assertEqual(self.kept(jid), [])
        ev = events_of(self.d.job(jid), "snapshot_refused")
        self.assertTrue(ev)
        self.assertRegex(ev[0]["message"], r"^weights/(last|best)\.pt not snapshotted: it holds .* on disk, more "
                                           r"than snapshot_cap_user 16 KiB$")
        self.assertLessEqual(len(ev), 2, "told once per file")
        self.assertIn("snapshot_cap_user", self.cli(self.alice, "show", jid).stdout)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Online backups: gpuward admin backup PATH (POST /api/v1/admin/backup) while jobs are being
submitted, the copy's integrity and contents, a daemon started on it; the refusals that name
the path; scheduled backups (backup_interval, backup_keep)."""
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import threading

import gwtest
from gwtest import Daemon, DaemonTest, wait_until

ALL_STATES = "PENDING,HELD,RUNNING,COMPLETED,FAILED,CANCELLED,TIMEOUT,RECLAIMED"


def job_ids(d):
    st, body = d.api("GET", f"/api/v1/jobs?state={ALL_STATES}&limit=10000&fields=id")
    assert st == 200, body
    return {j["id"] for j in body["jobs"]}


def check_copy(test, path):
    """The copy opens on its own, passes integrity_check; its job ids."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        test.assertEqual(db.execute("PRAGMA integrity_check").fetchall(), [("ok",)])
        return {r[0] for r in db.execute("SELECT id FROM jobs")}
    finally:
        db.close()


class BackupTest(DaemonTest):
    gpus = 2

    def test_backup_while_jobs_are_submitted(self):
        acked = []   # ids whose submission was answered, in order
        stop = threading.Event()
        errors = []

        def submitter():
            for _ in range(2000):  # bounded; stopped well before
                if stop.is_set():
                    return
                st, body = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"]))
                if st != 201:
                    errors.append((st, body))
                    return
                acked.append(body["id"])

        t = threading.Thread(target=submitter)
        t.start()
        try:
            wait_until(lambda: len(acked) >= 20 or errors, what="the first submissions")
            before = list(acked)  # every one of these was acknowledged before the backup began
            path = os.path.join(self.d.dir, "copy.db")
            out = self.d.cli("admin", "backup", path).stdout
            self.assertIn(f"Backup written to {path}", out)
            wait_until(lambda: len(acked) >= len(before) + 5 or errors, what="submissions after the backup")
        finally:
            stop.set()
            t.join(timeout=60)
        self.assertFalse(errors, errors)
        self.assertFalse(os.path.exists(path + "-wal"))
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)  # it holds environments and token hashes
        ids = check_copy(self, path)
        self.assertTrue(set(before) <= ids, f"missing from the copy: {sorted(set(before) - ids)}")

        # A daemon started on the copy has them.
        with Daemon(gpus=1) as other:
            os.makedirs(other.state, mode=0o700)
            shutil.copyfile(path, os.path.join(other.state, "gpuward.db"))
            other.start()
            self.assertTrue(set(before) <= job_ids(other))

    def test_refused_paths_name_the_field(self):
        existing = os.path.join(self.d.dir, "there.db")
        with open(existing, "w") as f:
            f.write("keep me")
        cases = [
            (existing, "exists"),
            (os.path.join(self.d.dir, "no-such-folder", "x.db"), "does not exist"),
            ("relative.db", "not an absolute path"),
        ]
        for path, words in cases:
            st, body = self.d.api("POST", "/api/v1/admin/backup", {"path": path})
            self.assertEqual(st, 400, body)
            self.assertEqual(body["field"], "path")
            self.assertIn(words, body["error"])
        with open(existing) as f:
            self.assertEqual(f.read(), "keep me")
        p = self.d.cli("admin", "backup", existing, check=False)
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("exists", p.stderr)
        self.assertFalse([n for n in os.listdir(self.d.dir) if n.startswith(".gpuward-backup-")])

    def test_a_relative_path_is_the_cli_directory(self):
        out = self.d.cli("admin", "backup", "rel.db", cwd=self.d.dir).stdout  # a folder only root may write in
        path = os.path.join(self.d.dir, "rel.db")
        self.assertIn(f"Backup written to {path}", out)
        check_copy(self, path)
        p = self.d.cli("admin", "backup", check=False)
        self.assertEqual(p.returncode, 2, p)

    @gwtest.unittest.skipUnless(gwtest.IS_ROOT, "needs root to make a second account")
    def test_only_admins(self):
        users = gwtest.Users("gwbk")
        try:
            u = users.add("user")
            path = os.path.join(self.d.dir, "by-user.db")
            st, body = self.d.raw_as(u.pw_uid, "POST", "/api/v1/admin/backup", json.dumps({"path": path}).encode())
            self.assertEqual(st, 403, body)
            self.assertFalse(os.path.exists(path))
        finally:
            users.remove_all()


# Run as another uid against a folder it may write in: keeps looking at every name in it,
# reads what it can (a copy of the database is a win), moves what it can away and puts a
# symlink to a file of its own in its place (the daemon writing through it is a win too: the
# test reads those files afterwards).  Stops when STOP appears or after a minute; prints the
# names it won with, one a line.
RACER = r"""
import os, sys, time
folder, loot, stop = sys.argv[1:4]
wins, n = [], 0
end = time.monotonic() + 60
def readable_copy(p):
    try:
        with open(p, "rb") as f:
            return f.read(16).startswith(b"SQLite format 3")
    except OSError:
        return False
while time.monotonic() < end and not os.path.exists(stop):
    try:
        names = os.listdir(folder)
    except OSError:
        continue
    for name in names:
        p = os.path.join(folder, name)
        if os.path.islink(p):
            continue
        if readable_copy(p):
            wins.append(p)
        n += 1
        stolen, bait = os.path.join(loot, f"stolen-{n}"), os.path.join(loot, f"bait-{n}")
        try:
            os.rename(p, stolen)
        except OSError:
            continue
        open(bait, "w").close()
        try:
            os.symlink(bait, p)
        except OSError:
            pass
        if readable_copy(stolen):
            wins.append(stolen)
        elif os.path.isdir(stolen):
            try:
                wins += [q for q in (os.path.join(stolen, m) for m in os.listdir(stolen)) if readable_copy(q)]
            except OSError:
                pass
print("\n".join(wins))
"""


@gwtest.unittest.skipUnless(gwtest.IS_ROOT, "needs root to make a second account")
class BackupRaceTest(DaemonTest):
    """A backup asked for into a folder an unprivileged user may write in: that user, racing,
    never gets a copy it can read, and the daemon never writes through a symlink."""
    gpus = 1
    TRIES = 200

    def setUp(self):
        super().setUp()
        self.users = gwtest.Users("gwrace")
        self.u = self.users.add("user")
        self.d.submit_api(["true"], env=["SECRET=kept-out"])

    def tearDown(self):
        self.users.remove_all()
        super().tearDown()

    def folder_of(self, name, owner, mode):
        path = os.path.join(self.d.dir, name)
        os.mkdir(path)
        os.chown(path, owner, owner)
        os.chmod(path, mode)
        return path

    def race(self, folder):
        """TRIES backups into folder while the racer runs; the replies' statuses."""
        loot = self.folder_of("loot", self.u.pw_uid, 0o700)
        stop = os.path.join(self.d.dir, "stop")
        racer = subprocess.Popen(gwtest.as_user(self.u.pw_uid) + [sys.executable, "-c", RACER, folder, loot, stop],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        statuses = []
        try:
            for i in range(self.TRIES):
                target = os.path.join(folder, f"backup-{i}.db")
                st, body = self.d.api("POST", "/api/v1/admin/backup", {"path": target})
                statuses.append(st)
        finally:
            open(stop, "w").close()
            out, err = racer.communicate(timeout=90)
        self.assertEqual(racer.returncode, 0, err)
        wins = [w for w in out.splitlines() if w]
        written = [n for n in os.listdir(loot) if n.startswith("bait-") and os.path.getsize(os.path.join(loot, n))]
        self.assertEqual((wins, written), ([], []), "the racer got a copy of the database")
        # Every file the daemon left, where it is now (the racer may have moved it): root's, private.
        for where in (folder, loot):
            for name in os.listdir(where):
                info = os.lstat(os.path.join(where, name))
                if stat.S_ISREG(info.st_mode) and not name.startswith("bait-"):
                    self.assertEqual((info.st_uid, info.st_mode & 0o7777), (0, 0o600), name)
        return statuses

    def test_a_sticky_folder_the_user_owns(self):
        # The worst a sticky folder allows: its owner may move and replace anyone's names in it.
        statuses = self.race(self.folder_of("drop", self.u.pw_uid, 0o1777))
        self.assertIn(200, statuses)  # the race does not stop every backup

    def test_a_folder_others_may_write_is_refused(self):
        for mode in (0o777, 0o770):
            folder = self.folder_of(f"open-{mode:o}", 0, mode)
            target = os.path.join(folder, "copy.db")
            st, body = self.d.api("POST", "/api/v1/admin/backup", {"path": target})
            self.assertEqual(st, 400, body)
            self.assertEqual(body["field"], "path")
            self.assertIn("others may write in it", body["error"])
            self.assertEqual(os.listdir(folder), [])
        owned = self.folder_of("owned", self.u.pw_uid, 0o755)
        st, body = self.d.api("POST", "/api/v1/admin/backup", {"path": os.path.join(owned, "copy.db")})
        self.assertEqual(st, 400, body)
        self.assertIn(f"owner uid {self.u.pw_uid}", body["error"])
        self.assertEqual(os.listdir(owned), [])


class ScheduledBackupTest(DaemonTest):
    gpus = 1
    extra = ("--backup-interval", "1s", "--backup-keep", "2")

    def test_backups_appear_and_the_oldest_go(self):
        self.d.submit_api(["true"])
        folder = os.path.join(self.d.state, "backups")
        seen = []

        def look():
            # Complete copies only: one being written is in a .gpuward-backup-* folder until it is whole.
            names = sorted(n for n in os.listdir(folder) if n.endswith("Z.db")) if os.path.isdir(folder) else []
            for n in names:
                if n not in seen:
                    seen.append(n)
            return names

        def enough():
            names = look()
            return len(seen) >= 4 and seen[0] not in names

        wait_until(enough, timeout=60, interval=0.1, what="four scheduled backups, the oldest removed")
        names = look()
        self.assertLessEqual(len(names), 3)  # backup_keep, and one just renamed into place
        self.assertTrue(all(n.startswith("gpuward-") for n in names), names)
        self.assertEqual(sorted(seen), seen)  # names sort by time
        ids = check_copy(self, os.path.join(folder, names[-1]))
        self.assertIn(1, ids)


class BackupConfigTest(gwtest.unittest.TestCase):
    def test_bad_settings_are_named(self):
        why = gwtest.start_failure("backup_interval = often\n")
        self.assertIn("backup_interval: 'often' is not a duration", why)
        why = gwtest.start_failure("backup_interval = 1h\nbackup_keep = 0\n")
        self.assertIn("backup_keep: invalid value '0'", why)


if __name__ == "__main__":
    gwtest.main()

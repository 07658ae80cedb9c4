#!/usr/bin/env python3
"""Online backups: gpuward admin backup PATH (POST /api/v1/admin/backup) while jobs are being
submitted, the copy's integrity and contents, a daemon started on it; the refusals that name
the path; scheduled backups (backup_interval, backup_keep)."""
import json
import os
import shutil
import sqlite3
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
        self.assertFalse([n for n in os.listdir(self.d.dir) if ".partial-" in n])

    def test_a_relative_path_is_the_cli_directory(self):
        out = self.d.cli("admin", "backup", "rel.db", cwd=self.d.work).stdout
        path = os.path.join(self.d.work, "rel.db")
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


class ScheduledBackupTest(DaemonTest):
    gpus = 1
    extra = ("--backup-interval", "1s", "--backup-keep", "2")

    def test_backups_appear_and_the_oldest_go(self):
        self.d.submit_api(["true"])
        folder = os.path.join(self.d.state, "backups")
        seen = []

        def look():
            # Complete copies only: one being written has a .partial-PID name until it is whole.
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

"""Roles with real Unix users: five throwaway accounts (a user alice, a user bob, an admin, an
admin and a guest each reached through an @group) made with useradd for this run and removed in a finally block.
Root only: elsewhere it prints why it is skipped and exits 0.

Shows that alice's job runs as alice, that bob can neither cancel it nor release her booking
nor submit into it while an admin can, that bob's token works over TCP and a wrong, revoked
or expired one does not, and that a guest reads but never writes."""
import json
import secrets
import shutil
import subprocess
import sys
import unittest

from gwtest import GPUWARD, IS_ROOT, Daemon, Users, wait_until


def skip_reason():
    if not IS_ROOT:
        return "needs root to create throwaway Unix users"
    for tool in ("useradd", "userdel", "setpriv"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    return None


class RolesWithRealUsers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.users = Users()
        try:
            cls.alice = cls.users.add("a")
            cls.bob = cls.users.add("b")
            cls.admin = cls.users.add("adm")
            cls.guest = cls.users.add("g")
            cls.group_admin = cls.users.add("ga")
            cls.d = Daemon(extra=("--admins", f"someone, {cls.admin.pw_name}, @{cls.group_admin.pw_name}",
                                  "--guests", f"@{cls.guest.pw_name}"))
            cls.d.start()
        except BaseException:
            cls.users.remove_all()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.d.cleanup()
        finally:
            cls.users.remove_all()

    # --- the two ways in, as a given user ---
    def cli(self, user, *args):
        cmd = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups",
               GPUWARD, "--socket", self.d.socket, *[str(a) for a in args]]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=self.d.work)

    def ok(self, user, *args):
        p = self.cli(user, *args)
        self.assertEqual(p.returncode, 0, f"{user.pw_name}: gpuward {' '.join(map(str, args))}\n{p.stderr}")
        return p.stdout

    def submit(self, user, *args):
        return json.loads(self.ok(user, "submit", "--json", *args))["id"]

    def tcp(self, method, path, token=None, body=None, auth=None):
        return self.d.tcp_json(method, path, body, token=token, auth=auth)

    # --- the tests ---
    def test_jobs_run_as_their_user_and_only_owners_or_admins_cancel(self):
        jid = self.submit(self.alice, "--", "sh", "-c", "id -u")
        j = self.d.wait_state(jid, "COMPLETED")
        self.assertEqual((j["user"], j["uid"]), (self.alice.pw_name, self.alice.pw_uid))
        self.assertEqual(self.d.log_text(jid).strip(), str(self.alice.pw_uid), "the job ran as alice")

        sj = self.submit(self.alice, "--", "sleep", "60")
        self.d.wait_state(sj, "RUNNING")
        p = self.cli(self.bob, "cancel", sj)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(f"belongs to {self.alice.pw_name}", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, "one clear line")
        self.assertEqual(self.d.job(sj)["state"], "RUNNING", "nothing changed")
        self.ok(self.admin, "cancel", sj)
        self.assertIn(self.admin.pw_name, self.d.wait_state(sj, "CANCELLED")["reason"])

    def test_files_of_other_users_stay_private(self):
        """The daemon reads job files as root: what it reads must never hand bob what only alice
        may read, through the job's reason, its resume point, its epoch or the state dir."""
        import os
        private = os.path.join(self.d.work, f"alice-{self.users.suffix}")
        os.mkdir(private, 0o700)
        secret = os.path.join(private, "train.log")
        with open(secret, "w") as f:
            f.write("Traceback (most recent call last):\nValueError: alice-secret-4242\nepoch=31337 total=99999\n")
        for path in (private, secret):
            os.chown(path, self.alice.pw_uid, self.alice.pw_gid)
        os.chmod(secret, 0o600)
        bobs = os.path.join(self.d.work, f"bob-{self.users.suffix}")
        os.mkdir(bobs, 0o755)
        os.chown(bobs, self.bob.pw_uid, self.bob.pw_gid)

        # alice's file as bob's output is refused at submit; nor may bob name her directory.
        p = self.cli(self.bob, "submit", "--output", secret, "--", "true")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("cannot write there", p.stderr, "bob cannot even learn that the file exists")
        # Nor through a symlink of his own into her directory, which root would follow.
        os.symlink(private, os.path.join(bobs, "lnk"))
        for args, needle in ((["--output", os.path.join(bobs, "lnk", "train.log")], "cannot write there"),
                             (["--output", os.path.join(bobs, "lnk", "nosuch.log")], "cannot write there"),
                             (["--cwd", os.path.join(bobs, "lnk")], "cwd")):
            p = self.cli(self.bob, "submit", *args, "--", "true")
            self.assertNotEqual(p.returncode, 0, (args, p.stdout))
            self.assertIn(needle, p.stderr, args)
        # Made a symlink to her file after submitting: the end's evidence is not read through it.
        out = os.path.join(bobs, "out.log")
        link = self.submit(self.bob, "--retries", "0", "--output", out, "--", "sh", "-c",
                           f"ln -sf {secret} {out}; exit 1")
        # Her file as bob's progress file and his checkpoint pattern: neither is read.
        probe = self.submit(self.bob, "--retries", "1", "--progress", secret, "--checkpoint",
                            os.path.join(private, "*"), "--", "sh", "-c",
                            "echo 'RuntimeError: CUDA error: an illegal memory access was encountered'; exit 1")
        jl = self.d.wait_state(link, "FAILED")
        jp = self.d.wait_state(probe, "FAILED", timeout=60)
        for j in (jl, jp):
            # What the daemon found out by itself (the command and paths are bob's own words).
            text = json.dumps({k: j[k] for k in ("reason", "attempts", "events", "resume_from", "training")})
            self.assertNotIn("alice-secret", text)
            self.assertNotIn("31337", text)
            self.assertNotIn("train.log", text, "no name from her directory either")
        self.assertIsNone(jp["resume_from"])

        # On disk: the database (every job's environment) is the daemon's alone, a log its user's.
        for name in ("gpuward.db", "gpuward.db-wal"):
            self.assertEqual(os.stat(os.path.join(self.d.state, name)).st_mode & 0o777, 0o600, name)
        jid = self.submit(self.alice, "--", "true")
        self.d.wait_state(jid, "COMPLETED")
        st = os.stat(self.d.job(jid)["log_path"])
        self.assertEqual((st.st_uid, st.st_mode & 0o777), (self.alice.pw_uid, 0o600))

    def test_directory_rights_are_the_kernels_acls_included(self):
        """What a job may enter or write is judged as its user by the kernel, so a POSIX ACL
        counts: one granting bob a private directory lets him in, one naming bob with no rights
        keeps him out of a directory open to everyone else (the job would fail at its start)."""
        import errno
        import os
        import struct

        def set_acl(path, entries):
            # The kernel's xattr form of an ACL (no setfacl needed): version 2, then (tag, perm,
            # id) sorted by tag; ids of the owner, group, mask and other entries are -1.
            blob = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, i) for t, p, i in entries)
            os.setxattr(path, "system.posix_acl_access", blob)

        USER_OBJ, USER, GROUP_OBJ, MASK, OTHER, ANY = 0x01, 0x02, 0x04, 0x10, 0x20, 0xFFFFFFFF
        bob = self.bob.pw_uid
        shared = os.path.join(self.d.work, f"acl-shared-{self.users.suffix}")
        closed = os.path.join(self.d.work, f"acl-closed-{self.users.suffix}")
        for path, mode in ((shared, 0o700), (closed, 0o755)):
            os.mkdir(path, mode)
            os.chown(path, self.alice.pw_uid, self.alice.pw_gid)
        try:
            set_acl(shared, [(USER_OBJ, 7, ANY), (USER, 7, bob), (GROUP_OBJ, 0, ANY), (MASK, 7, ANY), (OTHER, 0, ANY)])
            set_acl(closed, [(USER_OBJ, 7, ANY), (USER, 0, bob), (GROUP_OBJ, 5, ANY), (MASK, 5, ANY), (OTHER, 5, ANY)])
        except OSError as e:
            if e.errno in (errno.EOPNOTSUPP, errno.ENOTSUP):
                self.skipTest("this file system keeps no POSIX ACLs")
            raise

        out = os.path.join(shared, "out.log")
        jid = self.submit(self.bob, "--cwd", shared, "--output", out, "--", "sh", "-c", "pwd")
        self.d.wait_state(jid, "COMPLETED")
        with open(out) as f:
            self.assertEqual(f.read().strip(), shared, "bob's job ran where the ACL let him in")
        # Through the API: the CLI, running as bob, already stops at a cwd he cannot enter.
        for extra, field in (({"cwd": closed}, "cwd"), ({"output": os.path.join(closed, "o.log")}, "output")):
            job = {"command": ["true"], "cwd": self.d.work, **extra}
            st, body = self.d.raw_as(bob, "POST", "/api/v1/jobs", json.dumps(job).encode(), gid=self.bob.pw_gid)
            self.assertEqual((st, json.loads(body)["field"]), (400, field), body)
        held = self.submit(self.alice, "--hold", "--cwd", closed, "--", "true")  # the owner still may
        self.ok(self.alice, "cancel", held)

    def test_batches_count_against_the_rate_limit_and_quota(self):
        """A batch of n is n submissions: a user cannot pass the limits by sending them at once."""
        user = self.users.add("batch")  # a fresh bucket
        def batch(k):
            jobs = [{"command": ["true"], "cwd": self.d.work, "hold": True} for _ in range(k)]
            st, body = self.d.raw_as(user.pw_uid, "POST", "/api/v1/jobs/batch", json.dumps({"jobs": jobs}).encode(),
                                     gid=user.pw_gid)
            return st, json.loads(body)
        st, r = batch(51)  # the burst is 50
        self.assertEqual(st, 429, r)
        self.assertIn("a batch of 51 submissions is more than", r["error"])
        self.assertEqual(batch(30)[0], 201)
        st, r = batch(30)  # 20 tokens left: all or none
        self.assertEqual(st, 429, r)
        self.assertEqual(batch(20)[0], 201)
        mine = self.d.api("GET", f"/api/v1/jobs?uid={user.pw_uid}")[1]["jobs"]
        self.assertEqual(len(mine), 50, "the refused batches added nothing")
        for j in mine:
            self.d.api("DELETE", f"/api/v1/jobs/{j['id']}")

        # The quota counts the batch's own jobs: 11 over a limit of 10 is refused whole.
        other = self.users.add("quota")
        self.d.cli("admin", "quota", "set", other.pw_name, "max_pending_jobs=10")
        jobs = [{"command": ["true"], "cwd": self.d.work, "hold": True} for _ in range(11)]
        st, body = self.d.raw_as(other.pw_uid, "POST", "/api/v1/jobs/batch", json.dumps({"jobs": jobs}).encode(),
                                 gid=other.pw_gid)
        self.assertEqual(st, 403, body)
        self.assertEqual(json.loads(body)["field"], "quota")
        self.assertEqual(self.d.api("GET", f"/api/v1/jobs?uid={other.pw_uid}")[1]["jobs"], [])

    def test_bookings_belong_to_their_owner(self):
        b = json.loads(self.ok(self.alice, "reserve", "--json", "--gpus", 1, "--start", "now+2h", "--duration", "1h"))
        p = self.cli(self.bob, "unreserve", b["id"])
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"belongs to {self.alice.pw_name}", p.stderr)
        p = self.cli(self.bob, "submit", "--reservation", b["id"], "--", "true")
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"booking {b['id']} belongs to {self.alice.pw_name}", p.stderr)
        self.assertEqual([x["id"] for x in self.d.api("GET", "/api/v1/bookings")[1]["bookings"]], [b["id"]])
        self.ok(self.admin, "unreserve", b["id"])
        self.assertEqual(self.d.api("GET", "/api/v1/bookings")[1]["bookings"], [])

    def test_tokens_over_tcp(self):
        tok = self.ok(self.bob, "token", "create", "--name", "ci", "-q").strip()
        st, r = self.tcp("POST", "/api/v1/jobs", tok, {"command": ["id", "-u"], "cwd": "/tmp"})
        self.assertEqual(st, 201, r)
        j = self.d.wait_state(r["id"], "COMPLETED")
        self.assertEqual(j["user"], self.bob.pw_name)
        self.assertEqual(self.d.log_text(r["id"]).strip(), str(self.bob.pw_uid))
        self.assertEqual(self.tcp("GET", "/api/v1/whoami", tok)[1]["role"], "user")

        wrong = "gw_" + secrets.token_hex(32)
        st, r = self.tcp("POST", "/api/v1/jobs", wrong, {"command": ["true"], "cwd": "/tmp"})
        self.assertEqual(st, 401)
        self.assertIn("unknown", r["error"])
        st, r = self.tcp("GET", "/api/v1/jobs", auth="Bearer not-a-token")
        self.assertEqual(st, 401)
        self.assertIn("64 hex digits", r["error"])

        # Revoked: 401 from then on, and it says so.
        tid = [t for t in json.loads(self.ok(self.bob, "token", "list", "--json"))["tokens"] if t["name"] == "ci"][0]
        p = self.cli(self.alice, "token", "revoke", tid["id"])
        self.assertEqual(p.returncode, 1, "alice cannot revoke bob's token")
        self.ok(self.bob, "token", "revoke", tid["id"])
        st, r = self.tcp("GET", "/api/v1/jobs", tok)
        self.assertEqual(st, 401)
        self.assertIn(f"token {tid['id']} was revoked", r["error"])

    def test_expired_token_is_refused(self):
        for bad in ("0d", "30", "soon", "-1d", "3651d"):
            p = self.cli(self.bob, "token", "create", "--expires", bad)
            self.assertEqual(p.returncode, 2, (bad, p.stderr))
            self.assertIn("--expires", p.stderr)
        before = len(json.loads(self.ok(self.bob, "token", "list", "--json"))["tokens"])
        st, r = self.d.api("POST", "/api/v1/tokens", {"expires": "forever"})
        self.assertEqual((st, r["field"]), (400, "expires"), r)
        self.assertEqual(len(json.loads(self.ok(self.bob, "token", "list", "--json"))["tokens"]), before,
                         "nothing made")

        tok = self.ok(self.bob, "token", "create", "--name", "short", "--expires", "2s", "-q").strip()
        listed = [t for t in json.loads(self.ok(self.bob, "token", "list", "--json"))["tokens"]
                  if t["name"] == "short"][0]
        self.assertIsInstance(listed["expires"], float)
        # Bounded wait for the clock to pass its expiry; then every use is refused.
        st, r = wait_until(lambda: (lambda sr: sr if sr[0] == 401 else None)(self.tcp("GET", "/api/v1/jobs", tok)),
                           timeout=15, interval=0.25, what="the token to expire")
        self.assertRegex(r["error"], rf"token {listed['id']} \(short\) expired at \d{{4}}-\d\d-\d\d ")
        out = self.ok(self.bob, "token", "list")
        self.assertRegex(out, r"short .*expired ")

    def test_me_lists_the_callers_jobs_only(self):
        mine = self.submit(self.alice, "--hold", "--", "true")
        theirs = self.submit(self.bob, "--hold", "--", "true")
        try:
            for user, want, other in ((self.alice, mine, theirs), (self.bob, theirs, mine)):
                ids = [j["id"] for j in json.loads(self.ok(user, "queue", "--me", "--json"))["jobs"]]
                self.assertIn(want, ids, user.pw_name)
                self.assertNotIn(other, ids, user.pw_name)
                rows = [line.split() for line in self.ok(user, "queue", "--me").splitlines()[1:]]
                self.assertEqual([r[0] for r in rows], [str(want)], "the table lists only the caller's job")
            # Both ended, so that history would list bob's too were --me not a filter.
            self.ok(self.alice, "cancel", mine)
            self.ok(self.bob, "cancel", theirs)
            for user, want, other in ((self.alice, mine, theirs), (self.bob, theirs, mine)):
                ids = [j["id"] for j in json.loads(self.ok(user, "history", "--me", "--json"))["jobs"]]
                self.assertIn(want, ids, user.pw_name)
                self.assertNotIn(other, ids, user.pw_name)
            self.assertEqual({j["id"] for j in json.loads(self.ok(self.alice, "history", "--json"))["jobs"]}
                             & {mine, theirs}, {mine, theirs}, "without --me, both")
        finally:
            self.d.api("DELETE", f"/api/v1/jobs/{mine}")
            self.d.api("DELETE", f"/api/v1/jobs/{theirs}")

    def test_an_admin_by_group_is_one_to_submit_checks_too(self):
        # finetune turns reclamation off and names no allowed users: for admins only.  An admin
        # named by @group in --admins is one there too, as for the API.
        p = self.cli(self.alice, "submit", "--idle-policy", "finetune", "--", "true")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("may not use profile 'finetune'", p.stderr)
        jid = self.submit(self.group_admin, "--idle-policy", "finetune", "--", "true")
        self.assertEqual(self.d.wait_state(jid, "COMPLETED")["idle_policy"], "finetune")

    def test_guest_reads_but_never_writes(self):
        self.assertEqual(json.loads(self.ok(self.guest, "queue", "--json"))["jobs"], [])
        self.ok(self.guest, "reservations")
        self.ok(self.guest, "schedule")
        for args in (("submit", "--", "true"), ("reserve", "--gpus", 1, "--start", "now+1h", "--duration", "1h")):
            p = self.cli(self.guest, *args)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(f"{self.guest.pw_name} has the role guest, which may only read", p.stderr)
        self.assertEqual(self.d.api("GET", "/api/v1/jobs")[1]["jobs"], [], "nothing changed")
        # A guest's own token: reads over TCP, writes refused there too.
        tok = self.ok(self.guest, "token", "create", "-q").strip()
        st, r = self.tcp("GET", "/api/v1/whoami", tok)
        self.assertEqual((st, r["role"], r["user"]), (200, "guest", self.guest.pw_name))
        self.assertEqual(self.tcp("GET", "/api/v1/jobs", tok)[0], 200)
        st, r = self.tcp("POST", "/api/v1/jobs", tok, {"command": ["true"], "cwd": "/tmp"})
        self.assertEqual(st, 403, r)
        self.assertIn("role guest", r["error"])
        st, r = self.tcp("GET", "/api/v1/whoami")
        self.assertEqual(r["role"], "guest", "no token: an anonymous guest")


if __name__ == "__main__":
    why = skip_reason()
    if why:
        print(f"test_users: SKIPPED: {why}")
        sys.exit(0)
    unittest.main(verbosity=2)

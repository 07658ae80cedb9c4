"""Departed users: an account deleted (userdel) takes its tokens and queued jobs with it, and
the next account given its uid inherits none of it.  Throwaway accounts (prefix gwsec) made
with useradd and removed in a finally block.  Root only: elsewhere it says why it is skipped."""
import json
import shutil
import subprocess
import unittest

from gwtest import IS_ROOT, Daemon, Users, main, wait_until


def skip_reason():
    if not IS_ROOT:
        return "needs root to create and delete throwaway Unix users"
    for tool in ("useradd", "userdel", "setpriv"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    return None


@unittest.skipIf(skip_reason(), skip_reason() or "")
class DepartedUserTest(unittest.TestCase):
    def setUp(self):
        self.accounts = Users("gwsec")
        self.d = Daemon(gpus=1)
        try:
            self.d.start()
        except BaseException:
            self.d.cleanup()
            raise

    def tearDown(self):
        try:
            self.d.cleanup()
        finally:
            self.accounts.remove_all()

    def as_user(self, user, method, path, body=None):
        st, payload = self.d.raw_as(user.pw_uid, method, path, json.dumps(body).encode() if body is not None else b"",
                                    gid=user.pw_gid)
        return st, json.loads(payload) if payload else {}

    def token_of(self, user):
        st, r = self.as_user(user, "POST", "/api/v1/tokens", {"name": "ci"})
        self.assertEqual(st, 201, r)
        return r["token"]

    def daemon_sees(self, uid, name):
        """Waits (bounded) until the daemon's account cache says uid is name: it keeps what it
        looked up for 10 s."""
        def seen():
            st, r = self.d.raw_as(uid, "GET", "/api/v1/whoami")
            return json.loads(r).get("user") == name
        wait_until(seen, timeout=40, interval=0.5, what=f"the daemon to see uid {uid} as {name}")

    def test_token_dies_with_its_user_and_does_not_follow_the_uid(self):
        alice = self.accounts.add("a")
        bob = self.accounts.add("b")
        tok_a, tok_b = self.token_of(alice), self.token_of(bob)
        self.assertEqual(self.d.tcp_json("GET", "/api/v1/whoami", token=tok_a)[1]["user"], alice.pw_name)
        self.assertEqual(self.d.tcp_json("GET", "/api/v1/whoami", token=tok_b)[1]["user"], bob.pw_name)

        # alice leaves and her uid goes to carol; bob leaves and his uid stays free.
        self.accounts.delete(alice)
        self.accounts.delete(bob)
        carol = self.accounts.add("c", uid=alice.pw_uid)
        self.daemon_sees(carol.pw_uid, carol.pw_name)
        st, r = self.as_user(carol, "GET", "/api/v1/tokens")
        self.assertEqual((st, r["tokens"]), (200, []), "alice's tokens are not carol's to list")

        st, r = self.d.tcp_json("POST", "/api/v1/jobs", {"command": ["id", "-u"], "cwd": "/tmp"}, token=tok_a)
        self.assertEqual(st, 401, r)
        self.assertIn(f"its account '{alice.pw_name}' (uid {alice.pw_uid}) no longer exists; uid {alice.pw_uid} is "
                      f"now the account '{carol.pw_name}'", r["error"])
        self.assertIn("revoked", r["error"])
        # Revoked for good: it says so, and why, at every later use.
        st, r = self.d.tcp_json("GET", "/api/v1/whoami", token=tok_a)
        self.assertEqual(st, 401, r)
        self.assertIn("was revoked", r["error"])
        # The daemon keeps an account it looked up for 10 s: bob's token works until then.
        st, r = wait_until(lambda: (lambda x: x if x[0] != 200 else None)(
            self.d.tcp_json("GET", "/api/v1/jobs", token=tok_b)), timeout=40, interval=0.5, what="bob's token to die")
        self.assertEqual(st, 401, r)
        self.assertIn(f"its account '{bob.pw_name}' (uid {bob.pw_uid}) no longer exists", r["error"])
        st, lst = self.d.api("GET", "/api/v1/jobs?state=PENDING,RUNNING,COMPLETED,FAILED")
        self.assertEqual([j for j in lst["jobs"] if j["uid"] == alice.pw_uid], [], "nothing ran as carol")
        self.assertIn("revoked", self.d.daemon_log())

    def test_queued_jobs_of_a_deleted_user_never_start(self):
        alice = self.accounts.add("a")
        bob = self.accounts.add("b")
        blocker = self.d.submit_api(["sleep", "120"])
        self.d.wait_state(blocker, "RUNNING")
        spec = {"command": ["sh", "-c", "id -un; env"], "cwd": self.d.work, "env_extra": ["SECRET_OF_ALICE=s3"]}
        st, r = self.as_user(alice, "POST", "/api/v1/jobs", spec)
        self.assertEqual(st, 201, r)
        ja = r["id"]
        st, r = self.as_user(alice, "POST", "/api/v1/jobs", {**spec, "hold": True})
        self.assertEqual(st, 201, r)
        held = r["id"]
        st, r = self.as_user(bob, "POST", "/api/v1/jobs", spec)
        self.assertEqual(st, 201, r)
        jb = r["id"]
        self.assertEqual(self.d.job(ja)["user"], alice.pw_name, "the job records its user's name")

        self.accounts.delete(alice)
        self.accounts.delete(bob)
        carol = self.accounts.add("c", uid=alice.pw_uid)
        self.daemon_sees(carol.pw_uid, carol.pw_name)

        # The new holder of the uid is not the jobs' owner: no release, cancel or log.
        for method, path in (("POST", f"/api/v1/jobs/{held}/release"), ("DELETE", f"/api/v1/jobs/{ja}"),
                             ("GET", f"/api/v1/jobs/{ja}/log")):
            st, r = self.as_user(carol, method, path)
            self.assertEqual(st, 403, (method, path, r))
            self.assertIn(f"belongs to {alice.pw_name}", r["error"])
        self.assertEqual(self.d.job(held)["state"], "HELD", "nothing changed")

        self.d.api("DELETE", f"/api/v1/jobs/{blocker}")
        a = self.d.wait_state(ja, "CANCELLED", timeout=60)
        self.assertEqual(a["reason"], f"user gone: account '{alice.pw_name}' (uid {alice.pw_uid}) no longer exists; "
                                      f"uid {alice.pw_uid} is now the account '{carol.pw_name}'")
        self.assertIsNone(a["start_time"], "it never started")
        self.assertEqual(a["attempts"], [])
        b = self.d.wait_state(jb, "CANCELLED", timeout=60)
        # (Others on this host may make an account that takes bob's uid meanwhile.)
        self.assertTrue(b["reason"].startswith(f"user gone: account '{bob.pw_name}' (uid {bob.pw_uid}) no longer "
                                               "exists"), b["reason"])
        self.assertIsNone(b["start_time"], "it never started")
        self.assertIn("user", [e["kind"] for e in b["events"]])
        # Released by an admin, the held one does not start either.
        st, r = self.d.api("POST", f"/api/v1/jobs/{held}/release")
        self.assertEqual(st, 200, r)
        h = self.d.wait_state(held, "CANCELLED", timeout=60)
        self.assertIn("user gone", h["reason"])

    def test_running_job_of_a_user_deleted_while_the_daemon_was_down_is_stopped(self):
        alice = self.accounts.add("a")
        st, r = self.as_user(alice, "POST", "/api/v1/jobs", {"command": ["sleep", "120"], "cwd": self.d.work})
        self.assertEqual(st, 201, r)
        jid = r["id"]
        self.d.wait_pid(jid)
        self.d.stop()  # SIGTERM: the job keeps running
        self.accounts.delete(alice)
        self.d.start()
        j = self.d.wait_state(jid, "CANCELLED", timeout=60)
        self.assertIn(f"user gone: account '{alice.pw_name}' (uid {alice.pw_uid}) no longer exists", j["reason"])
        self.assertIn("adopt", [e["kind"] for e in j["events"]])


if __name__ == "__main__":
    main()

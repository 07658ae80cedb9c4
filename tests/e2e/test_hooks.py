"""The job lifecycle undoes its own change when the store refuses it.

A hold or a release is a transition of the lifecycle (lifecycle.c): it changes the job in
memory, writes it, and when the store refuses the write puts the job back as it was, itself;
the API handler only reports the refusal.  Here the state dir is a small tmpfs that the test
fills (as test_diskfull.py does): the hold and the release are refused with 507, and the job
as the API reports it, alone and in the listing, keeps its state and its reason for waiting.
Once space is back the same hold goes through.

Root only (mount); without root, or where mounting fails, the test prints why and skips.
The mount is unmounted in a finally block, every loop is bounded, the daemon is stopped."""
import os
import shutil
import sys
import unittest

from gwtest import IS_ROOT, Daemon, main, wait_until
from test_diskfull import fill, run, stop_holders


def skip(why):
    print(f"test_hooks: SKIPPED: {why}", file=sys.stderr, flush=True)
    raise unittest.SkipTest(why)


class HoldUndo(unittest.TestCase):
    def setUp(self):
        if not IS_ROOT:
            skip("needs root to mount a small file system as the state dir")
        self.d = Daemon(gpus=2)
        self.mounted = None
        self.filler = None
        os.makedirs(self.d.state)
        p = run("mount", "-t", "tmpfs", "-o", "size=16m,mode=0755", "tmpfs", self.d.state, check=False)
        if p.returncode != 0:
            shutil.rmtree(self.d.dir, ignore_errors=True)
            skip(f"cannot mount a tmpfs: {p.stderr.strip()}")
        self.mounted = self.d.state

    def tearDown(self):
        try:
            result = getattr(getattr(self, "_outcome", None), "result", None)
            if result is not None and any(t is self for t, _ in result.errors + result.failures):
                print(self.d.daemon_log()[-20000:], file=sys.stderr)
            if self.filler and os.path.exists(self.filler):
                os.unlink(self.filler)       # so that the cleanup's cancels can be written
            self.d.cleanup()
        finally:
            if self.mounted and run("umount", self.mounted, check=False).returncode != 0:
                stop_holders(self.mounted)
                run("umount", self.mounted, check=False)
            shutil.rmtree(self.d.dir, ignore_errors=True)

    def submit(self, **kw):
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["sleep", "600"], "cwd": "/", **kw})
        self.assertEqual(st, 201, r)
        return r["id"]

    def seen(self, jid):
        """The job's state and reason, alone and in the listing: both must agree."""
        j = self.d.job(jid)
        st, r = self.d.api("GET", "/api/v1/jobs?limit=10000")
        self.assertEqual(st, 200, r)
        listed = [x for x in r["jobs"] if x["id"] == jid]
        self.assertEqual(len(listed), 1, f"job {jid} in the listing")
        self.assertEqual((listed[0]["state"], listed[0].get("reason")), (j["state"], j.get("reason")))
        return j["state"], j.get("reason")

    def fill_until_refused(self):
        """Fills the state dir, then submits until the store refuses (SQLite may still have
        room in its WAL for a few writes)."""
        self.filler = fill(self.d.state)
        for _ in range(200):
            st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "cwd": "/", "hold": True})
            if st != 201:
                self.assertEqual(st, 507, r)
                return
        self.fail("200 submissions went through on a full state dir")

    def test_refused_hold_and_release_change_nothing(self):
        self.d.start()
        running = self.submit(ngpus=1)
        self.d.wait_state(running, "RUNNING", timeout=20)
        pending = self.submit(ngpus=2)               # waits for the running job's GPU
        held = self.submit(hold=True)
        wait_until(lambda: self.d.job(pending)["state"] == "PENDING", what="the 2-GPU job to wait")
        pending_before, held_before = self.seen(pending), self.seen(held)
        self.assertEqual(pending_before[0], "PENDING")
        self.assertEqual(held_before[0], "HELD")

        self.fill_until_refused()
        st, r = self.d.api("POST", f"/api/v1/jobs/{pending}/hold")
        self.assertEqual(st, 507, r)
        self.assertIn("cannot hold the job", r["error"])
        self.assertEqual(self.seen(pending), pending_before, "a hold the store refused is not done")
        st, r = self.d.api("POST", f"/api/v1/jobs/{held}/release")
        self.assertEqual(st, 507, r)
        self.assertIn("cannot release the job", r["error"])
        self.assertEqual(self.seen(held), held_before, "a release the store refused is not done")
        # Asked again, the answer is the same refusal, not "only PENDING jobs can be held":
        # nothing was left half-done by the first try.
        st, r = self.d.api("POST", f"/api/v1/jobs/{pending}/hold")
        self.assertEqual(st, 507, r)

        os.unlink(self.filler)
        st, r = self.d.api("POST", f"/api/v1/jobs/{pending}/hold")
        self.assertEqual(st, 200, r)
        self.assertEqual(self.seen(pending)[0], "HELD")
        self.assertEqual(self.d.job(running)["state"], "RUNNING")


if __name__ == "__main__":
    main()

"""Fair share: on a busy box the queue goes by priority, then by who used the GPUs least
lately, then submission.  A user who has used the box (finished jobs) waits behind one who has
not, although they submitted first; the usage is rebuilt from the store when the daemon starts
again; with fairshare = false submission order wins.  `gpuward show` and `gpuward queue` say
why."""
import os
import subprocess
import tempfile
import unittest

from gwtest import GPUWARDD, IS_ROOT, DaemonTest, Users, main, wait_until


@unittest.skipUnless(IS_ROOT, "needs root to make the two users")
class FairShareTest(DaemonTest):
    gpus = 1

    @classmethod
    def setUpClass(cls):
        cls.users = Users.for_class(cls, prefix="f", a="a", b="b")  # names of 8 characters, as most logins have

    @classmethod
    def tearDownClass(cls):
        cls.users.remove_all()

    def submit_as(self, user, *command):
        return self.d.submit("--gpus", 1, "--time", "10m", "--", *command, user=user.pw_uid)

    def a_uses_the_box(self):
        """A few finished jobs of user A."""
        for _ in range(2):
            jid = self.submit_as(self.a, "sleep", "1")
            self.d.wait_state(jid, "COMPLETED")

    def race(self):
        """The box busy, A submits, then B: (A's job, B's job) once the box frees up and one of
        them has started."""
        blocker = self.d.submit("--gpus", 1, "--time", "10m", "--", "sleep", "600")
        self.d.wait_state(blocker, "RUNNING")
        ja = self.submit_as(self.a, "sleep", "600")
        jb = self.submit_as(self.b, "sleep", "600")
        self.d.wait_job(jb, lambda j: j["reason"] not in (None, ""), what="B's job to wait")
        self.d.cli("cancel", blocker)
        self.d.wait_job(ja, lambda j: j["state"] == "RUNNING" or self.d.job(jb)["state"] == "RUNNING",
                        what="one of them to start")
        return self.d.job(ja), self.d.job(jb)

    def test_who_used_less_starts_first_and_show_says_why(self):
        self.a_uses_the_box()
        blocker = self.d.submit("--gpus", 1, "--time", "10m", "--", "sleep", "600")
        self.d.wait_state(blocker, "RUNNING")
        ja = self.submit_as(self.a, "sleep", "600")
        jb = self.submit_as(self.b, "sleep", "600")
        wa = self.d.wait_job(ja, lambda j: j["fairshare"] is not None, what="A's factor")
        wb = self.d.wait_job(jb, lambda j: j["fairshare"] is not None, what="B's factor")
        self.assertLess(wa["fairshare"], wb["fairshare"], "A used the box, B did not")
        self.assertEqual(wb["fairshare"], 1.0)
        show = self.d.cli("show", ja).stdout
        self.assertRegex(show, rf"Queue order: +priority 0, then fairshare \d\.\d\d: {self.a.pw_name} used "
                               r"[\d.]+ GPU-h \(decayed\)")
        self.assertIn("then submission order", show)
        queue = self.d.cli("queue").stdout.splitlines()
        self.assertIn("PRIO", queue[0].split())
        row_b = next(l for l in queue if l.split()[0] == str(jb))
        self.assertIn(" 1.00 ", row_b)
        self.assertTrue(all(len(l) <= 80 for l in queue), queue)
        listed = [j["id"] for j in self.d.cli_json("queue")["jobs"]]
        self.assertLess(listed.index(jb), listed.index(ja), "the queue is listed in the order it starts")
        # The predicted starts replay the queue in that order (once a prediction follows the
        # pass that sorted it): B's when the blocker's time is up, A's after B's.
        def b_predicted_first():
            pa, pb = self.d.job(ja)["predicted_start"], self.d.job(jb)["predicted_start"]
            return pa is not None and pb is not None and pb < pa
        wait_until(b_predicted_first, timeout=40, what="B's predicted start before A's")
        self.d.cli("cancel", blocker)
        self.d.wait_state(jb, "RUNNING")
        self.assertEqual(self.d.job(ja)["state"], "PENDING", "B's job started first, although A submitted first")

    def test_usage_is_read_back_at_start(self):
        self.a_uses_the_box()
        self.d.stop()
        self.d.start()
        ja, jb = self.race()
        self.assertEqual((jb["state"], ja["state"]), ("RUNNING", "PENDING"), "B first: A's use was read back")
        self.assertRegex(ja["priority_why"], rf"fairshare 0\.\d\d: {self.a.pw_name} used")


@unittest.skipUnless(IS_ROOT, "needs root to make the two users")
class FairShareOffTest(FairShareTest):
    config = "fairshare = false\n"

    def test_who_used_less_starts_first_and_show_says_why(self):
        self.a_uses_the_box()
        ja, jb = self.race()
        self.assertEqual((ja["state"], jb["state"]), ("RUNNING", "PENDING"), "submission order")
        self.assertIsNone(jb["fairshare"])
        self.assertEqual(jb["priority_why"], "priority 0, then submission order (fair share is off)")

    def test_usage_is_read_back_at_start(self):
        self.skipTest("nothing to read back with fair share off")


class FairShareConfigTest(unittest.TestCase):
    """Bad values are refused naming the key (the daemon reads its config before --help)."""

    def refused(self, line):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "gpuward.conf")
            with open(path, "w") as f:
                f.write(line + "\n")
            p = subprocess.run([GPUWARDD, "--config", path, "--help"], capture_output=True, text=True, timeout=30)
        return p.returncode, p.stderr

    def test_bad_values_name_the_key(self):
        for line, why in [("fairshare = maybe", "fairshare: invalid value 'maybe'"),
                          ("fairshare_half_life = soon", "fairshare_half_life: 'soon' is not a duration"),
                          ("fairshare_weights = alice", "fairshare_weights: 'alice' is not USER=WEIGHT"),
                          ("fairshare_weights = alice=0", "fairshare_weights: alice: weight '0' is not a number"),
                          ("fairshare_weights = alice=2,=1", "fairshare_weights: '=1' is not USER=WEIGHT")]:
            rc, err = self.refused(line)
            self.assertEqual(rc, 2, line)
            self.assertIn("line 1: " + why, err)

    def test_good_values_are_taken(self):
        for line in ["fairshare = off", "fairshare_half_life = 0", "fairshare_half_life = 2d",
                     "fairshare_weights = alice=2 , bob=0.5", "fairshare_weights ="]:
            self.assertEqual(self.refused(line), (0, ""), line)


if __name__ == "__main__":
    main()

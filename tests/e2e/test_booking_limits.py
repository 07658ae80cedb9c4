"""The host's booking policy: a user's booking longer than booking_max_duration, of more
than booking_max_gpus, or that would delay jobs already waiting, is stored PENDING_APPROVAL
with the reason, for an admin; admins are not limited; a booking awaiting approval holds
nothing (no job waits on it, others may book its GPUs and time), its approval places it
again, and no answer within booking_pending_ttl denies it; users book at most 30 days ahead
unless a quota says otherwise."""
import json
import os
import unittest

from gwtest import GPUWARD, IS_ROOT, DaemonTest, Users, main, start_failure, wait_until


def book_as(d, user, ngpus, start, duration):
    """POST /api/v1/bookings as user: the status and the reply."""
    body = json.dumps({"ngpus": ngpus, "start": start, "duration": duration}).encode()
    st, payload = d.raw_as(user.pw_uid, "POST", "/api/v1/bookings", body, gid=user.pw_gid)
    return st, json.loads(payload)


@unittest.skipUnless(IS_ROOT, "needs root to make a user (root is an admin, and admins are not limited)")
class BookingLimitsTest(DaemonTest):
    gpus = 4

    @classmethod
    def setUpClass(cls):
        cls.users = Users.for_class(cls, u="clk", v="clv")

    @classmethod
    def tearDownClass(cls):
        cls.users.remove_all()

    def book(self, ngpus, start, duration, user=None):
        return book_as(self.d, user or self.u, ngpus, start, duration)

    def open_booking(self, bid):
        return next((b for b in self.d.api("GET", "/api/v1/bookings")[1]["bookings"] if b["id"] == bid), None)

    def test_a_pending_booking_does_not_stop_another_users_booking(self):
        st, b = self.book(3, "now+6h", "3650d")
        self.assertEqual((st, b["state"]), (201, "PENDING_APPROVAL"), b)
        # Another user books 2 of the GPUs it asked for, inside its window: nothing holds them.
        st, o = self.book(2, "now+7h", "1h", user=self.v)
        self.assertEqual((st, o["state"]), (201, "APPROVED"), o)
        self.assertEqual(o["gpus"], [0, 1], "the lowest free GPUs: the pending booking asked for 0-2")

    def test_approving_a_booking_others_booked_over_is_refused_and_it_keeps_waiting(self):
        st, b = self.book(3, "now+6h", "3650d")
        self.assertEqual((st, b["state"]), (201, "PENDING_APPROVAL"), b)
        st, o = self.book(2, "now+7h", "1h", user=self.v)
        self.assertEqual((st, o["state"]), (201, "APPROVED"), o)
        st, r = self.d.api("POST", f"/api/v1/bookings/{b['id']}/approve")
        self.assertEqual((st, r["field"]), (409, "id"), r)
        self.assertRegex(r["error"], rf"^booking {b['id']} no longer fits: only 2 GPUs free .*; it still awaits "
                                     r"approval \(deny it, or its owner may release it and book again\)$")
        self.assertEqual(self.open_booking(b["id"])["state"], "PENDING_APPROVAL", "unchanged")
        p = self.d.cli("admin", "approve", b["id"], check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no longer fits", p.stderr)
        # The admin denies it instead; the other booking stands.
        st, r = self.d.api("POST", f"/api/v1/bookings/{b['id']}/deny")
        self.assertEqual((st, r["state"]), (200, "DENIED"), r)
        self.assertEqual(self.open_booking(o["id"])["state"], "APPROVED")

    def test_an_approval_takes_the_gpus_still_free(self):
        st, b = self.book(1, "now+6h", "2d")
        self.assertEqual((st, b["state"], b["gpus"]), (201, "PENDING_APPROVAL", [0]), b)
        st, o = self.book(2, "now+7h", "1h", user=self.v)
        self.assertEqual((st, o["gpus"]), (201, [0, 1]), o)
        st, r = self.d.api("POST", f"/api/v1/bookings/{b['id']}/approve")
        self.assertEqual((st, r["state"], r["gpus"]), (200, "APPROVED", [2]), r)

    def test_users_book_at_most_30_days_ahead_unless_a_quota_says_otherwise(self):
        st, r = self.book(1, "now+31d", "1h")
        self.assertEqual((st, r["field"]), (403, "start"), r)
        self.assertIn("booking_horizon_hours is 30d", r["error"])
        q = json.loads(self.d.cli("quota", "--json", user=self.u.pw_uid).stdout)
        self.assertEqual(q["limits"]["booking_horizon_hours"], {"value": "30d", "from": "built-in"})
        self.d.cli("admin", "quota", "set", "default", "booking_horizon_hours=unlimited")
        st, r = self.book(1, "now+31d", "1h")
        self.assertEqual((st, r["state"]), (201, "APPROVED"), r)

    def test_ten_years_of_every_gpu_waits_for_an_admin_and_keeps_no_job_waiting(self):
        st, b = self.book(4, "now+6h", "3650d")
        self.assertEqual((st, b["state"]), (201, "PENDING_APPROVAL"), b)
        self.assertIn("booking_max_duration (1d)", b["note"])
        # A day-long job is not kept off the GPUs by a booking nobody approved.
        jid = self.d.submit("--time", "1d", "--", "sleep", "60")
        j = self.d.wait_job(jid, lambda j: j["state"] != "PENDING" or j.get("reason") == "Reservation", timeout=20)
        self.assertEqual(j["state"], "RUNNING", j.get("reason"))
        # An admin approves it: not while that job would run into it (it held nothing, the
        # job took a GPU); once the job is gone, it is a booking like any other.
        st, r = self.d.api("POST", f"/api/v1/bookings/{b['id']}/approve")
        self.assertEqual(st, 409, r)
        self.assertIn("no longer fits: only 3 GPUs free", r["error"])
        self.d.cli("cancel", jid)
        st, r = self.d.api("POST", f"/api/v1/bookings/{b['id']}/approve")
        self.assertEqual((st, r["state"]), (200, "APPROVED"), r)

    def test_longer_than_a_day_waits_for_an_admin(self):
        st, b = self.book(1, "now+1h", "1d")
        self.assertEqual((st, b["state"]), (201, "APPROVED"), b)
        # The user is told why, by the CLI too.
        p = self.d.cli("reserve", "--gpus", 1, "--start", "now+2d", "--duration", "25h", user=self.u.pw_uid)
        self.assertRegex(p.stdout, r"booking \d+ awaits an admin's approval: it lasts 1d1h, longer than "
                                   r"booking_max_duration \(1d\)")

    def test_more_than_half_the_gpus_waits_for_an_admin(self):
        st, b = self.book(2, "now+1h", "1h")
        self.assertEqual((st, b["state"]), (201, "APPROVED"), b)
        st, b = self.book(3, "now+3h", "1h")
        self.assertEqual((st, b["state"]), (201, "PENDING_APPROVAL"), b)
        self.assertIn("3 of the 4 GPUs is more than booking_max_gpus (50%)", b["note"])

    def test_delaying_waiting_jobs_waits_for_an_admin(self):
        running = self.d.submit("--gpus", 2, "--time", "1h", "--", "sleep", "300")
        self.d.wait_state(running, "RUNNING")
        waiting = self.d.submit("--gpus", 3, "--time", "1h", "--", "sleep", "300")
        self.d.wait_job(waiting, lambda j: j["state"] == "PENDING" and j.get("reason"), what="a waiting job")
        # The other 2 GPUs from 30 min on for an hour: the waiting job (3 GPUs, once the first
        # job ends in an hour) would have to wait for the booking's end.
        st, b = self.book(2, "now+30m", "1h")
        self.assertEqual((st, b.get("state")), (201, "PENDING_APPROVAL"), b)
        self.assertIn(f"would delay 1 waiting job (job {waiting} first)", b["note"])
        # After the waiting job's predicted run: in the way of no one.
        st, b = self.book(2, "now+5h", "1h")
        self.assertEqual((st, b["state"]), (201, "APPROVED"), b)

    def test_admins_are_not_limited(self):
        p = self.d.cli("reserve", "--json", "--gpus", 4, "--start", "now+6h", "--duration", "3650d")
        self.assertEqual(json.loads(p.stdout)["state"], "APPROVED", p.stdout)


@unittest.skipUnless(IS_ROOT, "needs root to make a user")
class BookingPolicyConfigTest(DaemonTest):
    gpus = 4
    config = "booking_max_duration = 3d\nbooking_max_gpus = 3\nbooking_may_delay_waiting = true\n"

    def test_the_limits_come_from_the_config(self):
        users = Users()
        try:
            u = users.add("clk")

            def book(ngpus, start, duration):
                return book_as(self.d, u, ngpus, start, duration)

            st, b = book(3, "now+1h", "2d")
            self.assertEqual((st, b["state"]), (201, "APPROVED"), b)
            st, b = book(4, "now+3d", "1h")
            self.assertEqual((st, b["state"]), (201, "PENDING_APPROVAL"), b)
            self.assertIn("4 GPUs is more than booking_max_gpus (3)", b["note"])
            st, b = book(1, "now+4d", "4d")
            self.assertEqual((st, b["state"]), (201, "PENDING_APPROVAL"), b)
            self.assertIn("booking_max_duration (3d)", b["note"])
        finally:
            users.remove_all()

    def test_bad_values_are_refused_at_start(self):
        for line, says in (("booking_pending_ttl = soon", "booking_pending_ttl: 'soon' is not a duration"),
                           ("booking_max_gpus = 150%", "booking_max_gpus: invalid value '150%'"),
                           ("booking_max_gpus = half", "a GPU count 0-64, a percentage 0-100%, or unlimited"),
                           ("booking_max_duration = forever", "booking_max_duration: 'forever' is not a duration: use 30m"),
                           ("booking_may_delay_waiting = maybe", "booking_may_delay_waiting: invalid value 'maybe'")):
            self.assertIn(says, start_failure(line + "\n"))


@unittest.skipUnless(IS_ROOT, "needs root to make a user")
class PendingTtlTest(DaemonTest):
    gpus = 4
    config = "booking_pending_ttl = 2s\n"

    def test_a_booking_no_admin_answers_is_denied(self):
        users = Users()
        try:
            u = users.add("clk")
            st, b = book_as(self.d, u, 3, "now+6h", "3650d")
            self.assertEqual((st, b["state"]), (201, "PENDING_APPROVAL"), b)
            said = f"booking {b['id']} ({u.pw_name}, 3 GPUs): DENIED: no admin answered it within 2s"
            wait_until(lambda: said in self.d.daemon_log(), timeout=10, what="the booking denied")
            self.assertEqual(self.d.api("GET", "/api/v1/bookings")[1]["bookings"], [])
            st, r = self.d.api("POST", f"/api/v1/bookings/{b['id']}/approve")
            self.assertEqual(st, 404, r)
        finally:
            users.remove_all()


if __name__ == "__main__":
    main()

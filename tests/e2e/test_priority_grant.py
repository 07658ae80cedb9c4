#!/usr/bin/env python3
"""Priority is granted, not asserted: a user's job may have a priority up to what the user's
role (users: user_max_priority, default 0), an admin's quota (max_priority, for the user,
their group or the default) or the job's idle profile ([policy.NAME] max_priority) grants;
anything above is refused at submission (403, field "priority") and nothing is queued, so it
can neither jump the fair-share queue nor preempt.  Lowering one's own priority is always
allowed.  A user's pending jobs are bounded too (max_pending_jobs, 1000 by default), an
array's tasks counting one each: an array that does not fit is refused whole."""
import json
import os
import unittest

from gwtest import IS_ROOT, DaemonTest, Users, events_of, main, start_failure


class PlainUser(DaemonTest):
    """A daemon, and plain users A and B (neither is an admin)."""
    gpus = 2

    @classmethod
    def setUpClass(cls):
        cls.users = Users.for_class(cls, prefix="gp", a="a", b="b")

    @classmethod
    def tearDownClass(cls):
        cls.users.remove_all()

    def submit_as(self, user, *args, check=True):
        return self.d.cli("submit", "--json", "--time", "10m", *args, user=user.pw_uid, check=check)

    def api_as(self, user, method, path, body):
        st, payload = self.d.raw_as(user.pw_uid, method, path, json.dumps(body).encode(), gid=user.pw_gid)
        return st, json.loads(payload)

    def queued_of(self, user):
        return [j["id"] for j in self.d.api("GET", "/api/v1/jobs")[1]["jobs"] if j["user"] == user.pw_name]

    def quota_of(self, user, key):
        return self.d.api("GET", f"/api/v1/quota?user={user.pw_name}")[1]["limits"][key]

    def refused(self, p, maximum, source):
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn(f"is above your maximum {maximum} ({source}; an admin grants more: gpuward admin quota set "
                      f"{self.a.pw_name} max_priority=N)", p.stderr)


@unittest.skipUnless(IS_ROOT, "needs root to make a plain user (the test runner is an admin)")
class GrantTest(PlainUser):
    def test_users_default_refuses_above_0_naming_the_maximum(self):
        self.assertEqual(self.quota_of(self.a, "max_priority"), {"value": "0", "from": "role"})
        self.refused(self.submit_as(self.a, "--priority", 5, "--", "true", check=False), 0, "users' default")
        # The API, a #GPUWARD directive and an array take the same path: all refused.
        st, r = self.api_as(self.a, "POST", "/api/v1/jobs", self.d.job_spec(["true"], priority=1000))
        self.assertEqual((st, r["field"]), (403, "priority"), r)
        self.assertIn("priority 1000 is above your maximum 0 (users' default", r["error"])
        st, r = self.api_as(self.a, "POST", "/api/v1/jobs", self.d.job_spec(["true"], priority=7, array="0-3"))
        self.assertEqual((st, r["field"]), (403, "priority"), r)
        st, r = self.api_as(self.a, "POST", "/api/v1/jobs/batch",
                            {"jobs": [self.d.job_spec(["true"]), self.d.job_spec(["true"], priority=3)]})
        self.assertEqual((st, r["field"], r["index"]), (403, "priority", 1), r)
        script = os.path.join(self.d.work, "prio.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n#GPUWARD --priority 9\ntrue\n")
        os.chmod(script, 0o755)
        self.refused(self.submit_as(self.a, script, check=False), 0, "users' default")
        self.assertEqual(self.queued_of(self.a), [], "nothing queued")

    def test_an_admins_grant_and_no_more(self):
        self.d.cli("admin", "quota", "set", self.a.pw_name, "max_priority=5")
        self.assertEqual(self.quota_of(self.a, "max_priority"), {"value": "5", "from": "user"})
        jid = json.loads(self.submit_as(self.a, "--hold", "--priority", 5, "--", "true").stdout)["id"]
        self.assertEqual(self.d.job(jid)["priority"], 5)
        self.refused(self.submit_as(self.a, "--hold", "--priority", 6, "--", "true", check=False), 5, "your quota")
        self.assertEqual(self.queued_of(self.a), [jid])
        # B has no grant of their own.
        p = self.submit_as(self.b, "--priority", 5, "--", "true", check=False)
        self.assertIn("priority 5 is above your maximum 0", p.stderr)
        # A grant to the default entry reaches B too.
        self.d.cli("admin", "quota", "set", "default", "max_priority=2")
        self.assertEqual(self.quota_of(self.b, "max_priority"), {"value": "2", "from": "default"})
        self.submit_as(self.b, "--hold", "--priority", 2, "--", "true")

    def test_lowering_ones_own_priority_is_always_allowed(self):
        jid = json.loads(self.submit_as(self.a, "--hold", "--priority", -5, "--", "true").stdout)["id"]
        self.assertEqual(self.d.job(jid)["priority"], -5)
        self.assertEqual(self.d.job(self.d.submit_api(["true"], hold=True, priority=1000))["priority"], 1000,
                         "an admin (the test runner) may use any priority")


@unittest.skipUnless(IS_ROOT, "needs root to make a plain user")
class ConfiguredDefaultsTest(PlainUser):
    config = "user_max_priority = 3\nmax_pending_jobs = 2\n"

    def test_the_configs_defaults_for_users(self):
        self.assertEqual(self.quota_of(self.a, "max_priority"), {"value": "3", "from": "role"})
        self.submit_as(self.a, "--hold", "--priority", 3, "--", "true")
        self.refused(self.submit_as(self.a, "--hold", "--priority", 4, "--", "true", check=False), 3,
                     "users' default")
        self.submit_as(self.a, "--hold", "--", "true")
        p = self.submit_as(self.a, "--hold", "--", "true", check=False)
        self.assertIn("max_pending_jobs is 2; 2 jobs already pending", p.stderr)
        # Admins are held by neither.
        for _ in range(3):
            self.d.submit_api(["true"], hold=True, priority=1000)

    def test_bad_values_are_refused_naming_the_key(self):
        for conf, why in (("user_max_priority = 1001\n", "user_max_priority: invalid value '1001' (a priority "
                                                          "from 0 to 1000)"),
                          ("max_pending_jobs = 0\n", "max_pending_jobs: invalid value '0' (a count from 1, or "
                                                      "unlimited)"),
                          ("[policy.x]\nmax_priority = 1001\n", "[policy.x] max_priority: invalid value '1001'")):
            self.assertIn(why, start_failure(conf))


@unittest.skipUnless(IS_ROOT, "needs root to make a plain user")
class ProfileGrantTest(PlainUser):
    config = "[policy.urgent]\nmax_priority = 20\n"

    def test_a_profiles_jobs_may_have_its_priority(self):
        self.refused(self.submit_as(self.a, "--hold", "--priority", 20, "--", "true", check=False), 0,
                     "users' default")
        jid = json.loads(self.submit_as(self.a, "--hold", "--idle-policy", "urgent", "--priority", 20, "--",
                                        "true").stdout)["id"]
        self.assertEqual(self.d.job(jid)["priority"], 20)
        self.refused(self.submit_as(self.a, "--hold", "--idle-policy", "urgent", "--priority", 21, "--", "true",
                                    check=False), 20, "profile 'urgent'")
        self.assertEqual(self.queued_of(self.a), [jid])


@unittest.skipUnless(IS_ROOT, "needs root to make a plain user")
class RefusedCannotPreemptTest(PlainUser):
    extra = ("--preemption", "true", "--preempt-unresumable", "true", "--preempt-grace", "5")

    def test_a_refused_priority_preempts_nothing_and_a_granted_one_does(self):
        victims = [json.loads(self.submit_as(self.b, "--preemptible", "--", "sleep", "600").stdout)["id"]
                   for _ in range(self.gpus)]
        for v in victims:
            self.d.wait_state(v, "RUNNING")
        self.refused(self.submit_as(self.a, "--priority", 5, "--", "true", check=False), 0, "users' default")
        self.assertEqual(self.queued_of(self.a), [], "nothing queued, so nothing to preempt for")
        for v in victims:
            j = self.d.job(v)
            self.assertEqual((j["state"], events_of(j, "preempt")), ("RUNNING", []))
        # Granted, the same submission preempts one of B's jobs.
        self.d.cli("admin", "quota", "set", self.a.pw_name, "max_priority=5")
        high = json.loads(self.submit_as(self.a, "--priority", 5, "--", "true").stdout)["id"]
        self.d.wait_state(high, "COMPLETED", timeout=30)
        self.assertEqual(sum(bool(self.d.events(v, "preempt")) for v in victims), 1)


@unittest.skipUnless(IS_ROOT, "needs root to make the two users")
class FairShareTest(PlainUser):
    gpus = 1

    def test_a_refused_priority_does_not_jump_the_fair_share_queue(self):
        used = json.loads(self.submit_as(self.a, "--", "sleep", "1").stdout)["id"]
        self.d.wait_state(used, "COMPLETED")
        blocker = self.d.submit("--gpus", 1, "--time", "10m", "--", "sleep", "600")
        self.d.wait_state(blocker, "RUNNING")
        ja = json.loads(self.submit_as(self.a, "--", "sleep", "600").stdout)["id"]
        jb = json.loads(self.submit_as(self.b, "--", "sleep", "600").stdout)["id"]
        self.refused(self.submit_as(self.a, "--priority", 5, "--", "sleep", "600", check=False), 0,
                     "users' default")
        wa = self.d.wait_job(ja, lambda j: j["fairshare"] is not None, what="A's factor")
        wb = self.d.wait_job(jb, lambda j: j["fairshare"] is not None, what="B's factor")
        self.assertLess(wa["fairshare"], wb["fairshare"], "A used the box, B did not")
        listed = [j["id"] for j in self.d.cli_json("queue")["jobs"]]
        self.assertEqual(listed, [blocker, jb, ja], "B first although A submitted first; A's try to jump is gone")


@unittest.skipUnless(IS_ROOT, "needs root to make a plain user")
class PendingBoundTest(PlainUser):
    def test_an_array_beyond_max_pending_jobs_is_refused_whole(self):
        self.assertEqual(self.quota_of(self.a, "max_pending_jobs"), {"value": "1000", "from": "role"})
        p = self.submit_as(self.a, "--hold", "--array", "0-1999", "--", "true", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("max_pending_jobs is 1000; 0 jobs already pending and the submission adds 2000", p.stderr)
        self.assertEqual(self.queued_of(self.a), [], "refused whole, no task queued")
        # A batch counts each array's tasks: 600 + 600 passes 1000 at the second.
        st, r = self.api_as(self.a, "POST", "/api/v1/jobs/batch",
                            {"jobs": [self.d.job_spec(["true"], array="0-599", hold=True)] * 2})
        self.assertEqual((st, r["field"], r["index"]), (403, "quota", 1), r)
        self.assertIn("600 jobs already pending and the submission adds 600", r["error"])
        self.assertEqual(self.queued_of(self.a), [])
        # Exactly the limit fits; one more does not.
        aid = json.loads(self.submit_as(self.a, "--hold", "--array", "0-999", "--", "true").stdout)["id"]
        p = self.submit_as(self.a, "--hold", "--", "true", check=False)
        self.assertIn("max_pending_jobs is 1000; 1000 jobs already pending", p.stderr)
        self.assertEqual(self.queued_of(self.a), [aid])
        # An admin's quota raises it.
        self.d.cli("admin", "quota", "set", self.a.pw_name, "max_pending_jobs=1001")
        self.submit_as(self.a, "--hold", "--", "true")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Every reason a job waits is told, not only the first the scheduler met: a job blocked by a
quota and by a dependency says both (the API's `reasons`, `queue`'s "+1", one line each in
`show`); a job that could start only with a drained GPU back names that GPU, in its reasons
and its predicted wait, where it used to say Resources and "no start within 14 days"."""
import json

import gwtest


def line_of(out, jid):
    return [r for r in out.splitlines() if r.split() and r.split()[0] == str(jid)][0]


class QuotaAndDependencyTest(gwtest.DaemonTest):
    gpus = 2

    def test_a_job_blocked_by_a_quota_and_a_dependency_says_both(self):
        st, r = self.d.api("POST", "/api/v1/quota", {"subject": "default", "settings": ["max_gpus=1"]})
        self.assertEqual(st, 200, r)
        a = self.d.submit_api(["sleep", "120"])
        self.d.wait_state(a, "RUNNING")
        b = self.d.submit_api(["true"], after=str(a))
        quota = f"max_gpus=1, 1 in use by job {a}"
        j = self.d.wait_job(b, lambda j: len(j["reasons"]) == 2, timeout=20, what="both reasons")
        self.assertEqual(j["reason"], f"Quota: {quota}", "the main reason, as before")
        self.assertEqual(j["reasons"], [{"code": "Quota", "text": quota},
                                        {"code": "Dependency", "text": f"after job {a} completes"}])
        self.assertIn(f"(Quota: {quota} +1)", line_of(self.d.cli("queue").stdout, b))
        show = self.d.cli("show", b).stdout
        self.assertIn(f"Waits for:   Quota: {quota}\n             Dependency: after job {a} completes\n", show)
        shown = json.loads(self.d.cli("show", "--json", b).stdout)
        self.assertEqual([x["code"] for x in shown["reasons"]], ["Quota", "Dependency"])
        self.d.cli("cancel", b)
        self.d.cli("cancel", a)
        self.assertEqual(self.d.job(a)["reasons"], [], "a job that does not wait has none")


class HeldJobHoldsNoQuotaTest(gwtest.DaemonTest):
    gpus = 2

    def test_a_held_job_leaves_its_users_gpus_to_the_next(self):
        st, r = self.d.api("POST", "/api/v1/quota", {"subject": "default", "settings": ["max_gpus=1"]})
        self.assertEqual(st, 200, r)
        held = self.d.submit("--hold", "--", "true")
        self.assertEqual(self.d.job(held)["state"], "HELD")
        nxt = self.d.submit_api(["sleep", "60"])
        self.d.wait_state(nxt, "RUNNING")
        self.d.cli("cancel", nxt, held)


class DrainedGpuTest(gwtest.DaemonTest):
    gpus = 4

    def test_a_job_that_needs_a_drained_gpu_names_it(self):
        st, r = self.d.api("POST", "/api/v1/gpus/2/drain", {"reason": "fan noise"})
        self.assertEqual(st, 200, r)
        big = self.d.submit_api(["true"], ngpus=4)
        runner = self.d.submit_api(["sleep", "120"], ngpus=2)
        self.d.wait_state(runner, "RUNNING")
        small = self.d.submit_api(["true"], ngpus=2)
        j = self.d.wait_job(big, lambda j: j["reason"] == "Drained", timeout=20, what="the Drained reason")
        words = "needs 4 GPUs, 3 are in service: GPU 2 drained (fan noise (by "
        self.assertEqual(len(j["reasons"]), 1, j["reasons"])
        self.assertEqual(j["reasons"][0]["code"], "Drained")
        self.assertTrue(j["reasons"][0]["text"].startswith(words), j["reasons"])
        wait = j["predicted_wait"] or ""
        self.assertTrue(wait.startswith("when a GPU is back in service: " + words), j)
        self.assertIsNone(j["predicted_start"])
        pr = j["training"]["prediction"]
        self.assertEqual((pr["predicted_wait"], pr["why_none"]), (wait, wait), "not 'no start within 14 days'")
        self.assertIn("(Drained)", line_of(self.d.cli("queue").stdout, big))
        self.assertIn("Waits for:   Drained: " + words, self.d.cli("show", big).stdout)
        # Behind a running job, a job that fits the GPUs in service waits for them as ever.
        s = self.d.wait_job(small, lambda j: j["reason"] == "Resources", timeout=20, what="Resources")
        self.assertEqual([x["code"] for x in s["reasons"]], ["Resources"])
        # Back in service, the big job waits for GPUs like any other.
        self.assertEqual(self.d.api("POST", "/api/v1/gpus/2/undrain")[0], 200)
        j = self.d.wait_job(big, lambda j: j["reason"] == "Resources", timeout=20, what="Resources")
        self.assertNotIn("Drained", [x["code"] for x in j["reasons"]])
        for jid in (small, big, runner):  # the waiting ones first: none may start on what a cancel frees
            self.d.cli("cancel", jid)


if __name__ == "__main__":
    gwtest.main()

"""Predicted starts in the daemon on a long queue (daemon/training/training_predict.c): only the first
500 queued jobs (held ones count) get one, the others none (null, with the reason); a hold
and a release are predicted again without waiting for the periodic refresh."""
import time

from gwtest import DaemonTest, main, wait_until

MAX_JOBS = 500  # PREDICT_MAX_JOBS


class LongQueueTest(DaemonTest):
    gpus = 1

    def prediction(self, jid):
        return self.d.job(jid)["training"]["prediction"]

    def test_first_jobs_only(self):
        self.d.wait_state(self.d.submit_api(["sleep", "3600"], 3600), "RUNNING")
        st, r = self.d.api("POST", "/api/v1/jobs/batch", {"jobs": [self.d.job_spec(["true"], 60)] * (MAX_JOBS + 5)})
        self.assertEqual(st, 201, r)
        ids = r["ids"]
        first = wait_until(lambda: self.d.job(ids[0])["predicted_start"], what="a prediction")
        last_in = self.d.job(ids[MAX_JOBS - 1])
        self.assertIsNotNone(last_in["predicted_start"])
        # One GPU, 60 s limits in queue order: the 500th starts 499 minutes after the first.
        self.assertAlmostEqual(last_in["predicted_start"] - first, (MAX_JOBS - 1) * 60, delta=5)
        beyond = self.d.job(ids[MAX_JOBS])
        self.assertIsNone(beyond["predicted_start"])
        self.assertIn(f"only the first {MAX_JOBS} queued jobs", beyond["training"]["prediction"]["why_none"])
        st, lst = self.d.api("GET", "/api/v1/jobs?state=PENDING&fields=id,predicted_start")
        got = {j["id"]: j["predicted_start"] for j in lst["jobs"]}
        self.assertEqual(sum(1 for i in ids if got[i] is not None), MAX_JOBS)

        def starts_first(jid):
            s = self.d.job(jid)["predicted_start"]
            return s is not None and abs(s - first) < 1

        # Holding the first job changes what is queued: the next one takes its start.
        st, _ = self.d.api("POST", f"/api/v1/jobs/{ids[0]}/hold")
        self.assertEqual(st, 200)
        wait_until(lambda: starts_first(ids[1]), timeout=15, what="the next job to take the held one's start")
        self.assertIsNone(self.d.job(ids[0])["predicted_start"])
        self.assertEqual(self.prediction(ids[0])["why_none"], "the job is held")
        st, _ = self.d.api("POST", f"/api/v1/jobs/{ids[0]}/release")
        self.assertEqual(st, 200)
        wait_until(lambda: starts_first(ids[0]), timeout=15, what="the released job's start back")


class JustQueuedTest(DaemonTest):
    """A job no prediction has covered yet (just submitted behind a full host) is "not
    predicted yet", never "no start within 14 days"; asking for its ETA predicts it at once."""
    gpus = 1

    def test_just_submitted_is_not_never(self):
        self.d.wait_state(self.d.submit_api(["sleep", "3600"], 3600), "RUNNING")
        for _ in range(3):
            jid = self.d.submit_api(["sleep", "10"], 600)
            pr = self.d.job(jid)["training"]["prediction"]                 # show --json, at once
            if pr["predicted_start"] is None:
                self.assertRegex(pr["why_none"], r"^not predicted yet: the next prediction is due within \d+ s$")
            e = self.d.api("GET", f"/api/v1/jobs/{jid}/eta")[1]["prediction"]
            self.assertNotIn("14 days", e["why_none"] or "", e)
            if e["predicted_start"] is None:
                self.assertTrue(e["why_none"].startswith("not predicted yet: "), e)
            out = self.d.cli("eta", jid).stdout
            self.assertNotIn("14 days", out)
            self.assertRegex(out, r"predicted start( ~(\d\d-\d\d )?\d\d:\d\d|: not predicted yet \(the next prediction is due within \d+ s\))")
        # Asked about once no request predicted it just before: a start behind the running job.
        time.sleep(0.3)
        jid = self.d.submit_api(["sleep", "10"], 600)
        e = self.d.api("GET", f"/api/v1/jobs/{jid}/eta")[1]["prediction"]
        self.assertIsNotNone(e["predicted_start"], e)
        self.assertIsNone(e["why_none"], e)


class BackoffTest(DaemonTest):
    """A job back in the queue after a failure, waiting out its backoff, is not "never"."""
    gpus = 2
    extra = ("--retry-backoff", "10")

    def test_job_in_backoff(self):
        self.d.wait_state(self.d.submit_api(["sleep", "3600"], 3600), "RUNNING")
        fail = ["sh", "-c", "echo 'RuntimeError: CUDA error: unspecified launch failure' >&2; exit 1"]
        jid = self.d.submit_api(fail, 600, retries=1)
        # Its first attempt fails within a millisecond of its start: a poll for RUNNING can miss
        # it, so the backoff is known by its not_before.
        j = self.d.wait_job(jid, lambda j: j["state"] == "PENDING" and j.get("not_before"), timeout=20,
                            what="the retry's backoff")
        pr = j["training"]["prediction"]
        self.assertNotIn("14 days", pr["why_none"] or "", pr)
        if pr["predicted_start"] is None:
            self.assertTrue(pr["why_none"].startswith("not predicted yet: "), pr)
        # Predicted once a prediction covers it: when its backoff ends, on the free GPU.
        j = self.d.wait_job(jid, lambda j: j["training"]["prediction"]["predicted_start"], timeout=10,
                            what="a prediction of the retry")
        self.assertLess(abs(j["training"]["prediction"]["predicted_start"] - j["not_before"]), 3, j)


if __name__ == "__main__":
    main()

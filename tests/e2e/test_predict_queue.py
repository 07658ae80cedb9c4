"""Predicted starts in the daemon on a long queue (daemon/training_predict.c): only the first
500 queued jobs (held ones count) get one, the others none (null, with the reason); a hold
and a release are predicted again without waiting for the periodic refresh."""
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


if __name__ == "__main__":
    main()

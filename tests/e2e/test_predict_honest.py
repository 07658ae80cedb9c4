"""Predicted starts that say what they rest on (core/predict.h, daemon/training/training_predict.c):
a queued job's predicted_start is an estimate from ETAs and expected run times, its
latest_start the promise from time limits, which a job that backfills never moves; a retry
waiting out its backoff is predicted to start when its backoff ends if a GPU is free then."""
import re

from gwtest import TRAINER, DaemonTest, main, wait_until


class PromiseTest(DaemonTest):
    """Job A runs on GPU 0 with a 30-minute limit and an ETA about 10 minutes away; job H
    (2 GPUs) waits for it: estimate ~A's ETA, promise A's limit.  Job J (1 GPU, 20-minute
    limit) then backfills on GPU 1: H's estimate moves to J's end, its promise does not."""
    gpus = 2

    def prediction(self, jid):
        return self.d.job(jid)["training"]["prediction"]

    def test_backfill_keeps_the_head_promise(self):
        a = self.d.submit_api([TRAINER, "epochs=200", "name=long", "--epoch-seconds", "3"], 1800)
        self.d.wait_job(a, lambda j: j.get("eta"), timeout=30, what="job A's ETA")
        h = self.d.submit_api(["sleep", "600"], 600, ngpus=2)
        before = self.d.wait_job(h, lambda j: j["predicted_start"] and j.get("latest_start"), timeout=20,
                                 what="the head's estimate and promise")
        a_limit_end = self.d.job(a)["start_time"] + 1800
        self.assertAlmostEqual(before["latest_start"], a_limit_end, delta=3, msg=before)
        self.assertLess(before["predicted_start"], before["latest_start"] - 5 * 60, before)
        pr = self.prediction(h)
        self.assertAlmostEqual(pr["latest_start"], before["latest_start"], delta=1, msg=pr)

        j = self.d.submit_api(["sleep", "3600"], 1200)
        self.d.wait_state(j, "RUNNING")  # backfilled: it ends before H's reservation
        # The estimate now waits for J's expected end (its 20-minute limit, no history).
        after = self.d.wait_job(h, lambda x: x["predicted_start"] and x["predicted_start"] > before["predicted_start"] + 5 * 60,
                                timeout=40, what="the head's estimate to move after the backfill")
        self.assertAlmostEqual(after["latest_start"], before["latest_start"], delta=2,
                               msg=f"the backfill moved the promise: {before} -> {after}")
        self.assertLessEqual(after["predicted_start"], after["latest_start"] + 1, after)

        # The CLI shows both and says which is which.
        for verb in ("show", "eta"):
            out = self.d.cli(verb, str(h)).stdout
            self.assertRegex(out, r"~(\d\d-\d\d )?\d\d:\d\d.*estimate", out)
            self.assertRegex(out, r"at the latest (\d\d-\d\d )?\d\d:\d\d", out)
        out = self.d.cli("queue").stdout
        row = next(line for line in out.splitlines() if re.match(rf"\s*{h}\s", line))
        self.assertRegex(row, r"~(\d\d-\d\d )?\d\d:\d\d, latest (\d\d-\d\d )?\d\d:\d\d", out)


class BackoffStartTest(DaemonTest):
    """One job runs with a 30-minute limit on one of two GPUs, another (a few seconds long, a
    30-minute limit) on the other; a failing job queued behind them is predicted to start at
    their limits' end.  The short job ends, the failing one starts on its GPU, fails and waits
    out a short backoff: from then on its start is its backoff's end (or not predicted yet),
    never the start predicted for its first wait from the other jobs' limits."""
    gpus = 2
    extra = ("--retry-backoff", "8")

    def test_backoff_end_not_the_other_limit(self):
        a = self.d.submit_api(["sleep", "3600"], 1800)
        self.d.wait_state(a, "RUNNING")
        c = self.d.submit_api(["sleep", "3"], 1800)
        self.d.wait_state(c, "RUNNING")
        fail = ["sh", "-c", "echo 'RuntimeError: CUDA error: unspecified launch failure' >&2; exit 1"]
        b = self.d.submit_api(fail, 600, retries=1)
        first = self.d.wait_job(b, lambda j: j["predicted_start"], timeout=20, what="the first wait's prediction")
        limit_end = self.d.job(a)["start_time"] + 1800
        self.assertGreater(first["predicted_start"], limit_end - 60, first)
        seen = []

        def retry_predicted():
            j = self.d.job(b)
            if j["state"] == "PENDING" and j["attempt"] > first["attempt"]:
                pr = j["training"]["prediction"]
                seen.append((j["predicted_start"], j.get("latest_start"), pr["predicted_start"], j["not_before"]))
                return j if pr["predicted_start"] else None
            return j if j["state"] not in ("PENDING", "RUNNING") else None

        j = wait_until(retry_predicted, timeout=30, interval=0.02, what="a prediction of the retry")
        self.assertEqual(j["state"], "PENDING", f"the backoff ended before a prediction covered it: {seen}")
        for top, latest, pr, not_before in seen:
            for t in (top, latest, pr):
                self.assertTrue(t is None or abs(t - not_before) < 2,
                                f"in backoff until {not_before}, a start at {t} (from {len(seen)} looks: "
                                f"{seen[:2]} ... {seen[-1]})")
        pr = j["training"]["prediction"]
        self.assertAlmostEqual(pr["predicted_start"], j["not_before"], delta=2, msg=j)
        self.assertAlmostEqual(j["predicted_start"], j["not_before"], delta=2, msg=j)
        # Nothing runs past its limit is assumed either: the promise is its backoff's end too.
        self.assertAlmostEqual(pr["latest_start"], j["not_before"], delta=2, msg=pr)


if __name__ == "__main__":
    main()

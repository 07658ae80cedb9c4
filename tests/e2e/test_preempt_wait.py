"""Preemption waits for a victim's checkpoint when it can be predicted: a training run whose
next checkpoint (from its own epoch times) is beyond preempt_grace is asked to give way only
once it is due within it, so it stops right after it and loses nothing; and a waiting job that
cannot have victims yet does not hold back the jobs behind it."""
import os

from gwtest import TRAINER, DaemonTest, events_of, main, wait_until


def results_epochs(d, name):
    try:
        with open(os.path.join(d.work, "runs", "detect", name, "results.csv")) as f:
            return [int(float(l.split(",")[0])) for l in f.read().splitlines()[1:] if l.strip()]
    except FileNotFoundError:
        return []


class PreemptWaitForCheckpointTest(DaemonTest):
    gpus = 1
    # Epochs of 4 s, a grace of 2 s: asked within a second of a checkpoint (the daemon's
    # sample), a victim would not reach its next one within the grace.
    extra = ("--preemption", "true", "--preempt-grace", "2")

    def epoch_seen(self, jid):
        return (self.d.job(jid).get("training") or {}).get("epoch") or 0

    def test_a_victim_is_asked_only_when_its_checkpoint_is_due_within_the_grace(self):
        low = self.d.submit_api([TRAINER, "epochs=8", "name=w", "--epoch-seconds", "4"], yolo=True,
                                preemptible=True)
        # Three epochs: its spacing is known (two timed epochs past its first).  Then the high
        # job comes as the daemon sees a fresh checkpoint.
        wait_until(lambda: self.epoch_seen(low) >= 3, timeout=60, what="its third epoch")
        seen = self.epoch_seen(low)
        wait_until(lambda: self.epoch_seen(low) > seen, timeout=30, what="a fresh checkpoint")
        high = self.d.submit_api(["true"], priority=5)
        self.d.wait_state(high, "COMPLETED", timeout=60)
        j = self.d.wait_job(low, lambda j: j["attempt"] >= 2, timeout=60, what="its second attempt")
        stops = " ".join(e["message"] for e in events_of(j, "terminate"))
        self.assertRegex(stops, r"stopped right after its checkpoint of epoch \d+")
        self.assertNotIn("without a new checkpoint", stops)
        self.assertEqual(j["attempts"][0]["class"], "preempted")
        self.d.cli("cancel", str(low))


class PreemptNextInQueueTest(DaemonTest):
    gpus = 2
    extra = ("--preemption", "true", "--preempt-grace", "60")

    def test_a_job_that_cannot_have_victims_does_not_hold_back_the_next(self):
        script = 'if [ -n "$GPUWARD_RESUME_FROM" ]; then exit 0; fi; sleep 60'
        fixed = self.d.submit_api(["sleep", "60"])
        self.d.wait_state(fixed, "RUNNING", timeout=30)
        low = self.d.submit_api(["sh", "-c", script], preemptible=True, checkpoint="ck*")
        self.d.wait_job(low, lambda j: j["pid"], timeout=30, what="its start")
        # Both GPUs, but one is held by a job that is not preemptible: no victims for it.
        big = self.d.submit_api(["true"], ngpus=2, priority=9)
        small = self.d.submit_api(["true"], priority=5)
        self.d.wait_state(small, "COMPLETED", timeout=30)
        said = events_of(self.d.job(low), "preempt")
        self.assertEqual(len(said), 1, said)
        self.assertIn(f"preempted by job {small} (", said[0]["message"])
        self.assertEqual(self.d.job(big)["state"], "PENDING")
        for jid in (big, fixed, low):
            self.d.cli("cancel", str(jid))


if __name__ == "__main__":
    main()

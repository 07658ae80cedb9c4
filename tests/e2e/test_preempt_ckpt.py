"""Preemption stops a training run at its checkpoint even when epochs are short: with 1 s
epochs each victim is stopped right after the first checkpoint written after the decision (or
the one being written at it), and its resumed run continues from there; a run that ends by
itself while its stop waits is completed, not preempted, and its GPUs go to the preemptor.

GW_PREEMPT_CKPT_ROUNDS=N runs the five-victim scenario N times in one daemon (default 1):
docs/RELIABILITY.md records 4 rounds (20 stops)."""
import os
import re
import time

from gwtest import TRAINER, DaemonTest, events_of, main, wait_until

VICTIMS = 5
EPOCHS = 6
ROUNDS = int(os.environ.get("GW_PREEMPT_CKPT_ROUNDS", "1"))


def results_epochs(d, name):
    try:
        with open(os.path.join(d.work, "runs", "detect", name, "results.csv")) as f:
            return [int(float(l.split(",")[0])) for l in f.read().splitlines()[1:] if l.strip()]
    except FileNotFoundError:
        return []


class PreemptAtCheckpointTest(DaemonTest):
    gpus = VICTIMS
    # A grace far longer than the run: a victim not stopped at a checkpoint runs to its end.
    extra = ("--preemption", "true", "--preempt-grace", "60")

    def one_round(self, r):
        names = [f"r{r}v{i}" for i in range(VICTIMS)]
        low = []
        for name in names:
            low.append(self.d.submit_api([TRAINER, f"epochs={EPOCHS}", f"name={name}", "--epoch-seconds", "1"],
                                         yolo=True, preemptible=True))
            time.sleep(0.2)  # not a wait: spreads the victims' epochs over the second
        for jid, name in zip(low, names):
            wait_until(lambda: results_epochs(self.d, name), timeout=60, what=f"job {jid}'s first epoch")
        before = [len(results_epochs(self.d, n)) for n in names]
        high = self.d.submit_api(["sleep", "1"], ngpus=VICTIMS, priority=5)
        self.d.wait_job(high, lambda j: len(events_of(j, "preempt")) == VICTIMS, timeout=30, what="the decision")
        after = [len(results_epochs(self.d, n)) for n in names]
        h = self.d.wait_state(high, "COMPLETED", timeout=90)
        for jid, name, k0, k1 in zip(low, names, before, after):
            j = self.d.wait_state(jid, "COMPLETED", timeout=90)
            a1 = j["attempts"][0]
            self.assertEqual(a1["class"], "preempted", (name, j["reason"], j["events"]))
            stops = [e["message"] for e in events_of(j, "terminate")]
            m = re.search(r"stopped right after its checkpoint of epoch (\d+)", " ".join(stops))
            self.assertTrue(m, (name, stops))
            stopped_at = int(m.group(1))
            # Within one epoch of the decision: the checkpoint of the epoch in progress then
            # (or of the one just finished, whose last.pt was not yet written).
            self.assertGreaterEqual(stopped_at, k0, name)
            self.assertLessEqual(stopped_at, k1 + 1, name)
            resumed = re.search(r"Resuming training \S+ from epoch (\d+)", self.d.log_text(jid))
            self.assertTrue(resumed, name)
            self.assertEqual(int(resumed.group(1)), stopped_at + 1, f"{name}: resumed from the checkpoint it stopped at")
            self.assertEqual(results_epochs(self.d, name), list(range(1, EPOCHS + 1)), f"{name}: each epoch once")
            self.assertLessEqual(a1["end_time"], h["start_time"])

    def test_each_victim_stops_within_one_epoch_of_the_decision(self):
        for r in range(ROUNDS):
            self.one_round(r)
        # Told by inotify, not found by the once-a-second look.
        self.assertNotIn("no inotify watch", self.d.daemon_log())


class PreemptEndsWhileWaitingTest(DaemonTest):
    gpus = 1
    extra = ("--preemption", "true", "--preempt-grace", "60")

    def test_a_run_that_ends_while_its_stop_waits_is_completed(self):
        low = self.d.submit_api([TRAINER, "epochs=2", "name=last", "--epoch-seconds", "2"], yolo=True,
                                preemptible=True)
        wait_until(lambda: results_epochs(self.d, "last"), timeout=60, what="its first epoch")
        # Decided in its last epoch: its next checkpoint is its last, and it is let finish.
        high = self.d.submit_api(["sleep", "1"], priority=5)
        j = self.d.wait_state(low, "COMPLETED", timeout=60)
        h = self.d.wait_state(high, "COMPLETED", timeout=60)
        self.assertEqual(j["attempt"], 1, j["reason"])
        self.assertEqual(len(j["attempts"]), 1, j["attempts"])
        self.assertEqual(events_of(j, "terminate"), [], "never stopped")
        said = [e["message"] for e in events_of(j, "preempt")]
        self.assertTrue(any("its last epoch's checkpoint (epoch 2) is written: it is let finish" in m for m in said),
                        said)
        self.assertTrue(any(m.startswith("ended by itself (exit 0) while it was giving way to job "
                                         f"{high} (") and "it completed, not preempted" in m for m in said), said)
        told = [e["message"] for e in events_of(h, "preempt")]
        self.assertTrue(any(f"job {low} (" in m and "ended by itself before it had to stop" in m for m in told), told)
        self.assertGreaterEqual(h["start_time"], j["end_time"])
        self.assertEqual(results_epochs(self.d, "last"), [1, 2])


if __name__ == "__main__":
    main()

"""Preemption across a daemon restart: a victim still waiting for its checkpoint is still
stopped right after it, and one already sent SIGTERM is queued again as preempted (no retry
used); either way it waits first of its priority and resumes."""
import os

from gwtest import TRAINER, DaemonTest, events_of, main, pid_alive, wait_until


def results_epochs(d, name):
    with open(os.path.join(d.work, "runs", "detect", name, "results.csv")) as f:
        return [int(float(l.split(",")[0])) for l in f.read().splitlines()[1:] if l.strip()]


class PreemptRestartTest(DaemonTest):
    gpus = 1
    extra = ("--preemption", "true", "--preempt-grace", "120")

    def test_a_victim_waiting_for_its_checkpoint_is_still_stopped_after_it(self):
        # Long epochs: the daemon is down and back before the next checkpoint.
        low = self.d.submit_api([TRAINER, "epochs=3", "name=wr", "--epoch-seconds", "8"], yolo=True,
                                preemptible=True, retries=0)
        self.d.wait_job(low, lambda j: ((j.get("training") or {}).get("epoch") or 0) >= 1, timeout=60,
                        what=f"job {low} at epoch 1")
        high = self.d.submit_api(["sleep", "1"], priority=5)
        self.d.wait_job(low, lambda j: events_of(j, "preempt"), timeout=30, what="its preemption")
        self.assertEqual(self.d.job(low)["attempt"], 1)
        self.d.kill9()
        self.d.start()
        h = self.d.wait_state(high, "COMPLETED", timeout=90)
        j = self.d.wait_state(low, "COMPLETED", timeout=120)
        self.assertEqual(results_epochs(self.d, "wr"), [1, 2, 3], "each epoch exactly once")
        self.assertEqual(j["attempt"], 2, j["reason"])
        a1, a2 = j["attempts"][0], j["attempts"][1]
        self.assertEqual(a1["class"], "preempted", a1)
        self.assertIn(f"preempted by job {high} (", a1["evidence"])
        self.assertTrue(a2["resumed_from"].endswith("runs/detect/wr/weights/last.pt"), a2)
        # It ran until its checkpoint, not to its end, and the preemptor came before it.
        self.assertLessEqual(a1["epoch"], 2, a1)
        self.assertLessEqual(a1["end_time"], h["start_time"])
        self.assertGreaterEqual(a2["start_time"], h["start_time"])
        self.assertEqual(len(events_of(j, "preempt")), 1, "told once, not again after the restart")
        self.assertIn("daemon restarted while it was giving way", self.d.daemon_log())

    def test_a_victim_sent_sigterm_is_queued_again_as_preempted(self):
        # It saves on SIGTERM, then ends only once the test lets it, while the daemon is down,
        # with a failure's status: only its preemption, not its retries (none), may queue it
        # again; the restarted daemon learns of its end as it adopts it.
        script = ('if [ -n "$GPUWARD_RESUME_FROM" ]; then echo "$GPUWARD_RESUME_FROM" > resumed; exit 0; fi; '
                  "trap 'echo saved > ck1; echo term > got-term' TERM; "
                  "while [ ! -e go ]; do sleep 0.2; done; exit 3")
        low = self.d.submit_api(["sh", "-c", script], preemptible=True, checkpoint="ck*", retries=0)
        pid = self.d.wait_job(low, lambda j: j["pid"], timeout=30, what="its start")["pid"]
        high = self.d.submit_api(["true"], priority=5)
        got = os.path.join(self.d.work, "got-term")
        wait_until(lambda: os.path.exists(got), timeout=30, what="its SIGTERM")
        self.d.kill9()
        with open(os.path.join(self.d.work, "go"), "w") as f:
            f.write("go\n")
        wait_until(lambda: not pid_alive(pid), timeout=30, what="its end while the daemon is down")
        self.d.start()
        h = self.d.wait_state(high, "COMPLETED", timeout=90)
        j = self.d.wait_state(low, "COMPLETED", timeout=90)
        self.assertEqual(j["attempt"], 2, j["reason"])
        a1 = j["attempts"][0]
        self.assertEqual(a1["class"], "preempted", a1)
        self.assertIn(f"preempted by job {high} (", a1["evidence"])
        self.assertLessEqual(a1["end_time"], h["start_time"])
        self.assertGreaterEqual(j["attempts"][1]["start_time"], h["start_time"])
        with open(os.path.join(self.d.work, "resumed")) as f:
            self.assertTrue(f.read().strip().endswith("/ck1"))
        # Its preemption went on: it was not told again, nor stopped again with a new grace.
        self.assertEqual(len(events_of(j, "preempt")), 1, events_of(j, "preempt"))
        self.assertIn("daemon restarted while it was being stopped", self.d.daemon_log())


class PreemptRestartTwoGpuTest(DaemonTest):
    gpus = 2
    extra = ("--preemption", "true", "--preempt-grace", "120")

    def test_the_gpus_freed_still_wait_for_the_preemptor(self):
        a = self.d.submit_api([TRAINER, "epochs=3", "name=ra", "--epoch-seconds", "6"], yolo=True, preemptible=True)
        b = self.d.submit_api([TRAINER, "epochs=3", "name=rb", "--epoch-seconds", "9"], yolo=True, preemptible=True)
        for jid in (a, b):
            self.d.wait_job(jid, lambda j: ((j.get("training") or {}).get("epoch") or 0) >= 1, timeout=60,
                            what=f"job {jid} at epoch 1")
        # A short job that could backfill on the GPU the first victim frees.
        small = self.d.submit_api(["true"], time_limit=30)
        high = self.d.submit_api(["sleep", "1"], ngpus=2, priority=5)
        self.d.wait_job(high, lambda j: len(events_of(j, "preempt")) == 2, timeout=30, what="its two victims")
        self.d.kill9()
        self.d.start()
        h = self.d.wait_state(high, "COMPLETED", timeout=120)
        s = self.d.wait_state(small, "COMPLETED", timeout=120)
        self.assertGreaterEqual(s["start_time"], h["start_time"], "the freed GPU waited for the preemptor")
        for jid, name in ((a, "ra"), (b, "rb")):
            j = self.d.wait_state(jid, "COMPLETED", timeout=120)
            self.assertEqual(j["attempts"][0]["class"], "preempted", j["attempts"][0])
            self.assertEqual(results_epochs(self.d, name), [1, 2, 3], "each epoch exactly once")
        self.assertIn(f"job {high}: the GPUs its victims free are kept for it again", self.d.daemon_log())


if __name__ == "__main__":
    main()

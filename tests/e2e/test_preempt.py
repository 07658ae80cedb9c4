"""Preemption: a preemptible job gives way to a waiting job of a higher priority (after its
checkpoint for a training run), waits first of its priority and resumes; never a job that is
not preemptible, nor one that cannot resume (unless allowed), nor anything when it is off."""
import os
import time

from gwtest import TRAINER, DaemonTest, events_of, kinds, main, start_failure, wait_until


def ran_one_after_the_other(t, d, low, high):
    """low ran to its end in one attempt, never preempted, and high started after it."""
    j = d.wait_state(low, "COMPLETED", timeout=60)
    h = d.wait_state(high, "COMPLETED", timeout=60)
    t.assertEqual(j["attempt"], 1)
    t.assertEqual(events_of(j, "preempt"), [])
    t.assertEqual(events_of(h, "preempt"), [])
    t.assertGreaterEqual(h["start_time"], j["end_time"])


def results_epochs(d, name):
    with open(os.path.join(d.work, "runs", "detect", name, "results.csv")) as f:
        return [int(float(l.split(",")[0])) for l in f.read().splitlines()[1:] if l.strip()]


class PreemptTest(DaemonTest):
    gpus = 1
    extra = ("--preemption", "true", "--preempt-grace", "60")

    def wait_epoch(self, jid, n):
        return self.d.wait_job(jid, lambda j: ((j.get("training") or {}).get("epoch") or 0) >= n, timeout=60,
                               what=f"job {jid} at epoch {n}")

    def test_training_run_gives_way_after_its_checkpoint_and_resumes(self):
        low = self.d.submit_api([TRAINER, "epochs=6", "name=pre", "--epoch-seconds", "2"], yolo=True,
                                preemptible=True)
        self.assertTrue(self.d.job(low)["preemptible"])
        self.wait_epoch(low, 1)
        high = self.d.submit_api(["sleep", "2"], priority=5)
        h = self.d.wait_state(high, "COMPLETED", timeout=90)
        j = self.d.wait_state(low, "COMPLETED", timeout=120)
        self.assertEqual(results_epochs(self.d, "pre"), [1, 2, 3, 4, 5, 6], "each epoch exactly once")
        self.assertEqual(j["id"], low)
        self.assertGreaterEqual(j["attempt"], 2)
        a1, a2 = j["attempts"][0], j["attempts"][1]
        self.assertEqual(a1["class"], "preempted")
        self.assertIn(f"preempted by job {high} (", a1["evidence"])
        self.assertRegex(a1["evidence"], r"\d+s of work since its checkpoint lost")
        self.assertTrue(a2["resumed_from"].endswith("runs/detect/pre/weights/last.pt"), a2)
        # The high job ran in between: the preempted job came back after it.
        self.assertLessEqual(a1["end_time"], h["start_time"])
        self.assertGreaterEqual(a2["start_time"], h["start_time"])
        said = events_of(j, "preempt")
        self.assertEqual(len(said), 1, said)
        self.assertIn(f"preempted by job {high} (", said[0]["message"])
        self.assertRegex(said[0]["message"], r"\d+s of work since its checkpoint would be lost now")
        self.assertIn("stops right after its next checkpoint", said[0]["message"])
        self.assertIn("retry", kinds(j))
        told = events_of(h, "preempt")
        self.assertEqual(len(told), 1, told)
        self.assertIn(f"preempting job {low} (", told[0]["message"])
        # The CLI shows the same.
        show = self.d.cli("show", str(low)).stdout
        self.assertIn(f"preempted by job {high}", show)

    def test_a_job_not_preemptible_is_never_preempted(self):
        low = self.d.submit_api([TRAINER, "epochs=3", "name=np", "--epoch-seconds", "1"], yolo=True)
        self.wait_epoch(low, 1)
        high = self.d.submit_api(["true"], priority=5)
        ran_one_after_the_other(self, self.d, low, high)

    def test_a_job_that_cannot_resume_is_not_preempted_by_default(self):
        low = self.d.submit_api(["sleep", "4"], preemptible=True)
        self.d.wait_state(low, "RUNNING")
        high = self.d.submit_api(["true"], priority=5)
        ran_one_after_the_other(self, self.d, low, high)

    def test_same_priority_does_not_preempt(self):
        low = self.d.submit_api([TRAINER, "epochs=3", "name=sp", "--epoch-seconds", "1"], yolo=True,
                                preemptible=True)
        self.wait_epoch(low, 1)
        other = self.d.submit_api(["true"])
        j = self.d.wait_state(low, "COMPLETED", timeout=60)
        self.d.wait_state(other, "COMPLETED", timeout=60)
        self.assertEqual(j["attempt"], 1)
        self.assertEqual(events_of(j, "preempt"), [])


class PreemptSignalTest(DaemonTest):
    gpus = 1
    extra = ("--preemption", "true", "--preempt-grace", "60")

    def test_its_signal_first_then_it_resumes_from_its_checkpoint(self):
        script = ('if [ -n "$GPUWARD_RESUME_FROM" ]; then echo "$GPUWARD_RESUME_FROM" > resumed; exit 0; fi; '
                  'trap \'echo saved > ck1; exit 0\' USR1; sleep 60 & wait')
        low = self.d.submit_api(["sh", "-c", script], preemptible=True, checkpoint="ck*", warn_signal="USR1")
        self.d.wait_job(low, lambda j: j["pid"], timeout=30, what="its start")
        time.sleep(0.5)  # its trap set
        high = self.d.submit_api(["true"], priority=5)
        self.d.wait_state(high, "COMPLETED", timeout=60)
        j = self.d.wait_state(low, "COMPLETED", timeout=60)
        self.assertEqual(j["attempt"], 2)
        self.assertEqual(j["attempts"][0]["class"], "preempted")
        said = events_of(j, "preempt")
        self.assertIn("SIGUSR1 to its main process now", said[0]["message"])
        with open(os.path.join(self.d.work, "resumed")) as f:
            self.assertTrue(f.read().strip().endswith("/ck1"))


class PreemptTwoGpuTest(DaemonTest):
    gpus = 2
    extra = ("--preemption", "true", "--preempt-grace", "60")

    def test_the_gpus_freed_wait_for_the_preemptor(self):
        a = self.d.submit_api([TRAINER, "epochs=6", "name=a", "--epoch-seconds", "2"], yolo=True, preemptible=True)
        b = self.d.submit_api([TRAINER, "epochs=4", "name=b", "--epoch-seconds", "3"], yolo=True, preemptible=True)
        for jid in (a, b):
            self.d.wait_job(jid, lambda j: ((j.get("training") or {}).get("epoch") or 0) >= 1, timeout=60,
                            what=f"job {jid} at epoch 1")
        # A short job that could backfill on the GPU the first victim frees.
        small = self.d.submit_api(["true"], time_limit=30)
        high = self.d.submit_api(["sleep", "1"], ngpus=2, priority=5)
        h = self.d.wait_state(high, "COMPLETED", timeout=90)
        s = self.d.wait_state(small, "COMPLETED", timeout=90)
        self.assertGreaterEqual(s["start_time"], h["start_time"], "the freed GPU waited for the preemptor")
        for jid, name, epochs in ((a, "a", 6), (b, "b", 4)):
            j = self.d.wait_state(jid, "COMPLETED", timeout=120)
            self.assertEqual(j["attempts"][0]["class"], "preempted")
            self.assertEqual(results_epochs(self.d, name), list(range(1, epochs + 1)), "each epoch exactly once")
        self.assertEqual(len(events_of(h, "preempt")), 2)


class PreemptBookingTest(DaemonTest):
    gpus = 1
    extra = ("--preemption", "true", "--preempt-grace", "60")

    def test_a_preemptible_job_runs_until_a_booking_starts_then_gives_way(self):
        start = time.time() + 5
        st, b = self.d.api("POST", "/api/v1/bookings", {"ngpus": 1, "start": start, "duration": 14, "name": "demo"})
        self.assertEqual(st, 201, b)
        # It would run into the booking: only a preemptible job may take the GPU meanwhile.
        plain = self.d.submit_api(["true"])
        low = self.d.submit_api([TRAINER, "epochs=5", "name=bk", "--epoch-seconds", "2"], yolo=True,
                                preemptible=True)
        self.d.wait_state(low, "RUNNING", timeout=20)
        self.assertEqual(self.d.job(plain)["state"], "PENDING")
        mine = self.d.submit_api(["sleep", "1"], reservation=b["id"])
        m = self.d.wait_state(mine, "COMPLETED", timeout=60)
        self.assertGreaterEqual(m["start_time"], start - 0.05)
        j = self.d.wait_state(low, "COMPLETED", timeout=120)
        self.assertEqual(results_epochs(self.d, "bk"), [1, 2, 3, 4, 5], "each epoch exactly once")
        a1 = j["attempts"][0]
        self.assertEqual(a1["class"], "preempted")
        self.assertIn(f"preempted by booking {b['id']} (", a1["evidence"])
        said = events_of(j, "preempt")
        self.assertEqual(len(said), 1, said)
        self.assertIn(f"preempted by booking {b['id']} (", said[0]["message"])
        self.assertIn("whose window has started on its GPUs", said[0]["message"])
        self.assertLessEqual(a1["end_time"], m["start_time"])
        self.d.wait_state(plain, "COMPLETED", timeout=60)


class PreemptUnresumableTest(DaemonTest):
    gpus = 1
    extra = ("--preemption", "true", "--preempt-grace", "30", "--preempt-unresumable", "true")

    def test_allowed_it_is_stopped_and_runs_again_from_scratch(self):
        low = self.d.submit_api(["sh", "-c", "echo run >> runs.txt; sleep 3"], preemptible=True, retries=0)
        self.d.wait_job(low, lambda j: j["pid"], timeout=30, what="its start")
        wait_until(lambda: os.path.exists(os.path.join(self.d.work, "runs.txt")), timeout=30, what="its first run")
        high = self.d.submit_api(["true"], priority=5)
        self.d.wait_state(high, "COMPLETED", timeout=60)
        j = self.d.wait_state(low, "COMPLETED", timeout=60)
        # No retry left (retries 0), yet it ran again: a preemption is none of its retries.
        self.assertEqual(j["attempt"], 2)
        self.assertEqual(j["attempts"][0]["class"], "preempted")
        said = events_of(j, "preempt")
        self.assertIn("SIGTERM now", said[0]["message"])
        retry = events_of(j, "retry")
        self.assertIn("from scratch (no checkpoint)", retry[0]["message"])
        with open(os.path.join(self.d.work, "runs.txt")) as f:
            self.assertEqual(f.read().split(), ["run", "run"])

    def test_a_preempted_job_waits_with_its_own_reason(self):
        low = self.d.submit_api(["sleep", "60"], preemptible=True)
        self.d.wait_job(low, lambda j: j["pid"], timeout=30, what="its start")
        high = self.d.submit_api(["sleep", "60"], priority=5)
        self.d.wait_state(high, "RUNNING", timeout=60)
        j = self.d.wait_job(low, lambda j: j["state"] == "PENDING" and j["attempt"] == 2, timeout=30,
                            what="the preempted job queued again")
        # Not "Reservation": that one is a booking's.  Who took its GPUs, and where it stands.
        why = f"Preempted: by job {high} ("
        self.assertTrue(j["reason"].startswith(why), j["reason"])
        self.assertIn("waits first of priority 0 for free GPUs", j["reason"])
        queue = self.d.cli("queue").stdout
        self.assertIn(why, queue)
        self.assertIn(why, self.d.cli("show", str(low)).stdout)
        # A restarted daemon reads who preempted it back from its attempt.
        self.d.stop()
        self.d.start()
        self.assertTrue(self.d.job(low)["reason"].startswith(why), self.d.job(low)["reason"])
        # Once it runs again the reason is gone with its wait.
        self.d.cli("cancel", str(high))
        self.d.wait_state(low, "RUNNING", timeout=60)
        self.assertNotIn("Preempted", self.d.job(low)["reason"] or "")


class PreemptProfileTest(DaemonTest):
    gpus = 1
    extra = ("--preemption", "true")
    config = "[policy.bulk]\npreemptible = true\n"

    def test_a_profile_makes_its_jobs_preemptible(self):
        low = self.d.submit_api(["sh", "-c", "sleep 30"], idle_policy="bulk", resume_cmd="true")
        self.assertFalse(self.d.job(low)["preemptible"], "as submitted")
        self.d.wait_job(low, lambda j: j["pid"], timeout=30, what="its start")
        high = self.d.submit_api(["true"], priority=1)
        self.d.wait_state(high, "COMPLETED", timeout=60)
        j = self.d.wait_state(low, "COMPLETED", timeout=60)
        self.assertEqual(j["attempts"][0]["class"], "preempted")
        self.assertIn("to run its resume command", events_of(j, "retry")[0]["message"])


class PreemptBadInputTest(DaemonTest):
    gpus = 1

    def test_bad_settings_are_refused_naming_them(self):
        self.assertIn("preemption: invalid value 'maybe'", start_failure("preemption = maybe\n"))
        self.assertIn("preempt_grace: 'soon' is not a duration", start_failure("preempt_grace = soon\n"))
        self.assertIn("preempt_unresumable: invalid value '2'", start_failure("preempt_unresumable = 2\n"))
        self.assertIn("[policy.bulk] preemptible: invalid value 'x'", start_failure("[policy.bulk]\npreemptible = x\n"))

    def test_preemptible_must_be_a_boolean(self):
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"], preemptible="yes"))
        self.assertEqual(st, 400, r)
        self.assertEqual(r["field"], "preemptible")
        self.assertEqual(self.d.api("GET", "/api/v1/jobs")[1]["jobs"], [], "nothing queued")

    def test_cli_option_and_directive(self):
        jid = self.d.submit("--preemptible", "--", "true")
        self.assertTrue(self.d.job(jid)["preemptible"])
        script = os.path.join(self.d.work, "job.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n#GPUWARD --preemptible\ntrue\n")
        os.chmod(script, 0o755)
        jid = self.d.submit(script, cwd=self.d.work)
        self.assertTrue(self.d.job(jid)["preemptible"])
        self.assertFalse(self.d.job(self.d.submit("--", "true"))["preemptible"])


class PreemptOffTest(DaemonTest):
    gpus = 1

    def test_off_by_default_nothing_is_preempted(self):
        low = self.d.submit_api([TRAINER, "epochs=3", "name=off", "--epoch-seconds", "1"], yolo=True,
                                preemptible=True)
        self.d.wait_state(low, "RUNNING")
        high = self.d.submit_api(["true"], priority=5)
        ran_one_after_the_other(self, self.d, low, high)


if __name__ == "__main__":
    main()

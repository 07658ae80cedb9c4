"""The backend table: a third backend (gpuwardd --backend test, src/daemon/exec/exec_test.c) runs
jobs with no change anywhere else in the daemon.  It places jobs on this host's GPUs, runs
them as plain children of gpuwardd, lets the calendar hold bookings, preempts, and names
the node its jobs run on "test"; a job's whole life goes through it: start, output, exit,
failure, cancel, a booking whose window stops a preemptible job, a preemption by a higher
job and the resumed attempt."""
import os
import time

from gwtest import DaemonTest, events_of, main, start_failure, wait_until

# Gives way on SIGUSR1 (its warning) after saving a checkpoint; resumed, says from what.
CHECKPOINTED = ('if [ -n "$GPUWARD_RESUME_FROM" ]; then echo "$GPUWARD_RESUME_FROM" > resumed.{tag}; exit 0; fi; '
                'trap \'echo saved > ck.{tag}; exit 0\' USR1; echo armed > armed.{tag}; sleep 60 & wait')


class BackendTableTest(DaemonTest):
    gpus = 1
    extra = ("--backend", "test", "--preemption", "true", "--preempt-grace", "60")

    def checkpointed(self, tag, **kw):
        """A preemptible job that saves ck.TAG on its warning, once its trap is set."""
        jid = self.d.submit_api(["sh", "-c", CHECKPOINTED.format(tag=tag)], preemptible=True,
                                checkpoint=f"ck.{tag}", warn_signal="USR1", **kw)
        wait_until(lambda: os.path.exists(os.path.join(self.d.work, f"armed.{tag}")), timeout=30,
                   what=f"job {jid}'s trap")
        return jid

    def resumed_from(self, tag):
        with open(os.path.join(self.d.work, f"resumed.{tag}")) as f:
            return f.read().strip()

    def test_a_job_lives_and_ends_through_the_test_backend(self):
        self.assertIn("backend test: jobs run as children of gpuwardd", self.d.daemon_log())
        ok = self.d.submit_api(["sh", "-c", "echo hello from $CUDA_VISIBLE_DEVICES"])
        j = self.d.wait_state(ok, "COMPLETED")
        self.assertEqual(j["exit_code"], 0)
        self.assertIn(f"job {ok}: started by the test backend", self.d.daemon_log())
        self.assertIn("hello from", self.d.log_text(ok))
        bad = self.d.submit_api(["sh", "-c", "exit 3"], retries=0)
        self.assertEqual(self.d.wait_state(bad, "FAILED")["exit_code"], 3)
        # Running: its node is the backend's name for it; a cancel reaches its processes.
        long = self.d.submit_api(["sleep", "60"])
        j = self.d.wait_job(long, lambda j: j["state"] == "RUNNING" and j["pid"], what="its start")
        self.assertEqual(j["node"], "test")
        pid = j["pid"]
        self.d.cli("cancel", str(long))
        j = self.d.wait_state(long, "CANCELLED")
        self.assertIsNone(j["node"], "ended: on no node")
        self.assertFalse(os.path.exists(f"/proc/{pid}"), "its process was reaped")

    def test_a_booking_and_a_higher_job_preempt_through_the_test_backend(self):
        # A booking of the one GPU from a few seconds on: only a preemptible job may take the
        # GPU meanwhile, and it gives way when the window starts.
        start = time.time() + 4
        st, b = self.d.api("POST", "/api/v1/bookings", {"ngpus": 1, "start": start, "duration": 4, "name": "tb"})
        self.assertEqual(st, 201, b)
        low = self.checkpointed("low")
        mine = self.d.submit_api(["true"], reservation=b["id"])
        m = self.d.wait_state(mine, "COMPLETED", timeout=60)
        self.assertGreaterEqual(m["start_time"], start - 0.05)
        j = self.d.wait_state(low, "COMPLETED", timeout=60)
        self.assertEqual(j["attempt"], 2)
        a1 = j["attempts"][0]
        self.assertEqual(a1["class"], "preempted")
        self.assertIn(f"preempted by booking {b['id']} (", a1["evidence"])
        # The attempt's end is labelled on its own clock (its start plus the monotonic time it
        # ran), the booking job's start on the loop's wall clock: read a moment apart, the two
        # may round a microsecond apart.
        self.assertLessEqual(a1["end_time"], m["start_time"] + 0.001)
        self.assertTrue(self.resumed_from("low").endswith("/ck.low"))
        # A job of a higher priority preempts the same way, through the same table.
        again = self.checkpointed("again")
        high = self.d.submit_api(["true"], priority=5)
        self.d.wait_state(high, "COMPLETED", timeout=60)
        j = self.d.wait_state(again, "COMPLETED", timeout=60)
        self.assertEqual(j["attempts"][0]["class"], "preempted")
        self.assertIn(f"preempted by job {high} (", events_of(j, "preempt")[0]["message"])
        self.assertTrue(self.resumed_from("again").endswith("/ck.again"))

    def test_an_unknown_backend_is_refused_naming_them_all(self):
        why = start_failure("backend = kubernetes\n")
        self.assertIn("backend: invalid value 'kubernetes'", why)
        self.assertIn("test: the tests' backend", why)


if __name__ == "__main__":
    main()

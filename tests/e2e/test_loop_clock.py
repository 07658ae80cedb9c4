"""The daemon reads its clocks once per loop iteration: a job's start label, its monotonic
start, its time limit and its warning all come from the same reading, so the rules on them
hold exactly (lower bounds, not timings): a signal asked for comes no sooner than halfway
through a short limit, and a job stopped at its limit has run its whole limit."""
import os

from gwtest import DaemonTest, events_of, main

# The job's `date` and the daemon's labels are both the wall clock; a clock slewed by NTP
# runs at most 500 ppm off the monotonic one: well under this over seconds.
SLACK = 0.005


class LoopClockTest(DaemonTest):
    extra = ("--time-limit-warn", "2s")

    def test_short_limits_signal_halfway_and_run_their_whole_limit(self):
        """Several jobs started in one pass: each has its own halfway point and whole limit,
        counted from its start label."""
        marks, jids = [], []
        for i in range(3):
            mark = os.path.join(self.d.work, f"usr1-{i}")
            marks.append(mark)
            jids.append(self.d.submit("--time", "2s", "--signal", "USR1", "--", "sh", "-c",
                                      f"trap 'date +%s.%N > {mark}' USR1; while true; do sleep 0.05; done"))
        for jid, mark in zip(jids, marks):
            j = self.d.wait_state(jid, "TIMEOUT", timeout=60)
            with open(mark) as f:
                sent = float(f.read())
            warn = events_of(j, "warn")
            self.assertEqual(len(warn), 1, j["events"])
            self.assertIn("SIGUSR1 sent to its main process", warn[0]["message"])
            self.assertGreaterEqual(sent - j["start_time"], 1.0 - SLACK, f"job {jid}: halfway at the earliest")
            self.assertGreaterEqual(warn[0]["time"] - j["start_time"], 1.0 - SLACK, f"job {jid}: the warning's event")
            self.assertGreaterEqual(j["end_time"] - j["start_time"], 2.0 - SLACK, f"job {jid}: its whole limit")
            self.assertGreater(j["end_time"], sent, f"job {jid}: the signal before the end")

    def test_a_plain_warning_comes_its_notice_before_the_limit(self):
        jid = self.d.submit("--time", "3s", "--", "sleep", "30")
        j = self.d.wait_state(jid, "TIMEOUT", timeout=60)
        warn = events_of(j, "warn")
        self.assertEqual(len(warn), 1, j["events"])
        self.assertGreaterEqual(warn[0]["time"] - j["start_time"], 1.0 - SLACK, "3s limit, 2s notice: 1s in")
        self.assertGreaterEqual(j["end_time"] - j["start_time"], 3.0 - SLACK, "its whole limit")


if __name__ == "__main__":
    main()

"""`gpuward schedule` draws every item of its legend: a short running job and a booking that
starts soon after it on the same GPU share the chart's first column, and the booking, which
covers more of it, used to hide the job (in the legend, nowhere in the drawing)."""
import re
import time

import gwtest


def drawn(chart):
    """The symbols drawn per GPU: {gpu: set of characters}, the lines under a GPU's row
    counted as that GPU's."""
    rows, gpu = {}, None
    for line in chart.splitlines():
        if line.startswith("Legend:"):
            break
        m = re.match(r"GPU (\d+)\s+(\S+)$", line)
        if m:
            gpu = int(m.group(1))
            rows[gpu] = set(m.group(2))
        elif gpu is not None and line.startswith(" " * 8) and line.strip():
            rows[gpu] |= set(line.strip())
    return rows


def legend(chart):
    """{("job"|"booking", id): symbol} from the legend's lines."""
    out = {}
    for m in re.finditer(r"^  (\S)  (job|booking) (\d+)  ", chart, re.M):
        out[(m.group(2), int(m.group(3)))] = m.group(1)
    return out


class ScheduleChartTest(gwtest.DaemonTest):
    gpus = 1

    def test_short_running_job_beside_a_booking_is_drawn(self):
        jid = self.d.submit("--gpus", 1, "--time", "2m", "--name", "short", "--", "sleep", "600")
        self.d.wait_state(jid, "RUNNING")
        st, b = self.d.api("POST", "/api/v1/bookings",
                           {"ngpus": 1, "start": time.time() + 180, "duration": 3600, "name": "after"})
        self.assertEqual(st, 201, b)
        chart = self.d.cli("schedule").stdout
        marks = legend(chart)
        self.assertIn(("job", jid), marks, chart)
        self.assertIn(("booking", b["id"]), marks, chart)
        rows = drawn(chart)
        for item, sym in marks.items():
            self.assertIn(sym, rows[0], f"{item} is in the legend as {sym!r} but not drawn:\n{chart}")
        # The short view (10-minute columns) too.
        chart = self.d.cli("schedule", "--hours", "6").stdout
        rows, marks = drawn(chart), legend(chart)
        self.assertIn(marks[("job", jid)], rows[0], chart)
        self.assertIn(marks[("booking", b["id"])], rows[0], chart)


if __name__ == "__main__":
    gwtest.main()

"""gpuward-sim --export-state: a real daemon's history as a simulator trace, read back by the
simulator's own trace parser and replayed."""
import csv
import io
import json
import os
import subprocess

from gwtest import BUILD, DaemonTest, main

SIM = os.path.join(BUILD, "gpuward-sim")


class SimExportTest(DaemonTest):
    gpus = 2

    def export(self):
        r = subprocess.run([SIM, "--export-state", self.d.state], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_export_and_replay(self):
        done = self.d.submit("--gpus", 1, "--name", "ok", "--", "sh", "-c", "sleep 0.6")
        bug = self.d.submit("--gpus", 2, "--name", "bug", "--", "sh", "-c", "sleep 0.3; exit 3")
        jd = self.d.wait_state(done, "COMPLETED")
        jb = self.d.wait_state(bug, "FAILED")
        hold = self.d.submit("--gpus", 1, "--time", "10m", "--name", "hold", "--", "sh", "-c", "sleep 60")
        self.d.wait_state(hold, "RUNNING")
        self.d.cli("cancel", str(hold))
        jh = self.d.wait_state(hold, "CANCELLED")
        queued = self.d.submit("--gpus", 2, "--name", "queued", "--", "sh", "-c", "sleep 60")
        self.d.wait_state(queued, {"RUNNING", "PENDING"})

        # While the daemon runs: read-only, and the unfinished job is left out.
        text = self.export()
        rows = list(csv.DictReader(line for line in io.StringIO(text) if not line.startswith("#")))
        self.assertIn("# 3 jobs exported; left out: 1 pending or running", text)
        self.assertEqual(len(rows), 3, text)
        by_gpus = {(r["gpus"], r["runtime_s"] != "inf"): r for r in rows}
        ok, failed = by_gpus[("1", True)], by_gpus[("2", False)]
        cancelled = next(r for r in rows if float(r["cancel_at_s"]) >= 0)
        self.assertAlmostEqual(float(ok["runtime_s"]), jd["end_time"] - jd["start_time"], delta=0.01)
        self.assertEqual(failed["fail_class"], "user_error")
        self.assertAlmostEqual(float(failed["fail_at_s"]), jb["end_time"] - jb["start_time"], delta=0.01)
        self.assertAlmostEqual(float(cancelled["cancel_at_s"]), jh["end_time"] - jh["start_time"], delta=0.01)
        self.assertEqual(float(cancelled["time_limit_s"]), 600)
        self.assertEqual(min(float(r["submit_s"]) for r in rows), 0)

        # The simulator reads it back and replays it: the same outcomes.
        trace = os.path.join(self.d.dir, "month.csv")
        with open(trace, "w") as f:
            f.write(text)
        r = subprocess.run([SIM, "--trace", trace, "--gpus", "2", "--policy", "baseline", "--json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        run = json.loads(r.stdout)["runs"][0]
        self.assertEqual((run["submitted"], run["completed"], run["failed"], run["cancelled"]), (3, 1, 1, 1))
        self.assertEqual(run["misclassified"], 0)

    def test_missing_state_is_one_line(self):
        r = subprocess.run([SIM, "--export-state", os.path.join(self.d.dir, "nope")], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("gpuward-sim: --export-state:", r.stderr)
        self.assertEqual(r.stdout, "")


if __name__ == "__main__":
    main()

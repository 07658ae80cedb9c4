#!/usr/bin/env python3
"""What the queue tells is true: a cancel narrowed by state touches only the jobs in that
state (an array's running task is not PENDING); a job waiting on a held one says it waits
for its release; history is ordered by end; array tasks are shown as 8_2; a predicted start is
never in the past: a job that waits for a held one says so in words."""
import json
import os
import subprocess
import time
import unittest

import gwtest


def tasks_of(jobs, array_id):
    return [j for j in jobs if j.get("array_job_id") == array_id]


class FilteredCancelTest(gwtest.DaemonTest):
    gpus = 2

    def test_cancel_pending_leaves_the_arrays_running_task_alone(self):
        aid = self.d.submit("--name", "arr2", "--array", "0-3%1", "--", "sleep", "60")
        running = gwtest.wait_until(
            lambda: [j for j in tasks_of(self.d.api("GET", "/api/v1/jobs")[1]["jobs"], aid) if j["state"] == "RUNNING"],
            timeout=20 * gwtest.SLOW, what="a task running")
        p = self.d.cli("cancel", "--me", "--name", "arr2", "--state", "PENDING", timeout=30)
        self.assertIn(f"Cancelled the waiting tasks of array {aid}", p.stdout)
        task = self.d.job(running[0]["id"])
        self.assertEqual(task["state"], "RUNNING", "a running task is not PENDING: it runs on")
        self.assertFalse(task["reason"] and task["reason"].startswith("stopping"), task["reason"])
        arr = self.d.job(aid)
        self.assertNotIn("PENDING", arr["array_tasks"], "no task waits any more")
        # Once its running task is cancelled too, the array ends: no other task started.
        self.d.cli("cancel", f"{aid}_{running[0]['array_index']}")
        arr = self.d.wait_state(aid, "CANCELLED")
        self.assertIn("3 never ran", arr["reason"])

    def test_cancel_pending_does_not_stop_a_running_job(self):
        jid = self.d.submit("--name", "solo", "--", "sleep", "60")
        self.d.wait_state(jid, "RUNNING")
        st, r = self.d.api("DELETE", f"/api/v1/jobs/{jid}?waiting=1")
        self.assertEqual((st, r.get("field")), (409, "waiting"), r)
        self.assertEqual(self.d.job(jid)["state"], "RUNNING")


class DisplayIdTest(gwtest.DaemonTest):
    gpus = 2

    def test_an_array_task_is_8_2_wherever_a_person_reads_its_id(self):
        aid = self.d.submit("--name", "arr3", "--array", "0-2%1", "--", "sleep", "60")
        task = gwtest.wait_until(
            lambda: next((j for j in tasks_of(self.d.api("GET", "/api/v1/jobs")[1]["jobs"], aid)
                          if j["state"] == "RUNNING"), None), what="a task running")
        shown = f"{aid}_{task['array_index']}"
        self.assertEqual(task["display_id"], shown)
        self.assertEqual(self.d.job(aid)["display_id"], str(aid))
        gpu = task["gpus"][0]
        info = [g for g in self.d.gpu_list() if g["index"] == gpu][0]["job_info"]
        self.assertEqual((info["id"], info["display_id"]), (task["id"], shown))
        row = [r for r in self.d.cli("gpus").stdout.splitlines() if r.split() and r.split()[0] == str(gpu)][0]
        self.assertIn(f" {shown} ", row + " ")
        top = self.d.cli("top", "--once").stdout
        self.assertIn(f"\n{shown} ", top)
        self.assertIn(f'gpuward_gpu_job_info{{gpu="{gpu}",', self.d.metrics())
        self.assertIn(f'job="{task["id"]}",display_id="{shown}"', self.d.metrics())
        self.assertIn(shown, self.d.cli("show", shown).stdout)
        self.d.cli("cancel", str(aid))


class PredictedStartTest(gwtest.DaemonTest):
    gpus = 2

    def predicted(self, jid):
        """The job's prediction once one covered it (GET /jobs/ID asks for one at once)."""
        return gwtest.wait_until(
            lambda: (lambda p: p if not (p["why_none"] or "").startswith("not predicted yet") else None)(
                self.d.job(jid)["training"]["prediction"]),
            what=f"a prediction of job {jid}")

    def test_a_job_after_a_held_one_waits_for_its_release_not_for_a_time(self):
        held = self.d.submit_api(["true"], hold=True)
        after = self.d.submit_api(["true"], after=str(held))
        words = f"after job {held} is released"
        pr = self.predicted(after)
        self.assertIsNone(pr["predicted_start"], "no time: it cannot start before the release")
        self.assertEqual(pr["predicted_wait"], words)
        row = [j for j in self.d.api("GET", "/api/v1/jobs")[1]["jobs"] if j["id"] == after][0]
        self.assertEqual((row["predicted_start"], row["latest_start"], row["predicted_wait"]), (None, None, words))
        line = [r for r in self.d.cli("queue").stdout.splitlines() if r.split()[0] == str(after)][0]
        self.assertIn(words, line)
        self.assertNotIn("by ", line)
        self.assertIn(f"predicted start: {words}", self.d.cli("show", str(after)).stdout)
        # Released, it runs and the one after it follows: the words were about that release.
        self.d.cli("release", str(held))
        self.d.wait_state(after, "COMPLETED")

    def test_a_job_after_a_running_one_has_a_future_start(self):
        first = self.d.submit_api(["sleep", "60"], ngpus=2, time_limit=600)
        self.d.wait_state(first, "RUNNING")
        after = self.d.submit_api(["true"], after=str(first))
        pr = self.predicted(after)
        self.assertGreaterEqual(pr["predicted_start"] or 0, time.time() - 1, pr)
        self.assertIsNone(pr["predicted_wait"])


if __name__ == "__main__":
    gwtest.main()

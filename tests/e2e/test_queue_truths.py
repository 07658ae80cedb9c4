#!/usr/bin/env python3
"""What the queue tells is true: a cancel narrowed by state touches only the jobs in that
state (an array's running task is not PENDING); a job waiting on a held one says it waits
for its release; history is ordered by end; array tasks are shown as 8_2."""
import json
import os
import subprocess
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


if __name__ == "__main__":
    gwtest.main()

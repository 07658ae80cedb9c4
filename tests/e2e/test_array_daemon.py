#!/usr/bin/env python3
"""Job arrays run by gpuwardd: one request makes array job N with tasks N_0..N_k; the array
is one row and one queue entry, and a task becomes a job of its own when it starts.  %N
bounds the tasks running at once; each task sees GPUWARD_ARRAY_* (and SLURM_ARRAY_*); cancel,
wait and show take the array or one task (N_i); a restart keeps everything."""
import json
import os
import shutil
import subprocess
import time
import unittest

import gwtest


def tasks_of(jobs, array_id):
    return [j for j in jobs if j.get("array_job_id") == array_id]


class ArrayDaemonTest(gwtest.DaemonTest):
    gpus = 4

    def outdir(self):
        out = os.path.join(self.d.work, "out")
        os.makedirs(out, exist_ok=True)
        os.chmod(out, 0o777)
        return out

    def queue(self):
        return json.loads(self.d.cli("queue", "--json").stdout)["jobs"]

    def test_a_thousand_tasks_are_one_request_and_one_queue_row(self):
        t0 = time.monotonic()
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"], array="0-999", hold=True))
        took = time.monotonic() - t0
        self.assertEqual(st, 201, r)
        print(f"\n1,000-task array accepted in {took * 1000:.1f} ms", flush=True)
        aid = r["id"]
        jobs = self.queue()
        self.assertEqual([j["id"] for j in jobs], [aid], "the array is one queue entry; no task has a job yet")
        self.assertEqual(jobs[0]["array"], "0-999")
        self.assertEqual(jobs[0]["array_tasks"], {"total": 1000, "PENDING": 1000})
        self.assertEqual(jobs[0]["array_waiting"], f"{aid}_[0-999]")
        out = self.d.cli("queue").stdout
        self.assertIn(f"{aid}_[0-999]", out)
        self.assertEqual(len(out.strip().splitlines()), 2, out)
        expanded = self.d.cli("queue", "--array").stdout.strip().splitlines()
        self.assertEqual(len(expanded), 1001, expanded[:3])
        self.assertTrue(expanded[1].startswith(f"{aid}_0 "), expanded[1])
        self.assertTrue(expanded[-1].startswith(f"{aid}_999 "), expanded[-1])
        # A task that has not started has no job yet: it shows as waiting, with no id.
        st, t = self.d.api("GET", f"/api/v1/jobs/{aid}_500")
        self.assertEqual(st, 200, t)
        self.assertEqual((t["id"], t["array_job_id"], t["array_index"], t["state"]), (None, aid, 500, "HELD"))
        self.assertIn(f"{aid}_500 (task 500 of array {aid})", self.d.cli("show", f"{aid}_500").stdout)
        st, t = self.d.api("GET", f"/api/v1/jobs/{aid}_1000")
        self.assertEqual(st, 404, t)
        self.assertIn(f"no task {aid}_1000", t["error"])

    def test_throttle_is_never_exceeded(self):
        aid = self.d.submit("--array", "0-11%2", "--", "sleep", "0.3")
        most = 0
        deadline = time.monotonic() + 60 * gwtest.SLOW
        while time.monotonic() < deadline:
            jobs = self.queue()
            running = [j for j in tasks_of(jobs, aid) if j["state"] == "RUNNING"]
            most = max(most, len(running))
            self.assertLessEqual(len(running), 2, [j["array_index"] for j in running])
            if not any(j["id"] == aid for j in jobs):
                break
            time.sleep(0.05)
        arr = self.d.wait_state(aid, "COMPLETED")
        self.assertEqual(most, 2, "two ran at once at some point")
        self.assertEqual(arr["array_tasks"], {"total": 12, "COMPLETED": 12})
        self.assertIn("12 of 12 tasks completed", arr["reason"])

    def test_each_task_sees_its_index_and_the_shell_expands_it(self):
        out = self.outdir()
        aid = self.d.submit("--array", "1,3,5-9:2", "--", "sh", "-c",
                            f"env | grep ARRAY_ | sort > {out}/$GPUWARD_ARRAY_INDEX")
        self.d.wait_state(aid, "COMPLETED")
        self.assertEqual(sorted(os.listdir(out), key=int), ["1", "3", "5", "7", "9"])
        with open(os.path.join(out, "7")) as f:
            env = dict(line.strip().split("=", 1) for line in f if "=" in line)
        self.assertEqual(env, {
            "GPUWARD_ARRAY_JOB_ID": str(aid), "GPUWARD_ARRAY_INDEX": "7", "GPUWARD_ARRAY_TASK_COUNT": "5",
            "SLURM_ARRAY_JOB_ID": str(aid), "SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_COUNT": "5",
        })
        task = self.d.job(f"{aid}_7")
        self.assertEqual((task["array_job_id"], task["array_index"], task["state"]), (aid, 7, "COMPLETED"))

    def test_output_takes_the_array_id_and_the_index(self):
        out = self.outdir()
        aid = self.d.submit("--array", "0-2", "--output", f"{out}/sweep-%A-%a.log", "--", "sh", "-c",
                            "echo task $GPUWARD_ARRAY_INDEX")
        self.d.wait_state(aid, "COMPLETED")
        for i in range(3):
            with open(os.path.join(out, f"sweep-{aid}-{i}.log")) as f:
                self.assertEqual(f.read(), f"task {i}\n")

    def test_cancel_the_array_stops_running_tasks_and_starts_no_more(self):
        aid = self.d.submit("--array", "0-9%2", "--", "sleep", "60")
        gwtest.wait_until(lambda: len([j for j in tasks_of(self.queue(), aid) if j["state"] == "RUNNING"]) == 2,
                          timeout=20 * gwtest.SLOW, what="two tasks running")
        p = self.d.cli("cancel", str(aid), check=False)  # waits until its tasks are gone
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"Cancelled job {aid}", p.stdout)
        arr = self.d.job(aid)
        self.assertEqual(arr["state"], "CANCELLED")
        self.assertEqual(arr["array_tasks"], {"total": 10, "CANCELLED": 10})
        self.assertIn("8 never ran", arr["reason"])
        st, jobs = self.d.api("GET", "/api/v1/jobs?state=PENDING,RUNNING,COMPLETED,FAILED,CANCELLED")
        tasks = tasks_of(jobs["jobs"], aid)
        self.assertEqual(sorted(j["array_index"] for j in tasks), [0, 1], "no task started after the cancel")
        self.assertTrue(all(j["state"] == "CANCELLED" for j in tasks), tasks)

    def test_cancel_one_running_and_one_waiting_task(self):
        out = self.outdir()
        aid = self.d.submit("--array", "0-5%1", "--", "sh", "-c",
                            f"touch {out}/$GPUWARD_ARRAY_INDEX; [ $GPUWARD_ARRAY_INDEX = 0 ] && sleep 60; true")
        self.d.wait_state(f"{aid}_0", "RUNNING")
        p = self.d.cli("wait", "--timeout", "1s", f"{aid}_3", check=False)  # waits on a task not started
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(f"job {aid}_3 is still PENDING", p.stderr)
        self.assertIn(f"Cancelled job {aid}_4", self.d.cli("cancel", f"{aid}_4").stdout)
        self.d.cli("cancel", f"{aid}_0")
        arr = self.d.wait_state(aid, {"CANCELLED", "FAILED", "COMPLETED"})
        self.assertEqual(arr["state"], "CANCELLED", arr["reason"])
        self.assertEqual(arr["array_tasks"], {"total": 6, "COMPLETED": 4, "CANCELLED": 2})
        self.assertEqual(sorted(os.listdir(out)), ["0", "1", "2", "3", "5"], "task 4 never ran")
        self.assertIn("before it started", self.d.job(f"{aid}_4")["reason"])
        p = self.d.cli("cancel", f"{aid}_99", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(f"no task {aid}_99", p.stderr)

    def test_wait_waits_for_every_task_and_show_sums_them_up(self):
        aid = self.d.submit("--array", "0-3%2", "--", "sh", "-c", "sleep 0.2; exit $((GPUWARD_ARRAY_INDEX == 2))")
        p = self.d.cli("wait", str(aid), check=False, timeout=60 * gwtest.SLOW)
        self.assertNotEqual(p.returncode, 0, "one task failed")
        self.assertIn(f"Job {aid} FAILED", p.stdout)
        self.assertIn("3 of 4 tasks completed, 1 FAILED", p.stdout)
        st, jobs = self.d.api("GET", "/api/v1/jobs?state=COMPLETED,FAILED")
        self.assertEqual(len(tasks_of(jobs["jobs"], aid)), 4, "wait returned after every task ended")
        show = self.d.cli("show", str(aid)).stdout
        self.assertIn("Array:", show)
        self.assertIn("0-3%2", show)
        self.assertIn("4: 3 COMPLETED, 1 FAILED", show)
        summary = json.loads(self.d.cli("show", "--json", str(aid)).stdout)
        self.assertEqual(summary["array_tasks"], {"total": 4, "COMPLETED": 3, "FAILED": 1})
        task = self.d.cli("show", f"{aid}_2").stdout
        self.assertIn(f"{aid}_2 (task 2 of array {aid})", task)
        self.assertIn("FAILED", task)

    def test_show_names_the_best_task_of_a_training_sweep(self):
        # Each task's run goes to its own runs/detect/sweep* folder, one task at a time (%1):
        # runs of the same name started together race for a folder (Ultralytics looks, then
        # makes it), which a test should not lean on.
        aid = self.d.submit("--array", "1-3%1", "--", gwtest.TRAINER, "epochs=3", "name=sweep", "--epoch-seconds", "0.3")
        arr = self.d.wait_state(aid, "COMPLETED", timeout=60 * gwtest.SLOW)
        best = arr["array_best"]
        self.assertIsNotNone(best, arr)
        self.assertEqual((best["metric"], best["epoch"]), ("mAP50-95", 3), best)
        self.assertIn(best["index"], (1, 2, 3), best)
        self.assertIn(f"task {aid}_{best['index']}, epoch 3", self.d.cli("show", str(aid)).stdout)
        for i in (1, 2, 3):
            self.assertTrue(gwtest.events_of(self.d.job(f"{aid}_{i}"), "best"), f"task {i}'s best is an event")

    def test_restart_mid_array_keeps_every_task(self):
        out = self.outdir()
        aid = self.d.submit("--array", "0-5%2", "--", "sh", "-c",
                            f"echo x >> {out}/$GPUWARD_ARRAY_INDEX; sleep 1")
        gwtest.wait_until(lambda: len([j for j in tasks_of(self.queue(), aid) if j["state"] == "RUNNING"]) == 2,
                          timeout=20 * gwtest.SLOW, what="two tasks running")
        self.d.stop()
        self.d.start()
        arr = self.d.wait_state(aid, "COMPLETED", timeout=60 * gwtest.SLOW)
        self.assertEqual(arr["array_tasks"], {"total": 6, "COMPLETED": 6})
        self.assertEqual(sorted(os.listdir(out)), [str(i) for i in range(6)])
        for i in range(6):
            with open(os.path.join(out, str(i))) as f:
                self.assertEqual(f.read(), "x\n", f"task {i} ran once")

    def test_quota_counts_each_waiting_task_as_a_pending_job(self):
        self.d.cli("admin", "quota", "set", "root", "max_pending_jobs=5")
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"], array="0-5", hold=True))
        self.assertEqual(st, 403, r)
        self.assertEqual(r["field"], "quota", r)
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"], array="0-4", hold=True))
        self.assertEqual(st, 201, r)
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"], hold=True))
        self.assertEqual(st, 403, r)
        self.assertIn("max_pending_jobs", r["error"])

    def test_a_bad_spec_in_the_api_names_the_field(self):
        for spec, why in (("9-3", "array: '9-3': the range ends before it starts"),
                          (5, "array: must be a string"), ("0-10000", "makes more than 10000 tasks")):
            st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"], array=spec))
            self.assertEqual(st, 400, r)
            self.assertEqual(r["field"], "array", r)
            self.assertIn(why, r["error"])
        st, jobs = self.d.api("GET", "/api/v1/jobs")
        self.assertEqual(jobs["jobs"], [], "nothing was queued")


DASHBOARD_CHECK = """
global.window = {}; global.document = { addEventListener() {} };
eval(require('fs').readFileSync(process.argv[1], 'utf8'));
const GW = window.GW;
const jobs = new Map([
  [17, {id: 17, state: 'PENDING', array: '0-49%4', array_tasks: {total: 50, PENDING: 45, RUNNING: 2, COMPLETED: 3}}],
  [18, {id: 18, state: 'RUNNING', array_job_id: 17, array_index: 3}],
  [19, {id: 19, state: 'RUNNING', array_job_id: 17, array_index: 4}],
  [30, {id: 30, state: 'RUNNING'}]]);
console.log(JSON.stringify({rows: GW.foldArrays([...jobs.values()]).map(GW.jobLabel),
                            counts: GW.arrayCounts(jobs.get(17), jobs),
                            task: GW.jobLabel(jobs.get(18))}));
"""


class StoppingTest(gwtest.DaemonTest):
    """A stop takes as long as the job's processes take to end (up to the grace period): until
    then the array, and each of its running tasks, says it is stopping and why, not only once
    it has ended."""
    gpus = 2
    grace = 30

    def test_a_cancelled_array_says_it_is_stopping_until_its_tasks_are_gone(self):
        # Each task takes 3 s to end after SIGTERM, as a trainer saving a checkpoint would.
        out = os.path.join(self.d.work, "ready")
        os.makedirs(out)
        os.chmod(out, 0o777)
        script = f"trap 'sleep 3; exit 0' TERM; touch {out}/$GPUWARD_ARRAY_INDEX; sleep 60 & wait"
        aid = self.d.submit("--array", "0-3%2", "--", "sh", "-c", script)
        running = lambda: [j for j in self.d.api("GET", "/api/v1/jobs")[1]["jobs"]
                           if j.get("array_job_id") == aid and j["state"] == "RUNNING"]
        gwtest.wait_until(lambda: len(os.listdir(out)) == 2, timeout=20 * gwtest.SLOW,
                          what="two tasks running, their trap set")
        st, _ = self.d.api("DELETE", f"/api/v1/jobs/{aid}")
        self.assertLess(st, 300)
        arr = self.d.job(aid)
        self.assertEqual(arr["state"], "PENDING")
        self.assertEqual(arr["reason"], "stopping: cancelled by root")
        tasks = running()
        self.assertEqual(len(tasks), 2, "the tasks are still ending")
        for t in tasks:
            self.assertEqual(t["reason"], "stopping: cancelled by root", t)
        show = self.d.cli("show", str(aid)).stdout
        self.assertIn("PENDING (stopping: cancelled by root)", show)
        queue = self.d.cli("queue").stdout.splitlines()
        self.assertEqual(len([l for l in queue if "RUNNING" in l and l.endswith("(stopping)")]), 2, queue)
        arr = self.d.wait_state(aid, "CANCELLED", timeout=30 * gwtest.SLOW)
        self.assertIn("of 4 tasks completed", arr["reason"])
        self.assertNotIn("stopping", arr["reason"])


class DashboardArrayTest(unittest.TestCase):
    """The dashboard's queue folds an array's waiting tasks on one row with its task counts,
    and gives each running task a row of its own, as `gpuward queue` does (web/app.js, run
    under node with no page: only the functions that decide the rows)."""

    def test_array_is_one_row_with_its_counts(self):
        node = shutil.which("node") or shutil.which("nodejs")
        if not node:
            self.skipTest("node is not installed")
        app = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "web", "app.js")
        out = subprocess.run([node, "-e", DASHBOARD_CHECK, app], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        got = json.loads(out.stdout)
        self.assertEqual(got["rows"], ["17_[0-49%4]", "17_3", "17_4", "30"],
                         "the waiting tasks folded into the array's row, each running task on its own")
        self.assertEqual(got["counts"], "2 running · 45 waiting · 3 completed of 50")
        self.assertEqual(got["task"], "17_3")


if __name__ == "__main__":
    gwtest.main()

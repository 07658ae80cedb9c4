"""Which Ultralytics run is a job's (core/yolo_run.h): a run is credited to a job only on its
own evidence (its own log says where it saves, its command resumes a checkpoint or names the
run), never because it is the newest run next to it, so two jobs in one folder never read
each other's run."""
import os
import time

from gwtest import TRAINER, DaemonTest, events_of, main, wait_until


class EtaTest(DaemonTest):
    """A daemon, and what GET /jobs/{id}/eta says of a job (not a test of its own)."""

    def eta(self, jid):
        st, e = self.d.api("GET", f"/api/v1/jobs/{jid}/eta")
        self.assertEqual(st, 200, e)
        return e


class TwoJobsOneFolderTest(EtaTest):
    gpus = 2

    def test_retried_run_is_its_own_jobs_not_the_neighbours(self):
        """A training program that has written no run yet and `name=crashy`, which crashes in
        its second epoch and is retried, in one folder: the retried run's epochs, ETA and
        checkpoint snapshots are crashy's; the neighbour gets none of them."""
        work = self.d.work
        quiet = self.d.submit_api([TRAINER, "--sleep-forever"], 300)
        self.d.wait_state(quiet, "RUNNING")
        fault = os.path.join(work, "fault-crashy")
        crashy = self.d.submit_api([TRAINER, "epochs=5", "name=crashy", "--epoch-seconds", "2.5",
                                    "--crash-at-epoch", "2", "--fault-once", fault], 300, yolo=True, retries=2)
        csv = os.path.join(work, "runs", "detect", "crashy", "results.csv")
        j = self.d.wait_job(crashy, lambda j: j["attempt"] == 2 and j["state"] == "RUNNING", timeout=60,
                            what="crashy's retry")
        self.assertEqual(j["attempts"][0]["class"], "cuda_error")
        # The retry writes rows into crashy's run: the watch credits them to crashy only.
        e = wait_until(lambda: (lambda e: e if (e.get("epoch") or 0) >= 3 else None)(self.eta(crashy)),
                       timeout=60, what="crashy's epochs from its retried run")
        self.assertTrue(e["results_csv"].endswith("runs/detect/crashy/results.csv"), e)
        q = self.eta(quiet)
        self.assertIsNone(q.get("results_csv"), q)
        self.assertIsNone(q.get("epoch"), q)
        self.assertFalse(q.get("recent_epochs"), q)
        self.assertIsNone(self.d.job(quiet)["eta"])
        j = self.d.wait_state(crashy, "COMPLETED", timeout=90)
        self.assertTrue(os.path.exists(csv))
        self.assertTrue(j["attempts"][1]["resumed_from"].endswith("runs/detect/crashy/weights/last.pt"), j["attempts"])
        self.assertFalse(os.path.exists(os.path.join(work, "runs", "detect", "crashy2")), "no second run")
        snaps = self.d.job(crashy)["training"]["snapshots"]
        self.assertTrue(snaps, "crashy's checkpoints snapshotted as its own")
        st, s = self.d.api("GET", f"/api/v1/jobs/{quiet}/snapshots")
        self.assertFalse(s.get("snapshots"), s)
        q = self.eta(quiet)
        self.assertIsNone(q.get("results_csv"), q)
        self.assertIsNone(q.get("epoch"), q)
        self.d.api("DELETE", f"/api/v1/jobs/{quiet}")
        self.d.wait_state(quiet, "CANCELLED")

    def test_unnamed_runs_go_by_what_each_log_says(self):
        """Two trainings that name no run, in one folder: Ultralytics makes train and train2
        and each says which in its log; each job gets the one its own log names."""
        jobs = []
        for _ in range(2):
            # One after the other: two that start at the same instant may both pick `train`
            # (Ultralytics' increment_path looks, then makes the folder), and then share it.
            jobs.append(self.d.submit_api([TRAINER, "epochs=6", "--epoch-seconds", "1.5"], 300))
            wait_until(lambda: "Logging results to " in self.d.log_text(jobs[-1]), timeout=30,
                       what=f"job {jobs[-1]} to say where it saves")
        found = {}

        def both():  # the path is shown while a job runs: look at both at once
            for jid in jobs:
                found[jid] = found.get(jid) or self.eta(jid).get("results_csv")
            return all(found.values())

        wait_until(both, timeout=60, what="both jobs' runs")
        for jid in jobs:
            self.d.wait_state(jid, "COMPLETED", timeout=60)
            said = [l.split("Logging results to ", 1)[1] for l in self.d.log_text(jid).splitlines()
                    if "Logging results to " in l]
            self.assertEqual(len(said), 1, said)
            run = said[0].replace("\x1b[1m", "").replace("\x1b[0m", "").strip()
            self.assertEqual(found[jid], os.path.join(self.d.work, run, "results.csv"))
            self.assertEqual(len(self.d.job(jid)["training"]["epoch_ends"]), 6, jid)
        self.assertEqual(sorted(os.path.basename(os.path.dirname(f)) for f in found.values()), ["train", "train2"])


class OwnEvidenceOnlyTest(EtaTest):
    """Jobs side by side in one project folder, as YOLO users work: each job's run is the one
    its own log (or command) names, whatever runs the training, and a job with no evidence has
    none, however new the runs next to it."""
    gpus = 2

    def test_a_neighbours_new_run_is_not_credited_to_a_quiet_job(self):
        """A trainer that has written nothing, and a neighbour retried from scratch (no --yolo:
        its retry starts over in crashy2): once the neighbour is gone, crashy2 is still not the
        quiet job's."""
        work = self.d.work
        quiet = self.d.submit_api([TRAINER, "--sleep-forever"], 300)
        self.d.wait_state(quiet, "RUNNING")
        fault = os.path.join(work, "fault-crashy")
        crashy = self.d.submit_api([TRAINER, "epochs=3", "name=crashy", "--epoch-seconds", "1",
                                    "--crash-at-epoch", "2", "--fault-once", fault], 300, retries=1)
        self.d.wait_state(crashy, "COMPLETED", timeout=60)
        self.assertTrue(os.path.isdir(os.path.join(work, "runs", "detect", "crashy2")), "the retry started over")
        # The quiet job's watch looks for its run every sample (1 s): give it several looks
        # at crashy2 with nobody left who could own it.
        time.sleep(3)
        q = self.eta(quiet)
        self.assertIsNone(q.get("results_csv"), q)
        self.assertIsNone(q.get("epoch"), q)
        self.assertFalse(q.get("recent_epochs"), q)
        self.assertTrue(q["why_none"].startswith("no training run found: its log has no"), q)
        self.assertIsNone(self.d.job(quiet)["eta"])
        st, snaps = self.d.api("GET", f"/api/v1/jobs/{quiet}/snapshots")
        self.assertFalse(snaps.get("snapshots"), snaps)
        self.assertIn("no training run found", self.d.cli("eta", str(quiet)).stdout)
        self.d.api("DELETE", f"/api/v1/jobs/{quiet}")
        self.d.wait_state(quiet, "CANCELLED")

    def test_two_trainings_started_together_never_share_a_run(self):
        """Started in the same instant, two unnamed trainings may even race for one folder
        (Ultralytics looks, then makes it): each job is credited the run its own log names,
        and never both the same one."""
        jobs = [self.d.submit_api([TRAINER, "epochs=3", "--epoch-seconds", "1"], 300) for _ in range(2)]
        found = {}

        def ended():
            for jid in jobs:
                csv = self.eta(jid).get("results_csv")
                if csv:
                    found.setdefault(jid, set()).add(csv)
            return all(self.d.job(jid)["state"] == "COMPLETED" for jid in jobs)

        wait_until(ended, timeout=60, what="both trainings to end")
        self.assertTrue(found, "a run was credited")
        for jid, paths in found.items():
            self.assertEqual(len(paths), 1, paths)
            said = [l.split("Logging results to ", 1)[1] for l in self.d.log_text(jid).splitlines()
                    if "Logging results to " in l]
            run = said[-1].replace("\x1b[1m", "").replace("\x1b[0m", "").strip()
            self.assertEqual(paths, {os.path.join(self.d.work, run, "results.csv")})
        if len(found) == 2:
            self.assertNotEqual(found[jobs[0]], found[jobs[1]])

    def test_a_sweep_under_sh_c_is_seen_task_by_task(self):
        """The README's sweep style: each task's shell runs the trainer; its own log says where
        it saves, so each task has its run and epochs, and the array its best task."""
        aid = self.d.submit("--array", "0-2", "--", "sh", "-c",
                            f"{TRAINER} epochs=2 --epoch-seconds 1 name=sweep$GPUWARD_ARRAY_INDEX", cwd=self.d.work)
        seen = {}

        def ended():
            for i in range(3):
                st, e = self.d.api("GET", f"/api/v1/jobs/{aid}_{i}/eta")  # 404 until the task starts
                if st == 200 and e.get("results_csv"):
                    seen[i] = e["results_csv"]
            return self.d.job(aid)["state"] == "COMPLETED"

        wait_until(ended, timeout=60, what="the sweep to end")
        self.assertEqual(sorted(seen), [0, 1, 2], "each task's run seen while it trained")
        for i, csv in seen.items():
            self.assertEqual(csv, os.path.join(self.d.work, "runs", "detect", f"sweep{i}", "results.csv"))
        for i in range(3):
            task = self.d.job(f"{aid}_{i}")
            self.assertEqual(len(task["training"]["epoch_ends"]), 2, task["training"])
            self.assertTrue(events_of(task, "best"), f"task {i}'s best is an event")
        best = self.d.job(aid)["array_best"]
        self.assertIsNotNone(best)
        self.assertEqual(best["epoch"], 2, best)


class ResumeSaidTrulyTest(DaemonTest):
    """A retry is offered its checkpoint; whether it resumed is said from what its run shows at
    its first epoch, never assumed."""
    gpus = 1

    def crash_then_retry(self, name, **kw):
        fault = os.path.join(self.d.work, f"fault-{name}")
        jid = self.d.submit_api([TRAINER, "epochs=3", f"name={name}", "--epoch-seconds", "1",
                                 "--crash-at-epoch", "2", "--fault-once", fault], 300, retries=1, **kw)
        return jid, self.d.wait_state(jid, "COMPLETED", timeout=60)

    def test_a_command_that_ignores_the_checkpoint_started_over(self):
        # No --yolo: the retry is given GPUWARD_RESUME_FROM, which this command never reads.
        jid, j = self.crash_then_retry("ign")
        self.assertTrue(j["attempts"][1]["resumed_from"].endswith("runs/detect/ign/weights/last.pt"), j["attempts"])
        ev = events_of(j, "started_over")
        self.assertEqual(len(ev), 1, j["events"])
        self.assertIn("started over, not resumed: epoch 1 written in another run, ign2", ev[0]["message"])
        self.assertIn("GPUWARD_RESUME_FROM was set, but its command does not read it", ev[0]["message"])
        self.assertFalse(events_of(j, "resumed"), j["events"])
        show = self.d.cli("show", str(jid)).stdout
        self.assertRegex(show, r"offered \S+/runs/detect/ign/weights/last\.pt \(epoch 1\): started over instead")
        self.assertNotIn("resumed from", show)

    def test_an_ultralytics_retry_continued(self):
        jid, j = self.crash_then_retry("cont", yolo=True)
        ev = events_of(j, "resumed")
        self.assertEqual(len(ev), 1, j["events"])
        self.assertEqual(ev[0]["message"], "continued from its checkpoint of epoch 1: epoch 2 written in its run cont")
        self.assertFalse(events_of(j, "started_over"), j["events"])
        self.assertRegex(self.d.cli("show", str(jid)).stdout, r"resumed from \S+/runs/detect/cont/weights/last\.pt \(epoch 1\)\n")

    def test_a_row_past_its_checkpoint_is_set_aside(self):
        """Killed after epoch 2's results.csv row but before its last.pt (Ultralytics writes the
        row first): the retry resumes from last.pt, which holds epoch 1.  Epoch 2's first row is
        set aside beside results.csv, which then reads each epoch once, and the events name the
        checkpoint's epoch 1, not the row's 2."""
        fault = os.path.join(self.d.work, "fault-row")
        jid = self.d.submit_api([TRAINER, "epochs=4", "name=row", "--epoch-seconds", "0.5", "--crash-after-row", "2",
                                 "--fault-once", fault], 300, retries=1, yolo=True)
        j = self.d.wait_state(jid, "COMPLETED", timeout=60)
        run = os.path.join(self.d.work, "runs", "detect", "row")

        def epochs(path):
            with open(path) as f:
                return [int(float(line.split(",")[0])) for line in f.read().splitlines()[1:] if line.strip()]

        self.assertEqual(epochs(os.path.join(run, "results.csv")), [1, 2, 3, 4])
        aside = os.path.join(run, "results.csv.after-epoch-1.gpuward")
        self.assertEqual(epochs(aside), [2])
        with open(aside) as f, open(os.path.join(run, "results.csv")) as g:
            self.assertEqual(f.readline(), g.readline(), "the rows aside keep their header")

        retry = events_of(j, "retry")
        self.assertEqual(len(retry), 1, j["events"])
        self.assertRegex(retry[0]["message"], r"resuming from \S*runs/detect/row/weights/last\.pt\S* \(epoch 1\); "
                                              r"results\.csv's 1 row past it set aside in "
                                              r"results\.csv\.after-epoch-1\.gpuward$")
        ev = events_of(j, "resumed")
        self.assertEqual(len(ev), 1, j["events"])
        # The epoch its first look found written: 2, or a later one when that look came after
        # more than one of these half-second epochs (a loaded machine).
        self.assertRegex(ev[0]["message"], r"^continued from its checkpoint of epoch 1 \(the attempt before reached "
                                           r"epoch 2\): epoch [234] written in its run row$")
        # The attempt line names the checkpoint's own epoch, recorded with the attempt, not the
        # epoch the attempt before reached.
        self.assertRegex(self.d.cli("show", str(jid)).stdout,
                         r"resumed from \S+/runs/detect/row/weights/last\.pt \(epoch 1\)\n")
        a1, a2 = j["attempts"]
        self.assertEqual((a1["epoch"], a1["ckpt_epoch"], a2["ckpt_epoch"]), (2, None, 1), j["attempts"])


class ResumeWaitingTest(DaemonTest):
    """A retry waiting out its backoff is to resume from the epoch its checkpoint holds, read from
    the file when it was queued again."""
    gpus = 1
    extra = ("--retry-backoff", "600")

    def test_a_waiting_retry_names_its_checkpoints_epoch(self):
        # Killed after epoch 2's results.csv row, before its last.pt: the checkpoint holds epoch 1.
        fault = os.path.join(self.d.work, "fault-wait")
        jid = self.d.submit_api([TRAINER, "epochs=4", "name=wait", "--epoch-seconds", "0.5", "--crash-after-row", "2",
                                 "--fault-once", fault], 300, retries=1, yolo=True)
        j = self.d.wait_job(jid, lambda j: j["attempt"] == 2 and j["state"] == "PENDING", 30, "the retry to wait")
        self.assertRegex(self.d.cli("show", str(jid)).stdout,
                         r"will resume from \S+/runs/detect/wait/weights/last\.pt \(epoch 1\)\n")
        self.assertEqual((j["attempts"][0]["epoch"], j["resume_epoch"]), (2, 1), j)
        # Kept with the job: a restarted daemon still knows it (and its resumed event names it).
        self.d.stop()
        self.d.start()
        self.assertEqual(self.d.job(jid)["resume_epoch"], 1)


IDLE, WARN, GRACE, SAMPLE = 3, 1, 1, 1


class NeighbourKeepsNoOneAliveTest(DaemonTest):
    """The idle watch reads a job's progress from its own run only: a stalled job next to a
    training neighbour is reclaimed on its own evidence, not kept by the neighbour's rows."""
    gpus = 2
    config = f"[policy.default]\nidle_timeout = {IDLE}\nwarn = {WARN}\ngrace = {GRACE}\n"

    def test_stalled_job_is_not_kept_by_its_neighbours_rows(self):
        stalled = self.d.submit_api([TRAINER, "--sleep-forever"], 300)
        self.d.wait_state(stalled, "RUNNING")
        busy = self.d.submit_api([TRAINER, "epochs=40", "name=busy", "--epoch-seconds", "0.5"], 300)
        self.d.wait_state(busy, "RUNNING")
        j = self.d.wait_state(stalled, "RECLAIMED", timeout=IDLE + WARN + GRACE + 2 * SAMPLE + 10)
        why = events_of(j, "reclaim")[-1]["message"]  # the reason stays one short line
        self.assertIn("no progress for", why)
        self.assertNotIn("results.csv", why)
        self.assertEqual(self.d.job(busy)["state"], "RUNNING", "the neighbour trains on")
        self.d.api("DELETE", f"/api/v1/jobs/{busy}")
        self.d.wait_state(busy, "CANCELLED")


if __name__ == "__main__":
    main()

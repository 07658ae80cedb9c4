"""Which Ultralytics run is a job's (core/yolo_run.h): a run is credited to a job only on
positive evidence (its command names it, its own log says where it saves, or only it could
have created it), so two jobs in one folder never read each other's run."""
import os

from gwtest import TRAINER, DaemonTest, events_of, main, wait_until


class TwoJobsOneFolderTest(DaemonTest):
    gpus = 2

    def eta(self, jid):
        st, e = self.d.api("GET", f"/api/v1/jobs/{jid}/eta")
        self.assertEqual(st, 200, e)
        return e

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

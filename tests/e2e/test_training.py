"""Training awareness: ETA from results.csv, GPU memory-leak detection and its
restart policy, checkpoint snapshots and restore, with the fake trainer and the fake NVML."""
import hashlib
import os
import subprocess
import time

from gwtest import IS_ROOT, TRAINER, DaemonTest, kinds, main, start_failure, wait_until

NOBODY = 65534


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class TrainingTest(DaemonTest):
    def test_eta_appears_and_is_within_reason(self):
        epochs, secs = 10, 1.5
        jid = self.d.submit_api([TRAINER, f"epochs={epochs}", "name=eta", "--epoch-seconds", str(secs)])
        j = self.d.wait_job(jid, lambda j: j.get("eta"), timeout=30, what="an ETA")
        tr = j["training"]
        self.assertEqual(tr["epochs"], epochs)
        self.assertEqual(tr["epochs_from"], "args.yaml")
        self.assertGreaterEqual(tr["epoch"], 1)
        # Wait for a few more epochs, then judge the estimate against the trainer's pace.
        j = self.d.wait_job(jid, lambda j: (j.get("training") or {}).get("epoch", 0) >= 4, timeout=30,
                            what="epoch 4")
        tr = j["training"]
        left = j["eta"] - time.time()
        expect = (epochs - tr["epoch"]) * secs
        self.assertLess(abs(left - expect), 0.5 * expect + 3, (left, expect, tr))
        self.assertGreater(tr["sec_per_epoch"], secs * 0.7)
        self.assertLess(tr["sec_per_epoch"], secs * 2.5)
        self.assertIsNotNone(tr["error_seconds"])  # 3 epochs timed by now
        # The same in the CLI, the GPU list and /metrics.
        out = self.d.cli("eta", jid).stdout
        self.assertIn("ETA:", out)
        self.assertIn("(epochs from args.yaml)", out)
        self.assertIn("Recent epochs:", out)
        q = self.d.cli("queue").stdout
        self.assertIn("ETA", q.splitlines()[0])
        row = [l for l in q.splitlines() if l.split()[0] == str(jid)][0]
        self.assertRegex(row, r"\b\d+s\b")
        gpus = self.d.gpu_list()
        infos = [g["job_info"] for g in gpus if g["job_info"] and g["job_info"]["id"] == jid]
        self.assertTrue(infos and infos[0]["eta"], infos)
        st, body = self.d.tcp("GET", "/metrics")
        self.assertRegex(body.decode(), rf'gpuward_job_eta_seconds{{job="{jid}",[^}}]*}} [0-9.]+')
        show = self.d.cli("show", jid).stdout
        self.assertRegex(show, rf"epoch \d+/{epochs}\s+ETA \S+")
        self.d.wait_state(jid, "COMPLETED", timeout=60)
        # Finished: no ETA any more.
        self.assertIsNone(self.d.job(jid)["eta"])

    def test_epoch_end_times_kept_after_the_end(self):
        # Watch results.csv as the daemon does: when each row appeared is the file's mtime then.
        epochs = 5
        jid = self.d.submit_api([TRAINER, f"epochs={epochs}", "name=ends", "--epoch-seconds", "2"])
        csv = os.path.join(self.d.work, "runs", "detect", "ends", "results.csv")
        appeared = {}  # rows -> results.csv mtime when the test first saw that many
        deadline = time.time() + 60
        while len(appeared) < epochs and time.time() < deadline:
            try:
                st = os.stat(csv)
                with open(csv) as f:
                    rows = len([l for l in f.read().splitlines()[1:] if l.strip()])
            except FileNotFoundError:
                rows = 0
            if rows and rows not in appeared and os.stat(csv).st_mtime_ns == st.st_mtime_ns:
                appeared[rows] = st.st_mtime_ns / 1e9
            time.sleep(0.02)
        self.assertEqual(sorted(appeared), list(range(1, epochs + 1)), "every row seen")
        j = self.d.wait_state(jid, "COMPLETED", timeout=60)

        def check(j, where):
            ends = j["training"]["epoch_ends"]
            self.assertEqual(len(ends), epochs, (where, ends))
            # Within a sample (1 s): a row the daemon saw at its sample ends at that mtime exactly.
            for k, end in enumerate(ends, start=1):
                self.assertLessEqual(abs(end - appeared[k]), 1.05, (where, k, end, appeared[k]))
            self.assertEqual(ends, sorted(ends), where)
            st, r = self.d.api("GET", f"/api/v1/jobs/{jid}/results")
            self.assertEqual(st, 200, r)
            offs = r["epoch_end_offsets"]
            self.assertEqual(len(offs), epochs, (where, offs))
            for off, end in zip(offs, ends):
                self.assertAlmostEqual(off, end - j["start_time"], delta=0.01)
            st, e = self.d.api("GET", f"/api/v1/jobs/{jid}/eta")
            self.assertEqual(e["epoch_ends"], ends, where)
            return ends

        before = check(j, "finished")
        # Kept in the store: a restarted daemon serves the same times.
        self.d.stop()
        self.d.start()
        after = check(self.d.job(jid), "after a restart")
        self.assertEqual(before, after)

    def test_no_eta_before_the_first_epoch(self):
        jid = self.d.submit_api([TRAINER, "epochs=5", "name=slow", "--epoch-seconds", "30"])
        self.d.wait_state(jid, "RUNNING")
        time.sleep(3)
        j = self.d.job(jid)
        self.assertIsNone(j["eta"])
        st, e = self.d.api("GET", f"/api/v1/jobs/{jid}/eta")
        self.assertEqual(st, 200)
        self.assertIsNone(e["eta"])
        self.assertTrue(e["why_none"], e)
        self.assertIn("ETA:          none", self.d.cli("eta", jid).stdout)

    def test_results_csv_of_each_release_and_task(self):
        """results.csv as Ultralytics releases write it (epochs 0-based up to 8.0.159, fields
        padded to 23 up to 8.3.8, then a time column and no padding) and with each task's
        columns (classify has no mAP, segment and pose two groups): the same epochs and plan,
        and best.pt is labelled with the epoch Ultralytics' fitness for the task picks."""
        epochs = 4
        cases = [("8.0", "detect"), ("8.3", "detect"), ("8.3", "segment"), ("8.1", "classify"), ("8.4", "pose")]
        jobs = {}
        for ver, task in cases:
            jid = self.d.submit_api([TRAINER, f"task={task}", f"epochs={epochs}", f"name={task}{ver}", "--ultralytics",
                                     ver, "--epoch-seconds", "2"])
            jobs[jid] = (ver, task)
        seen = {}  # jid -> its training object once two epochs are done, while it runs
        deadline = time.time() + 90
        while len(seen) < len(jobs) and time.time() < deadline:
            for jid in set(jobs) - set(seen):
                j = self.d.job(jid)
                tr = j.get("training") or {}
                if j["state"] == "RUNNING" and (tr.get("epoch") or 0) >= 2:
                    seen[jid] = tr
                self.assertNotEqual(j["state"], "COMPLETED", (jobs[jid], "ended before it was seen at epoch 2"))
            time.sleep(0.1)
        for jid, case in jobs.items():
            tr = seen[jid]
            self.assertIn(tr["epoch"], (2, 3), (case, tr))
            self.assertEqual((tr["epochs"], tr["epochs_from"]), (epochs, "args.yaml"), (case, tr))
            self.assertTrue(tr["results_csv"].endswith(f"runs/{case[1]}/{case[1]}{case[0]}/results.csv"), tr)
        for jid, case in jobs.items():
            j = self.d.wait_state(jid, "COMPLETED", timeout=60)
            self.assertEqual(len(j["training"]["epoch_ends"]), epochs, (case, j["training"]))
            # The fake's metrics rise every epoch: each best.pt is the newest epoch's, counted
            # from 1 as the log's "N/M" (not results.csv's 0-based epoch of 8.0).
            snaps = self.d.cli_json("snapshots", "--all", jid)["snapshots"]
            for kind in ("best", "last"):
                got = [s["epoch"] for s in snaps if s["kind"] == kind]
                self.assertTrue(got, (case, kind, snaps))
                self.assertNotIn(None, got, (case, kind, "an epoch for each copy"))
                self.assertEqual(got, sorted(got), (case, kind, got))
                self.assertTrue(set(got) <= set(range(1, epochs + 1)), (case, kind, got))

    def test_leaking_job_gets_a_leak_event(self):
        # 2 GPUs, only the first leaks: flagged within leak_epochs + 1 = 4 epochs.
        jid = self.d.submit_api([TRAINER, "epochs=12", "name=leak", "--epoch-seconds", "2", "--mem-mib", "3000",
                               "--leak-mib-per-epoch", "400", "--leak-first-gpu-only"], ngpus=2)
        j = self.d.wait_state(jid, "RUNNING")
        g0, g1 = sorted(j["gpus"])
        leak = wait_until(lambda: self.d.events(jid, "leak"), timeout=40, what="a leak event")
        self.assertEqual(len(leak), 1)
        msg = leak[0]["message"]
        self.assertRegex(msg, rf"^GPU {g0}: baseline \+400 MiB/epoch for \d+ epochs \(GPU {g1} flat\); "
                              r"OOM in ~\d+ epochs / ~\S+; leak_policy warn")
        epoch = self.d.job(jid)["training"]["epoch"]
        self.assertLessEqual(epoch, 5, "flagged within leak_epochs + 1 epochs (one of slack for sampling)")
        tr = self.d.job(jid)["training"]
        self.assertTrue(tr["leak"]["detected"])
        self.assertEqual(tr["leak"]["gpu"], g0)
        self.assertIn("LEAK  GPU", self.d.cli("show", jid).stdout)
        self.assertIn("gpuward: LEAK:", self.d.log_text(jid))
        # Told once, however long it keeps leaking.
        time.sleep(4)
        self.assertEqual(len(self.d.events(jid, "leak")), 1)
        self.assertEqual(self.d.job(jid)["state"], "RUNNING", "warn keeps the job running")

    def test_flat_memory_is_not_a_leak(self):
        jid = self.d.submit_api([TRAINER, "epochs=6", "name=flat", "--epoch-seconds", "1.5"])
        self.d.wait_state(jid, "COMPLETED", timeout=60)
        self.assertEqual(self.d.events(jid, "leak"), [])

    def test_leak_restart_resumes_from_the_checkpoint(self):
        jid = self.d.submit_api([TRAINER, "epochs=7", "name=lr", "--epoch-seconds", "2", "--leak-mib-per-epoch", "500"],
                              yolo=True, leak_policy="restart")
        j = self.d.wait_state(jid, "COMPLETED", timeout=90)
        self.assertEqual(j["leak_policy"], "restart")
        self.assertGreaterEqual(j["attempt"], 2)
        a1 = j["attempts"][0]
        self.assertEqual(a1["class"], "oom")
        self.assertIn("memory leak", a1["evidence"])
        self.assertTrue(j["attempts"][1]["resumed_from"].endswith("runs/detect/lr/weights/last.pt"))
        with open(os.path.join(self.d.work, "runs", "detect", "lr", "results.csv")) as f:
            rows = [int(float(l.split(",")[0])) for l in f.read().splitlines()[1:]]
        self.assertEqual(sorted(set(rows)), list(range(1, 8)))
        self.assertEqual(len(rows), 7, "stopped after a checkpoint: no epoch is done twice")
        self.assertIn("leak", kinds(j))
        self.assertIn("retry", kinds(j))

    def test_restart_needs_a_resumable_run(self):
        # Without --yolo a retry would start from scratch: the policy only warns then.
        jid = self.d.submit_api([TRAINER, "epochs=12", "name=ny", "--epoch-seconds", "1.5", "--leak-mib-per-epoch", "400"],
                              leak_policy="restart")
        leak = wait_until(lambda: self.d.events(jid, "leak"), timeout=40, what="a leak event")
        self.assertIn("cannot resume from a checkpoint", leak[0]["message"])
        time.sleep(4)
        j = self.d.job(jid)
        self.assertEqual(j["state"], "RUNNING")
        self.assertEqual(j["attempt"], 1)

    def test_bad_leak_policy_is_refused(self):
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "leak_policy": "explode"})
        self.assertEqual(st, 400)
        self.assertEqual(r["field"], "leak_policy")
        p = self.d.cli("submit", "--leak-policy", "explode", "--", "true", check=False)
        self.assertEqual(p.returncode, 2)

    def run_as_nobody(self, *extra, epochs=6):
        if not IS_ROOT:
            self.skipTest("needs root to run a job as another user")
        return self.d.submit("--name", "snap", "--", TRAINER, f"epochs={epochs}", "name=snap", "--epoch-seconds", "2.5",
                             *extra, user=NOBODY)

    def test_snapshots_listed_pruned_and_restored_as_the_user(self):
        jid = self.run_as_nobody()
        self.d.wait_state(jid, "COMPLETED", timeout=90)
        snaps = self.d.cli_json("snapshots", jid)["snapshots"]
        self.assertTrue(snaps, "snapshots were taken")
        kinds = {s["kind"] for s in snaps}
        self.assertEqual(kinds, {"best", "last"})
        self.assertLessEqual(len([s for s in snaps if s["kind"] == "last"]), 3, "retention keeps 3 last.pt")
        every = self.d.cli_json("snapshots", "--all", jid)["snapshots"]
        self.assertTrue(any(s["pruned"] for s in every), "older last.pt copies were pruned")
        last = [s for s in snaps if s["kind"] == "last"][-1]
        self.assertGreaterEqual(last["epoch"], 4)
        self.assertIsNotNone(last["metric"])
        table = self.d.cli("snapshots", jid).stdout
        self.assertIn("mAP50-95", table)
        self.assertIn(last["sha256"][:12], table)

        # Restore as the owner: written as the job's user, byte for byte.
        out = os.path.join(self.d.work, "restored.pt")
        p = self.d.cli("restore", jid, "--snapshot", last["seq"], "--to", "restored.pt", user=NOBODY)
        self.assertIn("written to", p.stdout)
        st = os.stat(out)
        self.assertEqual(st.st_uid, NOBODY)
        self.assertEqual(sha256(out), last["sha256"])
        # Not over an existing file without --force; with it, yes.
        p = self.d.cli("restore", jid, "--snapshot", last["seq"], "--to", out, user=NOBODY, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--force", p.stderr)
        self.d.cli("restore", jid, "--snapshot", last["seq"], "--to", out, "--force", user=NOBODY)
        # A directory the user may not write: refused, nothing written (the daemon is root).
        forbidden = os.path.join(self.d.dir, "root-only.pt")
        p = self.d.cli("restore", jid, "--snapshot", last["seq"], "--to", forbidden, user=NOBODY, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("may not write", p.stderr)
        self.assertFalse(os.path.exists(forbidden))
        # Even when an admin asks: it is written as the job's user.
        st_, r = self.d.api("POST", f"/api/v1/jobs/{jid}/restore", {"snapshot": last["seq"], "to": forbidden})
        self.assertEqual(st_, 403, r)
        self.assertFalse(os.path.exists(forbidden))
        # Another user may not restore someone else's snapshots.
        p = self.d.cli("restore", jid, "--snapshot", last["seq"], "--to", "/tmp/x.pt", user=NOBODY - 1, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("only they or an admin", p.stderr)
        # No such snapshot.
        p = self.d.cli("restore", jid, "--snapshot", 999, "--to", "x.pt", user=NOBODY, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no snapshot 999", p.stderr)

    def test_show_lists_snapshots(self):
        jid = self.run_as_nobody(epochs=3)
        self.d.wait_state(jid, "COMPLETED", timeout=60)
        show = self.d.cli("show", jid).stdout
        self.assertRegex(show, r"snapshots: best\.pt epoch \d+ mAP50-95 0\.\d+ \([0-9a-f]{6}")


class ForeignRunTest(DaemonTest):
    """A results.csv someone else writes next to a job is not that job's (reclaim_gather.c's
    rule): no epochs, ETA or results.csv for a job that does not train, nor for a training job
    whose own run has not begun, and none kept once such a job has ended."""
    gpus = 3

    def start_outside_run(self):
        # The same user's trainer run outside gpuward, in the directory the jobs run in.
        csv = os.path.join(self.d.work, "runs", "detect", "other", "results.csv")
        p = subprocess.Popen([TRAINER, "epochs=200", "name=other", "--epoch-seconds", "0.3"], cwd=self.d.work,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        wait_until(lambda: os.path.exists(csv), timeout=20, what="the outside run's results.csv")
        time.sleep(1.5)  # begun well before the jobs: file times get 1 s of slack
        return csv

    def assert_no_training(self, jid):
        e = self.d.api("GET", f"/api/v1/jobs/{jid}/eta")[1]
        self.assertIsNone(e.get("results_csv"), e)
        self.assertIsNone(e.get("epoch"), e)
        self.assertFalse(e.get("epoch_ends"), e)
        self.assertFalse(e.get("recent_epochs"), e)
        self.assertIsNone(self.d.job(jid)["eta"])
        out = self.d.cli("eta", jid).stdout
        self.assertNotRegex(out, r"epoch \d+/")
        self.assertNotIn("Results:", out)
        return e

    def test_sleep_next_to_an_outside_run_has_no_epochs(self):
        csv = self.start_outside_run()
        plain = [self.d.submit_api(["sleep", "30"], 60) for _ in range(2)]   # the audit's two sleep jobs
        yolo = self.d.submit_api(["sleep", "30"], 60, yolo=True)            # trains, but its run has not begun
        jobs = plain + [yolo]
        started = max(self.d.wait_state(jid, "RUNNING")["start_time"] for jid in jobs)
        # The outside run goes on writing rows after the jobs started: each sample looks for one.
        wait_until(lambda: os.stat(csv).st_mtime > started + 2, timeout=20, what="rows after the start")
        time.sleep(2)
        for jid in plain:
            self.assertIn("not a training run", self.assert_no_training(jid)["why_none"])
        self.assertEqual(self.assert_no_training(yolo)["why_none"],
                         'no training run found: its log has no "Logging results to" line yet, and its command '
                         "resumes no checkpoint nor names a run with exist_ok (a run next to it is not taken for "
                         "its own)")
        lines = self.d.cli("queue").stdout.splitlines()
        row = [l for l in lines if l.split()[0] == str(plain[0])][0]
        eta = lines[0].split().index("ETA")  # its place among the header's columns
        self.assertEqual(row.split()[eta], "-", "no ETA in the queue: " + row)
        st, body = self.d.api("GET", f"/api/v1/jobs/{plain[0]}/results")
        self.assertEqual(st, 404, body)
        # Ended: nothing of the other run was recorded as its epochs.
        for jid in jobs:
            self.d.api("DELETE", f"/api/v1/jobs/{jid}")
        for jid in jobs:
            self.d.wait_state(jid, "CANCELLED")
            self.assert_no_training(jid)
            self.assertIsNone(self.d.job(jid)["training"])


class PredictionTest(DaemonTest):
    """Predicted starts of queued jobs (core/predict.c over the daemon's view): one GPU."""
    gpus = 1

    def test_predicted_start_uses_eta_and_similar_jobs(self):
        short = [TRAINER, "epochs=2", "--epoch-seconds", "0.5"]
        past = [self.d.submit_api(short + [f"name=past{i}"]) for i in range(2)]
        runs = []
        for jid in past:
            j = self.d.wait_state(jid, "COMPLETED", timeout=60)
            runs.append(j["end_time"] - j["start_time"])
        # A runs for ~40 s against a 1 h limit: once it has an ETA, what waits behind it starts
        # at that ETA, not at its limit.
        a = self.d.submit_api([TRAINER, "epochs=40", "name=long", "--epoch-seconds", "1"], 3600)
        b = self.d.submit_api(short + ["name=next"], 1800)                 # 2 similar past jobs
        c = self.d.submit_api([TRAINER, "epochs=9", "name=other"], 1200)     # none: its limit
        ja = self.d.wait_job(a, lambda j: j.get("eta"), timeout=30, what="an ETA")
        self.assertLess(ja["eta"], ja["start_time"] + 600)

        def predicted(jid):
            # Predictions are refreshed every 2 s: wait for one made with A's ETA.
            j = self.d.job(jid)
            return j if j.get("predicted_start") and j["predicted_start"] < ja["start_time"] + 600 else None
        jb = wait_until(lambda: predicted(b), what="a prediction")
        jc = self.d.job(c)
        eta = self.d.job(a)["eta"]
        self.assertLess(abs(jb["predicted_start"] - eta), 8, (jb["predicted_start"], eta))
        median = sorted(runs)[0] + (sorted(runs)[1] - sorted(runs)[0]) / 2
        gap = jc["predicted_start"] - jb["predicted_start"]
        self.assertLess(abs(gap - median), 2.5, (gap, runs))
        pr = jb["training"]["prediction"]
        self.assertEqual(pr["runtime_from"], "history")
        self.assertEqual(sorted(pr["similar_jobs"]), sorted(past))
        self.assertEqual(jc["training"]["prediction"]["runtime_from"], "time_limit")
        self.assertEqual(jc["training"]["prediction"]["runtime_seconds"], 1200)
        # The job list carries it too (the queue's START column), only for pending jobs.
        st, lst = self.d.api("GET", "/api/v1/jobs?fields=id,state,predicted_start")
        rows = {j["id"]: j for j in lst["jobs"]}
        self.assertIsNotNone(rows[b]["predicted_start"])
        self.assertIsNone(rows[a]["predicted_start"])
        q = self.d.cli("queue").stdout
        self.assertIn("START", q.splitlines()[0])
        row = [l for l in q.splitlines() if l.split()[0] == str(b)][0]
        self.assertRegex(row, r"~(\d\d-\d\d )?\d\d:\d\d")
        out = self.d.cli("eta", b).stdout
        self.assertIn("the median of 2 similar past jobs", out)
        for jid in past:
            self.assertRegex(out, rf"(?m)^{jid}\s")
        self.assertIn("its time limit (no similar past job", self.d.cli("eta", c).stdout)
        self.assertIn("predicted start ~", self.d.cli("show", b).stdout)
        # The schedule: A ends at its ETA, B and C are drawn where they are predicted.
        st, sch = self.d.api("GET", "/api/v1/schedule?hours=2")
        segs = {(s["kind"], s["id"]): s for s in sch["segments"]}
        self.assertLess(abs(segs[("running", a)]["end"] - eta), 8)
        self.assertLess(abs(segs[("predicted", b)]["start"] - jb["predicted_start"]), 8)
        self.assertLess(abs(segs[("predicted", c)]["start"] - jc["predicted_start"]), 8)
        self.d.api("DELETE", f"/api/v1/jobs/{a}")


class TrainingConfigTest(DaemonTest):
    """Leak thresholds and snapshot retention from the config file."""
    gpus = 2
    config = "leak_mib_per_epoch = 150\nleak_epochs = 2\nsnapshot_keep_last = 2\nsnapshot_cap = 0\n"

    def test_leak_threshold_from_the_config(self):
        # 200 MiB/epoch is under the default 256 but over the configured 150, for 2 epochs.
        jid = self.d.submit_api([TRAINER, "epochs=12", "name=cl", "--epoch-seconds", "1.5", "--mem-mib", "3000",
                               "--leak-mib-per-epoch", "200"])
        leak = wait_until(lambda: self.d.events(jid, "leak"), timeout=40, what="a leak event")
        self.assertRegex(leak[0]["message"], r"baseline \+200 MiB/epoch")
        self.assertLessEqual(self.d.job(jid)["training"]["epoch"], 4, "flagged within leak_epochs + 2 epochs")
        self.d.api("DELETE", f"/api/v1/jobs/{jid}")

    def kept_and_pruned(self, jid):
        every = self.d.cli_json("snapshots", "--all", jid)["snapshots"]
        return [s for s in every if not s["pruned"]], [s for s in every if s["pruned"]]

    @staticmethod
    def snap_file(snap_dir, jid, s):
        epoch = s["epoch"] if s["epoch"] is not None else -1
        return os.path.join(snap_dir, str(jid), f"e{epoch}-{s['kind']}-{s['sha256'][:12]}.pt")

    def test_retention_after_the_end_and_the_size_cap(self):
        jobs = [self.d.submit_api([TRAINER, "epochs=6", f"name=r{i}", "--epoch-seconds", "2.5"]) for i in range(2)]
        for jid in jobs:
            self.d.wait_state(jid, "COMPLETED", timeout=60)
        snap_dir = os.path.join(self.d.state, "snapshots")
        for jid in jobs:
            kept, pruned = self.kept_and_pruned(jid)
            self.assertLessEqual(len([s for s in kept if s["kind"] == "last"]), 2, kept)
            self.assertTrue(any(s["kind"] == "last" for s in pruned), "older last.pt copies were pruned")
            # best.pt too: each epoch's is better, the older ones go by the same count.
            self.assertLessEqual(len([s for s in kept if s["kind"] == "best"]), 2, kept)
            for s in kept:
                self.assertTrue(os.path.exists(self.snap_file(snap_dir, jid, s)), s)
            for s in pruned:
                self.assertFalse(os.path.exists(self.snap_file(snap_dir, jid, s)), s)
        # A cap of 1 KiB: the daemon evicts every copy of both jobs (each job's newest best.pt
        # last, core/snap_retain.h): a cap holds.
        before = {jid: self.kept_and_pruned(jid)[0] for jid in jobs}
        self.d.stop()
        self.d.config = self.config.replace("snapshot_cap = 0", "snapshot_cap = 1K")
        self.d.start()

        def evicted():
            return all(not self.kept_and_pruned(jid)[0] for jid in jobs) or None
        wait_until(evicted, timeout=20, what="the cap's eviction")
        for jid in jobs:
            for s in before[jid]:
                self.assertFalse(os.path.exists(self.snap_file(snap_dir, jid, s)), s)


class ProfileLeakTest(DaemonTest):
    """[policy.NAME] leak_mib_per_epoch / leak_epochs override the global thresholds (256, 3)
    for the jobs under that profile only."""
    gpus = 2
    config = "[policy.hpo]\nleak_mib_per_epoch = 150\nleak_epochs = 2\n"

    def test_profile_thresholds_apply_to_its_jobs_only(self):
        # The same 200 MiB/epoch leak: under the global 256 for the default profile, over hpo's 150.
        argv = [TRAINER, "epochs=14", "--epoch-seconds", "1.5", "--mem-mib", "3000", "--leak-mib-per-epoch", "200"]
        hpo = self.d.submit_api(argv + ["name=hpo"], idle_policy="hpo")
        plain = self.d.submit_api(argv + ["name=plain"])
        leak = wait_until(lambda: self.d.events(hpo, "leak"), timeout=40, what="a leak event under hpo")
        self.assertRegex(leak[0]["message"], r"baseline \+200 MiB/epoch")
        self.assertLessEqual(self.d.job(hpo)["training"]["epoch"], 4, "flagged within leak_epochs + 2 epochs")
        # The default-profile job goes 3 epochs further without a leak event.
        seen = self.d.job(hpo)["training"]["epoch"]
        self.d.wait_job(plain, lambda j: ((j.get("training") or {}).get("epoch") or 0) >= seen + 3, timeout=40,
                        what="3 more epochs of the default-profile job")
        self.assertEqual(self.d.events(plain, "leak"), [])
        for jid in (hpo, plain):
            self.d.api("DELETE", f"/api/v1/jobs/{jid}")

    def test_bad_profile_leak_keys_stop_the_daemon(self):
        for conf, needle in (("[policy.hpo]\nleak_epochs = 1\n", "[policy.hpo] leak_epochs: invalid value '1'"),
                             ("[policy.hpo]\nleak_mib_per_epoch = -5\n", "leak_mib_per_epoch: invalid value")):
            self.assertIn(needle, start_failure(conf))


if __name__ == "__main__":
    main()

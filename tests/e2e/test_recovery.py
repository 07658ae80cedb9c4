"""Automatic recovery: classify failures, retry with backoff, resume from the last checkpoint."""
import os

from gwtest import TRAINER, DaemonTest, events_of, kinds, main, wait_until


class RecoveryTest(DaemonTest):
    def submit_api(self, argv, **kw):
        return self.d.submit_api(argv, time_limit=300, **kw)

    def results_epochs(self, run):
        with open(os.path.join(self.d.work, "runs", "detect", run, "results.csv")) as f:
            return [int(float(line.split(",")[0])) for line in f.read().splitlines()[1:]]

    def test_cuda_error_resumes_from_last_checkpoint(self):
        fault = os.path.join(self.d.work, "fault-once")
        jid = self.submit_api([TRAINER, "epochs=6", "name=exp", "--epoch-seconds", "0.2", "--crash-at-epoch", "3",
                               "--fault-once", fault], yolo=True)
        j = self.d.wait_state(jid, "COMPLETED", timeout=60)
        self.assertEqual(j["attempt"], 2)
        a1, a2 = j["attempts"]
        self.assertEqual(a1["class"], "cuda_error")
        self.assertIn("illegal memory access", a1["evidence"])
        self.assertEqual(a1["epoch"], 2)
        self.assertTrue(a2["resumed_from"].endswith("runs/detect/exp/weights/last.pt"))
        self.assertEqual(self.results_epochs("exp"), [1, 2, 3, 4, 5, 6], "each epoch once, none redone from 0")
        self.assertIn("Resuming training", self.d.log_text(jid))
        st, body, hdr = self.d.api("GET", f"/api/v1/jobs/{jid}/log?attempt=1", raw=True)
        self.assertIn(b"CUDA error", body)
        retry = events_of(j, "retry")
        self.assertEqual(len(retry), 1)
        self.assertIn("cuda_error", retry[0]["message"])
        self.assertIn("resuming from", retry[0]["message"])

    def test_a_finished_run_is_not_trained_again(self):
        """The run finished (both checkpoints stripped), then failed in its final validation:
        the retry must end with Ultralytics' "nothing to resume", in every release.  Since
        8.4.29 a bare `resume` (resume=True) with such a checkpoint starts a new training from
        its weights in a new run directory instead; resume=PATH still reaches the trainer's
        check (ultralytics/engine/model.py train(), engine/trainer.py resume_training())."""
        for ver in ("8.1", "8.4"):
            with self.subTest(ultralytics=ver):
                name = "fin" + ver.replace(".", "")
                fault = os.path.join(self.d.work, f"fault-{name}")
                jid = self.submit_api([TRAINER, "epochs=2", f"name={name}", "--epoch-seconds", "0.2", "--ultralytics", ver,
                                       "--crash-in-final-val", "--fault-once", fault], yolo=True)
                j = self.d.wait_state(jid, ("COMPLETED", "FAILED"), timeout=60)
                self.assertEqual(j["attempts"][0]["class"], "cuda_error")
                self.assertTrue(j["attempts"][1]["resumed_from"].endswith(f"runs/detect/{name}/weights/last.pt"))
                log = self.d.log_text(jid)
                self.assertNotIn("Starting new training instead", log)
                self.assertFalse(os.path.exists(os.path.join(self.d.work, "runs", "detect", name + "2")),
                                 "no second run of the same training")
                self.assertEqual(j["state"], "COMPLETED")
                self.assertIn("nothing to resume", j["reason"])

    def test_retry_never_resumes_another_jobs_run(self):
        """Two runs in one directory: a job that fails before its first checkpoint starts again
        from scratch, never from the newest last.pt there, which is the other job's (resuming it
        would have written into that run)."""
        other = self.submit_api([TRAINER, "epochs=200", "name=other", "--epoch-seconds", "0.3"], yolo=True)
        self.d.wait_state(other, "RUNNING")
        last = os.path.join(self.d.work, "runs", "detect", "other", "weights", "last.pt")
        wait_until(lambda: os.path.exists(last), timeout=30, what="the other run's first checkpoint")
        fault = os.path.join(self.d.work, "fault-once-mine")
        mine = self.submit_api([TRAINER, "epochs=2", "name=mine", "--epoch-seconds", "0.3", "--crash-at-epoch", "1",
                                "--fault-once", fault], yolo=True)
        j = self.d.wait_state(mine, "COMPLETED", timeout=60)
        self.assertGreater(os.stat(last).st_mtime, j["submit_time"], "the other run's checkpoint was there to take")
        self.assertEqual(j["attempt"], 2)
        self.assertEqual(j["attempts"][0]["class"], "cuda_error")
        self.assertIsNone(j["attempts"][1]["resumed_from"], "nothing of its own to resume from")
        self.assertEqual(self.results_epochs("mine2"), [1, 2], "a new run of its own, as yolo names it")
        self.assertEqual(self.d.job(other)["state"], "RUNNING")
        self.d.cli("cancel", other)

    def test_xid_drains_the_gpu_and_the_retry_avoids_it(self):
        fault = os.path.join(self.d.work, "xid-once")
        jid = self.submit_api([TRAINER, "epochs=4", "name=xid", "--epoch-seconds", "0.3", "--xid-at-epoch", "2",
                               "--xid", "79", "--fault-once", fault], yolo=True)
        first = self.d.wait_state(jid, "RUNNING")["gpus"][0]
        j = self.d.wait_state(jid, "COMPLETED", timeout=60)
        self.assertEqual(self.d.gpu_list()[first]["health"], "drained")
        self.assertNotEqual(j["gpus"], [first], "attempt 2 runs on another GPU")
        self.assertIn(j["attempts"][0]["class"], ("gpu_fault", "cuda_error"))
        self.assertEqual(self.results_epochs("xid"), [1, 2, 3, 4])

    def test_user_error_is_not_retried(self):
        jid = self.submit_api(["python3", "-c", "print('epoch 1'); 1/0"])
        j = self.d.wait_state(jid, "FAILED", timeout=30)
        self.assertEqual(j["attempt"], 1)
        self.assertEqual(j["attempts"][0]["class"], "user_error")
        self.assertIn("ZeroDivisionError", j["reason"])
        self.assertNotIn("retry", kinds(j))

    def test_retries_exhausted(self):
        jid = self.submit_api(["sh", "-c", "echo 'RuntimeError: CUDA error: unspecified launch failure' >&2; exit 1"],
                              retries=2)
        j = self.d.wait_state(jid, "FAILED", timeout=60)
        self.assertEqual(j["attempt"], 3)
        self.assertEqual([a["class"] for a in j["attempts"]], ["cuda_error"] * 3)
        self.assertIn("retries exhausted (2/2)", j["reason"])
        self.assertTrue(j["reason"].startswith("cuda_error"), j["reason"])
        # Backoff doubles: 1 s then 2 s in this daemon (--retry-backoff 1).
        t = [a["start_time"] for a in j["attempts"]]
        ends = [a["end_time"] for a in j["attempts"]]
        self.assertGreaterEqual(t[1] - ends[0], 0.9)
        self.assertGreaterEqual(t[2] - ends[1], 1.9)

    def test_crash_loop_stops(self):
        # Crashes in its first epoch every time: no new checkpoint, same epoch → stop early.
        jid = self.submit_api([TRAINER, "epochs=5", "name=loop", "--epoch-seconds", "0.1", "--crash-at-epoch", "1"],
                              yolo=True, retries=5)
        j = self.d.wait_state(jid, "FAILED", timeout=60)
        self.assertLess(j["attempt"], 6)
        self.assertIn("crash loop", j["reason"])

    def test_crash_loop_counts_the_epochs_the_watch_saw(self):
        """A training script that no command names (no `yolo`, no --yolo, no declared progress
        file) crashes during epoch 3 every time: gpuward reads its results.csv all along, so the
        second identical crash is a crash loop, not four attempts until retries run out."""
        jid = self.submit_api([TRAINER, "epochs=6", "name=pyloop", "--epoch-seconds", "0.3", "--crash-at-epoch", "3"],
                              retries=3)
        j = self.d.wait_state(jid, "FAILED", timeout=90)
        self.assertEqual(j["attempt"], 2, j["reason"])
        self.assertEqual([a["epoch"] for a in j["attempts"]], [2, 2])
        self.assertIn("crash loop: attempts 1 and 2 both failed during epoch 3", j["reason"])

    def test_crash_loop_is_seen_across_a_daemon_restart(self):
        """Attempt 2 resumes from attempt 1's checkpoint and crashes at the same epoch without
        a new one: a crash loop, also when the daemon restarted meanwhile (how attempt 1
        ended, its checkpoint included, is read back from its attempt row)."""
        jid = self.submit_api([TRAINER, "epochs=5", "name=loop2", "--epoch-seconds", "2", "--crash-at-epoch", "2"],
                              yolo=True, retries=5)
        self.d.wait_job(jid, lambda j: j["attempt"] == 2 and j["state"] == "RUNNING", timeout=60,
                        what="attempt 2 running")
        self.d.kill9()
        self.d.start()
        j = self.d.wait_state(jid, "FAILED", timeout=60)
        self.assertTrue(j["attempts"][1]["resumed_from"].endswith("runs/detect/loop2/weights/last.pt"))
        self.assertIn("crash loop", j["reason"])
        self.assertEqual(j["attempt"], 2, "stopped after the second crash, not a third attempt")

    def test_generic_job_gets_resume_from(self):
        ckpt_dir = os.path.join(self.d.work, "ckpt")
        os.makedirs(ckpt_dir)
        script = ("if [ -n \"$GPUWARD_RESUME_FROM\" ]; then echo resumed from $GPUWARD_RESUME_FROM; exit 0; fi; "
                  f"echo state > {ckpt_dir}/step-100.bin; "
                  "echo 'RuntimeError: NCCL error: unhandled system error (ncclSystemError)' >&2; exit 1")
        jid = self.submit_api(["sh", "-c", script], checkpoint="ckpt/*.bin")
        j = self.d.wait_state(jid, "COMPLETED", timeout=30)
        self.assertEqual(j["attempts"][0]["class"], "nccl_error")
        self.assertIn(f"resumed from {ckpt_dir}/step-100.bin", self.d.log_text(jid))
        # Not a checkpoint the daemon reads an epoch from: show says so rather than name one.
        self.assertIn(f"offered {ckpt_dir}/step-100.bin (epoch not read from the checkpoint)",
                      self.d.cli("show", str(jid)).stdout)
        self.assertIsNone(j["attempts"][1]["ckpt_epoch"], j["attempts"])

    def test_bad_retry_options_are_refused(self):
        for body, field in (({"retry_on": "gpu_fault,bogus"}, "retry_on"), ({"retries": 101}, "retries"),
                            ({"retries": "3"}, "retries"), ({"health_url": "http://example.com/x"}, "health_url")):
            spec = {"command": ["true"], "cwd": self.d.work}
            spec.update(body)
            st, r = self.d.api("POST", "/api/v1/jobs", spec)
            self.assertEqual((st, r["field"]), (400, field), (body, r))


if __name__ == "__main__":
    main()

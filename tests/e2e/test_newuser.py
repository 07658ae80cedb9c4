"""What a new user tripped on: an idle window that started again with the daemon, a Python
script calling Ultralytics' model.train() that a retry ran from scratch, and a predicted start
that ignored the user's quota."""
import os
import re
import sys
import time

from gwtest import TRAINER, DaemonTest, events_of, main, needs_readoption, wait_until

IDLE, WARN, GRACE = 8, 2, 1


def seconds(text):
    """"1m5s" -> 65 (the evidence's durations)."""
    m = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", text)
    if not m or not text:
        raise AssertionError(f"not a duration: {text!r}")
    return int(m.group(1) or 0) * 60 + int(m.group(2) or 0)


class IdleAcrossRestartTest(DaemonTest):
    """A job idle for most of its idle timeout when the daemon restarts is warned at its
    original deadline, not a full idle timeout after the restart."""
    gpus = 1
    config = f"[policy.default]\nidle_timeout = {IDLE}\nwarn = {WARN}\ngrace = {GRACE}\n"

    def idle_events(self, jid):
        return [e["message"] for e in events_of(self.d.job(jid), "idle")]

    @needs_readoption
    def test_idle_window_survives_a_restart(self):
        jid = self.d.submit("--", TRAINER, "--sleep-forever")  # writes nothing after its start
        self.d.wait_state(jid, "RUNNING")
        self.d.wait_pid(jid)
        start = self.d.job(jid)["start_time"]
        wait_until(lambda: time.time() - start >= IDLE * 0.6, timeout=IDLE, what="most of the idle timeout")
        self.d.stop()  # SIGTERM: the job keeps running
        self.d.start()
        restarted = time.time()
        j = self.d.wait_job(jid, lambda j: events_of(j, "warn"), timeout=IDLE + 10, what="the idle warning")
        warn = events_of(j, "warn")[0]
        idle_for = seconds(re.search(r"WARNING idle for (\w+):", warn["message"]).group(1))
        # The window began before the restart: it is longer than the time since the restart.
        self.assertGreater(idle_for, warn["time"] - restarted + 1, warn["message"])
        self.assertLess(warn["time"] - restarted, IDLE, "warned before a full idle timeout after the restart")
        j = self.d.wait_state(jid, "RECLAIMED", timeout=WARN + GRACE + 10)
        self.assertEqual(len(events_of(j, "warn")), 1, "one warning")
        told = [m for m in self.idle_events(jid) if m.startswith("GPUs idle since ")]
        self.assertEqual(len(told), 1, "the window was recorded once, before the restart")
        self.assertIn("the idle timeout (8s) counts from then, across daemon restarts", told[0])


class WarnedAcrossRestartTest(DaemonTest):
    """A job warned before a restart is not warned again after it: it is stopped at the end of
    the warning it had."""
    gpus = 1
    config = "[policy.default]\nidle_timeout = 4\nwarn = 8\ngrace = 1\n"

    @needs_readoption
    def test_warning_survives_a_restart(self):
        jid = self.d.submit("--", TRAINER, "--sleep-forever")
        self.d.wait_state(jid, "RUNNING")
        self.d.wait_pid(jid)
        self.d.wait_job(jid, lambda j: events_of(j, "warn"), timeout=15, what="the idle warning")
        self.d.stop()
        self.d.start()
        j = self.d.wait_state(jid, "RECLAIMED", timeout=30)
        self.assertEqual(len(events_of(j, "warn")), 1, [e["message"] for e in events_of(j, "warn")])
        self.assertIn("adopt", [e["kind"] for e in j["events"]])


class QuotaPredictionTest(DaemonTest):
    """A job waiting on its user's max_gpus says which limit and which job holds it, and its
    predicted start is not before that job's predicted end."""
    gpus = 2

    def test_quota_wait_names_the_limit_and_the_prediction_respects_it(self):
        st, r = self.d.api("POST", "/api/v1/quota", {"subject": "default", "settings": ["max_gpus=1"]})
        self.assertEqual(st, 200, r)
        a = self.d.submit("--gpus", 1, "--time", "30m", "--", "sleep", "120")
        ja = self.d.wait_state(a, "RUNNING")
        b = self.d.submit("--gpus", 1, "--time", "10m", "--", "true")
        want = f"Quota: max_gpus=1, 1 in use by job {a}"
        j = self.d.wait_job(b, lambda j: j["reason"].startswith("Quota") and j["predicted_start"], timeout=20,
                            what="the quota reason and a prediction")
        # Job a has no ETA: it is predicted to end at its 30 min limit, and b cannot start before.
        self.assertGreaterEqual(j["predicted_start"], ja["start_time"] + 30 * 60 - 1, j)
        self.assertEqual(j["reason"], want)
        queue = self.d.cli("queue").stdout
        self.assertIn(want, queue)
        show = self.d.cli("show", b).stdout
        self.assertNotIn("(in 0s)", show)
        self.d.cli("cancel", b)  # first: cancelling a would let b start and end
        self.d.cli("cancel", a)


class OverdueEtaTest(DaemonTest):
    """A run hung mid-way: its ETA says it is overdue instead of a frozen "18s"."""
    gpus = 1

    def test_hung_run_eta_is_overdue(self):
        jid = self.d.submit("--", TRAINER, "epochs=10", "--epoch-seconds", "0.5", "--hang-after-epoch", "3")
        self.d.wait_state(jid, "RUNNING")
        st, lst = {}, None

        def overdue():
            nonlocal st, lst
            st, lst = self.d.api("GET", "/api/v1/jobs?state=RUNNING&fields=id,eta,eta_overdue")
            return st == 200 and any(j["id"] == jid and j["eta_overdue"] for j in lst["jobs"])
        wait_until(overdue, timeout=20, what="the ETA to be overdue")
        eta = self.d.cli("eta", jid).stdout
        self.assertRegex(eta, r"ETA: +overdue by \w+: the run was due to end ~(\d\d-\d\d )?\d\d:\d\d", eta)
        queue = self.d.cli("queue").stdout
        self.assertIn("overdue", queue)
        self.d.cli("cancel", jid)


# The two lines README.md tells a script calling Ultralytics' Python API to add (the test checks
# that README.md says exactly these, and runs them).
SNIPPET = (
    'model = YOLO(os.environ.get("GPUWARD_RESUME_FROM", "yolov8n.pt"))',
    'model.train(data="coco8.yaml", epochs=6, resume=bool(os.environ.get("GPUWARD_RESUME_FROM")))',
)

# A stand-in for Ultralytics' Python API: YOLO(model).train(**kw) runs the fake trainer with the
# settings `yolo train` would get, so it writes what the fake trainer writes (args.yaml,
# results.csv, weights/last.pt, "Logging results to RUN").  As Ultralytics' Model.train does, a
# truthy resume= resumes the checkpoint the model was loaded from (resume=ckpt_path); everything
# else then comes from that checkpoint.  GW_FAKE_TRAINER_FLAGS: the fake trainer's own flags.
FAKE_ULTRALYTICS = """
import os, subprocess, sys

class YOLO:
    def __init__(self, model="yolov8n.pt"):
        self.ckpt_path = str(model)

    def train(self, **kw):
        if kw.get("resume"):
            args = ["resume=" + self.ckpt_path, "model=" + self.ckpt_path]
        else:
            args = ["model=" + self.ckpt_path] + [f"{k}={v}" for k, v in kw.items() if k != "resume"]
        flags = os.environ.get("GW_FAKE_TRAINER_FLAGS", "").split()
        rc = subprocess.run([os.environ["GW_FAKE_TRAINER"], *args, *flags]).returncode
        if rc:
            sys.exit(rc)  # its traceback is in the log already, as Ultralytics' own would be
"""


class PythonApiResumeTest(DaemonTest):
    """A script calling model.train(), with README's two lines, that crashes once at epoch 3
    (a CUDA error, retried): the retry resumes from its run's last.pt, in the same run folder,
    and results.csv has each epoch once."""
    gpus = 1

    def test_script_resumes_into_the_same_run(self):
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")) as f:
            readme = f.read()
        for line in SNIPPET:
            self.assertIn(line, readme, "README.md shows the lines the test runs")
        lib = os.path.join(self.d.work, "pylib", "ultralytics")
        os.makedirs(lib)
        with open(os.path.join(lib, "__init__.py"), "w") as f:
            f.write(FAKE_ULTRALYTICS)
        with open(os.path.join(self.d.work, "train.py"), "w") as f:
            f.write("import os\n\nfrom ultralytics import YOLO\n\n" + "\n".join(SNIPPET) + "\n")
        once = os.path.join(self.d.work, "crashed-once")
        jid = self.d.submit("--cwd", self.d.work, "--env", f"PYTHONPATH={os.path.dirname(lib)}",
                            "--env", f"GW_FAKE_TRAINER={TRAINER}",
                            "--env", f"GW_FAKE_TRAINER_FLAGS=--epoch-seconds 0.3 --crash-at-epoch 3 --fault-once {once}",
                            "--", sys.executable, "train.py")
        j = self.d.wait_state(jid, {"COMPLETED", "FAILED"}, timeout=60)
        self.assertEqual(j["state"], "COMPLETED", j["reason"])
        self.assertEqual([a["class"] for a in j["attempts"]][:1], ["cuda_error"], j["attempts"])
        self.assertEqual(len(j["attempts"]), 2, "one failed attempt, then the resumed one")
        run = os.path.join(self.d.work, "runs", "detect", "train")
        self.assertEqual(j["attempts"][1]["resumed_from"], os.path.join(run, "weights", "last.pt"))
        self.assertEqual(sorted(os.listdir(os.path.dirname(run))), ["train"], "no new run folder (train2)")
        with open(os.path.join(run, "results.csv")) as f:
            epochs = [int(float(line.split(",")[0])) for line in f.read().splitlines()[1:]]
        self.assertEqual(epochs, [1, 2, 3, 4, 5, 6], "each epoch once, in the same results.csv")


if __name__ == "__main__":
    main()

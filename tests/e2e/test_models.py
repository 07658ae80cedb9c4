"""Publishing a completed job's run as a model: submit --publish NAME (or #GPUWARD --publish)
copies the run's best.pt, results.csv and args.yaml into the admin's model store as NAME/vN/
with a manifest (job, user, commit, the best epoch's metrics, each file's size and sha256);
--publish-if-better METRIC only when it beats the latest version; gpuward models and
GET /api/v1/models... list and serve them; a token of scope models reads them and nothing else."""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import gwtest
import re

from gwtest import TRAINER, events_of

METRIC = "metrics/mAP50-95(B)"


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Models(unittest.TestCase):
    """One daemon with a model store; every test publishes under names of its own."""

    @classmethod
    def setUpClass(cls):
        cls.store_parent = tempfile.mkdtemp(prefix="gw-models-")
        cls.store = os.path.join(cls.store_parent, "store")
        os.mkdir(cls.store, 0o755)
        cls.d = gwtest.Daemon(gpus=2, extra=["--model-store", cls.store]).start()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()
        shutil.rmtree(cls.store_parent, ignore_errors=True)

    def train(self, name, epochs, publish=None, better=None, env=None):
        """A fake Ultralytics run in the work dir that publishes as publish; its job id once
        its publication's event (published or not_published) is there."""
        kw = {"env_extra": env} if env else {}
        if publish:
            kw["publish"] = publish
        if better:
            kw["publish_if_better"] = better
        jid = self.d.submit_api([TRAINER, f"epochs={epochs}", f"name={name}", "--epoch-seconds", "0.1"], **kw)
        self.d.wait_state(jid, "COMPLETED", timeout=60)
        self.d.wait_job(jid, lambda j: events_of(j, "published") or events_of(j, "not_published"), timeout=30,
                        what="the publication's event")
        return jid

    def run_dir(self, name):
        return os.path.join(self.d.work, "runs", "detect", name)

    def test_publish_lists_and_serves_a_whole_version(self):
        sha = "0123456789abcdef0123456789abcdef01234567"
        jid = self.train("pub1", 3, publish="det-a", env=[f"CI_COMMIT_SHA={sha}"])
        ev = self.d.events(jid, "published")
        self.assertEqual(len(ev), 1, self.d.job(jid)["events"])
        self.assertIn("published as det-a v1", ev[0]["message"])
        vdir = os.path.join(self.store, "det-a", "v1")
        self.assertEqual(sorted(os.listdir(vdir)), ["args.yaml", "best.pt", "manifest.json", "results.csv"])
        # Only whole versions in the model's folder: no temporary one left.
        self.assertEqual(os.listdir(os.path.join(self.store, "det-a")), ["v1"])
        with open(os.path.join(vdir, "manifest.json")) as f:
            m = json.load(f)
        self.assertEqual((m["name"], m["version"], m["job"], m["user"], m["commit"]), ("det-a", 1, jid, "root", sha))
        self.assertEqual(m["best_epoch"], 3)  # the fake run improves every epoch
        self.assertEqual(m["metric"]["name"], METRIC)
        self.assertAlmostEqual(m["metric"]["value"], m["metrics"][METRIC])
        self.assertIn("val/box_loss", m["last"])
        run = self.run_dir("pub1")
        src = {"best.pt": os.path.join(run, "weights", "best.pt"), "results.csv": os.path.join(run, "results.csv"),
               "args.yaml": os.path.join(run, "args.yaml")}
        self.assertEqual({f["name"]: f["sha256"] for f in m["files"]}, {k: sha256(p) for k, p in src.items()})
        self.assertEqual({f["name"]: f["size"] for f in m["files"]}, {k: os.path.getsize(p) for k, p in src.items()})
        # The API: the list, the model's versions, the latest manifest, a file streamed.
        st, body = self.d.api("GET", "/api/v1/models")
        self.assertEqual(st, 200, body)
        row = [x for x in body["models"] if x["name"] == "det-a"][0]
        self.assertEqual((row["versions"], row["latest"]["version"], row["latest"]["job"]), (1, 1, jid))
        st, body = self.d.api("GET", "/api/v1/models/det-a")
        self.assertEqual((st, [v["version"] for v in body["versions"]]), (200, [1]), body)
        st, body = self.d.api("GET", "/api/v1/models/det-a/latest")
        self.assertEqual((st, body), (200, m))
        st, data, headers = self.d.api("GET", "/api/v1/models/det-a/v1/best.pt", raw=True)
        self.assertEqual(st, 200)
        self.assertEqual(hashlib.sha256(data).hexdigest(), sha256(src["best.pt"]))
        self.assertEqual(headers.get("Content-Type"), "application/octet-stream")
        # Only the manifest's files; no version, no model: 404 naming what.
        for path, field in (("/api/v1/models/det-a/v1/gpuwardd.log", "file"), ("/api/v1/models/det-a/v9/best.pt",
                                                                                 "version"),
                            ("/api/v1/models/nope/latest", "name"), ("/api/v1/models/det-a/v1/..", "file")):
            st, body = self.d.api("GET", path)
            self.assertEqual((st, body.get("field")), (404, field), (path, body))
        # The CLI.
        out = self.d.cli("models").stdout
        self.assertRegex(out, rf"det-a\s+1\s+v1\s+{jid}\s+root\s+{re.escape(METRIC)}")
        out = self.d.cli("models", "det-a").stdout
        self.assertRegex(out, rf"v1\s+{jid}\s+root")
        self.assertEqual(json.loads(self.d.cli("models", "--json", "det-a").stdout)["versions"][0]["job"], jid)
        p = self.d.cli("models", "../x", check=False)
        self.assertEqual(p.returncode, 2, p.stderr)

    def test_if_better_publishes_only_a_better_run_and_says_the_numbers(self):
        self.train("ib1", 3, publish="det-b")
        worse = self.train("ib2", 2, publish="det-b", better=METRIC)
        msg = self.d.events(worse, "not_published")[0]["message"]
        self.assertRegex(msg, rf"not published as det-b: {re.escape(METRIC)} [0-9.]+ does not beat "
                              r"v1's [0-9.]+")
        self.assertEqual(sorted(os.listdir(os.path.join(self.store, "det-b"))), ["v1"])
        better = self.train("ib3", 5, publish="det-b", better=METRIC)
        ev = self.d.events(better, "published")
        self.assertEqual(len(ev), 1, self.d.job(better)["events"])
        msg = ev[0]["message"]
        self.assertRegex(msg, rf"published as det-b v2 .*{re.escape(METRIC)} [0-9.]+ beats v1's")
        st, body = self.d.api("GET", "/api/v1/models/det-b")
        self.assertEqual([v["job"] for v in body["versions"]][1], better)

    def test_a_run_without_best_pt_publishes_nothing(self):
        script = os.path.join(self.d.work, "train_nobest.sh")
        with open(script, "w") as f:
            f.write(f"#!/bin/sh\n{TRAINER} epochs=2 name=nobest --epoch-seconds 0.1 || exit 1\n"
                    f"rm {self.run_dir('nobest')}/weights/best.pt\n")
        os.chmod(script, 0o755)
        jid = self.d.submit_api([script], publish="det-c")
        self.d.wait_state(jid, "COMPLETED", timeout=60)
        j = self.d.wait_job(jid, lambda j: events_of(j, "not_published"), timeout=30, what="not_published")
        self.assertIn("has no weights/best.pt", events_of(j, "not_published")[0]["message"])
        self.assertFalse(os.path.exists(os.path.join(self.store, "det-c", "v1")))

    def test_directive_and_bad_names(self):
        script = os.path.join(self.d.work, "train_directive.sh")
        with open(script, "w") as f:
            f.write(f"#!/bin/sh\n#GPUWARD --publish det-d\n#GPUWARD --publish-if-better {METRIC}\n"
                    f"exec {TRAINER} epochs=2 name=direct --epoch-seconds 0.1\n")
        os.chmod(script, 0o755)
        jid = self.d.submit(script, cwd=self.d.work)
        j = self.d.job(jid)
        self.assertEqual((j["publish"], j["publish_if_better"]), ("det-d", METRIC))
        self.d.wait_state(jid, "COMPLETED", timeout=60)
        self.d.wait_job(jid, lambda j: events_of(j, "published"), timeout=30, what="published")
        for bad in ("../x", ".hidden", "a/b", "x" * 65):
            p = self.d.cli("submit", "--publish", bad, "--", "true", check=False)
            self.assertEqual(p.returncode, 2, (bad, p.stderr))
            self.assertIn("--publish", p.stderr)
        st, body = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"], publish="ok",
                                                                       publish_if_better="a b"))
        self.assertEqual((st, body.get("field")), (400, "publish_if_better"), body)

    def test_models_token_reads_models_only_and_ci_token_reads_them_too(self):
        models = self.d.cli("token", "create", "--scope", "models", "-q").stdout.strip()
        ci = self.d.cli("token", "create", "--scope", "ci", "-q").stdout.strip()
        for tok in (models, ci):
            st, body = self.d.tcp_json("GET", "/api/v1/models", token=tok)
            self.assertEqual(st, 200, body)
        st, body = self.d.tcp_json("GET", "/api/v1/jobs", token=models)
        self.assertEqual(st, 403, body)
        self.assertIn("scope models", body["error"])
        st, body = self.d.tcp_json("GET", "/api/v1/gpus", token=models)
        self.assertEqual(st, 403, body)


    def test_backup_copies_whole_versions_and_a_daemon_serves_them_restored(self):
        jid = self.train("bk1", 2, publish="det-bk")
        self.assertIn("published as det-bk v1", self.d.events(jid, "published")[0]["message"])
        mdir = os.path.join(self.store, "det-bk")
        # A publication under way: its temporary folder is no version and stays out of the copy.
        os.mkdir(os.path.join(mdir, ".tmp-999999"), 0o700)
        with open(os.path.join(mdir, ".tmp-999999", "best.pt"), "wb") as f:
            f.write(b"half")
        out_dir = tempfile.mkdtemp(prefix="gw-models-bk-")
        self.addCleanup(shutil.rmtree, out_dir, True)
        self.addCleanup(shutil.rmtree, os.path.join(mdir, ".tmp-999999"), True)
        path = os.path.join(out_dir, "copy.db")

        # A file that no longer matches its manifest: no copy of the store, and the answer says which.
        best = os.path.join(mdir, "v1", "best.pt")
        with open(best, "rb") as f:
            good = f.read()
        with open(best, "r+b") as f:
            f.write(b"X")
        try:
            p = self.d.cli("admin", "backup", path, check=False)
        finally:
            with open(best, "wb") as f:
                f.write(good)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("det-bk v1: best.pt does not match its sha256 in manifest.json", p.stderr)
        self.assertFalse(os.path.exists(path + ".models"))
        self.assertEqual([n for n in os.listdir(out_dir) if n.startswith(".gpuward-models-")], [])
        os.unlink(path)  # the database's copy was whole and kept

        # PATH.models there already: refused, naming the field, nothing written.
        os.mkdir(path + ".models")
        st, body = self.d.api("POST", "/api/v1/admin/backup", {"path": path})
        self.assertEqual((st, body.get("field")), (400, "path"), body)
        self.assertFalse(os.path.exists(path))
        os.rmdir(path + ".models")

        out = self.d.cli("admin", "backup", path).stdout
        self.assertIn(f"Model store copied to {path}.models", out)
        copy = path + ".models"
        self.assertEqual(os.stat(copy).st_mode & 0o777, 0o700)
        self.assertEqual(os.listdir(os.path.join(copy, "det-bk")), ["v1"])
        vcopy = os.path.join(copy, "det-bk", "v1")
        self.assertEqual(sorted(os.listdir(vcopy)), ["args.yaml", "best.pt", "manifest.json", "results.csv"])
        self.assertEqual(os.stat(vcopy).st_mode & 0o777, 0o700)
        for name in os.listdir(vcopy):
            self.assertEqual(os.stat(os.path.join(vcopy, name)).st_mode & 0o777,
                             os.stat(os.path.join(mdir, "v1", name)).st_mode & 0o777, name)
        with open(os.path.join(vcopy, "manifest.json")) as f:
            m = json.load(f)
        for f in m["files"]:
            self.assertEqual(sha256(os.path.join(vcopy, f["name"])), f["sha256"], f["name"])

        # Restored as docs/API.md says (the copy becomes the model_store: here a fresh folder, as
        # when the store was lost) under a daemon of its own: it lists the version, serves it whole.
        restored = os.path.join(out_dir, "store")
        shutil.copytree(copy, restored, symlinks=True)
        other = gwtest.Daemon(gpus=1, extra=["--model-store", restored])
        self.addCleanup(other.cleanup)
        os.makedirs(other.state, mode=0o700)
        shutil.copyfile(path, os.path.join(other.state, "gpuward.db"))
        other.start()
        self.assertRegex(other.cli("models").stdout, rf"det-bk\s+1\s+v1\s+{jid}\s+root")
        st, data, _ = other.api("GET", "/api/v1/models/det-bk/v1/best.pt", raw=True)
        self.assertEqual(st, 200)
        self.assertEqual(hashlib.sha256(data).hexdigest(), [f for f in m["files"] if f["name"] == "best.pt"][0]["sha256"])


class FullStore(unittest.TestCase):
    """A model store on a tmpfs too small for the checkpoint: nothing half-written stays."""

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("mounting a tmpfs needs root")
        self.parent = tempfile.mkdtemp(prefix="gw-models-full-")
        self.store = os.path.join(self.parent, "store")
        os.mkdir(self.store, 0o755)
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "gwmodels", self.store],
                           capture_output=True, text=True)
        if p.returncode:
            shutil.rmtree(self.parent, ignore_errors=True)
            self.skipTest(f"cannot mount a tmpfs: {p.stderr.strip()}")
        self.d = None
        try:
            self.d = gwtest.Daemon(gpus=1, extra=["--model-store", self.store]).start()
        except BaseException:
            self.tearDown()
            raise

    def tearDown(self):
        if self.d:
            self.d.cleanup()
        subprocess.run(["umount", self.store], check=False)
        shutil.rmtree(self.parent, ignore_errors=True)

    def test_a_full_disk_leaves_no_version_and_says_why(self):
        jid = self.d.submit_api([TRAINER, "epochs=2", "name=full", "--epoch-seconds", "0.1", "--ckpt-zero-mib", "1"],
                                publish="det-full")
        self.d.wait_state(jid, "COMPLETED", timeout=60)
        j = self.d.wait_job(jid, lambda j: events_of(j, "not_published"), timeout=30, what="not_published")
        self.assertRegex(events_of(j, "not_published")[0]["message"],
                         r"not published as det-full: writing best.pt: No space left on device")
        self.assertEqual(os.listdir(os.path.join(self.store, "det-full")), [])


class NoModelStore(gwtest.DaemonTest):
    gpus = 1

    def test_publish_is_refused_at_submit(self):
        p = self.d.cli("submit", "--publish", "det", "--", "true", check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("model_store = none", p.stderr)
        self.assertEqual(self.d.api("GET", "/api/v1/jobs")[1]["jobs"], [])
        st, body = self.d.api("GET", "/api/v1/models")
        self.assertEqual(st, 404, body)
        self.assertIn("no model store", body["error"])


if __name__ == "__main__":
    gwtest.main()

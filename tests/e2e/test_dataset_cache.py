"""The dataset cache: submit --dataset copies a folder (or a data YAML's path:) into cache_dir
while the job waits, holding no GPU; the job starts only once the copy is verified, with
GPUWARD_DATASET_DIR (and GPUWARD_DATA_YAML) set; a second job reuses the copy, a changed source
copies only what changed, eviction is LRU and never of an entry in use (across a restart too), a
failed copy follows the job's retry policy, copies wait for one of cache_copies slots, and a user
gets no copy of what they may not read."""
import os
import re
import signal
import time
import unittest

from gwtest import IS_ROOT, Daemon, DaemonTest, Users, events_of, main, wait_until


def metric(d, name):
    m = re.search(rf"^{name} (\d+)", d.metrics(), re.M)
    return int(m.group(1)) if m else None


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class NoCacheTest(DaemonTest):
    gpus = 1

    def test_dataset_refused_without_cache_dir(self):
        r = self.d.cli("submit", "--dataset", self.d.work, "--", "true", check=False)
        self.assertEqual(r.returncode, 1, r)
        self.assertIn("cache_dir is none", r.stderr)
        st, _ = self.d.api("GET", "/api/v1/jobs")
        self.assertEqual(st, 200)


class CacheBase(DaemonTest):
    """A daemon with a cache; each test class below adds its own tests only."""
    gpus = 1
    cache_size = "64M"
    copies = 2

    def setUp(self):
        self.d = Daemon(gpus=self.gpus, grace=self.grace)
        self.src = os.path.join(self.d.dir, "nfs")
        self.cache = os.path.join(self.d.dir, "cache")
        os.makedirs(self.src)
        self.d.config = f"cache_dir = {self.cache}\ncache_size = {self.cache_size}\ncache_sources = {self.src}\n"
        self.d.config += f"cache_copies = {self.copies}\n"
        self.d.start()

    def dataset(self, name, files):
        root = os.path.join(self.src, name)
        for rel, text in files.items():
            write(os.path.join(root, rel), text)
        return root

    def run_job(self, dataset, script, state="COMPLETED", opts=()):
        jid = self.d.submit("--dataset", dataset, *opts, "--", "sh", "-c", script)
        return self.d.wait_state(jid, [state], timeout=60)

    def stop_helper(self, jid):
        """The pid of jid's copying helper, stopped (SIGSTOP to its group), or None when it
        ended before it could be stopped."""
        d = self.d
        pid = wait_until(lambda: (lambda m: int(m.group(1)) if m else None)(
            re.search(rf"job {jid}: staging .*helper pid (\d+)", d.daemon_log())), what="the copying helper")
        try:
            os.killpg(pid, signal.SIGSTOP)  # the daemon's helper, in a group of its own
        except ProcessLookupError:
            return None
        return pid


class CacheTest(CacheBase):
    def test_copy_is_used_then_reused_then_updated(self):
        d = self.d
        root = self.dataset("coco", {"a.txt": "alpha\n", "images/b.txt": "beta\n"})
        j1 = self.run_job(root, 'echo "dir=$GPUWARD_DATASET_DIR"; cat "$GPUWARD_DATASET_DIR/images/b.txt"')
        log = d.log_text(j1["id"])
        self.assertIn("beta", log)
        local = re.search(r"dir=(\S+)", log).group(1)
        self.assertTrue(local.startswith(self.cache + "/"), local)
        # Ended, the job names the dataset it asked for; its copy is no longer handed to it.
        self.assertEqual(d.job(j1["id"])["dataset"], {"path": root, "dir": None, "state": None})
        # Started after the copy was verified: its manifest is older than the start.
        manifest = os.path.join(os.path.dirname(local), "manifest")
        self.assertLessEqual(os.stat(manifest).st_mtime, j1["start_time"])
        self.assertEqual((metric(d, "gpuward_cache_misses_total"), metric(d, "gpuward_cache_hits_total")), (1, 0))
        self.assertEqual(metric(d, "gpuward_cache_bytes_copied_total"), 11)
        # The same dataset again: the copy serves, nothing copied.
        j2 = self.run_job(root, 'cat "$GPUWARD_DATASET_DIR/a.txt"')
        self.assertIn("alpha", d.log_text(j2["id"]))
        self.assertEqual((metric(d, "gpuward_cache_misses_total"), metric(d, "gpuward_cache_hits_total")), (1, 1))
        self.assertEqual(metric(d, "gpuward_cache_bytes_copied_total"), 11)
        # One file changed: a new version, and only that file copied.
        write(os.path.join(root, "a.txt"), "ALPHA!\n")
        os.utime(os.path.join(root, "a.txt"), (time.time() + 5, time.time() + 5))
        j3 = self.run_job(root, 'cat "$GPUWARD_DATASET_DIR/a.txt" "$GPUWARD_DATASET_DIR/images/b.txt"')
        self.assertIn("ALPHA!", d.log_text(j3["id"]))
        self.assertIn("beta", d.log_text(j3["id"]))
        self.assertEqual(metric(d, "gpuward_cache_misses_total"), 2)
        self.assertEqual(metric(d, "gpuward_cache_bytes_copied_total"), 11 + 7)
        listing = d.cli_json("cache")
        self.assertEqual([e["source"] for e in listing["entries"]], [root])
        e = listing["entries"][0]
        self.assertEqual((e["files"], e["size"], e["version"], e["in_use"]), (2, 12, 3, False))
        self.assertEqual(e["users"], [j1["user"]])

    def test_data_yaml_points_at_the_copy(self):
        root = self.dataset("y", {"images/train/1.txt": "t\n", "images/val/1.txt": "v\n"})
        yaml = os.path.join(self.src, "y.yaml")
        write(yaml, f"path: {root}\ntrain: images/train\nval: {root}/images/val\nnames:\n  0: person\n")
        j = self.run_job(yaml, 'cat "$GPUWARD_DATA_YAML"; echo "dir=$GPUWARD_DATASET_DIR"')
        log = self.d.log_text(j["id"])
        local = re.search(r"dir=(\S+)", log).group(1)
        self.assertIn(f'path: "{local}"', log)
        self.assertIn(f'val: "{local}/images/val"', log)
        self.assertIn("train: images/train", log)
        self.assertIn("0: person", log)

    def test_staging_holds_no_gpu_and_says_so(self):
        d = self.d
        # A copy of 3,000 files outlasts the log's word that it started, most times; the race
        # is retried, a bounded number of times, on a fresh dataset.
        for attempt in range(3):
            root = self.dataset(f"many{attempt}", {f"f{i:04d}.txt": "x" * 100 for i in range(3000)})
            jid = d.submit("--dataset", root, "--", "true")
            pid = self.stop_helper(jid)
            if pid:
                break
            d.wait_state(jid, ["COMPLETED"], timeout=60)
        self.assertIsNotNone(pid, "the copying helper ended each time before it could be stopped")
        try:
            # Stopped while it copies: the job waits, says why, its GPU stays free for others.
            j = d.wait_job(jid, lambda j: j["reason"].startswith("Staging: "), what="the staging reason")
            self.assertEqual(j["state"], "PENDING")
            self.assertEqual(j["dataset"], {"path": root, "dir": None, "state": "copying"})
            self.assertRegex(j["reason"], r"^Staging: (listing the source as its user|dataset [\d.]+ of [\d.]+ kB, \d+%)$")
            self.assertEqual([g["job"] for g in d.gpu_list()], [None])
        finally:
            os.killpg(pid, signal.SIGCONT)
        self.assertEqual(d.wait_state(jid, ["COMPLETED"], timeout=60)["state"], "COMPLETED")

    def test_refusals_and_failures_are_named(self):
        d = self.d
        r = d.cli("submit", "--dataset", d.work, "--", "true", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not under cache_sources", r.stderr)
        gone = os.path.join(self.src, "gone")
        j = self.run_job(gone, "true", state="FAILED", opts=("--retries", "0"))
        self.assertIn("No such file or directory", j["reason"])
        self.assertIn(gone, j["reason"])
        self.assertIsNone(j["start_time"])


    def test_failed_copy_follows_the_retry_policy(self):
        d = self.d
        # The source gone (its server away): lost, retried as the policy says; here it is back
        # before the retries run out, and the job runs on its copy.
        later = os.path.join(self.src, "later")
        jid = d.submit("--dataset", later, "--retries", "3", "--", "cat", os.path.join(later, "x.txt"))
        j = d.wait_job(jid, lambda j: "retry 1/3" in j["reason"], timeout=30, what="the copy's first retry")
        self.assertRegex(j["reason"], r"^Staging: copy failed \(source .*later: No such file or directory\); "
                                      r"retry 1/3 in \d+s$")
        self.assertEqual((j["state"], j["start_time"], j["dataset"]["state"]), ("PENDING", None, "retrying"))
        self.dataset("later", {"x.txt": "back\n"})
        j = d.wait_state(jid, ["COMPLETED"], timeout=60)
        self.assertIn("back", d.log_text(jid))
        self.assertIn("copy retry 1/3", events_of(d.job(jid), "dataset")[0]["message"])
        # Still gone after every retry: failed, saying so.
        j = self.run_job(os.path.join(self.src, "never"), "true", state="FAILED", opts=("--retries", "1"))
        self.assertIn("No such file or directory", j["reason"])
        self.assertIn("retries exhausted (1/1)", j["reason"])
        # The user's to fix (a data YAML without path:): never retried, whatever the policy.
        yaml = os.path.join(self.src, "nopath.yaml")
        write(yaml, "train: images/train\n")
        j = self.run_job(yaml, "true", state="FAILED", opts=("--retries", "3"))
        self.assertIn("path:", j["reason"])
        self.assertEqual(events_of(d.job(j["id"]), "dataset")[-1]["message"], j["reason"])
        self.assertEqual(len(events_of(d.job(j["id"]), "dataset")), 1, "not retried")


class EvictionTest(CacheBase):
    cache_size = "1M"

    def test_lru_eviction_never_takes_an_entry_in_use(self):
        d = self.d
        big = "x" * 600_000
        a = self.dataset("a", {"a.bin": big})
        b = self.dataset("b", {"b.bin": big})
        c = self.dataset("c", {"c.bin": big})
        self.run_job(a, "true")
        # a is not in use any more: it goes for b.
        running = d.submit("--dataset", b, "--", "sleep", "300")
        d.wait_state(running, ["RUNNING"], timeout=60)
        self.assertEqual(metric(d, "gpuward_cache_evictions_total"), 1)
        # b is in use by a running job: c cannot have its room.
        j = self.run_job(c, "true", state="FAILED", opts=("--retries", "0"))
        self.assertIn("out of space", j["reason"])
        self.assertEqual(metric(d, "gpuward_cache_evictions_total"), 1)
        self.assertEqual([e["source"] for e in d.cli_json("cache")["entries"]], [b])

    def test_restart_keeps_pins_last_use_and_users(self):
        d = self.d
        big = "x" * 600_000
        a = self.dataset("a", {"a.bin": big})
        b = self.dataset("b", {"b.bin": big})
        running = d.submit("--dataset", a, "--", "sh", "-c", 'echo "dir=$GPUWARD_DATASET_DIR"; exec sleep 300')
        d.wait_state(running, ["RUNNING"], timeout=60)
        local = wait_until(lambda: re.search(r"dir=(\S+)", d.log_text(running)), what="the job's copy").group(1)
        before = d.cli_json("cache")["entries"]
        d.stop()  # SIGTERM: the job runs on, reading its copy
        d.start()
        after = d.cli_json("cache")["entries"]
        self.assertEqual([(e["source"], e["users"], e["last_use"], e["in_use"]) for e in after],
                         [(e["source"], e["users"], e["last_use"], True) for e in before])
        self.assertEqual(d.job(running)["dataset"], {"path": a, "dir": local, "state": "ready"})
        self.assertIn(f"{local}", d.cli("show", str(running)).stdout)
        # The running job's entry is still pinned: b has no room, a stays where the job reads it.
        j = self.run_job(b, "true", state="FAILED", opts=("--retries", "0"))
        self.assertIn("out of space", j["reason"])
        self.assertTrue(os.path.exists(os.path.join(local, "a.bin")))
        self.assertEqual(metric(d, "gpuward_cache_evictions_total"), 0)


class RestageTest(CacheBase):
    cache_size = "1M"
    gpus = 2

    def test_a_restage_counts_only_what_changed(self):
        d = self.d
        a = self.dataset("a", {"a.bin": "x" * 600_000, "small.txt": "one\n"})
        # In use by a running job, a's copy (0.6 MB of the 1 MB cache) stays; a second job of
        # the same, unchanged dataset needs no room: its files are linked, not copied.
        running = d.submit("--dataset", a, "--", "sleep", "300")
        d.wait_state(running, ["RUNNING"], timeout=60)
        self.run_job(a, 'test "$(cat "$GPUWARD_DATASET_DIR/small.txt")" = one')
        # One small file changed: only it is copied.
        write(os.path.join(a, "small.txt"), "two\n")
        self.run_job(a, 'test "$(cat "$GPUWARD_DATASET_DIR/small.txt")" = two')
        self.assertEqual(metric(d, "gpuward_cache_bytes_copied_total"), 600_004 + 4)
        # The big file changed while the first version is still in use: no room for its copy,
        # and the reason says how much it needed.
        write(os.path.join(a, "a.bin"), "y" * 600_000)
        j = self.run_job(a, "true", state="FAILED", opts=("--retries", "0"))
        self.assertRegex(j["reason"], r"out of space: it needs 0\.6 MB and cache_size is 1\.0 MB")
        self.assertEqual(metric(d, "gpuward_cache_evictions_total"), 0)


class CopySlotTest(CacheBase):
    copies = 1

    def test_copies_beyond_cache_copies_wait_for_a_slot(self):
        d = self.d
        for attempt in range(3):
            big = self.dataset(f"many{attempt}", {f"f{i:04d}.txt": "x" * 100 for i in range(3000)})
            first = d.submit("--dataset", big, "--", "true")
            pid = self.stop_helper(first)
            if pid:
                break
            d.wait_state(first, ["COMPLETED"], timeout=60)
        self.assertIsNotNone(pid, "the copying helper ended each time before it could be stopped")
        small = self.dataset("small", {"s.txt": "s\n"})
        try:
            second = d.submit("--dataset", small, "--", "cat", os.path.join(small, "s.txt"))
            j = d.wait_job(second, lambda j: j["reason"].startswith("Staging"), what="the second job's reason")
            self.assertEqual(j["reason"], "Staging: waiting for a copy slot")
            self.assertEqual(j["dataset"]["state"], "waiting")
        finally:
            os.killpg(pid, signal.SIGCONT)
        for jid in (first, second):
            self.assertEqual(d.wait_state(jid, ["COMPLETED"], timeout=60)["state"], "COMPLETED")


@unittest.skipUnless(IS_ROOT, "needs root: the daemon reads as each user, and two users are made")
class CrossUserTest(CacheBase):
    @classmethod
    def setUpClass(cls):
        cls.users = Users.for_class(cls, prefix="gwds", owner="own", other="oth")

    @classmethod
    def tearDownClass(cls):
        cls.users.remove_all()

    def test_a_user_gets_no_copy_of_what_they_may_not_read(self):
        d = self.d
        root = self.dataset("private", {"p.txt": "secret\n"})
        for dirpath, _, files in os.walk(root):
            for name in [dirpath] + [os.path.join(dirpath, f) for f in files]:
                os.chown(name, self.owner.pw_uid, self.owner.pw_gid)
        os.chmod(os.path.join(root, "p.txt"), 0o600)
        # Copied for its owner first: the cache has it, and still the other user gets nothing.
        mine = d.cli("submit", "--dataset", root, "--", "cat", os.path.join(root, "p.txt"),
                     user=self.owner.pw_uid).stdout
        mine = int(re.search(r"(\d+)", mine).group(1))
        d.wait_state(mine, ["COMPLETED"], timeout=60)
        out = d.cli("submit", "--dataset", root, "--retries", "3", "--", "true", user=self.other.pw_uid).stdout
        theirs = int(re.search(r"(\d+)", out).group(1))
        j = d.wait_state(theirs, ["FAILED"], timeout=60)
        self.assertIn(f"cannot read {root}/p.txt: Permission denied", j["reason"])
        self.assertIsNone(j["start_time"])
        self.assertEqual(len(events_of(d.job(theirs), "dataset")), 1, "a user error is not retried")
        self.assertEqual([e["users"] for e in d.cli_json("cache")["entries"]], [[self.owner.pw_name]])


if __name__ == "__main__":
    main()

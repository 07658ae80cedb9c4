"""The dataset cache: submit --dataset copies a folder (or a data YAML's path:) into cache_dir
while the job waits, holding no GPU; the job starts only once the copy is verified, with
GPUWARD_DATASET_DIR (and GPUWARD_DATA_YAML) set; a second job reuses the copy, a changed source
copies only what changed, eviction is LRU and never of an entry in use, failures fail the job
with the reason."""
import os
import re
import signal
import time

from gwtest import Daemon, DaemonTest, main, wait_until


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


class CacheTest(DaemonTest):
    gpus = 1
    cache_size = "64M"

    def setUp(self):
        self.d = Daemon(gpus=self.gpus, grace=self.grace)
        self.src = os.path.join(self.d.dir, "nfs")
        self.cache = os.path.join(self.d.dir, "cache")
        os.makedirs(self.src)
        self.d.config = f"cache_dir = {self.cache}\ncache_size = {self.cache_size}\ncache_sources = {self.src}\n"
        self.d.start()

    def dataset(self, name, files):
        root = os.path.join(self.src, name)
        for rel, text in files.items():
            write(os.path.join(root, rel), text)
        return root

    def run_job(self, dataset, script, state="COMPLETED"):
        jid = self.d.submit("--dataset", dataset, "--", "sh", "-c", script)
        return self.d.wait_state(jid, [state], timeout=60)

    def test_copy_is_used_then_reused_then_updated(self):
        d = self.d
        root = self.dataset("coco", {"a.txt": "alpha\n", "images/b.txt": "beta\n"})
        j1 = self.run_job(root, 'echo "dir=$GPUWARD_DATASET_DIR"; cat "$GPUWARD_DATASET_DIR/images/b.txt"')
        log = d.log_text(j1["id"])
        self.assertIn("beta", log)
        local = re.search(r"dir=(\S+)", log).group(1)
        self.assertTrue(local.startswith(self.cache + "/"), local)
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
        j = self.run_job(gone, "true", state="FAILED")
        self.assertIn("No such file or directory", j["reason"])
        self.assertIn(gone, j["reason"])
        self.assertIsNone(j["start_time"])


class EvictionTest(CacheTest):
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
        j = self.run_job(c, "true", state="FAILED")
        self.assertIn("out of space", j["reason"])
        self.assertEqual(metric(d, "gpuward_cache_evictions_total"), 1)
        self.assertEqual([e["source"] for e in d.cli_json("cache")["entries"]], [b])


if __name__ == "__main__":
    main()

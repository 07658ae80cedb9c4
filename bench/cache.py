#!/usr/bin/env python3
"""The dataset cache against a slow source: time from submit to a job's first epoch, and the
GPU-seconds the job held, for three cases:

  nocache  the job reads every file of the dataset from the slow source itself;
  cold     `submit --dataset`: the daemon copies the dataset into cache_dir while the job
           waits holding no GPU, then the job reads the local copy;
  warm     a second job with the same dataset: the copy is reused (the daemon's reader still
           opens every source file as the job's user, see docs/API.md "Datasets").

This machine has no NFS server and no dm-delay, so the slow source is modelled by
bench/slowopen.c, an LD_PRELOAD library built here with cc: each open()/openat() of a path
under the dataset's folder sleeps --usec first, a network filesystem's per-file round trip.
It models per-file latency, not bandwidth: bytes read after the open come at local speed.
The daemon runs with the preload (its copying helper and the reader it forks are forks of
gpuwardd, so they inherit it; the daemon's other opens are not under the prefix), and so does
the job's reader in all three cases (in cold and warm its files are under cache_dir, not
delayed).

A daemon of the e2e harness (simulated GPUs, cache_dir in its temp dir, loopback only) runs
the three jobs one after another, each a 1-GPU job that reads every file once per epoch
(--epochs) and prints "epoch N" after each.  One JSON line per case and round, then a
Markdown table of the medians.

    python3 bench/cache.py [--build build] [--files 10000] [--size 4096] [--usec 2000] [--epochs 2] [--rounds 1]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# The job: reads every file once per epoch (listing is not delayed: opendir's open is libc's
# own) and says when each epoch ended.  A network filesystem's close-to-open consistency makes
# each open a round trip again in every epoch, as the preload does.
READER = r"""
import os, sys, time
for epoch in range(1, int(sys.argv[2]) + 1):
    n = 0
    for dirpath, _, names in os.walk(sys.argv[1]):
        for name in names:
            with open(os.path.join(dirpath, name), "rb") as f:
                n += len(f.read())
    print(f"epoch {epoch} at {time.time():.6f} read {n} bytes", flush=True)
"""


def build_preload(out_dir):
    so = os.path.join(out_dir, "slowopen.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", so, os.path.join(HERE, "slowopen.c"), "-ldl"], check=True)
    return so


def make_dataset(root, files, size):
    """files files of size bytes, 1,000 to a folder, as a training set is laid out."""
    blob = os.urandom(size)
    for i in range(files):
        d = os.path.join(root, f"part{i // 1000:03d}")
        if i % 1000 == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"img{i:06d}.jpg"), "wb") as f:
            f.write(blob)


def run_case(d, name, src, preload_env, reader, epochs, dataset):
    target = src if not dataset else '"$GPUWARD_DATASET_DIR"'
    script = f"exec env {preload_env} {sys.executable} {reader} {target} {epochs}"
    opts = ["--dataset", src] if dataset else []
    t0 = time.time()
    jid = d.submit(*opts, "--", "sh", "-c", script)
    j = d.wait_state(jid, ["COMPLETED", "FAILED", "CANCELLED"], timeout=3600)
    log = d.log_text(jid)
    m = re.search(r"epoch 1 at ([\d.]+) read (\d+) bytes", log)
    if j["state"] != "COMPLETED" or not m:
        raise SystemExit(f"{name}: job {jid} {j['state']}: {log[-2000:]}\n{d.daemon_log()[-2000:]}")
    held = len(j["gpus"] or [0]) * (j["end_time"] - j["start_time"])
    return {"case": name, "job": jid, "to_start_s": round(j["start_time"] - t0, 3),
            "to_first_epoch_s": round(float(m.group(1)) - t0, 3), "to_end_s": round(j["end_time"] - t0, 3),
            "gpu_seconds": round(held, 3), "bytes": int(m.group(2))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--usec", type=int, default=2000, help="delay of each open under the source")
    ap.add_argument("--epochs", type=int, default=2, help="epochs each job reads the dataset")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--tmp", default="/tmp", help="where the daemon's temp dir (source, cache, state) goes")
    a = ap.parse_args()
    if not (1 <= a.files <= 1000000 and 1 <= a.size <= 1 << 20 and 0 <= a.usec <= 1000000 and 1 <= a.rounds <= 20
            and 1 <= a.epochs <= 100):
        ap.error("--files 1..1000000, --size 1..1048576, --usec 0..1000000, --rounds 1..20, --epochs 1..100")

    os.environ["GW_BUILD_DIR"] = os.path.abspath(a.build)
    tempfile.tempdir = a.tmp
    sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
    import gwtest

    load = os.getloadavg()
    results = []
    for rnd in range(a.rounds):
        d = gwtest.Daemon(gpus=1)
        src = os.path.join(d.dir, "nfs")
        cache = os.path.join(d.dir, "cache")
        make_dataset(os.path.join(src, "train"), a.files, a.size)
        dataset = os.path.join(src, "train")
        so = build_preload(d.dir)
        env = {"LD_PRELOAD": so, "SLOWOPEN_PREFIX": src, "SLOWOPEN_USEC": str(a.usec)}
        preload_env = " ".join(f"{k}={v}" for k, v in env.items())
        reader = os.path.join(d.work, "reader.py")
        with open(reader, "w") as f:
            f.write(READER)
        need = a.files * (a.size + 4096) * 2 + (64 << 20)
        d.config = f"cache_dir = {cache}\ncache_size = {need}\ncache_sources = {src}\ncache_copies = 2\n"
        d.env = env
        try:
            d.start()
            for name, cached in (("nocache", False), ("cold", True), ("warm", True)):
                r = run_case(d, name, dataset, preload_env, reader, a.epochs, cached)
                r.update(round=rnd, files=a.files, size=a.size, usec=a.usec)
                print(json.dumps(r), flush=True)
                results.append(r)
        finally:
            d.cleanup()

    print(f"\n{a.files} files of {a.size} B, {a.usec} us per open under the source, {a.epochs} epoch(s) per job, "
          f"{a.rounds} round(s), "
          f"load average before {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n")
    print("| case | submit → job start, no GPU held (s) | submit → first epoch (s) | submit → job end (s) "
          "| GPU-seconds held |")
    print("|---|---:|---:|---:|---:|")
    for name in ("nocache", "cold", "warm"):
        rs = [r for r in results if r["case"] == name]
        med = lambda k: statistics.median(r[k] for r in rs)  # noqa: E731
        print(f"| {name} | {med('to_start_s'):.2f} | {med('to_first_epoch_s'):.2f} | {med('to_end_s'):.2f} | "
              f"{med('gpu_seconds'):.2f} |")


if __name__ == "__main__":
    main()

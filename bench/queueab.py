#!/usr/bin/env python3
"""`gpuward queue` and the daemon's RSS with 10,000 pending jobs: two builds, runs alternating.

Each round starts each build's daemon in turn (a 4-GPU job holding every GPU, then N
submissions by bench/apiload.c), times ten `gpuward queue` with that build's CLI, reads the
daemon's VmRSS before and after those lists, and stops it; the builds take turns going first.
The RSS before is what the pending jobs hold; after, what the lists' replies left in the heap.

    python3 bench/queueab.py --old OLD_BUILD --new build --rounds 2
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def one(build, n):
    """(queue p50 ms, RSS KiB before the lists, RSS KiB after) for one daemon of build, in a process of its own: the test
    harness takes its paths from GW_BUILD_DIR when it is imported."""
    code = f"""
import json, os, statistics, subprocess, sys, time
sys.path.insert(0, {os.path.join(HERE, '..', 'tests', 'e2e')!r})
import gwtest
d = gwtest.Daemon(gpus=4).start()
try:
    job = lambda cmd, **kw: dict({{"command": cmd, "cwd": d.work, "ngpus": 1, "time_limit": 3600}}, **kw)
    st, r = d.api("POST", "/api/v1/jobs", job(["sleep", "3600"], ngpus=4))
    d.wait_state(r["id"], "RUNNING")
    subprocess.run([os.path.join({build!r}, "bench", "gw-bench-apiload"), d.socket, "{n}",
                    json.dumps(job(["true"]))], capture_output=True, check=True)
    rss = lambda: int([l for l in open(f"/proc/{{d.proc.pid}}/status") if l.startswith("VmRSS")][0].split()[1])
    before = rss()
    times = []
    for _ in range(10):
        t0 = time.perf_counter()
        p = subprocess.run([gwtest.GPUWARD, "--socket", d.socket, "queue"], capture_output=True)
        assert p.returncode == 0
        times.append(time.perf_counter() - t0)
    print(json.dumps([statistics.median(times) * 1000, before, rss()]))
finally:
    d.cleanup()
"""
    env = dict(os.environ, GW_BUILD_DIR=os.path.abspath(build))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=10000)
    a = ap.parse_args()
    res = {"old": [], "new": []}
    for r in range(a.rounds):
        for which in (("old", "new") if r % 2 == 0 else ("new", "old")):
            q, before, after = one(getattr(a, which), a.jobs)
            res[which].append((q, before, after))
            print(f"round {r + 1} {which}: queue {q:.1f} ms, RSS {before / 1024:.1f} MiB pending, "
                  f"{after / 1024:.1f} MiB after the lists", flush=True)
    med = lambda which, k: statistics.median(x[k] for x in res[which])
    for which in ("old", "new"):
        print(f"{which}: queue median {med(which, 0):.1f} ms, RSS median {med(which, 1) / 1024:.1f} MiB pending, "
              f"{med(which, 2) / 1024:.1f} MiB after the lists")


if __name__ == "__main__":
    main()

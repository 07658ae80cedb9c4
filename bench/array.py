#!/usr/bin/env python3
"""A 1,000-task job array against 1,000 separate submissions: the request time and gpuwardd's
resident memory (VmRSS) before the submission, after it (everything held, so nothing runs),
and once released with 4 tasks (jobs) running on the 4 simulated GPUs.

Each side gets a fresh daemon (the e2e harness's, fake NVML, 4 GPUs); the jobs are
`sleep 3600`, stopped with the daemon.  One run prints a Markdown table and the JSON.

    python3 bench/array.py [--build build] [--tasks 1000]
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def running(d):
    st, r = d.api("GET", "/api/v1/jobs?state=RUNNING&fields=id")
    assert st == 200, r
    return len(r["jobs"])


def settle(d, n):
    """Waits (bounded) until n jobs run, then lets the loop go idle before RSS is read."""
    deadline = time.monotonic() + 60
    while running(d) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{n} jobs did not start within 60 s")
        time.sleep(0.05)
    time.sleep(0.5)


def side_array(gw, tasks):
    d = gw.Daemon(gpus=4).start()
    try:
        pid = d.proc.pid
        time.sleep(0.5)
        before = rss_kib(pid)
        spec = d.job_spec(["sleep", "3600"], array=f"0-{tasks - 1}%4", hold=True)
        t0 = time.perf_counter()
        st, r = d.api("POST", "/api/v1/jobs", spec)
        took = time.perf_counter() - t0
        assert st == 201, r
        time.sleep(0.5)
        after = rss_kib(pid)
        st, _ = d.api("POST", f"/api/v1/jobs/{r['id']}/release")
        assert st == 200
        settle(d, 4)
        return {"request_s": took, "rss_before_kib": before, "rss_submitted_kib": after,
                "rss_4_running_kib": rss_kib(pid)}
    finally:
        d.cleanup()


def side_separate(gw, jobs):
    d = gw.Daemon(gpus=4).start()
    try:
        pid = d.proc.pid
        time.sleep(0.5)
        before = rss_kib(pid)
        spec = d.job_spec(["sleep", "3600"], hold=True)
        ids = []
        t0 = time.perf_counter()
        for _ in range(jobs):
            st, r = d.api("POST", "/api/v1/jobs", spec)
            assert st == 201, r
            ids.append(r["id"])
        took = time.perf_counter() - t0
        time.sleep(0.5)
        after = rss_kib(pid)
        for i in ids[:4]:
            st, _ = d.api("POST", f"/api/v1/jobs/{i}/release")
            assert st == 200
        settle(d, 4)
        return {"request_s": took, "rss_before_kib": before, "rss_submitted_kib": after,
                "rss_4_running_kib": rss_kib(pid)}
    finally:
        d.cleanup()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--tasks", type=int, default=1000)
    a = ap.parse_args()
    os.environ["GW_BUILD_DIR"] = os.path.abspath(a.build)
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
    import gwtest

    res = {"tasks": a.tasks, "array": side_array(gwtest, a.tasks), "separate": side_separate(gwtest, a.tasks)}
    n = a.tasks
    print(f"| {n:,} jobs | request(s) | RSS before | after submit (held) | 4 running |")
    print("|---|---:|---:|---:|---:|")
    for key, label in (("array", f"one array `0-{n - 1}%4`"), ("separate", f"{n:,} separate submissions")):
        r = res[key]
        print(f"| {label} | {r['request_s'] * 1000:.1f} ms | {r['rss_before_kib'] / 1024:.1f} MiB | "
              f"{r['rss_submitted_kib'] / 1024:.1f} MiB | {r['rss_4_running_kib'] / 1024:.1f} MiB |")
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()

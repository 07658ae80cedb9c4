#!/usr/bin/env python3
"""A candidate change measured within one drain: the change is switched on and off every
PERIOD while one daemon drains a queue, and the dispatch gaps that begin and end within one
phase are compared.  Two builds run one after the other differ by as much as a change worth
making (this machine's rounds drift by 10%); two phases of one run see the same machine.

The build under test must read the switch itself: its candidate code runs only while the file
FLAG exists (for instance `if (access(FLAG, F_OK) == 0) ...` around a step left out), which is
why this is for throwaway builds, never for the code kept.  A daemon of the e2e harness with
GPUS simulated GPUs (state on a fresh journaled ext4 when run as root, see statefs.py) drains
JOBS jobs of gw-bench-stamp queued behind a job holding every GPU; prints, for each phase,
the number of gaps, their median and their mean in ms.

    python3 bench/flip.py --build BUILD --flag /tmp/gw-flip [--gpus 1] [--jobs 4000] [--period-ms 50]
"""
import argparse
import bisect
import os
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def flipper(flag, period, stop, phases):
    on = False
    while not stop.is_set():
        on = not on
        if on:
            open(flag, "w").close()
        elif os.path.exists(flag):
            os.unlink(flag)
        phases.append((time.time(), on))
        time.sleep(period)
    if os.path.exists(flag):
        os.unlink(flag)


def gaps_by_phase(stamps, phases):
    """Per GPU, next exec minus previous exit, kept when both fall in one phase."""
    by_gpu = {}
    with open(stamps) as f:
        for g, s, e in (line.split() for line in f):
            by_gpu.setdefault(g, []).append((float(s), float(e)))
    starts = [t for t, _ in phases]
    out = {False: [], True: []}
    for spans in by_gpu.values():
        spans.sort()
        for a, b in zip(spans, spans[1:]):
            i, k = bisect.bisect_right(starts, a[1]) - 1, bisect.bisect_right(starts, b[0]) - 1
            if i >= 0 and i == k:
                out[phases[i][1]].append(b[0] - a[1])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--flag", required=True, help="the file whose presence switches the candidate on")
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=4000)
    ap.add_argument("--period-ms", type=float, default=50)
    ap.add_argument("--state-root", help="the daemon's state under this directory (default: see statefs.py)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    os.environ["GW_BUILD_DIR"] = build
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
    sys.path.insert(0, HERE)
    import bench
    import gwtest
    import statefs
    import tempfile
    with statefs.state_root(a.state_root) as (root, where):
        print(f"# {where}", file=sys.stderr)
        tempfile.tempdir = root
        d = gwtest.Daemon(gpus=a.gpus).start()
        try:
            stamps, stamp = os.path.join(d.work, "stamps"), os.path.join(build, "bench", "gw-bench-stamp")
            warm = [bench.job([stamp, stamps + "0"], d.work) for _ in range(4 * a.gpus)]
            st, r = d.api("POST", "/api/v1/jobs/batch", {"jobs": warm})
            gwtest.wait_until(lambda: d.job(r["ids"][-1])["state"] == "COMPLETED", timeout=60)
            st, b = d.api("POST", "/api/v1/jobs", bench.job(["sleep", "3600"], d.work, ngpus=a.gpus))
            d.wait_state(b["id"], "RUNNING")
            d.api("POST", "/api/v1/jobs/batch", {"jobs": [bench.job([stamp, stamps], d.work) for _ in range(a.jobs)]})
            stop, phases = threading.Event(), []
            t = threading.Thread(target=flipper, args=(a.flag, a.period_ms / 1000, stop, phases))
            t.start()
            try:
                d.api("DELETE", f"/api/v1/jobs/{b['id']}")
                gwtest.wait_until(lambda: os.path.exists(stamps) and sum(1 for _ in open(stamps)) >= a.jobs,
                                  timeout=600, interval=0.25)
            finally:
                stop.set()
                t.join()
            for on, gaps in sorted(gaps_by_phase(stamps, phases).items()):
                print(f"{'on ' if on else 'off'} {len(gaps)} gaps, p50 {statistics.median(gaps) * 1000:.3f} ms, "
                      f"mean {statistics.mean(gaps) * 1000:.3f} ms")
        finally:
            d.cleanup()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""API submissions of two builds, two daemons side by side, runs alternating.

bench/ab.py runs each build's daemon in turn, seconds apart; the submission rate drifts more
than that on a busy virtual machine.  Here both daemons run at once (each with a 4-GPU job
holding every GPU, so submissions only queue) and bench/apiload.c sends N submissions to one,
then the other, ROUNDS times.

    python3 bench/apiab.py --old OLD_BUILD --new build --rounds 6
"""
import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import statefs  # noqa: E402


def start(build):
    os.environ["GW_BUILD_DIR"] = build
    import gwtest
    gw = importlib.reload(gwtest)  # its paths come from GW_BUILD_DIR at import
    d = gw.Daemon(gpus=4).start()
    st, r = d.api("POST", "/api/v1/jobs", {"command": ["sleep", "3600"], "cwd": d.work, "ngpus": 4,
                                           "time_limit": 3600})
    assert st == 201, r
    d.wait_state(r["id"], "RUNNING")
    return d, r["id"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--jobs", type=int, default=5000)
    a = ap.parse_args()
    load = os.path.join(os.path.abspath(a.new), "bench", "gw-bench-apiload")
    with statefs.journaled_ext4() as root:
        tempfile.tempdir = root
        daemons = {side: start(os.path.abspath(getattr(a, side))) for side in ("old", "new")}
        rates = {side: [] for side in daemons}
        try:
            for _ in range(a.rounds):
                for side, (d, _) in daemons.items():
                    spec = json.dumps({"command": ["true"], "cwd": d.work, "ngpus": 1, "time_limit": 3600})
                    out = subprocess.run([load, d.socket, str(a.jobs), spec], capture_output=True, text=True,
                                         check=True).stdout
                    n, dt = out.split()
                    rates[side].append(int(n) / float(dt))
        finally:
            for d, blocker in daemons.values():
                pid = d.job(blocker)["pid"]
                d.stop()  # before the blocker: cancelling it would start every queued job
                try:
                    os.killpg(pid, 9)
                except ProcessLookupError:
                    pass
                d.cleanup()
    for side, v in rates.items():
        print(f"{side}: {' '.join(f'{x:.0f}' for x in v)}  median {statistics.median(v):.0f}/s")


if __name__ == "__main__":
    main()

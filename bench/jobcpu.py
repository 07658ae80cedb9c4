#!/usr/bin/env python3
"""CPU time per dispatched job, by part: the daemon (user and system), the supervisors
(gpuward-shim) and the jobs themselves (what the supervisors reaped: each job's vfork child,
exec, run and exit); and the context switches per job of the daemon and of the supervisors
(voluntary: each is a wait, so a wake-up; involuntary: preempted).  CPU time, unlike
wall-clock rounds, barely moves with what else the machine runs, so two builds can be
compared on a shared machine.

A daemon of the e2e harness with GPUS simulated GPUs (state on a fresh journaled ext4 when run
as root, see bench/statefs.py) runs a few jobs so that idle supervisors exist, then a job
holding every GPU while N jobs of gw-bench-stamp are queued; the clocks are read, the holder
cancelled, the queue drained, the clocks read again.  One JSON line per build and round, the
builds alternating.

    python3 bench/jobcpu.py --build OLD_BUILD --build build --rounds 3 [--jobs 2000] [--gpus 4]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CODE = r"""
import json, os, sys, tempfile, time
P = json.loads(os.environ["GW_JOBCPU"])
sys.path.insert(0, P["e2e"]); sys.path.insert(0, P["here"])
tempfile.tempdir = P["root"]
import gwtest, bench
GPUS, N, BUILD = P["gpus"], P["n"], P["build"]
TCK = os.sysconf("SC_CLK_TCK")

def stat(pid):
    try:
        v = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(v[1]), int(v[11]), int(v[12]), int(v[13]) + int(v[14])  # ppid, utime, stime, children

def switches(pid):  # voluntary (it waited: each is a wake-up later), involuntary (preempted)
    try:
        c = {l.split(":")[0]: int(l.split()[1]) for l in open(f"/proc/{pid}/status") if "ctxt_switches" in l}
    except OSError:
        return 0, 0
    return c.get("voluntary_ctxt_switches", 0), c.get("nonvoluntary_ctxt_switches", 0)

def snap(d):
    kids, procs = {}, {}
    for p in os.listdir("/proc"):
        if p.isdigit() and (s := stat(int(p))):
            kids.setdefault(s[0], []).append(int(p)); procs[int(p)] = s
    todo, shims, reaped, sw = list(kids.get(d.proc.pid, [])), 0, 0, {}
    while todo:
        p = todo.pop(); todo += kids.get(p, [])
        try:
            cmd = open(f"/proc/{p}/cmdline").read()
            if "gpuward-shim" in cmd:
                shims += procs[p][1] + procs[p][2]; reaped += procs[p][3]
                if "--server" not in cmd:
                    sw[p] = switches(p)
        except OSError:
            pass
    s = procs[d.proc.pid]
    return {"daemon_user": s[1], "daemon_sys": s[2], "supervisors": shims, "jobs": reaped,
            "daemon_switches": switches(d.proc.pid), "supervisor_switches": sw}

d = gwtest.Daemon(gpus=GPUS).start()
try:
    stamps = os.path.join(d.work, "stamps"); stamp = os.path.join(BUILD, "bench", "gw-bench-stamp")
    st, r = d.api("POST", "/api/v1/jobs/batch", {"jobs": [bench.job([stamp, stamps + "0"], d.work) for _ in range(4 * GPUS)]})
    gwtest.wait_until(lambda: d.job(r["ids"][-1])["state"] == "COMPLETED", timeout=60)
    st, b = d.api("POST", "/api/v1/jobs", bench.job(["sleep", "3600"], d.work, ngpus=GPUS))
    d.wait_state(b["id"], "RUNNING")
    st, r = d.api("POST", "/api/v1/jobs/batch", {"jobs": [bench.job([stamp, stamps], d.work) for _ in range(N)]})
    time.sleep(0.5)
    a = snap(d)
    d.api("DELETE", f"/api/v1/jobs/{b['id']}")
    gwtest.wait_until(lambda: os.path.exists(stamps) and sum(1 for _ in open(stamps)) >= N, timeout=600, interval=0.25)
    gwtest.wait_until(lambda: d.job(r["ids"][-1])["state"] == "COMPLETED", timeout=60)
    time.sleep(0.3)
    z = snap(d)
    out = {k + "_us": round((z[k] - a[k]) / TCK / N * 1e6, 1) for k in a if "switches" not in k}
    # Per job: the daemon's, and the supervisors' that lived through the whole drain.
    kept = set(a["supervisor_switches"]) & set(z["supervisor_switches"])
    for i, kind in enumerate(("vol", "invol")):
        out[f"daemon_{kind}_switches"] = round((z["daemon_switches"][i] - a["daemon_switches"][i]) / N, 2)
        out[f"supervisor_{kind}_switches"] = round(
            sum(z["supervisor_switches"][p][i] - a["supervisor_switches"][p][i] for p in kept) / N, 2)
    rows = [l.split() for l in open(stamps)]
    gaps = bench.gaps_per_gpu(stamps)
    out["drain_per_s"] = round(N / (max(float(e) for *_, e in rows) - min(float(s) for _, s, _ in rows)), 1)
    out["gap_ms_p50"] = round(bench.pct(gaps, 50) * 1000, 2)
    print(json.dumps(out))
finally:
    d.cleanup()
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", action="append", required=True, help="a build dir; repeat to alternate several")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--gpus", type=int, default=4)
    ap.add_argument("--state-root", help="the daemons' state under this directory (default: see bench/statefs.py)")
    a = ap.parse_args()
    sys.path.insert(0, HERE)
    import statefs
    with statefs.state_root(a.state_root) as (root, where):
        print(f"# {where}", file=sys.stderr)
        for rnd in range(a.rounds):
            for b in a.build:
                build = os.path.abspath(b)
                params = {"e2e": os.path.join(HERE, "..", "tests", "e2e"), "here": HERE, "root": root,
                          "gpus": a.gpus, "n": a.jobs, "build": build}
                p = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                                   env=dict(os.environ, GW_BUILD_DIR=build, GW_JOBCPU=json.dumps(params)))
                if p.returncode != 0:
                    sys.exit(f"{b}: {p.stderr[-2000:]}")
                res = json.loads(p.stdout.strip().splitlines()[-1])
                res.update(round=rnd + 1, build=b, load1=round(os.getloadavg()[0], 1))
                print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()

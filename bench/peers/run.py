#!/usr/bin/env python3
"""gpuward side by side with Slurm 22.05 and task-spooler, measured in one run on this machine.

Installs what is missing (Debian packages slurm-wlm, munge, task-spooler; no service is
started by the packages), starts a private single-node Slurm (munged, slurmctld, slurmd with
4 fake GPUs as GRES), a private task-spooler server with 4 slots and gpuward on 4 simulated
GPUs, all with their state under one temporary directory, runs the same workloads on each
and prints one Markdown table.  --write FILE replaces the block between
`<!-- peers:begin -->` and `<!-- peers:end -->` in FILE (appended when missing).

Every daemon it starts is recorded by PID and stopped by PID at the end; every wait is
bounded; nothing is left outside the temporary directory (the Slurm cgroups it created are
removed).  Must run as root (apt-get, munged as user munge, fake GPU device nodes).
Python standard library only."""
import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import statefs  # noqa: E402
from common import T0, Pids, kill_strays, log, sh  # noqa: E402
from drivers import run_gw_and_tsp, run_slurm  # noqa: E402
from report import BEGIN, END, render  # noqa: E402

PKGS = {"slurm-wlm": ["slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol", "sinfo"],
        "munge": ["munged", "mungekey"],
        "task-spooler": ["tsp"]}


# ---------------------------------------------------------------- install
def install(report):
    missing = sorted({pkg for pkg, bins in PKGS.items() for b in bins if not shutil.which(b)})
    if not missing:
        report["install"] = "already installed"
        return
    if os.geteuid() != 0:
        report["install"] = f"missing {missing}, not root: cannot install"
        return
    policy = "/usr/sbin/policy-rc.d"
    created = False
    if not os.path.exists(policy):
        with open(policy, "w") as f:
            f.write("#!/bin/sh\n# bench/peers/run.py: no service starts during the install\nexit 101\n")
        os.chmod(policy, 0o755)
        created = True
    try:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]
        log(f"apt-get install {' '.join(missing)}")
        p = sh(cmd, timeout=600, env=env, check=False)
        if p.returncode != 0:
            sh(["apt-get", "update", "-q"], timeout=300, env=env, check=False)
            p = sh(cmd, timeout=600, env=env, check=False)
        report["install"] = f"installed {' '.join(missing)}" if p.returncode == 0 else \
            f"apt-get install failed: {p.stderr.strip()[-300:]}"
    finally:
        if created:
            os.unlink(policy)


def measure(a):
    only = set(a.only.split(","))
    report = {}
    g, sl, st, ts = {}, {}, {}, {}
    load_before = os.getloadavg()
    with statefs.state_root(a.state_root) as (root, where):
        report["state"] = where
        measure_in(a, only, report, g, sl, st, ts, root)
    meta = {"date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "arch": platform.machine(),
            "kernel": platform.release(), "slurm_version": pkg_version("slurm-wlm"),
            "tsp_version": pkg_version("task-spooler"), "elapsed_s": time.monotonic() - T0,
            "cmd": " ".join(["python3 bench/peers/run.py", *sys.argv[1:]]).replace(ROOT + "/", ""),
            "load_before": "/".join(f"{x:.1f}" for x in load_before),
            "load_after": "/".join(f"{x:.1f}" for x in os.getloadavg()), "args": vars(a)}
    return {"gpuward": g, "slurm": sl, "slurm_stock": st, "tsp": ts, "report": report, "meta": meta}


def measure_in(a, only, report, g, sl, st, ts, root):
    """Every peer's state, spool and job output under one temp dir of root."""
    tmp = tempfile.mkdtemp(prefix="gw-peers-", dir=root)
    os.chmod(tmp, 0o755)
    pids = Pids()
    log(f"temp dir {tmp}")
    try:
        if a.no_install:
            report["install"] = "not checked (--no-install)"
        else:
            install(report)
            log(f"install: {report['install']}")
        try:
            run_gw_and_tsp(a, tmp, pids, g, ts, only)
        except Exception as e:
            for res in (g, ts):
                res.setdefault("error", f"{type(e).__name__}: {e}")
            log(f"gpuward/tsp failed:\n{traceback.format_exc()}")
        if "slurm" not in only:
            sl["error"] = "not run (--only)"
        else:
            try:
                run_slurm(a, tmp, pids, sl, st)
            except Exception as e:
                sl["error"] = f"{type(e).__name__}: {e}"
                log(f"slurm failed:\n{traceback.format_exc()}")
        if "error" in sl and "drain" not in st and "error" not in st:
            st["error"] = "Slurm did not run (see the tuned column)"
    finally:
        pids.stop_all()
        kill_strays(tmp, "final sweep")
        if a.keep_logs:
            for dirpath, _, files in os.walk(tmp):
                for f in files:
                    if f.endswith((".log", ".out", ".txt")):
                        src = os.path.join(dirpath, f)
                        dst = os.path.join(a.keep_logs, os.path.relpath(src, tmp))
                        os.makedirs(os.path.dirname(dst), exist_ok=True)
                        shutil.copy(src, dst)
        shutil.rmtree(tmp, ignore_errors=True)
        log("cleaned up")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="gpuward build dir (default build)")
    ap.add_argument("--write", help="update this Markdown file's peers block (e.g. docs/PERFORMANCE.md)")
    ap.add_argument("--jobs", type=int, default=1000, help="jobs per submission/drain measure")
    ap.add_argument("--slurm-drain-jobs", type=int, default=1000, help="Slurm drain with the tuned scheduler")
    ap.add_argument("--slurm-stock-drain-jobs", type=int, default=200,
                    help="Slurm drain with stock scheduler settings (0 skips)")
    ap.add_argument("--sched-params", default="batch_sched_delay=0")
    ap.add_argument("--grace", type=int, default=30, help="gpuward --grace-seconds (30 is its default)")
    ap.add_argument("--tsp-chunk", type=int, default=900, help="most jobs queued at once in tsp (< ~990)")
    ap.add_argument("--tsp-cancel-bound", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3, help="drain rounds for gpuward and tsp (interleaved)")
    ap.add_argument("--only", default="gpuward,tsp,slurm")
    ap.add_argument("--state-root", help="keep every peer's state and job output under this directory instead of "
                    "on a fresh journaled ext4 (see bench/statefs.py)")
    ap.add_argument("--no-install", action="store_true")
    ap.add_argument("--keep-logs", metavar="DIR", help="copy the daemons' logs to DIR before removing the temp dir")
    ap.add_argument("--save", metavar="JSON", help="also write the raw results to this file")
    ap.add_argument("--render", metavar="JSON", help="measure nothing: render the results a --save wrote")
    a = ap.parse_args()
    write = a.write
    if a.render:
        with open(a.render) as f:
            R = json.load(f)
        a = argparse.Namespace(**R["meta"]["args"])
    else:
        a.build = os.path.abspath(a.build)
        for b in ("gpuwardd", "gpuward", "gpuward-shim", "bench/gw-bench-stamp", "tests/fakes/libnvidia-ml.so.1"):
            if not os.path.exists(os.path.join(a.build, b)):
                sys.exit(f"{a.build}/{b} is missing: build gpuward first (see README)")
        R = measure(a)
        print(json.dumps(R, indent=1, default=str), file=sys.stderr)
        if a.save:
            with open(a.save, "w") as f:
                json.dump(R, f, indent=1, default=str)
    text = render(a, R)
    print(text)
    if write:
        try:
            with open(write) as f:
                doc = f.read()
        except FileNotFoundError:
            doc = "# Performance\n"
        b, e = doc.find(BEGIN), doc.find(END)
        doc = doc[:b] + text + doc[e + len(END):] if b >= 0 and e > b else doc.rstrip("\n") + "\n\n" + text + "\n"
        with open(write, "w") as f:
            f.write(doc)


def pkg_version(pkg):
    try:
        return sh(["dpkg-query", "-W", "-f", "${Version}", pkg], timeout=10).stdout.strip() or "?"
    except Exception:
        return "not installed"


if __name__ == "__main__":
    main()

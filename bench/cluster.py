#!/usr/bin/env python3
"""gpuward on Slurm against plain sbatch, side by side, in one run on one test cluster.

A real Slurm cluster of 2 nodes x 4 fake GPUs on this host (tests/cluster/slurmcluster.py)
and one `gpuwardd --backend slurm` in front of it.  A test user submits N one-GPU jobs with
`gpuward submit` and N with plain `sbatch` (the same options gpuward gives sbatch), one at a
time, each once the one before has ended, alternating (gpuward first, then sbatch first, in
turn, so that a drift over the run falls on both sides).  Each job prints `date +%s.%N` as
its first command, then sleeps; the harness reads the clock (the same CLOCK_REALTIME, on the
same host) just before starting the submit command, so the job's stamp minus that instant is
the time from submission to the job running.  While it waits for the stamp the harness also
polls squeue (both sides) and the daemon's API (gpuward's side) and notes when each first
reports the job RUNNING.

Not a test: the numbers depend on the machine.  Root only (network namespaces, slurmd);
everything it starts, the test user included, is stopped and removed when it ends.

    python3 bench/cluster.py --build build --jobs 20 [--write docs/CLUSTER-PERF.md]
"""
import argparse
import json
import os
import platform
import random
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cluster"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

POLL = 0.01          # seconds between two rounds of polling (file, squeue, API)
FOLLOW_TIMEOUT = 60  # seconds a job may take to show everything measured
BEGIN, END = "<!-- cluster:begin -->", "<!-- cluster:end -->"


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


class Bench:
    def __init__(self, gwtest, cluster, daemon, user, sleep, jitter):
        self.gw, self.c, self.d, self.user = gwtest, cluster, daemon, user
        self.jitter = jitter
        self.out = os.path.join(cluster.dir, "out")   # 1777, on the host both sides share
        self.env = dict(os.environ, SLURM_CONF=cluster.conf)
        self.job = f"date +%s.%N; sleep {sleep}"
        self.n = 0

    def as_user(self, argv):
        """Runs argv as the test user (no wrapper program, so neither side pays for one);
        (stdout, the instant it returned)."""
        r = subprocess.run(argv, capture_output=True, text=True, env=self.env, cwd=self.d.work, timeout=60,
                           user=self.user.pw_uid, group=self.user.pw_gid, extra_groups=[])
        t = time.time()
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
        return r.stdout, t

    def submit(self, side):
        """Submits one job on side ("gpuward" or "sbatch"); its measures."""
        self.n += 1
        name = f"bench-{side}-{self.n}"
        path = os.path.join(self.out, f"{name}.out")
        if side == "gpuward":
            argv = [self.gw.GPUWARD, "--socket", self.d.socket, "submit", "--json", "--name", name, "--gpus", "1",
                    "--time", "10m", "--output", path, "--", "sh", "-c", self.job]
        else:
            # What gpuward's sbatch command line is for that job (core/slurm_sbatch.c).
            wrap = "exec " + " ".join(shlex.quote(a) for a in ("sh", "-c", self.job))
            argv = ["sbatch", "--parsable", "--no-requeue", f"--job-name={name}", "--nodes=1", "--gres=gpu:1",
                    "--time=0-00:10:00", f"--output={path}", f"--chdir={self.d.work}", f"--wrap={wrap}"]
        # Slurm 22.05 starts a job just submitted at its next pass of once a second (slurmctld's
        # log: "sched: Allocate" at the same fraction of each second), not at once: submitting
        # right after the previous job started would always land at the same point of that
        # second.  A random pause spreads the submissions over it.
        time.sleep(random.uniform(0, self.jitter))
        t0 = time.time()
        out, returned = self.as_user(argv)
        m = {"returned": returned - t0}
        gw_id = int(json.loads(out)["id"]) if side == "gpuward" else None
        self.follow(name, path, gw_id, t0, m)
        # Slurm holds the job once sbatch has answered: gpuward's state turns RUNNING then.
        m["in_slurm"] = m["gw_state"] if gw_id else m["returned"]
        self.settle(name, gw_id)
        return m

    def follow(self, name, path, gw_id, t0, m):
        """Polls until the job's stamp, squeue's RUNNING and (gpuward's side) the daemon's two
        RUNNINGs are all seen; each measure is the instant it was seen minus t0."""
        want = {"stamp", "squeue"} | ({"gw_state", "gw_slurm"} if gw_id else set())
        deadline = time.monotonic() + FOLLOW_TIMEOUT
        while want - m.keys():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name}: not seen within {FOLLOW_TIMEOUT} s: {sorted(want - m.keys())}; "
                                   f"squeue {self.c.squeue()}")
            if "stamp" not in m:
                try:
                    with open(path) as f:
                        line = f.readline()
                    if line.endswith("\n"):
                        m["stamp"] = float(line) - t0
                except FileNotFoundError:
                    pass
            if "squeue" not in m:
                state = self.c.cmd("squeue", "-h", "-n", name, "-o", "%T").strip()
                if state in ("RUNNING", "COMPLETING", "COMPLETED"):
                    m["squeue"] = time.time() - t0
            if gw_id and not {"gw_state", "gw_slurm"} <= m.keys():
                j = self.d.job(gw_id)
                t = time.time() - t0
                if j["state"] == "RUNNING":
                    m.setdefault("gw_state", t)
                if any(e["kind"] == "slurm" and ": RUNNING on " in e["message"] for e in j["events"]):
                    m.setdefault("gw_slurm", t)
            time.sleep(POLL)

    def settle(self, name, gw_id):
        """Waits (bounded) for the job to have left squeue and, on gpuward's side, to have ended
        in gpuward too: a job that ends makes slurmctld schedule at once, which would start
        the next job early if it ended while that one waited."""
        self.gw.wait_until(lambda: not self.c.cmd("squeue", "-h", "-n", name, "-o", "%T").strip(), 60,
                           interval=0.02, what=f"{name} gone from squeue")
        if gw_id:
            self.d.wait_state(gw_id, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}, timeout=60)


ROWS = [  # (key, label, on both sides)
    ("stamp", "Submission to the job running (its own first instruction)", True),
    ("returned", "The submit command returned", True),
    ("squeue", "Submission to squeue showing RUNNING (the harness polling squeue)", True),
    ("in_slurm", "Submission to sbatch's answer (gpuward: its state RUNNING, the attempt handed to Slurm)", True),
    ("gw_slurm", "Submission to gpuward reporting Slurm's RUNNING (`gpuward show`: \"RUNNING on NODE\")", False),
]


def table(got, a, sched_params, cmd):
    rows = ["| measure (ms) | gpuward submit, p50 | p90 | plain sbatch, p50 | p90 | gpuward / sbatch, p50 | p90 |",
            "|---|---|---|---|---|---|---|"]
    for key, label, both in ROWS:
        g = [x[key] * 1000 for x in got["gpuward"]]
        s = [x[key] * 1000 for x in got["sbatch"]] if both else []
        cells = [f"{pct(g, 50):.0f}", f"{pct(g, 90):.0f}"]
        if s:
            cells += [f"{pct(s, 50):.0f}", f"{pct(s, 90):.0f}",
                      f"{pct(g, 50) / pct(s, 50):.2f}", f"{pct(g, 90) / pct(s, 90):.2f}"]
        else:
            cells += ["—"] * 4
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    lag = [(x["gw_slurm"] - x["squeue"]) * 1000 for x in got["gpuward"]]
    rows.append(f"| gpuward's report of Slurm's RUNNING after squeue's, same job | {pct(lag, 50):.0f} | "
                f"{pct(lag, 90):.0f} | — | — | — | — |")
    return (f"{BEGIN}\nMeasured {time.strftime('%Y-%m-%d')} on this machine ({os.cpu_count()} cores, Linux "
            f"{platform.release()}), one run: a test cluster of 2 nodes x 4 fake GPUs "
            f"(tests/cluster/slurmcluster.py, Slurm `SchedulerParameters={sched_params}`), "
            f"{a.jobs} one-GPU jobs each way, one at a time (each submitted once the one before has ended), "
            f"alternating, after {a.warmup} of each not counted; each submission after a random pause of up to "
            f"{a.jitter:g} s; each job prints `date +%s.%N` then sleeps {a.sleep:g} s.  Command: `{cmd}`.\n\n"
            + "\n".join(rows) + f"\n{END}")


def write(path, text):
    doc = open(path).read() if os.path.exists(path) else "# gpuward on Slurm: performance\n"
    b, e = doc.find(BEGIN), doc.find(END)
    doc = doc[:b] + text + doc[e + len(END):] if b >= 0 and e >= 0 else doc.rstrip("\n") + "\n\n" + text + "\n"
    with open(path, "w") as f:
        f.write(doc)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"), help="the build dir (gpuwardd, gpuward)")
    ap.add_argument("--jobs", type=int, default=20, help="jobs measured on each side")
    ap.add_argument("--warmup", type=int, default=1, help="jobs on each side first, not counted")
    ap.add_argument("--sleep", type=float, default=2, help="seconds each job sleeps after its stamp")
    ap.add_argument("--jitter", type=float, default=1, help="most seconds of random pause before each submission")
    ap.add_argument("--write", help="replace the cluster block of this Markdown file with the table")
    a = ap.parse_args()
    # The harness takes its paths from GW_BUILD_DIR when it is imported.
    os.environ["GW_BUILD_DIR"] = os.path.abspath(a.build)
    import gwtest
    import slurmcluster
    why = slurmcluster.missing_prerequisites()
    if why or not os.access(gwtest.GPUWARDD, os.X_OK):
        sys.exit(f"cannot run: {why or gwtest.GPUWARDD + ' not built'}")
    cmd = "python3 bench/cluster.py --build BUILD --jobs %d" % a.jobs + (
        "" if a.warmup == 1 else f" --warmup {a.warmup}") + ("" if a.sleep == 2 else f" --sleep {a.sleep:g}") + (
        "" if a.jitter == 1 else f" --jitter {a.jitter:g}")
    got = {"gpuward": [], "sbatch": []}
    users = gwtest.Users(prefix="gwb")
    try:
        user = users.add("u")
        with slurmcluster.SlurmCluster(nodes=2, gpus=4) as c, \
                gwtest.Daemon(gpus=4, extra=["--backend", "slurm"], env={"SLURM_CONF": c.conf}) as d:
            d.start()
            sched = [ln.split("=", 1)[1].strip() for ln in c.cmd("scontrol", "show", "config").splitlines()
                     if ln.startswith("SchedulerParameters")]
            b = Bench(gwtest, c, d, user, a.sleep, a.jitter)
            for i in range(a.warmup + a.jobs):
                for side in ("gpuward", "sbatch") if i % 2 == 0 else ("sbatch", "gpuward"):
                    m = b.submit(side)
                    if i >= a.warmup:
                        got[side].append(m)
                    print(f"{i + 1 - a.warmup:3d} {side:8s} " + " ".join(f"{k} {v * 1000:.0f}"
                                                                        for k, v in m.items()), file=sys.stderr)
    finally:
        users.remove_all()
    text = table(got, a, sched[0] if sched else "(default)", cmd)
    print(text)
    if a.write:
        write(a.write, text)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""gpuward benchmarks: submission rate, dispatch gap and drain rate, queue listing, memory.

Not tests: the numbers depend on the machine.  `make bench` in a build dir (or
`python3 bench/bench.py --build build`) runs them on a fresh daemon with 4 simulated GPUs and
prints a Markdown table; --write FILE replaces the generated section of docs/PERFORMANCE.md."""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def job(cmd, cwd, **kw):
    return dict({"command": cmd, "cwd": cwd, "ngpus": 1, "time_limit": 3600}, **kw)


def bench_submit(gw, build, results, n_api, n_cli):
    d = gw.Daemon(gpus=4).start()
    try:
        # A 4-GPU job holds every GPU so submissions queue up and measure the submit path alone.
        st, r = d.api("POST", "/api/v1/jobs", job(["sleep", "3600"], d.work, ngpus=4))
        blocker = r["id"]
        d.wait_state(blocker, "RUNNING")
        # The client is C (bench/apiload.c) so that it is not what is measured.
        out = subprocess.run([os.path.join(build, "bench", "gw-bench-apiload"), d.socket, str(n_api),
                              json.dumps(job(["true"], d.work))], capture_output=True, text=True, check=True).stdout
        n, dt = out.split()
        results["api_submit_per_s"] = int(n) / float(dt)

        # The queue as the issue sizes it: the API's submissions pending, before the CLI adds more.
        pending = len(d.api("GET", "/api/v1/jobs?state=PENDING")[1]["jobs"])
        results["queue_pending"] = pending
        times = []
        for _ in range(10):
            t0 = time.perf_counter()
            p = subprocess.run([gw.GPUWARD, "--socket", d.socket, "queue"], capture_output=True, text=True)
            times.append(time.perf_counter() - t0)
            assert p.returncode == 0 and len(p.stdout.splitlines()) > pending
        results["queue_ms_p50"] = statistics.median(times) * 1000
        results["rss_kib_queue"] = rss_kib(d.proc.pid)

        # Separate processes are started by a small C program (bench/spawn.c: vfork and exec,
        # as xargs -P does with fork), so that the harness is not what is measured; `true` and
        # `gpuward --version` started the same way, alternately, are the machine's part.
        tools = os.environ.get("GW_BENCH_TOOLS") or os.path.join(build, "bench")
        spawn = os.path.join(tools, "gw-bench-spawn")
        submit = [gw.GPUWARD, "--socket", d.socket, "submit", "-q", "--", "true"]

        def rate(lanes, cmd, n=n_cli):
            out = subprocess.run([spawn, str(n), str(lanes), *cmd], cwd=d.work, capture_output=True, text=True)
            assert out.returncode == 0, out.stderr
            n, dt = out.stdout.split()
            return int(n) / float(dt)

        results["cli_submit_seq_per_s"] = rate(1, submit, n_cli // 4)
        runs = {"cli_submit_par4_per_s": [], "true_par4_per_s": [], "version_par4_per_s": []}
        for _ in range(3):
            runs["true_par4_per_s"].append(rate(4, ["true"]))
            runs["version_par4_per_s"].append(rate(4, [gw.GPUWARD, "--version"]))
            runs["cli_submit_par4_per_s"].append(rate(4, submit))
        for k, v in runs.items():
            results[k] = statistics.median(v)

    finally:
        # Cancelling the blocker first would start 10,000 jobs: stop the daemon, then the blocker.
        st, r = d.api("GET", "/api/v1/jobs?state=RUNNING")
        d.stop()
        for j in r.get("jobs", []):
            try:
                os.killpg(j["pid"], 9)
            except ProcessLookupError:
                pass
        d.log.close()
        import shutil
        shutil.rmtree(d.dir, ignore_errors=True)


def bench_dispatch(gw, build, results, n, gpus=4, key="dispatch"):
    d = gw.Daemon(gpus=gpus, extra=os.environ.get("GW_BENCH_DAEMON_ARGS", "").split()).start()
    try:
        stamps = os.path.join(d.work, "stamps")
        stamp = os.path.join(build, "bench", "gw-bench-stamp")
        jobs = [job([stamp, stamps], d.work) for _ in range(n)]
        t0 = time.time()
        st, r = d.api("POST", "/api/v1/jobs/batch", {"jobs": jobs})
        assert st == 201, r
        last = r["ids"][-1]
        # Poll one small job record, not the whole queue: the measurement must not load the daemon.
        gw.wait_until(lambda: os.path.exists(stamps) and sum(1 for _ in open(stamps)) >= n, timeout=600,
                      interval=0.25, what="the queue to drain")
        gw.wait_until(lambda: d.job(last)["state"] == "COMPLETED", timeout=60)
        with open(stamps) as f:
            rows = [line.split() for line in f]
        assert len(rows) == n, len(rows)
        gaps = gaps_per_gpu(stamps)
        first = min(float(s) for _, s, _ in rows)
        end = max(float(e) for _, _, e in rows)
        results[f"{key}_jobs"] = n
        results[f"{key}_gap_ms_p50"] = pct(gaps, 50) * 1000
        results[f"{key}_gap_ms_p99"] = pct(gaps, 99) * 1000
        if key == "dispatch":
            results["drain_per_s"] = n / (end - first)
            results["submit_to_first_exec_ms"] = (first - t0) * 1000
    finally:
        d.cleanup()


def bench_history_rss(gw, build, results, n):
    d = gw.Daemon(gpus=4).start()
    try:
        stamp = os.path.join(build, "bench", "gw-bench-stamp")
        out = os.path.join(d.work, "s")
        batch = 4000  # a batch body must stay under the 1 MiB request limit
        for k in range(0, n, batch):
            st, r = d.api("POST", "/api/v1/jobs/batch", {"jobs": [job([stamp, out], d.work)] * min(batch, n - k)},
                          timeout=120)
            assert st == 201, r
            last = r["ids"][-1]
            gw.wait_until(lambda: d.job(last)["state"] == "COMPLETED", timeout=900, interval=0.2,
                          what="a batch to drain")
        gw.wait_until(lambda: len(d.api("GET", "/api/v1/jobs")[1]["jobs"]) == 0, timeout=60)
        results["history_jobs"] = n
        results["rss_kib_history"] = rss_kib(d.proc.pid)
        t0 = time.perf_counter()
        p = subprocess.run([gw.GPUWARD, "--socket", d.socket, "history", "--limit", "100"], capture_output=True)
        results["history_ms"] = (time.perf_counter() - t0) * 1000
        assert p.returncode == 0
    finally:
        d.cleanup()


def bench_recovery(gw, results, n):
    """Failure → retry: the daemon's own records of attempt 1's end and attempt 2's start."""
    d = gw.Daemon(gpus=4, extra=("--retry-backoff", "1")).start()
    try:
        script = ('[ "$GPUWARD_ATTEMPT" = 1 ] && { echo "RuntimeError: CUDA error: unspecified launch failure" >&2; '
                  'exit 1; }; exit 0')
        st, r = d.api("POST", "/api/v1/jobs/batch", {"jobs": [job(["sh", "-c", script], d.work) for _ in range(n)]})
        assert st == 201, r
        for jid in r["ids"]:
            d.wait_state(jid, "COMPLETED", timeout=300)
        lat = []
        for jid in r["ids"]:
            a = d.job(jid)["attempts"]
            lat.append(a[1]["start_time"] - a[0]["end_time"] - 1.0)
        results["recovery_n"] = n
        results["recovery_ms_p50"] = statistics.median(lat) * 1000
        results["recovery_ms_max"] = max(lat) * 1000
    finally:
        d.cleanup()


def bench_sampler(gw, results, seconds):
    """8 fake GPUs x 64 processes each, sampled every second: the daemon's CPU, RSS, API latency."""
    import subprocess as sp
    d = gw.Daemon(gpus=8, extra=("--sample-interval", "1")).start()
    procs = []
    try:
        def api_p99(k=300):
            lat = []
            for _ in range(k):
                t0 = time.perf_counter()
                d.api("GET", "/api/v1/jobs?limit=10")
                lat.append(time.perf_counter() - t0)
            return pct(lat, 99) * 1000
        idle_p99 = api_p99()
        procs_dir = os.path.join(d.state, "sim-nvml", "procs")
        for i in range(8 * 64):
            p = sp.Popen(["sleep", str(seconds + 120)])
            procs.append(p)
            with open(os.path.join(procs_dir, str(p.pid)), "w") as f:
                f.write(f"{i % 8} 100 1\n")
        time.sleep(5)
        def cpu(task=""):
            with open(f"/proc/{d.proc.pid}{task}/stat") as f:
                v = f.read().rsplit(")", 1)[1].split()
            return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")

        def nvml_threads():
            # The threads that do nothing but call NVML (named by src/daemon/observe/sampler.c): with
            # simulated GPUs their time is the fake library's, which stands in for the driver.
            base = f"/proc/{d.proc.pid}/task"
            tids = [t for t in os.listdir(base)
                    if open(f"{base}/{t}/comm").read().strip() in ("gw-sample", "gw-nvml-events")]
            return sum(cpu(f"/task/{t}") for t in tids)
        c0, n0, r0, t0 = cpu(), nvml_threads(), rss_kib(d.proc.pid), time.time()
        time.sleep(seconds)
        c1, n1, r1, t1 = cpu(), nvml_threads(), rss_kib(d.proc.pid), time.time()
        results["sampler_seconds"] = seconds
        results["sampler_cpu_pct"] = (c1 - c0) / (t1 - t0) * 100
        results["sampler_nvml_cpu_pct"] = (n1 - n0) / (t1 - t0) * 100
        results["sampler_rss_growth_kib"] = r1 - r0
        results["sampler_api_p99_idle_ms"] = idle_p99
        results["sampler_api_p99_busy_ms"] = api_p99()
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
        d.cleanup()


def file_create_cost(results, n=500):
    """What a new job log costs on the state dirs' file system: it is on every start's path.
    Returns the probe's directory, to be removed after the dispatch measure (removing files is
    what makes the next creations slow on an ext4 without a journal)."""
    import tempfile
    d = tempfile.mkdtemp(prefix="gw-fs-probe-")
    times = []
    for i in range(n):
        t = time.perf_counter()
        os.close(os.open(os.path.join(d, f"{i}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640))
        times.append(time.perf_counter() - t)
    results["file_create_us_p50"] = statistics.median(times) * 1e6
    return d


def gaps_per_gpu(stamps):
    """Per GPU (or loop), the next job's exec time minus the previous job's exit time."""
    by_gpu = {}
    with open(stamps) as f:
        for g, s, e in (line.split() for line in f):
            by_gpu.setdefault(g, []).append((float(s), float(e)))
    gaps = []
    for spans in by_gpu.values():
        spans.sort()
        gaps += [b[0] - a[1] for a, b in zip(spans, spans[1:])]
    return gaps


def exec_floor(build, results, n, where, loops, key):
    """The gap of loops that only wait, vfork and exec the stamp: the machine's part.  The tools
    come from $GW_BENCH_TOOLS when set (bench/ab.py measures both builds' floors with the same ones)."""
    stamps = os.path.join(where, "floor-stamps")
    tools = os.environ.get("GW_BENCH_TOOLS") or os.path.join(build, "bench")
    loop = os.path.join(tools, "gw-bench-execloop")
    if not os.path.exists(loop):
        return  # a build from before it existed
    subprocess.run([loop, str(n), os.path.join(tools, "gw-bench-stamp"), stamps, str(loops)], check=True)
    gaps = gaps_per_gpu(stamps)
    with open(stamps) as f:
        times = [float(x) for line in f for x in line.split()[1:]]
    os.unlink(stamps)
    results[f"{key}_per_s"] = n // loops * loops / (max(times) - min(times))
    results[f"{key}_gap_ms_p50"] = pct(gaps, 50) * 1000
    results[f"{key}_gap_ms_p99"] = pct(gaps, 99) * 1000


def bench_dispatch_probed(gw, build, results, n):
    probe = file_create_cost(results)
    try:
        exec_floor(build, results, n, probe, 4, "floor4")
        exec_floor(build, results, max(n // 4, 100), probe, 1, "floor")
        bench_dispatch(gw, build, results, n)
        # One GPU: nothing runs beside the path from an end to the next start, so this is
        # its length without the wait for a core that 4 GPUs on 2 cores add.
        bench_dispatch(gw, build, results, max(n // 4, 100), gpus=1, key="serial")
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def table(r):
    rows = [
        ("Submissions, one API client (keep-alive, Unix socket)", f"{r['api_submit_per_s']:.0f}/s", "≥ 5,000/s"),
        ("Submissions, separate `gpuward submit` processes, one at a time",
         f"{r['cli_submit_seq_per_s']:.0f}/s", ""),
        ("Submissions, separate `gpuward submit` processes, 4 at a time",
         f"{r['cli_submit_par4_per_s']:.0f}/s", "≥ 1,000/s"),
        ("The machine's part: the same harness (`bench/spawn.c`) starting `true`, 4 at a time",
         f"{r['true_par4_per_s']:.0f}/s" if "true_par4_per_s" in r else "—", ""),
        ("The CLI's own start: `gpuward --version`, 4 at a time",
         f"{r['version_par4_per_s']:.0f}/s" if "version_par4_per_s" in r else "—", ""),
        (f"Dispatch gap, job exit → next exec on that GPU, p50 ({r['dispatch_jobs']} jobs of `true`, 4 GPUs)",
         f"{r['dispatch_gap_ms_p50']:.2f} ms", "≤ 2 ms"),
        ("Dispatch gap, p99", f"{r['dispatch_gap_ms_p99']:.2f} ms", "≤ 20 ms"),
        ("The machine's part: 4 loops side by side that only wait, vfork and exec the same job "
         "(`bench/execloop.c`), p50 / p99", f"{r['floor4_gap_ms_p50']:.2f} / {r['floor4_gap_ms_p99']:.2f} ms"
         if "floor4_gap_ms_p50" in r else "—", ""),
        ("Drain rate", f"{r['drain_per_s']:.0f} jobs/s", "≥ 1,000/s"),
        ("The machine's part: those 4 loops' rate", f"{r['floor4_per_s']:.0f} jobs/s" if "floor4_per_s" in r else "—",
         ""),
        (f"Dispatch gap with 1 GPU ({r['serial_jobs']} jobs: the path alone, no job beside it), p50 / p99",
         f"{r['serial_gap_ms_p50']:.2f} / {r['serial_gap_ms_p99']:.2f} ms", ""),
        ("The machine's part of that gap: a loop that only waits, vforks and execs the same job "
         "(`bench/execloop.c`), p50 / p99", f"{r['floor_gap_ms_p50']:.2f} / {r['floor_gap_ms_p99']:.2f} ms"
         if "floor_gap_ms_p50" in r else "—", ""),
        ("Creating one empty file in the state dirs' file system (each job's log), median of 500, just before",
         f"{r['file_create_us_p50']:.0f} µs", ""),
        (f"`gpuward queue` with {r['queue_pending']} pending jobs (median of 10)", f"{r['queue_ms_p50']:.0f} ms",
         "≤ 100 ms"),
        (f"Daemon RSS with {r['queue_pending']} pending jobs", f"{r['rss_kib_queue'] / 1024:.1f} MiB", ""),
    ]
    if "recovery_ms_p50" in r:
        rows.append((f"Failure → retry started, minus the backoff, p50 ({r['recovery_n']} jobs failing once)",
                     f"{r['recovery_ms_p50']:.1f} ms", "≤ 50 ms"))
        rows.append(("Failure → retry started, minus the backoff, max", f"{r['recovery_ms_max']:.1f} ms", ""))
    if "sampler_cpu_pct" in r:
        rows.append((f"Sampler: daemon CPU, 8 GPUs x 64 processes at 1 sample/s ({r['sampler_seconds']} s)",
                     f"{r['sampler_cpu_pct']:.2f}% of a core", "≤ 1%"))
        if "sampler_nvml_cpu_pct" in r:
            rows.append(("The fake NVML's part of that: the two threads that only call NVML (the procs files read)",
                         f"{r['sampler_nvml_cpu_pct']:.2f}% of a core", ""))
        rows.append(("Sampler: daemon RSS growth over that time", f"{r['sampler_rss_growth_kib'] / 1024:.2f} MiB",
                     "≤ 4 MiB"))
        rows.append(("API p99 (`GET /api/v1/jobs`): no processes / while sampling 512",
                     f"{r['sampler_api_p99_idle_ms']:.2f} / {r['sampler_api_p99_busy_ms']:.2f} ms", "± 10%"))
    if "rss_kib_history" in r:
        rows.append((f"Daemon RSS with {r['history_jobs']} jobs in history", f"{r['rss_kib_history'] / 1024:.1f} MiB",
                     "≤ 32 MiB"))
        rows.append(("`gpuward history` (newest 100) at that size", f"{r['history_ms']:.0f} ms", ""))
    out = ["| measure | result | target |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--write", help="update this Markdown file's generated section")
    ap.add_argument("--api-jobs", type=int, default=10000)
    ap.add_argument("--cli-jobs", type=int, default=1000)
    ap.add_argument("--dispatch-jobs", type=int, default=2000)
    ap.add_argument("--history-jobs", type=int, default=100000, help="0 skips the RSS-with-history run")
    ap.add_argument("--recovery-jobs", type=int, default=100, help="0 skips the failure-to-retry measure")
    ap.add_argument("--sampler-seconds", type=int, default=120, help="0 skips the sampler cost measure")
    ap.add_argument("--state-root",
                    help="make the daemons' temporary state dirs here (e.g. /tmp or /dev/shm) instead of on a fresh "
                    "journaled ext4 (see bench/statefs.py); the results go to their own block of the --write file")
    ap.add_argument("--only", choices=["submit", "dispatch", "recovery", "sampler", "history"],
                    help="run one measure and print its results (nothing is written)")
    a = ap.parse_args()
    import statefs
    with statefs.state_root(a.state_root) as (root, where):
        run_all(a, root, where)


def run_all(a, root, where):
    import tempfile
    tempfile.tempdir = root
    os.environ["GW_BUILD_DIR"] = os.path.abspath(a.build)
    import gwtest as gw
    results = {}
    if a.only:
        build = os.path.abspath(a.build)
        run = {"submit": lambda: bench_submit(gw, build, results, a.api_jobs, a.cli_jobs),
               "dispatch": lambda: bench_dispatch_probed(gw, build, results, a.dispatch_jobs),
               "recovery": lambda: bench_recovery(gw, results, a.recovery_jobs),
               "sampler": lambda: bench_sampler(gw, results, a.sampler_seconds),
               "history": lambda: bench_history_rss(gw, build, results, a.history_jobs)}
        run[a.only]()
        print(json.dumps(results, indent=1))
        return
    bench_submit(gw, os.path.abspath(a.build), results, a.api_jobs, a.cli_jobs)
    bench_dispatch_probed(gw, os.path.abspath(a.build), results, a.dispatch_jobs)
    if a.recovery_jobs:
        bench_recovery(gw, results, a.recovery_jobs)
    if a.sampler_seconds:
        bench_sampler(gw, results, a.sampler_seconds)
    if a.history_jobs:
        bench_history_rss(gw, os.path.abspath(a.build), results, a.history_jobs)
    cmd = "python3 bench/bench.py --build build" + ("" if a.history_jobs == 100000 else f" --history-jobs {a.history_jobs}")
    tag = "bench"
    if a.state_root:
        cmd += f" --state-root {a.state_root}"
        tag = "bench-" + "".join(ch for ch in a.state_root if ch.isalnum())
    begin, end = f"<!-- {tag}:begin -->", f"<!-- {tag}:end -->"
    text = (f"{begin}\nMeasured {time.strftime('%Y-%m-%d')} on this machine: "
            f"{os.cpu_count()} cores, {platform.machine()}, Linux {platform.release()}, RelWithDebInfo build, "
            f"4 simulated GPUs, {where}.  Command: `{cmd}`"
            f"{'' if a.state_root else ' (or `make bench` in the build dir)'}.\n\n{table(results)}\n{end}")
    print(text)
    print(json.dumps(results, indent=1), file=sys.stderr)
    if a.write:
        try:
            with open(a.write) as f:
                doc = f.read()
        except FileNotFoundError:
            doc = "# Performance\n"
        b, e = doc.find(begin), doc.find(end)
        doc = doc[:b] + text + doc[e + len(end):] if b >= 0 and e >= 0 else doc + "\n" + text + "\n"
        with open(a.write, "w") as f:
            f.write(doc)


if __name__ == "__main__":
    main()

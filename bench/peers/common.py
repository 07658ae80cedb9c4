"""What every peer driver of run.py shares: the log, bounded waits, the processes this run
started (stopped by PID), and the workloads with their measurement (drain stamps, cancel)."""
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time

T0 = time.monotonic()


def log(msg):
    print(f"[{time.monotonic() - T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def pct(values, p):
    """The p-th percentile; NaN when there is nothing to measure (a run too short to have a
    second job on any GPU)."""
    v = sorted(values)
    if not v:
        return float("nan")
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def wait_until(pred, timeout, interval=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def sh(cmd, timeout=60, env=None, check=True, cwd=None, input=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd, input=input)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited {p.returncode}: {(p.stderr or p.stdout).strip()[:500]}")
    return p


def alive(pid):
    """True while the process exists and is not a zombie (a zombie holds no GPU and no memory)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_rate(argv, env=None, n=200):
    """Process starts per second of a command that does nothing (`--version`)."""
    t0 = time.perf_counter()
    for _ in range(n):
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
    return n / (time.perf_counter() - t0)


def lines(path):
    try:
        with open(path) as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


# ---------------------------------------------------------------- processes we started
class Pids:
    """Every daemon this run starts, by PID, stopped by PID (SIGTERM, then SIGKILL)."""

    def __init__(self):
        self.procs = []  # (name, pid, Popen or None)

    def add(self, name, pid, popen=None):
        log(f"started {name}: pid {pid}")
        self.procs.append((name, pid, popen))

    def stop(self, pid, timeout=15):
        for name, p, popen in list(self.procs):
            if p != pid:
                continue
            if alive(pid):
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                try:
                    wait_until(lambda: (popen.poll() is not None) if popen else not alive(pid), timeout,
                               what=f"{name} (pid {pid}) to stop")
                except TimeoutError:
                    log(f"{name} (pid {pid}) ignored SIGTERM for {timeout}s: SIGKILL")
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            if popen:
                try:
                    popen.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            self.procs.remove((name, p, popen))
            log(f"stopped {name} (pid {pid})")

    def stop_all(self):
        for name, pid, popen in reversed(list(self.procs)):
            try:
                self.stop(pid)
            except Exception as e:  # keep stopping the others
                log(f"stopping {name}: {e}")


def strays(root):
    """Processes left behind by the jobs and servers of this run: those whose command line,
    environment or working directory names this run's private temp dir (nothing else can)."""
    me = {os.getpid(), os.getppid()}
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in me:
            continue
        pid = int(d)
        hit = False
        try:
            for f in ("cmdline", "environ"):
                with open(f"/proc/{pid}/{f}", "rb") as fh:
                    if root.encode() in fh.read():
                        hit = True
                        break
            if not hit:
                hit = os.readlink(f"/proc/{pid}/cwd").startswith(root)
        except OSError:
            continue
        if hit and alive(pid):
            out.append(pid)
    return out


def kill_strays(root, what):
    pids = strays(root)
    if pids:
        log(f"{what}: {len(pids)} leftover processes of this run, SIGKILL by pid: {pids[:20]}")
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            wait_until(lambda: not any(alive(p) for p in pids), 10, what="leftovers to die")
        except TimeoutError as e:
            log(str(e))
    return len(pids)


# ---------------------------------------------------------------- the shared workloads
CANCEL_SCRIPTS = {
    # Every process ignores SIGTERM (a hung job): only SIGKILL frees the GPU.
    "hung": """#!/bin/sh
trap '' TERM
sleep 1000 &
echo $! > "$1.tmp"
sleep 1000 &
echo $! >> "$1.tmp"
echo $$ >> "$1.tmp"
mv "$1.tmp" "$1"
wait
""",
    # The main process exits on SIGTERM, its children ignore it (data-loader workers).
    "orphans": """#!/bin/sh
(trap '' TERM; exec sleep 1000) &
echo $! > "$1.tmp"
(trap '' TERM; exec sleep 1000) &
echo $! >> "$1.tmp"
echo $$ >> "$1.tmp"
mv "$1.tmp" "$1"
wait
""",
}


def drain_stats(stamp_files, n, slots, per_gpu=True):
    """Gaps pooled over every round (one stamp file each); drain time: the median round."""
    gaps, any_gaps, times = [], [], []
    gpus = set()
    for path in stamp_files:
        with open(path) as f:
            rows = [line.split() for line in f]
        assert len(rows) == n, (path, len(rows), n)
        starts = sorted(float(r[1]) for r in rows)
        ends = sorted(float(r[2]) for r in rows)
        times.append(ends[-1] - starts[0])
        # Any-slot gap: with every slot busy and jobs waiting, the k-th job end (in time order)
        # frees the slot that the (k+slots)-th job start fills.
        any_gaps += [starts[k + slots] - ends[k] for k in range(len(rows) - slots)]
        if per_gpu:
            by = {}
            for g, s_, e in rows:
                by.setdefault(g, []).append((float(s_), float(e)))
            gpus |= set(by)
            for spans in by.values():
                spans.sort()
                gaps += [b[0] - a[1] for a, b in zip(spans, spans[1:])]
    if not per_gpu:
        gaps = any_gaps
    t = statistics.median(times)
    return {"jobs": n, "rounds": len(stamp_files), "seconds": t, "round_seconds": times, "per_s": n / t,
            "per_1000_s": 1000 * t / n, "gap_p50_ms": pct(gaps, 50) * 1000, "gap_p99_ms": pct(gaps, 99) * 1000,
            "any_gap_p50_ms": pct(any_gaps, 50) * 1000, "any_gap_p99_ms": pct(any_gaps, 99) * 1000,
            "gpus": sorted(gpus), "method": "per GPU (CUDA_VISIBLE_DEVICES)" if per_gpu else "any slot"}


def measure_cancel(pidfile, cancel_cmd, env, bound, cwd=None):
    """Runs the cancel command, then polls /proc until every PID the job wrote is gone.
    Returns seconds (or None if some survive `bound` seconds), and how many remained."""
    wait_until(lambda: os.path.exists(pidfile), 60, interval=0.02, what="the job to write its pids")
    with open(pidfile) as f:
        pids = [int(x) for x in f.read().split()]
    assert pids and all(alive(p) for p in pids), pids
    t0 = time.monotonic()
    p = subprocess.Popen(cancel_cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cmd_s = None
    gone = None
    deadline = t0 + bound
    while time.monotonic() < deadline:
        if cmd_s is None and p.poll() is not None:
            cmd_s = time.monotonic() - t0
        if not any(alive(x) for x in pids):
            gone = time.monotonic() - t0
            break
        time.sleep(0.005)
    try:
        out, err = p.communicate(timeout=max(1, deadline - time.monotonic() + 5))
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    if cmd_s is None:
        cmd_s = time.monotonic() - t0
    left = [x for x in pids if alive(x)]
    for x in left:  # what the tool did not kill, we do (by the pids the job wrote)
        try:
            os.kill(x, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return {"seconds": gone, "remaining": len(left), "of": len(pids), "cmd_s": cmd_s, "cmd_rc": p.returncode,
            "cmd_err": (err or "").strip()[:200]}


def split_batches(jobs, limit=1000 * 1024):
    """Bodies for POST /api/v1/jobs/batch, each under 1 MiB."""
    out, cur, size = [], [], 20
    for j in jobs:
        s = len(json.dumps(j)) + 2
        if cur and size + s > limit:
            out.append(cur)
            cur, size = [], 20
        cur.append(j)
        size += s
    if cur:
        out.append(cur)
    return out

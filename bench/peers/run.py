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
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import statefs  # noqa: E402

PKGS = {"slurm-wlm": ["slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol", "sinfo"],
        "munge": ["munged", "mungekey"],
        "task-spooler": ["tsp"]}
BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"
T0 = time.monotonic()


def log(msg):
    print(f"[{time.monotonic() - T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def pct(values, p):
    v = sorted(values)
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


# ---------------------------------------------------------------- gpuward and task-spooler
# The two are close on several rows, so their measurements are interleaved (round by round)
# and both see the same machine load; Slurm is orders of magnitude apart and runs after them.
def write_script(d, kind):
    path = os.path.join(d, f"cancel-{kind}.sh")
    with open(path, "w") as f:
        f.write(CANCEL_SCRIPTS[kind])
    os.chmod(path, 0o755)
    return path, os.path.join(d, f"pids-{kind}")


class GwSide:
    name = "gpuward"

    def __init__(self, a, tmp, pids, res):
        os.environ["GW_BUILD_DIR"] = a.build
        import gwtest
        self.gw, self.a, self.tmp, self.pids, self.res = gwtest, a, tmp, pids, res
        self.stamp = os.path.join(a.build, "bench", "gw-bench-stamp")
        self.d = None

    def daemon(self):
        tempfile.tempdir = self.tmp  # the daemon's state dir goes under this run's temp dir
        try:
            d = self.gw.Daemon(gpus=4, grace=self.a.grace).start()
        finally:
            tempfile.tempdir = None
        self.pids.add("gpuwardd", d.proc.pid, d.proc)
        return d

    def job(self, cmd, **kw):
        return dict({"command": cmd, "cwd": self.d.work, "ngpus": 1, "time_limit": 3600}, **kw)

    def start_submit(self):
        # submissions queue behind a 4-GPU job, so only the submit path is measured
        self.d = self.daemon()
        st, r = self.d.api("POST", "/api/v1/jobs", self.job(["sleep", "3600"], ngpus=4))
        assert st == 201, r
        self.d.wait_state(r["id"], "RUNNING")
        self.cmd = [self.gw.GPUWARD, "--socket", self.d.socket, "submit", "-q", "--gpus", "1", "--", "true"]

    def submit(self, k):
        t0 = time.perf_counter()
        for _ in range(k):
            sh(self.cmd, cwd=self.d.work, timeout=30)
        return time.perf_counter() - t0

    def start_rate(self, n):
        return start_rate([self.gw.GPUWARD, "--version"], n=n)

    def finish_submit(self):
        a, res = self.a, self.res
        try:
            batches = split_batches([self.job(["true"]) for _ in range(a.jobs)])
            bodies = [json.dumps({"jobs": b}) for b in batches]  # a client has its body ready
            t0 = time.perf_counter()
            for b, body in zip(batches, bodies):
                st, r = self.d.api("POST", "/api/v1/jobs/batch", body, timeout=120)
                assert st == 201 and len(r["ids"]) == len(b), (st, r)
            res["submit_batch"] = a.jobs / (time.perf_counter() - t0)
            res["submit_batch_how"] = (f"`POST /api/v1/jobs/batch`, {len(bodies)} request"
                                       f"{'s' if len(bodies) > 1 else ''}, body < 1 MiB")
            log(f"gpuward: batch of {a.jobs}: {res['submit_batch']:.0f}/s")
            out = sh([os.path.join(a.build, "bench", "gw-bench-apiload"), self.d.socket, str(a.jobs),
                      json.dumps(self.job(["true"]))], timeout=300).stdout.split()
            res["api_single_per_s"] = int(out[0]) / float(out[1])
            log(f"gpuward: one API client: {res['api_single_per_s']:.0f}/s")
        finally:
            self.drop_daemon()

    def drop_daemon(self):
        # cancelling the blocker would start thousands of jobs: stop the daemon, then the blocker
        d, self.d = self.d, None
        if d is None:
            return
        try:
            st, r = d.api("GET", "/api/v1/jobs?state=RUNNING")
        except Exception:
            r = {}
        if d.proc:
            self.pids.stop(d.proc.pid)
            d.proc = None
        for j in r.get("jobs", []):
            try:
                os.killpg(j["pid"], signal.SIGKILL)
            except (ProcessLookupError, TypeError):
                pass
        kill_strays(d.dir, "gpuward blocker")
        d.log.close()
        shutil.rmtree(d.dir, ignore_errors=True)

    def start_drain(self):
        self.d = self.daemon()

    def drain_round(self, n, r):
        out = os.path.join(self.d.work, f"stamps-{r}")
        for b in split_batches([self.job([self.stamp, out]) for _ in range(n)]):
            st, rr = self.d.api("POST", "/api/v1/jobs/batch", json.dumps({"jobs": b}), timeout=120)
            assert st == 201, rr
        wait_until(lambda: lines(out) >= n, 60 + n * 0.5, interval=0.1, what="gpuward drain")
        self.d.wait_state(rr["ids"][-1], "COMPLETED", timeout=60)
        return out

    def cancel(self, kind):
        script, pf = write_script(self.d.work, kind)
        jid = sh([self.gw.GPUWARD, "--socket", self.d.socket, "submit", "-q", "--gpus", "1", "--", script, pf],
                 cwd=self.d.work).stdout.strip()
        return measure_cancel(pf, [self.gw.GPUWARD, "--socket", self.d.socket, "cancel", jid], None,
                              self.a.grace + 60)

    def close(self):
        if self.d is not None:
            d, self.d = self.d, None
            proc = d.proc
            d.cleanup()  # cancels what is left, stops the daemon, removes its dir
            self.pids.procs = [x for x in self.pids.procs if x[2] is not proc or proc is None]


class TspSide:
    """task-spooler: its own server on its own TS_SOCKET, 4 slots."""
    name = "task-spooler"

    def __init__(self, a, tmp, pids, res):
        self.a, self.pids, self.res = a, pids, res
        self.dir = os.path.join(tmp, "tsp")
        os.makedirs(self.dir)
        self.sock = os.path.join(self.dir, "ts.sock")
        self.env = dict(os.environ, TS_SOCKET=self.sock, TMPDIR=self.dir, TS_MAXFINISHED="100000")
        self.server = None
        self.stamp = os.path.join(a.build, "bench", "gw-bench-stamp")
        self.chunk = min(a.tsp_chunk, a.jobs)

    def __call__(self, *args, timeout=30):
        return sh(["tsp", *map(str, args)], env=self.env, timeout=timeout, cwd=self.dir).stdout.strip()

    def _server_pid(self):
        """The server is the process holding the listening socket bound to our TS_SOCKET."""
        inodes = set()
        with open("/proc/net/unix") as f:
            next(f)
            for line in f:
                parts = line.split()
                if len(parts) >= 8 and parts[7] == self.sock and int(parts[3], 16) & 0x10000:
                    inodes.add(parts[6])
        targets = {f"socket:[{i}]" for i in inodes}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                for fd in os.listdir(f"/proc/{d}/fd"):
                    if os.readlink(f"/proc/{d}/fd/{fd}") in targets:
                        return int(d)
            except OSError:
                continue
        return None

    def state(self, jid):
        return self("-s", jid)

    def block(self):
        """A 4-slot job that holds every slot."""
        b = self("-N", "4", "sleep", "3600")
        wait_until(lambda: self.state(b) == "running", 10, what="the tsp blocker to run")
        return b

    def release(self, blocker, last, timeout=120):
        self("-k", blocker)
        if last is not None:
            wait_until(lambda: self.state(last) == "finished", timeout, interval=0.1, what="the tsp queue to drain")
        wait_until(lambda: self.state(blocker) == "finished", 10, what="the tsp blocker to end")
        self("-C")

    def start_submit(self):
        self("-S", "4")  # the first call forks the server
        self.server = wait_until(self._server_pid, 10, what="the tsp server")
        self.pids.add("tsp server", self.server)
        assert self("-S") == "4"
        self.blocker, self.queued, self.last = self.block(), 0, None

    def submit(self, k):
        # The server select()s on one connection per queued job (each queued job is a waiting
        # client process): it holds at most ~990.  Drain (untimed) before a chunk is full.
        if self.queued + k > self.chunk:
            self.release(self.blocker, self.last)
            self.blocker, self.queued = self.block(), 0
        t0 = time.perf_counter()
        for _ in range(k):
            self.last = self("true")
        self.queued += k
        return time.perf_counter() - t0

    def start_rate(self, n):
        return start_rate(["tsp", "-V"], env=self.env, n=n)

    def finish_submit(self):
        self.release(self.blocker, self.last)
        self.res["submit_seq_note"] = f"at most {self.chunk} queued at once"

    def start_drain(self):
        pass

    def drain_round(self, n, r):
        # queue up to a chunk behind the blocker, release it, queue the rest while it runs
        out = os.path.join(self.dir, f"stamps-{r}")
        b = self.block()
        first = min(n, self.chunk)
        for _ in range(first):
            last = self(self.stamp, out)
        self("-k", b)
        for _ in range(n - first):
            last = self(self.stamp, out)
        wait_until(lambda: lines(out) >= n, 60 + n * 0.5, interval=0.1, what="tsp drain")
        wait_until(lambda: self.state(last) == "finished", 30, what="the last tsp job")
        self("-C")
        return out

    def cancel(self, kind):
        script, pf = write_script(self.dir, kind)
        jid = self(script, pf)
        return measure_cancel(pf, ["tsp", "-k", jid], self.env, self.a.tsp_cancel_bound)

    def close(self):
        if self.server and alive(self.server):
            try:
                self("-K", timeout=10)
            except Exception as e:
                log(f"tsp -K: {e}")
            self.pids.stop(self.server)
        self.server = None
        kill_strays(self.dir, "task-spooler")


def run_gw_and_tsp(a, tmp, pids, g, ts, only):
    sides = []
    for cls, res, key in ((GwSide, g, "gpuward"), (TspSide, ts, "tsp")):
        if key not in only:
            res["error"] = "not run (--only)"
            continue
        try:
            sides.append((cls(a, tmp, pids, res), res))
        except Exception as e:
            res["error"] = f"{type(e).__name__}: {e}"

    def each(step, *args):
        """Runs step on every side still standing; a failure takes that side out (reported)."""
        out = {}
        for side, res in sides:
            if "error" in res:
                continue
            try:
                out[side.name] = getattr(side, step)(*args)
            except Exception as e:
                res["error"] = f"{type(e).__name__} in {step}: {e}"
                log(f"{side.name} failed in {step}:\n{traceback.format_exc()}")
                try:
                    side.close()
                except Exception as e2:
                    log(f"{side.name} close: {e2}")
        return out

    by_name = {s.name: res for s, res in sides}
    try:
        each("start_submit")
        spent = {s.name: 0.0 for s, _ in sides}
        step = 100
        for k in range(0, a.jobs, step):  # separate submissions, interleaved in rounds of 100
            for name, dt in each("submit", min(step, a.jobs - k)).items():
                spent[name] += dt
        for side, res in sides:
            if "error" not in res:
                res["submit_seq"] = a.jobs / spent[side.name]
                log(f"{side.name}: {a.jobs} separate submits: {res['submit_seq']:.0f}/s")
        rates = {}
        for _ in range(4):  # process start alone, interleaved
            for name, r in each("start_rate", 50).items():
                rates.setdefault(name, []).append(r)
        for side, res in sides:
            if side.name in rates:
                res["start_per_s"] = statistics.median(rates[side.name])
        each("finish_submit")
        each("start_drain")
        files = {}
        for r in range(a.rounds):  # drain rounds, interleaved
            for name, f in each("drain_round", a.jobs, r).items():
                files.setdefault(name, []).append(f)
        for side, res in sides:
            if "error" not in res and side.name in files:
                res["drain"] = drain_stats(files[side.name], a.jobs, 4, per_gpu=side.name == "gpuward")
                log(f"{side.name}: drain {res['drain']}")
        for kind in CANCEL_SCRIPTS:
            for name, c in each("cancel", kind).items():
                by_name[name][f"cancel_{kind}"] = c
                log(f"{name}: cancel {kind}: {c}")
    finally:
        for side, res in sides:
            try:
                side.close()
            except Exception as e:
                log(f"{side.name} close: {e}")


# ---------------------------------------------------------------- Slurm
class Slurm:
    def __init__(self, tmp, pids):
        self.dir = os.path.join(tmp, "slurm")
        self.pids = pids
        self.conf = os.path.join(self.dir, "etc", "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.work = os.path.join(self.dir, "work")
        self.munged = self.ctld = self.slurmd = None
        self.ports = (free_port(), free_port())
        self.run_no = 0
        self.cgroups_before = self._cgroups()

    @staticmethod
    def _cgroups():
        out = set()
        base = "/sys/fs/cgroup"
        try:
            for c in os.listdir(base):
                p = os.path.join(base, c)
                if os.path.isdir(p) and not os.path.islink(p):
                    for s in os.listdir(p):
                        if s.startswith("slurm") and os.path.isdir(os.path.join(p, s)):
                            out.add(os.path.join(p, s))
        except OSError:
            pass
        return out

    def __call__(self, *args, timeout=60, check=True):
        return sh([*map(str, args)], env=self.env, timeout=timeout, check=check, cwd=self.work).stdout.strip()

    def start_munge(self):
        md = os.path.join(self.dir, "munge")
        for d in ("etc", "dev", "work", "log"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        os.chmod(self.dir, 0o755)
        os.chmod(self.work, 0o777)
        os.makedirs(md)
        shutil.chown(md, "munge", "munge")
        os.chmod(md, 0o755)  # munged refuses a socket dir without execute for all
        key = os.path.join(md, "munge.key")
        sh(["mungekey", "-c", "-k", key])
        shutil.chown(key, "munge", "munge")
        os.chmod(key, 0o400)
        self.munge_sock = os.path.join(md, "munge.sock")
        logf = open(os.path.join(self.dir, "log", "munged.log"), "ab")
        p = subprocess.Popen(["munged", "-F", f"--key-file={key}", f"--socket={self.munge_sock}",
                              f"--pid-file={md}/munged.pid", f"--seed-file={md}/munged.seed",
                              f"--log-file={md}/munged.log"],
                             user="munge", group="munge", extra_groups=[], cwd=md, stdout=logf,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        logf.close()
        self.munged = p
        self.pids.add("munged", p.pid, p)
        wait_until(lambda: os.path.exists(self.munge_sock) or p.poll() is not None, 15, what="munged")
        if p.poll() is not None:
            raise RuntimeError(f"munged exited {p.returncode}: {self.tail('munged.log')}")
        for i in range(4):  # fake GPUs: GRES files must be character devices (as /dev/null: 1,3)
            os.mknod(os.path.join(self.dir, "dev", f"nvidia{i}"), 0o666 | 0o020000, os.makedev(1, 3))

    def tail(self, name, n=1500):
        try:
            with open(os.path.join(self.dir, "log", name), "rb") as f:
                return f.read().decode(errors="replace")[-n:]
        except OSError as e:
            return str(e)

    def write_conf(self, sched_params, max_array):
        d = self.dir
        self.run_no += 1
        state = os.path.join(d, f"ctld-state-{self.run_no}")
        spool = os.path.join(d, f"slurmd-spool-{self.run_no}")
        os.makedirs(state)
        os.makedirs(spool)
        ncpu = os.cpu_count() or 2
        conf = f"""# written by bench/peers/run.py
ClusterName=gwpeers
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={self.ports[0]}
SlurmdPort={self.ports[1]}
AuthType=auth/munge
AuthInfo=socket={self.munge_sock}
CredType=cred/munge
StateSaveLocation={state}
SlurmdSpoolDir={spool}
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/cgroup
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerNode=100
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc={d}/log/jobcomp.txt
MpiDefault=none
ReturnToService=2
MaxArraySize={max_array}
MaxJobCount=100000
{'SchedulerParameters=' + sched_params if sched_params else '# SchedulerParameters: stock'}
NodeName=localhost NodeAddr=127.0.0.1 CPUs={ncpu} RealMemory=2000 Gres=gpu:4 State=UNKNOWN
PartitionName=bench Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
"""
        with open(self.conf, "w") as f:
            f.write(conf)
        with open(os.path.join(d, "etc", "gres.conf"), "w") as f:
            f.write(f"AutoDetect=off\nNodeName=localhost Name=gpu File={d}/dev/nvidia[0-3]\n")
        with open(os.path.join(d, "etc", "cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n")

    def start(self, sched_params, max_array):
        self.write_conf(sched_params, max_array)
        for name, argv in (("slurmctld", ["slurmctld", "-D", "-i"]), ("slurmd", ["slurmd", "-D", "-N", "localhost"])):
            logf = open(os.path.join(self.dir, "log", f"{name}.out"), "ab")
            p = subprocess.Popen(argv, env=self.env, cwd=self.dir, stdout=logf, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
            logf.close()
            setattr(self, "ctld" if name == "slurmctld" else "slurmd", p)
            self.pids.add(name, p.pid, p)
            time.sleep(0.3)
            if p.poll() is not None:
                raise RuntimeError(f"{name} exited {p.returncode}: {self.tail(name + '.out')}")

        def idle():
            for p in (self.ctld, self.slurmd):
                if p.poll() is not None:
                    raise RuntimeError(f"{p.args[0]} exited {p.returncode}: {self.tail(p.args[0] + '.out')}")
            r = sh(["sinfo", "-h", "-o", "%T"], env=self.env, timeout=15, check=False)
            return r.returncode == 0 and r.stdout.strip() == "idle"
        wait_until(idle, 60, interval=0.3, what="the Slurm node to be idle")
        cfg = self("scontrol", "show", "config")
        self.config = {k.strip(): v.strip() for k, _, v in (l.partition("=") for l in cfg.splitlines()) if _}

    def stop_slurm(self):
        try:
            if self.ctld and self.ctld.poll() is None:
                self.cancel_all()
        except Exception as e:
            log(f"slurm cancel all: {e}")
        for p in (self.slurmd, self.ctld):
            if p:
                self.pids.stop(p.pid)
        self.slurmd = self.ctld = None
        kill_strays(os.path.join(self.dir, "work"), "slurm jobs")

    def stop(self):
        self.stop_slurm()
        if self.munged:
            self.pids.stop(self.munged.pid)
            self.munged = None
        kill_strays(self.dir, "slurm")
        # the cgroups slurmd made (proctrack/cgroup), deepest first
        for top in sorted(self._cgroups() - self.cgroups_before):
            for dirpath, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
                try:
                    os.rmdir(dirpath)
                except OSError as e:
                    log(f"cannot remove cgroup {dirpath}: {e}")

    def jobs(self):
        return [x for x in self("squeue", "-h", "-o", "%i").split() if x]

    def cancel_all(self, timeout=120):
        ids = self("squeue", "-h", "-r", "-o", "%F").split()
        ids = sorted(set(ids))
        if ids:
            self("scancel", *ids, timeout=60)
        wait_until(lambda: not self.jobs(), timeout, interval=0.5, what="the Slurm queue to empty")

    def state(self, jid):
        return self("squeue", "-h", "-j", jid, "-o", "%T", check=False)

    def sbatch(self, *args, timeout=30):
        return self("sbatch", "--parsable", "--chdir", self.work, *args,
                    timeout=timeout).split(";")[0]


def run_slurm(a, tmp, pids, res, res_stock):
    stamp = os.path.join(a.build, "bench", "gw-bench-stamp")
    s = Slurm(tmp, pids)
    try:
        s.start_munge()
        s.start(a.sched_params, max(1001, a.jobs + 1, a.slurm_drain_jobs + 1))
        res["config"] = {k: s.config.get(k) for k in ("KillWait", "SchedulerParameters", "SelectType",
                                                       "SelectTypeParameters", "ProctrackType")}
        log(f"slurm up: {res['config']}")
        # (a) submissions behind a 4-GPU job
        b = s.sbatch("--gres=gpu:4", "--wrap", "sleep 3600")
        wait_until(lambda: s.state(b) == "RUNNING", 30, interval=0.2, what="the Slurm blocker to run")
        t0 = time.perf_counter()
        for _ in range(a.jobs):
            s.sbatch("--gres=gpu:1", "--wrap", "true")
        res["submit_seq"] = a.jobs / (time.perf_counter() - t0)
        log(f"slurm: {a.jobs} separate sbatch: {res['submit_seq']:.0f}/s")
        res["start_per_s"] = start_rate(["sbatch", "--version"], env=s.env)
        t0 = time.perf_counter()
        s.sbatch(f"--array=1-{a.jobs}", "--gres=gpu:1", "--wrap", "true", timeout=120)
        res["submit_batch"] = a.jobs / (time.perf_counter() - t0)
        res["submit_batch_how"] = f"one `sbatch --array=1-{a.jobs}`"
        log(f"slurm: array of {a.jobs}: {res['submit_batch']:.0f}/s")
        s.cancel_all()

        # (b) drain (a job array: one submission, then only the scheduler is measured)
        def drain(n, into, gap_guess):
            out = os.path.join(s.work, f"stamps-{s.run_no}")
            s.sbatch(f"--array=1-{n}", "--gres=gpu:1", "--wrap", f"{stamp} {out}", timeout=120)
            wait_until(lambda: lines(out) >= n, 60 + n * gap_guess / 2, interval=0.5,
                       what=f"Slurm drain of {n} jobs")
            wait_until(lambda: not s.jobs(), 60, interval=0.5, what="the Slurm queue to empty")
            into["drain"] = drain_stats([out], n, 4)
            log(f"slurm: drain {into['drain']}")

        drain(a.slurm_drain_jobs, res, 1.0)

        # (c) cancel
        for kind, text in CANCEL_SCRIPTS.items():
            script = os.path.join(s.work, f"cancel-{kind}.sh")
            with open(script, "w") as f:
                f.write(text)
            os.chmod(script, 0o755)
            pf = os.path.join(s.work, f"pids-{kind}")
            jid = s.sbatch("--gres=gpu:1", script, pf)
            res[f"cancel_{kind}"] = measure_cancel(pf, ["scancel", jid], s.env, int(s.config.get(
                "KillWait", "30 sec").split()[0]) + 60)
            log(f"slurm: cancel {kind}: {res[f'cancel_{kind}']}")
            wait_until(lambda: not s.jobs(), 60, interval=0.2, what="the cancelled Slurm job to leave")

        # stock scheduler settings: restart slurmctld and slurmd without SchedulerParameters
        if a.slurm_stock_drain_jobs:
            s.stop_slurm()
            try:
                s.start("", max(1001, a.slurm_stock_drain_jobs + 1))
                res_stock["config"] = {"SchedulerParameters": s.config.get("SchedulerParameters")}
                drain(a.slurm_stock_drain_jobs, res_stock, 3.0)
            except Exception as e:
                res_stock["error"] = f"{type(e).__name__}: {e}"
                log(f"slurm stock: {traceback.format_exc()}")
    finally:
        s.stop()


# ---------------------------------------------------------------- report
def table(a, g, sl, st, ts):
    """The Markdown table, and the (measure key, peer) pairs where gpuward is not ahead."""
    for t in (g, sl, st, ts):
        if "error" in t:
            t["error_short"] = ("not run" if t["error"].startswith("not run") else "**failed**: " +
                                t["error"].replace("|", "/").replace("\n", " ")[:160])
    peers = [("Slurm", sl), ("Slurm stock", st), ("task-spooler", ts)]
    rows, behind = [], []

    def secs(v):
        return f"{v * 1000:.1f} ms" if v < 1 else f"{v:.2f} s"

    def ratio(key, gv, pv, higher_better, peer):
        if gv is None or pv is None or pv == 0 or gv == 0:
            return "—"
        r = gv / pv
        good = r > 1 if higher_better else r < 1
        if not good:
            behind.append((key, peer))
        return f"{r:.3g}{' ✓' if good else ''}"

    def drain_cell(t, key):
        if "drain" not in t:
            return t.get("error_short", "—")
        d = t["drain"]
        if key == "seconds":
            extra = "" if d["jobs"] == 1000 else f" ({d['jobs']} jobs; ≈ {d['per_1000_s']:.0f} s per 1,000)"
            return f"{d['seconds']:.2f} s{extra}, {d['per_s']:,.1f} jobs/s"
        return f"{d[key]:.1f} ms"

    def dv(t, key):
        if "drain" not in t:
            return None
        return t["drain"]["per_1000_s"] if key == "seconds" else t["drain"][key]

    def grace_of(t):
        if t is g:
            return a.grace
        kw = t.get("config", {}).get("KillWait")
        return int(kw.split()[0]) if kw else None

    def cancel_cell(t, kind):
        c = t.get(f"cancel_{kind}")
        if c is None:
            return t.get("error_short", "—")
        if c["seconds"] is None:
            return f"never: {c['remaining']} of {c['of']} processes still alive {a.tsp_cancel_bound} s later"
        if kind == "hung" and grace_of(t) is not None:
            d = c["seconds"] - grace_of(t)
            return f"{secs(c['seconds'])} (grace {grace_of(t)} s {'+' if d >= 0 else '−'} {secs(abs(d))})"
        return secs(c["seconds"])

    def row(key, name, gcell, cells, gval, vals, higher, special=None):
        r = [name, gcell] + cells
        for (pn, t), pv in zip(peers, vals):
            if special and special(t):
                r.append(special(t))
            else:
                r.append(ratio(key, gval, pv, higher, pn))
        rows.append(r)

    def cell(t, key, fmt):
        if key in t:
            return fmt(t[key])
        return t.get("error_short", "—")

    def rate(v):
        return f"{v:,.0f}/s"

    row("submit_seq", f"Submissions, {a.jobs:,} separate commands, one at a time (higher is better)",
        cell(g, "submit_seq", rate),
        [cell(sl, "submit_seq", rate), "not measured", cell(ts, "submit_seq", rate) +
         (f" (≤ {min(a.tsp_chunk, a.jobs)} queued at once: see below)" if "submit_seq" in ts else "")],
        g.get("submit_seq"), [sl.get("submit_seq"), None, ts.get("submit_seq")], True)
    row("start", "For reference: process start alone, `gpuward --version` / `sbatch --version` / "
                 "`tsp -V` one after another (higher is better)",
        cell(g, "start_per_s", rate), [cell(sl, "start_per_s", rate), "not measured", cell(ts, "start_per_s", rate)],
        g.get("start_per_s"), [sl.get("start_per_s"), None, ts.get("start_per_s")], True)
    row("submit_batch", f"Submissions, best batch path, {a.jobs:,} jobs (higher is better)",
        cell(g, "submit_batch", lambda v: f"{v:,.0f}/s ({g.get('submit_batch_how')})"),
        [cell(sl, "submit_batch", lambda v: f"{v:,.0f}/s ({sl.get('submit_batch_how')})"), "not measured",
         "none: tsp has no batch submission"],
        g.get("submit_batch"), [sl.get("submit_batch"), None, None], True)
    for key, name in (
            ("seconds", "Drain: first job start to last job end, jobs of `gw-bench-stamp` on 4 GPUs/slots "
                        "(lower is better; ratio on the time per 1,000 jobs)"),
            ("gap_p50_ms", "Dispatch gap, a job's end → next start on that GPU/slot, p50 (lower is better)"),
            ("gap_p99_ms", "Dispatch gap, p99 (lower is better)")):
        row(key, name, drain_cell(g, key), [drain_cell(sl, key), drain_cell(st, key), drain_cell(ts, key)],
            dv(g, key), [dv(sl, key), dv(st, key), dv(ts, key)], False)

    for kind, name in (
            ("hung", f"Cancel → all processes gone, every process ignores SIGTERM (gpuward `--grace-seconds "
                     f"{a.grace}`, Slurm `KillWait` {sl.get('config', {}).get('KillWait', '?')}; lower is better)"),
            ("orphans", "Cancel → all processes gone, main process exits on SIGTERM, its 2 children ignore it "
                        "(lower is better)")):
        def special(t, kind=kind):
            c = t.get(f"cancel_{kind}")
            if c and c["seconds"] is None and g.get(f"cancel_{kind}", {}).get("seconds") is not None:
                return "gpuward frees the GPU, tsp never ✓"
            return None
        row(f"cancel_{kind}", name, cancel_cell(g, kind),
            [cancel_cell(sl, kind), "not measured", cancel_cell(ts, kind)],
            (g.get(f"cancel_{kind}") or {}).get("seconds"),
            [(sl.get(f"cancel_{kind}") or {}).get("seconds"), None, (ts.get(f"cancel_{kind}") or {}).get("seconds")],
            False, special)
    sched = sl.get("config", {}).get("SchedulerParameters") or a.sched_params
    head = ["measure", "gpuward", f"Slurm 22.05 (`{sched}`)", "Slurm 22.05 (stock scheduler settings)",
            "task-spooler (4 slots, no GPUs)", "gpuward ÷ Slurm", "gpuward ÷ Slurm stock", "gpuward ÷ tsp"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out), [b for b in behind if b[0] != "start"]


def notes(a, g, sl, st, ts, report, behind):
    n = []
    kw = sl.get("config", {}).get("KillWait", "?")
    n.append("Ratios are gpuward's figure divided by the peer's: for submissions (higher is better) a ratio "
             "above 1 favours gpuward; for times (lower is better) a ratio below 1 does. ✓ marks the rows where "
             "gpuward is ahead.")
    n.append("**Set-up.** Slurm: `munged` (own key and socket), `slurmctld -D -i` and `slurmd -D -N localhost` "
             "started by this script, state under the temp dir; `select/cons_tres`, `CR_Core_Memory`, "
             "`DefMemPerNode=100`, partition `OverSubscribe=FORCE:4` (else only as many 1-GPU jobs run as "
             "there are CPUs), `proctrack/cgroup` (cgroup v1), 4 GRES GPUs backed by character devices "
             "made with `mknod` (jobs get `CUDA_VISIBLE_DEVICES`), no slurmdbd. The tuned column uses "
             f"`SchedulerParameters={a.sched_params}`; the stock column restarts both Slurm daemons without "
             "SchedulerParameters (`batch_sched_delay=3`). task-spooler: its own `TS_SOCKET`, `tsp -S 4`. "
             f"gpuward: `gpuwardd --simulate-gpus 4` (fake NVML), `--grace-seconds {a.grace}`"
             f"{' (its default)' if a.grace == 30 else ' (its default is 30)'}. "
             "In all three every job's output goes to a file (Slurm's `slurm-%j.out`, tsp's `ts-out.*`, "
             "gpuward's job log). "
             "Everything on loopback and one Unix socket each.")
    n.append("**Submissions.** Each tool's queue is first filled by a job holding all 4 GPUs/slots so "
             "the submitted jobs wait and only the submit path is timed; each submission is a separate "
             "process (`sbatch --gres=gpu:1 --wrap true`, `tsp true`, `gpuward submit -q --gpus 1 -- true`), "
             "run one after another; gpuward's and task-spooler's are interleaved (100 of one, then 100 of "
             "the other) so that both see the same machine load. Batch: one `sbatch --array`; gpuward's "
             "`POST /api/v1/jobs/batch` in as many requests as keep each body under 1 MiB. task-spooler keeps one waiting client process "
             "and one connection per queued job and its server `select()`s on them, so it cannot hold more "
             "than ~990 queued jobs (the 994th submission blocks until a slot frees); its submissions are "
             f"measured with at most {min(a.tsp_chunk, a.jobs)} queued, the queue drained (untimed) before it "
             "would hold more; in the drain rounds the first "
             f"{min(a.tsp_chunk, a.jobs)} jobs are queued behind the blocker and the rest added while it runs.")
    sd = sl.get("drain", {}).get("jobs")
    ssd = st.get("drain", {}).get("jobs")
    n.append("**Drain and dispatch gap.** The jobs are `bench/stamp.c`, which appends its exec time and exit "
             "time (and `CUDA_VISIBLE_DEVICES`) to a file, so the gaps come from the jobs' own clocks. "
             f"Drain time is first start to last end; gpuward and task-spooler run {a.rounds} interleaved rounds "
             "each, the table gives the median round and the gaps pooled over all rounds. gpuward and Slurm: per GPU, gap = next job's exec on "
             "that GPU minus the previous job's exit there. task-spooler has no GPUs: its gap is measured "
             "over any slot — with all 4 slots busy and jobs waiting, the k-th job end (in time order) "
             "frees the slot that the (k+4)-th job start takes, so gap = start[k+4] − end[k]; its queue is "
             "filled behind a 4-slot blocker, which is then killed, so all 4 slots stay busy. "
             f"Jobs per round: gpuward {g.get('drain', {}).get('jobs', '—')} (one batch request), task-spooler "
             f"{ts.get('drain', {}).get('jobs', '—')} (separate `tsp` commands); Slurm " + (f"{sd} " if sd else "— ") + "(tuned) and " + (f"{ssd} " if ssd else "— ") +
             "(stock), each as one job array"
             + ("" if (sd or 1000) >= 1000 and (ssd or 1000) >= 1000 else
                ", fewer than 1,000 where marked because Slurm's scheduler starts a job only about once a "
                "second per GPU (tuned) or every 3 s (stock) and the run must stay short; the rate does "
                "not depend on the count, so the table also gives the time per 1,000")
             + ". The any-slot gap, computed "
             "for all as a cross-check, p50: "
             + "/".join(f"{t['drain']['any_gap_p50_ms']:.1f}" if 'drain' in t else "—" for t in (g, sl, st, ts))
             + " ms (gpuward/Slurm/Slurm stock/tsp).")
    h = {k: t.get("cancel_hung", {}) for k, t in (("g", g), ("s", sl), ("t", ts))}
    n.append("**Cancel.** The same script for all three, submitted as a 1-GPU job: it starts two `sleep 1000` "
             "children, writes the three PIDs to a file and waits. ‘Every process ignores SIGTERM’: the script "
             "runs `trap '' TERM` first (a hung job). ‘Main exits’: only the children ignore SIGTERM (like data "
             "loader workers). The clock starts just before the cancel command (`gpuward cancel`, `scancel`, "
             "`tsp -k`) and stops when none of the PIDs exists (zombies count as gone); /proc is polled every "
             f"5 ms. gpuward's grace (SIGTERM → SIGKILL) is {a.grace} s by default and Slurm's `KillWait` is {kw}: "
             "for a hung job both wait that long before SIGKILL; `gpuward cancel` itself returns only once "
             "the processes are gone. When the main process dies on SIGTERM, Slurm's step ends and "
             "slurmstepd kills the rest of the job's cgroup at once. `tsp -k` sends SIGTERM to the job's "
             f"process group and nothing else: processes that ignore it stay (measured for {a.tsp_cancel_bound} s, "
             "then this script SIGKILLs them by PID).")
    drain_keys = ("seconds", "gap_p50_ms", "gap_p99_ms")
    grouped = []
    for k, p in behind:
        if k in drain_keys:
            if ("drain", p) not in grouped:
                grouped.append(("drain", p))
        else:
            grouped.append((k, p))
    if behind:
        n.append("**Where gpuward is not ahead in this run, and why.**\n\n" +
                 "\n".join(f"- {why(a, g, sl, st, ts, k, p)}" for k, p in grouped))
    else:
        n.append("gpuward is ahead on every row measured in this run.")
    fails = [(name, t["error"]) for name, t in (("gpuward", g), ("Slurm", sl), ("Slurm stock", st),
                                                  ("task-spooler", ts)) if "error" in t]
    if fails:
        n.append("**Did not run.** " + "; ".join(f"{k}: {v}" for k, v in fails))
    n.append(f"Packages: {report.get('install')}.")
    return "\n\n".join(n)


def why(a, g, sl, st, ts, key, peer):
    """What we know about a row where gpuward is not ahead (measured facts, not guesses)."""
    name = {"drain": "Drain", "submit_seq": "Separate submissions", "submit_batch": "Batch submission", "seconds": "Drain",
            "gap_p50_ms": "Dispatch gap p50", "gap_p99_ms": "Dispatch gap p99", "cancel_hung": "Cancel of a hung job",
            "cancel_orphans": "Cancel, children ignore SIGTERM"}.get(key, key)
    head = f"{name}, vs {peer}: "
    if key == "submit_seq" and peer == "task-spooler":
        gs, ts_ = g.get("start_per_s"), ts.get("start_per_s")
        return head + (
            "each `gpuward submit` is a separate process (linked statically) that sends the "
            "caller's whole environment"
            + (f" (process start alone: `gpuward --version` {gs:,.0f}/s vs `tsp -V` {ts_:,.0f}/s)" if gs and ts_ else "")
            + ", and the daemon answers only once the job is committed to SQLite, so an acknowledged job "
            "survives `kill -9` of the daemon"
            + (f" (one C client on a kept-alive connection gets {g['api_single_per_s']:,.0f} durable "
               f"submissions/s: {1000 / g['api_single_per_s']:.2f} ms each in the daemon)" if g.get("api_single_per_s") else "")
            + ". The tsp server keeps its queue in memory only (lost with the "
            "server) and answers at once. For many jobs the API batch (a row below) is gpuward's fast path.")
    if key == "submit_batch" and peer == "Slurm":
        return head + (
            "the pending tasks of a Slurm job array share one job record in slurmctld, split off as "
            "they start (Slurm's job array documentation: arrays of millions of tasks are submitted in "
            "milliseconds), so `--array=1-1000` costs about one submission; gpuward's batch "
            f"creates {a.jobs:,} separate jobs in one SQLite transaction. For {a.jobs:,} jobs: gpuward "
            f"{1000 * a.jobs / g['submit_batch']:.1f} ms, Slurm {1000 * a.jobs / sl['submit_batch']:.1f} ms "
            "(the latter including the `sbatch` process start).")
    if key == "drain" and peer == "task-spooler":
        return "Drain and dispatch gap, vs task-spooler: " + (
            f"gpuward {g['drain']['per_s']:,.0f} jobs/s, tsp {ts['drain']['per_s']:,.0f} jobs/s (median round); "
            f"gap gpuward p50 {g['drain']['gap_p50_ms']:.1f} ms / p99 {g['drain']['gap_p99_ms']:.1f} ms, tsp p50 "
            f"{ts['drain']['gap_p50_ms']:.1f} ms / p99 {ts['drain']['gap_p99_ms']:.1f} ms. Every gpuward job "
            "start and end is recorded in SQLite (the start is committed before the job is spawned, so a "
            "crash cannot start it twice: see ‘What costs what’ above) and each job gets its own log file "
            "in the state dir; tsp keeps its queue in memory only (it too writes one output file per job). "
            f"With 4 jobs ending together on this machine's {os.cpu_count()} cores, the last of them also "
            "waits for a core (the analysis above).")
    if key == "cancel_hung":
        gc, pc = g["cancel_hung"]["seconds"], (sl if peer == "Slurm" else ts)["cancel_hung"]["seconds"]
        kw = int(sl.get("config", {}).get("KillWait", "30").split()[0])
        return head + (
            f"both wait their configured grace before SIGKILL ({a.grace} s for gpuward, `KillWait` "
            f"{sl.get('config', {}).get('KillWait', '?')} for Slurm, the defaults of both). Slurm's job was "
            f"gone {kw - pc:.2f} s before its nominal {kw} s, gpuward's {gc - a.grace:.3f} s after its "
            "grace: the same design (wait the grace, then kill the whole job), timed a little differently. "
            "`--grace-seconds` "
            "(or `grace-seconds` in the config file) shortens gpuward's wait.")
    return head + "not analysed."


def render(a, R):
    g, sl, st, ts, report, m = R["gpuward"], R["slurm"], R["slurm_stock"], R["tsp"], R["report"], R["meta"]
    tab, behind = table(a, g, sl, st, ts)
    return (f"{BEGIN}\n## Side by side with Slurm and task-spooler\n\n"
            f"Measured {m['date']} on this machine: {m['cores']} cores, {m['arch']}, Linux {m['kernel']} "
            f"(1/5/15-min load average {m['load_before']} before the run, {m['load_after']} after), gpuward RelWithDebInfo on 4 simulated GPUs, Slurm {m['slurm_version']}, task-spooler "
            f"{m['tsp_version']}, {report.get('state', 'state under the default temporary directory')}, "
            f"all in one run of `{m['cmd']}` ({m['elapsed_s']:.0f} s).\n\n"
            f"{tab}\n\n{notes(a, g, sl, st, ts, report, behind)}\n{END}")


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

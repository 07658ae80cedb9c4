#!/usr/bin/env python3
"""The real-GPU check (scripts/gw gpu-check; docs/GPU-CHECK.md).

Starts gpuwardd on the real NVML on a temporary state dir and socket, with short idle
timeouts, runs gpuload (tests/gpu) as jobs and outside gpuward, and prints one line per check:
PASS, FAIL or SKIP, with the figures.  Exits 1 on any FAIL, 2 when it could not start at all.
Everything it starts is stopped by PID; the temporary dir is removed.

For the tests only: --simulate N --nvml-lib PATH runs the daemon on the fake NVML (the checks
that need a CUDA driver are SKIPped, unless --libcuda names the fake libcuda.so.1, which
reports gpuload's memory and utilisation to the fake NVML), --simulate-config KEY=VALUE sets
the fake's MIG layout or GPM, and --smi-output FILE stands in for `nvidia-smi`.
The judging functions (parse_smi, compare_inventory, compare_mig, judge_*) are pure: tests/e2e/test_gpucheck.py
calls them directly."""
import argparse
import ctypes
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
BUDGET = 230.0          # seconds for the whole check (the brief: under 4 minutes)
SAMPLE = 1              # --sample-interval
IDLE, WARN, GRACE = 12, 4, 3  # the default profile's idle_timeout, warn, grace
LEAK_MIB, LEAK_EPOCH_S = 1024, 4  # gpuload leak: added per epoch, epoch length
BUSY_MIB = 16384        # big enough that the CUDA context (~0.3-0.6 GiB) stays under 5%; at most
                        # half of the GPU's memory (Check.busy_mib)
MEM_TOLERANCE = 0.05
UTIL_MIN = 90
FREED_SLACK_MIB = 256   # memory.used after a cancel, over the baseline before any job
JOB_SECONDS = 120       # gpuload jobs end by themselves after this, should the check lose its daemon


# --- pure: parsing and judging -------------------------------------------------------

def parse_smi(list_text, query_text=""):
    """GPUs from `nvidia-smi -L` ("GPU 0: NAME (UUID: GPU-...)") and, when given, from
    `nvidia-smi --query-gpu=index,uuid,memory.total --format=csv,noheader,nounits` (MiB):
    [{index, name, uuid, mem_mib or None}], by index."""
    gpus = {}
    for line in list_text.splitlines():
        m = re.match(r"^GPU (\d+): (.+?) \(UUID: (\S+?)\)\s*$", line.strip())
        if m:
            gpus[int(m.group(1))] = {"index": int(m.group(1)), "name": m.group(2), "uuid": m.group(3), "mem_mib": None}
    for line in query_text.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) == 3 and f[0].isdigit() and int(f[0]) in gpus and f[2].isdigit():
            gpus[int(f[0])]["mem_mib"] = int(f[2])
    return [gpus[i] for i in sorted(gpus)]


def compare_inventory(api_gpus, smi_gpus):
    """(status, detail) lines: gpuward's GPUs (GET /api/v1/gpus) against nvidia-smi's, by
    UUID; memory in MiB must agree within 1% (NVML and nvidia-smi round differently)."""
    out = []
    if len(api_gpus) != len(smi_gpus):
        out.append((FAIL, f"gpuward lists {len(api_gpus)} GPUs, nvidia-smi {len(smi_gpus)}"))
    by_uuid = {g["uuid"]: g for g in api_gpus}
    for s in smi_gpus:
        g = by_uuid.get(s["uuid"])
        if g is None:
            out.append((FAIL, f"GPU {s['index']} {s['uuid']} ({s['name']}): not in gpuward's list"))
            continue
        problems = []
        if g["name"] != s["name"]:
            problems.append(f"name {g['name']!r} vs nvidia-smi {s['name']!r}")
        if g["index"] != s["index"]:
            problems.append(f"index {g['index']} vs nvidia-smi {s['index']}")
        mib = g["mem_total"] / 2**20
        if s["mem_mib"] is not None and abs(mib - s["mem_mib"]) > 0.01 * s["mem_mib"]:
            problems.append(f"memory {mib:.0f} MiB vs nvidia-smi {s['mem_mib']} MiB")
        if problems:
            out.append((FAIL, f"GPU {s['index']} {s['uuid']}: " + "; ".join(problems)))
        else:
            mem = f", {mib:.0f} MiB" + ("" if s["mem_mib"] is not None else " (nvidia-smi gave no memory)")
            out.append((PASS, f"GPU {g['index']} {g['name']} {g['uuid']}{mem}"))
    return out


def parse_smi_mig(list_text):
    """MIG devices from `nvidia-smi -L`, by GPU index: the "  MIG 1g.10gb  Device  0: (UUID:
    MIG-...)" lines under each "GPU N: ..." line, as {index: [(profile, uuid)]}."""
    out, gpu = {}, None
    for line in list_text.splitlines():
        m = re.match(r"^GPU (\d+): ", line.strip())
        if m:
            gpu = int(m.group(1))
            continue
        m = re.match(r"^MIG (\S+)\s+Device\s+\d+: \(UUID: (\S+?)\)\s*$", line.strip())
        if m and gpu is not None:
            out.setdefault(gpu, []).append((m.group(1), m.group(2)))
    return out


def compare_mig(api_gpus, smi_mig=None):
    """(status, detail) lines for the GPUs in MIG mode: gpuward's slices (GET /api/v1/gpus
    `mig`) against nvidia-smi's when given (by UUID and profile), and what NVML must not give
    for them (a utilisation).  Empty when no GPU is in MIG mode on either side."""
    out = []
    for g in api_gpus:
        mine = sorted((m.get("profile") or "?", m["uuid"]) for m in g.get("mig") or [])
        theirs = sorted((smi_mig or {}).get(g["index"], []))
        if not g.get("mig_mode") and not theirs:
            continue
        problems = []
        if smi_mig is not None and mine != theirs:
            problems.append(f"slices {mine} vs nvidia-smi {theirs}")
        if g.get("mig_mode") and g.get("util") is not None:
            problems.append(f"a utilisation ({g['util']}%) shown for a GPU in MIG mode, which NVML does not give")
        share = sum(m.get("share") or 0 for m in g.get("mig") or [])
        if share > 1.0001:
            problems.append(f"slices' shares add up to {share:.4f} > 1")
        text = ", ".join(f"{p} {u}" for p, u in mine) or "no MIG devices"
        if problems:
            out.append((FAIL, f"GPU {g['index']}: " + "; ".join(problems)))
        else:
            seen = "" if smi_mig is not None else " (no nvidia-smi to compare with)"
            out.append((PASS, f"GPU {g['index']}: {len(mine)} slice(s), {share:.2f} of the GPU: {text}{seen}"))
    return out


def judge_gpm(api_gpus):
    """(status, detail) per GPU in MIG mode: whether it offers per-slice activity (GPM, `gpm`
    in GET /api/v1/gpus) and, where it does, each slice's reading (`activity`, 0-100).  A GPU
    offering GPM with a slice that has no reading FAILs; one not offering it PASSes, saying
    that its slices are judged by their processes and progress."""
    out = []
    for g in api_gpus:
        if not g.get("mig_mode"):
            continue
        gpm, slices = g.get("gpm"), g.get("mig") or []
        if gpm is False:
            out.append((PASS, f"GPU {g['index']}: GPM not offered: no per-slice activity, slices judged by their "
                              "processes and progress"))
            continue
        if gpm is not True:
            out.append((FAIL, f"GPU {g['index']}: in MIG mode but gpm is {gpm!r}, not true or false"))
            continue
        bad = [m["uuid"] for m in slices if not isinstance(m.get("activity"), int) or not 0 <= m["activity"] <= 100]
        text = ", ".join(f"{m['uuid']} {m.get('activity')}%" for m in slices) or "no MIG devices"
        if bad:
            out.append((FAIL, f"GPU {g['index']}: GPM offered, but no activity reading (0-100) for {', '.join(bad)}"))
        else:
            out.append((PASS, f"GPU {g['index']}: GPM offered: SM activity {text}"))
    return out


def gpm_read(api_gpus):
    """Whether every slice of every GPU offering GPM has its reading (the second sample gives
    the first)."""
    return all(m.get("activity") is not None for g in api_gpus if g.get("gpm") for m in g.get("mig") or [])


def judge_memory(measured_bytes, allocated_mib, tolerance=MEM_TOLERANCE):
    """The job's GPU memory as NVML reports it against what gpuload allocated: within the
    tolerance above it (the CUDA context adds a little), never below."""
    mib = measured_bytes / 2**20
    over = (mib - allocated_mib) / allocated_mib
    st = PASS if -0.005 <= over <= tolerance else FAIL
    return st, f"{mib:.0f} MiB seen, {allocated_mib} MiB allocated ({over * 100:+.1f}%, limit +{tolerance * 100:.0f}%)"


def judge_util(samples, minimum=UTIL_MIN):
    """GPU utilisation samples (percent) of a busy job: the median must reach the minimum."""
    if not samples:
        return FAIL, "no utilisation sample"
    s = sorted(samples)
    med = s[len(s) // 2]
    return (PASS if med >= minimum else FAIL), f"median {med}% of {len(s)} samples (min {s[0]}%, max {s[-1]}%), need >= {minimum}%"


def judge_attribution(gpu, jid, pids):
    """A job's GPU as GET /api/v1/gpus shows it: held by the job, and each process of the job
    found there (pids: the job's processes as gpuload reported them) marked as the job's."""
    procs = gpu.get("processes") or []
    mine = [p for p in procs if p.get("job") == jid]
    if gpu.get("job") != jid:
        return FAIL, f"GPU {gpu['index']} is held by job {gpu.get('job')}, not {jid}"
    if not mine:
        return FAIL, f"GPU {gpu['index']}: no process attributed to job {jid} (processes: {procs})"
    missing = [p for p in pids if p not in [q["pid"] for q in mine]]
    if missing:
        return FAIL, f"GPU {gpu['index']}: pid {missing} of job {jid} not attributed (seen {[q['pid'] for q in procs]})"
    return PASS, f"job {jid} on GPU {gpu['index']}: pid {[q['pid'] for q in mine]} attributed"


def judge_sampler(metrics_text, n_gpus, uptime_s, interval_s=SAMPLE):
    """The sampler's cost from /metrics: FAIL when a snapshot takes as long as the interval
    (it could not keep up), or the metrics are missing."""
    def val(name):
        m = re.search(rf"^{name} ([0-9.eE+-]+)$", metrics_text, re.M)
        return float(m.group(1)) if m else None
    n, s, mx, cpu = (val(k) for k in ("gpuward_sampler_snapshot_seconds_count", "gpuward_sampler_snapshot_seconds_sum",
                                       "gpuward_sampler_snapshot_max_seconds", "gpuward_sampler_cpu_seconds_total"))
    if None in (n, s, mx, cpu):
        return FAIL, "the gpuward_sampler_* metrics are missing from /metrics"
    if not n:
        return FAIL, "no snapshot taken"
    mean = s / n
    detail = (f"{n:.0f} snapshots of {n_gpus} GPU(s): {mean * 1e3:.2f} ms mean ({mean * 1e3 / max(n_gpus, 1):.2f} ms "
              f"per GPU), {mx * 1e3:.2f} ms max; sampler CPU {cpu:.3f} s in {uptime_s:.0f} s "
              f"({cpu / max(uptime_s, 1e-9) * 100:.2f}%)")
    return (FAIL if mx >= interval_s else PASS), detail


# --- the daemon and its API ----------------------------------------------------------

class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


class Check:
    def __init__(self, args):
        self.a = args
        self.build = os.path.abspath(args.build)
        self.lines = []
        self.dir = tempfile.mkdtemp(prefix="gw-gpucheck-")
        os.chmod(self.dir, 0o755)
        self.work = os.path.join(self.dir, "work")
        os.makedirs(self.work)
        os.chmod(self.work, 0o777)
        self.sock = os.path.join(self.dir, "gw.sock")
        self.daemon = None
        self.others = []  # processes started outside gpuward (rogue)
        self.t0 = time.monotonic()
        self.header = []
        self.nvml = None  # ctypes NVML, loaded on first use (mem_used_mib)
        self.busy_mib = BUSY_MIB

    # output
    def say(self, status, name, detail):
        line = f"{status}  {name}: {detail}"
        self.lines.append((status, line))
        print(line, flush=True)

    def note(self, text):
        self.header.append(text)
        print(text, flush=True)

    def left(self):
        return BUDGET - (time.monotonic() - self.t0)

    # API
    def api(self, method, path, body=None, timeout=30):
        c = UnixHTTP(self.sock, timeout)
        try:
            c.request(method, path, body=None if body is None else json.dumps(body),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            data = r.read()
            return r.status, (json.loads(data) if data else {})
        finally:
            c.close()

    def gpus(self):
        return self.api("GET", "/api/v1/gpus")[1]

    def job(self, jid):
        return self.api("GET", f"/api/v1/jobs/{jid}")[1]

    def submit(self, argv, name, **kw):
        spec = {"command": argv, "cwd": self.work, "ngpus": 1, "time_limit": 600, "name": name, **kw}
        if self.a.libcuda:
            spec["env"] = [f"GPULOAD_LIBCUDA={self.a.libcuda}"]
        st, r = self.api("POST", "/api/v1/jobs", spec)
        if st != 201:
            raise RuntimeError(f"submit {name}: {st} {r}")
        return r["id"]

    def wait(self, pred, timeout, interval=0.5):
        end = time.monotonic() + min(timeout, max(self.left(), 1))
        while True:
            v = pred()
            if v or time.monotonic() >= end:
                return v
            time.sleep(interval)

    def start_daemon(self):
        conf = os.path.join(self.dir, "gpuward.conf")
        with open(conf, "w") as f:
            f.write(f"[policy.default]\nidle_timeout = {IDLE}\nwarn = {WARN}\ngrace = {GRACE}\n")
        argv = [os.path.join(self.build, "gpuwardd"), "--state-dir", os.path.join(self.dir, "state"), "--socket",
                self.sock, "--listen", "127.0.0.1:0", "--config", conf, "--sample-interval", str(SAMPLE),
                "--grace-seconds", str(GRACE), "--leak-mib-per-epoch", str(LEAK_MIB // 2), "--leak-epochs", "3",
                "--default-retries", "0"]
        if self.a.simulate:
            argv += ["--simulate-gpus", str(self.a.simulate), "--nvml-lib", self.a.nvml_lib]
            if self.a.simulate_config:  # the fake reads it; the daemon keeps what it finds there
                os.makedirs(os.path.join(self.dir, "state", "sim-nvml"), exist_ok=True)
                with open(os.path.join(self.dir, "state", "sim-nvml", "config"), "w") as f:
                    f.write("".join(line + "\n" for line in self.a.simulate_config))
        elif self.a.nvml_lib:
            argv += ["--nvml-lib", self.a.nvml_lib]
        if os.geteuid() == 0:
            argv.append("--allow-root-jobs")
        self.log = open(os.path.join(self.dir, "gpuwardd.log"), "ab")
        self.daemon = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        addr = os.path.join(self.dir, "state", "listen.addr")
        ok = self.wait(lambda: os.path.exists(addr) or self.daemon.poll() is not None, 20, 0.05)
        if not ok or self.daemon.poll() is not None:
            raise RuntimeError(f"gpuwardd did not start (exit {self.daemon.poll()}):\n{self.daemon_log()[-3000:]}")
        with open(addr) as f:
            self.port = int(f.read().strip().rsplit(":", 1)[1])
        self.started = time.monotonic()

    def daemon_log(self):
        try:
            with open(os.path.join(self.dir, "gpuwardd.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def metrics(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            c.request("GET", "/metrics")
            return c.getresponse().read().decode()
        finally:
            c.close()

    def cleanup(self):
        try:
            if self.daemon and self.daemon.poll() is None:
                for j in self.api("GET", "/api/v1/jobs")[1].get("jobs", []):
                    self.api("DELETE", f"/api/v1/jobs/{j['id']}?wait=1", timeout=GRACE + 20)
        except Exception as e:
            print(f"cleanup: {e}", file=sys.stderr)
        for p in self.others:
            stop_pid(p)
        if self.daemon:
            stop_pid(self.daemon)
        if self.a.keep:
            print(f"kept: {self.dir}", file=sys.stderr)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def stop_pid(p):
    """SIGTERM, then SIGKILL: a process this check started (a Popen), by its pid."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)


def cuda_driver(path="libcuda.so.1"):
    """None when libcuda.so.1 loads and cuInit(0) succeeds; else why not."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        return f"no CUDA driver ({e})"
    r = lib.cuInit(0)
    return None if r == 0 else f"cuInit returned {r}"


def smi(args, smi_file=None):
    """nvidia-smi's output (or the file standing in for it); None without it."""
    if smi_file:
        with open(smi_file) as f:
            text = f.read()
        parts = text.split("\n--\n", 1)  # -L's output, then the --query-gpu output
        return parts[0] if args == "list" else (parts[1] if len(parts) > 1 else "")
    if not shutil.which("nvidia-smi"):
        return None
    cmd = {"list": ["nvidia-smi", "-L"],
           "query": ["nvidia-smi", "--query-gpu=index,uuid,memory.total", "--format=csv,noheader,nounits"],
           "used": ["nvidia-smi", "--query-gpu=index,memory.used", "--format=csv,noheader,nounits"],
           "apps": ["nvidia-smi", "--query-compute-apps=pid,gpu_uuid,used_memory", "--format=csv,noheader,nounits"]}[args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    return p.stdout if p.returncode == 0 else None



# --- the checks ------------------------------------------------------------------------

def check_inventory(c, api):
    listed = smi("list", c.a.smi_output)
    if listed is None:
        return c.say(SKIP, "inventory", "no nvidia-smi to compare with")
    for st, detail in compare_inventory(api["gpus"], parse_smi(listed, smi("query", c.a.smi_output) or "")):
        c.say(st, "inventory", detail)


def check_mig(c, api):
    """The MIG layout as gpuward reads it; never changes a GPU's mode (that needs an idle GPU
    and root, and would take the GPU from its users)."""
    listed = smi("list", c.a.smi_output)
    lines = compare_mig(api["gpus"], parse_smi_mig(listed) if listed is not None else None)
    if not lines:
        return c.say(SKIP, "mig", "no GPU in MIG mode (this check never changes a GPU's mode)")
    for st, detail in lines:
        c.say(st, "mig", detail)
    # Read only: the readings the daemon takes anyway, waited for over a few samples.
    c.wait(lambda: gpm_read(c.gpus()["gpus"]), 4 * SAMPLE + 2)
    for st, detail in judge_gpm(c.gpus()["gpus"]):
        c.say(st, "mig.gpm", detail)


def job_procs(c, index, jid):
    g = c.gpus()["gpus"][index]
    return g, [p for p in g.get("processes") or [] if p.get("job") == jid]


def started_on(c, jid, what):
    """The GPU index of a job once RUNNING; None (with a FAIL) when it did not start."""
    j = c.wait(lambda: (lambda j: j if j["state"] == "RUNNING" and j.get("gpus") else None)(c.job(jid)), 20)
    if not j:
        j = c.job(jid)
        c.say(FAIL, what, f"job {jid} did not start: {j['state']} {j.get('reason')}")
        return None
    return j["gpus"][0]


def check_busy(c, jid):
    """Attribution, memory and utilisation of a running `gpuload busy` job; its GPU."""
    idx = started_on(c, jid, "busy.attribution")
    if idx is None:
        return None
    def held():
        return sum(p.get("mem_used") or 0 for p in job_procs(c, idx, jid)[1]) >= c.busy_mib * 2**20 * 0.99
    seen = c.wait(held, 30)
    g, mine = job_procs(c, idx, jid)
    if seen:
        st, detail = judge_attribution(g, jid, [p["pid"] for p in mine])
        c.say(st, "busy.attribution", detail)
    else:
        c.say(FAIL, "busy.attribution", f"job {jid}: its {c.busy_mib} MiB not seen on GPU {idx} within 30 s "
                                        f"(processes: {g.get('processes')})")
    st, detail = judge_memory(sum(p.get("mem_used") or 0 for p in mine), c.busy_mib)
    c.say(st, "busy.memory", f"job {jid} GPU {idx}: {detail}")
    samples = []
    for _ in range(8):
        u = c.gpus()["gpus"][idx].get("util")
        if u is not None:
            samples.append(u)
        time.sleep(SAMPLE)
    st, detail = judge_util(samples)
    c.say(st, "busy.utilisation", f"job {jid} GPU {idx}: {detail}")
    return idx


def check_idle(c, jid, busy_jid=None):
    """An idle job is warned, then RECLAIMED with evidence; a busy job beside it is not warned."""
    if started_on(c, jid, "idle.reclaimed") is None:
        return
    j = c.wait(lambda: (lambda j: j if j["state"] not in ("RUNNING", "PENDING") else None)(c.job(jid)),
               IDLE + WARN + GRACE + 20)
    j = j or c.job(jid)
    ev = [e for e in j.get("events", []) if e["kind"] == "reclaim"]
    k = [e["kind"] for e in j.get("events", [])]
    ok = j["state"] == "RECLAIMED" and "warn" in k and ev and "util 0%" in ev[-1]["message"]
    took = (j.get("end_time") or time.time()) - (j.get("start_time") or time.time())
    c.say(PASS if ok else FAIL, "idle.reclaimed",
          f"job {jid} {j['state']} after {took:.0f} s (idle_timeout {IDLE}s, warn {WARN}s, grace {GRACE}s), "
          f"warned: {'warn' in k}; evidence: {ev[-1]['message'] if ev else 'none'}")
    if busy_jid is not None:
        b = c.job(busy_jid)
        bk = [e["kind"] for e in b.get("events", [])]
        bad = b["state"] != "RUNNING" or "warn" in bk or "reclaim" in bk
        c.say(FAIL if bad else PASS, "idle.busy_kept",
              f"busy job {busy_jid}: {b['state']}, events {bk} over {took:.0f} s")


def check_busy_kept(c, jid, since):
    """One GPU: the busy job itself is watched past idle_timeout + warn, and must not be warned."""
    c.wait(lambda: time.monotonic() - since > IDLE + WARN + 2 * SAMPLE, IDLE + WARN + 5, 1)
    b = c.job(jid)
    bk = [e["kind"] for e in b.get("events", [])]
    bad = b["state"] != "RUNNING" or "warn" in bk or "reclaim" in bk
    c.say(FAIL if bad else PASS, "idle.busy_kept",
          f"busy job {jid}: {b['state']}, events {bk} after {time.monotonic() - since:.0f} s "
          f"(idle_timeout {IDLE}s + warn {WARN}s)")


class NvmlMemory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


def mem_used_mib(c, idx):
    """GPU idx's memory.used in MiB, read from NVML itself (the library gpuwardd loads) at
    once, not from the daemon's last sample; None when NVML cannot be read."""
    try:
        if c.nvml is None:
            if c.a.simulate:  # the fake reads its state dir at init
                os.environ["GPUWARD_FAKE_NVML_DIR"] = os.path.join(c.dir, "state", "sim-nvml")
            lib = ctypes.CDLL(c.a.nvml_lib or "libnvidia-ml.so.1")
            init = getattr(lib, "nvmlInit_v2", None) or lib.nvmlInit
            if init() != 0:
                return None
            c.nvml = lib
        lib = c.nvml
        get = getattr(lib, "nvmlDeviceGetHandleByIndex_v2", None) or lib.nvmlDeviceGetHandleByIndex
        h, m = ctypes.c_void_p(), NvmlMemory()
        if get(ctypes.c_uint(idx), ctypes.byref(h)) != 0 or lib.nvmlDeviceGetMemoryInfo(h, ctypes.byref(m)) != 0:
            return None
        return m.used // 2**20
    except (OSError, AttributeError):
        return None


def check_cancel(c, jid, idx, baselines):
    """`gpuward cancel` returns only once NVML shows the job's memory freed."""
    baseline_mib = baselines.get(idx)
    _, mine = job_procs(c, idx, jid)
    pids = {p["pid"] for p in mine}
    t = time.monotonic()
    p = subprocess.run([os.path.join(c.build, "gpuward"), "--socket", c.sock, "cancel", str(jid)],
                       capture_output=True, text=True, timeout=GRACE + 30)
    took = time.monotonic() - t
    used = mem_used_mib(c, idx)  # at once, before anything else runs
    apps = smi("apps") or ""
    left = [line for line in apps.splitlines() if line.split(",")[0].strip() in {str(x) for x in pids}]
    if p.returncode != 0:
        return c.say(FAIL, "cancel.freed", f"gpuward cancel {jid} exited {p.returncode}: {p.stderr.strip()}")
    if used is None:
        return c.say(FAIL, "cancel.freed", f"returned in {took:.2f} s; NVML's memory.used could not be read")
    ok = not left and baseline_mib is not None and used <= baseline_mib + FREED_SLACK_MIB
    c.say(PASS if ok else FAIL, "cancel.freed",
          f"gpuward cancel {jid} returned in {took:.2f} s; GPU {idx} memory.used then {used} MiB "
          f"(before any job {baseline_mib} MiB, slack {FREED_SLACK_MIB}); job processes still listed: {left or 'none'}")


def check_rogue(c, idx, uuid):
    """gpuload started outside gpuward shows as a rogue process with its pid."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": uuid}
    if c.a.libcuda:
        env["GPULOAD_LIBCUDA"] = c.a.libcuda
    if c.a.simulate:
        env["GPUWARD_FAKE_NVML_DIR"] = os.path.join(c.dir, "state", "sim-nvml")
    p = subprocess.Popen([os.path.join(c.build, "tests", "gpu", "gpuload"), "busy", "--mib", "1024", "--seconds", "30"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True, cwd=c.work)
    c.others.append(p)
    t = time.monotonic()
    def found():
        g = c.gpus()["gpus"][idx]
        return [q for q in g.get("processes") or [] if q["pid"] == p.pid and q.get("job") is None]

    def foreign():  # in a PID namespace NVML gives the host's pid: a process of no job holding gpuload's memory
        g = c.gpus()["gpus"][idx]
        return [q for q in g.get("processes") or [] if q.get("job") is None and (q.get("mem_used") or 0) >= 2**30]
    seen = c.wait(lambda: found() or (p.poll() is None and time.monotonic() - t > 10 and foreign()), 20)
    api = c.gpus()
    g = api["gpus"][idx]
    if seen and seen[0]["pid"] == p.pid:
        c.say(PASS, "rogue", f"pid {p.pid} on GPU {idx}: listed with no job ({(seen[0].get('mem_used') or 0) / 2**20:.0f} "
                             f"MiB), rogue_processes {api.get('rogue_processes')}")
    elif seen:
        c.say(PASS, "rogue", f"pid {p.pid} here is pid {seen[0]['pid']} to NVML (a PID namespace): listed with no job "
                             f"({(seen[0].get('mem_used') or 0) / 2**20:.0f} MiB), rogue_processes "
                             f"{api.get('rogue_processes')}")
    else:
        c.say(FAIL, "rogue", f"pid {p.pid} (exit {p.poll()}) not listed as a process of no job on GPU {idx} within 20 s; "
                             f"processes: {[(q['pid'], q.get('job')) for q in g.get('processes') or []]} (in a PID "
                             f"namespace NVML gives the host's pids)")
    stop_pid(p)
    c.wait(lambda: not found(), 10)


def check_leak(c, jid):
    """A leaking job gets a leak event with a forecast."""
    if started_on(c, jid, "leak") is None:
        return
    ev = c.wait(lambda: [e for e in c.job(jid).get("events", []) if e["kind"] == "leak"], 12 * LEAK_EPOCH_S)
    j = c.job(jid)
    epoch = (j.get("training") or {}).get("epoch")
    if ev and "OOM in ~" in ev[0]["message"]:
        c.say(PASS, "leak", f"job {jid} at epoch {epoch} ({LEAK_MIB} MiB/epoch): {ev[0]['message']}")
    else:
        c.say(FAIL, "leak", f"job {jid} ({j['state']}, epoch {epoch}, +{LEAK_MIB} MiB/epoch): "
                            f"{'no leak event' if not ev else ev[0]['message']} in {12 * LEAK_EPOCH_S} s")
    c.api("DELETE", f"/api/v1/jobs/{jid}?wait=1", timeout=GRACE + 20)


def check_sampler(c, n_gpus):
    st, detail = judge_sampler(c.metrics(), n_gpus, time.monotonic() - c.started)
    c.say(st, "sampler", detail)


def gpu_jobs(c, api, why_not):
    """The checks that run CUDA work: each SKIPped when there is no driver."""
    names = ["busy.attribution", "busy.memory", "busy.utilisation", "idle.reclaimed", "idle.busy_kept",
             "cancel.freed", "rogue", "leak"]
    if why_not:
        for n in names:
            c.say(SKIP, n, f"needs a CUDA driver: {why_not}")
        return
    load = os.path.join(c.build, "tests", "gpu", "gpuload")
    baselines = {g["index"]: mem_used_mib(c, g["index"]) for g in api["gpus"]}
    c.busy_mib = min(BUSY_MIB, min(g["mem_total"] for g in api["gpus"]) // 2**21)
    two = len(api["gpus"]) >= 2
    busy = c.submit([load, "busy", "--mib", str(c.busy_mib), "--seconds", str(JOB_SECONDS)], "gpucheck-busy")
    since = time.monotonic()
    idle = c.submit([load, "idle", "--mib", "2048", "--seconds", str(JOB_SECONDS)], "gpucheck-idle") if two else None
    idx = check_busy(c, busy)
    if two:
        check_idle(c, idle, busy)
    else:
        check_busy_kept(c, busy, since)
    if idx is not None:
        check_cancel(c, busy, idx, baselines)
    if not two:
        check_idle(c, c.submit([load, "idle", "--mib", "2048", "--seconds", str(JOB_SECONDS)], "gpucheck-idle"))
    g0 = api["gpus"][0]
    check_rogue(c, 0, g0["uuid"])
    check_leak(c, c.submit([load, "leak", "--mib", "1024", "--leak-mib", str(LEAK_MIB), "--epoch-seconds",
                            str(LEAK_EPOCH_S), "--seconds", str(20 * LEAK_EPOCH_S)], "gpucheck-leak",
                            yolo=True))  # --yolo: follow its run (results.csv) as an Ultralytics one


def missing_build_deps():
    """What the build needs that this machine lacks, as Debian packages (cmake's own message
    is long and comes before any of this)."""
    need = {"sqlite3": "libsqlite3-dev", "libmicrohttpd": "libmicrohttpd-dev", "jansson": "libjansson-dev",
            "inih": "libinih-dev", "libcurl": "libcurl4-openssl-dev"}
    tools = [t for t in ("cmake", "gcc", "make", "pkg-config") if not shutil.which(t)]
    if "pkg-config" in tools:
        return tools + list(need.values())
    return tools + [pkg for mod, pkg in need.items()
                    if subprocess.run(["pkg-config", "--exists", mod], capture_output=True).returncode != 0]


def run(a):
    c = Check(a)
    code = 0
    try:
        for b in ("gpuwardd", "gpuward", "tests/gpu/gpuload"):
            if not os.access(os.path.join(c.build, b), os.X_OK):
                c.say(FAIL, "build", f"{os.path.join(c.build, b)} missing: build first (scripts/gw gpu-check does)")
                return c, 2
        c.note(f"gpu-check {time.strftime('%Y-%m-%d %H:%M:%S %Z')} on {socket.gethostname()}, "
               f"{'fake NVML, ' + str(a.simulate) + ' simulated GPUs' if a.simulate else 'real NVML'}")
        c.start_daemon()
        api = c.gpus()
        c.note(f"driver {api.get('driver') or '?'}; " +
               "; ".join(f"GPU {g['index']}: {g['name']} {g['uuid']} {g['mem_total'] / 2**30:.1f} GiB" for g in api["gpus"]))
        nvml_lines = [ln for ln in c.daemon_log().splitlines() if "NVML" in ln or "nvml" in ln]
        c.say(PASS if api["gpus"] else FAIL, "daemon", f"gpuwardd pid {c.daemon.pid} on the "
              f"{'fake' if a.simulate else 'real'} NVML: {len(api['gpus'])} GPU(s)" +
              ("" if api["gpus"] else f"; its log: {' | '.join(nvml_lines[-3:]) or 'nothing about NVML'}"))
        if not api["gpus"]:
            return c, 1  # nothing to check on
        check_inventory(c, api)
        check_mig(c, api)
        if a.libcuda:
            why_not = cuda_driver(a.libcuda)
        else:
            why_not = "the fake NVML (--simulate) sees no CUDA process" if a.simulate else cuda_driver()
        gpu_jobs(c, api, why_not)
        check_sampler(c, len(api["gpus"]))
    except Exception as e:  # a broken daemon or API: say so, with its log
        c.say(FAIL, "check", f"{type(e).__name__}: {e}")
        print(c.daemon_log()[-4000:], file=sys.stderr)
    finally:
        c.cleanup()
    if any(s == FAIL for s, _ in c.lines):
        code = 1
    return c, code


def main():
    p = argparse.ArgumentParser(description="gpuward on a real GPU: PASS/FAIL/SKIP per check (docs/GPU-CHECK.md)")
    p.add_argument("--build", default="build", help="the build directory (default build)")
    p.add_argument("--out", help="also write the report to this file")
    p.add_argument("--nvml-lib", help="NVML library for gpuwardd (default: the driver's)")
    p.add_argument("--simulate", type=int, default=0, metavar="N",
                   help="tests only: N GPUs of the fake NVML (give its --nvml-lib); CUDA checks are SKIPped")
    p.add_argument("--simulate-config", action="append", default=[], metavar="KEY=VALUE",
                   help="tests only: a line of the fake NVML's config (gpu0.mig=1g.10gb*7, gpu0.gpm=1)")
    p.add_argument("--libcuda", help="tests only: the fake libcuda.so.1 for gpuload (with --simulate)")
    p.add_argument("--smi-output", help="tests only: nvidia-smi -L output, a line '--', then the --query-gpu output")
    p.add_argument("--keep", action="store_true", help="keep the temporary state dir (its path is printed)")
    p.add_argument("--deps", action="store_true", help="only say which Debian packages the build lacks (exit 2 if any)")
    a = p.parse_args()
    if a.deps:
        miss = missing_build_deps()
        line = (f"FAIL  build: missing Debian packages: {' '.join(miss)} (apt-get install them; cmake cannot "
                f"configure without them)" if miss else "PASS  build: the packages the build needs are installed")
        print(line)
        if a.out and miss:
            with open(a.out, "w") as f:
                f.write(line + "\n")
        return 2 if miss else 0
    if a.simulate and not a.nvml_lib:
        p.error("--simulate needs --nvml-lib (the fake libnvidia-ml.so.1)")
    t = time.monotonic()
    c, code = run(a)
    counts = {s: sum(1 for x, _ in c.lines if x == s) for s in (PASS, FAIL, SKIP)}
    summary = (f"{counts[PASS]} PASS, {counts[FAIL]} FAIL, {counts[SKIP]} SKIP in {time.monotonic() - t:.0f} s")
    print(summary)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(c.header + [line for _, line in c.lines] + [summary]) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())

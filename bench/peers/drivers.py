"""The peers run.py drives: gpuward and task-spooler (interleaved), then a private Slurm.
gwtest comes from tests/e2e, which run.py puts on sys.path."""
import json
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
import traceback

from common import (CANCEL_SCRIPTS, alive, drain_stats, free_port, kill_strays, lines, log,
                    measure_cancel, sh, split_batches, start_rate, wait_until)


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
            # Slurm's batch path is a job array from one sbatch process; gpuward's array is one
            # `gpuward submit --array` process too (one POST /api/v1/jobs), so both rows include
            # a process start.  The request alone is given beside it.
            t0 = time.perf_counter()
            sh([*self.cmd[:-2], "--array", f"1-{a.jobs}", "--", "true"], cwd=self.d.work, timeout=120)
            res["submit_array"] = a.jobs / (time.perf_counter() - t0)
            res["submit_array_how"] = f"one `gpuward submit --array=1-{a.jobs}`"
            spec = json.dumps(self.job(["true"], array=f"1-{a.jobs}"))
            t0 = time.perf_counter()
            st, r = self.d.api("POST", "/api/v1/jobs", spec, timeout=120)
            res["submit_array_request_s"] = time.perf_counter() - t0
            assert st == 201, (st, r)
            log(f"gpuward: array of {a.jobs}: {res['submit_array']:.0f}/s "
                f"(the request alone {1000 * res['submit_array_request_s']:.1f} ms)")
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
        res["submit_array"] = a.jobs / (time.perf_counter() - t0)
        res["submit_array_how"] = f"one `sbatch --array=1-{a.jobs}`"
        log(f"slurm: array of {a.jobs}: {res['submit_array']:.0f}/s")
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

"""Harness for end-to-end tests: a real gpuwardd on a temporary state dir, Unix socket and
free TCP port, with the fake NVML; driven only through the CLI and the HTTP API.

Every daemon and job a test starts is stopped by the test (by PID, never by name), and every
wait is bounded."""
import http.client
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

BUILD = os.environ.get("GW_BUILD_DIR") or os.path.join(os.path.dirname(__file__), "..", "..", "build")
BUILD = os.path.abspath(BUILD)
GPUWARDD = os.path.join(BUILD, "gpuwardd")
GPUWARD = os.path.join(BUILD, "gpuward")
TRAINER = os.path.join(BUILD, "tests", "fakes", "gw-fake-trainer")
FAKE_NVML = os.path.join(BUILD, "tests", "fakes", "libnvidia-ml.so.1")
IS_ROOT = os.geteuid() == 0
# GW_DAEMON_WRAPPER, e.g. "valgrind --leak-check=full", runs the daemon under a tool (make memcheck).
WRAPPER = os.environ.get("GW_DAEMON_WRAPPER", "").split()
UNDER_VALGRIND = bool(WRAPPER) and os.path.basename(WRAPPER[0]) == "valgrind"
# How many times slower a wrapped daemon answers: what a test gives it before acting scales by it.
SLOW = 5 if WRAPPER else 1
# For a test that needs a job still running to be re-adopted by a restarted daemon: that opens
# a pidfd on the job's supervisor (pidfd_open), a system call valgrind 3.19 (Debian 12's) does
# not implement, so under it the job is always found lost.
needs_readoption = unittest.skipIf(UNDER_VALGRIND, "re-adoption needs pidfd_open, which valgrind does not implement")

# Run by Daemon.raw_as under another uid: sends stdin on the Unix socket argv[1], writes the
# whole response to stdout.
RAW_AS_SCRIPT = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])
s.sendall(sys.stdin.buffer.read())
d = b""
while True:
    c = s.recv(65536)
    if not c:
        break
    d += c
s.close(); sys.stdout.buffer.write(d)
"""


def wait_until(pred, timeout=20.0, interval=0.02, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def kinds(job):
    """The kinds of a job's events, oldest first."""
    return [e["kind"] for e in job["events"]]


def events_of(job, kind):
    return [e for e in job["events"] if e["kind"] == kind]


def as_user(uid, gid=None):
    """The command prefix that runs what follows as uid (root only), with no supplementary groups."""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid if gid is None else gid}", "--clear-groups"]


class Users:
    """Throwaway Unix accounts named PREFIX<role><suffix>, each with its own group of the same
    name and no home directory (root only); remove_all() in a finally block takes them away."""

    def __init__(self, prefix="gw"):
        self.prefix = prefix
        self.suffix = secrets.token_hex(3)
        self.made = []

    def add(self, role, uid=None):
        name = f"{self.prefix}{role}{self.suffix}"
        cmd = ["useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin"]
        if uid is not None:
            cmd += ["--uid", str(uid)]
        subprocess.run(cmd + [name], check=True, capture_output=True, timeout=30)
        self.made.append(name)
        return pwd.getpwnam(name)

    def delete(self, user):
        # --force: its job may still run (userdel refuses an account with processes otherwise)
        subprocess.run(["userdel", "--force", user.pw_name], check=True, capture_output=True, timeout=30)
        subprocess.run(["groupdel", user.pw_name], capture_output=True, timeout=30)  # gone with the user, usually

    def remove_all(self):
        for name in self.made:
            subprocess.run(["userdel", "--force", name], capture_output=True, timeout=30)
            subprocess.run(["groupdel", name], capture_output=True, timeout=30)

    @classmethod
    def for_class(cls, test_class, prefix="gw", **roles):
        """In a setUpClass: the accounts test_class.ATTR for each ATTR=role, all taken away
        again if one cannot be made; the class's tearDownClass calls remove_all()."""
        users = cls(prefix=prefix)
        try:
            for attr, role in roles.items():
                setattr(test_class, attr, users.add(role))
        except BaseException:
            users.remove_all()
            raise
        return users


def supervisor_done(pid):
    """Whether a job's supervisor is through with it: gone, or idle, waiting for another job."""
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return "--idle" in f.read().split("\0") or not pid_alive(pid)
    except OSError:
        return True


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.path)
        self.sock = s


class Daemon:
    """One gpuwardd under test."""

    def __init__(self, gpus=4, grace=1, extra=(), config=None, env=None, preexec=None):
        self.dir = tempfile.mkdtemp(prefix="gw-e2e-")
        os.chmod(self.dir, 0o755)
        self.state = os.path.join(self.dir, "state")
        self.socket = os.path.join(self.dir, "gw.sock")
        self.work = os.path.join(self.dir, "work")
        os.makedirs(self.work)
        os.chmod(self.work, 0o777)
        self.gpus = gpus
        self.grace = grace
        self.extra = list(extra)
        self.config = config
        self.env = env  # added to the daemon's environment (e.g. LD_PRELOAD=libfaketime)
        self.preexec = preexec  # run in the daemon's process before exec (what a shell left it)
        self.proc = None
        self.port = None
        self.log = open(os.path.join(self.dir, "gpuwardd.log"), "ab")

    # A daemon that may never start (a bad config) is still cleaned up: `with Daemon(...) as d:`.
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()

    def args(self):
        a = WRAPPER + [GPUWARDD, "--state-dir", self.state, "--socket", self.socket, "--listen", "127.0.0.1:0",
             "--simulate-gpus", str(self.gpus), "--nvml-lib", FAKE_NVML, "--grace-seconds", str(self.grace),
             "--sample-interval", "1", "--retry-backoff", "1"]
        if IS_ROOT:
            a.append("--allow-root-jobs")
        if self.config:
            path = os.path.join(self.dir, "gpuward.conf")
            with open(path, "w") as f:
                f.write(self.config)
            a += ["--config", path]
        return a + self.extra

    def start(self):
        addr = os.path.join(self.state, "listen.addr")
        if os.path.exists(addr):
            os.unlink(addr)
        env = {**os.environ, **self.env} if self.env else None
        self.proc = subprocess.Popen(self.args(), stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
                                     env=env, preexec_fn=self.preexec)
        wait_until(lambda: os.path.exists(addr) or self.proc.poll() is not None, timeout=20 * SLOW,
                   what="gpuwardd to start")
        if self.proc.poll() is not None:
            raise AssertionError(f"gpuwardd exited with {self.proc.returncode}:\n{self.daemon_log()}")
        with open(addr) as f:
            self.port = int(f.read().strip().rsplit(":", 1)[1])
        return self

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                # A wrapped daemon killed here would leave no leak report: give it time to exit.
                self.proc.wait(timeout=15 * SLOW)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

    def kill9(self):
        self.stop(signal.SIGKILL)

    def daemon_log(self):
        with open(os.path.join(self.dir, "gpuwardd.log"), "rb") as f:
            return f.read().decode(errors="replace")

    def cgroup_base(self):
        """The directory the daemon makes its jobs' cgroups under, from its start line; None
        without cgroups."""
        m = re.search(r"cgroups: v[12] under (\S+)", self.daemon_log())
        return m.group(1) if m else None

    def cleanup(self):
        """Cancels every active job, stops the daemon, removes the temp dir and the empty
        cgroups a killed daemon left (its state dir, hence its cgroup name, is not reused)."""
        try:
            if self.proc and self.proc.poll() is None:
                for j in self.api("GET", "/api/v1/jobs")[1].get("jobs", []):
                    self.api("DELETE", f"/api/v1/jobs/{j['id']}?wait=1", timeout=self.grace + 20)
        except Exception as e:  # the test already failed in a way that broke the daemon
            print(f"cleanup: {e}", file=sys.stderr)
        self.stop()
        self.log.close()
        base = self.cgroup_base() if os.path.exists(os.path.join(self.dir, "gpuwardd.log")) else None
        if base and os.path.isdir(base):
            for name in os.listdir(base):
                if name.startswith(("job-", "slot-")):
                    try:
                        os.rmdir(os.path.join(base, name))
                    except OSError:
                        pass  # still populated: not ours to kill here
            try:
                os.rmdir(base)
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- the two ways in ---
    def cli(self, *args, check=True, user=None, timeout=60, input=None, cwd=None):
        cmd = [GPUWARD, "--socket", self.socket, *[str(a) for a in args]]
        if user is not None:
            cmd = as_user(user) + cmd
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input,
                           cwd=cwd or self.work)
        if check and p.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")
        return p

    def raw_as(self, uid, method, path, body=b"", gid=None):
        """(status, body) of one request on the Unix socket from a process running as uid
        (root only)."""
        req = (f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        p = subprocess.run(as_user(uid, gid) + [sys.executable, "-c", RAW_AS_SCRIPT, self.socket], input=req,
                           capture_output=True, timeout=30)
        if p.returncode != 0 or not p.stdout:
            raise AssertionError(f"{method} {path} as uid {uid}: exit {p.returncode}, {p.stderr[-500:]!r}")
        head, _, payload = p.stdout.partition(b"\r\n\r\n")
        return int(head.split(b" ", 2)[1]), payload

    def cli_json(self, *args, **kw):
        return json.loads(self.cli(*args, "--json", **kw).stdout)

    def api(self, method, path, body=None, timeout=30, raw=False, headers=None):
        c = UnixHTTPConnection(self.socket, timeout=timeout)
        try:
            data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
            c.request(method, path, body=data, headers=headers or {"Content-Type": "application/json"})
            r = c.getresponse()
            payload = r.read()
            if raw:
                return r.status, payload, dict(r.getheaders())
            try:
                return r.status, json.loads(payload) if payload else {}
            except ValueError:
                return r.status, {"raw": payload}
        finally:
            c.close()

    def tcp(self, method, path, body=None, timeout=30, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def tcp_json(self, method, path, body=None, token=None, auth=None, timeout=30):
        """A call on the TCP door with a bearer token (or auth, a whole Authorization value), or
        anonymous without either; the reply decoded ({} when empty)."""
        headers = {"Content-Type": "application/json"}
        if token or auth:
            headers["Authorization"] = auth or f"Bearer {token}"
        st, data = self.tcp(method, path, None if body is None else json.dumps(body), timeout, headers)
        return st, json.loads(data) if data else {}

    def metrics(self):
        st, body = self.tcp("GET", "/metrics")
        if st != 200:
            raise AssertionError(f"GET /metrics: {st}")
        return body.decode()

    def gpu_list(self):
        return self.api("GET", "/api/v1/gpus")[1]["gpus"]

    def write_procs(self, pid, lines):
        """Declares a process on GPUs to the fake NVML (what the fake trainer does for itself):
        lines of (gpu, MiB, util %)."""
        d = os.path.join(self.state, "sim-nvml", "procs")
        # Not the fake trainer's own .PID.tmp: it writes its file for itself meanwhile.
        tmp = os.path.join(d, f".{pid}.test.tmp")
        with open(tmp, "w") as f:
            f.write("".join(f"{g} {mib} {util}\n" for g, mib, util in lines))
        os.rename(tmp, os.path.join(d, str(pid)))

    def job_spec(self, argv, time_limit=600, **kw):
        """A job for POST /api/v1/jobs: one GPU in the work dir, kw on top."""
        return {"command": argv, "cwd": self.work, "ngpus": 1, "time_limit": time_limit, **kw}

    def submit_api(self, argv, time_limit=600, **kw):
        st, r = self.api("POST", "/api/v1/jobs", self.job_spec(argv, time_limit, **kw))
        if st != 201:
            raise AssertionError(f"POST /api/v1/jobs: {st} {r}")
        return r["id"]

    def submit(self, *args, **kw):
        out = self.cli("submit", "--json", *args, **kw).stdout
        return json.loads(out)["id"]

    def job(self, jid):
        st, j = self.api("GET", f"/api/v1/jobs/{jid}")
        assert st == 200, (st, j)
        return j

    def events(self, jid, kind):
        return events_of(self.job(jid), kind)

    def job_cgroup(self, jid, attempt=1):
        """The cgroup an attempt of the job ran in, as its start event names it; None without."""
        for e in self.events(jid, "start"):
            m = re.search(r"attempt (\d+), cgroup (\S+)", e["message"])
            if m and int(m.group(1)) == attempt:
                return m.group(2)
        return None

    def wait_job(self, jid, pred, timeout=20, what=None):
        """The job once pred(job) holds."""
        return wait_until(lambda: (lambda j: j if pred(j) else None)(self.job(jid)), timeout=timeout,
                          what=what or f"job {jid}")

    def wait_state(self, jid, states, timeout=30):
        if isinstance(states, str):
            states = {states}
        return self.wait_job(jid, lambda j: j["state"] in states, timeout, f"job {jid} to reach {states}")

    def wait_pid(self, jid, timeout=20):
        """The job's pid, once its supervisor has reported it."""
        return wait_until(lambda: self.job(jid)["pid"], timeout=timeout, what=f"job {jid}'s pid")

    def log_text(self, jid):
        st, body, _ = self.api("GET", f"/api/v1/jobs/{jid}/log", raw=True)
        return body.decode(errors="replace")


class LoneAgent:
    """A node agent (gpuwardd --agent) on its own in dir: no controller answers it (its
    snapshots fail, which it logs), a fake NVML of one GPU, a token file; its output in
    dir/agent.log.  start(extra) runs it with extra options; stop() sends SIGTERM; spawn(argv)
    starts a helper process (a step, a holder) that close() kills before it stops the agent
    (with stop, the test's own way) and removes dir."""

    def __init__(self, dir):
        self.dir = dir
        self.logfile = os.path.join(dir, "agent.log")
        self.nvml = os.path.join(dir, "nvml")
        os.makedirs(os.path.join(self.nvml, "procs"))
        with open(os.path.join(self.nvml, "config"), "w") as f:
            f.write("count=1\n")
        self.token = os.path.join(dir, "agent.token")
        fd = os.open(self.token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, b"gw_" + b"0" * 64 + b"\n")
        os.close(fd)
        self.proc = None
        self.helpers = []

    def spawn(self, argv, **kw):
        p = subprocess.Popen(argv, **kw)
        self.helpers.append(p)
        return p

    def close(self, stop=None):
        for p in self.helpers:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        (stop or self.stop)()
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, extra):
        argv = [GPUWARDD, "--agent", "--controller", "http://127.0.0.1:9", "--token-file", self.token,
                "--node", "gwnode", "--sample-interval", "60", "--nvml-lib", FAKE_NVML] + list(extra)
        with open(self.logfile, "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=dict(os.environ, GPUWARD_FAKE_NVML_DIR=self.nvml),
                                         start_new_session=True)
        return self.proc

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(20)
        self.proc = None

    def log(self):
        with open(self.logfile, errors="replace") as f:
            return f.read()


def start_failure(config, gpus=1):
    """Why a daemon with this config file refused to start (what Daemon.start raised)."""
    with Daemon(gpus=gpus, config=config) as d:
        try:
            d.start()
        except AssertionError as e:
            return str(e)
    raise AssertionError(f"gpuwardd started with the config {config!r}")


class DaemonTest(unittest.TestCase):
    gpus = 4
    grace = 1
    extra = ()
    config = None
    env = None
    preexec = None

    def setUp(self):
        self.d = Daemon(gpus=self.gpus, grace=self.grace, extra=self.extra, config=self.config, env=self.env,
                        preexec=type(self).preexec).start()

    def tearDown(self):
        result = getattr(getattr(self, "_outcome", None), "result", None)
        failed = result is not None and any(t is self for t, _ in result.errors + result.failures)
        if failed:
            print(self.d.daemon_log()[-20000:], file=sys.stderr)
        self.d.cleanup()


def main():
    unittest.main(verbosity=2)

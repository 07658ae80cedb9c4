"""gpuward run: an interactive session waits in the queue, then the CLI's terminal is the job's.
The CLI runs on a pseudo-terminal of the test's (python's pty module), as under a user's
terminal emulator."""
import fcntl
import os
import pty
import struct
import termios
import select
import signal
import socket
import subprocess
import sys
import time

from gwtest import GPUWARD, IS_ROOT, DaemonTest, Users, as_user, events_of, main, needs_readoption, wait_until


PROMPT = "gw-session$ "


class Session:
    """`gpuward run ARGS` on a pty of its own (its controlling terminal).  The job gets the CLI's
    environment: a shell in it prompts PROMPT."""

    def __init__(self, d, *args, user=None):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.chdir(d.work)
                argv = [GPUWARD, "--socket", d.socket, "run", *args]
                if user is not None:
                    argv = as_user(user) + argv
                os.execvpe(argv[0], argv, {**os.environ, "PS1": PROMPT})
            finally:
                os._exit(127)
        self.out = b""
        self.status = None

    def read_until(self, pred, timeout=30):
        """Reads the terminal until pred(all output so far) holds; what was read."""
        deadline = time.monotonic() + timeout
        if self.fd < 0:  # closed: nothing more to read
            time.sleep(min(timeout, 0.2))
            return self.out
        while not pred(self.out) and time.monotonic() < deadline:
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if r:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:  # EIO: the CLI and everything on its terminal are gone
                    break
                if not chunk:
                    break
                self.out += chunk
        return self.out

    def write(self, data):
        os.write(self.fd, data)

    def wait(self, timeout=30):
        """The CLI's exit status, reading its terminal meanwhile (it must not block on it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.read_until(lambda o: False, timeout=0.5)
                self.status = os.waitstatus_to_exitcode(st)
                return self.status
            self.read_until(lambda o: False, timeout=0.2)
        raise AssertionError(f"gpuward run did not exit; its terminal showed {self.out[-2000:]!r}")

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


class InteractiveTest(DaemonTest):
    gpus = 2

    def only_job(self):
        jobs = self.d.api("GET", "/api/v1/jobs")[1]["jobs"]
        self.assertEqual(len(jobs), 1, jobs)
        return jobs[0]["id"]

    def test_session_gets_gpus_exit_status_and_log(self):
        s = Session(self.d, "--gpus", "1", "--time", "10m", "--", "sh")
        try:
            jid = wait_until(lambda: self.d.api("GET", "/api/v1/jobs")[1]["jobs"], timeout=20,
                             what="the job")[0]["id"]
            job = self.d.wait_state(jid, "RUNNING")
            self.assertTrue(job["interactive"])
            self.assertTrue(job["tty_socket"], job)
            # The shell's first prompt, written before the CLI connected, is shown it.
            s.read_until(lambda o: PROMPT.encode() in o)
            s.write(b"echo gpus=$CUDA_VISIBLE_DEVICES; tty; exit 3\n")
            self.assertEqual(s.wait(), 3, s.out)
        finally:
            s.close()
        want = "gpus=" + ",".join(str(g) for g in job["gpus"])
        self.assertIn(want.encode(), s.out)
        self.assertIn(b"/dev/pts/", s.out)  # the job's stdin is a terminal
        end = self.d.wait_state(jid, "FAILED")
        self.assertEqual(end["exit_code"], 3, end)
        self.assertEqual(end["retries"], 0)
        self.assertIsNone(end["tty_socket"])
        self.assertIn(want, self.d.log_text(jid))

    def test_closing_the_terminal_ends_the_job(self):
        s = Session(self.d, "--", "sh", "-c", "echo ready; trap 'echo hup; exit 5' HUP; while :; do sleep 1; done")
        try:
            s.read_until(lambda o: b"ready" in o)
            self.assertIn(b"ready", s.out)
            jid = self.only_job()
            self.assertEqual(self.d.job(jid)["state"], "RUNNING")
            os.close(s.fd)  # the terminal window closed: the CLI gets SIGHUP and leaves
            s.fd = -1
            self.assertEqual(s.wait(), 128 + signal.SIGHUP)
            end = self.d.wait_state(jid, ["FAILED", "COMPLETED", "CANCELLED"])
        finally:
            s.close()
        # The job heard the hangup as from a terminal of its own, and ended as it chose to.
        self.assertEqual((end["state"], end["exit_code"]), ("FAILED", 5), end)
        self.assertIn("hup", self.d.log_text(jid))

    def test_ctrl_c_goes_to_the_job_and_winsize_follows(self):
        # Ctrl-C interrupts the first read (the trap says so); the loop answers each line with the size.
        s = Session(self.d, "--", "sh", "-c", "trap 'echo got-int' INT; echo ready; read x; "
                    "while read x; do [ \"$x\" = q ] && exit 0; echo size=$(stty size); done")
        try:
            s.read_until(lambda o: b"ready" in o)
            s.write(b"\x03")
            s.read_until(lambda o: b"got-int" in o)
            # The terminal window is resized: the kernel tells the CLI (SIGWINCH), which tells the job's.
            fcntl.ioctl(s.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 111, 0, 0))
            for i in range(50):
                s.write(b"\n")
                s.read_until(lambda o: o.count(b"size=") > i)
                if b"size=33 111" in s.out:
                    break
            s.write(b"q\n")
            self.assertEqual(s.wait(), 0, s.out)
        finally:
            s.close()
        self.assertIn(b"got-int", s.out)
        self.assertIn(b"size=33 111", s.out)

    @needs_readoption
    def test_session_outlives_a_daemon_restart(self):
        s = Session(self.d, "--", "sh")
        try:
            s.read_until(lambda o: PROMPT.encode() in o)
            jid = self.only_job()
            sock = self.d.job(jid)["tty_socket"]
            self.d.stop()
            self.d.start()
            self.assertEqual(self.d.wait_state(jid, "RUNNING")["tty_socket"], sock)
            s.write(b"echo still-here; exit 6\n")
            self.assertEqual(s.wait(), 6, s.out)
        finally:
            s.close()
        self.assertIn(b"still-here", s.out)

    def test_waits_saying_why_and_ctrl_c_there_cancels(self):
        busy = self.d.submit_api(["sleep", "300"], ngpus=2)
        self.d.wait_state(busy, "RUNNING")
        s = Session(self.d, "--gpus", "1", "--", "sh")
        try:
            s.read_until(lambda o: b"is waiting (" in o)
            self.assertIn(b"is waiting (Resources", s.out)
            jobs = [j["id"] for j in self.d.api("GET", "/api/v1/jobs")[1]["jobs"] if j["id"] != busy]
            s.write(b"\x03")  # the CLI's terminal is not raw yet: Ctrl-C is SIGINT to the CLI
            self.assertEqual(s.wait(), 128 + signal.SIGINT, s.out)
        finally:
            s.close()
        self.assertEqual(self.d.wait_state(jobs[0], "CANCELLED")["state"], "CANCELLED")
        self.d.cli("cancel", busy)

    def test_a_users_session_runs_as_the_user(self):
        if not IS_ROOT:
            self.skipTest("needs root to make an account")
        users = Users(prefix="gwtty")
        try:
            u = users.add("u")
            s = Session(self.d, "--", "sh", "-c", "echo uid=$(id -u); ls -l $(tty); exit 0", user=u.pw_uid)
            try:
                self.assertEqual(s.wait(), 0, s.out)
            finally:
                s.close()
            self.assertIn(f"uid={u.pw_uid}".encode(), s.out)
            # The terminal is the user's, as login would give it.
            self.assertRegex(s.out.decode(errors="replace"), r"crw-[-rwx]{6} 1 " + u.pw_name + " ")
        finally:
            users.remove_all()

    def test_hangup_reaches_a_job_that_does_not_read_its_terminal(self):
        # A notebook server never reads its terminal: keys typed into it pile up, and neither
        # the CLI nor the supervisor may block on them, or closing the terminal would not end it.
        s = Session(self.d, "--", "sh", "-c", "stty raw -echo; echo ready; exec sleep 300")
        try:
            s.read_until(lambda o: b"ready" in o)
            jid = self.only_job()
            os.set_blocking(s.fd, False)
            sent, refused = 0, 0
            for i in range(1000):  # until every buffer on the way is full
                try:
                    sent += os.write(s.fd, b"a" * 4096)
                    refused = 0
                except BlockingIOError:
                    refused += 1
                    if refused == 10:
                        break
                    s.read_until(lambda o: False, timeout=0.05)
            self.assertEqual(refused, 10, f"{sent} bytes taken and still taking")
            os.close(s.fd)
            s.fd = -1
            self.assertEqual(s.wait(), 128 + signal.SIGHUP)
            end = self.d.wait_state(jid, ["FAILED", "COMPLETED", "CANCELLED"])
        finally:
            s.close()
        self.assertEqual((end["state"], end["signal"]), ("FAILED", signal.SIGHUP), end)

    @classmethod
    def _users(cls):
        return Users(prefix="gwtty")

    def test_another_user_cannot_connect(self):
        if not IS_ROOT:
            self.skipTest("needs root to make a second account")
        users = self._users()
        try:
            other = users.add("o")
            jid = self.d.submit_api(["sh"], interactive=True)
            job = self.d.wait_state(jid, "RUNNING")
            path = job["tty_socket"]
            wait_until(lambda: os.path.exists(path), timeout=20, what="the session's socket")
            st = os.stat(path)
            self.assertEqual((st.st_uid, oct(st.st_mode & 0o777)), (0, oct(0o600)))
            probe = ("import socket, sys\n"
                     "s = socket.socket(socket.AF_UNIX)\n"
                     "try:\n"
                     "    s.connect(sys.argv[1])\n"
                     "except OSError as e:\n"
                     "    print('refused', e.errno); sys.exit(0)\n"
                     "s.settimeout(10); print('read', s.recv(200))\n")
            p = subprocess.run(as_user(other.pw_uid) + [sys.executable, "-c", probe, path], capture_output=True,
                               text=True, timeout=30)
            self.assertTrue(p.stdout.startswith("refused 13"), p.stdout + p.stderr)
            # Past the file's mode as well: the supervisor checks who connects (SO_PEERCRED).
            os.chmod(path, 0o666)
            p = subprocess.run(as_user(other.pw_uid) + [sys.executable, "-c", probe, path], capture_output=True,
                               text=True, timeout=30)
            self.assertIn("not yours", p.stdout, p.stdout + p.stderr)
            self.assertEqual(self.d.job(jid)["state"], "RUNNING")  # the intruder did not end it
            # Nor does another user learn where it is.
            st, body = self.d.raw_as(other.pw_uid, "GET", f"/api/v1/jobs/{jid}")
            self.assertEqual(st, 200)
            self.assertIn(b'"tty_socket":null', body)
            self.d.cli("cancel", jid)
        finally:
            users.remove_all()

    def test_refused_options(self):
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["sh"], interactive=True, retries=2))
        self.assertEqual((st, r.get("field")), (400, "retries"), r)
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["sh"], interactive=True, output="/tmp/x"))
        self.assertEqual((st, r.get("field")), (400, "output"), r)



class IdleSessionTest(DaemonTest):
    """A person thinking is idle GPU: a session is judged by its idle profile as any job, and
    what its terminal shows (typing echoed included) is progress, since it is the log."""
    gpus = 1
    config = "[policy.default]\nidle_timeout = 3\nwarn = 1\ngrace = 1\n"

    def test_typing_keeps_a_session_and_silence_reclaims_it(self):
        s = Session(self.d, "--", "sh")
        try:
            s.read_until(lambda o: PROMPT.encode() in o)
            jid = self.only_job()
            # Four times the idle window, typing every half second (idle, warn and grace: 5 s).
            for i in range(40):
                s.write(b"x")
                s.read_until(lambda o: False, timeout=0.5)
            self.assertEqual(self.d.job(jid)["state"], "RUNNING", self.d.job(jid)["events"])
            s.write(b"\x15")  # Ctrl-U: the typed line is dropped; then nothing more
            j = self.d.wait_state(jid, ["RECLAIMED", "FAILED", "COMPLETED", "CANCELLED"], timeout=60)
            self.assertEqual(j["state"], "RECLAIMED", j["reason"])
            self.assertNotEqual(s.wait(), 0)
        finally:
            s.close()

    def only_job(self):
        return self.d.api("GET", "/api/v1/jobs")[1]["jobs"][0]["id"]


def child_named(pid, name):
    """The children of pid whose command is name (an interrupt before the shell has started
    its command would reach the shell instead)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
    except OSError:
        return []
    found = []
    for k in kids:
        try:
            with open(f"/proc/{k}/comm") as f:
                if f.read().strip() == name:
                    found.append(int(k))
        except OSError:
            pass
    return found


def ignore_int_quit_block_usr1():
    """What a daemon started with `gpuwardd &` from a script inherits: SIGINT and SIGQUIT
    ignored; and, as some launchers leave it, a signal blocked."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})


class InheritedSignalsTest(DaemonTest):
    """Whatever signal dispositions and mask the daemon inherited, every job starts with every
    signal at its default and none blocked."""
    gpus = 1
    preexec = staticmethod(ignore_int_quit_block_usr1)

    def test_a_job_ignores_and_blocks_nothing(self):
        # The second job runs on the first one's supervisor, idle by then (one GPU), which
        # resets only the signals its first job found not at their default.
        for _ in range(2):
            jid = self.d.submit("--", "cat", "/proc/self/status")
            self.d.wait_state(jid, "COMPLETED")
            status = dict(l.split(":", 1) for l in self.d.log_text(jid).splitlines() if ":" in l)
            self.assertEqual(int(status["SigIgn"], 16), 0, "no signal ignored")
            self.assertEqual(int(status["SigBlk"], 16), 0, "no signal blocked")

    def test_ctrl_c_ends_a_sleep_in_a_shell_session(self):
        s = Session(self.d, "--", "bash", "--norc", "--noprofile")
        try:
            prompts = lambda n: (lambda o: o.count(PROMPT.encode()) >= n)
            s.read_until(prompts(1))
            s.write(b"sleep 100\n")
            shell = self.d.wait_pid(self.d.api("GET", "/api/v1/jobs")[1]["jobs"][0]["id"])
            wait_until(lambda: any(child_named(shell, "sleep")), timeout=20, what="the sleep to run")
            s.write(b"\x03")  # Ctrl-C: the terminal's INTR also drops what was typed ahead
            s.read_until(prompts(2), timeout=20)
            s.write(b"echo rc=$?\n")
            s.read_until(lambda o: b"rc=130" in o)
            s.read_until(prompts(3))
            s.write(b"exit 0\n")
            self.assertEqual(s.wait(), 0, s.out)
        finally:
            s.close()

    def test_signal_int_reaches_the_jobs_handler(self):
        # A shell may not trap a signal it was started with ignored: the trap works only if
        # INT reaches the job at its default.
        jid = self.d.submit("--time", "1m", "--signal", "INT@57s", "--", "sh", "-c",
                            "trap 'echo got-int; exit 0' INT; while true; do sleep 0.2; done")
        j = self.d.wait_state(jid, ["COMPLETED", "FAILED", "TIMEOUT", "CANCELLED"], timeout=30)
        self.assertIn("got-int", self.d.log_text(jid))
        self.assertEqual(j["state"], "COMPLETED", j["reason"])
        self.assertIn("SIGINT sent to its main process", events_of(j, "warn")[0]["message"])


if __name__ == "__main__":
    main()

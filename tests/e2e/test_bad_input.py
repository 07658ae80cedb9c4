"""Bad input gets a clear one-line error naming the field, and changes nothing."""
import json
import os
import pwd
import socket
import subprocess
import tempfile
import unittest

from gwtest import FAKE_NVML, GPUWARD, GPUWARDD, IS_ROOT, DaemonTest, main


class BadInputTest(DaemonTest):
    def jobs_count(self):
        st, r = self.d.api("GET", "/api/v1/jobs?state=PENDING,HELD,RUNNING,COMPLETED,FAILED,CANCELLED&limit=10000")
        return len(r["jobs"])

    def assert_cli_refused(self, args, needle, code=None):
        before = self.jobs_count()
        p = self.d.cli(*args, check=False)
        self.assertNotEqual(p.returncode, 0, f"{args} was accepted: {p.stdout}")
        if code is not None:
            self.assertEqual(p.returncode, code, p.stderr)
        self.assertIn("gpuward: error:", p.stderr)
        self.assertIn(needle, p.stderr)
        lines = [l for l in p.stderr.strip().splitlines() if not l.startswith("Try 'gpuward")]
        self.assertEqual(len(lines), 1, f"one line: {p.stderr!r}")
        self.assertEqual(self.jobs_count(), before, "nothing changed")

    def test_submit_refusals(self):
        self.assert_cli_refused(["submit", "--gpus", "0", "--", "true"], "--gpus", 2)
        self.assert_cli_refused(["submit", "--gpus", "99", "--", "true"], "only 4 GPUs on this host", 1)
        self.assert_cli_refused(["submit", "--time", "-5m", "--", "true"], "--time", 2)
        self.assert_cli_refused(["submit", "--time", "0", "--", "true"], "'0' is not a positive duration", 2)
        self.assert_cli_refused(["submit", "--time", "3fortnights", "--", "true"], "3fortnights", 2)
        self.assert_cli_refused(["submit", "--gpu-mem", "9Q", "--", "true"], "9Q", 2)
        self.assert_cli_refused(["submit", "--gpu-mem", "900G", "--", "true"], "the largest GPU here has 80.0 GiB", 1)
        self.assert_cli_refused(["submit", "--"], "command", 2)
        # Without '--' the word must be a script here or a command in PATH (with '--' it is taken as is).
        self.assert_cli_refused(["submit", "no-such-program-gw"], "no command of that name in PATH", 2)
        self.assert_cli_refused(["submit", "--cwd", "/nonexistent/dir", "--", "true"], "cwd", None)
        self.assert_cli_refused(["submit", "--after", "999", "--", "true"], "no job 999", 1)
        # The output file is opened at each start: a directory that is not there is refused now.
        self.assert_cli_refused(["submit", "--output", "/nonexistent/dir/x.log", "--", "true"],
                                "output: directory '/nonexistent/dir' does not exist", 1)
        self.assert_cli_refused(["submit", "--output", self.d.work, "--", "true"], "is a directory", 1)
        self.assert_cli_refused(["submit", "--after", "x:y", "--", "true"], "after", None)

    def test_unknown_jobs(self):
        for verb in ("show", "cancel", "hold", "release", "logs"):
            self.assert_cli_refused([verb, "4242"], "no job 4242", 1)

    def test_api_errors(self):
        cases = [
            ("POST", "/api/v1/jobs", "{not json", 400, None),
            ("POST", "/api/v1/jobs", "[1,2]", 400, None),
            ("POST", "/api/v1/jobs", "null", 400, None),
            ("POST", "/api/v1/jobs", "", 400, None),
            # A misspelt field is refused, not dropped: {"gpus": 2} would have been a 1-GPU job.
            ("POST", "/api/v1/jobs", json.dumps({"command": ["true"], "cwd": "/", "gpus": 2}), 400, "gpus"),
            ("POST", "/api/v1/jobs", json.dumps({"command": ["true"], "cwd": "/", "time": 60}), 400, "time"),
            ("POST", "/api/v1/jobs/batch", json.dumps({"jobs": [{"command": ["true"], "cwd": "/", "prio": 1}]}),
             400, "prio"),
            ("POST", "/api/v1/jobs", json.dumps({"command": "true"}), 400, "command"),
            ("POST", "/api/v1/jobs", json.dumps({"command": []}), 400, "command"),
            ("POST", "/api/v1/jobs", json.dumps({"command": ["true"], "ngpus": "2", "cwd": "/"}), 400, "ngpus"),
            ("POST", "/api/v1/jobs", json.dumps({"command": ["true"], "ngpus": 0, "cwd": "/"}), 400, "ngpus"),
            ("POST", "/api/v1/jobs", json.dumps({"command": ["true"], "time_limit": -5, "cwd": "/"}), 400, "time_limit"),
            ("POST", "/api/v1/jobs", json.dumps({"command": ["true"], "cwd": "relative"}), 400, "cwd"),
            ("POST", "/api/v1/jobs", json.dumps({"command": ["true"], "cwd": "/", "env": ["NOEQUALS"]}), 400, "env"),
            ("POST", "/api/v1/jobs/batch", json.dumps({"jobs": [{"command": ["true"], "cwd": "/"}, {"command": []}]}),
             400, "command"),
            ("GET", "/api/v1/jobs?state=BOGUS", None, 400, "state"),
            ("GET", "/api/v1/jobs?user=no-such-user-gw", None, 400, "user"),
            ("GET", "/api/v1/jobs?uid=root", None, 400, "uid"),
            ("GET", "/api/v1/jobs?uid=-1", None, 400, "uid"),
            ("GET", "/api/v1/jobs?uid=0&user=root", None, 400, "uid"),
            ("GET", "/api/v1/nothing", None, 404, None),
            ("GET", "/api/v1/jobs/0", None, 404, None),
            ("GET", "/api/v1/jobs/abc", None, 404, None),
            ("GET", "/api/v1/jobs/../../etc/passwd", None, 404, None),
            ("PUT", "/api/v1/jobs", "{}", 405, None),
            ("GET", "/api/v1/jobs/77", None, 404, "id"),
        ]
        before = self.jobs_count()
        errors = {}
        for method, path, body, status, field in cases:
            st, r = self.d.api(method, path, body)
            self.assertEqual(st, status, (method, path, body, r))
            self.assertIn("error", r, (method, path))
            self.assertTrue(r["error"])
            errors[body] = r["error"]
            if field:
                self.assertEqual(r["field"], field, (method, path, r))
        self.assertEqual(self.jobs_count(), before)
        self.assertIn("must be a JSON object", errors["null"])
        self.assertIn("no body", errors[""])
        self.assertIn("the number of GPUs is ngpus", errors[json.dumps({"command": ["true"], "cwd": "/", "gpus": 2})])
        # The same words as the CLI's for the same mistake.
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "cwd": "/", "time_limit": "-5m"})
        self.assertEqual((st, r["field"]), (400, "time_limit"))
        self.assertIn("'-5m' is not a positive duration", r["error"])
        # A batch names its first bad job, in words and as "index", whether decoding or checking refused it.
        for jobs, index, field in (([{"command": ["true"], "cwd": "/"}, {"command": []}], 1, "command"),
                                   ([{"command": ["true"], "cwd": "/nonexistent"}], 0, "cwd"),
                                   ([{"command": ["true"], "cwd": "/"}] * 2 + [{"command": ["true"], "cwd": "/",
                                                                                "ngpus": 99}], 2, "ngpus")):
            st, r = self.d.api("POST", "/api/v1/jobs/batch", {"jobs": jobs})
            self.assertEqual((st, r.get("index"), r["field"]), (400, index, field), r)
            self.assertTrue(r["error"].startswith(f"job {index}: "), r)
        self.assertEqual(self.jobs_count(), before)

    def raw_post(self, body, chunked=False):
        """Sends a request by hand: the daemon may answer 413 and close before the body is sent."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(20)
        s.connect(self.d.socket)
        head = "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        head += "Transfer-Encoding: chunked\r\n\r\n" if chunked else f"Content-Length: {len(body)}\r\n\r\n"
        try:
            s.sendall(head.encode())
            if chunked:
                for i in range(0, len(body), 65536):
                    part = body[i:i + 65536]
                    s.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                s.sendall(b"0\r\n\r\n")
            else:
                s.sendall(body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
                if b"\r\n\r\n" in data and b"}" in data:
                    break
        except (ConnectionResetError, socket.timeout):
            pass
        s.close()
        return int(data.split(b" ", 2)[1]) if data else None

    def test_oversized_body(self):
        self.assertEqual(self.raw_post(b"x" * (2 << 20)), 413)
        big = json.dumps({"command": ["true"], "cwd": "/", "name": "n", "env": ["A=" + "y" * (1100 << 10)]})
        self.assertEqual(self.raw_post(big.encode(), chunked=True), 413)
        st, r = self.d.api("GET", "/healthz")
        self.assertEqual(st, 200, "the daemon still serves")
        self.assertEqual(self.jobs_count(), 0)

    def test_tcp_is_read_only_without_identity(self):
        st, body = self.d.tcp("GET", "/healthz")
        self.assertEqual(st, 200)
        st, body = self.d.tcp("POST", "/api/v1/jobs", json.dumps({"command": ["true"], "cwd": "/"}))
        self.assertEqual(st, 401)
        self.assertEqual(self.jobs_count(), 0)

    def test_daemon_flags_and_config_errors(self):
        """One line each, naming the flag, or the file, line and key."""
        conf = os.path.join(self.d.dir, "bad.conf")
        cases = [(["--bogus"], "gpuwardd: error: unknown option '--bogus'"),
                 (["--state-dir"], "gpuwardd: error: --state-dir needs a value"),
                 (["--config", os.path.join(self.d.dir, "missing.conf")], "missing.conf: No such file or directory"),
                 (["--config", conf], f"{conf} line 2: unknown key 'bogus'"),
                 # Accepted before, then every job without --time was refused, naming a flag it never had.
                 (["--default-time-limit", "30d"], "default-time-limit 30d is longer than max-time-limit 7d"),
                 # Accepted before, and silently replaced by the built-in list at each failure.
                 (["--default-retry-on", "gpu_fault,bogus"], "default-retry-on: unknown failure class 'bogus'")]
        with open(conf, "w") as f:
            f.write("# a comment\nbogus = 1\n")
        safe = ["--state-dir", os.path.join(self.d.dir, "s3"), "--socket", os.path.join(self.d.dir, "s3.sock")]
        for args, needle in cases:
            p = subprocess.run([GPUWARDD, *args, *safe] if len(args) > 1 else [GPUWARDD, *args], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(p.returncode, 2, p.stderr)
            lines = [l for l in p.stderr.splitlines() if not l.startswith("Try 'gpuwardd")]
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertIn(needle, lines[0])

    def test_daemon_listen_port_out_of_range(self):
        """getaddrinfo keeps a port's low 16 bits: 70000 must not quietly become 4464."""
        for bad in ("70000", "99999", "", "8x"):
            p = subprocess.run([GPUWARDD, "--state-dir", os.path.join(self.d.dir, "s2"), "--socket",
                                os.path.join(self.d.dir, "s2.sock"), "--simulate-gpus", "1", "--nvml-lib", FAKE_NVML,
                                "--listen", f"127.0.0.1:{bad}"], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(f"listen: port '{bad}' is not a number from 0 to 65535", p.stderr)

    def test_listen_addr_that_cannot_be_written_is_said(self):
        """With port 0, listen.addr is how scripts find the port: not fatal, but said, with the address."""
        state = os.path.join(self.d.dir, "s4")
        os.makedirs(os.path.join(state, "listen.addr"))
        p = subprocess.Popen([GPUWARDD, "--state-dir", state, "--socket", os.path.join(self.d.dir, "s4.sock"),
                              "--simulate-gpus", "1", "--nvml-lib", FAKE_NVML, "--listen", "127.0.0.1:0"],
                             stderr=subprocess.PIPE, text=True)
        try:
            lines = []
            for line in p.stderr:  # bounded: the daemon says "ready" or exits
                lines.append(line)
                if " ready: " in line:
                    break
            text = "".join(lines)
            self.assertIn(" ready: ", text)
            self.assertRegex(text, r"cannot write \S+/listen.addr \(Is a directory\): the HTTP API is at 127\.0\.0\.1:\d+")
        finally:
            p.terminate()
            p.wait(timeout=30)
            p.stderr.close()

    def test_daemon_not_running(self):
        sock = os.path.join(self.d.dir, "nobody-here.sock")
        p = subprocess.run([GPUWARD, "--socket", sock, "queue"], capture_output=True, text=True, timeout=10)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"cannot reach gpuwardd at {sock}: is it running?", p.stderr)

    @unittest.skipUnless(IS_ROOT, "needs root to act as another user")
    def test_socket_of_another_user_gets_nothing(self):
        """A submission carries the caller's environment: a socket served by a process that is
        neither root's nor the caller's (someone else's impostor at that path) is told nothing."""
        import shutil
        import sys
        nobody = pwd.getpwnam("nobody")
        where = os.path.join(self.d.dir, "impostor")
        os.mkdir(where, 0o700)
        os.chown(where, nobody.pw_uid, nobody.pw_gid)
        sock = os.path.join(where, "gpuward.sock")
        server = ("import socket, sys\n"
                  "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); print('ready', flush=True)\n"
                  "s.settimeout(20); c, _ = s.accept(); c.settimeout(5); got = b''\n"
                  "try:\n    while (b := c.recv(65536)):\n        got += b\n"
                  "except socket.timeout:\n    pass\n"
                  "print(len(got), flush=True)\n")
        p = subprocess.Popen(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
                              sys.executable, "-c", server, sock], stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(p.stdout.readline().strip(), "ready")
            c = subprocess.run([GPUWARD, "--socket", sock, "submit", "--env", "SECRET=hunter2", "--", "true"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(c.returncode, 1, c.stdout)
            self.assertIn(f"the socket {sock} is served by a process of uid {nobody.pw_uid}, neither root nor you",
                          c.stderr)
            self.assertEqual(p.stdout.readline().strip(), "0", "not a byte was sent")
        finally:
            p.kill()
            p.wait(timeout=10)
            p.stdout.close()
            shutil.rmtree(where, ignore_errors=True)

    @unittest.skipUnless(IS_ROOT, "needs root to act as two users")
    def test_other_users_jobs(self):
        nobody = pwd.getpwnam("nobody").pw_uid
        jid = self.d.submit("--", "sleep", "30")
        self.d.wait_state(jid, "RUNNING")
        p = self.d.cli("cancel", jid, user=nobody, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("only they or an admin may cancel it", p.stderr)
        p = self.d.cli("logs", jid, user=nobody, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(self.d.job(jid)["state"], "RUNNING")
        # A job submitted by nobody runs as nobody, never as root.
        out = os.path.join(self.d.work, "who")
        nj = self.d.submit("--", "sh", "-c", f"id -u > {out}", user=nobody)
        j = self.d.wait_state(nj, "COMPLETED")
        self.assertEqual((j["user"], j["uid"]), ("nobody", nobody))
        with open(out) as f:
            self.assertEqual(int(f.read()), nobody)
        # The owner may cancel their own job.
        sj = self.d.submit("--", "sleep", "30", user=nobody)
        self.d.wait_state(sj, "RUNNING")
        self.d.cli("cancel", sj, user=nobody)
        self.assertEqual(self.d.job(sj)["state"], "CANCELLED")


class AgentOptionsTest(unittest.TestCase):
    """gpuwardd --agent's own options are bounded and named when refused (no daemon needed)."""

    def agent(self, *extra):
        return subprocess.run([GPUWARDD, "--agent", "--controller", "http://127.0.0.1:9", "--token-file",
                               os.devnull, "--cache-dir", "/nonexistent/gw-cache", *extra],
                              capture_output=True, text=True, timeout=30)

    def test_cache_copies_is_a_count_from_1_to_64(self):
        for bad in ("0", "65", "two"):
            p = self.agent("--cache-copies", bad)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(f"--cache-copies: '{bad}' is not a count from 1 to 64", p.stderr)
        p = subprocess.run([GPUWARDD, "--agent", "--help"], capture_output=True, text=True, timeout=30)
        self.assertIn("[--cache-copies N]", p.stdout)

    def test_scratch_dir_is_an_existing_folder(self):
        with tempfile.TemporaryDirectory() as d:
            afile, link = os.path.join(d, "file"), os.path.join(d, "link")
            open(afile, "w").close()
            os.symlink(d, link)
            for bad, why in (("scratch", "is not an absolute folder of at most 512 bytes"),
                             ("/" + "x" * 600, "is not an absolute folder of at most 512 bytes"),
                             (os.path.join(d, "none"), "No such file or directory"),
                             (afile, "Not a directory"), (link, "cannot open")):
                p = self.agent("--scratch-dir", bad)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("--scratch-dir: ", p.stderr)
                self.assertIn(why, p.stderr)
        p = subprocess.run([GPUWARDD, "--agent", "--help"], capture_output=True, text=True, timeout=30)
        self.assertIn("[--scratch-dir DIR]", p.stdout)


class RootRefusedTest(DaemonTest):
    """Without allow-root-jobs, uid 0 may not submit."""

    @unittest.skipUnless(IS_ROOT, "needs root")
    def test_root_job_refused(self):
        self.d.stop()
        self.d.extra = []
        args = self.d.args
        self.d.args = lambda: [a for a in args() if a != "--allow-root-jobs"]
        self.d.start()
        p = self.d.cli("submit", "--", "true", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("may not run as root", p.stderr)


if __name__ == "__main__":
    main()

"""From a CI runner to a published model.  The CLI reaches a daemon over TCP with GPUWARD_URL
and a bearer token (GPUWARD_TOKEN or --token-file), refuses to send a token over plain http
off loopback unless GPUWARD_INSECURE=1, and refuses https; `submit --wait --follow` prints the
job's output and exits with a code that says how it ended; a token of scope ci may submit and
read its own jobs, nothing else.  The CI examples of contrib/ci (GitLab and GitHub Actions)
run their shell lines against a daemon on loopback with the fake trainer, as a runner would."""
import os
import shutil
import socket
import subprocess
import tempfile
import unittest

import yaml

import gwtest

CONTRIB_CI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "contrib", "ci")


def own_address():
    """A non-loopback IPv4 address of this machine (no packet is sent to find it), or None."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))
        addr = s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()
    return None if addr.startswith("127.") else addr


class CiRemote(unittest.TestCase):
    """One daemon for the class: every test makes its own jobs and tokens."""

    @classmethod
    def setUpClass(cls):
        cls.users = gwtest.Users.for_class(cls, prefix="gwci", other="u")
        try:
            cls.d = gwtest.Daemon(gpus=2).start()
        except BaseException:
            cls.users.remove_all()
            raise
        cls.token = cls.d.cli("token", "create", "--scope", "ci", "--name", "ci", "-q").stdout.strip()
        cls.url = f"http://127.0.0.1:{cls.d.port}"

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()
        cls.users.remove_all()

    def remote(self, *args, token=None, url=None, extra_env=None, timeout=60):
        """gpuward ARGS with GPUWARD_URL (no --socket), as the ci token's holder unless token=''."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUWARD_")}
        env["GPUWARD_URL"] = url or self.url
        tok = self.token if token is None else token
        if tok:
            env["GPUWARD_TOKEN"] = tok
        env.update(extra_env or {})
        return subprocess.run([gwtest.GPUWARD, *[str(a) for a in args]], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=self.d.work)

    def test_submit_wait_follow_streams_the_log_and_exits_with_the_jobs_code(self):
        p = self.remote("submit", "--wait", "--follow", "--time", "5m", "--",
                        "sh", "-c", "echo line-one; echo line-two; exit 7")
        self.assertEqual(p.returncode, 7, p.stderr)
        self.assertIn("line-one\nline-two\n", p.stdout)
        self.assertIn("FAILED", p.stderr)
        jid = int(p.stdout.split("Submitted job ", 1)[1].split()[0])
        job = self.d.job(jid)
        self.assertEqual(job["user"], "root")  # the token's owner
        # The token does not travel into the job's environment.
        self.assertNotIn(self.token, str(self.d.api("GET", f"/api/v1/jobs/{jid}")[1]))
        ok = self.remote("submit", "--wait", "--follow", "--", "sh", "-c", "echo fine")
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertIn("fine\n", ok.stdout)

    def test_follow_exit_codes_of_cancelled_and_timeout(self):
        t = self.remote("submit", "--wait", "--follow", "--time", "1s", "--", "sleep", "60")
        self.assertEqual(t.returncode, 124, t.stderr)
        self.assertIn("TIMEOUT", t.stderr)
        p = subprocess.Popen([gwtest.GPUWARD, "--socket", self.d.socket, "submit", "--wait", "--follow", "--",
                              "sleep", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=self.d.work)
        try:
            jid = int(p.stdout.readline().split()[-1])
            self.d.wait_state(jid, "RUNNING")
            self.d.cli("cancel", jid)
            self.assertEqual(p.wait(timeout=30), 125)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
            p.stderr.close()

    def test_plain_wait_keeps_exit_1(self):
        p = self.remote("submit", "--wait", "--", "sh", "-c", "exit 7")
        self.assertEqual(p.returncode, 1, p.stderr)

    def test_follow_needs_wait(self):
        p = self.remote("submit", "--follow", "--", "true")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--follow goes with --wait", p.stderr)

    def test_token_file(self):
        with tempfile.NamedTemporaryFile("w", dir=self.d.dir, delete=False) as f:
            f.write(self.token + "\n")
        p = self.remote("--token-file", f.name, "whoami", "--json", token="")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('"root"', p.stdout)
        with open(f.name, "w") as g:
            g.write("not-a-token\n")
        p = self.remote("--token-file", f.name, "whoami", token="")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--token-file", p.stderr)

    def test_bad_token_variable_is_named(self):
        p = self.remote("queue", token="gw_nothex")
        self.assertEqual(p.returncode, 2)
        self.assertIn("GPUWARD_TOKEN", p.stderr)

    def test_https_is_refused_by_this_build(self):
        p = self.remote("queue", url="https://127.0.0.1:1")
        self.assertEqual(p.returncode, 2)
        self.assertIn("https is not supported by this build", p.stderr)
        self.assertIn("TLS proxy", p.stderr)

    def test_token_not_sent_over_plain_http_off_loopback(self):
        # 192.0.2.1 (TEST-NET-1) is refused before any connection is tried.
        p = self.remote("queue", url="http://192.0.2.1:8470")
        self.assertEqual(p.returncode, 1)
        self.assertIn("GPUWARD_INSECURE=1", p.stderr)
        self.assertIn("not sending GPUWARD_TOKEN", p.stderr)
        addr = own_address()
        if addr is None:
            return
        # With GPUWARD_INSECURE=1 it is sent; this machine's own address has no daemon on that
        # port (it listens on 127.0.0.1), so the connection is refused, locally.
        p = self.remote("queue", url=f"http://{addr}:{self.d.port}", extra_env={"GPUWARD_INSECURE": "1"})
        self.assertEqual(p.returncode, 1)
        self.assertNotIn("not sending", p.stderr)
        self.assertIn("cannot reach gpuwardd", p.stderr)

    def test_ci_token_reads_and_submits_its_own_jobs_only(self):
        theirs = int(self.d.cli("submit", "-q", "--", "sleep", "60", user=self.other.pw_uid).stdout)
        mine = int(self.remote("submit", "-q", "--", "sleep", "60").stdout)
        tok = self.token
        st, reply = self.d.tcp_json("DELETE", f"/api/v1/jobs/{theirs}", token=tok)
        self.assertEqual(st, 403, reply)
        self.assertIn("scope ci", reply["error"])
        st, reply = self.d.tcp_json("GET", f"/api/v1/jobs/{theirs}", token=tok)
        self.assertEqual(st, 403, reply)
        st, reply = self.d.tcp_json("GET", f"/api/v1/jobs/{theirs}/log", token=tok)
        self.assertEqual(st, 403, reply)
        st, reply = self.d.tcp_json("GET", f"/api/v1/jobs/{mine}", token=tok)
        self.assertEqual((st, reply["id"]), (200, mine))
        st, reply = self.d.tcp_json("GET", "/api/v1/jobs", token=tok)
        self.assertEqual([j["id"] for j in reply["jobs"]], [mine])
        for method, path, body in (("POST", "/api/v1/bookings", {"ngpus": 1, "start": "+1h", "duration": "1h"}),
                                   ("GET", "/api/v1/gpus", None),
                                   ("DELETE", f"/api/v1/jobs/{mine}", None),
                                   ("GET", "/api/v1/tokens", None),
                                   ("POST", "/api/v1/gpus/0/drain", {})):
            st, reply = self.d.tcp_json(method, path, body, token=tok)
            self.assertEqual(st, 403, (method, path, reply))
            self.assertIn("it may only submit jobs and read its own", reply["error"])
        self.assertEqual(self.d.job(theirs)["state"] in ("PENDING", "RUNNING"), True)
        for jid in (theirs, mine):
            self.d.cli("cancel", jid)

    def test_anyone_may_make_a_ci_token(self):
        made = self.d.cli_json("token", "create", "--scope", "ci", user=self.other.pw_uid)
        self.assertEqual(made["scope"], "ci")
        p = self.d.cli("token", "create", "--scope", "bogus", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("'ci'", p.stderr)



def gitlab_scripts():
    """The shell of contrib/ci/.gitlab-ci.yml's train job, one script (GitLab runs its lines in
    one shell), and the job."""
    with open(os.path.join(CONTRIB_CI, ".gitlab-ci.yml")) as f:
        job = yaml.safe_load(f)["train"]
    return ["\n".join(job["script"])], job


def github_scripts():
    """The run: blocks of contrib/ci/.github-workflow.yml's train job, one script each (each
    step is a shell of its own), and the whole workflow."""
    with open(os.path.join(CONTRIB_CI, ".github-workflow.yml")) as f:
        wf = yaml.safe_load(f)
    return [st["run"] for st in wf["jobs"]["train"]["steps"] if "run" in st], wf


class CiExamples(unittest.TestCase):
    """The examples' shell lines against one daemon; each run in a checkout of its own."""

    @classmethod
    def setUpClass(cls):
        cls.store = tempfile.mkdtemp(prefix="gw-models-")  # 0700: the daemon's alone
        cls.d = gwtest.Daemon(gpus=2, config=f"model_store = {cls.store}\n").start()
        cls.token = cls.d.cli("token", "create", "--scope", "ci", "--name", "examples", "-q").stdout.strip()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()
        shutil.rmtree(cls.store, ignore_errors=True)

    def run_example(self, scripts, baseline, trainer_args=(), model=""):
        """Runs scripts in order, as the runner does (bash -eo pipefail), in a fresh checkout
        with ci/baseline-map50-95.txt; (exit status of the first that failed or 0, output)."""
        checkout = tempfile.mkdtemp(dir=self.d.work)
        os.makedirs(os.path.join(checkout, "ci"))
        with open(os.path.join(checkout, "ci", "baseline-map50-95.txt"), "w") as f:
            f.write(f"{baseline}\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUWARD_")}
        env.update(GPUWARD_URL=f"http://127.0.0.1:{self.d.port}", GPUWARD_TOKEN=self.token,
                   PATH=f"{os.path.dirname(gwtest.GPUWARD)}:{env.get('PATH', '/usr/bin:/bin')}",
                   TRAIN_CMD=" ".join([gwtest.TRAINER, "epochs=3", "name=ci", "--epoch-seconds", "0.2",
                                       *trainer_args]),
                   CI_COMMIT_SHORT_SHA="abc123", GITHUB_SHA="abc123def456", MODEL_NAME=model)
        out = ""
        for script in scripts:
            p = subprocess.run(["bash", "-eo", "pipefail", "-c", script], capture_output=True, text=True,
                               timeout=120, env=env, cwd=checkout)
            out += p.stdout + p.stderr
            if p.returncode != 0:
                return p.returncode, out
        return 0, out

    def check(self, scripts, model):
        rc, out = self.run_example(scripts, 0.3)
        self.assertEqual(rc, 0, out)
        self.assertIn("mAP50-95 0.", out)
        self.assertIn("(baseline 0.3)", out)
        self.assertNotIn("model ", out, "no MODEL_NAME: nothing published, nothing said")
        # With MODEL_NAME the run is published, and the pipeline says so.
        rc, out = self.run_example(scripts, 0.3, model=model)
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, rf"model {model}: published: published as {model} v1 ")
        st, latest = self.d.tcp_json("GET", f"/api/v1/models/{model}/latest", token=self.token)
        self.assertEqual((st, latest["version"], latest["commit"]), (200, 1, "abc123def456"), latest)
        rc, out = self.run_example(scripts, 0.99)
        self.assertEqual(rc, 1, out)
        self.assertIn("mAP50-95 did not improve on 0.99", out)
        rc, out = self.run_example(scripts, 0.3, ["--crash-at-epoch", "2", "--exit-code", "3"])
        self.assertNotEqual(rc, 0, out)
        self.assertIn("the training run did not complete", out)

    def test_gitlab_job(self):
        scripts, job = gitlab_scripts()
        self.assertEqual(job["rules"], [{"changes": ["labels/**"]}])
        self.check(scripts, "gitlab-det")

    def test_github_workflow(self):
        scripts, wf = github_scripts()
        # PyYAML reads the key "on" as True (YAML 1.1).
        self.assertEqual(wf[True]["push"]["paths"], ["labels/**"])
        self.assertEqual(len(scripts), 3)
        self.check(scripts, "github-det")


if __name__ == "__main__":
    gwtest.main()

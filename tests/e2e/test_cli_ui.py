"""The terminal views: `gpuward top` in a real pseudo-terminal (tmux), `gpus`, `show`, admin drain."""
import json
import os
import pwd
import shutil
import subprocess
import time
import unittest

from gwtest import GPUWARD, IS_ROOT, TRAINER, DaemonTest, main, wait_until


@unittest.skipUnless(shutil.which("tmux"), "tmux not installed")
class TopTest(DaemonTest):
    def setUp(self):
        super().setUp()
        self.session = f"gwtop-{os.getpid()}"
        self.tmux = ["tmux", "-L", self.session]  # a tmux server of our own, stopped in tearDown

    def tearDown(self):
        subprocess.run(self.tmux + ["kill-server"], capture_output=True)
        super().tearDown()

    def capture(self):
        return subprocess.run(self.tmux + ["capture-pane", "-p", "-t", f"={self.session}:"], capture_output=True,
                              text=True).stdout

    def test_top_renders_and_quits_on_q(self):
        jid = self.d.submit("--gpus", 2, "--name", "toptest", "--", TRAINER, "--sleep-forever", "--util", "50")
        self.d.wait_state(jid, "RUNNING")
        cmd = f"{GPUWARD} --socket {self.d.socket} top --interval 0.5"
        subprocess.run(self.tmux + ["new-session", "-d", "-s", self.session, "-x", "120", "-y", "30", cmd], check=True)
        screen = wait_until(lambda: (lambda s: s if "toptest" in s else None)(self.capture()), what="top's screen")
        self.assertIn("gpuward top", screen)
        self.assertNotIn("\x1b", screen, "no stray escape codes on the screen")
        for line in screen.splitlines():
            self.assertLessEqual(len(line), 120)
        subprocess.run(self.tmux + ["send-keys", "-t", f"={self.session}:", "q"], check=True)
        wait_until(lambda: subprocess.run(self.tmux + ["has-session", "-t", f"={self.session}"],
                                          capture_output=True).returncode != 0, what="top to quit on q")

    def screen_of(self, cmd, cols, want):
        # A tmux server for each screen: one whose last session was just killed is still exiting,
        # and a new session asked of it then fails.
        self.screens = getattr(self, "screens", 0) + 1
        self.tmux = ["tmux", "-L", f"{self.session}-{self.screens}"]
        subprocess.run(self.tmux + ["new-session", "-d", "-s", self.session, "-x", str(cols), "-y", "30", cmd],
                       check=True)
        try:
            return wait_until(lambda: (lambda s: s if want in s else None)(self.capture()), what=f"{want} on screen")
        finally:
            subprocess.run(self.tmux + ["kill-server"], capture_output=True)

    def test_top_and_gpus_fit_80_columns_and_widen_when_there_is_room(self):
        """At 80 columns the GPU name is shortened, not USER, JOB_NAME, TIME and ETA cut off."""
        jid = self.d.submit("--gpus", 1, "--name", "eighty", "--", TRAINER, "--sleep-forever", "--util", "50")
        self.d.wait_state(jid, "RUNNING")
        job = self.d.job(jid)
        gpu, user = job["gpus"][0], job["user"]
        row = rf"(?m)^{gpu}\s+A100 80GB\s+\d+%.*\s{jid}\s+{user}\s+eighty\s+\d+[smh]\S*\s+\S+\s*$"
        for cmd in (f"{GPUWARD} --socket {self.d.socket} top --interval 0.5",
                    f"sh -c '{GPUWARD} --socket {self.d.socket} gpus; sleep 60'"):
            screen = self.screen_of(cmd, 80, "eighty")
            for line in screen.splitlines():
                self.assertLessEqual(len(line), 80, line)
            self.assertRegex(screen, r"(?m)^GPU\s+NAME\s+UTIL\s+MEMORY\s.*\bUSER\s+JOB_NAME\s+TIME\s+ETA\s*$", cmd)
            self.assertRegex(screen, row, cmd)
        # Room enough: every column, and the GPU's full name.
        wide = self.screen_of(f"{GPUWARD} --socket {self.d.socket} top --interval 0.5", 200, "eighty")
        self.assertRegex(wide, r"(?m)^INDEX\s+NAME\s+UTIL\s+MEMORY\(USED/TOTAL\)\s+TEMP\s+POWER\s+HEALTH\s")
        self.assertRegex(wide, rf"(?m)^{gpu}\s+NVIDIA A100-SXM4-80GB\s")

    def test_top_without_a_terminal_prints_once(self):
        p = subprocess.run([GPUWARD, "--socket", self.d.socket, "top"], capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("\x1b", p.stdout)
        self.assertIn("NVIDIA A100", p.stdout)


class ViewsTest(DaemonTest):
    def test_gpus_show_and_admin_drain(self):
        jid = self.d.submit("--gpus", 1, "--", TRAINER, "--sleep-forever", "--util", "40", "--mem-mib", "1024")
        self.d.wait_state(jid, "RUNNING")
        wait_until(lambda: (self.d.job(jid)["telemetry"] or {}).get("samples", 0) >= 2, what="samples")
        out = self.d.cli("gpus").stdout
        self.assertRegex(out, r"(?m)^INDEX\s+NAME")
        self.assertIn(str(jid), out)
        show = self.d.cli("show", jid).stdout
        self.assertIn("Telemetry:", show)
        self.assertRegex(show, r"GPU \d: util mean \d+% p95 \d+%, peak memory 1\.0 GiB")
        p = self.d.cli("admin", "drain", "3", "--reason", "fan noise")
        self.assertIn("GPU 3 drained: fan noise", p.stdout)
        self.assertEqual(self.d.cli_json("gpus")["gpus"][3]["health"], "drained")
        self.assertEqual(self.d.cli("admin", "drain", "3", check=False).returncode, 2, "--reason is required")
        p = self.d.cli("admin", "undrain", "3")
        self.assertIn("GPU 3 undrained", p.stdout)
        self.assertEqual(self.d.cli_json("gpus")["gpus"][3]["health"], "ok")
        # Again: it says that it was not drained, and fails as 'release' of a job not held does.
        p = self.d.cli("admin", "undrain", "3", check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertIn("GPU 3 is not drained", p.stderr)
        self.assertNotIn("undrained", p.stderr)
        self.assertEqual(self.d.cli_json("gpus")["gpus"][3]["health"], "ok")
        if IS_ROOT:
            nobody = pwd.getpwnam("nobody").pw_uid
            p = self.d.cli("admin", "drain", "2", "--reason", "mine now", user=nobody, check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn("only admins", p.stderr)
            self.assertEqual(self.d.cli_json("gpus")["gpus"][2]["health"], "ok")


class SocketAfterTheVerbTest(DaemonTest):
    """--socket is global, and users type it after the verb as often as before it."""

    def run_cli(self, *args, cwd=None):
        # A socket before the verb that does not exist: only the one after the verb can work.
        return subprocess.run([GPUWARD, "--socket", os.path.join(self.d.dir, "nothing.sock"),
                               *[str(a) for a in args]], capture_output=True, text=True, timeout=60,
                              cwd=cwd or self.d.work)

    def ok(self, *args, **kw):
        p = self.run_cli(*args, **kw)
        self.assertEqual(p.returncode, 0, f"{args}: {p.stderr}")
        return p

    def test_every_kind_of_verb_takes_it(self):
        sock = self.d.socket
        jid = int(self.ok("submit", "--socket", sock, "-q", "--hold", "--", "true").stdout)
        self.assertEqual(self.d.job(jid)["state"], "HELD")
        self.assertIn(str(jid), self.ok("queue", "--socket", sock).stdout)
        self.assertIn("HELD", self.ok("show", str(jid), "--socket", sock).stdout)
        self.ok("logs", "--socket", sock, str(jid))
        self.ok("release", str(jid), "--socket", sock)
        self.d.wait_state(jid, ("COMPLETED",))
        self.assertIn(str(jid), self.ok("history", "--socket=" + sock).stdout)
        self.ok("gpus", "--socket", sock)
        self.ok("top", "--once", "--socket", sock)
        self.ok("reservations", "--socket", sock)
        self.ok("admin", "--socket", sock, "drain", "1", "--reason", "fan")
        self.assertEqual(self.d.cli_json("gpus")["gpus"][1]["health"], "drained")
        self.ok("admin", "undrain", "1", "--socket", sock)
        self.assertEqual(self.d.cli_json("gpus")["gpus"][1]["health"], "ok")

    def test_an_empty_socket_is_a_usage_error(self):
        p = self.run_cli("queue", "--socket", "")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--socket: the path is empty", p.stderr)

    def test_a_script_cannot_choose_the_socket(self):
        script = os.path.join(self.d.work, "train.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n#GPUWARD --socket /tmp/elsewhere.sock\ntrue\n")
        os.chmod(script, 0o755)
        p = self.run_cli("submit", "--socket", self.d.socket, script)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--socket is not a job option", p.stderr)
        status, jobs = self.d.api("GET", "/api/v1/jobs")
        self.assertEqual((status, jobs["jobs"]), (200, []), "nothing was submitted")


class ControlSelectionTest(DaemonTest):
    """cancel, hold and release take ranges of ids, and a selection of one's own jobs."""

    def ids(self, *args):
        return [int(x) for x in self.d.cli(*args).stdout.split()]

    def test_ranges_and_selections(self):
        blocker = self.d.submit("--gpus", 4, "--name", "blocker", "--", "sleep", "300")
        self.d.wait_state(blocker, ("RUNNING",))
        sweep = [self.d.submit("--hold", "--name", "sweep", "--", "true") for _ in range(3)]
        other = self.d.submit("--name", "other", "--", "true")
        p = self.d.cli("release", "--me", "--name", "sweep")
        self.assertEqual(p.stdout.splitlines(), [f"Released job {i}" for i in sweep])
        p = self.d.cli("hold", f"{sweep[0]}-{sweep[2]}")
        self.assertEqual(p.stdout.splitlines(), [f"Held job {i}" for i in sweep])
        self.assertEqual(self.d.job(other)["state"], "PENDING", "a range touches only its ids")
        out = self.d.cli_json("cancel", "--me", "--name", "sweep", "--state", "held")
        self.assertEqual([(j["id"], j["state"]) for j in out], [(i, "CANCELLED") for i in sweep])
        p = self.d.cli("cancel", "--me", "--name", "sweep")
        self.assertEqual(p.stdout, "No job matched: nothing to cancel\n")
        # Waiting jobs go first: 'other' never starts on the GPUs the blocker frees.
        p = self.d.cli("cancel", "--me")
        self.assertEqual(p.stdout.splitlines(), [f"Cancelled job {other}", f"Cancelled job {blocker}"])
        self.assertIsNone(self.d.job(other)["start_time"])
        self.assertEqual(self.d.job(blocker)["state"], "CANCELLED")

    def test_bad_selections_change_nothing(self):
        jid = self.d.submit("--hold", "--name", "keep", "--", "true")
        for args, said in ((("cancel", "--name", "keep"), "add --me or --user"),
                           (("cancel", "--me", str(jid)), "not both"),
                           (("cancel", "--me", "--user", "root"), "exclude each other"),
                           (("cancel", f"{jid + 5}-{jid + 1}"), "a range goes up"),
                           (("cancel", "1-20000"), "by at most 10000 ids"),
                           (("cancel", "1-x"), "not a job id or a range"),
                           (("cancel", "--me", "--state", "COMPLETED"), "not COMPLETED"),
                           (("cancel", "--me", "--state", "BOGUS"), "'BOGUS' is not a job state"),
                           (("hold", "--me", "--state", "PENDING"), "unknown option '--state'"),
                           (("release", "--no-wait", str(jid)), "unknown option '--no-wait'"),
                           (("cancel",), "or --me for all of yours")):
            p = self.d.cli(*args, check=False)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(said, p.stderr, args)
        self.assertEqual(self.d.job(jid)["state"], "HELD")


class WaitTest(DaemonTest):
    """gpuward wait and submit --wait: for scripts and CI, as tsp -w and sbatch --wait."""

    def test_submit_wait_says_how_the_job_ended(self):
        p = self.d.cli("submit", "--wait", "--", "sh", "-c", "sleep 0.3")
        jid = int(p.stdout.split()[2])
        self.assertEqual(p.stdout, f"Submitted job {jid}\nJob {jid} COMPLETED (exit 0)\n")
        p = self.d.cli("submit", "--wait", "--", "sh", "-c", "exit 3", check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stdout, r"Job \d+ FAILED: .*exit 3")
        job = json.loads(self.d.cli("submit", "--wait", "--json", "--", "true").stdout)
        self.assertEqual(job["state"], "COMPLETED")
        self.assertEqual(self.d.cli("submit", "-q", "--wait", "--", "true").stdout.strip(), str(job["id"] + 1))
        both = json.loads(self.d.cli("submit", "-q", "--wait", "--json", "--", "true").stdout)
        self.assertEqual((both["id"], both["state"]), (job["id"] + 2, "COMPLETED"), "--json wins over -q")

    def test_giving_up_tells_each_job_still_waiting_and_stops(self):
        a = self.d.submit("--hold", "--", "true")
        b = self.d.submit("--", "sleep", "30")
        p = self.d.cli("wait", "--timeout", "1s", str(a), str(b), check=False, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"job {a} is still HELD: gave up waiting", p.stderr)
        self.assertIn(f"job {b} is still RUNNING: gave up waiting", p.stderr)
        p = self.d.cli("wait", "9223372036854775806-9223372036854775807", check=False, timeout=30)
        self.assertEqual(p.returncode, 1, "two unknown ids, not an endless range")
        self.assertIn("9223372036854775806", p.stderr)

    def test_wait_for_several_and_give_up_in_time(self):
        a = self.d.submit("--", "sh", "-c", "sleep 0.5")
        b = self.d.submit("--", "true")
        p = self.d.cli("wait", f"{a}-{b}")
        self.assertEqual(sorted(p.stdout.splitlines()), sorted([f"Job {a} COMPLETED (exit 0)",
                                                                f"Job {b} COMPLETED (exit 0)"]))
        held = self.d.submit("--hold", "--", "true")
        t0 = time.time()
        p = self.d.cli("wait", "--timeout", "1s", str(held), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"job {held} is still HELD: gave up waiting", p.stderr)
        self.assertLess(time.time() - t0, 10)
        p = self.d.cli("wait", "999", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("999", p.stderr)
        p = self.d.cli("wait", "--timeout", "soon", str(held), check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--timeout: 'soon' is not a positive duration", p.stderr)
        self.d.cli("cancel", str(held))
        p = self.d.cli("wait", "--json", str(held), check=False)
        self.assertEqual((p.returncode, json.loads(p.stdout)["state"]), (1, "CANCELLED"))


if __name__ == "__main__":
    main()

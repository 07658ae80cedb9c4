#!/usr/bin/env python3
"""What a submission is told at once: durations as people type them (one parser for the CLI,
#GPUWARD lines, the API and the config), a command that is not there or not runnable by its
user, and the time limit a job gets when none was asked."""
import json
import os
import pwd
import secrets
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gwtest import IS_ROOT, Daemon, DaemonTest, start_failure, main  # noqa: E402

HOUR = 3600
FORMS = "use 30m, 1.5h, 1h30m, 90s, 2d or H:MM:SS"


class Durations(DaemonTest):
    gpus = 1

    def test_forms_people_type(self):
        """--time, #GPUWARD --time and the API's time_limit take the same forms."""
        for typed, secs in [("30min", 1800), ("1.5h", 5400), ("90s", 90), ("1h30m", 5400), ("2d", 2 * 86400),
                            ("45m", 2700), ("1:30:00", 5400), ("90", 5400), ("0.5d", 43200), ("90sec", 90)]:
            jid = self.d.submit("--hold", "--time", typed, "--", "true")
            self.assertEqual(self.d.job(jid)["time_limit"], secs, typed)
        script = os.path.join(self.d.work, "train.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n#GPUWARD --time 1.5h\ntrue\n")
        os.chmod(script, 0o755)
        jid = self.d.submit("--hold", script)
        self.assertEqual(self.d.job(jid)["time_limit"], 5400)
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"], time_limit="30min", hold=True))
        self.assertEqual(st, 201, r)
        self.assertEqual(self.d.job(r["id"])["time_limit"], 1800)

    def test_refused_forms_name_the_field_and_examples(self):
        before = self.d.api("GET", "/api/v1/jobs")[1]["jobs"]
        for typed in ["30 mins", "30mins", "1.5.h", "m", "-1h", "1h-", "1hr", "5M", "1.5h30m"]:
            p = self.d.cli("submit", "--time", typed, "--", "true", check=False)
            self.assertEqual(p.returncode, 2, (typed, p.stderr))
            self.assertIn("--time", p.stderr)
            self.assertIn(f"'{typed}'", p.stderr)
            if typed != "-1h":
                self.assertIn(FORMS, p.stderr, typed)
        for typed in ["0min", "0.0h", "00:00"]:
            p = self.d.cli("submit", "--time", typed, "--", "true", check=False)
            self.assertEqual(p.returncode, 2, (typed, p.stderr))
            self.assertIn(f"--time: '{typed}' is not a positive duration", p.stderr)
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"], time_limit="30 mins"))
        self.assertEqual(st, 400, r)
        self.assertEqual(r["field"], "time_limit")
        self.assertIn(FORMS, r["error"])
        self.assertEqual(self.d.api("GET", "/api/v1/jobs")[1]["jobs"], before)

    def test_config_takes_the_same_forms(self):
        with Daemon(gpus=1, config="default_time_limit = 1.5h\n") as d:
            d.start()
            jid = d.submit("--hold", "--", "true")
            self.assertEqual(d.job(jid)["time_limit"], 5400)
        why = start_failure("default_time_limit = 30 mins\n")
        self.assertIn("default_time_limit", why)
        self.assertIn(FORMS, why)


class CommandChecks(DaemonTest):
    """The command is looked for as the job will exec it: in its cwd, with its PATH, as its
    user; what is not there or not runnable is refused at once, naming the field."""
    gpus = 2

    def jobs(self):
        return self.d.api("GET", "/api/v1/jobs")[1]["jobs"]

    def refused(self, argv, says, *opts):
        p = self.d.cli("submit", *opts, "--", *argv, check=False)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn(says, p.stderr)
        return p.stderr

    def test_missing_command_refused_at_submit(self):
        me = pwd.getpwuid(os.getuid()).pw_name
        err = self.refused(["nosuchcommand-gwcmd"], "command: 'nosuchcommand-gwcmd' not found in PATH (", "--gpus", "2")
        self.assertIn(f") as user {me}", err)
        self.refused(["./missing.sh"], "command: './missing.sh' does not exist")
        data = os.path.join(self.d.work, "data.txt")
        with open(data, "w") as f:
            f.write("not a program\n")
        self.refused(["./data.txt"], "command: './data.txt' is not a file executable by")
        self.refused([self.d.work], f"command: '{self.d.work}' is not a file executable by")
        self.assertEqual(self.jobs(), [])

    def test_path_is_the_submitted_one(self):
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"], env=["PATH=/nonexistent-gwcmd"]))
        self.assertEqual(st, 400, r)
        self.assertEqual(r["field"], "command")
        self.assertIn("command: 'true' not found in PATH (/nonexistent-gwcmd) as user", r["error"])
        # --env PATH wins over the shell's, as in the job; a relative PATH entry is the cwd's.
        bindir = os.path.join(self.d.work, "bin")
        os.makedirs(bindir)
        tool = os.path.join(bindir, "mytool")
        with open(tool, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(tool, 0o755)
        self.refused(["mytool"], "command: 'mytool' not found in PATH")
        jid = self.d.submit("--hold", "--env", "PATH=bin:/usr/bin:/bin", "--", "mytool")
        self.assertEqual(self.d.job(jid)["state"], "HELD")
        self.assertEqual(len(self.jobs()), 1)

    def test_a_job_after_another_may_run_what_that_one_builds(self):
        first = self.d.submit("--hold", "--", "true")
        jid = self.d.submit("--after", f"{first}:any", "--", "./built-later-gwcmd")
        self.assertEqual(self.d.job(jid)["state"], "PENDING")

    def test_not_found_at_run_time_says_so_in_the_reason(self):
        jid = self.d.submit("--", "bash", "-c", "echo starting; pyhton3-gwcmd train.py")
        j = self.d.wait_state(jid, "FAILED")
        self.assertEqual(j["exit_code"], 127)
        self.assertEqual(j["reason"], "user_error: command not found: pyhton3-gwcmd")
        self.assertIn("command not found: pyhton3-gwcmd", self.d.cli("show", jid).stdout)

    def test_not_executable_at_run_time_says_so_in_the_reason(self):
        tool = os.path.join(self.d.work, "tool.sh")
        with open(tool, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(tool, 0o755)
        jid = self.d.submit("--hold", "--", "./tool.sh")
        os.chmod(tool, 0o644)  # changed between the submission and the start
        self.d.cli("release", jid)
        j = self.d.wait_state(jid, "FAILED")
        self.assertEqual(j["exit_code"], 126)
        self.assertEqual(j["reason"], "user_error: command not executable: ./tool.sh")

    @unittest.skipUnless(IS_ROOT, "needs root to make a user")
    def test_not_executable_by_that_user(self):
        name = f"gwcmd{secrets.token_hex(3)}"
        subprocess.run(["useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name],
                       check=True, capture_output=True, timeout=30)
        try:
            u = pwd.getpwnam(name)
            tool = os.path.join(self.d.work, "rootonly")
            with open(tool, "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
            os.chmod(tool, 0o700)
            p = self.d.cli("submit", "--", "./rootonly", check=False, user=u.pw_uid)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn(f"command: './rootonly' is not a file executable by {name}", p.stderr)
            env = {"PATH": f"{self.d.work}:/usr/bin:/bin"}
            st, body = self.d.raw_as(u.pw_uid, "POST", "/api/v1/jobs",
                                     json.dumps(self.d.job_spec(["rootonly"], env=[f"PATH={env['PATH']}"])).encode())
            self.assertEqual(st, 400, body)
            self.assertIn(f"command: 'rootonly' is in PATH ({env['PATH']}) but not executable by {name}",
                          json.loads(body)["error"])
            os.chmod(tool, 0o755)
            jid = int(self.d.cli("submit", "-q", "--hold", "--", "./rootonly", user=u.pw_uid).stdout)
            self.assertEqual(self.d.job(jid)["user"], name)
            self.d.api("DELETE", f"/api/v1/jobs/{jid}?wait=1", timeout=30)
        finally:
            subprocess.run(["userdel", "--force", name], capture_output=True, timeout=30)
            subprocess.run(["groupdel", name], capture_output=True, timeout=30)


class DefaultLimit(DaemonTest):
    gpus = 1
    config = "default_time_limit = 1.5h\n"

    def test_the_default_is_said_once(self):
        p = self.d.cli("submit", "--hold", "--", "true")
        jid = int(p.stdout.split()[2])
        self.assertEqual(p.stdout, f"Submitted job {jid}\n")
        self.assertEqual(p.stderr.count("time limit"), 1, p.stderr)
        self.assertIn("time limit 1h30m (the default; --time to set)", p.stderr)
        self.assertEqual(self.d.job(jid)["time_limit"], 5400)
        p = self.d.cli("submit", "--hold", "--time", "2h", "--", "true")
        self.assertEqual(p.stderr, "gpuward: time limit 2h\n")
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "cwd": self.d.work, "hold": True})
        self.assertEqual(st, 201, r)
        self.assertEqual((r["time_limit"], r["time_limit_default"]), (5400, True))
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"], time_limit="10m", hold=True))
        self.assertEqual((r["time_limit"], r["time_limit_default"]), (600, False))
        st, who = self.d.api("GET", "/api/v1/whoami")
        self.assertEqual(who["default_time_limit"], 5400)

    def test_help_states_the_default(self):
        out = self.d.cli("submit", "--help").stdout
        self.assertIn("default: the daemon's default_time_limit (1d unless the admin", out)
        self.assertIn("30min", out)
        self.assertIn("gpuwardd checks the command", out)


if __name__ == "__main__":
    main()

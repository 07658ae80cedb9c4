"""gpuwardd --check-config [FILE]: the config read as the daemon reads it, every bad line named
with its number, key and why (exit 1), or "FILE: ok" (exit 0); nothing started, no socket, no
state.  Its verdict is the daemon's: a file it passes starts a daemon, one it refuses does not."""
import os
import shutil
import subprocess
import tempfile
import unittest

from gwtest import GPUWARDD, Daemon, main, start_failure

GOOD = """# a lab's settings
grace_seconds = 20
default-time-limit = 12h
log_max = 128M
admins = alice, @gpuadmin
webhook_events = end,retry,warn
[policy.lab]
idle_timeout = 20m ; inline comment
allowed = *
[reclaim]
saving_patterns = Saving|Writing
"""

# Line numbers matter: the test checks each one is named.
BAD = """grace_seconds = 20
bogus_key = 1
sample-interval = 5x
this line is no setting
log_max = 1K
[policy.hpo]
colour = red
[broken
"""


class CheckConfigTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gw-checkconf-")
        # Where a daemon started here would put its state and socket: nothing may appear.
        self.env = {**os.environ, "HOME": os.path.join(self.dir, "home"),
                    "XDG_STATE_HOME": os.path.join(self.dir, "xdg-state"),
                    "XDG_RUNTIME_DIR": os.path.join(self.dir, "xdg-run")}

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, text, name="gpuward.conf"):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def check(self, *args):
        return subprocess.run([GPUWARDD, *args], capture_output=True, text=True, timeout=30, env=self.env,
                              cwd=self.dir)

    def assert_nothing_made(self, also=()):
        left = sorted(set(os.listdir(self.dir)) - {"gpuward.conf", "bad.conf"})
        self.assertEqual(left, [], "--check-config made files or directories")
        for p in also:
            self.assertFalse(os.path.exists(p), f"--check-config made {p}")

    def test_good_file_is_ok(self):
        state, sock = os.path.join(self.dir, "state"), os.path.join(self.dir, "gw.sock")
        path = self.write(GOOD)
        p = self.check("--check-config", path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, f"{path}: ok\n")
        self.assertEqual(p.stderr, "")
        p = self.check(f"--check-config={path}")
        self.assertEqual((p.returncode, p.stdout), (0, f"{path}: ok\n"), p.stderr)
        self.assert_nothing_made(also=(state, sock))

    def test_state_and_socket_keys_are_not_acted_on(self):
        state, sock = os.path.join(self.dir, "state"), os.path.join(self.dir, "run", "gw.sock")
        path = self.write(f"state_dir = {state}\nsocket = {sock}\nlisten = 127.0.0.1:0\nsimulate_gpus = 2\n")
        p = self.check("--check-config", path)
        self.assertEqual((p.returncode, p.stdout), (0, f"{path}: ok\n"), p.stderr)
        self.assert_nothing_made(also=(state, sock, os.path.dirname(sock)))

    def test_every_bad_line_is_named(self):
        path = self.write(BAD, "bad.conf")
        p = self.check("--check-config", path)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stdout, "", "no 'ok' for a bad file")
        lines = p.stderr.strip().splitlines()
        expect = [
            (2, "unknown key 'bogus_key'"),
            (3, "sample-interval: '5x' is not a duration"),
            (4, "not a 'key = value' line or a [section]"),
            (5, "log_max: invalid value '1K'"),
            (7, "unknown key 'colour' in [policy.hpo]"),
            (8, "a [section] without its ']'"),
        ]
        self.assertEqual(len(lines), len(expect), p.stderr)
        for line, (no, why) in zip(lines, expect):
            self.assertTrue(line.startswith(f"gpuwardd: error: {path} line {no}: "), line)
            self.assertIn(why, line)
        self.assert_nothing_made()

    def test_settings_wrong_together(self):
        path = self.write("default_time_limit = 9d\n")
        p = self.check("--check-config", path)
        self.assertEqual(p.returncode, 1)
        self.assertIn("default-time-limit 9d is longer than max-time-limit 7d", p.stderr)
        path = self.write("[policy.lab]\nenabled = true\nidle_timeout = 10m\nutil_threshold = 100\nwarn = 1m\n")
        self.assertEqual(self.check("--check-config", path).returncode, 0)

    def test_missing_file_and_usage(self):
        missing = os.path.join(self.dir, "nope.conf")
        p = self.check("--check-config", missing)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"cannot read config {missing}: No such file or directory", p.stderr)
        if not os.path.exists("/etc/gpuward/gpuward.conf"):  # the default path, when none is given
            p = self.check("--check-config")
            self.assertEqual(p.returncode, 1)
            self.assertIn("cannot read config /etc/gpuward/gpuward.conf", p.stderr)
        path = self.write(GOOD)
        for args in (["--check-config", path, "extra"], ["--debug", "--check-config", path],
                     ["--check-config", "--debug"]):
            p = self.check(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn("--check-config takes one FILE at most", p.stderr)
        self.assert_nothing_made()

    def test_every_key_from_one_table(self):
        """--list-keys prints the settings' table; each key takes its own default as a value,
        refuses a value out of its bounds naming them, and a flag and its key are one."""
        p = self.check("--list-keys")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [line.split("\t") for line in p.stdout.splitlines()]
        self.assertGreater(len(rows), 50)
        keys = {r[0]: r for r in rows}
        self.assertEqual(keys["sample_interval"][1:4], ["seconds", "2", "seconds from 1 to 3600, or a duration as long"])
        self.assertEqual(keys["cgroup"][1:4], ["word", "auto", "one of auto, v2, v1, none"])
        self.assertIn("strip_env", keys)  # a key of the file alone
        self.assertNotIn("config", keys)  # a flag alone
        text = "".join(f"{k} = {r[2]}\n" for k, r in keys.items() if r[2] and " " not in r[2])
        p = self.check("--check-config", self.write(text))
        self.assertEqual((p.returncode, p.stderr), (0, ""), "the defaults, written as a file")
        for line, why in (("sample_interval = 2h", "sample_interval: '2h' is not a duration from 1s to 1h"),
                          ("preempt_grace = 2d", "preempt_grace: '2d' is not a duration from 0s to 1d"),
                          ("leak_epochs = 1", "leak_epochs: invalid value '1' (a whole number from 2 to 64)"),
                          ("rogue_policy = shoot", "rogue_policy: invalid value 'shoot' (one of report, kill)")):
            p = self.check("--check-config", self.write(line + "\n"))
            self.assertEqual(p.returncode, 1, line)
            self.assertIn(why, p.stderr, line)
        p = self.check("--strip-env", "X")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown option '--strip-env'", p.stderr)
        self.assert_nothing_made()

    def test_verdict_is_the_daemons(self):
        """The good file starts a daemon; each bad line alone stops one, with the same words."""
        with Daemon(gpus=1, config=GOOD) as d:
            d.start()
            self.assertEqual(d.cli("whoami").returncode, 0)
        for line in ["bogus_key = 1", "sample-interval = 5x", "this line is no setting",
                     "[policy.hpo]\ncolour = red", "log_max = 1K", "default_time_limit = 9d"]:
            path = self.write(line + "\n")
            p = self.check("--check-config", path)
            self.assertEqual(p.returncode, 1, line)
            why = p.stderr.strip().split(": ", 2)[-1].split(": ", 1)[-1]
            self.assertIn(why, start_failure(line + "\n"), line)


if __name__ == "__main__":
    main()

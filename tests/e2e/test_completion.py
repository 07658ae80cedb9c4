"""Bash completion (contrib/bash-completion/gpuward) against a real daemon with a job and a
booking: verbs, sub-commands, each verb's options (read from its --help), the caller's own job
ids (not another user's), booking ids and GPU indices, by calling _gpuward as bash does on TAB."""
import os
import shlex
import subprocess
import unittest

from gwtest import GPUWARD, IS_ROOT, Daemon, Users, main

SOURCE = os.environ.get("GW_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
SCRIPT = os.path.join(os.path.abspath(SOURCE), "contrib", "bash-completion", "gpuward")


def complete(*words, socket=None):
    """COMPREPLY for the command line GPUWARD WORDS... (the last word is the one being completed)."""
    line = [GPUWARD, *words]
    prog = (f"source {shlex.quote(SCRIPT)}\n"
            f"COMP_WORDS=({' '.join(shlex.quote(w) for w in line)})\n"
            f"COMP_CWORD={len(line) - 1}\n"
            "_gpuward\n"
            "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    env = {k: v for k, v in os.environ.items() if k != "GPUWARD_SOCKET"}
    if socket:
        env["GPUWARD_SOCKET"] = socket
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", prog], capture_output=True, text=True, timeout=60,
                       env=env)
    if p.returncode != 0 or p.stderr:
        raise AssertionError(f"completing {words}: exit {p.returncode}, stderr {p.stderr!r}")
    return [w for w in p.stdout.splitlines() if w]


class CompletionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.users = Users() if IS_ROOT else None
        cls.d = Daemon(gpus=4).start()
        try:
            sock = cls.d.socket
            cls.mine = [cls.d.cli("submit", "-q", "--gpus", "1", "--", "sleep", "300").stdout.strip(),
                        cls.d.cli("submit", "-q", "--gpus", "4", "--", "sleep", "300").stdout.strip()]
            cls.theirs = None
            if cls.users:
                other = cls.users.add("c")
                cls.theirs = cls.d.cli("submit", "-q", "--gpus", "1", "--", "sleep", "300",
                                       user=other.pw_uid).stdout.strip()
            out = cls.d.cli_json("reserve", "--gpus", "1", "--start", "now+3h", "--duration", "1h")
            cls.booking = str(out["id"])
            cls.sock = sock
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()
        if cls.users:
            cls.users.remove_all()

    def c(self, *words):
        return complete(*words, socket=self.sock)

    def test_verbs_and_sub_commands(self):
        verbs = self.c("")
        for v in ("submit", "queue", "cancel", "reserve", "reservations", "admin", "token", "help"):
            self.assertIn(v, verbs)
        self.assertEqual(self.c("re"), sorted(self.c("re"), key=verbs.index))
        self.assertEqual(set(self.c("re")), {"release", "reserve", "reservations", "report", "restore"})
        self.assertEqual(set(self.c("token", "")), {"create", "list", "revoke"})
        self.assertEqual(set(self.c("admin", "")), {"drain", "undrain", "set-policy", "approve", "deny", "quota", "backup"})
        self.assertEqual(self.c("admin", "quota", ""), ["set"])
        self.assertEqual(set(self.c("-")), {"--socket", "--json", "--help", "--version"})

    def test_options_come_from_each_verbs_help(self):
        self.assertEqual(set(self.c("submit", "--gp")), {"--gpus", "--gpu-mem"})
        opts = set(self.c("token", "create", "--"))
        self.assertEqual(opts, {"--name", "--expires", "--scope", "--node", "--quiet", "--json", "--help",
                                "--socket"})
        self.assertEqual(self.c("token", "create", "--scope", ""), ["agent"])
        self.assertIn("--reason", self.c("admin", "deny", "--"))
        self.assertEqual(self.c("queue", "--state", "R"), ["RUNNING", "RECLAIMED"])
        self.assertEqual(set(self.c("submit", "--idle-policy", "")), {"default", "hpo", "finetune"})
        # A value that is free text gets no ids; the option's value is not taken for a verb.
        self.assertEqual(self.c("submit", "--name", ""), [])

    def test_my_job_ids(self):
        mine = set(self.mine)
        self.assertEqual(set(self.c("cancel", "")), mine)
        self.assertEqual(set(self.c("cancel", self.mine[0], "")), mine)
        self.assertEqual(set(self.c("logs", "-f", "")), mine)
        self.assertEqual(set(self.c("submit", "--after", "")), mine)
        self.assertEqual(set(self.c("submit", "--gpus", "1", "--after=")), mine)
        self.assertEqual(set(complete("--socket", self.sock, "hold", "")), mine, "the line's --socket")
        if self.theirs:
            self.assertNotIn(self.theirs, self.c("cancel", ""))

    def test_booking_ids_and_gpu_indices(self):
        self.assertEqual(self.c("unreserve", ""), [self.booking])
        self.assertEqual(self.c("submit", "--reservation", ""), [self.booking])
        self.assertEqual(self.c("admin", "approve", ""), [self.booking])
        self.assertEqual(self.c("admin", "drain", ""), ["0", "1", "2", "3"])
        self.assertEqual(self.c("gpus", "--events", "--gpu", ""), ["0", "1", "2", "3"])

    def test_the_jobs_command_after_dashdash(self):
        self.assertIn("sleep", self.c("submit", "--gpus", "2", "--", "slee"))

    def test_no_daemon_no_ids_no_noise(self):
        gone = os.path.join(self.d.dir, "no-such.sock")
        self.assertEqual(complete("cancel", "", socket=gone), [])
        self.assertIn("cancel", complete("", socket=gone), "verbs need no daemon")


if __name__ == "__main__":
    main()

"""Small CLI truths a new user tripped on: history in the order jobs ended, logs of an array
names its tasks, token list leaves departed users out, run says its GPUs and works from a
pipe."""
import json
import os
import shutil
import unittest

from gwtest import IS_ROOT, DaemonTest, Users, main, wait_until
from test_interactive import Session


def accounts_skip_reason():
    if not IS_ROOT:
        return "needs root to create and delete a throwaway Unix user"
    for tool in ("useradd", "userdel", "setpriv"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    return None


class CliTruthsTest(DaemonTest):
    gpus = 2

    def history_ids(self):
        rows = self.d.cli("history").stdout.strip().splitlines()[1:]
        return [int(r.split()[0]) for r in rows]

    def test_history_lists_by_end_oldest_first(self):
        # a waits for its file, so it ends last though submitted first: neither id order
        # (ascending or descending) is the order the three ended in.
        go = os.path.join(self.d.work, "go")
        a = self.d.submit_api(["sh", "-c", f"while [ ! -e {go} ]; do sleep 0.05; done"])
        b = self.d.submit_api(["true"])
        self.d.wait_state(b, "COMPLETED")
        c = self.d.submit_api(["true"])
        self.d.wait_state(c, "COMPLETED")
        open(go, "w").close()
        self.d.wait_state(a, "COMPLETED")
        self.assertEqual(self.history_ids(), [b, c, a])
        self.assertIn("oldest end first", self.d.cli("history", "--help").stdout)

    def test_logs_of_an_array_lists_its_tasks(self):
        aid = self.d.submit_api(["true"], array="0-2", hold=True)
        p = self.d.cli("logs", aid, check=False)
        self.assertEqual((p.returncode, p.stdout), (1, ""), p.stderr)
        self.assertIn(f"job {aid} is a job array of 3 tasks", p.stderr)
        for i in range(3):
            self.assertIn(f"gpuward logs {aid}_{i}\n", p.stderr)
        big = self.d.submit_api(["true"], array="0-49", hold=True)
        p = self.d.cli("logs", big, check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(f"gpuward logs {big}_9\n", p.stderr)
        self.assertNotIn(f"gpuward logs {big}_10\n", p.stderr)
        self.assertIn(f"... and 40 more: {big}_[10-49]", p.stderr)
        # A plain job's log is still the log alone.
        j = self.d.submit_api(["echo", "plain"])
        self.d.wait_state(j, "COMPLETED")
        self.assertEqual(self.d.cli("logs", j).stdout, "plain\n")

    def test_run_says_its_gpus(self):
        s = Session(self.d, "--gpus", "1", "--", "sh", "-c", "read x")
        try:
            s.read_until(lambda o: b" running on GPU " in o)
            jid = self.d.api("GET", "/api/v1/jobs")[1]["jobs"][0]["id"]
            gpu = self.d.job(jid)["gpus"][0]
            self.assertIn(f"gpuward: job {jid} running on GPU {gpu}\r\n".encode(), s.out)
            s.write(b"\n")
            self.assertEqual(s.wait(), 0, s.out)
        finally:
            s.close()

    def test_run_with_stdin_from_a_pipe(self):
        # No newline at the end: the job's terminal must still see the end of its input.
        p = self.d.cli("run", "--", "cat", input="hi from a pipe", timeout=20, check=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("hi from a pipe", p.stdout)
        self.assertRegex(p.stderr, r"gpuward: job \d+ running on GPU \d")


@unittest.skipIf(accounts_skip_reason(), accounts_skip_reason() or "")
class TokenListDepartedTest(DaemonTest):
    gpus = 1

    def setUp(self):
        self.accounts = Users("gwtok")
        super().setUp()

    def tearDown(self):
        try:
            super().tearDown()
        finally:
            self.accounts.remove_all()

    def listed(self):
        return {t["id"] for t in self.d.cli_json("token", "list")["tokens"]}

    def test_departed_users_tokens_are_not_listed(self):
        user = self.accounts.add("x")
        st, made = self.d.raw_as(user.pw_uid, "POST", "/api/v1/tokens", json.dumps({"name": "ci"}).encode(),
                                 gid=user.pw_gid)
        self.assertEqual(st, 201, made)
        theirs = json.loads(made)["id"]
        mine = self.d.cli_json("token", "create", "--name", "admin")["id"]
        self.assertEqual(self.listed(), {theirs, mine})
        self.accounts.delete(user)
        self.assertEqual(self.listed(), {mine}, "a departed user's token is left out at once")


if __name__ == "__main__":
    main()

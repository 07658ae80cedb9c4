"""What the CLI tells a user: logs -f while a job waits and when it ends, whoami, admin deny
--reason, the per-GPU metrics' labels, the wording of states and evidence."""
import os
import subprocess
import tempfile

from gwtest import GPUWARD, TRAINER, DaemonTest, events_of, main, wait_until


class LogsFollowTest(DaemonTest):
    gpus = 1

    def follow(self, jid):
        """gpuward logs -f JID in the background; (process, stdout path, stderr path)."""
        out = tempfile.NamedTemporaryFile(prefix="gwcli-out-", dir=self.d.dir, delete=False)
        err = tempfile.NamedTemporaryFile(prefix="gwcli-err-", dir=self.d.dir, delete=False)
        p = subprocess.Popen([GPUWARD, "--socket", self.d.socket, "logs", "-f", str(jid)], stdout=out, stderr=err)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait(timeout=10)))
        out.close()
        err.close()
        return p, out.name, err.name

    @staticmethod
    def read(path):
        with open(path) as f:
            return f.read()

    def test_waiting_job_is_told_then_its_end(self):
        blocker = self.d.submit("--", "sleep", "60")
        self.d.wait_state(blocker, "RUNNING")
        jid = self.d.submit("--", "sh", "-c", "echo hello-from-the-job")
        self.d.wait_state(jid, "PENDING")
        p, out, err = self.follow(jid)
        line = f"gpuward: job {jid} is waiting (Resources: 1 GPU asked, 0 free); its output will follow when it starts"
        wait_until(lambda: line in self.read(err), timeout=20, what="the waiting line")
        self.d.cli("cancel", blocker)
        self.assertEqual(p.wait(timeout=30), 0)
        self.assertEqual(self.read(out), "hello-from-the-job\n")
        text = self.read(err)
        self.assertEqual(text.count("is waiting"), 1, text)
        self.assertTrue(text.endswith(f"Job {jid} COMPLETED (exit 0)\n"), text)

    def test_failed_job_ends_follow_with_its_end_and_status_1(self):
        jid = self.d.submit("--", "sh", "-c", "echo partial; exit 3")
        p, out, err = self.follow(jid)
        self.assertEqual(p.wait(timeout=30), 1)
        self.assertEqual(self.read(out), "partial\n")
        self.assertIn(f"Job {jid} FAILED", self.read(err))

    def test_cancelled_waiting_job(self):
        blocker = self.d.submit("--", "sleep", "60")
        self.d.wait_state(blocker, "RUNNING")
        jid = self.d.submit("--", "true")
        p, out, err = self.follow(jid)
        wait_until(lambda: "is waiting" in self.read(err), timeout=20, what="the waiting line")
        self.d.cli("cancel", jid)
        self.assertEqual(p.wait(timeout=30), 1)
        self.assertIn(f"Job {jid} CANCELLED", self.read(err))
        self.assertEqual(self.read(out), "")
        self.d.cli("cancel", blocker)


class ReclaimedStateTest(DaemonTest):
    gpus = 1
    config = "[policy.default]\nidle_timeout = 2\nwarn = 1\ngrace = 1\n"

    def test_reclaimed_state_is_one_short_line(self):
        jid = self.d.submit("--", TRAINER, "--sleep-forever")
        j = self.d.wait_state(jid, "RECLAIMED", timeout=30)
        show = self.d.cli("show", jid).stdout
        state = next(line for line in show.splitlines() if line.startswith("State:"))
        self.assertRegex(state, r"^State:\s+RECLAIMED \(idle for \w+; evidence in the reclaim event\)$")
        self.assertLess(len(state), 80, state)
        # The evidence is all there, in the event show prints.
        ev = events_of(j, "reclaim")
        self.assertEqual(len(ev), 1, j["events"])
        for needle in ("idle for", "util 0% (threshold 5%)", "log unchanged since", "SIGTERM"):
            self.assertIn(needle, ev[0]["message"])
        self.assertIn("util 0% (threshold 5%)", show)


class StartupLineTest(DaemonTest):
    extra = ("--cgroup", "none")

    def test_cgroups_off_by_config_reads_as_two_words(self):
        log = self.d.daemon_log()
        self.assertIn("cgroups: none (off by config)", log)
        self.assertNotIn("nonecgroups", log)


if __name__ == "__main__":
    main()

"""What the CLI tells a user: logs -f while a job waits and when it ends, whoami, admin deny
--reason, the per-GPU metrics' labels, the wording of states and evidence."""
import json
import os
import pwd
import re
import secrets
import shutil
import subprocess
import tempfile
import unittest

from gwtest import GPUWARD, IS_ROOT, TRAINER, DaemonTest, events_of, main, wait_until


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


OOM_LINE = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.07 GiB memory in "
            "use. Of the allocated memory 73.66 GiB is allocated by PyTorch, and 1.45 GiB is reserved by PyTorch but "
            "unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")


class EvidenceCutTest(DaemonTest):
    def test_long_oom_line_is_cut_at_a_sentence_and_says_so(self):
        jid = self.d.submit("--", "sh", "-c", f"echo '{OOM_LINE}' >&2; exit 1")
        j = self.d.wait_state(jid, "FAILED")
        ev = j["attempts"][-1]["evidence"]
        self.assertEqual(j["attempts"][-1]["class"], "oom", j)
        self.assertTrue(ev.endswith("memory in use. \u2026"), ev)
        self.assertTrue(OOM_LINE.startswith(ev[:-2]), ev)
        self.assertIn("\u2026", self.d.cli("show", jid).stdout)


class WhoamiTest(DaemonTest):
    def test_whoami_as_root(self):
        p = self.d.cli("whoami")
        if IS_ROOT:
            self.assertEqual(p.stdout, "root (uid 0), admin, by unix-socket\n")
        me = self.d.cli_json("whoami")
        self.assertEqual(me["uid"], os.geteuid())
        self.assertEqual(me["auth"], "unix-socket")
        self.assertEqual(self.d.cli("whoami", "extra", check=False).returncode, 2)

    def test_whoami_says_how_over_tcp(self):
        st, r = self.d.api("POST", "/api/v1/tokens", {"name": "gwcli"})
        self.assertEqual(st, 201, r)
        st, me = self.d.tcp_json("GET", "/api/v1/whoami", token=r["token"])
        self.assertEqual((st, me["uid"], me["auth"]), (200, os.geteuid(), "token"))
        st, me = self.d.tcp_json("GET", "/api/v1/whoami")
        self.assertEqual((st, me["user"], me["uid"], me["role"], me["auth"]), (200, "", None, "guest", "none"))

    @unittest.skipUnless(IS_ROOT, "needs root to make a user")
    def test_whoami_as_a_real_user(self):
        name = f"gwcli{secrets.token_hex(3)}"
        subprocess.run(["useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name],
                       check=True, capture_output=True, timeout=30)
        try:
            u = pwd.getpwnam(name)
            p = self.d.cli("whoami", user=u.pw_uid)
            self.assertEqual(p.stdout, f"{name} (uid {u.pw_uid}), user, by unix-socket\n")
        finally:
            subprocess.run(["userdel", "--force", name], capture_output=True, timeout=30)
            subprocess.run(["groupdel", name], capture_output=True, timeout=30)


class DenyReasonTest(DaemonTest):
    def booking(self):
        p = self.d.cli("reserve", "--json", "--gpus", 1, "--start", "now+2h", "--duration", "1h")
        return json.loads(p.stdout)["id"]

    def test_deny_with_a_reason(self):
        bid = self.booking()
        p = self.d.cli("admin", "deny", "--json", bid, "--reason", "the demo needs every GPU then")
        b = json.loads(p.stdout)
        self.assertEqual(b["state"], "DENIED")
        self.assertRegex(b["note"], r"^denied by \S+: the demo needs every GPU then$")
        self.assertIn(f"booking {bid} (", self.d.daemon_log())
        self.assertIn("the demo needs every GPU then", self.d.daemon_log())

    def test_long_reason_is_cut_on_a_character(self):
        bid = self.booking()
        st, b = self.d.api("POST", f"/api/v1/bookings/{bid}/deny", {"reason": "\u00e9\u20ac" * 100})
        self.assertEqual(st, 200, b)
        self.assertTrue(b["note"].startswith("denied by "), b["note"])
        self.assertTrue(b["note"].endswith("\u00e9") or b["note"].endswith("\u20ac"), b["note"])
        self.assertLess(len(b["note"].encode()), 256)

    def test_deny_without_a_reason_as_before(self):
        bid = self.booking()
        b = json.loads(self.d.cli("admin", "deny", "--json", bid).stdout)
        self.assertRegex(b["note"], r"^denied by \S+$")

    def test_bad_reason_changes_nothing(self):
        bid = self.booking()
        for bad, says in (("", "--reason"), ("two\nlines", "--reason"), ("x" * 201, "at most 200")):
            p = self.d.cli("admin", "deny", bid, "--reason", bad, check=False)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(says, p.stderr)
        st, r = self.d.api("POST", f"/api/v1/bookings/{bid}/deny", {"reason": "x" * 201})
        self.assertEqual((st, r["field"]), (400, "reason"), r)
        st, r = self.d.api("POST", f"/api/v1/bookings/{bid}/deny", {"reason": 7})
        self.assertEqual((st, r["field"]), (400, "reason"), r)
        st, r = self.d.api("POST", f"/api/v1/bookings/{bid}/deny", {"why": "x"})
        self.assertEqual(st, 400, r)
        states = {b["id"]: b["state"] for b in self.d.api("GET", "/api/v1/bookings")[1]["bookings"]}
        self.assertNotEqual(states.get(bid), "DENIED")
        self.assertIn(bid, states)
        # --reason is a deny's: approve and unreserve refuse it.
        p = self.d.cli("unreserve", bid, "--reason", "x", check=False)
        self.assertEqual(p.returncode, 2, p.stderr)


class GpuMetricsTest(DaemonTest):
    gpus = 2

    def test_allocated_is_label_stable_and_job_info_only_while_held(self):
        text = self.d.metrics()
        self.assertRegex(text, r'(?m)^gpuward_gpu_allocated\{gpu="0",uuid="[^"]*"\} 0$')
        self.assertNotIn("gpuward_gpu_job_info", text)
        jid = self.d.submit("--", "sleep", "60")
        g = self.d.wait_state(jid, "RUNNING")["gpus"][0]
        text = wait_until(lambda: (lambda t: t if f'gpuward_gpu_allocated{{gpu="{g}"' in t and
                                   re.search(rf'(?m)^gpuward_gpu_allocated\{{gpu="{g}",uuid="[^"]*"\}} 1$', t)
                                   else None)(self.d.metrics()), what="GPU allocated in /metrics")
        self.assertRegex(text, rf'(?m)^gpuward_gpu_job_info\{{gpu="{g}",uuid="[^"]*",job="{jid}",'
                               rf'display_id="{jid}",user="[^"]+"\}} 1$')
        self.assertEqual(len(re.findall(r"(?m)^gpuward_gpu_job_info\{", text)), 1)
        for line in re.findall(r"(?m)^gpuward_gpu_allocated\{.*$", text):
            self.assertNotIn("job=", line)
        promtool = shutil.which("promtool")
        if promtool:  # the info family too, which only a held GPU shows
            p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True,
                               timeout=30)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.d.cli("cancel", jid)
        text = wait_until(lambda: (lambda t: t if "gpuward_gpu_job_info" not in t else None)(self.d.metrics()),
                          what="job info gone with the job")
        self.assertRegex(text, rf'(?m)^gpuward_gpu_allocated\{{gpu="{g}",uuid="[^"]*"\}} 0$')


if __name__ == "__main__":
    main()

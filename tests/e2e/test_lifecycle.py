"""Cancel, time limits, logs, scripts with #GPUWARD directives."""
import os
import re
import subprocess

from gwtest import GPUWARD, TRAINER, DaemonTest, events_of, kinds, main, pid_alive, wait_until


class LifecycleTest(DaemonTest):
    grace = 1

    def child_pids(self, jid, n):
        pat = re.compile(r"child pid=(\d+)")
        return [int(p) for p in wait_until(lambda: (lambda m: m if len(m) >= n else None)(pat.findall(self.d.log_text(jid))),
                                           what=f"job {jid} to fork {n} children")]

    def test_cancel_kills_children_in_their_own_sessions(self):
        jid = self.d.submit("--gpus", 2, "--", TRAINER, "--fork-children", 3, "--sleep-forever", "--ignore-sigterm")
        self.d.wait_state(jid, "RUNNING")
        kids = self.child_pids(jid, 3)
        main_pid = self.d.wait_pid(jid)
        for k in kids:
            # The trainer names a child right after fork, before the child's setsid().
            wait_until(lambda: os.getsid(k) != os.getsid(main_pid), what="children in sessions of their own")
        p = self.d.cli("cancel", jid)
        self.assertIn(f"Cancelled job {jid}", p.stdout)
        # cancel returns only when every process is gone.
        for pid in kids + [main_pid]:
            self.assertFalse(pid_alive(pid), f"pid {pid} survived cancel")
        j = self.d.job(jid)
        self.assertEqual(j["state"], "CANCELLED")
        self.assertIn("cancelled by", j["reason"])
        self.assertEqual(kinds(j)[:3], ["submit", "start", "terminate"])
        self.assertIn("kill", kinds(j), "SIGKILL after the grace period for processes ignoring SIGTERM")
        gpus = self.d.cli_json("gpus")["gpus"]
        self.assertTrue(all(g["job"] is None for g in gpus))

    def test_time_limit_sigterm_then_sigkill(self):
        jid = self.d.submit("--time", "2s", "--", "sh", "-c",
                            "trap 'echo got TERM' TERM; while true; do sleep 0.1; done")
        j = self.d.wait_state(jid, "TIMEOUT", timeout=20)
        self.assertEqual(j["signal"], 9)
        self.assertIn("time limit 2s reached", j["reason"])
        self.assertIn("got TERM", self.d.log_text(jid))
        self.assertIn("terminate", kinds(j))
        self.assertIn("kill", kinds(j))
        elapsed = j["end_time"] - j["start_time"]
        self.assertGreaterEqual(elapsed, 2.0 + self.grace - 0.2)

    def test_time_limit_job_that_obeys_sigterm(self):
        jid = self.d.submit("--time", "1s", "--", "sleep", "30")
        j = self.d.wait_state(jid, "TIMEOUT", timeout=20)
        self.assertEqual(j["signal"], 15)
        self.assertNotIn("kill", kinds(j))

    def test_logs_follow_until_the_end(self):
        jid = self.d.submit("--name", "yolo", "--", TRAINER, "epochs=3", "--epoch-seconds", "0.2")
        p = self.d.cli("logs", "-f", jid, timeout=60)
        self.assertIn("Results saved to", p.stdout)
        self.assertGreaterEqual(p.stdout.count("Class     Images  Instances"), 3)
        self.assertEqual(self.d.job(jid)["state"], "COMPLETED")
        run = os.path.join(self.d.work, "runs", "detect", "train")
        with open(os.path.join(run, "results.csv")) as f:
            rows = f.read().splitlines()
        self.assertTrue(rows[0].replace(" ", "").startswith("epoch,train/box_loss"))
        self.assertEqual([int(float(r.split(",")[0])) for r in rows[1:]], [1, 2, 3])
        self.assertTrue(os.path.exists(os.path.join(run, "weights", "last.pt")))

    def test_script_with_directives(self):
        script = os.path.join(self.d.work, "train.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n#GPUWARD --gpus 3 --time 4h\n#GPUWARD --name from-script\n"
                    "echo \"gpus=$CUDA_VISIBLE_DEVICES args=$*\"\n")
        os.chmod(script, 0o755)
        jid = self.d.submit(script, "x", "y")
        j = self.d.wait_state(jid, "COMPLETED")
        self.assertEqual(j["name"], "from-script")
        self.assertEqual(j["ngpus"], 3)
        self.assertEqual(j["time_limit"], 4 * 3600)
        self.assertIn("args=x y", self.d.log_text(jid))
        # Flags on the command line win over directives.
        jid = self.d.submit("--gpus", 1, "--name", "flag-wins", script)
        j = self.d.wait_state(jid, "COMPLETED")
        self.assertEqual((j["ngpus"], j["name"], j["time_limit"]), (1, "flag-wins", 4 * 3600))

    def test_environment_of_the_submitting_shell(self):
        env = dict(os.environ, MY_SETTING="from-shell", LD_PRELOAD="")
        out = os.path.join(self.d.work, "env.out")
        p = subprocess.run([GPUWARD, "--socket", self.d.socket, "submit", "--json", "--env", "EXTRA=1",
                            "--env", "CUDA_VISIBLE_DEVICES=7", "--output", out, "--", "env"],
                           capture_output=True, text=True, env=env, cwd=self.d.work, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        jid = int(re.search(r"\d+", p.stdout).group(0))
        j = self.d.wait_state(jid, "COMPLETED")
        self.assertEqual(j["log_path"], out)
        with open(out) as f:
            lines = dict(line.split("=", 1) for line in f.read().splitlines() if "=" in line)
        self.assertEqual(lines["MY_SETTING"], "from-shell")
        self.assertEqual(lines["EXTRA"], "1")
        self.assertEqual(lines["CUDA_VISIBLE_DEVICES"], ",".join(map(str, j["gpus"])), "gpuward's variables win")
        self.assertEqual(lines["CUDA_DEVICE_ORDER"], "PCI_BUS_ID")
        self.assertEqual(lines["GPUWARD_JOB_ID"], str(jid))
        self.assertEqual(lines["GPUWARD_ATTEMPT"], "1")
        self.assertNotIn("LD_PRELOAD", lines, "stripped by the config")

    def test_large_environment_reaches_the_job_but_not_the_root_supervisor(self):
        """A start too large for one datagram spawns its supervisor, as root, with the job's
        environment: the C library's settings in it are held until the job's exec."""
        env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.perturb=85", MALLOC_ARENA_MAX="2",
                   **{f"BIG{i}": "x" * 60000 for i in range(3)})
        script = ("tr '\\0' '\\n' < /proc/$PPID/environ | grep -c -e '^GLIBC_TUNABLES=' -e '^MALLOC_ARENA_MAX='; "
                  "echo \"job: $GLIBC_TUNABLES $MALLOC_ARENA_MAX ${#BIG2}\"")
        p = subprocess.run([GPUWARD, "--socket", self.d.socket, "submit", "-q", "--", "sh", "-c", script],
                           capture_output=True, text=True, env=env, cwd=self.d.work, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        jid = int(p.stdout)
        self.d.wait_state(jid, {"COMPLETED", "FAILED"})
        lines = self.d.log_text(jid).splitlines()
        self.assertIn("job: glibc.malloc.perturb=85 2 60000", lines, "the job has its whole environment")
        if os.geteuid() == 0:  # the supervisor's environment is root's to read
            self.assertEqual(lines[0], "0", "the root supervisor started without them")

    def test_output_that_cannot_be_opened_at_start_says_why(self):
        """The output's directory was there at submit and is gone at the start: the job fails,
        and its events say why (its stderr, where the supervisor writes first, is /dev/null)."""
        where = os.path.join(self.d.work, "gone")
        os.mkdir(where)
        jid = int(self.d.cli("submit", "-q", "--hold", "--output", os.path.join(where, "out.log"), "--", "true").stdout)
        os.rmdir(where)
        self.d.cli("release", jid)
        j = self.d.wait_state(jid, "FAILED")
        self.assertEqual(j["exit_code"], 126)
        setup = [e["message"] for e in j["events"] if e["kind"] == "setup"]
        self.assertEqual(len(setup), 1, j["events"])
        self.assertIn(f"cannot open output file '{where}/out.log': No such file or directory", setup[0])
        self.assertIn(f"job {jid}: could not be set up: cannot open output file", self.d.daemon_log())

    def test_cwd_with_dot_segments_is_the_directory_it_names(self):
        os.makedirs(os.path.join(self.d.work, "a", "b"))
        os.makedirs(os.path.join(self.d.work, "c"))
        jid = int(self.d.cli("submit", "-q", "--hold", "--cwd", "a/b/../../c/.", "--", "pwd").stdout)
        self.assertEqual(self.d.job(jid)["cwd"], os.path.realpath(os.path.join(self.d.work, "c")))

    def test_failed_job_and_missing_program(self):
        a = self.d.submit("--", "sh", "-c", "echo boom >&2; exit 7")
        # A missing program is refused at submit: this one goes between the submission and the start.
        prog = os.path.join(self.d.work, "no-such-program-gw")
        with open(prog, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(prog, 0o755)
        b = self.d.submit("--hold", "--", "./no-such-program-gw")
        os.unlink(prog)
        self.d.cli("release", b)
        ja, jb = self.d.wait_state(a, "FAILED"), self.d.wait_state(b, "FAILED")
        self.assertEqual((ja["exit_code"], ja["reason"]), (7, "user_error: exit 7"))
        self.assertEqual([a["class"] for a in ja["attempts"]], ["user_error"], "a bug in the job is not retried")
        self.assertIn("boom", self.d.log_text(a))
        self.assertEqual(jb["exit_code"], 127)
        self.assertEqual(jb["reason"], "user_error: command not found: ./no-such-program-gw")
        self.assertIn("cannot execute './no-such-program-gw'", self.d.log_text(b))
        hist = self.d.cli("history").stdout
        self.assertRegex(hist, rf"(?m)^{a}\s+sh\s+\S+\s+FAILED\s+7")


    def test_an_emptied_cgroup_serves_the_next_job(self):
        """Making and removing a cgroup at each job was a sixth of the daemon's CPU per job: an
        emptied one (v2) is the next start's, and goes when the daemon stops."""
        if "cgroups: v2 under" not in self.d.daemon_log():
            self.skipTest("no cgroup v2 on this host")
        a = self.d.submit("--", "cat", "/proc/self/cgroup")
        self.d.wait_state(a, "COMPLETED")
        b = self.d.submit("--", "cat", "/proc/self/cgroup")
        self.d.wait_state(b, "COMPLETED")
        cg = self.d.job_cgroup(b)
        self.assertEqual(self.d.job_cgroup(a), cg, "the second job got the first one's cgroup")
        self.assertRegex(self.d.log_text(b), rf"(?m)^0::/\S*/{re.escape(os.path.basename(cg))}$", "and ran in it")
        self.assertTrue(os.path.isdir(cg), "kept, empty, for the next start")
        self.d.stop()
        self.assertFalse(os.path.exists(cg), "removed when the daemon stops")

    def test_short_slices_for_gpuward_not_for_its_jobs(self):
        """The daemon's loop and the supervisors ask the scheduler for a short slice (Linux 6.12 and
        later: EEVDF's sched_runtime), so that their steps of a start or an end do not wait
        behind jobs that keep every CPU busy; a job, and the daemon's other threads, never
        inherit it."""
        def slice_of(path):
            try:
                with open(path) as f:
                    return next((int(l.split(":")[1]) for l in f if l.startswith("se.slice")), None)
            except OSError:
                return None
        release = tuple(int(x) for x in re.findall(r"\d+", os.uname().release)[:2])
        default = slice_of(f"/proc/{os.getpid()}/sched")
        if release < (6, 12) or default is None:
            self.skipTest(f"no per-task slice to ask for on Linux {os.uname().release}")
        jid = self.d.submit("--", "sleep", "30")
        pid = self.d.wait_pid(jid)
        with open(f"/proc/{pid}/stat") as f:
            supervisor = int(f.read().rsplit(")", 1)[1].split()[1])
        self.assertEqual(slice_of(f"/proc/{self.d.proc.pid}/sched"), 100_000, "the daemon's loop")
        self.assertEqual(slice_of(f"/proc/{supervisor}/sched"), 100_000, "the job's supervisor")
        self.assertEqual(slice_of(f"/proc/{pid}/sched"), default, "the job itself")
        threads = [t for t in os.listdir(f"/proc/{self.d.proc.pid}/task") if int(t) != self.d.proc.pid]
        self.assertTrue(threads)
        for t in threads:
            self.assertEqual(slice_of(f"/proc/{self.d.proc.pid}/task/{t}/sched"), default, f"daemon thread {t}")
        self.d.cli("cancel", jid)

    def test_a_killed_jobs_cgroup_is_not_the_next_jobs(self):
        """Once killed through cgroup.kill, a cgroup kills every child later born into it with
        clone3 (Linux 6.18 here): the job after one killed so gets another cgroup, and runs."""
        if "cgroups: v2 under" not in self.d.daemon_log():
            self.skipTest("no cgroup v2 on this host")
        a = self.d.submit("--", "sh", "-c", "trap '' TERM; sleep 600")
        self.d.wait_pid(a)
        self.d.cli("cancel", a)
        j = self.d.wait_state(a, "CANCELLED")
        self.assertIn("kill", kinds(j), "SIGKILL after the grace period, through its cgroup")
        b = self.d.submit("--", "true")
        j = self.d.wait_state(b, ("COMPLETED", "FAILED"))
        self.assertEqual((j["state"], j["reason"]), ("COMPLETED", "exit 0"), j)
        self.assertNotEqual(self.d.job_cgroup(a), self.d.job_cgroup(b))


class TimeLimitWarningTest(DaemonTest):
    """Ahead of its time limit a job is told (time_limit_warn) and sent the signal it asked for
    (submit --signal), so that it can save its work before SIGTERM."""
    extra = ("--time-limit-warn", "2s")

    def test_warning_and_signal_before_the_time_limit(self):
        plain = self.d.submit("--time", "4s", "--", "sleep", "30")
        mark = os.path.join(self.d.work, "usr1")
        asked = self.d.submit("--time", "5s", "--signal", "USR1@3s", "--", "sh", "-c",
                              f"trap 'date +%s.%N > {mark}' USR1; while true; do sleep 0.1; done")
        j = self.d.wait_state(plain, "TIMEOUT", timeout=30)
        warn = events_of(j, "warn")
        self.assertEqual(len(warn), 1, j["events"])
        self.assertRegex(warn[0]["message"], r"^the job ends at \S+, its time limit 4s: SIGTERM then, SIGKILL 1s later$")
        self.assertGreater(j["end_time"] - warn[0]["time"], 1.5)
        self.assertIn("gpuward: the job ends at", self.d.log_text(plain))
        j = self.d.wait_state(asked, "TIMEOUT", timeout=30)
        self.assertEqual((j["warn_signal"], j["warn_before"]), ("USR1", 3))
        self.assertIn("SIGUSR1 sent to its main process", events_of(j, "warn")[0]["message"])
        with open(mark) as f:
            self.assertGreater(j["end_time"] - float(f.read()), 2.0, "USR1 came about 3 s before the end")
        self.assertIn("Signal:      SIGUSR1 to its main process 3s before its end", self.d.cli("show", asked).stdout)

    def test_a_signal_asked_for_is_sent_even_when_the_limit_is_short(self):
        """--signal without a time, the limit no longer than the warning: halfway, never at the
        start (the job installs its handler after it) and never not at all."""
        mark = os.path.join(self.d.work, "usr1")
        jid = self.d.submit("--time", "2s", "--signal", "USR1", "--", "sh", "-c",
                            f"trap 'date +%s.%N > {mark}' USR1; while true; do sleep 0.1; done")
        j = self.d.wait_state(jid, "TIMEOUT", timeout=30)
        with open(mark) as f:
            sent = float(f.read())
        self.assertGreater(sent - j["start_time"], 0.5, "not at the start")
        self.assertGreater(j["end_time"] - sent, 0.5, "before the end")
        self.assertIn("SIGUSR1 sent to its main process", events_of(j, "warn")[0]["message"])

    def test_warned_once_across_a_restart(self):
        jid = self.d.submit("--time", "8s", "--", "sleep", "30")
        self.d.wait_job(jid, lambda j: events_of(j, "warn"), timeout=30, what="the warning")
        self.d.kill9()
        self.d.start()
        j = self.d.wait_state(jid, "TIMEOUT", timeout=30)
        self.assertEqual(len(events_of(j, "warn")), 1, j["events"])

    def test_bad_signals_are_refused(self):
        for args, code, said in ((("--signal", "KILL"), 2, "--signal: 'KILL' is not SIG or SIG@TIME"),
                                 (("--signal", "USR1@soon"), 2, "has a TIME after '@' that is not a duration"),
                                 (("--time", "5m", "--signal", "USR1@10m"), 1,
                                  "--signal: 10m ahead of the end of a 5m time limit is at or before its start")):
            p = self.d.cli("submit", *args, "--", "true", check=False)
            self.assertEqual(p.returncode, code, (args, p.stderr))
            self.assertIn(said, p.stderr, args)
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"], warn_before=60))
        self.assertEqual((st, r["field"]), (400, "warn_before"), r)
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"], warn_signal="STOP"))
        self.assertEqual((st, r["field"]), (400, "warn_signal"), r)
        self.assertEqual(self.d.api("GET", "/api/v1/jobs")[1]["jobs"], [], "nothing was queued")



class StopRightAfterStartTest(DaemonTest):
    """A cancel that comes as the job starts, before its supervisor has told the job's pid,
    stops it at once: the SIGTERM used to reach no process and the job ran on until the
    SIGKILL at the grace's end (four times in ten here)."""
    gpus = 1
    grace = 20

    def test_a_cancel_at_the_start_is_not_lost(self):
        import time
        for _ in range(8):
            jid = self.d.submit_api(["sleep", "60"])
            wait_until(lambda: self.d.job(jid)["state"] != "PENDING", timeout=10, interval=0.001,
                       what="the start")
            t0 = time.monotonic()
            self.d.api("DELETE", f"/api/v1/jobs/{jid}")
            self.d.wait_job(jid, lambda j: j["state"] == "CANCELLED", timeout=30, what="the cancel's end")
            self.assertLess(time.monotonic() - t0, self.grace / 2, "ended by its SIGTERM, not the grace's SIGKILL")

if __name__ == "__main__":
    main()

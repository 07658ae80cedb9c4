"""Daemon restarts: jobs are re-adopted, history stays, nothing acknowledged is lost."""
import os
import random
import signal
import subprocess
import threading
import time

from gwtest import (FAKE_NVML, GPUWARD, GPUWARDD, SLOW, TRAINER, DaemonTest, events_of, kinds, main, needs_readoption,
                    pid_alive, wait_until)


def _rmdir(path):
    try:
        os.rmdir(path)
        return True
    except OSError:
        return False


class RestartTest(DaemonTest):
    @needs_readoption
    def test_running_job_is_readopted(self):
        gate = os.path.join(self.d.work, "gate")
        jid = self.d.submit("--gpus", 2, "--", "sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done; exit 4")
        self.d.wait_state(jid, "RUNNING")
        self.d.wait_pid(jid)
        j = self.d.job(jid)
        waiting = self.d.submit("--gpus", 3, "--", "true")
        self.d.stop()  # SIGTERM: jobs keep running
        self.assertTrue(pid_alive(j["pid"]), "SIGTERM to the daemon leaves jobs running")
        self.d.start()
        j2 = self.d.job(jid)
        self.assertEqual((j2["state"], j2["pid"], j2["gpus"]), ("RUNNING", j["pid"], j["gpus"]))
        self.assertIn("adopt", kinds(j2))
        self.assertEqual(self.d.job(waiting)["state"], "PENDING", "its GPUs are still taken")
        open(gate, "w").close()
        j3 = self.d.wait_state(jid, "FAILED")
        self.assertEqual(j3["exit_code"], 4, "the exit status survives the restart")
        self.d.wait_state(waiting, "COMPLETED")

    @needs_readoption
    def test_empty_job_cgroups_left_behind_are_removed_at_start(self):
        base = self.d.cgroup_base()
        if not base:
            self.skipTest("no cgroups on this host")
        kept = self.d.submit("--", "sleep", "60")
        self.d.wait_state(kept, "RUNNING")
        self.d.stop()  # SIGTERM: the job keeps running, in its cgroup
        # An emptied cgroup kept for reuse by a daemon killed since is named slot-N.
        stale, busy = os.path.join(base, "job-999.1"), os.path.join(base, "job-998.1")
        stale_slot = os.path.join(base, "slot-999")
        os.mkdir(stale)
        os.mkdir(stale_slot)
        os.mkdir(busy)
        p = subprocess.Popen(["sleep", "60"])
        try:
            with open(os.path.join(busy, "cgroup.procs"), "w") as f:
                f.write(str(p.pid))
            self.d.start()
            self.assertFalse(os.path.exists(stale), "an empty cgroup no job uses is removed")
            self.assertFalse(os.path.exists(stale_slot), "an idle pooled one too")
            self.assertTrue(os.path.isdir(busy), "one with processes in it is left alone")
            self.assertEqual(self.d.job(kept)["state"], "RUNNING")
            self.assertTrue(os.path.isdir(self.d.job_cgroup(kept)), "a re-adopted job keeps its cgroup")
            self.assertIn(f"removed 2 empty job cgroups left under {base}", self.d.daemon_log())
        finally:
            p.kill()
            p.wait()
            wait_until(lambda: not os.path.exists(busy) or _rmdir(busy), timeout=10, what="the busy cgroup to empty")

    def test_a_job_cgroup_still_busy_at_the_end_is_removed_once_it_empties(self):
        """rmdir refuses a cgroup while anything is left in it (processes still dying, or a
        cgroup made inside it): the daemon tries again each second instead of forgetting it."""
        base = self.d.cgroup_base()
        if not base:
            self.skipTest("no cgroups on this host")
        gate = os.path.join(self.d.work, "gate")
        jid = self.d.submit("--", "sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done")
        self.d.wait_state(jid, "RUNNING")
        cg = self.d.job_cgroup(jid)
        inner = os.path.join(cg, "inner")
        try:
            os.mkdir(inner)
        except OSError as e:
            self.skipTest(f"cannot make a cgroup inside the job's here: {e}")
        open(gate, "w").close()
        self.d.wait_state(jid, "COMPLETED")
        self.assertTrue(os.path.isdir(cg), "a cgroup with one inside it cannot be removed yet")
        os.rmdir(inner)
        wait_until(lambda: not os.path.exists(cg), timeout=10, what="the job's cgroup to be removed")

    def second_daemon(self, state, sock, *more):
        """Runs another gpuwardd beside the test's own; it must give up: its exit code and output."""
        p = subprocess.run([GPUWARDD, "--state-dir", state, "--socket", sock, "--listen", "none",
                            "--simulate-gpus", "2", "--nvml-lib", FAKE_NVML, *more],
                           capture_output=True, text=True, timeout=30 * SLOW)
        return p.returncode, p.stderr

    @needs_readoption
    def test_a_second_daemon_on_the_same_state_dir_is_refused(self):
        """It would re-adopt the first one's jobs and hand out the same GPUs again."""
        jid = self.d.submit("--", "sleep", "60")
        self.d.wait_state(jid, "RUNNING")
        rc, err = self.second_daemon(self.d.state, os.path.join(self.d.dir, "second.sock"))
        self.assertEqual(rc, 1, err)
        self.assertIn(f"state dir {self.d.state} is in use by another gpuwardd (pid {self.d.proc.pid})", err)
        self.assertNotIn("adopt", kinds(self.d.job(jid)), "the first daemon's job was left alone")
        self.assertEqual([g["health"] for g in self.d.cli_json("gpus")["gpus"]], ["ok"] * 4,
                         "the second one did not rewrite the simulated GPUs")
        # The lock goes with the process: a restart (here after kill -9) takes the state dir at once.
        self.d.kill9()
        self.d.start()
        self.assertEqual(self.d.job(jid)["state"], "RUNNING")

    def test_a_second_daemon_on_the_same_socket_leaves_it_alone(self):
        rc, err = self.second_daemon(os.path.join(self.d.dir, "state2"), self.d.socket)
        self.assertEqual(rc, 1, err)
        self.assertIn(f"another gpuwardd is already listening on {self.d.socket}", err)
        self.assertTrue(os.path.exists(self.d.socket), "the running daemon's socket is still there")
        self.assertEqual(len(self.d.cli_json("gpus")["gpus"]), 4, "and it still answers there")

    def test_job_that_ended_while_the_daemon_was_down(self):
        jid = self.d.submit("--", "sh", "-c", "sleep 0.5; exit 0")
        self.d.wait_state(jid, "RUNNING")
        self.d.kill9()
        time.sleep(1.0)
        self.d.start()
        j = self.d.wait_state(jid, "COMPLETED")
        self.assertEqual(j["exit_code"], 0)

    def test_idle_supervisor_serves_the_next_job(self):
        """A supervisor whose job has ended takes the next one instead of a new fork: each job
        still has its own environment and directory, and idle supervisors end with the daemon."""
        seen = []
        for i in range(3):
            cwd = os.path.join(self.d.work, f"dir{i}")
            os.mkdir(cwd)
            jid = self.d.submit("--cwd", cwd, "--env", f"GW_NTH={i}", "--", "sh", "-c", 'echo "$GW_NTH $PPID $(pwd)"')
            self.d.wait_state(jid, "COMPLETED")
            nth, supervisor, where = self.d.log_text(jid).split()
            self.assertEqual((nth, where), (str(i), cwd))
            seen.append(int(supervisor))
        self.assertEqual(len(set(seen)), 1, f"jobs one after another, one supervisor: {seen}")
        with open(f"/proc/{seen[0]}/cmdline") as f:
            self.assertIn("--idle", f.read().split("\0"), "an idle supervisor says so in ps")
        # A job stopped in a reused supervisor is stopped whole, and the next job still starts.
        jid = self.d.submit("--", "sh", "-c", "sleep 300 & sleep 300")
        self.d.wait_pid(jid)
        self.d.cli("cancel", jid)
        self.assertEqual(self.d.job(jid)["state"], "CANCELLED")
        jid = self.d.submit("--", "true")
        self.d.wait_state(jid, "COMPLETED")
        self.d.stop()
        wait_until(lambda: not pid_alive(seen[0]), what="the idle supervisor to end with the daemon")
        self.d.start()

    def test_lost_job(self):
        jid = self.d.submit("--", TRAINER, "--sleep-forever")
        self.d.wait_state(jid, "RUNNING")
        self.d.wait_pid(jid)
        j = self.d.job(jid)
        self.d.kill9()
        # The machine "rebooted": the job and its supervisor are gone.
        with open(f"/proc/{j['pid']}/stat") as f:
            shim = int(f.read().rsplit(")", 1)[1].split()[1])
        for pid in (shim, j["pid"]):
            os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not pid_alive(j["pid"]), what="job to die")
        self.d.start()
        # Lost work is retried (class lost is in the default retry set), as a new attempt.
        j = self.d.wait_job(jid, lambda j: j["attempt"] == 2, what="attempt 2")
        self.assertEqual([a["class"] for a in j["attempts"]], ["lost"])
        self.assertIn("retry", kinds(j))
        self.d.wait_state(jid, "RUNNING", timeout=40)

    def test_history_survives_restart(self):
        ids = [self.d.submit("--name", f"h{i}", "--", "true") for i in range(3)]
        for i in ids:
            self.d.wait_state(i, "COMPLETED")
        self.d.stop()
        self.d.start()
        hist = self.d.cli_json("history")["jobs"]
        self.assertEqual([j["id"] for j in hist][:3], ids[::-1])
        self.assertEqual(self.d.submit("--", "true"), ids[-1] + 1)

    def test_kill9_during_submissions_loses_nothing_acknowledged(self):
        acked, stop = [], threading.Event()

        def submitter():
            for i in range(100):
                if stop.is_set():
                    return
                p = subprocess.run([GPUWARD, "--socket", self.d.socket, "submit", "-q", "--gpus", "1", "--name",
                                    f"k{i}", "--", "sleep", "0.01"], capture_output=True, text=True, timeout=30,
                                   cwd=self.d.work)
                if p.returncode == 0:
                    acked.append(int(p.stdout.strip()))

        rng = random.Random(7)
        for round_ in range(3):
            t = threading.Thread(target=submitter)
            t.start()
            time.sleep(rng.uniform(0.05, 0.4) * SLOW)
            self.d.kill9()
            stop.set()
            t.join(timeout=60)
            stop.clear()
            self.d.start()
            for jid in acked:
                st, j = self.d.api("GET", f"/api/v1/jobs/{jid}")
                self.assertEqual(st, 200, f"round {round_}: job {jid} was acknowledged but is gone")
        self.assertGreater(len(acked), 0)
        for jid in acked:
            self.d.wait_state(jid, "COMPLETED", timeout=60)
        # No GPU is ever given twice across restarts.
        st, r = self.d.api("GET", "/api/v1/jobs?state=COMPLETED,FAILED,CANCELLED&limit=10000")
        spans = {}
        for j in r["jobs"]:
            for g in j["gpus"]:
                spans.setdefault(g, []).append((j["start_time"], j["end_time"], j["id"]))
        for g, s in spans.items():
            s.sort()
            for (a0, a1, ja), (b0, b1, jb) in zip(s, s[1:]):
                self.assertLessEqual(a1, b0 + 0.002, f"GPU {g}: jobs {ja} and {jb} overlap")


def launcher_pid(daemon_pid):
    """The daemon's resident job launcher (`gpuward-shim --server`), or None."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == daemon_pid and len(argv) > 1 and argv[1] == b"--server":
            return int(name)
    return None


class LauncherTest(DaemonTest):
    def test_jobs_outlive_the_launcher_and_starts_fall_back_to_spawning(self):
        gate = os.path.join(self.d.work, "gate")
        running = self.d.submit("--", "sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done; exit 3")
        self.d.wait_state(running, "RUNNING")
        self.d.wait_pid(running)
        pid = wait_until(lambda: launcher_pid(self.d.proc.pid), what="the job launcher")
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: "job launcher" in self.d.daemon_log(), what="the daemon to notice the launcher is gone")
        # A start without the launcher: spawned instead, and it runs to its end.
        jid = self.d.submit("--", "sh", "-c", "echo spawned; exit 0")
        self.assertEqual(self.d.wait_state(jid, "COMPLETED")["exit_code"], 0)
        self.assertIn("spawned", self.d.log_text(jid))
        # The job the launcher had started is still supervised: its end is seen, with its status.
        open(gate, "w").close()
        self.assertEqual(self.d.wait_state(running, "FAILED")["exit_code"], 3)
        # Ten seconds after the failure, a start that needs a new supervisor brings the launcher
        # back.  The supervisor of the first job outlived the launcher and is idle: it takes one
        # of these two, which run at once; the other needs the launcher.
        time.sleep(10.5)
        ids = [self.d.submit("--", "sleep", "1") for _ in range(2)]
        for jid in ids:
            self.d.wait_state(jid, "COMPLETED")
        self.assertIn("job launcher back", self.d.daemon_log())
        self.assertIsNotNone(launcher_pid(self.d.proc.pid))


    def test_requests_the_launcher_never_answered(self):
        # A stopped launcher takes no request: two starts wait for its answer, then it dies.
        pid = wait_until(lambda: launcher_pid(self.d.proc.pid), what="the job launcher")
        os.kill(pid, signal.SIGSTOP)
        try:
            ids = [self.d.submit("--", "sh", "-c", f"echo unanswered {i}; exit {i}") for i in range(2)]
            for jid in ids:
                self.d.wait_state(jid, {"RUNNING", "COMPLETED", "FAILED"})
        finally:
            os.kill(pid, signal.SIGKILL)
        # Each is spawned once instead, and ends with its own status.
        for i, jid in enumerate(ids):
            j = self.d.wait_state(jid, {"COMPLETED", "FAILED"})
            self.assertEqual(j["exit_code"], i)
            self.assertEqual(self.d.log_text(jid).count(f"unanswered {i}"), 1)
            self.assertEqual(j["attempt"], 1)
        self.assertIn("starting jobs by spawning", self.d.daemon_log())


class BackoffAcrossRestartTest(DaemonTest):
    extra = ("--retry-backoff", "3")

    def test_retry_waiting_out_its_backoff_survives_a_restart(self):
        script = ('[ "$GPUWARD_ATTEMPT" = 1 ] && { echo "RuntimeError: CUDA error: unspecified launch failure" >&2; '
                  'exit 1; }; exit 0')
        jid = self.d.submit("--", "sh", "-c", script)
        wait_until(lambda: self.d.job(jid)["reason"] == "Backoff", what="the retry's backoff")
        self.d.stop()
        self.d.start()
        j = self.d.wait_state(jid, "COMPLETED", timeout=30)
        self.assertEqual(j["attempt"], 2)


class BookingAcrossRestartTest(DaemonTest):
    @needs_readoption
    def test_job_in_a_booking_still_stops_at_its_end(self):
        """A re-adopted job's stop time is worked out as at its start: its booking's end, not
        its (longer) time limit."""
        bk = self.d.cli_json("reserve", "--gpus", "1", "--start", "now", "--duration", "10s")
        jid = self.d.submit("--reservation", bk["id"], "--time", "1h", "--", "sleep", "300")
        self.d.wait_state(jid, "RUNNING", timeout=10)
        self.d.wait_pid(jid)
        self.d.kill9()
        self.d.start()
        segs = [s for s in self.d.api("GET", "/api/v1/schedule?hours=2")[1]["segments"]
                if s["kind"] == "running" and s["id"] == jid]
        self.assertTrue(segs, "the re-adopted job is on the schedule")
        for s in segs:
            self.assertLess(abs(s["end"] - bk["end"]), 2, f"it ends with its booking: {s}")
        j = self.d.wait_state(jid, {"TIMEOUT", "FAILED", "CANCELLED", "COMPLETED"}, timeout=30)
        self.assertEqual(j["state"], "TIMEOUT")
        self.assertIn("its booking ended", j["reason"])
        self.assertLessEqual(j["end_time"], bk["end"] + 1 + 2.5, "stopped at the booking's end (grace 1 s)")

    @needs_readoption
    def test_booking_end_warning_is_not_repeated_after_a_restart(self):
        """A job warned that its booking ends soon (booking_warn, 5 min: at once here) is not
        warned again by the restarted daemon."""
        bk = self.d.cli_json("reserve", "--gpus", "1", "--start", "now", "--duration", "8s")
        jid = self.d.submit("--reservation", bk["id"], "--time", "1h", "--", "sleep", "300")
        self.d.wait_state(jid, "RUNNING", timeout=10)
        self.d.wait_pid(jid)
        wait_until(lambda: self.d.events(jid, "warn"), timeout=10, what="the booking's end warning")
        self.d.kill9()
        self.d.start()
        j = self.d.wait_state(jid, {"TIMEOUT", "FAILED", "CANCELLED", "COMPLETED"}, timeout=30)
        self.assertEqual(j["state"], "TIMEOUT")
        self.assertIn("adopt", kinds(j))
        warns = [e["message"] for e in events_of(j, "warn")]
        self.assertEqual(len(warns), 1, f"warned once, restart or not: {warns}")
        self.assertEqual(self.d.log_text(jid).count(f"booking {bk['id']} ends at"), 1, "one warning in its log")


class GpuFaultAcrossRestartTest(DaemonTest):
    """An Xid seen on a job's GPU before a restart is still its evidence after it: the attempt
    that then fails is a gpu_fault, retried, not a user error."""
    gpus = 2

    def faulted_job(self):
        gate = os.path.join(self.d.work, "gate")
        script = f'while [ ! -e {gate} ]; do sleep 0.05; done; [ "$GPUWARD_ATTEMPT" = 1 ] && exit 1; exit 0'
        jid = self.d.submit_api(["sh", "-c", script], retries=3)
        g = self.d.wait_state(jid, "RUNNING")["gpus"][0]
        pid = self.d.wait_pid(jid)
        with open(os.path.join(self.d.state, "sim-nvml", "events"), "a") as f:
            f.write(f"gpu={g} xid=79\n")
        wait_until(lambda: "xid" in kinds(self.d.job(jid)), timeout=10, what="the xid event")
        return jid, pid, gate

    def assert_retried_as_gpu_fault(self, jid):
        j = self.d.wait_state(jid, {"COMPLETED", "FAILED"}, timeout=30)
        self.assertEqual([a["class"] for a in j["attempts"]][:1], ["gpu_fault"], j["attempts"])
        self.assertEqual((j["state"], j["attempt"]), ("COMPLETED", 2))

    @needs_readoption
    def test_fault_before_a_restart_of_a_job_still_running(self):
        jid, _, gate = self.faulted_job()
        self.d.kill9()
        self.d.start()
        self.assertIn("adopt", kinds(self.d.job(jid)))
        open(gate, "w").close()
        self.assert_retried_as_gpu_fault(jid)

    def test_fault_before_a_restart_of_a_job_that_ended_while_down(self):
        jid, pid, gate = self.faulted_job()
        self.d.kill9()
        open(gate, "w").close()
        wait_until(lambda: not pid_alive(pid), what="the job to end while no daemon runs")
        time.sleep(0.3)  # its supervisor writes the exit status to the journal
        self.d.start()
        self.assert_retried_as_gpu_fault(jid)


def assert_leak_restart(test, jid, name):
    """The attempt stopped by leak_policy restart was an oom the leak explains: resumed from its checkpoint."""
    d = test.d
    j = d.wait_job(jid, lambda j: j["attempt"] >= 2 or j["state"] not in ("PENDING", "RUNNING"), timeout=60,
                   what="the leak restart's retry")
    test.assertEqual([a["class"] for a in j["attempts"]][:1], ["oom"], (j["state"], j["reason"], j["attempts"]))
    test.assertIn("memory leak", j["attempts"][0]["evidence"])
    test.assertEqual(j["attempt"], 2)
    first = kinds(j)[:kinds(j).index("retry")]
    test.assertEqual(first.count("leak"), 1, f"the leak of attempt 1 is told once, restart or not: {first}")
    j = d.wait_state(jid, "RUNNING", timeout=30)
    test.assertTrue(j["resume_from"].endswith(f"runs/detect/{name}/weights/last.pt"), j["resume_from"])


class LeakAcrossRestartTest(DaemonTest):
    """A leak flagged before a restart is still known after it: the oom it explains is retried,
    and leak_policy restart still stops the job after its checkpoint and resumes it."""
    gpus = 2

    def leaking_job(self, oom_at, name):
        argv = [TRAINER, "epochs=16", f"name={name}", "--epoch-seconds", "1.5", "--mem-mib", "3000",
                "--leak-mib-per-epoch", "400", "--oom-at-epoch", str(oom_at), "--fault-attempt", "1"]
        jid = self.d.submit_api(argv)
        pid = self.d.wait_pid(jid)
        leak = wait_until(lambda: self.d.events(jid, "leak"), timeout=40, what="a leak event")
        self.assertIn("leak_policy warn", leak[0]["message"])
        self.assertEqual(self.d.job(jid)["attempt"], 1, "flagged before its oom")
        return jid, pid

    def assert_retried_as_explained_oom(self, jid):
        j = self.d.wait_job(jid, lambda j: j["attempt"] >= 2 or j["state"] == "FAILED", timeout=40,
                            what="the oom's retry")
        self.assertEqual([a["class"] for a in j["attempts"]][:1], ["oom"], j["attempts"])
        self.assertEqual(j["attempt"], 2, f"an oom the leak explains is retried: {j['reason']}")
        self.assertIn("retry", kinds(j))
        self.assertEqual(len(events_of(j, "leak")), 1, "the leak is told once per attempt, restart or not")

    @needs_readoption
    def test_leak_before_a_restart_of_a_job_still_running(self):
        jid, _ = self.leaking_job(10, "lkrun")
        self.d.kill9()
        self.d.start()
        j = self.d.job(jid)
        self.assertIn("adopt", kinds(j))
        self.assertTrue(j["training"]["leak"]["detected"], "the leak shows after the restart too")
        self.assertEqual(j["attempts"], [], "re-adopted before its oom")
        self.assert_retried_as_explained_oom(jid)

    def test_leak_before_a_restart_of_a_job_that_ended_while_down(self):
        jid, pid = self.leaking_job(8, "lkdown")
        self.d.kill9()
        wait_until(lambda: not pid_alive(pid), timeout=30, what="the job's oom while no daemon runs")
        time.sleep(0.3)  # its supervisor writes the exit status to the journal
        self.d.start()
        self.assert_retried_as_explained_oom(jid)

    @needs_readoption
    def test_leak_figures_after_a_restart(self):
        """The leak's figures (its GPU, rate, rising epochs, time to OOM) are back with the
        restarted daemon, and stay as the run goes on: not only once the detector has seen
        enough epochs of the new daemon's own to flag the leak again."""
        argv = [TRAINER, "epochs=40", "name=lkfig", "--epoch-seconds", "1.5", "--mem-mib", "3000",
                "--leak-mib-per-epoch", "400", "--leak-first-gpu-only"]
        jid = self.d.submit_api(argv, ngpus=2)
        self.d.wait_pid(jid)
        wait_until(lambda: self.d.events(jid, "leak"), timeout=40, what="a leak event")
        before = self.d.job(jid)["training"]["leak"]
        self.assertIsNotNone(before["mib_per_epoch"], before)
        self.d.kill9()
        self.d.start()
        j = self.d.job(jid)
        self.assertIn("adopt", kinds(j))
        after, epoch = j["training"]["leak"], j["training"]["epoch"]
        self.assertTrue(after["detected"])
        self.assertEqual(after["gpu"], before["gpu"], f"the leaking GPU after the restart: {after}")
        for key in ("mib_per_epoch", "epochs", "epochs_to_oom", "seconds_to_oom"):
            self.assertIsNotNone(after[key], f"{key} after the restart: {after}")
        self.assertGreater(after["mib_per_epoch"], 300, after)
        # Two more epochs, the first begun before the restart: the figures stay, still rising.
        j = self.d.wait_job(jid, lambda j: ((j["training"] or {}).get("epoch") or 0) >= epoch + 2, timeout=20,
                            what="two more epochs")
        self.assertGreaterEqual(j["training"]["leak"]["epochs"], after["epochs"], j["training"]["leak"])
        self.assertEqual(len(self.d.events(jid, "leak")), 1, "the leak is told once per attempt, restart or not")
        self.d.cli("cancel", jid)

    @needs_readoption
    def test_leak_restart_still_due_after_a_restart(self):
        """Flagged under leak_policy restart, the daemon gone before the checkpoint settled: the
        restarted one stops the job after it and resumes it from it."""
        # The checkpoint comes 1.5 s after each results.csv row: the stop is still to come at the kill.
        argv = [TRAINER, "epochs=10", "name=lrp", "--epoch-seconds", "2.5", "--save-delay", "1.5",
                "--leak-mib-per-epoch", "500"]
        jid = self.d.submit_api(argv, yolo=True, leak_policy="restart")
        leak = wait_until(lambda: self.d.events(jid, "leak"), timeout=60, what="a leak event")
        self.d.kill9()
        self.assertIn("it will be stopped after its next checkpoint", leak[0]["message"])
        self.d.start()
        self.assertIn("adopt", kinds(self.d.job(jid)))
        assert_leak_restart(self, jid, "lrp")


class LeakStopAcrossRestartTest(DaemonTest):
    grace = 4

    @needs_readoption
    def test_leak_restart_stop_sent_before_a_restart(self):
        """Stopped by leak_policy restart (SIGTERM ignored, so still stopping at the kill): the
        attempt is still an oom the leak explains after the restart, and resumed."""
        argv = [TRAINER, "epochs=12", "name=lrs", "--epoch-seconds", "1.5", "--leak-mib-per-epoch", "500",
                "--ignore-sigterm"]
        jid = self.d.submit_api(argv, yolo=True, leak_policy="restart")
        wait_until(lambda: self.d.events(jid, "terminate"), timeout=60, what="the leak restart's stop")
        self.d.kill9()
        self.d.start()
        self.assertIn("adopt", kinds(self.d.job(jid)))
        assert_leak_restart(self, jid, "lrs")


def parent_pid(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


class ReplacedDatabaseTest(DaemonTest):
    """gpuward.db emptied, or an older copy put back, while jobs run: a daemon that started on it
    would give their GPUs to new jobs and their ids again.  It refuses to start, naming the
    supervisors, and touches nothing."""
    gpus = 1

    def gated_job(self, name):
        gate = os.path.join(self.d.work, name)
        jid = self.d.submit("--", "sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done; exit 7")
        return jid, gate

    def end_gated(self, gate, shim):
        """Its job ends (exit 7), and with it the supervisor no daemon watches: before the test's
        directory, the gate with it, goes."""
        open(gate, "w").close()
        if shim:
            wait_until(lambda: not pid_alive(shim), what="the supervisor to end with its job")

    def db_files(self):
        return [os.path.join(self.d.state, "gpuward.db" + ext) for ext in ("", "-wal", "-shm")]

    def assert_refused(self, jid, shim):
        with self.assertRaises(AssertionError) as cm:
            self.d.start()
        err = str(cm.exception)
        self.assertIn(f"cannot load jobs from the state database: it knows no job {jid} attempt 1, yet its "
                      f"supervisor (pid {shim}) is still running: was gpuward.db replaced or emptied?", err)
        self.assertTrue(err.rstrip().endswith("or put the database back"), "its last word: it did not start")

    @needs_readoption
    def test_emptied_database_under_a_running_job(self):
        jid, gate = self.gated_job("gate")
        self.d.wait_state(jid, "RUNNING")
        pid = self.d.wait_pid(jid)
        shim = parent_pid(pid)
        self.d.kill9()
        try:
            open(self.db_files()[0], "w").close()
            for path in self.db_files()[1:]:
                if os.path.exists(path):
                    os.unlink(path)
            self.assert_refused(jid, shim)
            self.assertTrue(pid_alive(pid) and pid_alive(shim), "the job and its supervisor are left alone")
        finally:
            self.end_gated(gate, shim)
        # Those processes gone, it starts on the empty database; the next job's id is 1 again,
        # and its end is its own, not the old job 1's in the journal.
        self.d.start()
        self.assertEqual(self.d.cli_json("history")["jobs"], [])
        new = self.d.submit("--", "sh", "-c", "sleep 0.3; exit 3")
        self.assertEqual(new, 1)
        self.assertEqual(self.d.wait_state(new, "FAILED")["exit_code"], 3)

    @needs_readoption
    def test_older_copy_of_the_database_put_back(self):
        """The copy has job 2 queued; since, it started (on the GPU job 1 had)."""
        first, gate1 = self.gated_job("gate1")
        self.d.wait_state(first, "RUNNING")
        second, gate2 = self.gated_job("gate2")
        self.d.stop()  # SIGTERM: the job keeps running; the database is whole on disk
        saved = {}
        for path in self.db_files():
            if os.path.exists(path):
                with open(path, "rb") as f:
                    saved[path] = f.read()
        self.d.start()
        shim = None
        try:
            open(gate1, "w").close()
            self.d.wait_state(first, "FAILED")
            self.d.wait_state(second, "RUNNING")
            shim = parent_pid(self.d.wait_pid(second))
            self.d.kill9()
            for path in self.db_files():
                if os.path.exists(path):
                    os.unlink(path)
            for path, data in saved.items():
                with open(path, "wb") as f:
                    f.write(data)
            self.assert_refused(second, shim)
        finally:
            self.end_gated(gate2, shim)


class StopAcrossRestartsTest(DaemonTest):
    grace = 5

    @needs_readoption
    def test_restarts_do_not_put_off_sigkill(self):
        """SIGKILL comes at the recorded stop plus the grace period however often the daemon
        restarts in between, not a whole grace period after each restart."""
        ready = os.path.join(self.d.work, "ready")
        jid = self.d.submit("--", "sh", "-c", f"trap '' TERM; touch {ready}; while :; do sleep 0.2; done")
        self.d.wait_state(jid, "RUNNING")
        pid = self.d.wait_pid(jid)
        wait_until(lambda: os.path.exists(ready), what="the job to ignore SIGTERM")
        t0 = time.time()
        self.assertEqual(self.d.api("DELETE", f"/api/v1/jobs/{jid}")[0], 202)  # accepted: stopping
        while time.time() - t0 < 10 and pid_alive(pid):
            time.sleep(1.5)
            self.d.kill9()
            self.d.start()
        wait_until(lambda: not pid_alive(pid), timeout=15, what="the job to be killed")
        self.assertLess(time.time() - t0, 5 + 2.5, "SIGKILL at the cancel plus its 5 s grace period")
        j = self.d.wait_state(jid, "CANCELLED")
        self.assertIn("kill", kinds(j))


if __name__ == "__main__":
    main()

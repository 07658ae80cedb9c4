"""gpuwardd --backend slurm against fake Slurm commands (tests/fakes/slurm: sbatch records who
ran it and with what, squeue prints what the test writes, scancel and scontrol log their
arguments, scontrol refuses a deletion while told the reservation is in use): the
executor's side of the contract on any host, without a cluster.  The real cluster test is
tests/cluster/test_cluster_backend.py."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import gwtest
from gwtest import wait_until

FAKES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fakes", "slurm")


class SlurmBackend(gwtest.DaemonTest):
    extra = ("--backend", "slurm")
    # The nodes' folder: the controller only names it in a --scratch job's step.
    config = "scratch_dir = /gw-test-nodes-scratch\n"

    def test_queue_shows_the_node_slurm_runs_each_job_on(self):
        jid = self.submit("sleep", "60")
        self.sbatch_call(1)
        self.d.wait_state(jid, "RUNNING")
        self.assertNotIn("NODE", self.d.cli("queue").stdout.splitlines()[0], "no node yet: no column")
        self.squeue("1|RUNNING|0|node7|None")
        self.wait_msg(jid, "Slurm job 1: RUNNING on node7")
        head, row = self.d.cli("queue").stdout.splitlines()[:2]
        self.assertEqual(head.split()[-1], "NODE", head)
        self.assertEqual(row.split()[-1], "node7", row)
        job = [j for j in self.d.cli_json("queue")["jobs"] if j["id"] == jid][0]
        self.assertEqual(job["node"], "node7")
        self.assertEqual(self.d.job(jid)["node"], "node7")

    def setUp(self):
        # Cleanups run after tearDown, and also when setUp fails half-way.
        self.users = gwtest.Users(prefix="gwsb") if gwtest.IS_ROOT else None
        if self.users:
            self.addCleanup(self.users.remove_all)
        self.user = self.users.add("u") if self.users else None
        # The fakes keep their state beside SLURM_CONF, which the daemon passes to them all.
        self.sdir = tempfile.mkdtemp(prefix="gw-fakeslurm-")
        self.addCleanup(shutil.rmtree, self.sdir, True)
        os.chmod(self.sdir, 0o777)
        self.env = {"PATH": os.path.abspath(FAKES) + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
                    "SLURM_CONF": os.path.join(self.sdir, "slurm.conf")}
        # Every job the fake sbatch may number waits in Slurm until the test says otherwise
        # (a job missing from squeue is lost, and a poll may come before the test writes).
        self.squeue(*[f"{i}|PENDING|0||None" for i in range(1, 20)])
        super().setUp()

    def tearDown(self):
        # What is left ends at the daemon's cancels (cleanup) as soon as squeue says so.
        for name in ("squeue.fail", "sbatch.hang", "sbatch.accept-hang"):
            if os.path.exists(os.path.join(self.sdir, name)):
                os.unlink(os.path.join(self.sdir, name))
        self.squeue(*[f"{i}|CANCELLED|15|n1|None" for i in range(1, 20)])
        super().tearDown()

    def squeue(self, *lines):
        tmp = os.path.join(self.sdir, "squeue.tmp")
        with open(tmp, "w") as f:
            f.write("".join(line + "\n" for line in lines))
        os.rename(tmp, os.path.join(self.sdir, "squeue.out"))

    def submit(self, *cmd, extra=()):
        uid = self.user.pw_uid if self.user else None
        return self.d.submit("--gpus", "1", "--retries", "0", *extra, "--", *cmd, user=uid)

    def sbatch_call(self, n):
        path = os.path.join(self.sdir, f"sbatch.{n}")
        wait_until(lambda: os.path.exists(path), what=f"sbatch call {n}")
        with open(path) as f:
            uid, cwd, *args = f.read().splitlines()
        return int(uid), cwd, args

    def scancels(self):
        try:
            with open(os.path.join(self.sdir, "scancel.log")) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def slurm_msgs(self, jid):
        return [e["message"] for e in self.d.job(jid)["events"] if e["kind"] in ("slurm", "slurm_job")]

    def wait_msg(self, jid, text, timeout=20):
        return wait_until(lambda: any(text in m for m in self.slurm_msgs(jid)), timeout=timeout,
                          what=f"'{text}' in job {jid}")

    def slurm_id(self, jid):
        self.wait_msg(jid, "submitted to Slurm as job")
        return next(m for m in self.slurm_msgs(jid) if "submitted to Slurm as job" in m).split()[7]

    def test_mig_slices_go_to_slurm_by_the_clusters_type_name(self):
        """A slice job asks sbatch for its slices by the gres type the cluster names them with
        (read with scontrol show node); a whole-GPU job is kept off the node of slices only; a
        profile no node has is refused at submission, naming what the cluster has."""
        with open(os.path.join(self.sdir, "scontrol.nodes"), "w") as f:
            f.write("NodeName=n1 Arch=x86_64 Gres=gpu:a100_1g.10gb:7(S:0) NodeAddr=10.0.0.2 State=IDLE\n"
                    "NodeName=n2 Arch=x86_64 Gres=gpu:4 NodeAddr=10.0.0.3 State=IDLE\n")
        self.d.stop()
        self.d.start()  # the types are read at the start (then every minute)
        wait_until(lambda: "the cluster's GPUs: a100_1g.10gb (7 on 1 node), 4 GPUs of no type" in self.d.daemon_log(),
                   what="the cluster's GPU types read")
        uid = self.user.pw_uid if self.user else None
        sl = self.d.submit("--gpus", "1g.10gb:2", "--retries", "0", "--", "sleep", "60", user=uid)
        args = self.sbatch_call(1)[2]
        self.assertIn("--gres=gpu:a100_1g.10gb:2", args)
        self.assertIn("--nodes=1", args)
        self.assertFalse(any(a.startswith("--exclude") for a in args), args)
        self.wait_msg(sl, "submitted to Slurm as job 1 (as --gres=gpu:a100_1g.10gb:2)")
        whole = self.submit("sleep", "60")
        args = self.sbatch_call(2)[2]
        self.assertIn("--gres=gpu:1", args)
        self.assertIn("--exclude=n1", args)
        self.wait_msg(whole, "(kept off 1 node of MIG slices only)")
        p = self.d.cli("submit", "--gpus", "2g.20gb", "--", "sleep", "60", check=False, user=uid)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("no node of the Slurm cluster has 2g.20gb slices", p.stderr)
        self.assertIn("it has a100_1g.10gb (7 on 1 node), 4 GPUs of no type", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.sdir, "sbatch.3")), "nothing more submitted")

    def test_submit_as_the_user_then_follow_squeue_to_the_end(self):
        with open(os.path.join(self.d.work, "train.py"), "w") as f:  # submit checks python3's script is there
            f.write("print('training')\n")
        jid = self.submit("python3", "train.py", "it's")
        uid, cwd, args = self.sbatch_call(1)
        self.assertEqual(uid, self.user.pw_uid if self.user else os.geteuid(), "sbatch runs as the job's user")
        self.assertEqual(cwd, self.d.work)
        for a in ("--parsable", "--no-requeue", "--gres=gpu:1", f"--chdir={self.d.work}",
                  "--wrap=exec 'python3' 'train.py' 'it'\\''s'"):
            self.assertIn(a, args)
        j = self.d.job(jid)
        self.assertEqual(j["state"], "RUNNING")
        self.assertIn("attempt 1 submitted to Slurm as job 1", self.slurm_msgs(jid))

        self.squeue("1|PENDING|0||")   # no reason told
        self.wait_msg(jid, "Slurm job 1: PENDING, not yet scheduled ()")
        self.squeue("1|PENDING|0||Resources")
        self.wait_msg(jid, "Slurm job 1: PENDING, waiting for GPUs")
        self.squeue("1|RUNNING|0|node7|None")
        self.wait_msg(jid, "Slurm job 1: RUNNING on node7")
        self.assertIn("node7", self.d.cli("show", jid).stdout)
        # Job 2 is listed (waiting) before it is submitted: a poll may come before the test
        # writes its end, and a real squeue lists every job sbatch made.
        self.squeue("1|FAILED|768|node7|NonZeroExitCode", "2|PENDING|0||None")
        j = self.d.wait_state(jid, {"FAILED", "COMPLETED", "CANCELLED"})
        self.assertEqual((j["state"], j["exit_code"]), ("FAILED", 3))

        ok = self.submit("true")
        self.sbatch_call(2)
        self.squeue("2|COMPLETED|0|node7|None")
        j = self.d.wait_state(ok, {"FAILED", "COMPLETED", "CANCELLED"})
        self.assertEqual((j["state"], j["exit_code"]), ("COMPLETED", 0))

    def test_output_patterns_are_gpuwards_and_sbatch_expands_none(self):
        # %j is gpuward's job id, as on one host (Slurm would put its own there), and the
        # literal '%' that %% stands for reaches sbatch doubled, so it stays a '%'.
        jid = self.submit("true", extra=("--output", os.path.join(self.d.work, "out-%j-%%.log")))
        _, _, args = self.sbatch_call(1)
        outs = [a for a in args if a.startswith("--output=")]
        self.assertEqual(outs, [f"--output={self.d.work}/out-{jid}-%%.log"], args)

    def test_squeue_failing_is_not_an_end_but_a_job_gone_is_lost(self):
        open(os.path.join(self.sdir, "squeue.fail"), "w").close()
        jid = self.submit("sleep", "1")
        self.sbatch_call(1)
        wait_until(lambda: "squeue failed" in self.d.daemon_log(), what="a failed squeue logged")
        self.assertEqual(self.d.job(jid)["state"], "RUNNING")
        self.squeue("1|RUNNING|0|node1|None")
        os.unlink(os.path.join(self.sdir, "squeue.fail"))
        self.wait_msg(jid, "RUNNING on node1")
        self.squeue()   # gone from squeue: nobody can say how it ended
        j = self.d.wait_state(jid, {"FAILED", "COMPLETED", "CANCELLED"})
        self.assertEqual(j["state"], "FAILED")
        self.assertIn("gone", " ".join(self.slurm_msgs(jid)))

    def test_node_failure_is_lost_and_retried_with_a_new_slurm_job(self):
        jid = self.submit("sleep", "1", extra=("--retries", "1"))
        self.sbatch_call(1)
        # The retry is submitted at once (its backoff is sbatch's --begin), and a squeue begun
        # after sbatch answered lists it, as a real one would: so job 2 is listed with the failure.
        self.squeue("1|NODE_FAIL|0|node1|NodeDown", "2|PENDING|0||BeginTime")
        self.sbatch_call(2)
        self.wait_msg(jid, "attempt 2 submitted to Slurm as job 2")
        self.squeue("2|COMPLETED|0|node2|None")
        self.assertEqual(self.d.wait_state(jid, {"FAILED", "COMPLETED", "CANCELLED"})["state"], "COMPLETED")

    def step_ends(self, status, line):
        """A --scratch job (its command behind gpuwardd --scratch-run) whose first attempt ran on
        node3 and ended with status, line the last of its output (what the step wrote: fake
        Slurm runs nothing)."""
        jid = self.submit("true", extra=("--scratch", "--retries", "1"))
        self.sbatch_call(1)
        self.squeue("1|RUNNING|0|node3|None", "2|PENDING|0||BeginTime")
        self.wait_msg(jid, "RUNNING on node3")
        with open(self.d.job(jid)["log_path"], "a") as f:
            f.write("gpuward: scratch: starting\n" + line + "\n")
        self.squeue(f"1|FAILED|{status << 8}|node3|NonZeroExitCode", "2|PENDING|0||BeginTime")
        return jid

    def scratch_arg(self, n):
        """The attempt's folder sbatch call n's batch script gives its step (--scratch-run DIR)."""
        wrap = [a for a in self.sbatch_call(n)[2] if a.startswith("--wrap=")]
        self.assertEqual(len(wrap), 1, wrap)
        return re.search(r"'--scratch-run' '([^']*)'", wrap[0]).group(1)

    def test_a_scratch_folder_is_named_at_random_and_keeps_its_name_over_a_restart(self):
        """Users make their own folders in the nodes' scratch_dir and job ids come in order:
        each attempt's folder is JOB-ATTEMPT-RANDOM, named when it starts, found again by a
        restarted daemon, another for the retry."""
        jid = self.submit("true", extra=("--scratch", "--retries", "1"))
        first = self.scratch_arg(1)
        self.assertRegex(first, rf"^/gw-test-nodes-scratch/{jid}-1-[0-9a-f]{{12}}$")
        self.assertEqual(self.d.job(jid)["scratch"]["dir"], first)
        self.squeue("1|RUNNING|0|node3|None", "2|PENDING|0||BeginTime")
        self.wait_msg(jid, "RUNNING on node3")
        self.d.stop()
        self.d.start()
        wait_until(lambda: "following Slurm job 1 again" in self.d.daemon_log(), what="the job adopted")
        self.assertEqual(self.d.job(jid)["scratch"]["dir"], first, "the name its attempt started with")
        self.squeue("1|NODE_FAIL|0|node3|NodeDown", "2|PENDING|0||BeginTime")
        second = self.scratch_arg(2)
        self.assertRegex(second, rf"^/gw-test-nodes-scratch/{jid}-2-[0-9a-f]{{12}}$")
        self.assertNotEqual(first[-12:], second[-12:])
        self.wait_msg(jid, "attempt 2 submitted to Slurm as job 2")
        said = [e["message"] for e in self.d.job(jid)["events"] if e["kind"] == "scratch"]
        self.assertEqual([m.split(" on the node")[0] for m in said],
                         [f"attempt 1 works in {first}", f"attempt 2 works in {second}"], said)
        self.squeue("2|COMPLETED|0|node4|None")
        self.assertEqual(self.d.wait_state(jid, {"FAILED", "COMPLETED", "CANCELLED"})["state"], "COMPLETED")

    def test_a_node_step_that_cannot_do_the_nodes_part_is_lost_and_retried_elsewhere(self):
        jid = self.step_ends(69, "gpuward: node step failed: scratch: cannot make /scratch/9-1 on this node: "
                                 "Read-only file system")
        _, _, args = self.sbatch_call(2)
        self.assertIn("--exclude=node3", args)
        self.wait_msg(jid, "node node3 excluded from the next attempts: its dataset or scratch step could not "
                           "do the node's part (exit 69)")
        a = self.d.job(jid)["attempts"][0]
        self.assertEqual(a["class"], "lost")
        self.assertIn("node node3: scratch: cannot make /scratch/9-1 on this node: Read-only file system",
                      a["evidence"])
        self.squeue("2|COMPLETED|0|node4|None")
        self.assertEqual(self.d.wait_state(jid, {"FAILED", "COMPLETED", "CANCELLED"})["state"], "COMPLETED")

    def user_error_not_retried(self, jid, status):
        j = self.d.wait_state(jid, {"FAILED", "COMPLETED", "CANCELLED"})
        self.assertEqual((j["state"], j["exit_code"]), ("FAILED", status))
        self.assertEqual(j["attempts"][0]["class"], "user_error")
        self.assertFalse(os.path.exists(os.path.join(self.sdir, "sbatch.2")), "not retried")
        self.assertNotIn("excluded", " ".join(self.slurm_msgs(jid)))

    def test_a_datasets_own_problem_is_the_users(self):
        jid = self.step_ends(65, "gpuward: dataset /data/coco could not be staged on this node: not below "
                                 "cache_sources")
        self.user_error_not_retried(jid, 65)

    def test_the_commands_own_exit_69_is_the_users(self):
        # No step's line: the command's own 69 (EX_UNAVAILABLE is any program's to use).
        jid = self.step_ends(69, "train.py: license server unavailable")
        self.user_error_not_retried(jid, 69)

    def test_cancel_signals_through_scancel(self):
        run = self.submit("sleep", "100")
        wait = self.submit("sleep", "100")
        self.sbatch_call(2)
        # Their sbatch run side by side: which Slurm id each got is its answer's.
        if self.slurm_id(run) != "1":
            run, wait = wait, run
        self.assertEqual((self.slurm_id(run), self.slurm_id(wait)), ("1", "2"))
        self.squeue("1|RUNNING|0|node1|None", "2|PENDING|0||Priority")
        self.wait_msg(wait, "PENDING")
        self.wait_msg(run, "RUNNING on node1")
        uid = self.user.pw_uid if self.user else None
        self.d.cli("cancel", "--no-wait", run, user=uid)
        self.d.cli("cancel", "--no-wait", wait, user=uid)
        # The running one: SIGTERM to every step, plain scancel after the grace (1 s here);
        # the waiting one cannot take a signal: cancelled at once.
        wait_until(lambda: {"--signal=15 --full 1", "1", "2"} <= set(self.scancels()),
                   what=f"the scancels (so far {self.scancels()})")
        self.assertEqual(self.d.job(run)["state"], "RUNNING", "until Slurm says it ended")
        self.squeue("1|CANCELLED|15|node1|None", "2|CANCELLED|0||None")
        for jid in (run, wait):
            self.assertEqual(self.d.wait_state(jid, {"FAILED", "COMPLETED", "CANCELLED"})["state"], "CANCELLED")

    def test_a_scratch_jobs_warning_is_relayed_to_its_main_process_by_its_step(self):
        """A --scratch job's step passes a plain signal on to the command's process group: the
        SIGTERM of a cancel goes to the step alone (--batch), and the --signal warning, for the
        main process only, goes there as the relay signal SIGRTMIN + 4 that stands for SIGUSR1
        (core/scratch.h), which the step sends to the main process alone."""
        jid = self.submit("sleep", "100", extra=("--scratch", "--time", "1m", "--signal", "USR1@59s"))
        self.sbatch_call(1)
        self.squeue("1|RUNNING|0|node1|None")
        self.wait_msg(jid, "RUNNING on node1")
        relay = f"--signal={signal.SIGRTMIN + 4} --batch 1"
        wait_until(lambda: relay in self.scancels(), what="the relayed warning")
        self.assertEqual(self.scancels(), [relay], "the warning alone, once")
        warn = [e["message"] for e in self.d.job(jid)["events"] if e["kind"] == "warn"]
        self.assertTrue(any("SIGUSR1 sent to its main process now" in m for m in warn), warn)  # no pid: the node's
        self.d.cli("cancel", "--no-wait", jid, user=self.user.pw_uid if self.user else None)
        wait_until(lambda: "--signal=15 --batch 1" in self.scancels(), what="the cancel")
        self.squeue("1|CANCELLED|15|node1|None")
        self.assertEqual(self.d.wait_state(jid, {"FAILED", "COMPLETED", "CANCELLED"})["state"], "CANCELLED")

    def test_restart_follows_the_same_slurm_job(self):
        jid = self.submit("sleep", "100")
        self.sbatch_call(1)
        self.squeue("1|RUNNING|0|node3|None")
        self.wait_msg(jid, "RUNNING on node3")
        self.d.stop()
        self.d.start()
        wait_until(lambda: "following Slurm job 1 again" in self.d.daemon_log(), what="the job adopted")
        self.assertEqual(self.d.job(jid)["state"], "RUNNING")
        self.assertFalse(os.path.exists(os.path.join(self.sdir, "sbatch.2")), "not submitted twice")
        self.squeue("1|COMPLETED|0|node3|None")
        self.assertEqual(self.d.wait_state(jid, {"FAILED", "COMPLETED", "CANCELLED"})["state"], "COMPLETED")

    def scontrols(self, verb):
        try:
            with open(os.path.join(self.sdir, "scontrol.log")) as f:
                return [line for line in f.read().splitlines() if line.split(" ", 1)[0] == verb]
        except FileNotFoundError:
            return []

    def test_a_released_booking_deletes_its_reservation_once_its_job_is_gone(self):
        """Slurm refuses to delete a reservation a job runs in: released, the booking's job is
        stopped first, the reservation deleted once the job is gone, tried again while Slurm
        refuses (said once a run, not at each try), after a restart too."""
        in_use = os.path.join(self.sdir, "scontrol.in-use")
        open(in_use, "w").close()
        st, b = self.d.api("POST", "/api/v1/bookings", {"ngpus": 1, "start": time.time() + 1, "duration": 3600})
        self.assertEqual((st, b.get("state")), (201, "APPROVED"), b)
        name = f"gpuward_book_{b['id']}"
        self.assertTrue(any(f"ReservationName={name}" in c for c in self.scontrols("create")), self.scontrols("create"))
        jid = self.d.submit("--gpus", "1", "--retries", "0", "--time", "2h", "--reservation", b["id"], "--",
                            "sleep", "300")
        self.assertIn(f"--reservation={name}", self.sbatch_call(1)[2])
        self.squeue("1|RUNNING|0|node1|None")
        self.wait_msg(jid, "RUNNING on node1")

        self.d.cli("unreserve", b["id"])
        wait_until(lambda: any(c.split()[-1:] == ["1"] for c in self.scancels()), what="the job scancelled")
        self.assertEqual(self.scontrols("delete"), [], "no deletion while its job runs in it")
        self.squeue("1|CANCELLED|15|node1|None")
        self.d.wait_state(jid, {"FAILED", "COMPLETED", "CANCELLED", "TIMEOUT"})
        refused = f"Slurm refuses to delete reservation {name} yet"
        wait_until(lambda: len(self.scontrols("delete")) >= 2, what="the deletion tried again")
        self.assertEqual(self.d.daemon_log().count(refused), 1, "said once, not at each try")

        # Restarted while Slurm still refuses: the deletion is still to do.
        self.d.stop()
        tried = len(self.scontrols("delete"))
        self.d.start()
        wait_until(lambda: len(self.scontrols("delete")) > tried, what="the deletion tried after the restart")
        os.unlink(in_use)
        wait_until(lambda: f"Slurm reservation {name} deleted" in self.d.daemon_log(), what="the reservation deleted")
        self.assertEqual(self.scontrols("delete")[-1], f"delete ReservationName={name}")
        self.assertEqual(self.d.daemon_log().count(refused), 2, "once a run")

    def test_the_head_nodes_gpus_do_not_limit_a_job(self):
        jid = self.submit("true", extra=("--gpus", "8"))   # the daemon's host has 4
        self.assertIn("--gres=gpu:8", self.sbatch_call(1)[2])
        self.squeue("1|COMPLETED|0|n1,n2|None")
        self.assertEqual(self.d.wait_state(jid, {"FAILED", "COMPLETED", "CANCELLED"})["state"], "COMPLETED")

    def test_a_queued_job_gets_no_start_predicted_on_the_head_nodes_gpus(self):
        parent = self.submit("sleep", "60")
        jid = self.submit("true", extra=("--after", str(parent)))  # waits in gpuward's queue
        pr = self.d.job(jid)["training"]["prediction"]
        self.assertIsNone(pr["predicted_start"])
        self.assertIn("Slurm places the job", pr["why_none"])
        self.assertIn("Slurm places the job", self.d.cli("show", str(jid)).stdout)

    def test_sbatch_refusal_fails_the_job_with_its_words(self):
        open(os.path.join(self.sdir, "sbatch.refuse"), "w").close()
        jid = self.submit("true")
        j = self.d.wait_state(jid, {"FAILED", "COMPLETED", "CANCELLED"})
        self.assertEqual(j["state"], "FAILED")
        self.assertIn("fake refusal", j["reason"])

    def hang_sbatch(self, on=True):
        path = os.path.join(self.sdir, "sbatch.hang")
        if on:
            open(path, "w").close()
        else:
            os.unlink(path)

    def hanging(self):
        try:
            with open(os.path.join(self.sdir, "sbatch.hanging")) as f:
                return len(f.read().splitlines())
        except FileNotFoundError:
            return 0

    def test_a_silent_sbatch_holds_only_its_jobs(self):
        self.hang_sbatch()
        jids = [self.submit("sleep", "100") for _ in range(9)]
        wait_until(lambda: self.hanging() == 8, what="eight sbatch out at once")
        # The loop waits for none of them: the queue answers at once (before, it waited for
        # each sbatch in turn, 10 s each).
        self.d.cli("queue", timeout=3)
        for jid in jids:
            self.assertEqual(self.d.job(jid)["state"], "RUNNING")
            self.assertIn("attempt 1: submitting to Slurm", self.slurm_msgs(jid))
        self.hang_sbatch(False)
        ids = set()
        for jid in jids:
            self.wait_msg(jid, "attempt 1 submitted to Slurm as job")
            ids.add(next(m for m in self.slurm_msgs(jid) if "submitted to Slurm as job" in m).split()[-1])
        self.assertEqual(ids, {str(i) for i in range(1, 10)}, "each its own Slurm job")
        self.assertEqual(self.hanging(), 8, "the ninth sbatch waited for one of the eight to answer")

    def test_a_controller_that_does_not_answer_is_tried_again(self):
        self.hang_sbatch()
        jid = self.submit("true")
        self.wait_msg(jid, "slurmctld did not answer sbatch within 10 s; trying again in 30 s", timeout=40)
        self.assertEqual(self.d.job(jid)["state"], "RUNNING", "waiting, not failed")
        self.hang_sbatch(False)
        self.wait_msg(jid, "attempt 1 submitted to Slurm as job 1", timeout=60)
        self.squeue("1|COMPLETED|0|n1|None")
        self.assertEqual(self.d.wait_state(jid, {"FAILED", "COMPLETED", "CANCELLED"})["state"], "COMPLETED")

    def test_an_sbatch_given_up_on_that_reached_slurm_is_not_submitted_twice(self):
        late = os.path.join(self.sdir, "sbatch.accept-hang")
        open(late, "w").close()
        jid = self.submit("true")
        self.sbatch_call(1)   # Slurm has it; sbatch does not say so in time
        self.wait_msg(jid, "slurmctld did not answer sbatch within 10 s; trying again in 30 s", timeout=40)
        uid = self.user.pw_uid if self.user else os.geteuid()
        with open(os.path.join(self.sdir, "squeue.tags"), "w") as f:
            f.write(f"1|{uid}|gpuward:{jid}:1\n")
        os.unlink(late)
        self.wait_msg(jid, "attempt 1 submitted to Slurm as job 1 (found by its tag", timeout=60)
        self.assertFalse(os.path.exists(os.path.join(self.sdir, "sbatch.2")), "not submitted twice")
        self.squeue("1|COMPLETED|0|n1|None")
        self.assertEqual(self.d.wait_state(jid, {"FAILED", "COMPLETED", "CANCELLED"})["state"], "COMPLETED")

    def test_cancel_while_sbatch_is_out_cancels_in_slurm(self):
        self.hang_sbatch()
        jid = self.submit("sleep", "100")
        wait_until(lambda: self.hanging() == 1, what="sbatch out")
        uid = self.user.pw_uid if self.user else None
        self.d.cli("cancel", "--no-wait", jid, user=uid)
        self.assertEqual(self.d.job(jid)["state"], "RUNNING", "until Slurm has its job and cancels it")
        self.hang_sbatch(False)
        self.wait_msg(jid, "attempt 1 submitted to Slurm as job 1")
        wait_until(lambda: "1" in self.scancels(), what=f"scancel 1 (so far {self.scancels()})")
        self.squeue("1|CANCELLED|0||None")
        self.assertEqual(self.d.wait_state(jid, {"FAILED", "COMPLETED", "CANCELLED"})["state"], "CANCELLED")

    def test_array_tasks_are_slurm_jobs_of_their_own_throttled(self):
        aid = self.submit("sh", "-c", "true", extra=("--array", "0-4%2"))
        envs = {}

        def env_of(n):
            with open(os.path.join(self.sdir, f"sbatch.{n}.env")) as f:
                return dict(line.split("=", 1) for line in f.read().splitlines())

        def running_tasks():
            jobs = json.loads(self.d.cli("queue", "--json").stdout)["jobs"]
            return [j for j in jobs if j.get("array_job_id") == aid and j["state"] == "RUNNING"]

        done = []
        for n in range(1, 6):
            self.sbatch_call(n)
            envs[n] = env_of(n)
            # %2: with len(done) tasks ended, no more than two others were handed to Slurm.
            self.assertFalse(os.path.exists(os.path.join(self.sdir, f"sbatch.{len(done) + 3}")),
                             "the throttle held")
            self.assertLessEqual(len(running_tasks()), 2)
            done.append(f"{n}|COMPLETED|0|n1|None")
            self.squeue(*done, *[f"{i}|PENDING|0||None" for i in range(n + 1, 20)])
        self.assertEqual(sorted(e["GPUWARD_ARRAY_INDEX"] for e in envs.values()), ["0", "1", "2", "3", "4"])
        for e in envs.values():
            self.assertEqual((e["GPUWARD_ARRAY_JOB_ID"], e["GPUWARD_ARRAY_TASK_COUNT"]), (str(aid), "5"))
        arr = self.d.wait_state(aid, {"FAILED", "COMPLETED", "CANCELLED"})
        self.assertEqual(arr["state"], "COMPLETED", arr.get("reason"))
        self.assertEqual(arr["array_tasks"], {"total": 5, "COMPLETED": 5})


class BackendConfig(unittest.TestCase):
    def test_unknown_backend_is_refused_naming_the_key(self):
        why = gwtest.start_failure("backend = kubernetes\n")
        self.assertIn("backend: invalid value 'kubernetes'", why)


class GpulessController(unittest.TestCase):
    def test_a_head_node_without_gpus_is_not_told_to_simulate_some(self):
        sdir = tempfile.mkdtemp(prefix="gw-fakeslurm-")
        self.addCleanup(shutil.rmtree, sdir, True)
        env = {"PATH": os.path.abspath(FAKES) + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
               "SLURM_CONF": os.path.join(sdir, "slurm.conf")}
        with gwtest.Daemon(gpus=0, extra=("--backend", "slurm", "--nvml-lib", "/nonexistent/libnvidia-ml.so.1"),
                           env=env) as d:
            d.start()
            log = d.daemon_log()
        self.assertNotIn("--simulate-gpus", log)
        self.assertIn("no local GPUs, as a Slurm controller needs none", log)


if __name__ == "__main__":
    gwtest.main()

"""submit --scratch on a real two-node Slurm cluster (tests/cluster/slurmcluster.py), with
`gpuwardd --backend slurm` as the controller: the job's batch script runs its step
(`gpuwardd --scratch-run`) on the node Slurm picked, which makes the attempt's folder under
scratch_dir, copies each whole checkpoint back to the job's shared folder while the command
runs, and tells each copy in the job's output.  The node dies while its folder holds a newer
checkpoint than the shared one: Slurm says NODE_FAIL, the retry runs on the other node, its
step restores the run from the shared folder into its own folder, and the training resumes
from the newest checkpoint copied back.  Another user took the names JOB-ATTEMPT beforehand
in the nodes' scratch_dir (1777): the attempts' folders have random names and never meet
them.  Needs root, network namespaces, slurm-wlm and munge;
exits 77 (skipped) with the reason where they are missing."""
import os
import re
import signal
import stat
import sys
import unittest

import slurmcluster
from slurmcluster import gwtest
from test_cluster_recover import running_node, slurm_events
from test_scratch import checkpoint, write

WHY_NOT = slurmcluster.why_not_here()

# A dead node is DOWN (and its jobs NODE_FAIL) after this many seconds of silence.
SLURMD_TIMEOUT = 6


def pids_with(needle):
    """The PIDs whose command line holds needle."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if needle in f.read():
                    found.append(int(p))
        except OSError:
            pass
    return found


def children(pid):
    """The names of pid's live children: the step's command, and a copier while one runs (a
    gpuwardd, forked or exec'd); one that ended is a zombie the stopped step cannot reap."""
    names = []
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        for k in f.read().split():
            try:
                with open(f"/proc/{k}/stat") as st:
                    comm, state = re.match(r"\d+ \((.*)\) (\S)", st.read()).groups()
            except (OSError, AttributeError):
                continue
            if state != "Z":
                names.append(comm)
    return names


def start_with_scratch(d, more=""):
    """Starts d with the nodes' scratch_dir (config more after it); the folder.  Each node has
    it (here the same folder, as the nodes share this host's disk), one where users make their
    own folders."""
    sdir = os.path.join(d.dir, "node-scratch")
    os.makedirs(sdir)
    os.chmod(sdir, 0o1777)
    d.config = f"scratch_dir = {sdir}\n{more}"
    d.start()
    return sdir


@unittest.skipIf(WHY_NOT, f"no Slurm cluster here: {WHY_NOT}")
class ClusterScratch(unittest.TestCase):
    def test_a_dead_node_resumes_from_the_newest_checkpoint_copied_back(self):
        with slurmcluster.SlurmCluster(nodes=2, gpus=4, slurmd_timeout=SLURMD_TIMEOUT) as c, \
                gwtest.Daemon(gpus=4, extra=["--backend", "slurm"], env={"SLURM_CONF": c.conf}) as d:
            self.sdir = start_with_scratch(d, "scratch_interval = 1\n")
            try:
                self.node_dies(c, d)
            except BaseException:
                print(f"--- squeue: {c.squeue()}\n--- daemon:\n{d.daemon_log()[-15000:]}", file=sys.stderr)
                raise

    def node_dies(self, c, d):
        fault = os.path.join(d.work, "fault")
        script = os.path.join(d.work, "train.sh")
        # Attempt 1 hangs after epoch 2 (--fault-once), so that it is the node's death that ends it.
        with open(script, "w") as f:
            f.write(f'#!/bin/sh\nexec {gwtest.TRAINER} train project="$GPUWARD_SCRATCH/runs" name=s epochs=5 '
                    f'--epoch-seconds 1 --hang-after-epoch 2 --fault-once {fault} "$@"\n')
        os.chmod(script, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
        # Another user takes, on the nodes' 1777 scratch_dir, the names JOB-ATTEMPT the next
        # jobs' attempts would have had (job ids come in order): the job's folders are named
        # at random, so its steps never find one of these in their place.
        squatted = [os.path.join(self.sdir, f"{k}-{a}") for k in range(1, 4) for a in range(1, 4)]
        for path in squatted:
            os.mkdir(path, 0o700)
            os.chown(path, 65534, 65534)
        jid = d.submit_api([script], 300, scratch=True, yolo=True, retries=2, retry_on="killed,lost")
        self.assertLessEqual(jid, 3, "a job whose names were taken")
        j = d.wait_job(jid, running_node, timeout=60, what="the job running on a node")
        dead = running_node(j)
        first = j["scratch"]["dir"]
        self.assertRegex(first, rf"^{re.escape(self.sdir)}/{jid}-1-[0-9a-f]{{12}}$")
        shared_last = os.path.join(d.work, "runs", "s", "weights", "last.pt")
        gwtest.wait_until(lambda: "gpuward: scratch: copied runs/s/weights/last.pt (epoch 2) back to "
                          f"{d.work}\n" in d.log_text(jid), 60, what="epoch 2's checkpoint copied back")
        self.assertIn(f"gpuward: scratch: {first} is this attempt's folder (GPUWARD_SCRATCH)", d.log_text(jid))
        self.assertEqual(stat.S_IMODE(os.lstat(first).st_mode), 0o700)

        # The step stopped, and no copier of its in flight: nothing more reaches the shared
        # folder, so the checkpoint of epoch 3 below stays on the node, as one written after the
        # last look would.
        step = pids_with(b"--scratch-run\0" + first.encode() + b"\0")
        self.assertEqual(len(step), 1, step)
        os.kill(step[0], signal.SIGSTOP)
        gwtest.wait_until(lambda: children(step[0]) == ["gw-fake-trainer"], 20,
                          what="the stopped step's copier to end (its only child the command)")
        write(os.path.join(first, "runs", "s", "weights", "last.pt"), checkpoint(2))  # epoch 3's
        c.kill_node(dead)

        j = d.wait_state(jid, ("COMPLETED", "FAILED"), timeout=SLURMD_TIMEOUT * 10 + 60)
        self.assertEqual(j["state"], "COMPLETED", j["reason"])
        self.assertTrue(any(m.startswith("Slurm job ") and ": NODE_FAIL" in m for m in slurm_events(j)),
                        slurm_events(j))
        a = j["attempts"]
        self.assertEqual(a[0]["class"], "lost")
        self.assertEqual(a[0]["node"], dead)
        self.assertNotEqual(a[1]["node"], dead)
        self.assertEqual(a[1]["resumed_from"], shared_last, a)
        self.assertRegex(d.cli("show", str(jid)).stdout, rf"resumed from {re.escape(shared_last)} \(epoch 2\)\n")

        self.assertEqual(len(a), 2, "no attempt lost to a name another user took")

        # The retry's step restored the run into its own folder, and the trainer resumed from
        # the checkpoint of epoch 2 there: epoch 3 is trained again, the node's newer one lost.
        scratch = [e["message"] for e in j["events"] if e["kind"] == "scratch"]
        second = next((m.split()[4] for m in scratch if m.startswith("attempt 2 works in ")), None)
        self.assertRegex(second or "", rf"^{re.escape(self.sdir)}/{jid}-2-[0-9a-f]{{12}}$", scratch)
        self.assertNotEqual(first[-12:], second[-12:])
        log = d.log_text(jid)
        self.assertRegex(log, rf"gpuward: scratch: restored runs/s from {re.escape(d.work)} into "
                              rf"{re.escape(second)}: \d+ files")
        self.assertIn(f"Resuming training {second}/runs/s/weights/last.pt from epoch 3 to 5 total epochs", log)
        self.assertRegex(log, rf"gpuward: scratch: synced back to {re.escape(d.work)}: \d+ files, .*; removed "
                              rf"{re.escape(second)}\n")
        self.assertFalse(os.path.exists(second))
        for path in squatted:
            self.assertEqual(os.lstat(path).st_uid, 65534, "another's folder left as it was")
        self.assertIn(f"attempt 2 works in {second} on the node Slurm picks, made there by the job's step, which "
                      f"restores runs/s from {d.work}", scratch)
        # The controller tells the copies the steps wrote of, as it finds them in the shared folder.
        self.assertIn(f"copied runs/s/weights/last.pt (epoch 2) back to {d.work}", scratch)
        self.assertTrue(any(re.fullmatch(rf"its step on the node says: restored runs/s from {re.escape(d.work)} into "
                                         rf"{re.escape(second)}: \d+ files, .*", m) for m in scratch), scratch)
        self.assertTrue(any(m.startswith(f"its step on the node says: synced back to {d.work}: ") for m in scratch),
                        scratch)
        shown = d.cli("show", str(jid)).stdout
        self.assertIn(f"copied runs/s/weights/last.pt (epoch 2) back to {d.work}", shown)
        with open(os.path.join(d.work, "runs", "s", "results.csv")) as f:
            epochs = [int(float(line.split(",")[0])) for line in f.read().splitlines()[1:]]
        self.assertEqual(epochs, [1, 2, 3, 4, 5], "each epoch once, resumed from epoch 2")


# The command of ClusterScratchSignals: a main process and a child of it (one process group,
# as a data loader), each noting every SIGTERM and SIGUSR1 it gets in a line of its own, and
# ending a second after its first SIGTERM (a second SIGTERM would come within it).
NOTING = """import os, signal, sys, time
out, term, who = sys.argv[1], [], "main"
def note(what):
    with open(out, "a") as f:
        f.write(who + " " + what + "\\n")
def on_term(sig, frame):
    note("TERM")
    term.append(time.monotonic())
signal.signal(signal.SIGUSR1, lambda sig, frame: note("USR1"))
signal.signal(signal.SIGTERM, on_term)
if os.fork() == 0:
    who = "child"
else:
    note("ready")
end = time.monotonic() + 120
while time.monotonic() < end and not (term and time.monotonic() - term[0] >= 1):
    time.sleep(0.05)
"""


@unittest.skipIf(WHY_NOT, f"no Slurm cluster here: {WHY_NOT}")
class ClusterScratchSignals(unittest.TestCase):
    def test_each_process_gets_a_signal_once_and_the_warning_only_the_main_one(self):
        """A --scratch job's step passes a signal Slurm sends the job on to the command's
        process group, which Slurm's own does not reach (proctrack/cgroup signals the children
        of slurmstepd only): each of its processes gets a whole-job SIGTERM (scancel --full, as
        Slurm's time limit) once.  The --signal warning, for the main process only, reaches the
        step as a relay signal and the main process from the step, once; its child none."""
        with slurmcluster.SlurmCluster(nodes=1, gpus=1) as c, \
                gwtest.Daemon(gpus=1, extra=["--backend", "slurm"], env={"SLURM_CONF": c.conf}) as d:
            start_with_scratch(d)
            try:
                self.signals_once(c, d)
            except BaseException:
                print(f"--- squeue: {c.squeue()}\n--- daemon:\n{d.daemon_log()[-15000:]}", file=sys.stderr)
                raise

    def signals_once(self, c, d):
        script, out = os.path.join(d.work, "noting.py"), os.path.join(d.work, "signals")
        with open(script, "w") as f:
            f.write(NOTING)

        def lines():
            try:
                with open(out) as f:
                    return sorted(f.read().splitlines())
            except FileNotFoundError:
                return []

        # The warning comes 8 s after the submission: the command has its handlers by then.
        jid = d.submit_api(["python3", script, out], 60, scratch=True, warn_signal="USR1", warn_before=52)
        j = d.wait_job(jid, running_node, timeout=30, what="the job running on a node")
        sid = next(m for m in slurm_events(j) if " submitted to Slurm as job " in m).split()[7].rstrip(",")
        gwtest.wait_until(lambda: "main ready" in lines(), 30, what="the command's handlers set")
        gwtest.wait_until(lambda: "main USR1" in lines(), 30, what="the warning's SIGUSR1")
        self.assertIn(f"scancel --signal={signal.SIGRTMIN + 4} --batch {sid}", d.daemon_log(), "relayed by the step")
        c.cmd("scancel", "--full", "--signal=TERM", sid)
        j = d.wait_state(jid, ("COMPLETED", "FAILED", "CANCELLED"), timeout=30)
        self.assertEqual(j["state"], "COMPLETED", j["reason"])
        self.assertEqual(lines(), ["child TERM", "main TERM", "main USR1", "main ready"], "each signal once")
        self.assertRegex(d.log_text(jid), rf"gpuward: scratch: synced back to {re.escape(d.work)}: ")

if __name__ == "__main__":
    if WHY_NOT:
        print(f"skipped: no Slurm cluster here: {WHY_NOT}")
        sys.exit(77)
    unittest.main(verbosity=2)

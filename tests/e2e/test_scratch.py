"""submit --scratch: a node-local folder per attempt (GPUWARD_SCRATCH) whose whole checkpoints
reach the job's shared folder (its cwd) while it runs, the rest when it ends; a retry after a
node's death resumes from the newest checkpoint copied back."""
import io
import os
import pickle
import re
import shutil
import signal
import stat
import tempfile
import unittest
import zipfile

import gwtest
from gwtest import TRAINER, Daemon, events_of, wait_until

FAKES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fakes", "slurm")


def checkpoint(epoch):
    """The bytes of a torch.save zip as Ultralytics writes one: archive/data.pkl, stored, a dict
    whose first key is 'epoch' (the 0-based index of the last epoch finished)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, data in (("archive/data.pkl", pickle.dumps({"epoch": epoch, "best_fitness": None}, protocol=2)),
                           ("archive/data/0", b"\0" * 4096)):
            z.writestr(zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0)), data)  # the same bytes each time
    return buf.getvalue()


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def scratch_msgs(job):
    return [e["message"] for e in events_of(job, "scratch")]


class ScratchDaemon(unittest.TestCase):
    """A daemon with a scratch_dir and a look every second (not a test of its own)."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="gw-scratch-")
        os.chmod(self.root, 0o711)  # a job's user reaches scratch_dir below it
        self.addCleanup(shutil.rmtree, self.root, True)
        self.sdir = os.path.join(self.root, "scratch")
        self.d = Daemon(gpus=1, config=f"scratch_dir = {self.sdir}\nscratch_interval = 1\n").start()
        self.addCleanup(self.d.cleanup)

    def wait_msg(self, jid, pattern, timeout=30):
        return wait_until(lambda: next((m for m in scratch_msgs(self.d.job(jid)) if re.search(pattern, m)), None),
                          timeout=timeout, what=f"a scratch event matching {pattern!r}")

    def running_scratch_job(self):
        """A job that waits for $GPUWARD_SCRATCH/done; its id and its scratch folder."""
        script = 'echo "scratch=$GPUWARD_SCRATCH"; while [ ! -e "$GPUWARD_SCRATCH/done" ]; do sleep 0.1; done'
        jid = self.d.submit_api(["/bin/sh", "-c", script], 120, scratch=True, retries=0)
        j = self.d.wait_state(jid, "RUNNING")
        sd = j["scratch"]["dir"]
        # One host's scratch_dir is the daemon's (0711): no user can take a name there, and
        # the folder keeps its plain JOB-ATTEMPT name (a cluster's gets a random part).
        self.assertEqual(sd, os.path.join(self.sdir, f"{jid}-1"))
        wait_until(lambda: f"scratch={sd}\n" in self.d.log_text(jid), what="GPUWARD_SCRATCH in the job's log")
        st = os.lstat(sd)
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o700)
        self.assertEqual(stat.S_IMODE(os.stat(self.sdir).st_mode), 0o711)
        return jid, sd


class ScratchTest(ScratchDaemon):
    def test_checkpoints_go_back_as_they_appear_and_half_ones_do_not(self):
        jid, sd = self.running_scratch_job()
        run, shared = os.path.join(sd, "runs", "r"), os.path.join(self.d.work, "runs", "r")
        write(os.path.join(run, "weights", "last.pt"), checkpoint(0))
        write(os.path.join(run, "results.csv"), b"epoch,loss\n1,0.9\n")
        self.wait_msg(jid, rf"^copied runs/r/weights/last\.pt \(epoch 1\) back to {re.escape(self.d.work)}$")
        self.assertEqual(read(os.path.join(shared, "weights", "last.pt")), checkpoint(0))
        self.assertEqual(self.d.job(jid)["state"], "RUNNING", "copied while the job runs")
        # Within a look results.csv goes after the checkpoints: read after a last.pt, it holds
        # that epoch's row (Ultralytics writes the row first), so a node dying mid-look never
        # leaves a checkpoint whose row was not copied.
        self.wait_msg(jid, r"^copied runs/r/results\.csv \(\d+ B\) back to ")
        msgs = scratch_msgs(self.d.job(jid))
        order = [m.split()[1] for m in msgs if m.startswith("copied ")]
        self.assertEqual(order, ["runs/r/weights/last.pt", "runs/r/results.csv"], msgs)

        # Epoch 2's checkpoint half written (a zip with no end records yet), then its row: the
        # look that copies the row saw the half checkpoint and left the shared one as it was.
        whole = checkpoint(1)
        write(os.path.join(run, "weights", "last.pt"), whole[:len(whole) // 2])
        write(os.path.join(run, "results.csv"), b"epoch,loss\n1,0.9\n2,0.8\n")
        wait_until(lambda: read(os.path.join(shared, "results.csv")).endswith(b"2,0.8\n"), what="the new row")
        self.assertEqual(read(os.path.join(shared, "weights", "last.pt")), checkpoint(0), "no half checkpoint")
        self.assertFalse([m for m in scratch_msgs(self.d.job(jid)) if "(epoch 2)" in m])
        write(os.path.join(run, "weights", "last.pt"), whole)
        self.wait_msg(jid, r"^copied runs/r/weights/last\.pt \(epoch 2\) back to ")
        self.assertEqual(read(os.path.join(shared, "weights", "last.pt")), whole)
        self.assertEqual(os.stat(os.path.join(shared, "weights", "last.pt")).st_mtime_ns,
                         os.stat(os.path.join(run, "weights", "last.pt")).st_mtime_ns, "its mtime kept")
        self.assertFalse([n for n in os.listdir(os.path.join(shared, "weights")) if n != "last.pt"],
                         "no temporary copy left")

        # The end: only what differs goes back (the checkpoint and results.csv are there
        # already), in one event, and the folder is removed.
        write(os.path.join(run, "plot.png"), b"png" * 100)
        write(os.path.join(sd, "done"), b"")
        self.d.wait_state(jid, "COMPLETED")
        msgs = scratch_msgs(self.d.job(jid))
        synced = [m for m in msgs if m.startswith("synced back")]
        self.assertEqual(synced, [f"synced back to {self.d.work}: 2 files, 300 B; {sd} removed"], msgs)
        self.assertEqual(read(os.path.join(shared, "plot.png")), b"png" * 100)
        self.assertTrue(os.path.exists(os.path.join(self.d.work, "done")))
        self.assertFalse(os.path.exists(sd))
        show = self.d.cli("show", str(jid)).stdout
        self.assertIn("copied runs/r/weights/last.pt (epoch 2) back to", show)

    def test_links_are_not_followed(self):
        jid, sd = self.running_scratch_job()
        victim = os.path.join(self.root, "victim.pt")
        write(victim, checkpoint(7))
        # In the shared folder, someone's link where the checkpoint goes back; in the scratch
        # folder, a link to a file the user may not take.
        os.makedirs(os.path.join(self.d.work, "runs", "v", "weights"))
        os.symlink(victim, os.path.join(self.d.work, "runs", "v", "weights", "last.pt"))
        write(os.path.join(sd, "runs", "v", "weights", "last.pt"), checkpoint(0))
        os.symlink(victim, os.path.join(sd, "runs", "v", "weights", "best.pt"))
        self.wait_msg(jid, r"^not copied back: runs/v/weights/last\.pt the destination is not a regular file")
        write(os.path.join(sd, "done"), b"")
        self.d.wait_state(jid, "COMPLETED")
        synced = [m for m in scratch_msgs(self.d.job(jid)) if m.startswith("synced back")]
        self.assertEqual(len(synced), 1)
        self.assertIn("not copied: runs/v/weights/", synced[0])
        self.assertEqual(read(victim), checkpoint(7), "the link's target untouched")
        self.assertTrue(os.path.islink(os.path.join(self.d.work, "runs", "v", "weights", "last.pt")))
        self.assertFalse(os.path.exists(os.path.join(self.d.work, "runs", "v", "weights", "best.pt")))

    def test_a_dead_node_resumes_from_the_newest_checkpoint_copied_back(self):
        """The daemon and the job die with the node (kill -9 both, the scratch folder removed as
        the node's disk is lost) after the scratch folder got a newer checkpoint than the shared
        folder: the retry resumes from the newest one copied back, restored into its new folder."""
        fault = os.path.join(self.d.work, "fault")
        script = os.path.join(self.d.work, "train.sh")
        with open(script, "w") as f:
            f.write(f'#!/bin/sh\nexec {TRAINER} project="$GPUWARD_SCRATCH/runs" name=s epochs=4 '
                    f'--epoch-seconds 1 --hang-after-epoch 2 --fault-once {fault} "$@"\n')
        os.chmod(script, 0o755)
        jid = self.d.submit_api([script], 120, scratch=True, yolo=True, retries=2, retry_on="killed,lost")
        self.wait_msg(jid, r"^copied runs/s/weights/last\.pt \(epoch 2\) back to ")
        j = self.d.job(jid)
        sd, pid = j["scratch"]["dir"], j["pid"]
        self.d.kill9()
        write(os.path.join(sd, "runs", "s", "weights", "last.pt"), checkpoint(2))  # epoch 3: never copied
        os.kill(pid, signal.SIGKILL)
        shutil.rmtree(sd)
        self.d.start()
        j = self.d.wait_state(jid, "COMPLETED", timeout=60)
        shared_last = os.path.join(self.d.work, "runs", "s", "weights", "last.pt")
        self.assertEqual(j["attempts"][1]["resumed_from"], shared_last, j["attempts"])
        self.assertRegex(self.d.cli("show", str(jid)).stdout,
                         rf"resumed from {re.escape(shared_last)} \(epoch 2\)\n")
        msgs = scratch_msgs(j)
        self.assertIn(f"nothing synced back from {sd} (No such file or directory): the newest checkpoints copied "
                      f"back to {self.d.work} stay there", msgs)
        self.assertIn(f"restored runs/s from {self.d.work} into {os.path.join(self.sdir, f'{jid}-2')}",
                      " ".join(msgs))
        self.assertEqual([e["message"] for e in events_of(j, "resumed")],
                         ["continued from its checkpoint of epoch 2: epoch 3 written in its run s"])
        with open(os.path.join(self.d.work, "runs", "s", "results.csv")) as f:
            epochs = [int(float(line.split(",")[0])) for line in f.read().splitlines()[1:]]
        self.assertEqual(epochs, [1, 2, 3, 4], "each epoch once: epoch 2's row went back with its checkpoint")


@unittest.skipUnless(gwtest.IS_ROOT, "a job of another user needs root")
class UserScratchTest(ScratchDaemon):
    """The daemon is root, the job another user's: its folder and its copies are that user's,
    and a link it plants in its folder to root's file does not carry that file out."""

    def test_the_folder_and_copies_are_the_users_and_links_stay_links(self):
        users = gwtest.Users(prefix="gwsc")
        self.addCleanup(users.remove_all)
        u = users.add("u")
        secret = os.path.join(self.root, "secret.pt")
        write(secret, checkpoint(9))
        os.chmod(secret, 0o644)  # readable by anyone: only the link's not being followed keeps it in
        script = 'while [ ! -e "$GPUWARD_SCRATCH/done" ]; do sleep 0.1; done'
        jid = self.d.submit("--scratch", "--retries", "0", "--", "/bin/sh", "-c", script, user=u.pw_uid)
        sd = self.d.wait_state(jid, "RUNNING")["scratch"]["dir"]
        st = os.lstat(sd)
        self.assertEqual((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)), (u.pw_uid, u.pw_gid, 0o700))
        weights = os.path.join(sd, "runs", "u", "weights")
        write(os.path.join(weights, "last.pt"), checkpoint(0))
        os.symlink(secret, os.path.join(weights, "best.pt"))
        for path in (os.path.join(sd, "runs"), os.path.join(sd, "runs", "u"), weights,
                     os.path.join(weights, "last.pt"), os.path.join(weights, "best.pt")):
            os.lchown(path, u.pw_uid, u.pw_gid)  # as the job would have made them
        self.wait_msg(jid, r"^copied runs/u/weights/last\.pt \(epoch 1\) back to ")
        shared = os.path.join(self.d.work, "runs", "u", "weights")
        self.assertEqual(os.stat(os.path.join(shared, "last.pt")).st_uid, u.pw_uid, "written as the user")
        self.assertEqual(os.stat(shared).st_uid, u.pw_uid)
        write(os.path.join(sd, "done"), b"")
        os.chown(os.path.join(sd, "done"), u.pw_uid, u.pw_gid)
        self.d.wait_state(jid, "COMPLETED")
        self.assertFalse(os.path.lexists(os.path.join(shared, "best.pt")), "the link's target not carried out")
        synced = [m for m in scratch_msgs(self.d.job(jid)) if m.startswith("synced back")]
        self.assertEqual(len(synced), 1)
        self.assertIn("not copied: runs/u/weights/best.pt a symbolic link, not followed", synced[0])
        self.assertFalse(os.path.exists(sd))

    def test_a_folder_the_user_cannot_reach_is_told(self):
        users = gwtest.Users(prefix="gwsc")
        self.addCleanup(users.remove_all)
        u = users.add("u")
        os.chmod(self.root, 0o700)  # the admin put scratch_dir where its users cannot go
        jid = self.d.submit("--scratch", "--retries", "0", "--", "sleep", "60", user=u.pw_uid)
        self.wait_msg(jid, r"^cannot copy checkpoints back: Permission denied \(as the job's user\)$")
        self.d.cli("cancel", str(jid))
        self.d.wait_state(jid, "CANCELLED")


class RefusedTest(unittest.TestCase):
    def refusal(self, d):
        r = d.cli("submit", "--scratch", "--", "true", check=False)
        self.assertNotEqual(r.returncode, 0)
        return r.stderr

    def test_without_scratch_dir(self):
        with Daemon(gpus=1) as d:
            d.start()
            err = self.refusal(d)
            self.assertIn("scratch", err)
            self.assertIn("the admin must set scratch_dir", err)
            # The same from a script's directive.
            script = os.path.join(d.work, "job.sh")
            with open(script, "w") as f:
                f.write("#!/bin/sh\n#GPUWARD --scratch\ntrue\n")
            os.chmod(script, 0o755)
            r = d.cli("submit", script, check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("the admin must set scratch_dir", r.stderr)

    def test_with_slurm(self):
        """On a cluster scratch_dir is the nodes': the controller leaves it alone and wraps the
        command in the job's step (gpuwardd --scratch-run), outside a --dataset's staging step;
        without scratch_dir --scratch is refused."""
        sdir = tempfile.mkdtemp(prefix="gw-scratch-slurm-")
        self.addCleanup(shutil.rmtree, sdir, True)
        env = {"PATH": os.path.abspath(FAKES) + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
               "SLURM_CONF": os.path.join(sdir, "slurm.conf")}
        with Daemon(gpus=1, extra=("--backend", "slurm"), env=env) as d:
            d.start()
            self.assertIn("scratch: the nodes have no scratch folder (the admin must set scratch_dir", self.refusal(d))
        nodes = os.path.join(sdir, "scratch")
        with Daemon(gpus=1, extra=("--backend", "slurm"), env=env,
                    config=f"scratch_dir = {nodes}\nscratch_interval = 7\ncache_sources = {sdir}\n"
                           f"stage_socket = {sdir}/stage.sock\n") as d:
            d.start()
            jid = d.submit("--scratch", "--dataset", sdir, "--", "echo", "a b")
            argv_file = os.path.join(sdir, "sbatch.1")
            wait_until(lambda: os.path.exists(argv_file), what="sbatch called")
            with open(argv_file) as f:
                wrap = [a for a in f.read().splitlines() if a.startswith("--wrap=")]
            gwd = os.path.join(gwtest.BUILD, "gpuwardd")
            # The nodes' scratch_dir is 1777: a name with a random part, which no user can
            # take ahead of the job (JOB-ATTEMPT is predictable: job ids come in order).
            self.assertEqual(len(wrap), 1, wrap)
            folder = re.search(r"'--scratch-run' '([^']*)'", wrap[0]).group(1)
            self.assertRegex(folder, rf"^{re.escape(nodes)}/{jid}-1-[0-9a-f]{{12}}$")
            self.assertEqual(wrap, [f"--wrap=exec '{gwd}' '--scratch-run' '{folder}' '7' '-' '{gwd}' "
                                    f"'--stage-run' '{sdir}/stage.sock' '{sdir}' 'echo' 'a b'"])
            self.assertFalse(os.path.exists(nodes), "the nodes' folder, not made on the controller")
            self.assertIn(f"attempt 1 works in {folder} on the node Slurm picks, made there by the job's "
                          "step", scratch_msgs(d.job(jid)))

class SlurmToldTest(unittest.TestCase):
    """On a cluster the step's lines in the job's output are read back into events, a copy only
    as the controller finds it in the shared folder (fake Slurm: the test writes the output)."""

    def test_a_copy_is_told_as_found_in_the_shared_folder(self):
        sdir = tempfile.mkdtemp(prefix="gw-scratch-told-")
        self.addCleanup(shutil.rmtree, sdir, True)
        env = {"PATH": os.path.abspath(FAKES) + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
               "SLURM_CONF": os.path.join(sdir, "slurm.conf")}

        def squeue(line):  # a job missing from squeue is lost: there from the start
            with open(os.path.join(sdir, "squeue.tmp"), "w") as f:
                f.write(line + "\n")
            os.rename(os.path.join(sdir, "squeue.tmp"), os.path.join(sdir, "squeue.out"))
        squeue("1|PENDING|0||None")
        with Daemon(gpus=1, extra=("--backend", "slurm"), env=env,
                    config=f"scratch_dir = {sdir}/nodes\nscratch_interval = 1\n") as d:
            d.start()
            out = os.path.join(d.work, "job.out")
            jid = d.submit("--scratch", "--output", out, "--cwd", d.work, "--", "true")
            squeue("1|RUNNING|0|n1|None")
            wait_until(lambda: any("RUNNING on n1" in e["message"] for e in events_of(d.job(jid), "slurm")),
                       what="the job running on n1")
            write(os.path.join(d.work, "runs", "r", "weights", "last.pt"), checkpoint(2))  # 3 epochs done
            w = d.work
            folder = d.job(jid)["scratch"]["dir"]
            with open(out, "a") as f:
                # What the line says is not what is told: the file in the shared folder is.
                f.write(f"  1/4 [00:00<00:00, 19.4it/s]\rgpuward: scratch: copied runs/r/weights/last.pt (epoch 99) "
                        f"back to {w}\n"
                        f"gpuward: scratch: copied runs/r/weights/gone.pt (epoch 1) back to {w}\n"
                        f"gpuward: scratch: copied ../../etc/x.pt (epoch 1) back to {w}\n"
                        f"gpuward: scratch: copied runs/r/notes.txt (1 B) back to {w}\n"
                        f"gpuward: scratch: synced back to {w}: 3 files, 1 KiB; removed {folder}\n")
            wait_until(lambda: any("synced back" in m for m in scratch_msgs(d.job(jid))), what="the sync told")
            msgs = scratch_msgs(d.job(jid))
            self.assertEqual(msgs[1:], [f"copied runs/r/weights/last.pt (epoch 3) back to {w}",
                                        f"its step on the node says: synced back to {w}: 3 files, 1 KiB; removed "
                                        f"{folder}"])
            with open(out, "a") as f:  # the same copy again, as a later look finds it: told once
                f.write(f"gpuward: scratch: copied runs/r/weights/last.pt (epoch 3) back to {w}\n"
                        f"gpuward: scratch: copied runs/r/results.csv (12 B) back to {w}\n")
            write(os.path.join(d.work, "runs", "r", "results.csv"), b"epoch,loss\n1,0.9\n")
            wait_until(lambda: any("results.csv" in m for m in scratch_msgs(d.job(jid))), what="results.csv told")
            self.assertEqual(scratch_msgs(d.job(jid))[3:], [f"copied runs/r/results.csv (17 B) back to {w}"])
            squeue("1|COMPLETED|0|n1|None")
            d.wait_state(jid, "COMPLETED")


if __name__ == "__main__":
    gwtest.main()

"""A job's --dataset on a real two-node Slurm cluster (tests/cluster/slurmcluster.py): the
batch script of a job submitted with --dataset asks the agent of the node Slurm picked
(`gpuwardd --agent --cache-dir`) for the copy, prints its progress into the job's output and
runs the command with GPUWARD_DATASET_DIR; the agent copies as the job's user, serves the
next job on that node from its cache, copies only what changed in a changed source, evicts
the least recently used entry nobody uses when --cache-size is reached, refuses a user who may
not read the source, and tells the controller how long each job held its GPUs for it, which
`gpuward show` reports in GPU-seconds.  Needs root, network namespaces, slurm-wlm and munge; exits 77 (skipped) with
the reason where they are missing."""
import json
import os
import re
import socket
import sys
import unittest

import slurmcluster
from slurmcluster import gwtest
from test_cluster_agents import Agents, AgentTokens

WHY_NOT = slurmcluster.why_not_here()

FILES, FILE_BYTES = 40, 256 << 10   # the dataset: 40 files of 256 KiB (10.5 MB)
CACHE_SIZE = "16M"                  # the nodes' caches: room for one such dataset, not two
# The job lists its copy and reads one file of it, then stays a moment so that the agent's
# record reaches the controller while the job runs.
JOB = 'echo "dir=$GPUWARD_DATASET_DIR"; ls "$GPUWARD_DATASET_DIR" | wc -l; cat "$GPUWARD_DATASET_DIR/f0.txt"; sleep 2'


def events(job, kind):
    return [e["message"] for e in job["events"] if e["kind"] == kind]


@unittest.skipIf(WHY_NOT, f"no Slurm cluster here: {WHY_NOT}")
class ClusterDataset(unittest.TestCase):
    def test_staged_on_the_node_slurm_picked(self):
        users = gwtest.Users(prefix="gwcd")
        try:
            owner, other = users.add("own"), users.add("oth")
            with slurmcluster.SlurmCluster(nodes=2, gpus=2) as c, \
                    gwtest.Daemon(gpus=2, extra=["--backend", "slurm", "--listen", f"{c.ctl_addr}:0"],
                                  env={"SLURM_CONF": c.conf}) as d:
                src = os.path.join(d.dir, "nfs")
                sock = os.path.join(d.dir, "run", "stage-%n.sock")
                # The nodes' scratch_dir (a --scratch job's folder, made by its step), 1777.
                scratch = os.path.join(d.dir, "node-scratch")
                os.makedirs(scratch)
                os.chmod(scratch, 0o1777)
                d.config = f"cache_sources = {src}\nstage_socket = {sock}\nscratch_dir = {scratch}\n"
                d.start()
                agents = Agents(c, d, AgentTokens(d), extra=lambda n: [
                    "--cache-dir", os.path.join(d.dir, f"cache-{n}"), "--cache-sources", src,
                    "--cache-size", CACHE_SIZE, "--stage-socket", sock])
                try:
                    self.run_jobs(c, d, agents, src, owner, other)
                except BaseException:
                    for n in c.nodes:
                        print(f"--- agent {n}:\n{agents.log(n)[-5000:]}", file=sys.stderr)
                    print(d.daemon_log()[-10000:], file=sys.stderr)
                    raise
                finally:
                    agents.stop_all()
        finally:
            users.remove_all()

    def run_jobs(self, c, d, agents, src, owner, other):
        n1, n2 = c.nodes
        for n in c.nodes:
            agents.start(n)
        # Both jobs on one node: the other one is drained (Slurm places nothing there).
        c.cmd("scontrol", "update", f"NodeName={n2}", "State=DRAIN", "Reason=gpuward-test")
        ds = os.path.join(src, "coco")
        os.makedirs(ds)
        for i in range(FILES):
            with open(os.path.join(ds, f"f{i}.txt"), "wb") as f:
                f.write(f"file {i}\n".encode().ljust(FILE_BYTES, b"."))
        for p in [d.dir, src, ds] + [os.path.join(ds, f) for f in os.listdir(ds)]:
            os.chown(p, owner.pw_uid, owner.pw_gid) if p != d.dir else None
        os.chmod(os.path.join(ds, "f0.txt"), 0o600)   # the owner's only
        out = os.path.join(d.work, "out")
        os.makedirs(out)
        os.chmod(out, 0o1777)
        gwtest.wait_until(lambda: all(os.path.exists(sock) for sock in
                                      (os.path.join(d.dir, "run", f"stage-{n}.sock") for n in c.nodes)),
                          20, what="each agent's staging socket")

        # What a step may ask is checked: under the node's cache_sources, no "..".
        def ask(text):
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(10)
                s.connect(os.path.join(d.dir, "run", f"stage-{n1}.sock"))
                s.sendall(text.encode() + b"\n")
                return s.makefile().readline().strip()
        self.assertEqual(ask("STAGE /etc"), f"ERR data dataset: /etc is not under this node's cache_sources ({src})")
        self.assertEqual(ask(f"STAGE {src}/../etc"), "ERR data dataset: a path with '..' in it is not asked for")
        self.assertEqual(ask("FETCH /etc"), "ERR data the request is not 'STAGE /absolute/path'")

        def run(user, name, state, dataset=ds):
            jid = d.submit("--gpus", "1", "--time", "10m", "--retries", "1", "--dataset", dataset, "--output",
                           f"{out}/{name}.out", "--", "sh", "-c", JOB, user=user.pw_uid)
            j = d.wait_state(jid, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}, timeout=90)
            with open(os.path.join(out, f"{name}.out")) as f:
                text = f.read()
            self.assertEqual(j["state"], state, text)
            return jid, j, text

        # The first copy: progress in the job's output, then the command with its copy.
        first, j, text = run(owner, "first", "COMPLETED")
        self.assertRegex(text, rf"staging dataset: [\d.]+ of {FILES * FILE_BYTES / 1e6:.1f} MB, 100%")
        self.assertIn(f"dir={os.path.join(d.dir, f'cache-{n1}')}/entries/", text)
        self.assertIn(f"\n{FILES}\nfile 0\n", text)
        gw = gwtest.wait_until(lambda: events(d.job(first), "dataset"), 20, what="the staging record")
        m = re.fullmatch(rf"dataset staged on {n1} in ([\d.]+) s while holding 1 GPU: ([\d.]+) GPU-seconds", gw[0])
        self.assertIsNotNone(m, gw)
        self.assertEqual(m.group(1), m.group(2))
        self.assertIn(gw[0], d.cli("show", first).stdout)
        print(f"\nfirst copy of {FILES} files, {FILES * FILE_BYTES / 1e6:.1f} MB: {m.group(1)} s", file=sys.stderr)

        # The second on the same node: the cache serves it (the source walked as its user, all
        # linked): no second copy.
        second, j, text = run(owner, "second", "COMPLETED")
        self.assertIn(f"\n{FILES}\nfile 0\n", text)
        gw = gwtest.wait_until(lambda: events(d.job(second), "dataset"), 20, what="the second staging record")
        self.assertRegex(gw[0], rf"dataset staged on {n1} in [\d.]+ s while holding 1 GPU: .*cached copy served")
        print(f"warm hit: {gw[0]}", file=sys.stderr)
        # --scratch with --dataset: one batch script runs both steps, the scratch one outermost,
        # and what the command leaves in its folder is synced back to its directory.
        both = os.path.join(out, "both")
        os.makedirs(both)
        os.chown(both, owner.pw_uid, owner.pw_gid)
        jid = d.submit("--gpus", "1", "--time", "10m", "--dataset", ds, "--scratch", "--cwd", both, "--output",
                       f"{out}/both.out", "--", "sh", "-c",
                       'ls "$GPUWARD_DATASET_DIR" | wc -l; echo "from $GPUWARD_SCRATCH" > "$GPUWARD_SCRATCH/note.txt"',
                       user=owner.pw_uid)
        j = d.wait_state(jid, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}, timeout=90)
        with open(os.path.join(out, "both.out")) as f:
            text = f.read()
        self.assertEqual(j["state"], "COMPLETED", text)
        found = re.search(r"gpuward: scratch: (\S+) is this attempt's folder \(GPUWARD_SCRATCH\)\n", text)
        folder = found.group(1) if found else ""
        self.assertRegex(folder, rf"^{re.escape(os.path.join(d.dir, 'node-scratch'))}/{jid}-1-[0-9a-f]{{12}}$", text)
        self.assertIn(f"\n{FILES}\n", text)
        self.assertIn(f"gpuward: scratch: synced back to {both}: 1 files, ", text)
        with open(os.path.join(both, "note.txt")) as f:
            self.assertEqual(f.read(), f"from {folder}\n")
        self.assertEqual(os.stat(os.path.join(both, "note.txt")).st_uid, owner.pw_uid)
        self.assertFalse(os.path.exists(folder))

        versions = os.listdir(os.path.join(d.dir, f"cache-{n1}", "entries", os.listdir(
            os.path.join(d.dir, f"cache-{n1}", "entries"))[0]))
        self.assertEqual(sorted(v for v in versions if v.startswith("v")), ["v1"], "one copy")
        self.assertIn("unchanged: the cached copy serves", agents.log(n1))

        # Another user may not read f0.txt: refused with the reason, the job fails (exit 65).
        theirs, j, text = run(other, "other", "FAILED")
        self.assertIn(f"could not be staged on this node: dataset {ds}: cannot read {ds}/f0.txt: "
                      "Permission denied", text)
        self.assertNotIn("dir=", text)
        self.assertEqual(j["exit_code"], 65)
        gw = gwtest.wait_until(lambda: events(d.job(theirs), "dataset"), 20, what="the failed staging record")
        self.assertRegex(gw[0], rf"dataset staging failed on {n1} in [\d.]+ s while holding 1 GPU")

        # A changed source: a new version on the node, only the changed file copied.
        with open(os.path.join(ds, "f1.txt"), "r+b") as f:
            f.write(b"FILE 1")
        changed, j, text = run(owner, "changed", "COMPLETED")
        self.assertRegex(agents.log(n1), rf"stager: {re.escape(ds)} ready for Slurm job \d+ \(new version, "
                                         rf"{FILE_BYTES} bytes copied\)")
        # Another dataset that fits only without the first: the first, in use by nobody, is evicted.
        other_ds = os.path.join(src, "voc")
        os.makedirs(other_ds)
        for i in range(FILES):
            with open(os.path.join(other_ds, f"f{i}.txt"), "wb") as f:
                f.write(f"voc {i}\n".encode().ljust(FILE_BYTES, b"."))
        for p in [other_ds] + [os.path.join(other_ds, f) for f in os.listdir(other_ds)]:
            os.chown(p, owner.pw_uid, owner.pw_gid)
        jid = d.submit("--gpus", "1", "--time", "10m", "--dataset", other_ds, "--output", f"{out}/voc.out",
                       "--", "sh", "-c", 'cat "$GPUWARD_DATASET_DIR/f0.txt"', user=owner.pw_uid)
        j = d.wait_state(jid, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}, timeout=90)
        with open(os.path.join(out, "voc.out")) as f:
            self.assertEqual(j["state"], "COMPLETED", f.read())
        self.assertRegex(agents.log(n1), rf"cache: evicting {re.escape(ds)} \(\d+ bytes, least recently used\)")

        # A dataset larger than any node's cache: the node's trouble, not the dataset's (lost, and
        # tried on the other node), told as such.
        c.cmd("scontrol", "update", f"NodeName={n2}", "State=RESUME")
        big = os.path.join(src, "big")
        os.makedirs(big)
        for i in range(70):  # 17.9 MB, over the 16 MiB of each cache
            with open(os.path.join(big, f"f{i}.bin"), "wb") as f:
                f.truncate(FILE_BYTES)
        for p in [big] + [os.path.join(big, f) for f in os.listdir(big)]:
            os.chown(p, owner.pw_uid, owner.pw_gid)
        _, j, text = run(owner, "big", "FAILED", dataset=big)
        self.assertRegex(text, rf"gpuward: node step failed: dataset {re.escape(big)} could not be staged on this "
                               rf"node: dataset {re.escape(big)}: out of space: it needs [\d.]+ MB and cache_size is ")
        self.assertEqual([a["class"] for a in j["attempts"]], ["lost", "lost"], j["attempts"])
        self.assertEqual(sorted(a["node"] for a in j["attempts"]), sorted(c.nodes), "the retry went to the other node")

        # No agent on either node: each attempt is the node's failure (lost), retried off it.
        agents.stop_all()
        lost, j, text = run(owner, "lost", "FAILED")
        self.assertIn("gpuward: node step failed: no dataset stager listening at ", text)
        self.assertEqual([a["class"] for a in j["attempts"]], ["lost", "lost"], j["attempts"])
        where = [re.search(r"node (\S+): no dataset stager listening at ", a["evidence"])
                 for a in j["attempts"]]
        self.assertTrue(all(where), j["attempts"])
        self.assertEqual(sorted(m.group(1) for m in where), sorted(c.nodes), "the retry went to the other node")
        self.assertIn(f"node {where[0].group(1)} excluded from the next attempts",
                      " ".join(events(j, "slurm")))


if __name__ == "__main__":
    if WHY_NOT:
        print(f"skipped: no Slurm cluster here: {WHY_NOT}")
        sys.exit(77)
    unittest.main(verbosity=2)

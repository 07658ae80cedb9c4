"""The node agent's sweep of the scratch folders that dead steps left (gpuwardd --agent
--scratch-dir), without a cluster: the agent runs on its own (no controller answers it), and a
step is any process whose command line has `--scratch-run FOLDER`, as a real step's has from
its exec.  Only a folder of an attempt's name, a real directory, whose step is gone is removed;
a link of such a name, its target, another name and a live step's folder stay."""
import os
import sys
import tempfile
import unittest

from gwtest import IS_ROOT, LoneAgent, main, wait_until

NOBODY = 65534


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


@unittest.skipUnless(IS_ROOT, "the agent empties each folder as its owner: needs root to own them as another user")
class ScratchSweepTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gw-sweep-")
        os.chmod(self.dir, 0o755)
        self.scratch = os.path.join(self.dir, "scratch")
        os.mkdir(self.scratch)
        os.chmod(self.scratch, 0o1777)
        self.lone = LoneAgent(self.dir)
        self.addCleanup(self.lone.close)

    def start_agent(self):
        self.agent = self.lone.start(["--scratch-dir", self.scratch])

    def stop_agent(self):
        self.lone.stop()
        self.agent = None

    def log(self):
        return self.lone.log()

    def folder(self, name, files=2):
        """A step's folder with a subfolder and files, all nobody's, as a step makes it."""
        path = os.path.join(self.scratch, name)
        os.makedirs(os.path.join(path, "runs", "weights"))
        for i in range(files):
            with open(os.path.join(path, "runs", "weights", f"e{i}.pt"), "wb") as f:
                f.write(b"x" * 1000)
        for root, dirs, names in os.walk(path):
            for n in [root] + [os.path.join(root, x) for x in dirs + names]:
                os.lchown(n, NOBODY, NOBODY)
        os.chmod(path, 0o700)
        return path

    def removed_line(self, path):
        return f"scratch: removed {path} (uid {NOBODY}): no step of it runs on this node"

    def test_only_dead_steps_folders_go(self):
        dead = self.folder("5-1-0123456789ab")
        live = self.folder("6-1-abcdefabcdef")
        notes = self.folder("notes")
        outside = os.path.join(self.dir, "outside")
        os.mkdir(outside)
        with open(os.path.join(outside, "keep.txt"), "w") as f:
            f.write("mine\n")
        # A dead folder holding a folder of root's that nobody may empty: as its owner, the
        # sweep cannot remove it, and says so.
        guarded = self.folder("8-2")
        os.mkdir(os.path.join(guarded, "roots"), 0o755)
        with open(os.path.join(guarded, "roots", "f"), "w") as f:
            f.write("root's\n")
        link = os.path.join(self.scratch, "7-1-0123456789ab")
        os.symlink(outside, link)
        step = self.lone.spawn([sys.executable, "-c", "import time; time.sleep(3600)", "--scratch-run", live])
        # Its command line is set at its exec, before the sweep lists the folder.
        wait_until(lambda: b"--scratch-run" in cmdline(step.pid), what="the step's command line")

        self.start_agent()
        wait_until(lambda: "scratch: removed" in self.log() or self.agent.poll() is not None,
                   what="the agent's first sweep")
        self.assertIsNone(self.agent.poll(), self.log())
        self.assertIn(self.removed_line(dead), self.log())
        self.assertFalse(os.path.lexists(dead))
        self.assertTrue(os.path.isfile(os.path.join(live, "runs", "weights", "e1.pt")), "a live step's folder stays")
        self.assertTrue(os.path.isfile(os.path.join(notes, "runs", "weights", "e0.pt")), "another name stays")
        self.assertTrue(os.path.islink(link), "a link of a step's name stays")
        with open(os.path.join(outside, "keep.txt")) as f:
            self.assertEqual(f.read(), "mine\n", "the link's target is not followed")
        self.assertNotIn(live, self.log())
        self.assertIn(f"scratch: cannot remove {guarded} (uid {NOBODY}): Directory not empty (what its owner may not "
                      f"remove stays)", self.log())
        self.assertTrue(os.path.isfile(os.path.join(guarded, "roots", "f")))
        self.assertFalse(os.path.exists(os.path.join(guarded, "runs")), "emptied as far as its owner may")
        self.assertNotIn(link, self.log())

        # The step ends; the next sweep is the restarted agent's first.
        step.kill()
        step.wait(10)
        self.stop_agent()
        self.start_agent()
        wait_until(lambda: self.removed_line(live) in self.log() or self.agent.poll() is not None,
                   what="the second folder swept once its step is gone")
        self.assertIsNone(self.agent.poll(), self.log())
        self.assertFalse(os.path.lexists(live))
        self.assertTrue(os.path.isdir(notes))
        self.assertTrue(os.path.islink(link))
        self.assertTrue(os.path.isfile(os.path.join(outside, "keep.txt")))
        self.assertEqual(sorted(os.listdir(self.scratch)), ["7-1-0123456789ab", "8-2", "notes"])


if __name__ == "__main__":
    main()

"""The node agent's dataset stager (gpuwardd --agent --cache-dir) across the agent's restart,
without a cluster: the agent runs on its own (no controller answers it, so its snapshots fail
and its stager still serves) and a step's request is made on its socket as
`gpuwardd --stage-run` makes it.  A restarted agent has lost the steps' connections; it keeps
the pin of a process that still reads its copy (so the copy is neither evicted nor trashed)
until that process ends, and each entry's last use (LRU order) and users."""
import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import tempfile
import unittest

from gwtest import LoneAgent, main, pid_alive, wait_until

# A step that asked and got its copy, then keeps the connection open while it lives, as the
# command --stage-run execs does; it prints the stager's answer and closes its stdout (within
# its socket's timeout, so the test's read of it ends).
HOLDER = r"""
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(30)
s.connect(sys.argv[1])
s.sendall(("STAGE %s\n" % sys.argv[2]).encode())
buf = b""
while not any(l.startswith((b"OK ", b"ERR ")) for l in buf.split(b"\n")[:-1]):
    c = s.recv(4096)
    if not c:
        break
    buf += c
sys.stdout.write(buf.decode())
sys.stdout.flush()
os.close(1)
time.sleep(3600)
"""


class NodeStagerRestartTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gw-stager-")
        os.chmod(self.dir, 0o755)
        self.src = os.path.join(self.dir, "nfs")
        self.cache = os.path.join(self.dir, "cache")
        self.sock = os.path.join(self.dir, "run", "stage.sock")
        self.lone = LoneAgent(self.dir)
        self.agent = None
        self.addCleanup(self.lone.close, self.stop_agent)

    def start_agent(self):
        # 1M: the least --cache-size takes; two of the datasets below fit, not three.
        self.agent = self.lone.start(["--cache-dir", self.cache, "--cache-size", "1M", "--cache-sources", self.src,
                                      "--stage-socket", self.sock])
        # The socket's file comes with bind(2), before listen(2): connected to, it is ready.
        wait_until(lambda: self.connectable() or self.agent.poll() is not None, what="the stager's socket")
        self.assertIsNone(self.agent.poll(), self.log())

    def connectable(self):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(self.sock)
                return True
            except OSError:
                return False

    def stop_agent(self):
        """SIGTERM to the agent, which stops its stager: every step's connection goes."""
        self.lone.stop()
        self.agent = None
        wait_until(lambda: not os.path.exists(self.sock), what="the stager's socket gone")

    def log(self):
        return self.lone.log()

    def dataset(self, name, kb):
        root = os.path.join(self.src, name)
        os.makedirs(root)
        for i in range(2):
            with open(os.path.join(root, f"f{i}.bin"), "wb") as f:
                f.write(bytes([65 + i]) * (kb * 500))
        return root

    def ask(self, path):
        """The stager's answer to one request ("OK DIR" or "ERR ..."); the connection is closed
        after it, so nothing stays pinned."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(self.sock)
            s.sendall(f"STAGE {path}\n".encode())
            buf = b""
            while True:
                lines = [l for l in buf.split(b"\n")[:-1] if l.startswith((b"OK ", b"ERR "))]
                if lines:
                    return lines[0].decode()
                c = s.recv(4096)
                if not c:
                    return buf.decode()
                buf += c

    def hold(self, path):
        """(process, data dir) of a step that got path's copy and keeps its connection."""
        h = self.lone.spawn([sys.executable, "-c", HOLDER, self.sock, path], stdout=subprocess.PIPE, text=True)
        with h.stdout:
            answer = h.stdout.read()
        m = re.search(r"^OK (\S+)$", answer, re.M)
        self.assertTrue(m, answer)
        return h, m.group(1)

    def use_file(self, data_dir):
        with open(os.path.join(os.path.dirname(os.path.dirname(data_dir)), "use")) as f:
            return f.read()

    def test_a_copy_read_by_a_running_step_is_kept_across_a_restart(self):
        a, b = self.dataset("a", 600), self.dataset("b", 600)
        self.start_agent()
        holder, a_dir = self.hold(a)
        self.assertIn(f"proc {holder.pid} ", self.use_file(a_dir))
        self.stop_agent()
        self.assertTrue(pid_alive(holder.pid))
        self.start_agent()
        # b fits only if a goes, and a's step still reads it: the node has no room.
        got = self.ask(b)
        self.assertRegex(got, rf"^ERR node dataset {re.escape(b)}: out of space: ", self.log())
        self.assertTrue(os.path.isfile(os.path.join(a_dir, "f0.bin")))
        self.assertIn(f"{a}: version 1 still read by process {holder.pid} (asked before the restart): kept",
                      self.log())
        # Its step ends: the agent sees the process gone within a few seconds and lets a go.
        holder.kill()
        holder.wait(10)
        wait_until(lambda: f"process {holder.pid}, which read version 1 since before the restart, is gone: "
                           f"released" in self.log(), timeout=15, what="the held pin released")
        self.assertNotIn(f"proc {holder.pid} ", self.use_file(a_dir))
        self.assertRegex(self.ask(b), r"^OK ")
        self.assertIn(f"cache: evicting {a} (", self.log())

    def test_a_data_yaml_stays_while_its_step_lives(self):
        """The rewritten data YAML of a step still connected when the agent stopped is the
        step's while it lives, and removed once it is gone, as one whose step ended."""
        root = self.dataset("y", 100)
        yaml = os.path.join(self.src, "y.yaml")
        with open(yaml, "w") as f:
            f.write(f"path: {root}\ntrain: .\nval: .\nnames:\n  0: a\n")
        self.start_agent()
        kept, kept_dir = self.hold(yaml)
        gone, _ = self.hold(yaml)
        ydir = os.path.join(self.cache, "yaml")
        mine = {h.pid: [n for n in os.listdir(ydir) if n.startswith(f"node-{h.pid}-")] for h in (kept, gone)}
        self.assertEqual([len(v) for v in mine.values()], [1, 1], os.listdir(ydir))
        self.stop_agent()
        gone.kill()
        gone.wait(10)
        self.start_agent()
        # The stager sweeps before it hears anyone: once it answers, the sweep is done.
        self.assertRegex(self.ask(root), r"^OK ")
        self.assertEqual(sorted(os.listdir(ydir)), mine[kept.pid], "the dead step's YAML is removed at the start")
        kept.kill()
        kept.wait(10)
        wait_until(lambda: not os.listdir(ydir), timeout=15, what="the live step's YAML removed once it is gone")

    def test_a_stop_at_once_stops_the_agent_and_its_stager(self):
        """SIGTERM right after the start, before the stager has its own handler: the agent
        passes the stop on, and both end (the stager once lost it, and the agent waited for
        it for ever)."""
        for _ in range(5):
            agent = self.lone.start(["--cache-dir", self.cache, "--cache-size", "1M", "--cache-sources", self.src,
                                     "--stage-socket", self.sock])
            agent.send_signal(signal.SIGTERM)
            try:
                agent.wait(10)
            except subprocess.TimeoutExpired:
                self.fail(f"the agent did not stop:\n{self.log()}")
        # Each stager stopped on its own: the agent had not to kill one it waited for.
        self.assertNotIn("did not stop", self.log())

    def test_last_use_and_users_survive_a_restart(self):
        a, c, b = self.dataset("a", 400), self.dataset("c", 400), self.dataset("b", 400)
        self.start_agent()
        a_dir = self.ask(a)[3:]
        self.assertRegex(self.ask(c), r"^OK ")
        self.assertRegex(self.ask(a), r"^OK ")  # a used again, after c: c is the least recently used
        me = pwd.getpwuid(os.geteuid()).pw_name
        self.assertIn(f"user {me}\n", self.use_file(a_dir))
        # The copies' own times say otherwise (a made an hour before c): only the use file
        # knows a was used since.
        manifest = os.path.join(os.path.dirname(a_dir), "manifest")
        old = os.stat(manifest).st_mtime - 3600
        os.utime(manifest, (old, old))
        self.stop_agent()
        self.start_agent()
        self.assertRegex(self.ask(b), r"^OK ")
        self.assertIn(f"cache: evicting {c} (", self.log())
        self.assertNotIn(f"cache: evicting {a} (", self.log())
        self.assertIn(f"user {me}\n", self.use_file(a_dir))


if __name__ == "__main__":
    main()

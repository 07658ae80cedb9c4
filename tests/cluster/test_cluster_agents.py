"""Node agents on a real two-node Slurm cluster (tests/cluster/slurmcluster.py): one
`gpuwardd --agent` per node, in the node's network namespace with fake GPUs of its own,
posts its snapshots to the controller (`gpuwardd --backend slurm`) on the bridge address
with its node's token of scope agent; `gpuward gpus` on the controller shows every node's GPUs, the Slurm
job on each GPU with its user, and a process of no Slurm job as a rogue; a silent agent's
node turns stale.  Needs root, network namespaces, slurm-wlm and munge; exits 77 (skipped)
with the reason where they are missing."""
import http.client
import json
import os
import signal
import subprocess
import sys
import unittest

import slurmcluster
from slurmcluster import gwtest

WHY_NOT = slurmcluster.why_not_here()


class AgentTokens:
    """Each node's token of scope agent (its own snapshots only), made on d when first asked for
    and written where that node's agent reads it."""

    def __init__(self, d):
        self.d, self.tokens = d, {}

    def token(self, node):
        if node not in self.tokens:
            self.tokens[node] = self.d.cli("token", "create", "--scope", "agent", "--node", node, "--name", node,
                                           "--expires", "never", "-q").stdout.strip()
            fd = os.open(self.path(node), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(self.tokens[node] + "\n")
        return self.tokens[node]

    def path(self, node):
        return os.path.join(self.d.dir, f"agent-{node}.token")


class Agents:
    """An agent per node, each with a fake NVML state directory of its own; stopped by PID."""

    def __init__(self, cluster, daemon, tokens, interval=1, extra=lambda node: []):
        """extra(node): more options for that node's agent."""
        self.c, self.d, self.tokens, self.interval, self.extra = cluster, daemon, tokens, interval, extra
        self.procs = {}
        self.nvml = {}

    def start(self, node):
        nvml = os.path.join(self.d.dir, f"nvml-{node}")
        os.makedirs(os.path.join(nvml, "procs"), exist_ok=True)
        with open(os.path.join(nvml, "config"), "w") as f:
            f.write(f"count={self.c.gpus}\n")
        self.nvml[node] = nvml
        self.tokens.token(node)
        log = open(os.path.join(self.d.dir, f"agent-{node}.log"), "ab")
        argv = ["nsenter", f"--net=/run/netns/{node}", gwtest.GPUWARDD, "--agent",
                "--controller", f"http://{self.c.ctl_addr}:{self.d.port}", "--token-file", self.tokens.path(node),
                "--node", node, "--sample-interval", str(self.interval), "--nvml-lib", gwtest.FAKE_NVML, *self.extra(node)]
        self.procs[node] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=dict(os.environ, GPUWARD_FAKE_NVML_DIR=nvml),
                                            start_new_session=True)
        log.close()

    def stop(self, node, sig=signal.SIGTERM):
        p = self.procs.pop(node, None)
        if p and p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
        return p

    def stop_all(self):
        for node in list(self.procs):
            self.stop(node)

    def log(self, node):
        with open(os.path.join(self.d.dir, f"agent-{node}.log"), errors="replace") as f:
            return f.read()

    def declare(self, node, pid, gpu, mib):
        """The fake NVML of node lists pid on GPU gpu with mib MiB."""
        path = os.path.join(self.nvml[node], "procs", str(pid))
        with open(path + ".tmp", "w") as f:
            f.write(f"{gpu} {mib} 40\n")
        os.rename(path + ".tmp", path)


@unittest.skipIf(WHY_NOT, f"no Slurm cluster here: {WHY_NOT}")
class ClusterAgents(unittest.TestCase):
    def test_every_nodes_gpus_at_the_controller(self):
        with slurmcluster.SlurmCluster(nodes=2, gpus=4) as c, \
                gwtest.Daemon(gpus=4, extra=["--backend", "slurm", "--listen", f"{c.ctl_addr}:0"],
                              env={"SLURM_CONF": c.conf}) as d:
            d.start()
            agents = Agents(c, d, AgentTokens(d))
            rogue = subprocess.Popen(["sleep", "300"])
            try:
                self.run_agents(c, d, agents, rogue)
            except BaseException:
                for n in c.nodes:
                    print(f"--- agent {n}:\n{agents.log(n)[-5000:]}", file=sys.stderr)
                print(d.daemon_log()[-10000:], file=sys.stderr)
                raise
            finally:
                agents.stop_all()
                rogue.kill()
                rogue.wait(10)

    def nodes(self, d):
        return {n["node"]: n for n in json.loads(d.cli("gpus", "--json").stdout).get("nodes", [])}

    def run_agents(self, c, d, agents, rogue):
        n1, n2 = c.nodes
        for n in c.nodes:
            agents.start(n)

        # A plain sbatch job on node 2 holds a GPU; its shell execs into the process that
        # uses the GPU, so that the fake NVML lists a process of the job's batch step.
        mark = os.path.join(c.dir, "job.pid")
        sid = c.sbatch("--gres=gpu:1", f"--nodelist={n2}", "--wrap",
                       f'echo "$CUDA_VISIBLE_DEVICES $$" > {mark}.tmp; mv {mark}.tmp {mark}; exec sleep 300')
        gwtest.wait_until(lambda: os.path.exists(mark), 60, what=f"Slurm job {sid} running")
        with open(mark) as f:
            gpu, pid = (int(x) for x in f.read().split())
        agents.declare(n2, pid, gpu, 2048)
        # A process of no Slurm job on node 1's GPU 3: a rogue.
        agents.declare(n1, rogue.pid, 3, 512)

        def seen():
            nodes = self.nodes(d)
            if sorted(nodes) != sorted(c.nodes) or any(n["stale"] for n in nodes.values()):
                return None
            jobs = [j["id"] for j in nodes[n2]["gpus"][gpu]["slurm_jobs"]]
            rogues = [p["pid"] for p in nodes[n1]["gpus"][3]["procs"] if p["rogue"]]
            return nodes if jobs == [sid] and rogues == [rogue.pid] else None
        nodes = gwtest.wait_until(seen, 30, what="both nodes' GPUs, the job on node 2 and the rogue on node 1")

        # 2 nodes x 4 GPUs, by node; the job's process attributed to its Slurm job and user.
        self.assertEqual([len(nodes[n]["gpus"]) for n in c.nodes], [4, 4])
        self.assertEqual([g["index"] for g in nodes[n1]["gpus"]], [0, 1, 2, 3])
        proc = nodes[n2]["gpus"][gpu]["procs"][0]
        self.assertEqual((proc["pid"], proc["job"], proc["step"], proc["user"], proc["rogue"]),
                         (pid, sid, "batch", "root", False))
        self.assertEqual(nodes[n2]["gpus"][gpu]["mem_used"], 2048 << 20)
        self.assertEqual((nodes[n1]["rogue_processes"], nodes[n2]["rogue_processes"]), (1, 0))
        for n in c.nodes:
            for g in nodes[n]["gpus"]:
                if (n, g["index"]) not in ((n2, gpu), (n1, 3)):
                    self.assertEqual((g["procs"], g["slurm_jobs"]), ([], []), f"{n} GPU {g['index']}")

        # The human table: 8 rows by node, the job and its user on node 2's GPU.
        out = d.cli("gpus").stdout
        rows = [line.split() for line in out.splitlines() if line.split()[:1] in ([n1], [n2])]
        self.assertEqual([(r[0], r[2]) for r in rows], [(n, str(i)) for n in (n1, n2) for i in range(4)], out)
        self.assertIn(f"{sid} (root)", [line for line in out.splitlines() if line.startswith(n2)][gpu], out)
        self.assertIn(f"! rogue pid {rogue.pid} (user root", out)

        # Bad input is refused naming the field, and kept nothing of; no token, no entry.
        token = agents.tokens.token(n1)
        bad = {"node": n1, "interval": 1, "gpus": [{"index": 0, "mem_total": 1, "health": "ok", "procs": []}]}
        status, reply = self.post(c, d, bad, token)
        self.assertEqual((status, reply.get("field")), (400, "gpus[0].name"), reply)
        status, reply = self.post(c, d, {**bad, "gpus": [], "node": "a/b"}, token)
        self.assertEqual((status, reply.get("field")), (400, "node"), reply)
        status, reply = self.post(c, d, {"node": "gwx", "interval": 1, "gpus": []}, None)
        self.assertEqual(status, 401, reply)
        # Node 1's token posts node 1's snapshots only.
        status, reply = self.post(c, d, {**bad, "gpus": [], "node": n2}, token)
        self.assertEqual((status, reply.get("field")), (403, "node"), reply)
        self.assertEqual(sorted(self.nodes(d)), sorted(c.nodes))

        # An agent that stops: its node turns stale after 3 of its intervals; the other stays.
        agents.stop(n1, signal.SIGKILL)
        nodes = gwtest.wait_until(lambda: (lambda ns: ns if ns[n1]["stale"] else None)(self.nodes(d)), 30,
                                  what=f"{n1} stale")
        self.assertFalse(nodes[n2]["stale"])
        self.assertRegex([line for line in d.cli("gpus").stdout.splitlines() if line.startswith(n1)][0],
                         rf"^{n1}\s+stale \d+s\s+0\s")
        self.assertIn("agent for node", agents.log(n2))

    @staticmethod
    def post(c, d, body, token):
        """(status, JSON reply) of a snapshot posted to the controller as an agent would."""
        conn = http.client.HTTPConnection(c.ctl_addr, d.port, timeout=10)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            conn.request("POST", "/api/v1/agent/snapshot", json.dumps(body), headers)
            r = conn.getresponse()
            return r.status, json.loads(r.read() or b"{}")
        finally:
            conn.close()

if __name__ == "__main__":
    if WHY_NOT:
        print(f"skipped: no Slurm cluster here: {WHY_NOT}")
        sys.exit(77)
    unittest.main(verbosity=2)

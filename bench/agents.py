#!/usr/bin/env python3
"""What the node agents cost: the agent on a busy node, and the controller fed by many.

1. The agent: one `gpuwardd --agent` on this host, with a fake NVML of 8 GPUs listing
   PROCS real processes on each (sleeping children of this script, so that the agent reads
   a real /proc/PID/cgroup and owner for every one), sampling once a second and posting to a
   real controller.  Its CPU is read from /proc/PID/stat (user + system ticks) over the
   measured window, after a warm-up.  That CPU includes the fake NVML's own work: it lists a
   GPU's processes by reading one file per process each sample (a real driver answers from
   memory), about as many system calls as the agent's own reading of /proc.
2. The controller: one `gpuwardd --backend slurm` fed by NODES simulated agents, each posting
   a snapshot of 8 GPUs with a few processes once a second, each post on a fresh connection
   as the agent does.  Its CPU over the window and its memory (VmRSS, VmHWM) are read the
   same way.  The senders' own CPU is not counted.

Not a test: the numbers depend on the machine.  Needs no Slurm cluster (the controller only
receives snapshots here; no job is submitted).

    python3 bench/agents.py --build build [--seconds 60] [--write docs/CLUSTER-PERF.md]
"""
import argparse
import http.client
import json
import os
import platform
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BEGIN, END = "<!-- agents:begin -->", "<!-- agents:end -->"
GPUS = 8


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)


def mem_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, val = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(val.split()[0])
    return out


def cpu_share(pid, seconds):
    """Share of one core that pid used over the next `seconds` seconds."""
    hz = os.sysconf("SC_CLK_TCK")
    t0, c0 = time.monotonic(), cpu_ticks(pid)
    time.sleep(seconds)
    t1, c1 = time.monotonic(), cpu_ticks(pid)
    return (c1 - c0) / hz / (t1 - t0)


def agent_token(d, node, path=None):
    """node's agent token (it may post that node's snapshots only), also written to path."""
    token = d.cli("token", "create", "--scope", "agent", "--node", node, "--name", node, "-q").stdout.strip()
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
    return token


def measure_agent(gwtest, procs, seconds, warmup):
    with gwtest.Daemon(gpus=GPUS, extra=["--backend", "slurm"]) as d:
        d.start()
        token_file = os.path.join(d.dir, "agent.token")
        agent_token(d, "bench1", token_file)
        nvml = os.path.join(d.dir, "nvml-agent")
        os.makedirs(os.path.join(nvml, "procs"))
        with open(os.path.join(nvml, "config"), "w") as f:
            f.write(f"count={GPUS}\n")
        sleepers = []
        agent = None
        try:
            for gpu in range(GPUS):
                for _ in range(procs):
                    p = subprocess.Popen(["sleep", "3600"])
                    sleepers.append(p)
                    with open(os.path.join(nvml, "procs", str(p.pid)), "w") as f:
                        f.write(f"{gpu} 256 40\n")
            log = open(os.path.join(d.dir, "agent.log"), "ab")
            agent = subprocess.Popen([gwtest.GPUWARDD, "--agent", "--controller", f"http://127.0.0.1:{d.port}",
                                      "--token-file", token_file, "--node", "bench1", "--sample-interval", "1",
                                      "--nvml-lib", gwtest.FAKE_NVML],
                                     stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=dict(os.environ, GPUWARD_FAKE_NVML_DIR=nvml), start_new_session=True)
            log.close()

            def seen():
                nodes = json.loads(d.cli("gpus", "--json").stdout).get("nodes", [])
                return nodes and sum(g.get("procs_total", len(g["procs"])) for g in nodes[0]["gpus"]) == GPUS * procs
            gwtest.wait_until(seen, 60, what="the agent's first full snapshot")
            time.sleep(warmup)
            share = cpu_share(agent.pid, seconds)
            mem = mem_kib(agent.pid)
            if agent.poll() is not None:
                raise RuntimeError("the agent exited during the measurement")
            return share, mem
        finally:
            if agent and agent.poll() is None:
                agent.terminate()
                agent.wait(10)
            for p in sleepers:
                p.kill()
            for p in sleepers:
                p.wait(10)


def snapshot(node, tick):
    gpus = []
    for i in range(GPUS):
        procs = [{"pid": 10000 + i * 10 + k, "mem": 1 << 30, "job": 1000 + i, "step": "batch",
                  "uid": 1000, "user": "alice"} for k in range(2)]
        gpus.append({"index": i, "name": "NVIDIA A100-SXM4-80GB", "uuid": f"GPU-{node}-{i:02d}",
                     "mem_total": 80 << 30, "mem_used": (2 << 30) + tick % 1024, "util": (tick + i) % 100,
                     "health": "ok", "procs": procs, "procs_total": len(procs)})
    return json.dumps({"node": node, "interval": 1, "driver": "550.54.15", "gpus": gpus}).encode()


def feed(port, token, node, stop, errors):
    tick = 0
    next_at = time.monotonic()
    while not stop.is_set():
        body = snapshot(node, tick)
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("POST", "/api/v1/agent/snapshot", body,
                      {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            c.close()
            if r.status >= 300:
                errors.append(f"{node}: HTTP {r.status}")
        except OSError as e:
            errors.append(f"{node}: {e}")
        tick += 1
        next_at += 1.0
        stop.wait(max(0.0, next_at - time.monotonic()))


def measure_controller(gwtest, nodes, seconds, warmup):
    with gwtest.Daemon(gpus=GPUS, extra=["--backend", "slurm"]) as d:
        d.start()
        names = [f"node{n:03d}" for n in range(nodes)]
        tokens = {name: agent_token(d, name) for name in names}
        base = mem_kib(d.proc.pid)
        stop, errors = threading.Event(), []
        senders = [threading.Thread(target=feed, args=(d.port, tokens[name], name, stop, errors), daemon=True)
                   for name in names]
        for i, t in enumerate(senders):
            t.start()
            time.sleep(1.0 / nodes)  # spread the posts over the second, as real agents drift apart
        try:
            gwtest.wait_until(lambda: len(json.loads(d.cli("gpus", "--json").stdout).get("nodes", [])) == nodes,
                              30, what="every simulated node at the controller")
            time.sleep(warmup)
            share = cpu_share(d.proc.pid, seconds)
            mem = mem_kib(d.proc.pid)
        finally:
            stop.set()
            for t in senders:
                t.join(10)
        if errors:
            raise RuntimeError(f"{len(errors)} posts failed, first: {errors[0]}")
        return share, base, mem


def render(args, agent, ctl):
    share_c, base_c, mem_c = ctl
    when = time.strftime("%Y-%m-%d")
    load = os.getloadavg()[0]
    return "\n".join([
        BEGIN,
        f"Measured {when} on this machine ({os.cpu_count()} cores, Linux {platform.release()}), "
        f"{args.seconds} s windows after {args.warmup} s of warm-up, load average {load:.1f} at the end.  Command: "
        f"`python3 bench/agents.py --build build --seconds {args.seconds} --write docs/CLUSTER-PERF.md`.",
        "",
        "| what | load | CPU, share of one core | memory |",
        "|---|---|---|---|",
        *[f"| the agent (`gpuwardd --agent`) | {GPUS} GPUs x {n} processes each ({GPUS * n} in all), 1 sample/s | "
          f"{share * 100:.2f}% | RSS {mem['VmRSS'] / 1024:.1f} MiB |" for n, (share, mem) in agent],
        f"| the controller (`gpuwardd --backend slurm`) | {args.nodes} agents x {GPUS} GPUs, 1 snapshot/s each | "
        f"{share_c * 100:.2f}% | RSS {mem_c['VmRSS'] / 1024:.1f} MiB (peak {mem_c['VmHWM'] / 1024:.1f}; "
        f"{base_c['VmRSS'] / 1024:.1f} before the first snapshot) |",
        END,
    ])


def write_block(path, block):
    text = open(path).read() if os.path.exists(path) else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n## What the node agents cost\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--seconds", type=int, default=60, help="length of each measured window")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--procs", type=int, nargs="+", default=[8, 64],
                    help="processes on each of the agent's 8 GPUs, one measurement per number")
    ap.add_argument("--nodes", type=int, default=64, help="simulated agents feeding the controller")
    ap.add_argument("--write", help="replace the agents block of this Markdown file")
    args = ap.parse_args()
    os.environ["GW_BUILD_DIR"] = os.path.abspath(args.build)
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
    import gwtest
    agent = [(n, measure_agent(gwtest, n, args.seconds, args.warmup)) for n in args.procs]
    ctl = measure_controller(gwtest, args.nodes, args.seconds, args.warmup)
    block = render(args, agent, ctl)
    print(block)
    if args.write:
        write_block(args.write, block)


if __name__ == "__main__":
    main()

"""A real Slurm cluster on one host, for the cluster tests (Debian 12, Slurm 22.05, root).

Each node is a network namespace of its own, joined to a bridge on the host by a veth; the
bridge holds the controller's address, the namespaces the nodes' addresses, all in one
private /24 that nothing else on the host uses, with no route out. One munged (its own key
and socket), one slurmctld on the host, one slurmd per node started inside its namespace with
`nsenter --net=` (`ip netns exec` remounts /sys, which hides the cgroup v1 mounts slurmd
needs). Each node has fake GPUs: character devices with the numbers of /dev/null, which is
what Slurm's gres/gpu plugin accepts (plain files are refused).

Names (namespaces, bridge, veths, Slurm node names, the cluster name) carry a per-run tag,
so two runs on one host do not collide; slurmctld listens on a port picked free.

    with SlurmCluster(nodes=2, gpus=4) as c:
        jid = c.sbatch("--gres=gpu:1", "--wrap", "sleep 30")
        c.squeue()

Everything started is stopped by PID, and the namespaces, bridge, veths and the nodes' cgroup
directories are removed, with bounded waits, when the `with` block ends however it ends.
"""

import contextlib
import ipaddress
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import gwtest  # noqa: E402  (the tests drive gpuwardd with it: `from slurmcluster import gwtest`)

CGROUP_V1 = "/sys/fs/cgroup"
STOP_WAIT = 10.0     # seconds a daemon gets after SIGTERM before SIGKILL


def why_not_here():
    """Why a cluster test of gpuwardd cannot run here (no cluster, or no gpuwardd built), or None."""
    return missing_prerequisites() or (
        None if os.access(gwtest.GPUWARDD, os.X_OK) else f"{gwtest.GPUWARDD} not built (set GW_BUILD_DIR)")


def missing_prerequisites():
    """Why a cluster cannot be made here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, mknod, slurmd)"
    for tool in ("ip", "nsenter", "munged", "slurmctld", "slurmd", "sbatch", "squeue"):
        if not shutil.which(tool):
            return f"{tool} not installed (apt-get install slurm-wlm munge iproute2)"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return "no user munge (apt-get install munge)"
    if not os.path.isdir(os.path.join(CGROUP_V1, "freezer")):
        return "no cgroup v1 freezer hierarchy (the harness uses proctrack/cgroup on cgroup v1)"
    tag = "gwprobe" + secrets.token_hex(3)
    r = subprocess.run(["ip", "netns", "add", tag], capture_output=True, text=True)
    if r.returncode != 0:
        return "cannot make a network namespace: " + r.stderr.strip()
    subprocess.run(["ip", "netns", "delete", tag], capture_output=True)
    return None


def _run(*argv, check=True, env=None, timeout=30):
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def _wait_until(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def _free_port():
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def _free_subnet():
    """A 10.x.y.0/24 that no address on the host falls in and no specific route reaches (a
    /16 or longer: a broad VPN route to 10.0.0.0/8 would rule out everything)."""
    used = []
    for line in _run("ip", "-o", "-4", "addr", "show").stdout.splitlines():
        parts = line.split()
        if "inet" in parts:
            used.append(ipaddress.ip_interface(parts[parts.index("inet") + 1]).network)
    for line in _run("ip", "-4", "route", "show").stdout.splitlines():
        dest = line.split()[0]
        if dest != "default":
            net = ipaddress.ip_network(dest, strict=False)
            if net.prefixlen >= 16:
                used.append(net)
    for _ in range(100):
        net = ipaddress.ip_network(f"10.{secrets.randbelow(200) + 50}.{secrets.randbelow(250)}.0/24")
        if not any(net.overlaps(u) for u in used):
            return net
    raise RuntimeError("no free 10.x.y.0/24 found for the cluster's bridge")


class SlurmCluster:
    def __init__(self, nodes=2, gpus=4, cpus=2, oversubscribe=4, keep_dir=False, slurmd_timeout=None,
                 gpu_types=None):
        """slurmd_timeout: SlurmdTimeout, the seconds before slurmctld marks a silent node DOWN
        and ends its jobs NODE_FAIL (Slurm's default is 300).
        gpu_types: {node index: [(TYPE, COUNT), ...]}: that node's GPUs are typed, as gres.conf's
        Type= (and slurm.conf's Gres=gpu:TYPE:COUNT) declare them, e.g. MIG slices as
        AutoDetect=nvml names them, [("a100_1g.10gb", 7)]; a node not listed has `gpus` GPUs of
        no type."""
        self.n_nodes, self.gpus, self.cpus = nodes, gpus, cpus
        self.gpu_types = gpu_types or {}
        self.slurmd_timeout = slurmd_timeout
        self.oversubscribe = oversubscribe
        self.keep_dir = keep_dir
        self.tag = secrets.token_hex(3)
        self.nodes = [f"gw{self.tag}n{i + 1}" for i in range(nodes)]
        self.bridge = f"gw{self.tag}br"
        self.procs = []           # (name, Popen), started in order, stopped in reverse
        self.netns = []
        self.veths = []
        self.dir = None
        self.bridge_up = False

    # -- set-up ---------------------------------------------------------------------------
    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        self.dir = tempfile.mkdtemp(prefix=f"gwslurm-{self.tag}-")
        os.chmod(self.dir, 0o755)   # munged (user munge) must reach its key and socket
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.net = _free_subnet()
        hosts = list(self.net.hosts())
        self.ctl_addr = str(hosts[0])
        self.node_addr = {n: str(hosts[i + 1]) for i, n in enumerate(self.nodes)}
        self._make_network()
        self._make_gpus()
        self._write_config()
        self._start_munged()
        self._start("slurmctld", ["slurmctld", "-D", "-i", "-f", self.conf])
        for n in self.nodes:
            self._start(f"slurmd {n}", ["nsenter", f"--net=/run/netns/{n}",
                                        "slurmd", "-D", "-f", self.conf, "-N", n])
        self.wait_nodes_idle()

    def _make_network(self):
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        self.bridge_up = True
        _run("ip", "addr", "add", f"{self.ctl_addr}/{self.net.prefixlen}", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        for i, n in enumerate(self.nodes):
            _run("ip", "netns", "add", n)
            self.netns.append(n)
            host_end, node_end = f"gw{self.tag}v{i + 1}", f"gw{self.tag}p{i + 1}"
            _run("ip", "link", "add", host_end, "type", "veth", "peer", "name", node_end)
            self.veths.append(host_end)
            _run("ip", "link", "set", host_end, "master", self.bridge, "up")
            _run("ip", "link", "set", node_end, "netns", n)
            ns = ("ip", "-n", n)
            _run(*ns, "link", "set", "lo", "up")
            _run(*ns, "addr", "add", f"{self.node_addr[n]}/{self.net.prefixlen}", "dev", node_end)
            _run(*ns, "link", "set", node_end, "up")

    def node_gpus(self, i):
        """[(TYPE or None, first device index, count)] of node i's GPUs."""
        out, first = [], 0
        for t, count in self.gpu_types.get(i, [(None, self.gpus)]):
            out.append((t, first, count))
            first += count
        return out

    def _make_gpus(self):
        for i, n in enumerate(self.nodes):
            d = os.path.join(self.dir, "dev", n)
            os.makedirs(d)
            for g in range(sum(c for _, _, c in self.node_gpus(i))):
                os.mknod(os.path.join(d, f"nvidia{g}"), 0o666 | 0o020000, os.makedev(1, 3))

    def _gres(self, i):
        return ",".join(f"gpu:{t}:{c}" if t else f"gpu:{c}" for t, _, c in self.node_gpus(i))

    def _write_config(self):
        d = self.dir
        for sub in ("ctld", "spool", "out"):
            os.makedirs(os.path.join(d, sub))
        os.chmod(os.path.join(d, "out"), 0o1777)
        nodes = "\n".join(
            f"NodeName={n} NodeAddr={self.node_addr[n]} CPUs={self.cpus} RealMemory=1000 "
            f"Gres={self._gres(i)} State=UNKNOWN" for i, n in enumerate(self.nodes))
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=gw{self.tag}
SlurmctldHost={socket.gethostname()}({self.ctl_addr})
SlurmctldPort={_free_port()}
SlurmdPort=6818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/ctld
SlurmctldPidFile={d}/slurmctld.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdSpoolDir={d}/spool/%n
SlurmdPidFile={d}/slurmd.%n.pid
SlurmdLogFile={d}/slurmd.%n.log
ProctrackType=proctrack/cgroup
TaskPlugin=task/none
GresTypes=gpu
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerNode=100
SchedulerParameters=batch_sched_delay=0
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
{f"SlurmdTimeout={self.slurmd_timeout}" if self.slurmd_timeout else ""}
{nodes}
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:{self.oversubscribe}
""")
        with open(os.path.join(d, "gres.conf"), "w") as f:
            f.write("AutoDetect=off\n")
            for i, n in enumerate(self.nodes):
                for t, first, c in self.node_gpus(i):
                    typ = f" Type={t}" if t else ""
                    f.write(f"NodeName={n} Name=gpu{typ} File={d}/dev/{n}/nvidia[{first}-{first + c - 1}]\n")
        with open(os.path.join(d, "cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n")

    def _start_munged(self):
        m = pwd.getpwnam("munge")
        md = os.path.join(self.dir, "munge")
        os.makedirs(md, mode=0o755)
        key = os.path.join(md, "munge.key")
        with open(key, "wb") as f:
            f.write(secrets.token_bytes(1024))
        os.chmod(key, 0o400)
        for p in (md, key):
            os.chown(p, m.pw_uid, m.pw_gid)
        self._start("munged", ["munged", "-F", f"--socket={md}/munge.sock", f"--key-file={key}",
                               f"--pid-file={md}/munged.pid", f"--log-file={md}/munged.log",
                               f"--seed-file={md}/munged.seed"],
                    user=m)
        _wait_until(lambda: os.path.exists(f"{md}/munge.sock"), 10, "munged's socket")

    def _start(self, name, argv, user=None):
        log = open(os.path.join(self.dir, name.replace(" ", "-") + ".out"), "wb")
        kw = {}
        if user is not None:
            kw = dict(user=user.pw_uid, group=user.pw_gid, extra_groups=[])
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=self.env, start_new_session=True, **kw)
        log.close()
        self.procs.append((name, p))
        return p

    # -- use ------------------------------------------------------------------------------
    def cmd(self, *argv, check=True, timeout=30):
        """Runs a Slurm client command against this cluster; returns its stdout."""
        return _run(*argv, check=check, env=self.env, timeout=timeout).stdout

    def sbatch(self, *args):
        """Submits a job (sbatch --parsable ARGS); returns its Slurm job id."""
        out = self.cmd("sbatch", "--parsable", f"--output={self.dir}/out/%j.out", *args)
        return int(out.strip().split(";")[0])

    def squeue(self):
        """{job id: (state, reason, node list)} for the jobs Slurm still lists."""
        jobs = {}
        for line in self.cmd("squeue", "-h", "-o", "%i|%T|%r|%N").splitlines():
            jid, state, reason, nodes = line.split("|")
            jobs[int(jid)] = (state, reason, nodes)
        return jobs

    def output(self, jid):
        try:
            with open(os.path.join(self.dir, "out", f"{jid}.out")) as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def check_daemons(self):
        """Raises, with the end of its output, when a daemon this cluster started has exited
        (a refused slurm.conf ends slurmctld at once: no use waiting a minute for it)."""
        for name, p in self.procs:
            if p.poll() is not None:
                out = self.log(name.replace(" ", "-") + ".out")[-3000:]
                raise RuntimeError(f"{name} exited with {p.returncode}:\n{out}\n(files in {self.dir})")

    def wait_nodes_idle(self, timeout=60):
        def idle():
            self.check_daemons()
            states = self.cmd("sinfo", "-h", "-N", "-o", "%N %t", check=False).split()
            return len(states) == 2 * self.n_nodes and all(s == "idle" for s in states[1::2])
        try:
            _wait_until(idle, timeout, "every node idle in sinfo")
        except TimeoutError as e:
            raise TimeoutError(f"{e}; sinfo says: {self.cmd('sinfo', '-N', check=False)}"
                               f"; logs in {self.dir}") from None

    def kill_node(self, node):
        """The node dies: its slurmd, then its job steps (slurmstepd and the jobs' processes,
        found in the node's own freezer cgroups) at once: frozen, SIGKILLed by PID, thawed.
        Killed one after the other, a process could act on another's death first: slurmstepd
        tell slurmctld its step's death (FAILED, not NODE_FAIL), or a step left stopped by a
        test get the kernel's SIGHUP and SIGCONT when slurmstepd's death orphans its process
        group, and run its end (a scratch step's final sync) before its own SIGKILL."""
        for name, p in self.procs:
            if name == f"slurmd {node}" and p.poll() is None:
                p.kill()
                p.wait(STOP_WAIT)
        root = os.path.join(CGROUP_V1, "freezer", f"slurm_{node}")
        frozen = self._freeze(root, "FROZEN")
        self._kill_cgroup_tree(root, wait=not frozen)
        if frozen:
            self._freeze(root, "THAWED")
            with contextlib.suppress(TimeoutError):
                _wait_until(lambda: not self._pids_under(root), 10, f"the processes in {root} to end")

    @staticmethod
    def _freeze(root, state):
        """Sets the freezer cgroup root's state and waits (bounded) until it has it; False when
        there is no such cgroup or it did not take the state."""
        path = os.path.join(root, "freezer.state")
        try:
            with open(path, "w") as f:
                f.write(state)

            def has():
                with open(path) as f:
                    return f.read().strip() == state
            _wait_until(has, 10, f"{root} {state}")
            return True
        except (OSError, TimeoutError):
            return False

    def node_state(self, node):
        """(state, reason) as scontrol tells them: ("IDLE+DRAIN", "gpuward: ...")."""
        out = self.cmd("scontrol", "show", "node", node, "--oneliner", check=False)
        state = re.search(r"\bState=(\S+)", out)
        reason = re.search(r"\bReason=(.*?)(?: \[|$)", out)
        return (state.group(1) if state else "", reason.group(1).strip() if reason else "")

    def log(self, name):
        with open(os.path.join(self.dir, name)) as f:
            return f.read()

    # -- tear-down ------------------------------------------------------------------------
    def stop(self):
        """Cancels every job, stops every process this cluster started, removes what it made.
        Each step is bounded and runs even when an earlier one failed."""
        if any(name == "slurmctld" and p.poll() is None for name, p in self.procs):
            with contextlib.suppress(Exception):
                self.cmd("scancel", "--full", "--quiet", "--partition=gpu", check=False,
                         timeout=10)
        for name, p in reversed(self.procs):
            self._stop_proc(p)
        self.procs = []
        # Job steps (slurmstepd and the jobs' processes) outlive slurmd: they are found in
        # this cluster's own freezer directories, whose names carry the run's node names.
        for n in self.nodes:
            self._kill_cgroup_tree(os.path.join(CGROUP_V1, "freezer", f"slurm_{n}"))
        for n in self.nodes:
            for ctrl in os.listdir(CGROUP_V1):
                self._remove_cgroup_tree(os.path.join(CGROUP_V1, ctrl, f"slurm_{n}"))
        for v in self.veths:
            _run("ip", "link", "delete", v, check=False)
        self.veths = []
        for n in self.netns:
            _run("ip", "netns", "delete", n, check=False)
        self.netns = []
        if self.bridge_up:
            _run("ip", "link", "delete", self.bridge, check=False)
            self.bridge_up = False
        if self.dir and not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    @staticmethod
    def _stop_proc(p):
        if p.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=STOP_WAIT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                p.kill()
            p.wait(timeout=STOP_WAIT)

    @staticmethod
    def _pids_under(root):
        pids = set()
        for d, _, files in os.walk(root):
            if "cgroup.procs" in files:
                with contextlib.suppress(OSError), open(os.path.join(d, "cgroup.procs")) as f:
                    pids.update(int(x) for x in f.read().split())
        return pids

    def _kill_cgroup_tree(self, root, wait=True):
        if not os.path.isdir(root):
            return
        # Shallower cgroups first: a job's slurmstepd (in job_N) dies before the processes of
        # its steps (job_N/step_*), so that it cannot tell slurmctld their deaths as the
        # job's own end (FAILED, signal 9) instead of the node's (NODE_FAIL).
        for d, _, files in sorted(os.walk(root), key=lambda w: w[0].count("/")):
            if "cgroup.procs" not in files:
                continue
            with contextlib.suppress(OSError), open(os.path.join(d, "cgroup.procs")) as f:
                pids = [int(x) for x in f.read().split()]
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if wait:  # a frozen tree dies once thawed
            with contextlib.suppress(TimeoutError):
                _wait_until(lambda: not self._pids_under(root), 10, f"the processes in {root} to end")

    @staticmethod
    def _remove_cgroup_tree(root):
        if not os.path.isdir(root):
            return
        for d, _, _ in sorted(os.walk(root), key=lambda w: -w[0].count("/")):
            with contextlib.suppress(OSError):
                os.rmdir(d)

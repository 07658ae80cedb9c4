#!/usr/bin/env python3
"""The Debian package from end to end, on this machine: build it (CPack, from the build dir),
lint it, install it with apt-get, start gpuwardd exactly as the installed unit's ExecStart says
(no systemd runs here), wait for /healthz, run one job through the installed CLI as a plain
user to COMPLETED, stop the daemon, remove the package (the state stays), purge it (the state
goes).

It installs a package on the machine, so it first makes sure there is nothing of gpuward's
to disturb (no package, no /etc/gpuward, /var/lib/gpuward or /run/gpuward), and it puts the
machine back as it found it whatever happens: the daemon stopped by its pid, the package
purged, the directories, test account, job cgroups and any dependency apt-get added removed.

The daemon gets 2 simulated GPUs the way the end-to-end harness gives them (the build's fake
NVML, simulate_gpus and nvml_lib), written into the installed /etc/gpuward/gpuward.conf as an
admin would; it listens on a free loopback port.  Exit 77 (ctest's skip) where dpkg, apt-get
or root is missing, or where gpuward is already on this machine."""
import http.client
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import gwtest  # noqa: E402

PKG = "gpuward"
STATE, RUNTIME, ETC = "/var/lib/gpuward", "/run/gpuward", "/etc/gpuward"
CONF = os.path.join(ETC, "gpuward.conf")
UNIT = "/usr/lib/systemd/system/gpuwardd.service"
AGENT_UNIT = "/usr/lib/systemd/system/gpuward-agent.service"
APT = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300"]
# systemd starts services with this environment (no NOTIFY_SOCKET here: Type=notify's message
# is then skipped by the daemon).
UNIT_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


def why_skip():
    for tool in ("dpkg", "dpkg-deb", "apt-get", "cpack"):
        if not shutil.which(tool):
            return f"{tool} not found: the package test needs a Debian system with dpkg, apt-get and cmake's cpack"
    if os.geteuid() != 0:
        return "installing a package needs root: run the tests as root (scripts/gw test does)"
    if not os.path.exists(os.path.join(gwtest.BUILD, "CPackConfig.cmake")):
        return f"{gwtest.BUILD}/CPackConfig.cmake not found: not a configured build dir"
    if package_status() is not None:
        return f"the {PKG} package is already on this machine ({package_status()}): the test leaves it alone"
    for path in (STATE, RUNTIME, ETC, "/usr/sbin/gpuwardd"):
        if os.path.lexists(path):
            return f"{path} exists (another gpuward on this machine, e.g. scripts/gw demo as root): the test leaves it alone"
    return None


def run(cmd, check=True, timeout=600, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def package_status():
    p = run(["dpkg-query", "-W", "-f=${Status}", PKG], check=False)
    return p.stdout.strip() if p.returncode == 0 and "not-installed" not in p.stdout else None


def installed_packages():
    out = run(["dpkg-query", "-W", "-f=${Package}:${Architecture} ${Status}\n"]).stdout
    return {line.split()[0] for line in out.splitlines() if line.endswith(" installed")}


def unit_exec_start(text):
    """ExecStart= of a unit's text, as an argv (its prefixes such as '-' or '@' are not used by
    ours, and refused here so that a change to them is noticed)."""
    lines = [line.split("=", 1)[1].strip() for line in text.splitlines() if line.startswith("ExecStart=")]
    if len(lines) != 1:
        raise AssertionError(f"{UNIT}: expected one ExecStart= line, found {lines}")
    if lines[0][:1] in "-@:+!":
        raise AssertionError(f"{UNIT}: ExecStart= prefix '{lines[0][0]}' is not handled by this test")
    return shlex.split(lines[0])


class DebPackageTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gw-deb-")
        os.chmod(self.tmp, 0o755)
        self.before = installed_packages()
        self.users = gwtest.Users(prefix="gwdeb")
        self.proc = None
        self.log_path = os.path.join(self.tmp, "gpuwardd.log")

    def tearDown(self):
        """Everything back as it was, each step on its own so that one failing does not skip
        the others."""
        steps = [self.stop_daemon, self.remove_cgroups,
                 lambda: package_status() and run(APT + ["purge", PKG], check=False),
                 lambda: [shutil.rmtree(p, ignore_errors=True) for p in (STATE, RUNTIME, ETC)],
                 self.users.remove_all, self.purge_added_dependencies,
                 lambda: shutil.rmtree(self.tmp, ignore_errors=True)]
        for step in steps:
            try:
                step()
            except Exception as e:  # report, and go on putting the machine back
                print(f"cleanup: {e}", file=sys.stderr)

    def stop_daemon(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def daemon_log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def remove_cgroups(self):
        """The empty job cgroups of the daemon we ran (as the e2e harness does)."""
        m = re.search(r"cgroups: v[12] under (\S+)", self.daemon_log())
        if not m or not os.path.isdir(m.group(1)):
            return
        base = m.group(1)
        for name in os.listdir(base):
            if name.startswith("job-"):
                try:
                    os.rmdir(os.path.join(base, name))
                except OSError:
                    pass
        try:
            os.rmdir(base)
        except OSError:
            pass

    def purge_added_dependencies(self):
        added = sorted(installed_packages() - self.before)
        if added:
            run(APT + ["purge"] + added, check=False)

    # --- the steps --------------------------------------------------------------------------
    def build_package(self):
        out = os.path.join(self.tmp, "out")
        run(["cpack", "-G", "DEB", "--config", os.path.join(gwtest.BUILD, "CPackConfig.cmake"), "-B", out],
            cwd=gwtest.BUILD)
        debs = [f for f in os.listdir(out) if f.startswith(f"{PKG}_") and f.endswith(".deb")]
        self.assertEqual(len(debs), 1, f"one {PKG}_*.deb expected in {out}: {os.listdir(out)}")
        return os.path.join(out, debs[0])

    def check_contents(self, deb):
        listing = run(["dpkg-deb", "-c", deb]).stdout
        files = {line.split()[-1].lstrip(".") for line in listing.splitlines()}
        for path in ("/usr/sbin/gpuwardd", "/usr/bin/gpuward", "/usr/lib/gpuward/gpuward-shim", UNIT, AGENT_UNIT, CONF,
                     "/usr/share/doc/gpuward/copyright", "/usr/share/doc/gpuward/changelog.gz"):
            self.assertIn(path, files, f"{path} is not in the package:\n{listing}")
        self.assertEqual(run(["dpkg-deb", "-f", deb, "Package"]).stdout.strip(), PKG)
        conffiles = run(["dpkg-deb", "--info", deb, "conffiles"]).stdout.split()
        self.assertEqual(conffiles, [CONF], "the config file must be a conffile (kept over upgrades and removal)")

    def lint(self, deb):
        if not shutil.which("lintian"):
            print("lintian not installed: the package is not linted (apt-get install lintian)", file=sys.stderr)
            return
        # Errors and warnings fail; each one the package keeps is overridden with its reason
        # (packaging/deb/lintian-overrides).
        p = run(["lintian", "--fail-on", "error,warning", deb], check=False)
        self.assertEqual(p.returncode, 0, f"lintian:\n{p.stdout}{p.stderr}")

    def configure_simulated_gpus(self):
        with open(CONF, "a") as f:
            f.write("\n# The package test: 2 simulated GPUs, a free loopback port.\n"
                    f"simulate_gpus = 2\nnvml_lib = {gwtest.FAKE_NVML}\nlisten = 127.0.0.1:0\n"
                    "sample_interval = 1\n")

    def verify_unit(self):
        """systemd's own check of the installed unit, where systemd-analyze is: unknown or
        misspelt settings, a missing ExecStart binary.  Its man-page lookups for
        Documentation= are left out: they depend on man-db's index, not on the unit."""
        if not shutil.which("systemd-analyze"):
            return
        for unit in (UNIT, AGENT_UNIT):
            p = run(["systemd-analyze", "verify", unit], check=False)
            complaints = [line for line in (p.stdout + p.stderr).splitlines()
                          if line.strip() and not re.search(r"Command 'man [^']*' failed", line)]
            self.assertEqual(complaints, [], f"systemd-analyze verify {unit}")

    def start_daemon(self):
        with open(UNIT) as f:
            argv = unit_exec_start(f.read())
        self.assertEqual(argv[0], "/usr/sbin/gpuwardd")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=UNIT_ENV, cwd="/", start_new_session=True)
        addr = os.path.join(STATE, "listen.addr")
        gwtest.wait_until(lambda: os.path.exists(addr) or self.proc.poll() is not None, timeout=30,
                          what="gpuwardd to write listen.addr")
        self.assertIsNone(self.proc.poll(), f"gpuwardd exited:\n{self.daemon_log()}")
        with open(addr) as f:
            port = int(f.read().strip().rsplit(":", 1)[1])
        gwtest.wait_until(lambda: self.healthz(port) == 200, timeout=30, what="GET /healthz to answer 200")

    @staticmethod
    def healthz(port):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            c.request("GET", "/healthz")
            return c.getresponse().status
        except OSError:
            return None
        finally:
            c.close()

    def run_job(self):
        """One job as a plain user, through the installed CLI on the installed socket."""
        user = self.users.add("u")
        work = os.path.join(self.tmp, "work")
        os.makedirs(work)
        os.chmod(work, 0o777)
        cli = gwtest.as_user(user.pw_uid, user.pw_gid) + ["/usr/bin/gpuward"]
        env = {"PATH": "/usr/bin:/bin", "HOME": work, "LANG": "C.UTF-8"}
        p = run(cli + ["submit", "--wait", "--gpus", "1", "--time", "5m", "--name", "deb", "--",
                       "/bin/sh", "-c", "echo packaged on $CUDA_VISIBLE_DEVICES"], cwd=work, env=env, timeout=180)
        self.assertIn("COMPLETED", p.stdout + p.stderr)
        hist = run(cli + ["history"], cwd=work, env=env).stdout
        self.assertIn("COMPLETED", hist)

    def test_install_run_remove_purge(self):
        deb = self.build_package()
        self.check_contents(deb)
        self.lint(deb)

        run(APT + ["install", deb])
        self.assertEqual(package_status(), "install ok installed")
        for path, mode in (("/usr/sbin/gpuwardd", 0o755), ("/usr/bin/gpuward", 0o755),
                           ("/usr/lib/gpuward/gpuward-shim", 0o755), (CONF, 0o644)):
            st = os.stat(path)
            self.assertEqual((st.st_uid, st.st_mode & 0o7777), (0, mode), path)

        self.verify_unit()
        self.configure_simulated_gpus()
        self.start_daemon()
        try:
            self.run_job()
        except AssertionError:
            print(self.daemon_log()[-20000:], file=sys.stderr)
            raise
        for path in (STATE, RUNTIME):
            st = os.stat(path)
            self.assertEqual((st.st_uid, st.st_mode & 0o777), (0, 0o755), f"{path}: root-owned, 0755")
        self.stop_daemon()
        self.assertEqual(self.proc.returncode, 0, f"gpuwardd's exit status on SIGTERM\n{self.daemon_log()}")
        self.remove_cgroups()

        run(APT + ["remove", PKG])
        self.assertFalse(os.path.exists("/usr/sbin/gpuwardd"), "remove leaves the daemon's binary")
        self.assertTrue(os.path.exists(os.path.join(STATE, "gpuward.db")), "remove must keep the state")
        self.assertTrue(os.path.exists(CONF), "remove keeps the conffile (only purge deletes it)")

        run(APT + ["purge", PKG])
        self.assertIsNone(package_status())
        for path in (STATE, ETC, RUNTIME):
            self.assertFalse(os.path.lexists(path), f"purge leaves {path}")


if __name__ == "__main__":
    reason = why_skip()
    if reason:
        print(f"SKIPPED: {reason}")
        sys.exit(77)
    unittest.main(verbosity=2)

#!/usr/bin/env python3
"""What contrib/ ships for admins stays true to the daemon:

- contrib/gpuward.conf (the package's /etc/gpuward/gpuward.conf) has every setting of
  src/daemon/base/config.c's table, and no other, each with a value the daemon accepts and, where
  `gpuwardd --help` states a default, that default;
- the Grafana dashboard names only metrics gpuwardd exports (src/api/metrics.c, and a live
  /metrics with a job running);
- the Prometheus snippet is a valid scrape config (promtool, where installed) aimed at the
  default listen address, and the Consul check asks GET /healthz there."""
import json
import os
import re
import subprocess
import tempfile
import unittest

import gwtest

SOURCE = os.path.abspath(os.environ.get("GW_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", ".."))
CONTRIB = os.path.join(SOURCE, "contrib")
CONF = os.path.join(CONTRIB, "gpuward.conf")
DASHBOARD = os.path.join(CONTRIB, "grafana", "gpuward-dashboard.json")
METRIC = re.compile(r"\bgpuward_[a-z0-9_]+\b")


def read(path):
    with open(path) as f:
        return f.read()


def list_keys():
    """{key: (kind, default, values, doc)} of `gpuwardd --list-keys`: the settings' table."""
    out = subprocess.run([gwtest.GPUWARDD, "--list-keys"], capture_output=True, text=True, timeout=30, check=True)
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert rows and all(len(r) == 5 for r in rows), "gpuwardd --list-keys: five tab-separated columns a line"
    return {r[0]: tuple(r[1:]) for r in rows}


def config_table():
    """(global keys, [policy.NAME] keys, [reclaim] keys): the first from gpuwardd's settings
    table, the sections' from config_policy.c's messages for unknown keys."""
    src = read(os.path.join(SOURCE, "src", "daemon", "base", "config_policy.c"))
    policy = re.search(r"unknown key '%s' in \[policy\.%s\] \(([^)]*)\)", src)
    reclaim = re.search(r"unknown key '%s' in \[reclaim\] \(([^)]*)\)", src)
    assert policy and reclaim, "config_policy.c: the lists of [policy.NAME] and [reclaim] keys were not found"
    split = lambda m: {k.strip() for k in re.sub(r'"\s*"', "", m.group(1)).split(",")}  # noqa: E731
    return set(list_keys()), split(policy), split(reclaim)


def conf_settings(text):
    """{section: {key: value}} of the "#key = value" lines ("" is the global section)."""
    out, section = {"": {}}, ""
    for line in text.splitlines():
        m = re.fullmatch(r"#\[([a-z0-9_.-]+)\]", line)
        if m:
            section = m.group(1)
            out.setdefault(section, {})
            continue
        m = re.fullmatch(r"#([a-z0-9_]+) =(?: (.*))?", line)
        if m:
            assert m.group(1) not in out[section], f"{m.group(1)} twice in [{section}]"
            out[section][m.group(1)] = m.group(2) or ""
    return out


def help_defaults():
    """{key: the default `gpuwardd --help` states for its flag}, where it states one."""
    text = subprocess.run([gwtest.GPUWARDD, "--help"], capture_output=True, text=True, timeout=30).stdout
    entries = re.split(r"\n  (?=--)", text)
    out = {}
    for e in entries:
        m = re.match(r"--([a-z0-9-]+)", e)
        d = re.search(r"\(default ([^;)\s]+)", " ".join(e.split()))
        if m and d:
            out[m.group(1).replace("-", "_")] = d.group(1).rstrip(",")
    return out


class ConfigFileTest(unittest.TestCase):
    def setUp(self):
        self.settings = conf_settings(read(CONF))
        self.keys, self.policy_keys, self.reclaim_keys = config_table()

    def test_every_setting_and_only_those(self):
        conf = set(self.settings[""])
        self.assertEqual(sorted(self.keys - conf), [], "settings of config.c missing from contrib/gpuward.conf")
        self.assertEqual(sorted(conf - self.keys), [], "keys in contrib/gpuward.conf that config.c does not know")
        self.assertEqual(set(self.settings.get("reclaim", {})), self.reclaim_keys)
        self.assertEqual(set(self.settings.get("policy.default", {})), self.policy_keys)

    def test_defaults_are_the_daemons(self):
        stated = help_defaults()
        checked = 0
        for key, value in self.settings[""].items():
            if key in stated:
                self.assertEqual(value, stated[key], f"{key}: gpuwardd --help says the default is {stated[key]}")
                checked += 1
        self.assertGreater(checked, 25, f"only {checked} defaults found in gpuwardd --help")

    def test_every_documented_value_is_accepted(self):
        """The file with every setting uncommented: the daemon reads it (--help returns after
        the file is read); a bad value in it is refused, naming the line."""
        text = re.sub(r"(?m)^#(\[|[a-z0-9_]+ =)", r"\1", read(CONF))
        with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
            f.write(text)
            f.flush()
            p = subprocess.run([gwtest.GPUWARDD, "--config", f.name, "--help"], capture_output=True, text=True,
                               timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
        bad = text.replace("grace_seconds = 30", "grace_seconds = soon")
        with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
            f.write(bad)
            f.flush()
            p = subprocess.run([gwtest.GPUWARDD, "--config", f.name, "--help"], capture_output=True, text=True,
                               timeout=30)
            self.assertEqual(p.returncode, 2)
            line = bad.splitlines().index("grace_seconds = soon") + 1
            self.assertIn(f"line {line}: grace_seconds: invalid value 'soon'", p.stderr)


class DashboardTest(unittest.TestCase):
    def dashboard_metrics(self):
        dash = json.loads(read(DASHBOARD))
        exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
        exprs += [v["definition"] for v in dash["templating"]["list"]]
        self.assertGreater(len(exprs), 10)
        return {m for e in exprs for m in METRIC.findall(e)}

    def test_metrics_are_in_the_source(self):
        exported = set(METRIC.findall(read(os.path.join(SOURCE, "src", "api", "metrics.c"))))
        self.assertEqual(sorted(self.dashboard_metrics() - exported), [],
                         "metrics the dashboard names that src/api/metrics.c does not export")

    def test_metrics_are_served(self):
        """Every metric the dashboard names, in a live /metrics with a job running (the per-job
        families appear only then)."""
        wanted = self.dashboard_metrics()
        with gwtest.Daemon(gpus=2) as d:
            d.start()
            jid = d.submit("--gpus", "1", "--time", "5m", "--", gwtest.TRAINER, "epochs=60", "name=contrib",
                           "--epoch-seconds", "1")
            d.wait_state(jid, "RUNNING")

            def missing():
                text = d.metrics()
                served = set(re.findall(r"(?m)^(gpuward_[a-z0-9_]+)", text))
                left = wanted - served
                return None if left else served
            try:
                gwtest.wait_until(missing, timeout=30, interval=0.5, what="the dashboard's metrics in /metrics")
            except AssertionError:
                text = d.metrics()
                served = set(re.findall(r"(?m)^(gpuward_[a-z0-9_]+)", text))
                self.fail(f"not served: {sorted(wanted - served)}")


class MonitoringSnippetsTest(unittest.TestCase):
    def test_prometheus_scrape_config(self):
        text = read(os.path.join(CONTRIB, "prometheus", "gpuward.yml"))
        self.assertIn('targets: ["127.0.0.1:8470"]', text)
        self.assertIn("metrics_path: /metrics", text)
        promtool = "/usr/bin/promtool"
        if os.path.exists(promtool):
            p = subprocess.run([promtool, "check", "config", os.path.join(CONTRIB, "prometheus", "gpuward.yml")],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_consul_check_asks_healthz(self):
        svc = json.loads(read(os.path.join(CONTRIB, "consul", "gpuward.json")))["service"]
        self.assertEqual(svc["check"]["http"], f"http://{svc['address']}:{svc['port']}/healthz")
        self.assertEqual((svc["address"], svc["port"]), ("127.0.0.1", 8470), "gpuwardd's default listen address")


if __name__ == "__main__":
    gwtest.main()

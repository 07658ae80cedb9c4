#!/usr/bin/env python3
"""A scripted day on 8 fake GPUs (reclamation's measure): 40 fake-trainer jobs, 12 of which hang at
a random epoch, run by the real gpuwardd twice -- idle reclamation off, and on -- on a
compressed clock.  Reports GPU-hours held idle, the utilisation of the 8 GPUs and the queue
wait of the jobs that do not hang, from one run each.

Not a test: the figures depend on the machine and on the seed.  The two runs go side by side
(two daemons, each with its own state dir, fake NVML and loopback port) so that both see the
same machine load and the whole takes about 5 minutes:

    python3 bench/scripted_day.py --build build [--write docs/PERFORMANCE.md]

Clock: one simulated hour is --hour-seconds real seconds (10: an epoch of half an hour is 5 s,
the 24-hour day 240 s).  Everything below is in simulated hours unless it says otherwise."""
import argparse
import concurrent.futures
import datetime
import json
import math
import os
import platform
import random
import re
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

N_GPUS = 8
DAY_H = 24.0
EPOCH_H = 0.5
ARRIVALS_H = 14.0  # jobs are submitted during the first 14 h (a working day and evening)
IDLE_UTIL = 0.05   # the default profile's threshold: a held GPU below it is idle

# Reclamation on: the built-in "default" profile is 300 s idle, 60 s warning, 30 s grace on a
# 2 s sample.  The daemon takes whole seconds (and samples at 1 s at best), so on this clock
# the profile is 1 s each: 6 simulated minutes each, slower than the real default (5 + 1 + 0.5
# min), which understates what reclamation gains.
CONFIG_ON = "[policy.default]\nidle_timeout = 1\nwarn = 1\ngrace = 1\n"
CONFIG_OFF = "[policy.default]\nenabled = false\n"


def workload(seed, n_jobs, n_hung):
    """The day's jobs: arrival, GPUs, planned epochs, the epoch after which it hangs (or None),
    and a time limit of twice its planned run, the rule of thumb a lab gives its users."""
    rng = random.Random(seed)
    hung = set(rng.sample(range(n_jobs), n_hung))
    jobs = []
    for i in range(n_jobs):
        epochs = rng.randint(4, 16)  # 2 to 8 h
        jobs.append({
            "arrive_h": rng.uniform(0, ARRIVALS_H),
            "ngpus": 2 if rng.random() < 0.25 else 1,
            "epochs": epochs,
            "hang_after": rng.randint(1, epochs - 1) if i in hung else None,
            "limit_h": 2 * epochs * EPOCH_H,
        })
    jobs.sort(key=lambda j: j["arrive_h"])
    for i, j in enumerate(jobs):
        j["name"] = f"day{i:02d}"
    return jobs


def parse_metrics(text):
    """{gpu: (util ratio, allocated)} and the reclaim counter, from /metrics."""
    util, alloc, reclaims = {}, {}, 0
    for line in text.splitlines():
        m = re.match(r'(gpuward_gpu_utilization_ratio|gpuward_gpu_allocated)\{gpu="(\d+)"[^}]*\} (\S+)', line)
        if m:
            (util if m.group(1).endswith("ratio") else alloc)[int(m.group(2))] = float(m.group(3))
        elif line.startswith("gpuward_reclaims_total "):
            reclaims = int(float(line.split()[1]))
    return {g: (util.get(g, 0.0), alloc.get(g, 0.0) > 0) for g in range(N_GPUS)}, reclaims


class Day:
    """One run: a daemon, the submissions on schedule, a /metrics scrape every real second."""

    def __init__(self, gw, label, config, jobs, hour_s):
        self.gw, self.label, self.config, self.jobs, self.hour_s = gw, label, config, jobs, hour_s
        self.ids = {}
        self.util_gpu_s = self.alloc_gpu_s = self.idle_gpu_s = self.scraped_s = 0.0
        self.reclaims = 0
        self.errors = []

    def submit(self, d, j):
        cmd = [self.gw.TRAINER, f"epochs={j['epochs']}", f"name={j['name']}", "exist_ok=True",
               "--epoch-seconds", str(EPOCH_H * self.hour_s)]
        if j["hang_after"] is not None:
            cmd += ["--hang-after-epoch", str(j["hang_after"])]
        body = {"command": cmd, "cwd": d.work, "ngpus": j["ngpus"], "name": j["name"],
                "time_limit": int(math.ceil(j["limit_h"] * self.hour_s))}
        st, r = d.api("POST", "/api/v1/jobs", body)
        if st != 201:
            raise RuntimeError(f"{self.label}: submit {j['name']}: {st} {r}")
        self.ids[j["name"]] = r["id"]

    def scrape(self, d, dt):
        st, body = d.tcp("GET", "/metrics")
        if st != 200:
            return
        gpus, self.reclaims = parse_metrics(body.decode())
        for util, held in gpus.values():
            self.util_gpu_s += util * dt
            self.alloc_gpu_s += dt if held else 0
            self.idle_gpu_s += dt if held and util < IDLE_UTIL else 0
        self.scraped_s += dt

    def run(self):
        d = self.gw.Daemon(gpus=N_GPUS, config=self.config).start()
        try:
            self.t0 = time.time()
            end = self.t0 + DAY_H * self.hour_s
            pending = list(self.jobs)
            last = self.t0
            while True:
                now = time.time()
                while pending and now >= self.t0 + pending[0]["arrive_h"] * self.hour_s:
                    self.submit(d, pending.pop(0))
                if now >= end:
                    break
                self.scrape(d, now - last)
                last = now
                time.sleep(max(0.0, min(1.0, end - time.time())))
            self.t_end = end
            self.results = {name: d.job(jid) for name, jid in self.ids.items()}
            self.workdir = d.work
            self.collect()
        finally:
            d.cleanup()

    def hung_idle_h(self, j, r):
        """A hung job's idle hold: from its last write (last.pt, after the hanging epoch) to its
        end, or to the end of the day."""
        if r.get("start_time") is None:
            return 0.0
        ckpt = os.path.join(self.workdir, "runs", "detect", j["name"], "weights", "last.pt")
        try:
            hung_at = os.stat(ckpt).st_mtime
        except OSError:
            return 0.0
        end = min(r["end_time"] or self.t_end, self.t_end)
        return max(0.0, end - hung_at) * j["ngpus"] / self.hour_s

    def collect(self):
        h = self.hour_s
        states, waits, unstarted = {}, [], 0
        hung_idle, wrongful = 0.0, 0
        for j in self.jobs:
            r = self.results[j["name"]]
            states[r["state"]] = states.get(r["state"], 0) + 1
            if j["hang_after"] is not None:
                hung_idle += self.hung_idle_h(j, r)
                continue
            if r["state"] == "RECLAIMED":
                wrongful += 1
            start = r.get("start_time")
            if start is None or start > self.t_end:
                unstarted += 1
                start = self.t_end  # censored: it had waited at least this long
            waits.append((start - r["submit_time"]) / h)
        healthy = [r for j in self.jobs if j["hang_after"] is None for r in [self.results[j["name"]]]]
        span = self.scraped_s if self.scraped_s > 0 else 1
        self.out = {
            "states": states,
            "healthy_completed": sum(1 for r in healthy if r["state"] == "COMPLETED"),
            "idle_gpu_h": self.idle_gpu_s / h,
            "hung_idle_gpu_h": hung_idle,
            "util_mean": self.util_gpu_s / (N_GPUS * span),
            "alloc_mean": self.alloc_gpu_s / (N_GPUS * span),
            "wait_mean_h": statistics.mean(waits),
            "wait_p50_h": statistics.median(waits),
            "wait_max_h": max(waits),
            "unstarted": unstarted,
            "reclaims": self.reclaims,
            "wrongful": wrongful,
            "gpu_h_api": sum((r.get("telemetry") or {}).get("gpu_hours") or 0 for r in self.results.values()) * 3600 / h,
        }


def fmt_states(s):
    order = ["COMPLETED", "RECLAIMED", "TIMEOUT", "RUNNING", "PENDING", "FAILED", "CANCELLED"]
    return ", ".join(f"{s[k]} {k.lower()}" for k in order if s.get(k))


def table(off, on, jobs):
    n_hung = sum(1 for j in jobs if j["hang_after"] is not None)
    n_ok = len(jobs) - n_hung
    rows = [
        ("Job states at the end of the day", fmt_states(off["states"]), fmt_states(on["states"])),
        (f"Jobs that do not hang, completed within the day (of {n_ok})", off["healthy_completed"],
         on["healthy_completed"]),
        ("GPU-hours held idle (allocated, util < 5%), from /metrics every real second",
         f"{off['idle_gpu_h']:.1f}", f"{on['idle_gpu_h']:.1f}"),
        (f"  of which the {n_hung} hung jobs, last write → end (per job: last.pt mtime, API end_time)",
         f"{off['hung_idle_gpu_h']:.1f}", f"{on['hung_idle_gpu_h']:.1f}"),
        ("Mean utilisation of the 8 GPUs over the day (`gpuward_gpu_utilization_ratio`)",
         f"{100 * off['util_mean']:.0f}%", f"{100 * on['util_mean']:.0f}%"),
        ("Mean share of the 8 GPUs allocated to a job (`gpuward_gpu_allocated`)",
         f"{100 * off['alloc_mean']:.0f}%", f"{100 * on['alloc_mean']:.0f}%"),
        (f"Queue wait of the {n_ok} other jobs, mean / median / max (h)",
         f"{off['wait_mean_h']:.1f} / {off['wait_p50_h']:.1f} / {off['wait_max_h']:.1f}",
         f"{on['wait_mean_h']:.1f} / {on['wait_p50_h']:.1f} / {on['wait_max_h']:.1f}"),
        ("  of those, not started by the end of the day (wait counted to then)", off["unstarted"], on["unstarted"]),
        ("`gpuward_reclaims_total`; of them jobs that were not hung", f"{off['reclaims']}; {off['wrongful']}",
         f"{on['reclaims']}; {on['wrongful']}"),
        ("GPU-hours held, from the jobs' telemetry (`gpu_hours`, API)", f"{off['gpu_h_api']:.1f}",
         f"{on['gpu_h_api']:.1f}"),
    ]
    lines = ["| measure (simulated hours) | reclamation off | reclamation on |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


def write_block(path, text):
    with open(path) as f:
        doc = f.read()
    begin, end = "<!-- day:begin -->", "<!-- day:end -->"
    if begin not in doc or end not in doc:
        raise SystemExit(f"{path}: no {begin} ... {end} block to replace")
    head, rest = doc.split(begin, 1)
    tail = rest.split(end, 1)[1]
    with open(path, "w") as f:
        f.write(head + begin + "\n" + text + "\n" + end + tail)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--hung", type=int, default=12)
    ap.add_argument("--hour-seconds", type=float, default=10.0, help="real seconds per simulated hour (10)")
    ap.add_argument("--write", help="replace the day block of this Markdown file")
    ap.add_argument("--json", help="also save the raw figures here")
    a = ap.parse_args()
    os.environ["GW_BUILD_DIR"] = os.path.abspath(a.build)
    import gwtest as gw

    jobs = workload(a.seed, a.jobs, a.hung)
    load1 = os.getloadavg()
    t0 = time.monotonic()
    days = [Day(gw, "off", CONFIG_OFF, jobs, a.hour_seconds), Day(gw, "on", CONFIG_ON, jobs, a.hour_seconds)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        for f in [ex.submit(day.run) for day in days]:
            f.result()
    wall = time.monotonic() - t0
    load2 = os.getloadavg()
    off, on = days[0].out, days[1].out
    demand = sum(j["ngpus"] * EPOCH_H * (j["hang_after"] or j["epochs"]) for j in jobs)
    cmd = "python3 bench/scripted_day.py --build build" + (f" --seed {a.seed}" if a.seed != 2026 else "")
    head = (f"Measured {datetime.date.today().isoformat()} on this machine: {os.cpu_count()} cores, "
            f"{platform.machine()}, Linux {platform.release()} (1/5/15-min load average "
            f"{load1[0]:.1f}/{load1[1]:.1f}/{load1[2]:.1f} before, {load2[0]:.1f}/{load2[1]:.1f}/{load2[2]:.1f} after), "
            f"{len(jobs)} jobs (seed {a.seed}), 1 simulated hour = {a.hour_seconds:g} s, both runs side by side "
            f"in {wall:.0f} s of wall time.  Command: `{cmd}`.  Work the jobs ask for: {demand:.0f} GPU-hours of "
            f"epochs against {N_GPUS * DAY_H:.0f} GPU-hours in the day.")
    text = head + "\n\n" + table(off, on, jobs)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"off": off, "on": on, "jobs": jobs, "wall_s": wall}, f, indent=1)
    if a.write:
        write_block(a.write, text)


if __name__ == "__main__":
    main()

"""run.py's Markdown: the table, its notes and the block between BEGIN and END."""
import os

BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"


# ---------------------------------------------------------------- report
def table(a, g, sl, st, ts):
    """The Markdown table, and the (measure key, peer) pairs where gpuward is not ahead."""
    for t in (g, sl, st, ts):
        if "error" in t:
            t["error_short"] = ("not run" if t["error"].startswith("not run") else "**failed**: " +
                                t["error"].replace("|", "/").replace("\n", " ")[:160])
    peers = [("Slurm", sl), ("Slurm stock", st), ("task-spooler", ts)]
    rows, behind = [], []

    def secs(v):
        return f"{v * 1000:.1f} ms" if v < 1 else f"{v:.2f} s"

    def ratio(key, gv, pv, higher_better, peer):
        if gv is None or pv is None or pv == 0 or gv == 0:
            return "—"
        r = gv / pv
        good = r > 1 if higher_better else r < 1
        if not good:
            behind.append((key, peer))
        return f"{r:.3g}{' ✓' if good else ''}"

    def drain_cell(t, key):
        if "drain" not in t:
            return t.get("error_short", "—")
        d = t["drain"]
        if key == "seconds":
            extra = "" if d["jobs"] == 1000 else f" ({d['jobs']} jobs; ≈ {d['per_1000_s']:.0f} s per 1,000)"
            return f"{d['seconds']:.2f} s{extra}, {d['per_s']:,.1f} jobs/s"
        return f"{d[key]:.1f} ms"

    def dv(t, key):
        if "drain" not in t:
            return None
        return t["drain"]["per_1000_s"] if key == "seconds" else t["drain"][key]

    def grace_of(t):
        if t is g:
            return a.grace
        kw = t.get("config", {}).get("KillWait")
        return int(kw.split()[0]) if kw else None

    def cancel_cell(t, kind):
        c = t.get(f"cancel_{kind}")
        if c is None:
            return t.get("error_short", "—")
        if c["seconds"] is None:
            return f"never: {c['remaining']} of {c['of']} processes still alive {a.tsp_cancel_bound} s later"
        if kind == "hung" and grace_of(t) is not None:
            d = c["seconds"] - grace_of(t)
            return f"{secs(c['seconds'])} (grace {grace_of(t)} s {'+' if d >= 0 else '−'} {secs(abs(d))})"
        return secs(c["seconds"])

    def row(key, name, gcell, cells, gval, vals, higher, special=None):
        r = [name, gcell] + cells
        for (pn, t), pv in zip(peers, vals):
            if special and special(t):
                r.append(special(t))
            else:
                r.append(ratio(key, gval, pv, higher, pn))
        rows.append(r)

    def cell(t, key, fmt):
        if key in t:
            return fmt(t[key])
        return t.get("error_short", "—")

    def rate(v):
        return f"{v:,.0f}/s"

    row("submit_seq", f"Submissions, {a.jobs:,} separate commands, one at a time (higher is better)",
        cell(g, "submit_seq", rate),
        [cell(sl, "submit_seq", rate), "not measured", cell(ts, "submit_seq", rate) +
         (f" (≤ {min(a.tsp_chunk, a.jobs)} queued at once: see below)" if "submit_seq" in ts else "")],
        g.get("submit_seq"), [sl.get("submit_seq"), None, ts.get("submit_seq")], True)
    row("start", "For reference: process start alone, `gpuward --version` / `sbatch --version` / "
                 "`tsp -V` one after another (higher is better)",
        cell(g, "start_per_s", rate), [cell(sl, "start_per_s", rate), "not measured", cell(ts, "start_per_s", rate)],
        g.get("start_per_s"), [sl.get("start_per_s"), None, ts.get("start_per_s")], True)
    def array_cell(v):
        req = g.get("submit_array_request_s")
        return (f"{v:,.0f}/s ({g.get('submit_array_how')}"
                + (f"; the request alone {req * 1000:.1f} ms" if req else "") + ")")

    row("submit_array", f"Submissions, one job array of {a.jobs:,} tasks, one command (higher is better)",
        cell(g, "submit_array", array_cell),
        [cell(sl, "submit_array", lambda v: f"{v:,.0f}/s ({sl.get('submit_array_how')})"), "not measured",
         "none: tsp has no arrays"],
        g.get("submit_array"), [sl.get("submit_array"), None, None], True)
    row("submit_batch", f"Submissions, {a.jobs:,} separate jobs in one API batch, against Slurm's array "
                        "(Slurm has no batch of separate jobs; higher is better)",
        cell(g, "submit_batch", lambda v: f"{v:,.0f}/s ({g.get('submit_batch_how')})"),
        [cell(sl, "submit_array", lambda v: f"{v:,.0f}/s (the array above)"), "not measured",
         "none: tsp has no batch submission"],
        g.get("submit_batch"), [sl.get("submit_array"), None, None], True)
    for key, name in (
            ("seconds", "Drain: first job start to last job end, jobs of `gw-bench-stamp` on 4 GPUs/slots "
                        "(lower is better; ratio on the time per 1,000 jobs)"),
            ("gap_p50_ms", "Dispatch gap, a job's end → next start on that GPU/slot, p50 (lower is better)"),
            ("gap_p99_ms", "Dispatch gap, p99 (lower is better)")):
        row(key, name, drain_cell(g, key), [drain_cell(sl, key), drain_cell(st, key), drain_cell(ts, key)],
            dv(g, key), [dv(sl, key), dv(st, key), dv(ts, key)], False)

    for kind, name in (
            ("hung", f"Cancel → all processes gone, every process ignores SIGTERM (gpuward `--grace-seconds "
                     f"{a.grace}`, Slurm `KillWait` {sl.get('config', {}).get('KillWait', '?')}; lower is better)"),
            ("orphans", "Cancel → all processes gone, main process exits on SIGTERM, its 2 children ignore it "
                        "(lower is better)")):
        def special(t, kind=kind):
            c = t.get(f"cancel_{kind}")
            if c and c["seconds"] is None and g.get(f"cancel_{kind}", {}).get("seconds") is not None:
                return "gpuward frees the GPU, tsp never ✓"
            return None
        row(f"cancel_{kind}", name, cancel_cell(g, kind),
            [cancel_cell(sl, kind), "not measured", cancel_cell(ts, kind)],
            (g.get(f"cancel_{kind}") or {}).get("seconds"),
            [(sl.get(f"cancel_{kind}") or {}).get("seconds"), None, (ts.get(f"cancel_{kind}") or {}).get("seconds")],
            False, special)
    sched = sl.get("config", {}).get("SchedulerParameters") or a.sched_params
    head = ["measure", "gpuward", f"Slurm 22.05 (`{sched}`)", "Slurm 22.05 (stock scheduler settings)",
            "task-spooler (4 slots, no GPUs)", "gpuward ÷ Slurm", "gpuward ÷ Slurm stock", "gpuward ÷ tsp"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out), [b for b in behind if b[0] != "start"]


def notes(a, g, sl, st, ts, report, behind):
    n = []
    kw = sl.get("config", {}).get("KillWait", "?")
    n.append("Ratios are gpuward's figure divided by the peer's: for submissions (higher is better) a ratio "
             "above 1 favours gpuward; for times (lower is better) a ratio below 1 does. ✓ marks the rows where "
             "gpuward is ahead.")
    n.append("**Set-up.** Slurm: `munged` (own key and socket), `slurmctld -D -i` and `slurmd -D -N localhost` "
             "started by this script, state under the temp dir; `select/cons_tres`, `CR_Core_Memory`, "
             "`DefMemPerNode=100`, partition `OverSubscribe=FORCE:4` (else only as many 1-GPU jobs run as "
             "there are CPUs), `proctrack/cgroup` (cgroup v1), 4 GRES GPUs backed by character devices "
             "made with `mknod` (jobs get `CUDA_VISIBLE_DEVICES`), no slurmdbd. The tuned column uses "
             f"`SchedulerParameters={a.sched_params}`; the stock column restarts both Slurm daemons without "
             "SchedulerParameters (`batch_sched_delay=3`). task-spooler: its own `TS_SOCKET`, `tsp -S 4`. "
             f"gpuward: `gpuwardd --simulate-gpus 4` (fake NVML), `--grace-seconds {a.grace}`"
             f"{' (its default)' if a.grace == 30 else ' (its default is 30)'}. "
             "In all three every job's output goes to a file (Slurm's `slurm-%j.out`, tsp's `ts-out.*`, "
             "gpuward's job log). "
             "Everything on loopback and one Unix socket each.")
    n.append("**Submissions.** Each tool's queue is first filled by a job holding all 4 GPUs/slots so "
             "the submitted jobs wait and only the submit path is timed; each submission is a separate "
             "process (`sbatch --gres=gpu:1 --wrap true`, `tsp true`, `gpuward submit -q --gpus 1 -- true`), "
             "run one after another; gpuward's and task-spooler's are interleaved (100 of one, then 100 of "
             "the other) so that both see the same machine load. Arrays: one `sbatch --array=1-N` against one "
             "`gpuward submit --array=1-N` (one `POST /api/v1/jobs` with `\"array\": \"1-N\"`; both a process "
             "start and one request; the request alone, sent by this script on its open connection, is given "
             "beside it). Batch: gpuward's `POST /api/v1/jobs/batch`, N separate jobs, in as many requests as "
             "keep each body under 1 MiB. task-spooler keeps one waiting client process "
             "and one connection per queued job and its server `select()`s on them, so it cannot hold more "
             "than ~990 queued jobs (the 994th submission blocks until a slot frees); its submissions are "
             f"measured with at most {min(a.tsp_chunk, a.jobs)} queued, the queue drained (untimed) before it "
             "would hold more; in the drain rounds the first "
             f"{min(a.tsp_chunk, a.jobs)} jobs are queued behind the blocker and the rest added while it runs.")
    sd = sl.get("drain", {}).get("jobs")
    ssd = st.get("drain", {}).get("jobs")
    n.append("**Drain and dispatch gap.** The jobs are `bench/stamp.c`, which appends its exec time and exit "
             "time (and `CUDA_VISIBLE_DEVICES`) to a file, so the gaps come from the jobs' own clocks. "
             f"Drain time is first start to last end; gpuward and task-spooler run {a.rounds} interleaved rounds "
             "each, the table gives the median round and the gaps pooled over all rounds. gpuward and Slurm: per GPU, gap = next job's exec on "
             "that GPU minus the previous job's exit there. task-spooler has no GPUs: its gap is measured "
             "over any slot — with all 4 slots busy and jobs waiting, the k-th job end (in time order) "
             "frees the slot that the (k+4)-th job start takes, so gap = start[k+4] − end[k]; its queue is "
             "filled behind a 4-slot blocker, which is then killed, so all 4 slots stay busy. "
             f"Jobs per round: gpuward {g.get('drain', {}).get('jobs', '—')} (one batch request), task-spooler "
             f"{ts.get('drain', {}).get('jobs', '—')} (separate `tsp` commands); Slurm " + (f"{sd} " if sd else "— ") + "(tuned) and " + (f"{ssd} " if ssd else "— ") +
             "(stock), each as one job array"
             + ("" if (sd or 1000) >= 1000 and (ssd or 1000) >= 1000 else
                ", fewer than 1,000 where marked because Slurm's scheduler starts a job only about once a "
                "second per GPU (tuned) or every 3 s (stock) and the run must stay short; the rate does "
                "not depend on the count, so the table also gives the time per 1,000")
             + ". The any-slot gap, computed "
             "for all as a cross-check, p50: "
             + "/".join(f"{t['drain']['any_gap_p50_ms']:.1f}" if 'drain' in t else "—" for t in (g, sl, st, ts))
             + " ms (gpuward/Slurm/Slurm stock/tsp).")
    h = {k: t.get("cancel_hung", {}) for k, t in (("g", g), ("s", sl), ("t", ts))}
    n.append("**Cancel.** The same script for all three, submitted as a 1-GPU job: it starts two `sleep 1000` "
             "children, writes the three PIDs to a file and waits. ‘Every process ignores SIGTERM’: the script "
             "runs `trap '' TERM` first (a hung job). ‘Main exits’: only the children ignore SIGTERM (like data "
             "loader workers). The clock starts just before the cancel command (`gpuward cancel`, `scancel`, "
             "`tsp -k`) and stops when none of the PIDs exists (zombies count as gone); /proc is polled every "
             f"5 ms. gpuward's grace (SIGTERM → SIGKILL) is {a.grace} s by default and Slurm's `KillWait` is {kw}: "
             "for a hung job both wait that long before SIGKILL; `gpuward cancel` itself returns only once "
             "the processes are gone. When the main process dies on SIGTERM, Slurm's step ends and "
             "slurmstepd kills the rest of the job's cgroup at once. `tsp -k` sends SIGTERM to the job's "
             f"process group and nothing else: processes that ignore it stay (measured for {a.tsp_cancel_bound} s, "
             "then this script SIGKILLs them by PID).")
    drain_keys = ("seconds", "gap_p50_ms", "gap_p99_ms")
    grouped = []
    for k, p in behind:
        if k in drain_keys:
            if ("drain", p) not in grouped:
                grouped.append(("drain", p))
        else:
            grouped.append((k, p))
    if behind:
        n.append("**Where gpuward is not ahead in this run, and why.**\n\n" +
                 "\n".join(f"- {why(a, g, sl, st, ts, k, p)}" for k, p in grouped))
    else:
        n.append("gpuward is ahead on every row measured in this run.")
    fails = [(name, t["error"]) for name, t in (("gpuward", g), ("Slurm", sl), ("Slurm stock", st),
                                                  ("task-spooler", ts)) if "error" in t]
    if fails:
        n.append("**Did not run.** " + "; ".join(f"{k}: {v}" for k, v in fails))
    n.append(f"Packages: {report.get('install')}.")
    return "\n\n".join(n)


def why(a, g, sl, st, ts, key, peer):
    """What we know about a row where gpuward is not ahead (measured facts, not guesses)."""
    name = {"drain": "Drain", "submit_seq": "Separate submissions", "submit_array": "Array submission",
            "submit_batch": "Batch submission", "seconds": "Drain",
            "gap_p50_ms": "Dispatch gap p50", "gap_p99_ms": "Dispatch gap p99", "cancel_hung": "Cancel of a hung job",
            "cancel_orphans": "Cancel, children ignore SIGTERM"}.get(key, key)
    head = f"{name}, vs {peer}: "
    if key == "submit_seq" and peer == "task-spooler":
        gs, ts_ = g.get("start_per_s"), ts.get("start_per_s")
        return head + (
            "each `gpuward submit` is a separate process (linked statically) that sends the "
            "caller's whole environment"
            + (f" (process start alone: `gpuward --version` {gs:,.0f}/s vs `tsp -V` {ts_:,.0f}/s)" if gs and ts_ else "")
            + ", and the daemon answers only once the job is committed to SQLite, so an acknowledged job "
            "survives `kill -9` of the daemon"
            + (f" (one C client on a kept-alive connection gets {g['api_single_per_s']:,.0f} durable "
               f"submissions/s: {1000 / g['api_single_per_s']:.2f} ms each in the daemon)" if g.get("api_single_per_s") else "")
            + ". The tsp server keeps its queue in memory only (lost with the "
            "server) and answers at once. For many jobs the API batch (a row below) is gpuward's fast path.")
    if key == "submit_array" and peer == "Slurm":
        return head + (
            f"both store an array as one record until its tasks start. For {a.jobs:,} tasks: gpuward "
            f"{1000 * a.jobs / g['submit_array']:.1f} ms, Slurm {1000 * a.jobs / sl['submit_array']:.1f} ms, "
            "each including its command's process start (`gpuward submit` waits for the array's commit "
            "to SQLite before it answers).")
    if key == "submit_batch" and peer == "Slurm":
        return head + (
            "the pending tasks of a Slurm job array share one job record in slurmctld, split off as "
            "they start (Slurm's job array documentation: arrays of millions of tasks are submitted in "
            f"milliseconds), so `--array=1-{a.jobs}` costs about one submission; gpuward's batch "
            f"creates {a.jobs:,} separate jobs in one SQLite transaction (its array, the row above, is "
            f"the like of Slurm's). For {a.jobs:,} jobs: gpuward "
            f"{1000 * a.jobs / g['submit_batch']:.1f} ms, Slurm {1000 * a.jobs / sl['submit_array']:.1f} ms "
            "(the latter including the `sbatch` process start).")
    if key == "drain" and peer == "task-spooler":
        return "Drain and dispatch gap, vs task-spooler: " + (
            f"gpuward {g['drain']['per_s']:,.0f} jobs/s, tsp {ts['drain']['per_s']:,.0f} jobs/s (median round); "
            f"gap gpuward p50 {g['drain']['gap_p50_ms']:.1f} ms / p99 {g['drain']['gap_p99_ms']:.1f} ms, tsp p50 "
            f"{ts['drain']['gap_p50_ms']:.1f} ms / p99 {ts['drain']['gap_p99_ms']:.1f} ms. Every gpuward job "
            "start and end is recorded in SQLite (the start is committed before the job is spawned, so a "
            "crash cannot start it twice: see ‘What costs what’ above) and each job gets its own log file "
            "in the state dir; tsp keeps its queue in memory only (it too writes one output file per job). "
            f"With 4 jobs ending together on this machine's {os.cpu_count()} cores, the last of them also "
            "waits for a core (the analysis above).")
    if key == "cancel_hung":
        gc, pc = g["cancel_hung"]["seconds"], (sl if peer == "Slurm" else ts)["cancel_hung"]["seconds"]
        kw = int(sl.get("config", {}).get("KillWait", "30").split()[0])
        return head + (
            f"both wait their configured grace before SIGKILL ({a.grace} s for gpuward, `KillWait` "
            f"{sl.get('config', {}).get('KillWait', '?')} for Slurm, the defaults of both). Slurm's job was "
            f"gone {kw - pc:.2f} s before its nominal {kw} s, gpuward's {gc - a.grace:.3f} s after its "
            "grace: the same design (wait the grace, then kill the whole job), timed a little differently. "
            "`--grace-seconds` "
            "(or `grace-seconds` in the config file) shortens gpuward's wait.")
    return head + "not analysed."


def render(a, R):
    g, sl, st, ts, report, m = R["gpuward"], R["slurm"], R["slurm_stock"], R["tsp"], R["report"], R["meta"]
    tab, behind = table(a, g, sl, st, ts)
    return (f"{BEGIN}\n## Side by side with Slurm and task-spooler\n\n"
            f"Measured {m['date']} on this machine: {m['cores']} cores, {m['arch']}, Linux {m['kernel']} "
            f"(1/5/15-min load average {m['load_before']} before the run, {m['load_after']} after), gpuward RelWithDebInfo on 4 simulated GPUs, Slurm {m['slurm_version']}, task-spooler "
            f"{m['tsp_version']}, {report.get('state', 'state under the default temporary directory')}, "
            f"all in one run of `{m['cmd']}` ({m['elapsed_s']:.0f} s).\n\n"
            f"{tab}\n\n{notes(a, g, sl, st, ts, report, behind)}\n{END}")

#!/usr/bin/env python3
"""Two builds of gpuward side by side, in one run on one machine: before and after a change.

This machine's speed changes from one day to the next (the same code measured 5,493 and 3,900
API submissions/s a few days apart), so a change is judged by running the old and the new
build alternately, here and now, not against a table made on another day.  Each round runs
`bench/bench.py --only submit` and `--only dispatch` on the old build, then on the new one;
the block written holds each build's median over the rounds, and the ratio.

    git worktree add ../gpuward-old HEAD~1 && cmake -S ../gpuward-old -B ../gpuward-old/build && \\
        cmake --build ../gpuward-old/build
    python3 bench/ab.py --old ../gpuward-old/build --new build --rounds 3 --write docs/PERFORMANCE.md
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

MEASURES = [  # (key, label, unit, better)
    ("api_submit_per_s", "Submissions, one API client", "/s", "higher"),
    ("cli_submit_par4_per_s", "Submissions, `gpuward submit` processes, 4 at a time", "/s", "higher"),
    ("version_par4_per_s", "`gpuward --version` processes, 4 at a time", "/s", "higher"),
    ("true_par4_per_s", "The machine's part: the same harness starting `true`, 4 at a time", "/s", "higher"),
    ("queue_ms_p50", "`gpuward queue` with all those submissions pending", " ms", "lower"),
    ("dispatch_gap_ms_p50", "Dispatch gap p50, 4 GPUs", " ms", "lower"),
    ("dispatch_gap_ms_p99", "Dispatch gap p99, 4 GPUs", " ms", "lower"),
    ("floor4_gap_ms_p50", "The machine's part: 4 loops that only vfork and exec the job, p50", " ms", "lower"),
    ("floor4_per_s", "The machine's part: those 4 loops' rate", " jobs/s", "higher"),
    ("drain_per_s", "Drain rate, 4 GPUs", " jobs/s", "higher"),
    ("drain_vs_floor", "Drain rate ÷ the 4 loops' rate, same round", "×", "higher"),
    ("gap_vs_floor", "Dispatch gap p50 ÷ the 4 loops' p50, same round", "×", "lower"),
    ("serial_gap_ms_p50", "Dispatch gap p50, 1 GPU", " ms", "lower"),
    ("floor_gap_ms_p50", "The machine's part: a loop that only vforks and execs the job, p50",
     " ms", "lower"),
]


def run(build, only, extra, tools):
    cmd = [sys.executable, os.path.join(HERE, "bench.py"), "--build", build, "--only", only, *extra]
    # The machine's floors are measured with the new build's tools on both sides.
    out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, GW_BENCH_TOOLS=tools))
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout[out.stdout.index("{"):])


def spread_cell(values, unit):
    """The median, and the range the rounds spread over: a ratio inside it is the machine."""
    if not values:
        return "—"
    med = f"{statistics.median(values):,.2f}{unit}"
    return med if len(values) < 2 else f"{med} ({min(values):,.2f}–{max(values):,.2f})"


def overlap(old, new):
    """Whether the two builds' rounds overlap: "yes" means the difference is within the spread."""
    if not old or not new:
        return "—"
    return "yes" if max(min(old), min(new)) <= min(max(old), max(new)) else "no"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, action="append",
                    help="build dir of the code before the change; repeat it to compare with several "
                         "(e.g. the last release and the branch point): every build runs in each round")
    ap.add_argument("--old-name", action="append", default=[],
                    help="what each --old is (a commit), in the same order, for the table's heading")
    ap.add_argument("--new", default=os.path.join(HERE, "..", "build"), help="build dir of the code after it")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--api-jobs", type=int, default=10000)
    ap.add_argument("--cli-jobs", type=int, default=1000)
    ap.add_argument("--dispatch-jobs", type=int, default=2000)
    ap.add_argument("--label", default="", help="what changed, for the block's heading")
    ap.add_argument("--write", help="replace the ab block of this Markdown file")
    a = ap.parse_args()
    olds = [f"old{i + 1}" if len(a.old) > 1 else "old" for i in range(len(a.old))]
    names = {s: (a.old_name[i] if i < len(a.old_name) else s) for i, s in enumerate(olds)}
    builds = dict(zip(olds, a.old), new=a.new)
    got = {s: [] for s in builds}
    order = [*olds, "new"]
    for rnd in range(a.rounds):
        # Each round starts with the next build in turn (old first, then new first, with two):
        # this machine drifts over a run (each build slower round after round), and a fixed
        # order would put the drift on one side.
        k = rnd % len(order)
        for side in order[k:] + order[:k]:
            build = os.path.abspath(builds[side])
            tools = os.path.join(os.path.abspath(a.new), "bench")
            r = run(build, "submit", ["--api-jobs", str(a.api_jobs), "--cli-jobs", str(a.cli_jobs)], tools)
            r.update(run(build, "dispatch", ["--dispatch-jobs", str(a.dispatch_jobs)], tools))
            r["load1"] = os.getloadavg()[0]
            if r.get("floor4_per_s") and r.get("floor4_gap_ms_p50"):
                r["drain_vs_floor"] = r["drain_per_s"] / r["floor4_per_s"]
                r["gap_vs_floor"] = r["dispatch_gap_ms_p50"] / r["floor4_gap_ms_p50"]
            got[side].append(r)
            print(f"round {rnd + 1} {side}: " + ", ".join(f"{k} {r[k]:.2f}" for k, *_ in MEASURES if k in r)
                  + f", load {r['load1']:.1f}", file=sys.stderr)
    rows = []
    for key, label, unit, better in MEASURES:
        side = {s: [r[key] for r in got[s] if key in r] for s in got}
        med = {s: statistics.median(side[s]) if side[s] else None for s in got}
        cells = [spread_cell(side[s], unit) for s in (*olds, "new")]
        for o in olds:
            cells.append(f"{med['new'] / med[o]:.2f}" if med[o] and med["new"] is not None else "—")
        cells += [overlap(side[o], side["new"]) for o in olds]
        rows.append(f"| {label} ({better} is better) | " + " | ".join(cells) + " |")
    head = (["measure"] + [f"{names[o]}: median (rounds' range)" for o in olds] + ["new: median (rounds' range)"]
            + [f"new / {names[o]}" for o in olds] + [f"rounds overlap {names[o]}" if len(olds) > 1 else "rounds overlap"
                                                    for o in olds])
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + rows
    loads = [r["load1"] for s in got for r in got[s]]
    rows.append(f"\n1-min load average after each build's round: {min(loads):.1f} to {max(loads):.1f}.")
    cmd = ("python3 bench/ab.py " + " ".join(f"--old {o.upper()}_BUILD" for o in olds)
           + f" --new NEW_BUILD --rounds {a.rounds}"
           + ("" if a.dispatch_jobs == 2000 else f" --dispatch-jobs {a.dispatch_jobs}"))
    text = (f"<!-- ab:begin -->\n### {a.label or 'Before and after'}\n\nMeasured {time.strftime('%Y-%m-%d')} on this "
            f"machine ({os.cpu_count()} cores, Linux {platform.release()}): medians of {a.rounds} rounds "
            f"per build ({'old first, then new first, in turn' if len(olds) == 1 else 'each build first in turn'}), {a.dispatch_jobs} dispatch jobs, {a.api_jobs} API submissions.  Command: `{cmd}`.\n\n"
            + "\n".join(rows) + "\n<!-- ab:end -->")
    print(text)
    if a.write:
        with open(a.write) as f:
            doc = f.read()
        b, e = doc.find("<!-- ab:begin -->"), doc.find("<!-- ab:end -->")
        doc = doc[:b] + text + doc[e + len("<!-- ab:end -->"):] if b >= 0 and e >= 0 else doc + "\n" + text + "\n"
        with open(a.write, "w") as f:
            f.write(doc)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What a test run cost, read from ctest's JUnit files (ctest --output-junit).

    testreport.py [--total SECONDS] [--slowest N] BUILD:JUNIT ...
        the run's wall time and its N slowest tests (default 10), each with its build;
        printed, never judged: timing assertions stay out of the tests
    testreport.py --costs FILE BUILD:JUNIT ...
        writes FILE (tests/costs.txt): each test's seconds, longest first, which CMake gives
        ctest as the test's COST so that the longest start first
    testreport.py --markdown N BUILD:JUNIT ...
        the N slowest as a Markdown table (docs/TESTING.md)
"""
import argparse
import sys
import xml.etree.ElementTree as ET


def read(spec):
    build, _, path = spec.partition(":")
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        status = case.get("status", "run")
        if case.find("failure") is not None:
            status = "failed"
        elif case.find("skipped") is not None or status in ("notrun", "disabled"):
            status = "skipped"
        else:
            status = "passed"
        out.append((float(case.get("time") or 0), case.get("name"), build, status))
    return out


def minutes(s):
    return f"{int(s) // 60} min {int(s) % 60:02d} s"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--total", type=float, help="the whole run's wall time in seconds")
    ap.add_argument("--slowest", type=int, default=10)
    ap.add_argument("--costs", metavar="FILE")
    ap.add_argument("--markdown", type=int, metavar="N")
    ap.add_argument("junit", nargs="+", metavar="BUILD:JUNIT")
    a = ap.parse_args()
    cases = []
    for spec in a.junit:
        try:
            cases += read(spec)
        except (OSError, ET.ParseError) as e:
            print(f"testreport: {spec}: {e}", file=sys.stderr)
    cases.sort(key=lambda c: -c[0])
    if a.costs:
        seen = {}
        for t, name, _, _ in cases:
            seen[name] = max(t, seen.get(name, 0))
        with open(a.costs, "w") as f:
            f.write("# Seconds each test took in a whole run (scripts/testreport.py --costs), longest first:\n"
                    "# ctest starts the longest first (COST).  Refresh after tests are added or sped up.\n")
            for name, t in sorted(seen.items(), key=lambda kv: (-kv[1], kv[0])):
                f.write(f"{name} {t:.1f}\n")
        return 0
    if a.markdown:
        print("| seconds | test | build |\n|---:|---|---|")
        for t, name, build, _ in cases[:a.markdown]:
            print(f"| {t:.1f} | `{name}` | {build} |")
        return 0
    if a.total is not None:
        print(f"== wall time: {minutes(a.total)} ({a.total:.0f} s), "
              f"{len(cases)} tests, {sum(c[0] for c in cases):.0f} s of test time")
    print(f"== the {min(a.slowest, len(cases))} slowest tests:")
    for t, name, build, status in cases[:a.slowest]:
        print(f"   {t:7.1f} s  {name} ({build}{'' if status == 'passed' else ', ' + status})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

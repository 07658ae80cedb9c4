#!/usr/bin/env python3
"""A flood of connections over the per-user cap writes a bounded log: the first refusal of a
uid is logged, the rest are counted and summed up in one line at most once a minute (and
when the daemon stops).  Root only: the flooding client runs as another uid (setpriv)."""
import os
import re
import subprocess
import sys

import gwtest
from gwtest import DaemonTest

CAP = 2
FLOOD = 1500
UID = 43211  # no account needed: the cap counts uids

# Run as UID: holds CAP connections, then opens FLOOD more one after another, reading each
# to its end; prints how many were answered 429.
FLOOD_SCRIPT = r"""
import socket, sys
path, cap, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def connect():
    s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(path); return s
held = [connect() for _ in range(cap)]
refused = 0
for _ in range(n):
    s = connect()
    d = b""
    while (c := s.recv(4096)):
        d += c
    s.close()
    refused += d.startswith(b"HTTP/1.1 429")
print(refused)
"""


@gwtest.unittest.skipUnless(gwtest.IS_ROOT, "needs root to act as another uid (setpriv)")
class RefusalLogTest(DaemonTest):
    gpus = 1
    extra = ("--max-connections-per-user", str(CAP))

    def test_a_flood_is_logged_once_with_a_count(self):
        p = subprocess.run(gwtest.as_user(UID) + [sys.executable, "-c", FLOOD_SCRIPT, self.d.socket, str(CAP),
                                                  str(FLOOD)], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-500:])
        refused = int(p.stdout)
        self.assertEqual(refused, FLOOD)
        log = self.d.daemon_log()
        firsts = [line for line in log.splitlines() if "refused a connection" in line]
        self.assertEqual(len(firsts), 1, firsts[:5])
        self.assertIn(f"uid {UID} already holds {CAP} connections", firsts[0])
        self.assertIn("counted and logged at most once a minute", firsts[0])
        # The daemon still serves, and its last words sum up what was kept out of the log.
        self.assertEqual(self.d.api("GET", "/healthz")[0], 200)
        self.d.stop()
        log = self.d.daemon_log()
        about = [line for line in log.splitlines() if f"uid {UID}" in line]
        self.assertEqual(len(about), 2, about[:5])
        m = re.search(rf"uid {UID}: (\d+) more connections refused on the Unix socket over the cap of {CAP} "
                      r"in the last \d+ s", about[1])
        self.assertTrue(m, about[1])
        self.assertEqual(int(m.group(1)), refused - 1)


if __name__ == "__main__":
    gwtest.main()

"""Crash durability: kill -9 the daemon at random moments during a stream of submissions,
cancels and job exits, restart it, and check the invariants after every restart.

GW_DURABILITY_KILLS sets the number of kills (50 by default; `make soak` runs more)."""
import os
import random
import subprocess
import threading
import time

from gwtest import GPUWARD, SLOW, DaemonTest, main, pid_alive, wait_until

KILLS = int(os.environ.get("GW_DURABILITY_KILLS", "50"))
FINAL_STATES = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT"}


class DurabilityTest(DaemonTest):
    def check_invariants(self, acked, round_):
        st, r = self.d.api("GET", "/api/v1/jobs?state=PENDING,HELD,RUNNING,COMPLETED,FAILED,CANCELLED,TIMEOUT,"
                                  "RECLAIMED&limit=10000")
        self.assertEqual(st, 200)
        jobs = {j["id"]: j for j in r["jobs"]}
        # One listing holds at most 10,000 jobs (the API's limit): older ones, past it in a
        # long soak, are looked up one by one.
        for jid in acked:
            if jid not in jobs:
                st, r = self.d.api("GET", f"/api/v1/jobs/{jid}")
                self.assertEqual(st, 200, f"kill {round_}: job {jid} was acknowledged, then lost: {r}")
        held = {}
        for j in jobs.values():
            if j["state"] != "RUNNING":
                continue
            for g in j["gpus"]:
                self.assertNotIn(g, held, f"kill {round_}: GPU {g} given to jobs {held.get(g)} and {j['id']}")
                held[g] = j["id"]
        # A RUNNING job has a live process once its supervisor has reported it; a job whose
        # process just exited leaves RUNNING as soon as its supervisor reports the exit.
        for j in jobs.values():
            if j["state"] == "RUNNING" and j["pid"] and not pid_alive(j["pid"]):
                wait_until(lambda: self.d.job(j["id"])["state"] != "RUNNING", timeout=10,
                           what=f"kill {round_}: job {j['id']} RUNNING without a process")

    def test_kill9_loop(self):
        rng = random.Random(2026)
        acked, lock, stop = [], threading.Lock(), threading.Event()

        def stream():
            i = 0
            while not stop.is_set() and i < 10000:
                i += 1
                kind = rng.random()
                if kind < 0.7:
                    p = subprocess.run([GPUWARD, "--socket", self.d.socket, "submit", "-q", "--gpus",
                                        str(rng.choice([1, 1, 2])), "--", "sleep", f"0.0{rng.randint(1, 9)}"],
                                       capture_output=True, text=True, timeout=30, cwd=self.d.work)
                    if p.returncode == 0:
                        with lock:
                            acked.append(int(p.stdout.strip()))
                elif acked:
                    with lock:
                        victim = rng.choice(acked)
                    subprocess.run([GPUWARD, "--socket", self.d.socket, "cancel", "--no-wait", str(victim)],
                                   capture_output=True, timeout=30)

        for round_ in range(KILLS):
            stop.clear()
            with lock:
                before = len(acked)
            t = threading.Thread(target=stream)
            t.start()
            time.sleep(rng.uniform(0.05, 0.3) * SLOW)
            # On a loaded machine the first submission may take longer than the nap: each round
            # kills a daemon that has acknowledged something (bounded wait).
            wait_until(lambda: len(acked) > before or not t.is_alive(), timeout=30 * SLOW, interval=0.01,
                       what=f"kill {round_}: a submission to be acknowledged")
            self.d.kill9()
            stop.set()
            t.join(timeout=60)
            self.d.start()
            with lock:
                snapshot = list(acked)
            self.check_invariants(snapshot, round_)
        # Everything settles: every acknowledged job ends, and each has its events.
        for jid in acked:
            try:
                j = self.d.wait_state(jid, FINAL_STATES, timeout=300)
            except AssertionError:
                self.fail(f"job {jid} did not end: {self.d.job(jid)}")
            kinds = [e["kind"] for e in j["events"]]
            self.assertEqual(kinds[0], "submit", j)
            self.assertIn(kinds[-1], ("end", "cancel", "lost"), j)
        self.assertGreaterEqual(len(acked), KILLS)


if __name__ == "__main__":
    main()

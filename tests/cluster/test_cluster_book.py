"""Bookings on a real two-node Slurm cluster (tests/cluster/slurmcluster.py): a booking
accepted by `gpuwardd --backend slurm` holds whole nodes in a Slurm reservation
(gpuward_book_ID, for the booking's user, over its window), so that Slurm's own scheduler
keeps every job whose time limit would overlap the window off them, plain sbatch jobs too;
the user's jobs in the window go into it; cancelling the booking deletes it, once the
booking's jobs have left it when one was running; a booking Slurm cannot hold is refused
with its words.  Needs root, network namespaces, slurm-wlm and
munge; exits 77 (skipped) with the reason where they are missing."""
import json
import os
import subprocess
import sys
import time
import unittest

import slurmcluster
from slurmcluster import gwtest

WHY_NOT = slurmcluster.why_not_here()


def reservation(c, name):
    """scontrol show reservation NAME as a dict, or None when Slurm has none of that name."""
    r = subprocess.run(["scontrol", "show", "reservation", name], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, SLURM_CONF=c.conf))
    if r.returncode != 0 or "ReservationName=" not in r.stdout:
        return None
    return dict(f.split("=", 1) for f in r.stdout.split() if "=" in f)


@unittest.skipIf(WHY_NOT, f"no Slurm cluster here: {WHY_NOT}")
class ClusterBook(unittest.TestCase):
    def test_booking_holds_a_node_against_waiting_jobs(self):
        users = gwtest.Users(prefix="gwcb")
        try:
            with slurmcluster.SlurmCluster(nodes=2, gpus=4) as c, \
                    gwtest.Daemon(gpus=4, extra=["--backend", "slurm"], env={"SLURM_CONF": c.conf}) as d:
                d.start()
                try:
                    self.run_booking(c, d, users.add("u"), users.add("v"))
                except BaseException:
                    print(d.daemon_log()[-20000:], file=sys.stderr)
                    print(c.log("slurmctld.log")[-5000:], file=sys.stderr)
                    raise
        finally:
            users.remove_all()

    def book(self, d, user, *args, check=True):
        """gpuward reserve as user; the booking, approved by an admin where it waits for one."""
        r = d.cli("reserve", "--json", *args, user=user.pw_uid, check=False)
        if not check:
            return r
        if r.returncode != 0:
            self.fail(f"gpuward reserve {args}: {r.returncode} {r.stdout} {r.stderr}")
        b = json.loads(r.stdout)
        if b["state"] == "PENDING_APPROVAL":  # larger than the host's policy lets through alone
            self.assertIsNone(reservation(self.c, f"gpuward_book_{b['id']}"), "nothing held before approval")
            d.cli("admin", "approve", str(b["id"]))
            b = [x for x in json.loads(d.cli("reservations", "--json").stdout)["bookings"] if x["id"] == b["id"]][0]
        self.assertEqual(b["state"], "APPROVED", b)
        return b

    def agents_report(self, c, d, gpus):
        """Each node's snapshot, as its agent posts it: the booking policy's share is of these
        GPUs (2 nodes of 4: 8), not of the head node's."""
        for node in c.nodes:
            tok = d.cli_json("token", "create", "--scope", "agent", "--node", node, "--name", node)["token"]
            snap = {"node": node, "interval": 60, "driver": "550.54",
                    "gpus": [{"index": i, "name": "A100", "uuid": f"GPU-{node}-{i}", "mem_total": 100, "mem_used": 0,
                              "util": 0, "health": "ok", "procs_total": 0, "procs": []} for i in range(gpus)]}
            st, reply = d.tcp_json("POST", "/api/v1/agent/snapshot", snap, token=tok)
            self.assertEqual(st, 200, reply)

    def run_booking(self, c, d, user, other):
        self.c = c
        self.agents_report(c, d, 4)
        # 2 GPUs tomorrow 09:00-13:00: one whole node of 4 held for the user.
        b = self.book(d, user, "--gpus", "2", "--start", "tomorrow 09:00", "--duration", "4h")
        name = f"gpuward_book_{b['id']}"
        res = reservation(c, name)
        self.assertIsNotNone(res, f"scontrol show reservation {name}")
        self.assertEqual(res["Users"], user.pw_name)
        self.assertIn(res["Nodes"], c.nodes, "one whole node for 2 GPUs of a node of 4")
        self.assertEqual(res["NodeCnt"], "1")
        self.assertRegex(res["StartTime"], r"T09:00:00$")
        self.assertRegex(res["EndTime"], r"T13:00:00$")
        held = res["Nodes"]
        free = [n for n in c.nodes if n != held][0]
        self.assertIn(f"Slurm reservation {name}", d.daemon_log())

        # Plain sbatch jobs whose time limit (2 days) would overlap the window: Slurm starts
        # none on the held node, 4 on the other (a GPU each), the other 2 wait.
        long_jobs = [c.sbatch("--gres=gpu:1", "--time=2-00:00:00", "--wrap", "sleep 300") for _ in range(6)]

        def settled():
            q = c.squeue()
            run = [j for j in long_jobs if q.get(j, ("",))[0] == "RUNNING"]
            wait = [j for j in long_jobs if q.get(j, ("",))[0] == "PENDING" and q[j][1] != "None"]
            return (q, run, wait) if len(run) == 4 and len(wait) == 2 else None
        q, run, wait = gwtest.wait_until(settled, 60, what="4 long jobs running, 2 waiting")
        self.assertEqual({q[j][2] for j in run}, {free}, "no long job on the held node")
        # A short job ends long before the window: the held node takes it now.
        short = c.sbatch("--gres=gpu:1", "--time=10", f"--nodelist={held}", "--wrap", "sleep 300")
        gwtest.wait_until(lambda: c.squeue().get(short, ("",))[0] == "RUNNING", 60,
                          what="a short job on the held node")
        q = c.squeue()
        self.assertEqual(q[short][2], held)
        self.assertEqual({q[j][2] for j in long_jobs if q[j][0] == "RUNNING"}, {free})

        # Another user's booking in the same window: the held node is reserved, the other busy
        # with jobs that run into it: refused with Slurm's words, nothing booked or reserved.
        r = self.book(d, other, "--gpus", "1", "--start", "tomorrow 10:00", "--duration", "1h", check=False)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        refusal = json.loads(r.stdout)
        self.assertEqual(refusal["field"], "start", refusal)
        self.assertIn("Slurm cannot reserve 1 node of 4 GPUs for it: Error creating the reservation: "
                      "Requested nodes are busy", refusal["error"])
        booked = json.loads(d.cli("reservations", "--json").stdout)["bookings"]
        self.assertEqual([x["id"] for x in booked], [b["id"]])
        self.assertNotIn("gpuward_book_", c.cmd("scontrol", "show", "reservation").replace(name, ""))

        # Cancelling the booking deletes its reservation; then the waiting long jobs may start
        # on that node.
        d.cli("unreserve", str(b["id"]), user=user.pw_uid)
        self.assertIsNone(reservation(c, name), "the reservation is gone with the booking")
        gwtest.wait_until(lambda: any(c.squeue()[j][2] == held for j in wait), 60,
                          what="a long job on the node once free")
        for j in long_jobs + [short]:
            c.cmd("scancel", str(j))
        c.wait_nodes_idle()

        # A booking longer than the host's policy lets through alone (2 days) holds nothing in
        # Slurm until an admin approves it; then its reservation is there, until it is released.
        r = d.cli("reserve", "--json", "--gpus", "1", "--start", "tomorrow 09:00", "--duration", "2d",
                  user=user.pw_uid)
        long_b = json.loads(r.stdout)
        self.assertEqual(long_b["state"], "PENDING_APPROVAL", long_b)
        long_name = f"gpuward_book_{long_b['id']}"
        self.assertIsNone(reservation(c, long_name), "nothing held before approval")
        d.cli("admin", "approve", str(long_b["id"]))
        self.assertEqual(reservation(c, long_name)["Users"], user.pw_name)
        d.cli("unreserve", str(long_b["id"]), user=user.pw_uid)
        self.assertIsNone(reservation(c, long_name))

        # A booking that begins in a minute, known again by a restarted daemon: once it has
        # begun, the user's gpuward job goes into its reservation, on its node.
        b3 = self.book(d, user, "--gpus", "1", "--start", "now+1m", "--duration", "1h")
        res3 = reservation(c, f"gpuward_book_{b3['id']}")
        self.assertIsNotNone(res3)
        d.stop()
        d.start()
        gwtest.wait_until(lambda: time.time() >= b3["start"] + 1, 90, what="the booking to begin")
        jid = d.submit("--gpus", "1", "--time", "10m", "--", "sleep", "300", user=user.pw_uid)
        j = d.wait_job(jid, lambda j: any(" RUNNING on " in e["message"] for e in j["events"]), timeout=60,
                       what="the user's job running in Slurm")
        msgs = [e["message"] for e in j["events"]]
        self.assertTrue(any(f"in reservation gpuward_book_{b3['id']}" in m for m in msgs), msgs)
        self.assertTrue(any(f"RUNNING on {res3['Nodes']}" in m for m in msgs), msgs)
        d.cli("cancel", str(jid), user=user.pw_uid)
        d.wait_state(jid, {"CANCELLED", "FAILED", "COMPLETED"}, timeout=30)

        # Released with a job of the booking running in it: Slurm will not delete a reservation
        # in use, so the job is stopped first and the reservation deleted once the job has left
        # it (not left to hold the node for nobody until the booking's end).
        jid = d.submit("--gpus", "1", "--time", "10m", "--reservation", str(b3["id"]), "--", "sleep", "300",
                       user=user.pw_uid)
        d.wait_job(jid, lambda j: any(" RUNNING on " in e["message"] for e in j["events"]), timeout=60,
                   what="the booking's job running in Slurm")
        d.cli("unreserve", str(b3["id"]), user=user.pw_uid)
        j = d.wait_state(jid, {"TIMEOUT", "CANCELLED", "FAILED", "COMPLETED"}, timeout=60)
        self.assertIn("its booking ended early", j.get("reason") or "", j)
        name3 = f"gpuward_book_{b3['id']}"
        gwtest.wait_until(lambda: reservation(c, name3) is None, 60, what=f"reservation {name3} deleted")
        self.assertIn(f"Slurm reservation {name3} deleted", d.daemon_log())


if __name__ == "__main__":
    if WHY_NOT:
        print(f"skipped: no Slurm cluster here: {WHY_NOT}")
        sys.exit(77)
    unittest.main(verbosity=2)

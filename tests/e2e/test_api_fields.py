"""The keys of each resource the API replies with, in their order: the CLI, the dashboard and
users' scripts read them, and the field tables of src/api must keep them as they were.  One
daemon with an ended job that was retried, a running job with a process of its own and a
process of no job on its GPUs, bookings, a token, a quota and a drained GPU."""
import subprocess

from gwtest import DaemonTest, main, wait_until

GPU = ["index", "name", "uuid", "mem_total", "mem_used", "util", "mem_util", "temp", "power_w", "health",
       "drain_reason", "job", "job_info", "processes", "sampled_at", "mig_mode", "gpm", "mig"]
PROC = ["pid", "user", "command", "mem_used", "sm_util", "cpu", "job", "stray"]
JOB_INFO = ["id", "user", "name", "start_time", "eta", "display_id", "reclaim_at", "leak"]
GPU_EVENT = ["time", "gpu", "node", "kind", "xid", "job", "message"]
ATTEMPT = ["attempt", "gpus", "start_time", "end_time", "class", "evidence", "resumed_from", "epoch", "ckpt_epoch",
           "log_path", "exit_code", "signal"]
EVENT = ["time", "state", "kind", "message"]
BOOKING = ["id", "user", "uid", "name", "ngpus", "gpus", "start", "end", "state", "note"]
SEGMENT = ["gpu", "start", "end", "kind", "id", "booking", "label"]
TOKEN = ["id", "user", "name", "created", "last_used", "expires", "expired", "scope", "node"]
QUOTA_KEYS = ["max_gpus", "max_pending_jobs", "max_time_limit", "max_gpu_hours_7d", "max_booking_hours",
              "max_booking_gpus", "booking_horizon_hours", "max_priority"]
USAGE_USER = ["user", "uid", "jobs", "gpu_hours", "util_mean", "reclaimed_gpu_hours", "states"]


class ApiFieldsTest(DaemonTest):
    gpus = 4

    def get(self, path):
        st, body = self.d.api("GET", path)
        self.assertEqual(st, 200, body)
        return body

    def test_every_resource_keeps_its_keys_in_order(self):
        d = self.d
        bad = d.submit_api(["sh", "-c", "kill -9 $$"], retries=1, retry_on="killed", name="bad")
        run = d.submit_api(["sleep", "300"], ngpus=2, name="runner")
        d.wait_state(bad, ["FAILED"])
        d.wait_state(run, ["RUNNING"])
        rogue = subprocess.Popen(["sleep", "120"])
        try:
            d.write_procs(rogue.pid, [(0, 500, 10)])
            d.write_procs(d.wait_pid(run), [(g, 1000, 50) for g in d.job(run)["gpus"]])
            wait_until(lambda: sum(len(g["processes"]) for g in d.gpu_list()) == 3, timeout=20,
                       what="the processes to be sampled")
            self.check_gpus(run)
        finally:
            rogue.kill()
            rogue.wait()
        self.check_job(bad)
        self.check_sharing()

    def check_gpus(self, run):
        gpus = self.get("/api/v1/gpus")
        self.assertEqual(list(gpus), ["gpus", "rogue_processes", "simulated", "driver", "host"])
        for g in gpus["gpus"]:
            self.assertEqual(list(g), GPU)
            for p in g["processes"]:
                self.assertEqual(list(p), PROC)
            if g["job"] == run:
                self.assertEqual(list(g["job_info"]), JOB_INFO)
        # A guest (TCP, no token) reads the same keys, the command lines null.
        st, body = self.d.tcp_json("GET", "/api/v1/gpus")
        self.assertEqual(st, 200, body)
        procs = [p for g in body["gpus"] for p in g["processes"]]
        self.assertEqual([list(p) for p in procs], [PROC] * 3)
        self.assertEqual({p["command"] for p in procs}, {None})
        events = self.get("/api/v1/gpus/events")["events"]
        self.assertTrue(events)
        for e in events:
            self.assertEqual(list(e), GPU_EVENT)

    def check_job(self, bad):
        j = self.get(f"/api/v1/jobs/{bad}")
        self.assertEqual([list(a) for a in j["attempts"]], [ATTEMPT] * 2)
        self.assertEqual({a["signal"] for a in j["attempts"]}, {9})
        for e in j["events"]:
            self.assertEqual(list(e), EVENT)

    def check_sharing(self):
        d = self.d
        st, b = d.api("POST", "/api/v1/bookings", {"ngpus": 1, "start": "now+2h", "duration": "3h", "name": "bk"})
        self.assertEqual((st, list(b)), (201, BOOKING), b)
        st, full = d.api("POST", "/api/v1/bookings", {"ngpus": 4, "start": "now+1h", "duration": "3h"})
        self.assertEqual((st, list(full), list(full["nearest"])), (409, ["error", "field", "nearest"], ["start", "end"]),
                         full)
        self.assertEqual(list(self.get("/api/v1/bookings")["bookings"][0]), BOOKING)
        sched = self.get("/api/v1/schedule")
        self.assertEqual(list(sched), ["from", "to", "segments", "text"])
        self.assertTrue(sched["segments"])
        for s in sched["segments"]:
            self.assertEqual(list(s), SEGMENT)
        st, t = d.api("POST", "/api/v1/tokens", {"name": "ci", "expires": "30d"})
        self.assertEqual((st, list(t)), (201, ["id", "user", "name", "token", "expires", "scope", "node"]), t)
        self.assertEqual([list(x) for x in self.get("/api/v1/tokens")["tokens"]], [TOKEN])
        self.assertEqual(d.api("POST", "/api/v1/quota", {"subject": "default", "settings": ["max_gpus=3"]})[0], 200)
        q = self.get("/api/v1/quota")
        self.assertEqual((list(q), list(q["limits"]), list(q["usage"])),
                         (["user", "limits", "usage"], QUOTA_KEYS, ["gpus_running", "pending_jobs", "gpu_hours_7d"]))
        self.assertEqual(q["limits"]["max_gpus"], {"value": "3", "from": "default"})
        usage = self.get("/api/v1/usage")
        self.assertEqual(list(usage), ["days", "since", "until", "users"])
        self.assertEqual([list(u) for u in usage["users"]], [USAGE_USER] * len(usage["users"]))
        self.assertTrue(usage["users"])


if __name__ == "__main__":
    main()

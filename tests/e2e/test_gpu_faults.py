"""GPU faults the driver reports only by failing (a GPU that falls off the bus), the order in
which a job's death and its GPU's loss are seen, and processes started outside gpuward."""
import json
import os
import pwd
import sqlite3
import subprocess
import sys
import time

from gwtest import IS_ROOT, Daemon, DaemonTest, Users, as_user, events_of, main, wait_until


def set_fake(d, **settings):
    """Sets keys of the fake NVML's config (gpu1_lost=1 sets gpu1.lost=1), keeping the rest."""
    path = os.path.join(d.state, "sim-nvml", "config")
    with open(path) as f:
        lines = f.read().splitlines()
    for key, value in settings.items():
        key = key.replace("_", ".", 1) if key.startswith("gpu") else key
        lines = [ln for ln in lines if not ln.startswith(key + "=")] + [f"{key}={value}"]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.rename(tmp, path)
    os.utime(path)


def gpu_events(d, gpu, kind):
    """The messages of the GPU's recorded events of that kind, oldest first (from the store, so
    that these tests do not depend on the API's)."""
    db = sqlite3.connect(f"file:{os.path.join(d.state, 'gpuward.db')}?mode=ro", uri=True, timeout=10)
    try:
        rows = db.execute("SELECT message FROM gpu_events WHERE gpu = ? AND kind = ? ORDER BY id", (gpu, kind))
        return [r[0] for r in rows]
    finally:
        db.close()


class LostGpuDrainTest(DaemonTest):
    gpus = 2

    def test_a_gpu_that_fell_off_the_bus_stays_drained_when_it_answers_again(self):
        jid = self.d.submit("--gpus", 1, "--", "sleep", "60")
        gpu = self.d.wait_state(jid, "RUNNING")["gpus"][0]
        set_fake(self.d, **{f"gpu{gpu}_lost": 1})
        g = wait_until(lambda: (lambda g: g if g["drain_reason"] else None)(self.d.gpu_list()[gpu]),
                       what="the lost GPU to be drained")
        self.assertIn(f"GPU {gpu} fell off the bus (NVML: GPU is lost) at ", g["drain_reason"])
        self.assertIn("drained until an admin undrains it", g["drain_reason"])
        told = [e["message"] for e in self.d.job(jid)["events"] if "fell off the bus" in e["message"]]
        self.assertTrue(told, "the job on it is told why its GPU was drained")

        set_fake(self.d, **{f"gpu{gpu}_lost": 0})
        wait_until(lambda: self.d.gpu_list()[gpu]["health"] != "lost", what="the GPU to answer again")
        self.assertEqual(self.d.gpu_list()[gpu]["health"], "drained", "answering again does not undrain it")
        self.d.cli("cancel", jid)
        self.d.wait_state(jid, "CANCELLED")
        other = self.d.submit("--gpus", 2, "--", "sleep", "60")
        # Two sampling rounds: a pass that would place it on the GPU has had its chance.
        time.sleep(2.5)
        self.assertEqual(self.d.job(other)["state"], "PENDING", "the GPU takes no job until an admin undrains it")
        self.d.cli("admin", "undrain", gpu)
        self.assertEqual(self.d.wait_state(other, "RUNNING")["gpus"], [0, 1])


class LostAtStartTest(DaemonTest):
    gpus = 2

    def test_a_gpu_lost_when_the_daemon_starts_is_drained_across_restarts(self):
        self.d.stop()
        set_fake(self.d, gpu1_lost=1)  # NVML refuses its handle: GPU_IS_LOST
        self.d.start()
        g = wait_until(lambda: (lambda g: g if g["drain_reason"] else None)(self.d.gpu_list()[1]),
                       what="the GPU lost at start to be drained")
        self.assertIn("GPU 1 fell off the bus (NVML: GPU is lost)", g["drain_reason"])
        self.d.stop()
        set_fake(self.d, gpu1_lost=0)
        self.d.start()
        g = self.d.gpu_list()[1]
        self.assertEqual((g["health"], "fell off the bus" in (g["drain_reason"] or "")), ("drained", True),
                         "back after a restart, it stays drained until an admin undrains it")
        self.d.cli("admin", "undrain", 1)
        self.d.stop()
        self.d.start()
        self.assertEqual(self.d.gpu_list()[1]["health"], "ok", "undrained once, it stays so")


class MissingGpuTest(DaemonTest):
    gpus = 2

    def test_a_gpu_gone_from_the_count_is_drained_when_it_returns(self):
        uuid = self.d.gpu_list()[1]["uuid"]
        self.d.stop()
        self.d.gpus = 1  # NVML lists one device: GPU 1 fell off the bus while the daemon was down
        self.d.start()
        self.assertEqual(len(self.d.gpu_list()), 1)
        missing = gpu_events(self.d, 1, "health")
        self.assertEqual(len(missing), 1, missing)
        self.assertIn(f"{uuid} (GPU 1 before) went missing from NVML's devices (fell off the bus?)", missing[0])
        self.d.stop()
        self.d.gpus = 2  # back after a reboot
        self.d.start()
        g = self.d.gpu_list()[1]
        self.assertEqual((g["uuid"], g["health"]), (uuid, "drained"))
        self.assertIn("went missing from NVML's devices", g["drain_reason"])
        self.assertIn("drained until an admin undrains it", g["drain_reason"])
        self.d.cli("admin", "undrain", 1)
        self.d.stop()
        self.d.start()
        self.assertEqual(self.d.gpu_list()[1]["health"], "ok", "undrained once, it stays so")


# A trainer whose GPU fell off the bus: the driver marks it lost, CUDA fails in the trainer,
# which prints the error and dies.  NVML says "GPU is lost" from then on.
DIES_OF_ITS_GPU = ('echo "gpu$CUDA_VISIBLE_DEVICES.lost=1" >> "$GPUWARD_FAKE_NVML_DIR/config"; '
                   'echo "RuntimeError: CUDA error: an illegal memory access was encountered" >&2; exit 1')


class LostGpuClassTest(DaemonTest):
    # The sampler looks every 30 s, far later than the trainer's death is seen: only a fresh
    # reading at the attempt's end can know its GPU was lost.  That is the order that made the
    # class depend on timing (the death seen first, the lost GPU after), here every time.
    extra = ("--sample-interval", "30")

    def test_a_job_dead_of_a_lost_gpu_is_a_gpu_fault_every_time(self):
        used = set()
        for run in range(3):
            jid = self.d.submit_api(["sh", "-c", DIES_OF_ITS_GPU], retries=0)
            j = self.d.wait_state(jid, "FAILED", timeout=30)
            gpu = j["gpus"][0]
            self.assertNotIn(gpu, used, "a GPU lost in an earlier run took no job")
            used.add(gpu)
            a = j["attempts"][0]
            self.assertEqual(a["class"], "gpu_fault", f"run {run + 1}: {a}")
            self.assertIn(f"GPU {gpu} is lost", a["evidence"])
            self.assertTrue(any("fell off the bus" in e["message"] for e in j["events"]),
                            "the job's events say its GPU was drained and why")
            self.assertEqual(self.d.gpu_list()[gpu]["health"], "lost")
            self.assertIn("fell off the bus", self.d.gpu_list()[gpu]["drain_reason"])


class RogueProcesses:
    """Processes started outside gpuward on the fake NVML's GPUs, killed after the test, run as
    throwaway users named user_prefix...; mixed into a DaemonTest."""
    user_prefix = "gwgpu"

    def start_rogue(self, gpu, mib):
        """A process on the GPU as the fake NVML reports it; run as a throwaway user when root,
        so that the record's user is not the daemon's."""
        prefix, user = [], None
        if IS_ROOT:
            user = self.users.add("r")
            prefix = as_user(user.pw_uid, user.pw_gid)
        p = subprocess.Popen(prefix + ["sleep", "300"])
        self.rogues.append(p)
        self.d.write_procs(p.pid, [(gpu, mib, 5)])
        wait_until(lambda: any(q["pid"] == p.pid for q in self.d.gpu_list()[gpu]["processes"]),
                   what=f"the rogue process on GPU {gpu}")
        return p, user.pw_name if user else pwd.getpwuid(os.getuid()).pw_name

    def setUp(self):
        self.rogues = []
        self.users = Users(self.user_prefix)
        super().setUp()

    def tearDown(self):
        try:
            super().tearDown()
        finally:
            for p in self.rogues:
                p.kill()
                p.wait()
            self.users.remove_all()


class RogueProcessTest(RogueProcesses, DaemonTest):
    """A process started outside gpuward on a GPU, under the default rogue_policy (report)."""
    gpus = 2

    def test_rogue_is_recorded_avoided_and_told_to_the_job_beside_it(self):
        rogue, user = self.start_rogue(0, 2150)
        said = f"pid {rogue.pid} ({user}, sleep 300) on GPU 0 started outside gpuward, using 2.1 GiB"
        wait_until(lambda: gpu_events(self.d, 0, "rogue"), what="the rogue recorded on its GPU")
        self.assertEqual(gpu_events(self.d, 0, "rogue"), [said])

        clean = self.d.submit("--gpus", 1, "--", "sleep", "60")
        self.assertEqual(self.d.wait_state(clean, "RUNNING")["gpus"], [1], "the clean GPU first")
        self.assertFalse(self.d.events(clean, "rogue"))

        beside = self.d.submit("--gpus", 1, "--", "sleep", "60")
        j = self.d.wait_state(beside, "RUNNING")
        self.assertEqual(j["gpus"], [0], "with only the GPU with a rogue left, the job is placed there")
        told = [e["message"] for e in events_of(j, "rogue")]
        self.assertEqual(len(told), 1, told)
        self.assertIn(said, told[0])

        # Later samples see the same process: it is recorded once.
        wait_until(lambda: self.d.gpu_list()[0]["sampled_at"] > j["start_time"] + 1.5, what="two more samples")
        self.assertEqual(gpu_events(self.d, 0, "rogue"), [said])
        self.assertEqual(len(self.d.events(beside, "rogue")), 1)

    def test_a_rogue_on_a_running_jobs_gpu_is_told_to_that_job(self):
        jid = self.d.submit("--gpus", 1, "--", "sleep", "60")
        gpu = self.d.wait_state(jid, "RUNNING")["gpus"][0]
        rogue, user = self.start_rogue(gpu, 300)
        ev = self.d.wait_job(jid, lambda j: events_of(j, "rogue"), what="the job told of the rogue")
        self.assertEqual([e["message"] for e in events_of(ev, "rogue")],
                         [f"pid {rogue.pid} ({user}, sleep 300) on GPU {gpu} started outside gpuward, using 300 MiB"])


class GpuEventsApiTest(RogueProcesses, DaemonTest):
    """The GPUs' own events read back: GET /api/v1/gpus[/N]/events and `gpuward gpus --events`."""
    gpus = 2
    user_prefix = "gwgev"

    def test_a_drains_evidence_is_read_back_and_hidden_from_guests(self):
        set_fake(self.d, gpu1_lost=1)
        wait_until(lambda: self.d.gpu_list()[1]["drain_reason"], what="the lost GPU to be drained")
        st, r = self.d.api("GET", "/api/v1/gpus/1/events")
        self.assertEqual(st, 200, r)
        drains = [e for e in r["events"] if e["kind"] == "drain"]
        self.assertEqual(len(drains), 1, r)
        self.assertEqual(drains[0]["gpu"], 1)
        self.assertIn("GPU 1 fell off the bus (NVML: GPU is lost)", drains[0]["message"])
        self.assertIn("drained until an admin undrains it", drains[0]["message"])
        times = [e["time"] for e in r["events"]]
        self.assertEqual(times, sorted(times, reverse=True), "newest first")
        self.assertEqual(self.d.api("GET", "/api/v1/gpus/0/events")[1]["events"], [], "GPU 0 had none")
        every = self.d.api("GET", "/api/v1/gpus/events")[1]["events"]
        self.assertEqual(every, r["events"], "all GPUs: the same, as only GPU 1 had any")
        self.assertEqual(len(self.d.api("GET", "/api/v1/gpus/events?limit=1")[1]["events"]), 1)
        self.assertEqual(self.d.api("GET", f"/api/v1/gpus/events?since={times[0] + 1}")[1]["events"], [])

        out = self.d.cli("gpus", "--events", "--gpu", 1).stdout
        line = [ln for ln in out.splitlines() if " drain " in ln]
        self.assertEqual(len(line), 1, out)
        self.assertIn("fell off the bus", line[0])
        self.assertEqual(line[0].split()[1:3], ["1", "drain"], line[0])
        self.assertEqual(self.d.cli_json("gpus", "--events", "--limit", 1)["events"], r["events"][:1])

        # A guest (TCP, no token) learns what happened, not the messages (a rogue's names
        # another user's command line); a signed-in user over TCP reads them.
        st, g = self.d.tcp_json("GET", "/api/v1/gpus/1/events")
        self.assertEqual(st, 200, g)
        self.assertEqual([dict(e, message=None) for e in r["events"]], g["events"])
        token = self.d.api("POST", "/api/v1/tokens", {"name": "events"})[1]["token"]
        self.assertEqual(self.d.tcp_json("GET", "/api/v1/gpus/1/events", token=token)[1]["events"], r["events"])

    def test_a_rogues_command_line_is_shown_to_users_not_to_guests(self):
        rogue, user = self.start_rogue(1, 300)
        said = f"pid {rogue.pid} ({user}, sleep 300) on GPU 1 started outside gpuward, using 300 MiB"
        wait_until(lambda: gpu_events(self.d, 1, "rogue"), what="the rogue recorded on its GPU")
        ev = self.d.api("GET", "/api/v1/gpus/1/events")[1]["events"]
        self.assertEqual([(e["kind"], e["message"]) for e in ev], [("rogue", said)])
        out = self.d.cli("gpus", "--events").stdout
        line = [ln for ln in out.splitlines() if said in ln]
        self.assertEqual(len(line), 1, out)
        self.assertEqual(line[0].split()[1:4], ["1", "rogue", "-"], line[0])
        st, g = self.d.tcp_json("GET", "/api/v1/gpus/events")
        self.assertEqual(st, 200, g)
        self.assertEqual([(e["kind"], e["gpu"], e["message"]) for e in g["events"]], [("rogue", 1, None)])
        self.assertNotIn(str(rogue.pid), json.dumps(g))

    def test_bad_parameters_are_refused_naming_the_field(self):
        for query, field in (("limit=0", "limit"), ("limit=1001", "limit"), ("limit=ten", "limit"),
                             ("since=-1", "since"), ("since=yesterday", "since"), ("since=1e300", "since"),
                             ("since=nan", "since")):
            for path in ("/api/v1/gpus/events", "/api/v1/gpus/0/events"):
                st, r = self.d.api("GET", f"{path}?{query}")
                self.assertEqual((st, r.get("field")), (400, field), (path, query, r))
        st, r = self.d.api("GET", "/api/v1/gpus/7/events")
        self.assertEqual((st, r.get("field")), (404, "index"), r)
        self.assertIn("no GPU 7", r["error"])
        self.assertEqual(self.d.api("POST", "/api/v1/gpus/events")[0], 405)
        p = self.d.cli("gpus", "--events", "--limit", 0, check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--limit", p.stderr)
        p = self.d.cli("gpus", "--gpu", 1, check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--gpu: only with --events", p.stderr)


if __name__ == "__main__":
    main()

"""MIG slices: a GPU in MIG mode is shown slice by slice (UUID, profile, instance ids, memory,
processes, share of the GPU), read again at each sample so that a GPU re-partitioned while the
daemon runs is seen as it is now; a slice never gets a utilisation figure, only GPM's SM
activity where the GPU offers it."""
import os
import re
import subprocess

from gwtest import TRAINER, DaemonTest, events_of, kinds, main, wait_until

MIG = ["uuid", "profile", "gpu_instance", "compute_instance", "slices", "share", "mem_total", "mem_used", "job",
       "processes", "activity"]
GIB = 1 << 30
# The idle watch's profiles for MigReclaimTest, short; and the latest a reclaim may come: its
# three delays and a sample interval each to see the window and the warning's end.
IDLE, WARN, GRACE = 3, 1, 1
BOUND = IDLE + WARN + GRACE + 2


def set_fake(d, **settings):
    """Sets keys of the fake NVML's config (gpu1_mig=... sets gpu1.mig=...), keeping the rest."""
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


def write_slice_procs(d, pid, lines):
    """Declares a process on MIG devices: lines of (gpu, mig index, MiB)."""
    directory = os.path.join(d.state, "sim-nvml", "procs")
    # Not the fake trainer's own .PID.tmp: it writes its file for itself meanwhile.
    tmp = os.path.join(directory, f".{pid}.test.tmp")
    with open(tmp, "w") as f:
        f.write("".join(f"{g}/{k} {mib} 0\n" for g, k, mib in lines))
    os.rename(tmp, os.path.join(directory, str(pid)))


class MigSeenTest(DaemonTest):
    gpus = 3

    def layout(self):
        return [g["mig"] for g in self.d.gpu_list()]

    def test_slices_listed_under_their_gpu_and_relaid_while_running(self):
        d = self.d
        self.assertEqual([(g["mig_mode"], g["gpm"]) for g in d.gpu_list()], [(False, None)] * 3)
        set_fake(d, gpu0_mig="1g.10gb*7", gpu1_mig="3g.40gb,2g.20gb,1g.10gb")
        proc = subprocess.Popen(["sleep", "120"])
        try:
            write_slice_procs(d, proc.pid, [(1, 1, 3072)])
            gpus = wait_until(lambda: (lambda g: g if len(g[1]["mig"]) == 3 and g[1]["mig"][1]["processes"]
                                       else None)(d.gpu_list()), what="GPU 1's slices and their process")
            self.assertEqual([g["mig_mode"] for g in gpus], [True, True, False])
            self.assertEqual([len(g["mig"]) for g in gpus], [7, 3, 0])
            for g in gpus:
                for m in g["mig"]:
                    self.assertEqual(list(m), MIG)
                    self.assertIsNone(m["activity"])  # no GPM on these GPUs: no figure
            # A GPU in MIG mode has no utilisation in NVML: none is shown.
            self.assertIsNone(gpus[0]["util"])
            self.assertIsNotNone(gpus[2]["util"])
            g1 = gpus[1]["mig"]
            self.assertEqual([m["profile"] for m in g1], ["3g.40gb", "2g.20gb", "1g.10gb"])
            self.assertEqual([m["slices"] for m in g1], [3, 2, 1])
            self.assertEqual([m["share"] for m in g1], [0.4286, 0.2857, 0.1429])
            self.assertEqual([m["mem_total"] for m in g1], [40 * GIB, 20 * GIB, 10 * GIB])
            self.assertEqual(g1[1]["mem_used"], 3 * GIB)
            self.assertEqual(g1[1]["uuid"], "MIG-fa4e0000-0000-4000-8001-000000000101")
            self.assertEqual((g1[1]["gpu_instance"], g1[1]["compute_instance"]), (2, 0))
            self.assertEqual([p["pid"] for p in g1[1]["processes"]], [proc.pid])
            self.assertIsNone(g1[1]["processes"][0]["sm_util"])
            self.assertEqual(g1[0]["processes"], [])

            out = d.cli("gpus").stdout
            self.assertEqual(out.count("  MIG 1g.10gb  1/7  "), 8, out)
            self.assertIn("  MIG 2g.20gb  2/7  3.0 GiB / 20.0 GiB  free  MIG-fa4e0000-0000-4000-8001-000000000101",
                          out)
        finally:
            proc.kill()
            proc.wait()

        # Re-partitioned while the daemon runs: the next sample shows the new layout.
        set_fake(d, gpu0_mig="", gpu2_mig="7g.80gb")
        gpus = wait_until(lambda: (lambda g: g if not g[0]["mig_mode"] and g[2]["mig_mode"] else None)(d.gpu_list()),
                          what="the new layout")
        self.assertEqual([m["profile"] for m in gpus[2]["mig"]], ["7g.80gb"])
        self.assertEqual(gpus[2]["mig"][0]["share"], 1.0)
        self.assertEqual(gpus[0]["mig"], [])


class MigNeverWholeTest(DaemonTest):
    gpus = 2

    def test_whole_gpu_job_never_lands_on_a_mig_mode_gpu(self):
        d = self.d
        set_fake(d, gpu0_mig="1g.10gb*7")
        wait_until(lambda: d.gpu_list()[0]["mig_mode"], what="GPU 0 in MIG mode")
        first = d.submit_api(["sleep", "300"], name="first")
        second = d.submit_api(["sleep", "300"], name="second")
        self.assertEqual(d.wait_state(first, "RUNNING")["gpus"], [1])
        # GPU 0 is free but cut into slices: the second whole-GPU job waits for GPU 1.
        wait_until(lambda: d.job(second)["reason"] not in (None, ""), what="the second job's wait reason")
        self.assertEqual(d.job(second)["state"], "PENDING")
        self.assertEqual(d.gpu_list()[0]["job"], None)
        d.api("DELETE", f"/api/v1/jobs/{first}?wait=1", timeout=30)
        self.assertEqual(d.wait_state(second, "RUNNING")["gpus"], [1])


def read_when_written(path):
    """The first line a job wrote to path, once it has."""
    def line():
        try:
            with open(path) as f:
                return f.read().strip() or None
        except FileNotFoundError:
            return None
    return wait_until(line, what=f"{path} to be written")


class MigSlicesTest(DaemonTest):
    """Jobs asking for slices (--gpus PROFILE[:COUNT]) run on them, side by side, each seeing
    its own; a whole-GPU job never lands on the GPU in MIG mode."""
    gpus = 2

    def mig_gpu0(self, layout):
        set_fake(self.d, gpu0_mig=layout)
        return [m["uuid"] for m in wait_until(lambda: self.d.gpu_list()[0]["mig"], what="GPU 0's slices")]

    def writes_cvd(self, name):
        path = os.path.join(self.d.work, name)
        return path, f"echo $CUDA_VISIBLE_DEVICES > {path}; exec sleep 30"

    def test_two_slice_jobs_side_by_side_each_with_its_own_slice(self):
        d = self.d
        uuids = self.mig_gpu0("1g.10gb*7")
        out_a, sh_a = self.writes_cvd("cvd_a")
        out_b, sh_b = self.writes_cvd("cvd_b")
        a = d.submit("--gpus", "1g.10gb", "--", "sh", "-c", sh_a)
        script = os.path.join(d.work, "slice.sh")
        with open(script, "w") as f:
            f.write(f"#!/bin/sh\n#GPUWARD --gpus 1g.10gb:1 --name b\n{sh_b}\n")
        os.chmod(script, 0o755)
        b = d.submit(script)
        whole = d.submit_api(["sleep", "30"], name="whole")
        ja, jb = d.wait_state(a, "RUNNING"), d.wait_state(b, "RUNNING")
        self.assertEqual(d.wait_state(whole, "RUNNING")["gpus"], [1])
        self.assertEqual(ja["mig"], {"profile": "1g.10gb", "count": 1})
        self.assertEqual((ja["slices"], jb["slices"]), ([uuids[0]], [uuids[1]]))
        self.assertEqual((ja["gpus"], jb["gpus"]), ([0], [0]))
        # Each sees its own slice, by UUID, in its own environment.
        self.assertEqual((read_when_written(out_a), read_when_written(out_b)), (uuids[0], uuids[1]))
        self.assertTrue(uuids[0].startswith("MIG-"))
        gpus = d.gpu_list()
        self.assertEqual([m["job"] for m in gpus[0]["mig"]], [a, b] + [None] * 5)
        self.assertIsNone(gpus[0]["job"])  # the GPU itself is nobody's: its other slices are free
        self.assertEqual(gpus[1]["job"], whole)

        # show: which slices, with their figures.
        write_slice_procs(d, d.wait_pid(a), [(0, 0, 2048)])
        wait_until(lambda: d.gpu_list()[0]["mig"][0]["mem_used"] == 2 * GIB, what="slice 0's memory")
        shown = d.cli("show", a).stdout
        self.assertIn("MIG slices:  1 x 1g.10gb", shown)
        self.assertIn(f"Slices:      {uuids[0]}  1g.10gb on GPU 0 (1/7 of it), 2.0 GiB / 10.0 GiB", shown)

        # Once a's slice is free again, the next slice job gets it.
        d.api("DELETE", f"/api/v1/jobs/{a}?wait=1", timeout=30)
        self.assertEqual(d.gpu_list()[0]["mig"][0]["job"], None)
        c = d.submit_api(["sleep", "30"], ngpus=1, mig={"profile": "1g.10gb"})
        self.assertEqual(d.wait_state(c, "RUNNING")["slices"], [uuids[0]])

    def test_third_slice_job_waits_until_a_slice_is_free(self):
        d = self.d
        uuids = self.mig_gpu0("1g.10gb*2")
        set_fake(d, gpu1_mig="3g.40gb")
        wait_until(lambda: d.gpu_list()[1]["mig_mode"], what="GPU 1 in MIG mode")
        jobs = [d.submit_api(["sleep", "60"], mig={"profile": "1g.10gb"}, name=f"s{k}") for k in range(3)]
        for k in range(2):
            self.assertEqual(d.wait_state(jobs[k], "RUNNING")["slices"], [uuids[k]])
        third = d.wait_job(jobs[2], lambda j: j["reasons"] and j["reasons"][0]["text"] != "waits for 1 free GPU",
                           what="the third job's reason")
        self.assertEqual((third["state"], third["reason"]), ("PENDING", "Resources"))
        self.assertEqual(third["reasons"][0], {"code": "Resources", "text": "no free 1g.10gb slice"})
        self.assertIn("Resources: no free 1g.10gb slice", d.cli("show", jobs[2]).stdout)
        # Two slices asked on one GPU never straddle GPU 0 and GPU 1; a profile no GPU has waits too.
        two = d.submit("--gpus", "1g.10gb:2", "--", "sleep", "60")
        none = d.submit("--gpus", "2g.20gb", "--", "sleep", "60")
        d.wait_job(two, lambda j: j["reasons"] and j["reasons"][0]["text"] == "no GPU with 2 free 1g.10gb slices")
        d.wait_job(none, lambda j: j["reasons"] and j["reasons"][0]["text"] ==
                   "no free 2g.20gb slice: no GPU in service has that profile")
        d.api("DELETE", f"/api/v1/jobs/{jobs[0]}?wait=1", timeout=30)
        self.assertEqual(d.wait_state(jobs[2], "RUNNING")["slices"], [uuids[0]])
        self.assertEqual(d.job(two)["state"], "PENDING")

    def slice_held_and_one_waiting(self):
        """GPU 0's one 1g.10gb slice held by a job of 600 s (its row), a 300 s job queued for
        it (its id); GPU 1 stays whole and free."""
        d = self.d
        self.mig_gpu0("1g.10gb")
        a = d.submit_api(["sleep", "600"], 600, mig={"profile": "1g.10gb"})
        ja = d.wait_state(a, "RUNNING")
        return ja, d.submit_api(["sleep", "600"], 300, mig={"profile": "1g.10gb"})

    def test_predicted_start_waits_for_a_slice_not_a_whole_gpu(self):
        d = self.d
        ja, b = self.slice_held_and_one_waiting()
        # The free whole GPU is no start for it: its slice frees when a's limit ends.
        start = wait_until(lambda: d.job(b)["predicted_start"], what="b's predicted start")
        self.assertAlmostEqual(start, ja["start_time"] + 600, delta=5)
        self.assertAlmostEqual(d.job(b)["latest_start"], ja["start_time"] + 600, delta=5)
        self.assertEqual(d.job(b)["state"], "PENDING")

    def test_predicted_start_after_a_queued_slice_job_and_of_a_slice_job_after_a_whole_one(self):
        d = self.d
        ja, b = self.slice_held_and_one_waiting()
        # The free whole GPU waits for b, which waits for a's slice: c starts when b ends.
        c = d.submit("--after", f"{b}:any", "--time", "10m", "--", "sleep", "600")
        # A slice job after a whole-GPU one starts when that one ends (its limit: no history).
        e = d.submit("--gpus", "1g.10gb", "--after", f"{c}:any", "--time", "5m", "--", "sleep", "600")
        wait_until(lambda: d.job(c)["predicted_start"], what="c's predicted start")
        start = wait_until(lambda: d.job(e)["predicted_start"], what="e's predicted start")
        pb, pc = d.job(b)["training"]["prediction"], d.job(c)["training"]["prediction"]
        self.assertAlmostEqual(pb["predicted_start"], ja["start_time"] + 600, delta=5)
        self.assertAlmostEqual(pb["predicted_end"], ja["start_time"] + 900, delta=5)
        self.assertGreaterEqual(pc["predicted_start"], pb["predicted_end"])
        self.assertAlmostEqual(pc["predicted_start"], pb["predicted_end"], delta=1)
        self.assertAlmostEqual(pc["latest_start"], pb["predicted_end"], delta=1)
        self.assertIsNone(pc["predicted_wait"])
        self.assertAlmostEqual(start, pc["predicted_end"], delta=1)
        self.assertAlmostEqual(pc["predicted_end"], ja["start_time"] + 1500, delta=5)
        # A slice job no GPU can ever take: the job after it is told what it waits for.
        f = d.submit_api(["sleep", "60"], 60, mig={"profile": "2g.20gb"})
        g = d.submit("--after", f"{f}:any", "--", "sleep", "60")
        pg = wait_until(lambda: (lambda p: not p["why_none"].startswith("not predicted yet") and p)(
            d.job(g)["training"]["prediction"]), what="g's prediction")
        self.assertIsNone(pg["predicted_start"])
        self.assertEqual(pg["why_none"], f"after job {f} ends")
        self.assertEqual(d.job(g)["predicted_wait"], f"after job {f} ends")

    def test_a_slice_counts_its_share_of_the_gpu_in_gpu_hours(self):
        d = self.d
        self.mig_gpu0("3g.40gb,2g.20gb,1g.10gb")
        job = d.submit_api(["sleep", "1"], mig={"profile": "2g.20gb"})
        j = d.wait_state(job, "COMPLETED")
        users = d.api("GET", "/api/v1/usage?days=1")[1]["users"]
        self.assertEqual(len(users), 1, users)
        # 2 of the GPU's 7 slices: 2/7 of a GPU for as long as it ran (a whole GPU: 1).
        self.assertAlmostEqual(users[0]["gpu_hours"] * 3600 * 7 / 2, j["end_time"] - j["start_time"], places=3)

    def test_bad_slice_requests_are_refused_naming_the_field(self):
        d = self.d
        p = d.cli("submit", "--gpus", "1g.10gb:0", "--", "true", check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--gpus: '1g.10gb:0' is not a number of GPUs, nor MIG slices as PROFILE[:COUNT]", p.stderr)
        for body, field in (({"mig": {"profile": "1g.10gb"}, "ngpus": 2}, "ngpus"),
                            ({"mig": {"profile": "big"}}, "mig"),
                            ({"mig": {"profile": "1g.10gb"}, "gpu_mem": "1G"}, "gpu_mem")):
            st, r = d.api("POST", "/api/v1/jobs", {**d.job_spec(["true"]), **body})
            self.assertEqual((st, r.get("field")), (400, field), r)
        self.assertEqual(d.api("GET", "/api/v1/jobs")[1]["jobs"], [])


class MigReclaimTest(DaemonTest):
    """A slice has no utilisation: a slice job is judged idle by its processes on the slice and
    its training progress, and the evidence says so."""
    gpus = 1
    config = "".join(f"[policy.{p}]\nidle_timeout = {IDLE}\nwarn = {WARN}\ngrace = {GRACE}\n"
                     for p in ("default", "hpo"))

    def setUp(self):
        super().setUp()
        set_fake(self.d, gpu0_mig="1g.10gb*7")
        self.uuids = [m["uuid"] for m in wait_until(lambda: self.d.gpu_list()[0]["mig"], what="GPU 0's slices")]

    def test_slice_job_without_a_process_on_its_slice_is_reclaimed(self):
        d = self.d
        jid = d.submit("--gpus", "1g.10gb", "--", "sh", "-c", "sleep 600")
        self.assertEqual(d.wait_state(jid, "RUNNING")["slices"], [self.uuids[0]])
        j = d.wait_state(jid, {"RECLAIMED", "COMPLETED", "FAILED"}, timeout=BOUND + 10)
        self.assertEqual(j["state"], "RECLAIMED", j["reason"])
        ev = events_of(j, "reclaim")[-1]["message"]
        self.assertIn("no utilisation on a MIG slice: judged by its processes and training progress; "
                      f"no process on {self.uuids[0]} for ", ev)
        self.assertNotIn("util ", ev)  # no utilisation figure made up for the slice
        self.assertLess(kinds(j).index("warn"), kinds(j).index("terminate"))
        self.assertIn(f"no process on {self.uuids[0]}", d.cli("show", jid).stdout)

    def test_slice_job_whose_process_stopped_progressing_is_reclaimed(self):
        d = self.d
        # The trainer registers itself on the slice CUDA_VISIBLE_DEVICES names, then hangs.
        jid = d.submit("--gpus", "1g.10gb", "--", TRAINER, "epochs=5", "--epoch-seconds", "0.3", "--mem-mib", "2048",
                       "--hang-after-epoch", "1")
        d.wait_state(jid, "RUNNING")
        wait_until(lambda: d.gpu_list()[0]["mig"][0]["processes"], what="the trainer on its slice")
        j = d.wait_state(jid, {"RECLAIMED", "COMPLETED", "FAILED"}, timeout=BOUND + 10)
        self.assertEqual(j["state"], "RECLAIMED", j["reason"])
        ev = events_of(j, "reclaim")[-1]["message"]
        # What it was judged by (its process, progress) and the slice's memory; no utilisation.
        self.assertIn("no utilisation on a MIG slice: judged by its processes and training progress; "
                      f"1 process of the job on {self.uuids[0]} (memory 2.0 of 10.0 GiB), no progress for ", ev)
        self.assertNotIn("util ", ev)
        idle = events_of(j, "idle")[0]["message"]
        self.assertIn("into this attempt; MIG slices, no utilisation: by processes and progress, not validating", idle)
        self.assertNotIn("below", idle)

    def test_trainer_writing_epochs_on_its_slice_is_kept(self):
        d = self.d
        # Epochs for about three idle timeouts: long past the point a reclaim would come.
        jid = d.submit("--gpus", "1g.10gb", "--", TRAINER, "epochs=18", "--epoch-seconds", "0.5")
        d.wait_state(jid, "RUNNING")
        write_slice_procs(d, d.wait_pid(jid), [(0, 0, 2048)])
        wait_until(lambda: d.gpu_list()[0]["mig"][0]["processes"], what="the trainer on its slice")
        j = d.wait_state(jid, {"RECLAIMED", "COMPLETED", "FAILED"}, timeout=60)
        self.assertEqual(j["state"], "COMPLETED", j["reason"])
        self.assertGreater(j["end_time"] - j["start_time"], IDLE + WARN + GRACE)
        self.assertNotIn("warn", kinds(j))


class MigGpmReclaimTest(DaemonTest):
    """Where the GPU offers GPM (Hopper), a slice's SM activity is its utilisation: a job whose
    process sits on its slice without ever progressing (kept without GPM: nothing to judge by)
    is reclaimed at 0% and kept at 80%."""
    gpus = 1
    config = MigReclaimTest.config

    def start_on_slice(self, activity):
        d = self.d
        set_fake(d, gpu0_mig="1g.10gb*7", gpu0_gpm=1, **{"gpu0_mig.0.activity": activity})
        uuid = wait_until(lambda: [m for m in d.gpu_list()[0]["mig"] if m["activity"] == activity],
                          what="the slices' GPM activity")[0]["uuid"]
        jid = d.submit("--gpus", "1g.10gb", "--", "sh", "-c", "sleep 600")
        self.assertEqual(d.wait_state(jid, "RUNNING")["slices"], [uuid])
        write_slice_procs(d, d.wait_pid(jid), [(0, 0, 1024)])
        wait_until(lambda: d.gpu_list()[0]["mig"][0]["processes"], what="the job's process on its slice")
        return jid, uuid

    def test_idle_slice_by_gpm_is_reclaimed_citing_it(self):
        d = self.d
        jid, uuid = self.start_on_slice(0)
        j = d.wait_state(jid, {"RECLAIMED", "COMPLETED", "FAILED"}, timeout=BOUND + 10)
        self.assertEqual(j["state"], "RECLAIMED", j["reason"])
        ev = events_of(j, "reclaim")[-1]["message"]
        self.assertIn(f"GPM SM activity 0% on {uuid} (threshold ", ev)
        self.assertIn(f"1 process of the job on {uuid}", ev)
        self.assertNotIn("no utilisation", ev)
        self.assertIn("GPM SM activity below", events_of(j, "idle")[0]["message"])

    def test_busy_slice_by_gpm_is_kept(self):
        d = self.d
        jid, uuid = self.start_on_slice(80)
        # Past the latest a reclaim would come, it is still running and was never warned.
        with self.assertRaises(AssertionError):
            d.wait_state(jid, {"RECLAIMED", "COMPLETED", "FAILED"}, timeout=BOUND + 2)
        j = d.api("GET", f"/api/v1/jobs/{jid}")[1]
        self.assertEqual(j["state"], "RUNNING")
        self.assertNotIn("warn", kinds(j))

    def test_gpm_offered_is_said_and_a_slice_jobs_telemetry_is_its_activity(self):
        d = self.d
        jid, uuid = self.start_on_slice(80)
        g = d.cli_json("gpus")["gpus"][0]
        self.assertEqual((g["mig_mode"], g["gpm"]), (True, True))
        log = d.daemon_log()
        self.assertEqual(log.count("GPU 0: MIG mode, per-slice activity from GPM"), 1, log)
        self.assertNotIn("no per-slice activity", log)
        tel = wait_until(lambda: (lambda t: t if t and t["gpus"][0]["util_mean"] is not None else None)(
            d.job(jid)["telemetry"]), what="the slice job's activity in its telemetry")["gpus"][0]
        self.assertEqual((tel["util_mean"], tel["util_p95"]), (80, 80))
        self.assertIn("  GPU 0: GPM SM activity mean 80% p95 80%, peak memory ", d.cli("show", jid).stdout)
        table = d.cli("gpus").stdout
        self.assertIn("  MIG mode: per-slice SM activity from GPM\n", table)
        self.assertRegex(table, rf"  MIG 1g\.10gb  1/7  .*  job {jid}  GPM 80%  {re.escape(uuid)}\n")


class MigLeakTest(DaemonTest):
    """The leak detector on a slice: the slice's memory, against the slice's size."""
    gpus = 1
    config = "leak_epochs = 2\n"

    def test_slice_job_whose_memory_grows_is_flagged_with_the_slices_figures(self):
        d = self.d
        set_fake(d, gpu0_mig="1g.10gb*7")
        uuid = wait_until(lambda: d.gpu_list()[0]["mig"], what="GPU 0's slices")[0]["uuid"]
        jid = d.submit("--gpus", "1g.10gb", "--", TRAINER, "epochs=12", "name=leak", "--epoch-seconds", "1.5",
                       "--mem-mib", "2048", "--leak-mib-per-epoch", "400")
        d.wait_state(jid, "RUNNING")
        leak = wait_until(lambda: d.events(jid, "leak"), timeout=40, what="a leak event")
        msg = leak[0]["message"]
        # Named by its slice; out of memory counted from the slice's 10 GiB (from the GPU's
        # 80 GiB it would be ~190 epochs away).
        m = re.match(rf"^{uuid} \(1g\.10gb on GPU 0\): baseline \+400 MiB/epoch for \d+ epochs; "
                     r"OOM in ~(\d+) epochs", msg)
        self.assertIsNotNone(m, msg)
        self.assertLess(int(m.group(1)), 20, msg)
        self.assertGreater(d.gpu_list()[0]["mig"][0]["mem_used"], 2048 << 20)
        shown = d.cli("show", jid).stdout
        self.assertIn(f"LEAK  {uuid} (1g.10gb on GPU 0): baseline", shown)
        # Its telemetry: the slice's memory, no utilisation figure, a 1/7 share of GPU-hours.
        tel = d.job(jid)["telemetry"]["gpus"][0]
        self.assertEqual((tel["util_mean"], tel["util_p95"]), (None, None))
        self.assertGreater(tel["mem_peak"], 2048 << 20)
        self.assertLess(tel["mem_peak"], 10 * GIB)
        self.assertIn("  GPU 0: GPM SM activity mean - p95 -, peak memory ", shown)
        # Said once, and in the API: these slices have no activity to go by.
        self.assertEqual(d.api("GET", "/api/v1/gpus")[1]["gpus"][0]["gpm"], False)
        self.assertEqual(d.daemon_log().count("GPU 0: MIG mode, no per-slice activity (GPM not offered): slices "
                                              "judged by their processes and progress"), 1)
        table = d.cli("gpus").stdout
        self.assertIn("  MIG mode: no per-slice activity (no GPM): slices judged by their processes and progress\n",
                      table)
        self.assertNotIn("GPM -", table)


if __name__ == "__main__":
    main()

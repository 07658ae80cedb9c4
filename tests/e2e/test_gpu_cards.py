"""What the dashboard's GPU cards and host line read from GET /api/v1/gpus: each process's CPU
use, the idle watch's deadline and a leak's forecast on the GPU's job_info (the figures the job
page has), and the host's CPU, memory and disks."""
import subprocess
import sys

from gwtest import TRAINER, DaemonTest, events_of, main, wait_until

IDLE, WARN = 2, 120  # a long warning: the deadline stays on the card while the test reads it


class GpuCardsTest(DaemonTest):
    gpus = 2
    config = "".join(f"[policy.{p}]\nidle_timeout = {IDLE}\nwarn = {WARN}\ngrace = 1\n" for p in ("default", "hpo"))

    def info(self, gpu):
        return self.d.gpu_list()[gpu]["job_info"]

    def test_process_cpu_and_host_load(self):
        d = self.d
        # Two processes of no job declared on GPU 1 to the fake NVML: one keeps a CPU busy, one
        # sleeps.  The machine may be shared: "busy" is well above the sleeper, not 100%.
        burn = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        nap = subprocess.Popen(["sleep", "120"])
        try:
            d.write_procs(burn.pid, [(1, 300, 0)])
            d.write_procs(nap.pid, [(1, 100, 0)])
            def cpu():
                ps = {p["pid"]: p["cpu"] for p in d.gpu_list()[1]["processes"]}
                return None not in (ps.get(burn.pid), ps.get(nap.pid)) and ps[burn.pid] >= 10 and ps
            ps = wait_until(cpu, timeout=20, what="the busy process's CPU use")
            self.assertLessEqual(ps[burn.pid], 110, ps)  # one thread: at most one CPU
            self.assertLess(ps[nap.pid], 5, ps)
        finally:
            for p in (burn, nap):
                p.kill()
                p.wait()
        st, body = d.api("GET", "/api/v1/gpus")
        self.assertEqual(st, 200, body)
        host = body["host"]
        self.assertEqual(list(host), ["cpu_percent", "cpus", "mem_total", "mem_available", "disks", "sampled_at"])
        self.assertGreaterEqual(host["cpus"], 1)
        self.assertTrue(0 <= host["cpu_percent"] <= 100, host)
        self.assertTrue(0 < host["mem_available"] <= host["mem_total"], host)
        self.assertEqual([k["name"] for k in host["disks"]], ["state_dir", "/"])
        for k in host["disks"]:
            self.assertTrue(0 <= k["avail"] <= k["total"], k)
        # The same for a guest (no path is named: the state dir is "state_dir").
        st, guest = d.tcp_json("GET", "/api/v1/gpus")
        self.assertEqual((st, list(guest["host"])), (200, list(host)))

    def test_idle_deadline_on_the_gpu(self):
        d = self.d
        jid = d.submit_api([TRAINER, "--sleep-forever"])
        d.wait_state(jid, ["RUNNING"])
        gpu = d.job(jid)["gpus"][0]
        self.assertIsNone(self.info(gpu)["reclaim_at"], "no deadline before the warning")
        warn = wait_until(lambda: d.events(jid, "warn"), timeout=20, what="the idle warning")[0]
        at = wait_until(lambda: self.info(gpu)["reclaim_at"], timeout=10, what="the deadline on the GPU")
        # The log line's "it will be stopped at": the warning's time + warn.
        self.assertAlmostEqual(at, warn["time"] + WARN, delta=2.5)
        self.assertIsNone(self.info(gpu)["leak"])
        d.cli("cancel", jid)

    def test_leak_forecast_on_the_gpu(self):
        d = self.d
        argv = [TRAINER, "epochs=40", "name=lkcard", "--epoch-seconds", "1", "--mem-mib", "3000",
                "--leak-mib-per-epoch", "500"]
        jid = d.submit_api(argv)
        d.wait_state(jid, ["RUNNING"])
        gpu = d.job(jid)["gpus"][0]
        wait_until(lambda: d.events(jid, "leak"), timeout=40, what="a leak event")
        leak = wait_until(lambda: (self.info(gpu) or {}).get("leak"), timeout=10, what="the leak on the GPU")
        self.assertEqual(list(leak), ["evidence", "epochs_to_oom", "seconds_to_oom"])
        training = d.job(jid)["training"]["leak"]
        self.assertEqual(leak["evidence"], training["evidence"])
        self.assertGreater(leak["epochs_to_oom"], 0, leak)
        self.assertIn("OOM in ~", leak["evidence"])
        d.cli("cancel", jid)


if __name__ == "__main__":
    main()

"""MIG slices: a GPU in MIG mode is shown slice by slice (UUID, profile, instance ids, memory,
processes, share of the GPU), read again at each sample so that a GPU re-partitioned while the
daemon runs is seen as it is now; a slice never gets a utilisation figure."""
import os
import subprocess

from gwtest import DaemonTest, main, wait_until

MIG = ["uuid", "profile", "gpu_instance", "compute_instance", "slices", "share", "mem_total", "mem_used", "job",
       "processes"]
GIB = 1 << 30


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
    tmp = os.path.join(directory, f".{pid}.tmp")
    with open(tmp, "w") as f:
        f.write("".join(f"{g}/{k} {mib} 0\n" for g, k, mib in lines))
    os.rename(tmp, os.path.join(directory, str(pid)))


class MigSeenTest(DaemonTest):
    gpus = 3

    def layout(self):
        return [g["mig"] for g in self.d.gpu_list()]

    def test_slices_listed_under_their_gpu_and_relaid_while_running(self):
        d = self.d
        self.assertEqual([g["mig_mode"] for g in d.gpu_list()], [False] * 3)
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


if __name__ == "__main__":
    main()

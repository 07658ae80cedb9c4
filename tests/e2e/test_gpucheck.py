"""The real-GPU check (scripts/gpucheck.py) and its load (tests/gpu/gpuload) where there is no
GPU: gpuload without a driver, the judging functions on recorded figures, and a whole run on
the fake NVML, which SKIPs what needs CUDA and FAILs an inventory that disagrees."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

from gwtest import BUILD, FAKE_NVML, main, pid_alive

SOURCE = os.environ.get("GW_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
SCRIPT = os.path.join(SOURCE, "scripts", "gpucheck.py")


def sanitized_build():
    """Whether BUILD is the ASan/UBSan build: the check's own Python reads memory.used through
    the build's fake NVML (ctypes), and an ASan-built library cannot load into a Python that
    is not, so those runs belong to the plain build."""
    try:
        with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
            return any(line.strip() in ("GW_SANITIZE:BOOL=ON", "GW_SANITIZE:BOOL=TRUE") for line in f)
    except OSError:
        return False
GPULOAD = os.path.join(BUILD, "tests", "gpu", "gpuload")
FAKE_CUDA = os.path.join(BUILD, "tests", "fakes", "libcuda.so.1")
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import gpucheck  # noqa: E402

# `nvidia-smi -L` and --query-gpu=index,uuid,memory.total on a two-GPU host (the fake's GPUs).
SMI_LIST = ("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-fa4e0000-0000-4000-8000-000000000000)\n"
            "GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-fa4e0000-0000-4000-8000-000000000001)\n")
SMI_QUERY = ("0, GPU-fa4e0000-0000-4000-8000-000000000000, 81920\n"
             "1, GPU-fa4e0000-0000-4000-8000-000000000001, 81920\n")
CUDA_CHECKS = ["busy.attribution", "busy.memory", "busy.utilisation", "idle.reclaimed", "idle.busy_kept",
               "cancel.freed", "rogue", "leak"]


def api_gpu(i, name="NVIDIA A100-SXM4-80GB", mib=81920):
    return {"index": i, "name": name, "uuid": f"GPU-fa4e0000-0000-4000-8000-00000000000{i}", "mem_total": mib * 2**20}


class JudgeTest(unittest.TestCase):
    def test_parse_smi(self):
        g = gpucheck.parse_smi(SMI_LIST + "garbage line\n", SMI_QUERY)
        self.assertEqual([x["index"] for x in g], [0, 1])
        self.assertEqual(g[1], {"index": 1, "name": "NVIDIA A100-SXM4-80GB",
                                "uuid": "GPU-fa4e0000-0000-4000-8000-000000000001", "mem_mib": 81920})
        self.assertIsNone(gpucheck.parse_smi(SMI_LIST)[0]["mem_mib"])
        # A MIG host lists its instances under the GPU: they are not GPUs.
        mig = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n  MIG 1g.10gb     Device  0: (UUID: MIG-2)\n"
        self.assertEqual(len(gpucheck.parse_smi(mig)), 1)

    def test_mig_layout_against_nvidia_smi(self):
        smi = ("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-0)\n"
               "  MIG 3g.40gb     Device  0: (UUID: MIG-a)\n"
               "  MIG 1g.10gb     Device  1: (UUID: MIG-b)\n"
               "GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-1)\n")
        self.assertEqual(gpucheck.parse_smi_mig(smi), {0: [("3g.40gb", "MIG-a"), ("1g.10gb", "MIG-b")]})
        mig = [{"uuid": "MIG-a", "profile": "3g.40gb", "share": 0.4286},
               {"uuid": "MIG-b", "profile": "1g.10gb", "share": 0.1429}]
        gpus = [{**api_gpu(0), "mig_mode": True, "mig": mig, "util": None},
                {**api_gpu(1), "mig_mode": False, "mig": [], "util": 3}]
        out = gpucheck.compare_mig(gpus, gpucheck.parse_smi_mig(smi))
        self.assertEqual([s for s, _ in out], ["PASS"], out)
        self.assertIn("2 slice(s), 0.57 of the GPU", out[0][1])
        # A slice gpuward missed, and a utilisation NVML cannot have given, each FAIL.
        gpus[0]["mig"] = mig[:1]
        gpus[0]["util"] = 40
        out = gpucheck.compare_mig(gpus, gpucheck.parse_smi_mig(smi))
        self.assertEqual([s for s, _ in out], ["FAIL"], out)
        self.assertIn("vs nvidia-smi", out[0][1])
        self.assertIn("a utilisation (40%)", out[0][1])
        # No GPU in MIG mode on either side: nothing to say (the check SKIPs).
        self.assertEqual(gpucheck.compare_mig([gpus[1]], {}), [])

    def test_gpm_on_mig_gpus(self):
        slices = [{"uuid": "MIG-a", "activity": 37}, {"uuid": "MIG-b", "activity": None}]
        gpus = [{**api_gpu(0), "mig_mode": True, "gpm": True, "mig": slices},
                {**api_gpu(1), "mig_mode": True, "gpm": False, "mig": slices},
                {**api_gpu(2), "mig_mode": False, "gpm": None, "mig": []}]
        self.assertFalse(gpucheck.gpm_read(gpus))
        out = gpucheck.judge_gpm(gpus)
        self.assertEqual(out, [("FAIL", "GPU 0: GPM offered, but no activity reading (0-100) for MIG-b"),
                               ("PASS", "GPU 1: GPM not offered: no per-slice activity, slices judged by their "
                                        "processes and progress")])
        slices[1]["activity"] = 0
        self.assertTrue(gpucheck.gpm_read(gpus))
        self.assertEqual(gpucheck.judge_gpm(gpus)[0], ("PASS", "GPU 0: GPM offered: SM activity MIG-a 37%, MIG-b 0%"))

    def test_inventory_agrees(self):
        out = gpucheck.compare_inventory([api_gpu(0), api_gpu(1)], gpucheck.parse_smi(SMI_LIST, SMI_QUERY))
        self.assertEqual([s for s, _ in out], ["PASS", "PASS"], out)
        self.assertIn("81920 MiB", out[0][1])

    def test_inventory_disagrees(self):
        smi = gpucheck.parse_smi(SMI_LIST, SMI_QUERY)
        cases = [
            ([api_gpu(0)], "gpuward lists 1 GPUs, nvidia-smi 2"),
            ([api_gpu(0), api_gpu(1, name="NVIDIA H100")], "name 'NVIDIA H100' vs nvidia-smi 'NVIDIA A100-SXM4-80GB'"),
            ([api_gpu(0), api_gpu(1, mib=40960)], "memory 40960 MiB vs nvidia-smi 81920 MiB"),
            ([api_gpu(0), dict(api_gpu(1), uuid="GPU-other")], "not in gpuward's list"),
            ([api_gpu(0), dict(api_gpu(1), index=3)], "index 3 vs nvidia-smi 1"),
        ]
        for api, needle in cases:
            out = gpucheck.compare_inventory(api, smi)
            fails = [d for s, d in out if s == "FAIL"]
            self.assertTrue(any(needle in d for d in fails), (needle, out))
        # Within 1%: rounding between NVML and nvidia-smi is no failure.
        out = gpucheck.compare_inventory([api_gpu(0, mib=81559), api_gpu(1)], smi)
        self.assertEqual([s for s, _ in out], ["PASS", "PASS"], out)

    def test_memory(self):
        self.assertEqual(gpucheck.judge_memory((16384 + 500) * 2**20, 16384)[0], "PASS")
        st, detail = gpucheck.judge_memory((16384 + 1000) * 2**20, 16384)
        self.assertEqual(st, "FAIL")
        self.assertIn("17384 MiB seen, 16384 MiB allocated (+6.1%, limit +5%)", detail)
        self.assertEqual(gpucheck.judge_memory(8000 * 2**20, 16384)[0], "FAIL")  # less than allocated
        self.assertEqual(gpucheck.judge_memory(0, 16384)[0], "FAIL")

    def test_util(self):
        self.assertEqual(gpucheck.judge_util([100, 99, 100, 0, 100])[0], "PASS")  # one sample between kernels
        st, detail = gpucheck.judge_util([50, 60, 95, 40])
        self.assertEqual(st, "FAIL")
        self.assertIn("median 60% of 4 samples", detail)
        self.assertEqual(gpucheck.judge_util([])[0], "FAIL")

    def test_attribution(self):
        gpu = {"index": 1, "job": 7, "processes": [{"pid": 10, "job": 7}, {"pid": 11, "job": None}]}
        self.assertEqual(gpucheck.judge_attribution(gpu, 7, [10])[0], "PASS")
        self.assertEqual(gpucheck.judge_attribution(dict(gpu, job=8), 7, [10])[0], "FAIL")
        st, detail = gpucheck.judge_attribution(gpu, 7, [10, 12])
        self.assertEqual(st, "FAIL")
        self.assertIn("pid [12]", detail)
        self.assertEqual(gpucheck.judge_attribution(dict(gpu, processes=[]), 7, [])[0], "FAIL")

    def test_sampler(self):
        text = ("gpuward_sampler_snapshot_seconds_sum 0.02\ngpuward_sampler_snapshot_seconds_count 10\n"
                "gpuward_sampler_snapshot_max_seconds 0.004\ngpuward_sampler_cpu_seconds_total 0.05\n")
        st, detail = gpucheck.judge_sampler(text, 2, 10)
        self.assertEqual(st, "PASS")
        self.assertIn("10 snapshots of 2 GPU(s): 2.00 ms mean (1.00 ms per GPU), 4.00 ms max", detail)
        self.assertIn("(0.50%)", detail)
        self.assertEqual(gpucheck.judge_sampler(text.replace("max_seconds 0.004", "max_seconds 1.5"), 2, 10)[0], "FAIL")
        self.assertEqual(gpucheck.judge_sampler("", 2, 10)[0], "FAIL")


class GpuloadTest(unittest.TestCase):
    def test_no_driver_exits_2_saying_so(self):
        p = subprocess.run([GPULOAD, "busy", "--seconds", "1"], capture_output=True, text=True, timeout=30,
                           env={**os.environ, "GPULOAD_LIBCUDA": "/nonexistent/libcuda.so.1"})
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("gpuload: no CUDA driver: cannot load /nonexistent/libcuda.so.1", p.stderr)
        self.assertEqual(p.stdout, "")

    def test_bad_arguments_exit_2_naming_the_option(self):
        p = subprocess.run([GPULOAD, "busy", "--duty", "150"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("gpuload: --duty 150: a whole percentage, 1 to 100", p.stderr)
        p = subprocess.run([GPULOAD, "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0)
        self.assertIn("Usage: gpuload MODE", p.stdout)


class SimulatedRunTest(unittest.TestCase):
    """The whole check on the fake NVML (2 GPUs): its steps run, the CUDA ones SKIP."""

    def run_check(self, smi_text=None, gpus=2, extra=()):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "report.txt")
            args = [sys.executable, SCRIPT, "--build", BUILD, "--simulate", str(gpus), "--nvml-lib", FAKE_NVML,
                    "--out", out, *extra]
            if smi_text is not None:
                smi = os.path.join(tmp, "smi.txt")
                with open(smi, "w") as f:
                    f.write(smi_text)
                args += ["--smi-output", smi]
            p = subprocess.run(args, capture_output=True, text=True, timeout=240)
            with open(out) as f:
                report = f.read()
        m = re.search(r"gpuwardd pid (\d+)", p.stdout)
        self.assertTrue(m, p.stdout + p.stderr)
        self.assertFalse(pid_alive(int(m.group(1))), "the check stops the daemon it started")
        return p, report

    def test_runs_through_and_skips_what_needs_cuda(self):
        p, report = self.run_check()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(report.strip(), p.stdout.strip())
        self.assertRegex(report, r"driver fake-\S+; GPU 0: NVIDIA A100-SXM4-80GB GPU-fa4e")
        self.assertRegex(report, r"PASS  daemon: gpuwardd pid \d+ on the fake NVML: 2 GPU\(s\)")
        self.assertIn("SKIP  inventory: no nvidia-smi to compare with", report)
        for name in CUDA_CHECKS:
            self.assertIn(f"SKIP  {name}: needs a CUDA driver", report)
        self.assertRegex(report, r"PASS  sampler: \d+ snapshots of 2 GPU\(s\): [0-9.]+ ms mean")
        self.assertIn("SKIP  mig: no GPU in MIG mode (this check never changes a GPU's mode)", report)
        self.assertRegex(report, r"2 PASS, 0 FAIL, 10 SKIP in \d+ s\n$")

    def test_mig_gpus_say_whether_gpm_is_offered_with_a_reading_per_slice(self):
        # GPU 0 offers GPM (Hopper), GPU 1 does not (an A100): read only, neither is changed.
        conf = ["gpu0.mig=1g.10gb*2", "gpu0.gpm=1", "gpu0.mig.0.activity=37", "gpu0.mig.1.activity=4",
                "gpu1.mig=3g.40gb"]
        p, report = self.run_check(extra=[a for c in conf for a in ("--simulate-config", c)])
        self.assertEqual(p.returncode, 0, report + p.stderr)
        self.assertRegex(report, r"PASS  mig: GPU 0: 2 slice\(s\), 0.29 of the GPU")
        self.assertRegex(report, r"PASS  mig.gpm: GPU 0: GPM offered: SM activity MIG-\S+ 37%, MIG-\S+ 4%\n")
        self.assertIn("PASS  mig.gpm: GPU 1: GPM not offered: no per-slice activity, slices judged by their "
                      "processes and progress", report)
        self.assertNotIn("SKIP  mig", report)

    def test_inventory_compared_and_a_mismatch_fails(self):
        p, report = self.run_check(SMI_LIST + "--\n" + SMI_QUERY)
        self.assertEqual(p.returncode, 0, report)
        self.assertEqual(report.count("PASS  inventory: GPU"), 2, report)
        p, report = self.run_check(SMI_LIST.replace("A100-SXM4-80GB (UUID: GPU-fa4e0000-0000-4000-8000-000000000001",
                                                    "H100 80GB HBM3 (UUID: GPU-fa4e0000-0000-4000-8000-000000000001")
                                   + "--\n" + SMI_QUERY)
        self.assertEqual(p.returncode, 1, report)
        self.assertIn("FAIL  inventory: GPU 1 GPU-fa4e0000-0000-4000-8000-000000000001: name "
                      "'NVIDIA A100-SXM4-80GB' vs nvidia-smi 'NVIDIA H100 80GB HBM3'", report)
        self.assertRegex(report, r"1 FAIL")

    def assert_cuda_checks_pass(self, report, gpus):
        """Every check that runs gpuload, with its figures, on the fake libcuda."""
        self.assertRegex(report, r"PASS  busy.attribution: job 1 on GPU \d: pid \[\d+\] attributed")
        self.assertRegex(report, r"PASS  busy.memory: job 1 GPU \d: 16640 MiB seen, 16384 MiB allocated \(\+1.6%")
        self.assertRegex(report, r"PASS  busy.utilisation: job 1 GPU \d: median 100% of 8 samples")
        self.assertRegex(report, r"PASS  idle.reclaimed: job 2 RECLAIMED after \d+ s .*warned: True; evidence: idle for "
                                 r"\d+s: GPU \d util 0% \(threshold 5%\)")
        self.assertRegex(report, r"PASS  idle.busy_kept: busy job 1: RUNNING, events \['submit', 'start'\]")
        self.assertRegex(report, r"PASS  cancel.freed: gpuward cancel 1 returned in [0-9.]+ s; GPU \d memory.used "
                                 r"then 0 MiB \(before any job 0 MiB")
        self.assertRegex(report, r"PASS  rogue: pid \d+ on GPU 0: listed with no job \(1280 MiB\), rogue_processes 1")
        self.assertRegex(report, r"PASS  leak: job 3 at epoch \d+ \(1024 MiB/epoch\): GPU \d: baseline \+1024 "
                                 r"MiB/epoch for \d+ epochs; OOM in ~\d+ epochs")
        self.assertRegex(report, rf"PASS  sampler: \d+ snapshots of {gpus} GPU\(s\)")
        self.assertRegex(report, r"10 PASS, 0 FAIL, 2 SKIP in \d+ s\n$")

    @unittest.skipIf(sanitized_build(), "the check's Python cannot load the ASan-built fake NVML; the plain build runs it")
    def test_whole_check_on_the_fake_cuda_two_gpus(self):
        # The idle job runs beside the busy one.
        p, report = self.run_check(gpus=2, extra=["--libcuda", FAKE_CUDA])
        self.assertEqual(p.returncode, 0, report + p.stderr)
        self.assert_cuda_checks_pass(report, 2)
        self.assertLess(report.index("idle.reclaimed"), report.index("cancel.freed"), "beside the busy job")

    @unittest.skipIf(sanitized_build(), "the check's Python cannot load the ASan-built fake NVML; the plain build runs it")
    def test_whole_check_on_the_fake_cuda_one_gpu(self):
        # The busy job is watched past the idle timeout alone, then the idle job runs.
        p, report = self.run_check(gpus=1, extra=["--libcuda", FAKE_CUDA])
        self.assertEqual(p.returncode, 0, report + p.stderr)
        self.assert_cuda_checks_pass(report, 1)
        self.assertLess(report.index("cancel.freed"), report.index("idle.reclaimed"), "one after the other")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Job arrays, the CLI's part: `gpuward submit --array SPEC` and `#GPUWARD --array SPEC` are
checked with the core's parser (Slurm's syntax; errors name the option and where it came
from) and sent as the request's `array` field, which gpuwardd queues as one array job
(test_array_daemon.py runs them)."""
import os
import unittest

import gwtest


class ArraySubmitTest(gwtest.DaemonTest):
    gpus = 2

    def script(self, directive):
        path = os.path.join(self.d.work, "sweep.sh")
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\n#GPUWARD {directive}\necho task\n")
        os.chmod(path, 0o755)
        return path

    def test_bad_spec_is_a_usage_error_naming_the_option(self):
        p = self.d.cli("submit", "--array", "9-3", "--", "true", check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--array: '9-3': the range ends before it starts", p.stderr)
        p = self.d.cli("submit", "--array", "0-10000", "--", "true", check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--array: '0-10000' makes more than 10000 tasks", p.stderr)

    def test_bad_spec_in_a_directive_names_the_script(self):
        path = self.script("--array 0-99:0")
        p = self.d.cli("submit", path, check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("#GPUWARD --array: '0-99:0': the step after ':' must be", p.stderr)
        self.assertIn("sweep.sh", p.stderr)

    def test_good_spec_reaches_the_daemon_as_the_array_field(self):
        ids = []
        for args in (["--hold", "--array", "0-49%4", "--", "true"], ["--hold", self.script("--array 1,3,5-9")]):
            ids.append(self.d.submit(*args))
        st, jobs = self.d.api("GET", "/api/v1/jobs?state=PENDING,HELD,RUNNING,COMPLETED,FAILED,CANCELLED")
        self.assertEqual(st, 200)
        got = {j["id"]: (j["array"], j["array_tasks"]["total"]) for j in jobs["jobs"]}
        self.assertEqual(got, {ids[0]: ("0-49%4", 50), ids[1]: ("1,3,5-9", 7)}, "one queued job per array")

if __name__ == "__main__":
    gwtest.main()

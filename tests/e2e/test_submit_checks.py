#!/usr/bin/env python3
"""What a submission is told at once: durations as people type them (one parser for the CLI,
#GPUWARD lines, the API and the config), a command that is not there or not runnable by its
user, and the time limit a job gets when none was asked."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gwtest import Daemon, DaemonTest, start_failure, main  # noqa: E402

HOUR = 3600
FORMS = "use 30m, 1.5h, 1h30m, 90s, 2d or H:MM:SS"


class Durations(DaemonTest):
    gpus = 1

    def test_forms_people_type(self):
        """--time, #GPUWARD --time and the API's time_limit take the same forms."""
        for typed, secs in [("30min", 1800), ("1.5h", 5400), ("90s", 90), ("1h30m", 5400), ("2d", 2 * 86400),
                            ("45m", 2700), ("1:30:00", 5400), ("90", 5400), ("0.5d", 43200), ("90sec", 90)]:
            jid = self.d.submit("--hold", "--time", typed, "--", "true")
            self.assertEqual(self.d.job(jid)["time_limit"], secs, typed)
        script = os.path.join(self.d.work, "train.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n#GPUWARD --time 1.5h\ntrue\n")
        os.chmod(script, 0o755)
        jid = self.d.submit("--hold", script)
        self.assertEqual(self.d.job(jid)["time_limit"], 5400)
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"], time_limit="30min", hold=True))
        self.assertEqual(st, 201, r)
        self.assertEqual(self.d.job(r["id"])["time_limit"], 1800)

    def test_refused_forms_name_the_field_and_examples(self):
        before = self.d.api("GET", "/api/v1/jobs")[1]["jobs"]
        for typed in ["30 mins", "30mins", "1.5.h", "m", "-1h", "1h-", "1hr", "5M", "1.5h30m"]:
            p = self.d.cli("submit", "--time", typed, "--", "true", check=False)
            self.assertEqual(p.returncode, 2, (typed, p.stderr))
            self.assertIn("--time", p.stderr)
            self.assertIn(f"'{typed}'", p.stderr)
            if typed != "-1h":
                self.assertIn(FORMS, p.stderr, typed)
        st, r = self.d.api("POST", "/api/v1/jobs", self.d.job_spec(["true"], time_limit="30 mins"))
        self.assertEqual(st, 400, r)
        self.assertEqual(r["field"], "time_limit")
        self.assertIn(FORMS, r["error"])
        self.assertEqual(self.d.api("GET", "/api/v1/jobs")[1]["jobs"], before)

    def test_config_takes_the_same_forms(self):
        with Daemon(gpus=1, config="default_time_limit = 1.5h\n") as d:
            d.start()
            jid = d.submit("--hold", "--", "true")
            self.assertEqual(d.job(jid)["time_limit"], 5400)
        why = start_failure("default_time_limit = 30 mins\n")
        self.assertIn("default_time_limit", why)
        self.assertIn(FORMS, why)


if __name__ == "__main__":
    main()

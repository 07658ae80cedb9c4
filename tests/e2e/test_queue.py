"""Queueing and GPU allocation through the CLI and the API."""
import os
import random
import re
import time

from gwtest import TRAINER, DaemonTest, main, wait_until


class QueueTest(DaemonTest):
    def visible_devices(self, jid):
        m = re.search(r"CUDA_VISIBLE_DEVICES=(\S+)", self.d.log_text(jid))
        return m.group(1) if m else None

    def test_two_run_third_waits_then_starts(self):
        gate = os.path.join(self.d.work, "gate")
        # The first two hold their GPUs until the gate file appears; the third must wait.
        hold = f"echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; while [ ! -e {gate} ]; do sleep 0.05; done"
        a = self.d.submit("--gpus", 2, "--name", "a", "--", "sh", "-c", hold)
        b = self.d.submit("--gpus", 2, "--name", "b", "--", "sh", "-c", hold + "; sleep 30")
        c = self.d.submit("--gpus", 2, "--name", "c", "--", TRAINER, "epochs=2", "--epoch-seconds", "0.05")
        self.d.wait_state(a, "RUNNING")
        self.d.wait_state(b, "RUNNING")
        jc = self.d.job(c)
        self.assertEqual(jc["state"], "PENDING")
        self.assertEqual(jc["reason"], "Resources")
        queue = self.d.cli("queue").stdout
        self.assertRegex(queue, rf"(?m)^{c}\s+c\s+.*PENDING.*Resources")
        ga, gb = self.d.job(a)["gpus"], self.d.job(b)["gpus"]
        self.assertEqual(len(ga), 2)
        self.assertFalse(set(ga) & set(gb))
        wait_until(lambda: self.visible_devices(a) and self.visible_devices(b), what="jobs to print their GPUs")
        self.assertEqual(self.visible_devices(a), ",".join(map(str, ga)))
        self.assertEqual(self.visible_devices(b), ",".join(map(str, gb)))
        open(gate, "w").close()
        ja = self.d.wait_state(a, "COMPLETED")
        jc = self.d.wait_state(c, {"RUNNING", "COMPLETED"})
        self.assertEqual(sorted(jc["gpus"]), sorted(ja["gpus"]), "c takes the GPUs a freed")
        jc = self.d.wait_state(c, "COMPLETED")
        self.assertEqual(jc["exit_code"], 0)
        self.assertEqual(self.visible_devices(c), ",".join(map(str, jc["gpus"])))
        # The gpus view shows who holds what.
        gpus = self.d.cli_json("gpus")["gpus"]
        self.assertEqual(len(gpus), 4)
        for g in gpus:
            self.assertEqual(g["job"], b if g["index"] in gb else None)

    def test_queue_all_shows_ended_jobs_with_their_own_times(self):
        """An ended job's TIME is how long it ran (not still counting) and START when it started."""
        jid = self.d.submit("--", "sleep", "0.3")
        self.d.wait_state(jid, "COMPLETED")
        never = self.d.submit("--hold", "--", "true")
        self.d.cli("cancel", never)

        def rows():
            # Cells by the header's column positions: a START of "11-26 23:59" has a space in it.
            lines = self.d.cli("queue", "--all").stdout.splitlines()
            names = lines[0].split()
            starts = [lines[0].index(n) for n in names] + [None]
            return {int(l.split()[0]): {n: l[a:b].strip() for n, a, b in zip(names, starts, starts[1:])}
                    for l in lines[1:]}
        before = rows()
        time.sleep(1.5)  # long enough that a TIME still counting would show more
        after = rows()
        self.assertEqual(after[jid]["TIME"], before[jid]["TIME"], "an ended job's time does not grow")
        self.assertRegex(after[jid]["START"], r"^(\d\d-\d\d )?\d\d:\d\d$", "when it started, no '~': a fact")
        self.assertEqual(after[never]["START"], "-", "a job that never ran has no start")

    def test_rows_layout_matches_objects(self):
        gate = os.path.join(self.d.work, "gate")
        ids = [self.d.submit("--gpus", 4, "--name", f"r{i}", "--", "sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done")
               for i in range(3)]
        self.d.wait_state(ids[0], "RUNNING")
        fields = "id,name,state,reason,gpus,start_time"
        st, objs = self.d.api("GET", f"/api/v1/jobs?fields={fields}")
        self.assertEqual(st, 200)
        st, rows = self.d.api("GET", f"/api/v1/jobs?fields={fields}&layout=rows")
        self.assertEqual(st, 200)
        self.assertNotIn("jobs", rows)
        self.assertEqual([dict(zip(rows["fields"], r)) for r in rows["rows"]], objs["jobs"])
        self.assertEqual([j["id"] for j in objs["jobs"]], ids)
        st, err = self.d.api("GET", "/api/v1/jobs?layout=columns")
        self.assertEqual((st, err.get("field")), (400, "layout"))
        # The CLI asks for rows; what it prints is the same queue.
        queue = self.d.cli("queue").stdout
        for i, jid in enumerate(ids):
            self.assertRegex(queue, rf"(?m)^{jid}\s+r{i}\s+")
        self.assertRegex(queue, rf"(?m)^{ids[1]}\s+.*PENDING.*\(Resources\)")
        open(gate, "w").close()
        for jid in ids:
            self.d.wait_state(jid, "COMPLETED")

    def test_no_gpu_ever_shared(self):
        rng = random.Random(1234)
        ids = []
        marks = os.path.join(self.d.work, "marks")
        os.makedirs(marks)
        script = ("t0=$(date +%s.%N); sleep $1; t1=$(date +%s.%N); "
                  f"echo \"$CUDA_VISIBLE_DEVICES $t0 $t1\" > {marks}/$GPUWARD_JOB_ID")
        jobs = [{"command": ["sh", "-c", script, "sh", f"0.0{rng.randint(0, 5)}"], "ngpus": rng.choice([1, 1, 1, 2, 3, 4]),
                 "cwd": self.d.work, "time_limit": 60, "priority": rng.choice([0, 0, 0, 5])} for _ in range(200)]
        # Half through one batch call, half one by one through the API.
        st, r = self.d.api("POST", "/api/v1/jobs/batch", {"jobs": jobs[:100]})
        self.assertEqual(st, 201, r)
        ids += r["ids"]
        for spec in jobs[100:]:
            st, r = self.d.api("POST", "/api/v1/jobs", spec)
            self.assertEqual(st, 201, r)
            ids.append(r["id"])
        wait_until(lambda: len(os.listdir(marks)) == 200, timeout=180, interval=0.2, what="200 jobs to finish")
        spans = {g: [] for g in range(4)}
        for jid in ids:
            j = self.d.wait_state(jid, "COMPLETED")
            with open(os.path.join(marks, str(jid))) as f:
                dev, t0, t1 = f.read().split()
            self.assertEqual(dev, ",".join(map(str, j["gpus"])))
            self.assertEqual(len(j["gpus"]), j["ngpus"])
            for g in j["gpus"]:
                spans[g].append((float(t0), float(t1), jid))
        for g, s in spans.items():
            s.sort()
            for (a0, a1, ja), (b0, b1, jb) in zip(s, s[1:]):
                self.assertLessEqual(a1, b0, f"GPU {g} shared by jobs {ja} and {jb}")

    def test_priority_and_hold(self):
        gate = os.path.join(self.d.work, "gate")
        blocker = self.d.submit("--gpus", 4, "--", "sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done")
        self.d.wait_state(blocker, "RUNNING")
        low = self.d.submit("--gpus", 4, "--name", "low", "--", "true")
        high = self.d.submit("--gpus", 4, "--priority", 10, "--name", "high", "--", "true")
        held = self.d.submit("--gpus", 1, "--priority", 20, "--hold", "--", "true")
        later = self.d.submit("--gpus", 1, "--name", "later", "--", "true")
        self.assertEqual(self.d.job(held)["state"], "HELD")
        self.assertEqual(self.d.job(held)["reason"], "Held")
        queue = [j["id"] for j in self.d.cli_json("queue")["jobs"]]
        self.assertLess(queue.index(high), queue.index(low))
        self.assertEqual(queue, [blocker, high, low, later, held], "held last, whatever their priority")
        # --me asks by the caller's uid: the same jobs here (all are the caller's), none for
        # a uid with no jobs.
        self.assertEqual([j["id"] for j in self.d.cli_json("queue", "--me")["jobs"]], queue)
        self.assertEqual(self.d.api("GET", f"/api/v1/jobs?uid={os.getuid() + 4242}")[1]["jobs"], [])
        open(gate, "w").close()
        jh, jl = self.d.wait_state(high, "COMPLETED"), self.d.wait_state(low, "COMPLETED")
        self.d.wait_state(later, "COMPLETED")
        self.assertLessEqual(jh["start_time"], jl["start_time"])
        self.assertEqual(self.d.job(held)["state"], "HELD")
        self.d.cli("release", held)
        self.d.wait_state(held, "COMPLETED")

    def test_cancel_of_a_waiting_job_is_done_at_once(self):
        """Nothing to stop: the reply is 200 with the final job, not 202 "in progress"."""
        jid = self.d.submit("--hold", "--", "true")
        st, j = self.d.api("DELETE", f"/api/v1/jobs/{jid}")
        self.assertEqual((st, j["id"], j["state"]), (200, jid, "CANCELLED"), j)
        self.assertIn("cancelled by", j["reason"])
        self.assertEqual(self.d.api("DELETE", f"/api/v1/jobs/{jid}")[0], 409, "a second cancel: already ended")

    def test_free_gpus_booked_before_the_limit_is_reservation(self):
        """Every GPU is free but booked by others in an hour: a 4-hour job waits for the
        bookings, and says so (Reservation), not for GPUs (Resources); a 30-minute one runs."""
        b = self.d.cli_json("reserve", "--gpus", 4, "--start", "now+1h", "--duration", "1h")
        try:
            long_job = self.d.submit("--time", "4h", "--", "true")
            self.d.wait_job(long_job, lambda j: j["reason"] == "Reservation", what="Reservation")
            rows = [l for l in self.d.cli("queue").stdout.splitlines() if l.split()[0] == str(long_job)]
            self.assertIn("(Reservation)", rows[0])
            short = self.d.submit("--time", "30m", "--", "true")
            self.d.wait_state(short, "COMPLETED")
            self.assertEqual(self.d.job(long_job)["state"], "PENDING")
            self.d.cli("cancel", long_job)
        finally:
            self.d.cli("unreserve", b["id"])

    def test_dependencies(self):
        # The first job waits for a gate: its dependants are looked at while it surely runs.
        gate = os.path.join(self.d.work, "dep-gate")
        first = self.d.submit("--", "sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done; exit 3")
        ok_dep = self.d.submit("--after", f"{first}:ok", "--", "true")
        any_dep = self.d.submit("--after", f"{first}:any", "--", "true")
        self.assertEqual(self.d.job(ok_dep)["reason"], "Dependency")
        open(gate, "w").close()
        self.d.wait_state(first, "FAILED")
        self.d.wait_state(any_dep, "COMPLETED")
        j = self.d.wait_state(ok_dep, "CANCELLED")
        self.assertIn("dependency never satisfied", j["reason"])
        # Once it has failed, a :ok dependant is refused at submit rather than cancelled at once.
        before = len(self.d.cli_json("queue", "--all")["jobs"])
        p = self.d.cli("submit", "--after", str(first), "--", "true", check=False)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn(f"job {first} ended FAILED, so it will never have COMPLETED", p.stderr)
        self.assertIn(f"{first}:any", p.stderr)
        self.assertEqual(len(self.d.cli_json("queue", "--all")["jobs"]), before, "nothing was added")
        later = self.d.submit("--after", f"{first}:any", "--", "true")
        self.d.wait_state(later, "COMPLETED")


if __name__ == "__main__":
    main()

"""A Slurm user's habits: #SBATCH lines, sbatch's short options and file name patterns,
Slurm's command names, and the mistakes caught at submit rather than when the job starts."""
import os
import re

from gwtest import DaemonTest, main


class SlurmWords(DaemonTest):
    gpus = 4

    def script(self, name, text, mode=0o644):
        path = os.path.join(self.d.work, name)
        with open(path, "w", newline="") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def test_an_sbatch_script_gets_the_same_job(self):
        # Not executable, and bash's arrays: /bin/sh would fail with 'Syntax error: "(" unexpected'.
        self.script("train.sbatch", "#!/bin/bash\n"
                    "#SBATCH --job-name=smoke\n"
                    "#SBATCH --gres=gpu:2\n"
                    "#SBATCH -t 1:30\n"
                    "#SBATCH -o out-%j-%x.log\n"
                    "#SBATCH --partition=gpu\n"
                    "#SBATCH --mem 4G\n"
                    "a=(one two); echo \"second ${a[1]}\"\n")
        p = self.d.cli("submit", "train.sbatch")
        jid = int(re.match(r"Submitted job (\d+)\n", p.stdout).group(1))
        self.assertIn("train.sbatch: #SBATCH --partition=gpu ignored (gpuward has no partitions)\n", p.stderr)
        self.assertIn("train.sbatch: #SBATCH --mem 4G ignored (gpuward has no such option)\n", p.stderr)
        self.assertIn("gpuward: time limit 1m30s\n", p.stderr)
        self.assertIn("is not executable: it runs as /bin/bash", p.stderr)
        j = self.d.job(jid)
        self.assertEqual((j["name"], j["ngpus"], j["time_limit"]), ("smoke", 2, 90))
        self.d.wait_state(jid, "COMPLETED")
        with open(os.path.join(self.d.work, f"out-{jid}-smoke.log")) as f:
            self.assertIn("second two", f.read())

    def test_sbatch_gres_of_a_mig_type_asks_for_slices(self):
        """#SBATCH --gres=gpu:1g.10gb:2, or with Slurm's full type name (AutoDetect=nvml's
        a100_1g.10gb), is the slice request --gpus 1g.10gb:2; a type that names no slice is a
        GPU count, as before."""
        for gres, mig, ngpus in (("--gres=gpu:1g.10gb:2", {"profile": "1g.10gb", "count": 2}, 1),
                                 ("--gres=gpu:a100_1g.10gb:2", {"profile": "1g.10gb", "count": 2}, 1),
                                 ("--gres=gpu:nvidia_a100_3g.40gb:1,shard:2", {"profile": "3g.40gb", "count": 1}, 1),
                                 ("--gpus=a100_2g.20gb", {"profile": "2g.20gb", "count": 1}, 1),
                                 ("--gres=gpu:a100:2", None, 2)):
            self.script("s.sh", f"#!/bin/sh\n#SBATCH {gres}\ntrue\n", mode=0o755)
            j = self.d.job(self.d.submit("--hold", "s.sh"))
            self.assertEqual((j.get("mig"), j["ngpus"]), (mig, ngpus), gres)

    def test_gpuward_lines_and_the_command_line_win(self):
        self.script("both.sh", "#!/bin/sh\n#SBATCH -G 3 -J slurmname --time=2:00:00\n#GPUWARD --gpus 1\ntrue\n",
                    mode=0o755)
        j = self.d.job(self.d.submit("--hold", "-J", "cli", "both.sh"))
        self.assertEqual((j["ngpus"], j["name"], j["time_limit"]), (1, "cli", 7200))

    def test_slurm_time_forms_and_short_options(self):
        for spec, secs in (("30", 1800), ("1:30", 90), ("1-12", 129600), ("2:00:00", 7200)):
            p = self.d.cli("submit", "--hold", "-t", spec, "-G", "2", "--", "true")
            jid = int(p.stdout.split()[2])
            self.assertEqual((self.d.job(jid)["time_limit"], self.d.job(jid)["ngpus"]), (secs, 2), spec)
        first = self.d.submit("--hold", "-t", "5m", "--", "true")
        j = self.d.job(self.d.submit("--hold", "-t", "5m", "-d", f"afterany:{first}", "--", "true"))
        self.assertEqual(j["after"]["job"], first)
        self.assertEqual(j["after"]["kind"].lower(), "any")
        p = self.d.cli("submit", "-d", "afternotok:5", "--", "true", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("-d: 'afternotok:5' is not afterok:ID or afterany:ID", p.stderr)

    def test_output_patterns(self):
        jid = self.d.submit("-t", "1m", "-a", "0-1", "-o", "arr-%A_%a-%u-%%.log", "--", "sh", "-c", "echo task")
        self.d.wait_state(jid, "COMPLETED")
        for i in (0, 1):
            with open(os.path.join(self.d.work, f"arr-{jid}_{i}-root-%.log")) as f:
                self.assertEqual(f.read(), "task\n")
        p = self.d.cli("submit", "-o", "x" * 200 + "/%x" * 40 + "/%j.log", "-J", "n" * 100, "--", "true", check=False)
        self.assertEqual(p.returncode, 1, p.stderr)  # the daemon's refusal
        self.assertIn("once its %j, %x, %u, %A, %a and %N are filled in", p.stderr)

    def test_unknown_directives_are_named_and_bad_dependencies_refused(self):
        self.script("dep.sh", "#!/bin/sh\n#SBATCH --dependency=afterok:3:4\ntrue\n")
        p = self.d.cli("submit", "dep.sh", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("dep.sh: #SBATCH --dependency=afterok:3:4: gpuward waits on one job", p.stderr)
        self.script("mail.sh", "#!/bin/sh\n#SBATCH --mail-type=END -N 1 --exclusive\ntrue\n")
        p = self.d.cli("submit", "--hold", "mail.sh")
        self.assertIn("#SBATCH --mail-type=END ignored (gpuward sends no mail", p.stderr)
        self.assertIn("#SBATCH -N 1 ignored (a gpuward job runs on one host)", p.stderr)
        self.assertIn("#SBATCH --exclusive ignored (gpuward has no such option)", p.stderr)

    def test_slurm_commands_and_options_point_to_gpuward_words(self):
        for slurm, ours in (("squeue", "queue"), ("sbatch", "submit"), ("scancel", "cancel"), ("sacct", "history"),
                            ("sinfo", "gpus"), ("srun", "run")):
            p = self.d.cli(slurm, check=False)
            self.assertEqual(p.returncode, 2)
            self.assertIn(f"gpuward has no '{slurm}': did you mean 'gpuward {ours}'?", p.stderr)
        p = self.d.cli("queu", check=False)
        self.assertIn("unknown verb 'queu': did you mean 'gpuward queue'?", p.stderr)
        p = self.d.cli("submit", "--gres=gpu:2", "--", "true", check=False)
        self.assertIn("unknown option '--gres' (sbatch's): in gpuward, --gpus N (or -G N)", p.stderr)
        p = self.d.cli("submit", "--gpu", "2", "--", "true", check=False)
        self.assertIn("did you mean '--gpus'?", p.stderr)
        p = self.d.cli("queue", "--mee", check=False)
        self.assertIn("unknown option '--mee': did you mean '--me'?", p.stderr)

    def test_mistakes_are_refused_at_submit(self):
        self.script("dos.sh", "#!/bin/bash\r\n#SBATCH -t 5\r\necho hi\r\n", mode=0o755)
        p = self.d.cli("submit", "dos.sh", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("has Windows (CRLF) line endings", p.stderr)
        self.assertIn("dos2unix dos.sh", p.stderr)
        p = self.d.cli("submit", "--", "python3", "-u", "trian.py", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn(f"'trian.py' (the script python3 would run): no such file in {self.d.work}", p.stderr)
        self.script("train.py", "print('ok')\n")
        self.d.submit("--hold", "--", "python3", "-u", "train.py")
        self.d.submit("--hold", "--", "python3", "-c", "print(1)")
        self.assertEqual(len(self.d.cli_json("queue")["jobs"]), 2)


if __name__ == "__main__":
    main()

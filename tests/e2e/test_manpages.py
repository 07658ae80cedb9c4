"""The man pages (docs/man) say what the programs do: each option a `gpuward VERB --help` prints
is an entry of that verb's section in gpuward.1 and each entry there is one it prints; the same
for gpuwardd --help and gpuwardd.1; every config key of gpuwardd's settings table
(`gpuwardd --list-keys`) has an entry in gpuward.conf.5 whose default is the table's and the one
--help gives, and no entry names a key that is gone.
Each page renders with man(1) at 80 columns without a warning."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from gwtest import BUILD, GPUWARD, GPUWARDD, main

SOURCE = os.environ.get("GW_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
MAN = os.path.join(os.path.abspath(SOURCE), "docs", "man")
PAGES = ["gpuward.1", "gpuwardd.1", "gpuward.conf.5"]
OPTION = re.compile(r"(--?[A-Za-z][\w-]*)(?:[ =](?!-)[^\s,]+)?(?:, )?")


def run(*argv):
    p = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {p.returncode}: {p.stderr}")
    return p.stdout


def plain(roff):
    """A roff line as it reads: font changes gone, escapes resolved."""
    s = re.sub(r"\\f[BIRP]", "", roff)
    return s.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "").replace('"', "")


def help_entries(text):
    """{option: the text of its entry} of a --help, from its lines that start (indented) with an
    option: '  --gpus N   GPUs...', '  -q, --quiet  ...', '  --rate-limit N, --rate-burst N  ...'."""
    entries, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^ {2,}(-.*)$", line)
        if m:
            head, names = m.group(1), []
            while (o := OPTION.match(head)) and o.group(0):
                names.append(o.group(1))
                head = head[o.end():]
            current = [head.strip()]
            for n in names:
                entries[n] = current
        elif current is not None and re.match(r"^ {5,}\S", line):
            current.append(line.strip())
        else:
            current = None
    return {k: " ".join(v) for k, v in entries.items()}


def help_default(entry):
    """What an entry of --help gives as its default ('(default 64M; 0 = no cap)': '64M'), or None."""
    m = re.search(r"[(;,] ?default:? ([^;)]+)", entry)
    return m.group(1).strip() if m else None


def man_entries(page):
    """{(section, subsection): [(tag, text)]} of a page's .TP entries, as plain text."""
    out, sh, ss, tag, body = {}, None, None, None, None
    with open(os.path.join(MAN, page)) as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        if line.startswith(".SH "):
            sh, ss = plain(line[4:]).strip(), None
        elif line.startswith(".SS "):
            ss = plain(line[4:]).strip()
        if line == ".TP" and i + 1 < len(lines):
            tag, body = plain(lines[i + 1]), []
            out.setdefault((sh, ss), []).append((tag, body))
        elif line.startswith(".") and line != ".TP" and not line.startswith(".\\\""):
            body = None
        elif body is not None and tag is not None and lines[i - 1] != ".TP":
            body.append(plain(line))
    return {k: [(t, " ".join(b)) for t, b in v] for k, v in out.items()}


def man_options(entries):
    """The options an entry list defines: those its tags start with."""
    opts = set()
    for tag, _ in entries:
        head = tag.replace("[", "").replace("]", " ")
        while (o := OPTION.match(head)) and o.group(0):
            opts.add(o.group(1))
            head = head[o.end():]
    return opts


def verbs():
    """Every verb and sub-command path ('submit', 'token create', 'admin quota set') that
    gpuward --help and the verbs' own --help list."""
    out = []
    for line in run(GPUWARD, "--help").split("Verbs:\n")[1].split("\n\n")[0].splitlines():
        verb = line.split()[0]
        out.append(verb)
        text = run(GPUWARD, verb, "--help")
        if "\nCommands:\n" in text:
            block = text.split("\nCommands:\n")[1].split("\n\n")[0]
            for cmd in re.findall(r"^  ([a-z][a-z-]*(?: [a-z][a-z-]*)*)(?= |$)", block, re.M):
                out.append(f"{verb} {cmd}")
    return out


def config_source():
    """config.c (flags, keys) and config_policy.c (the sections' keys), as one text."""
    text = ""
    for name in ("config.c", "config_policy.c"):
        with open(os.path.join(SOURCE, "src", "daemon", "base", name)) as f:
            text += f.read()
    return text


def config_keys():
    """{key: default} of the settings' table, as `gpuwardd --list-keys` prints it."""
    rows = [line.split("\t") for line in run(GPUWARDD, "--list-keys").splitlines()]
    return {r[0]: r[2] for r in rows}


def section_keys(section):
    """The keys config.c names in its 'unknown key ... in [SECTION] (a, b, c)' message."""
    src = config_source()
    src = re.sub(r'"\s*\n\s*"', "", src)  # adjacent string literals, joined
    m = re.search(r"unknown key '%s' in \[" + re.escape(section) + r"[^(]*\(([^)]*)\)", src)
    assert m, f"config.c's message for unknown keys in [{section}] is gone"
    return {k.strip() for k in m.group(1).split(",")}


class ManPagesTest(unittest.TestCase):
    maxDiff = None

    def test_gpuward_verbs_and_options_match_their_help(self):
        pages = man_entries("gpuward.1")
        sections = {ss[len("gpuward "):]: e for (sh, ss), e in pages.items() if sh == "VERBS" and ss}
        listed = verbs()
        self.assertEqual(sorted(sections), sorted(listed), "the VERBS sections of gpuward.1 are the verbs")
        for verb in listed:
            helped = set(help_entries(run(GPUWARD, *verb.split(), "--help")))
            self.assertEqual(man_options(sections[verb]), helped,
                             f"gpuward.1, section 'gpuward {verb}': options against 'gpuward {verb} --help'")

    def test_gpuward_global_options(self):
        text = run(GPUWARD, "--help").split("Global options")[1].split("\n\n")[0]
        self.assertEqual(man_options(man_entries("gpuward.1")[("OPTIONS", None)]), set(help_entries(text)))

    def test_gpuwardd_options_match_its_help(self):
        helped = set(help_entries(run(GPUWARDD, "--help")))
        self.assertIn("--check-config", helped)
        self.assertEqual(man_options(man_entries("gpuwardd.1")[("OPTIONS", None)]), helped)

    def test_every_config_key_with_its_default(self):
        entries = man_entries("gpuward.conf.5")[("KEYS", None)]
        documented = {}
        for tag, text in entries:
            key = tag.split()[0]
            m = re.search(r"Default: (.+?)\.?$", text)
            self.assertTrue(m, f"gpuward.conf.5: {key} says no 'Default: ...'")
            documented[key] = m.group(1)
        table = config_keys()
        self.assertEqual(sorted(documented), sorted(table), "gpuward.conf.5 KEYS against gpuwardd --list-keys")
        for key, default in documented.items():
            if table[key]:
                self.assertRegex(default, r"(^|[\s(])" + re.escape(table[key]) + r"($|[\s,;)])",
                                 f"{key}: gpuward.conf.5 says {default!r}, gpuwardd --list-keys {table[key]!r}")
        helped = help_entries(run(GPUWARDD, "--help"))
        for key, default in documented.items():
            phrase = help_default(helped.get("--" + key.replace("_", "-"), ""))
            if phrase is not None:
                self.assertRegex(phrase, r"(^|[\s(])" + re.escape(default) + r"($|[\s,;)])",
                                 f"{key}: gpuward.conf.5 says {default!r}, gpuwardd --help {phrase!r}")

    def test_section_keys(self):
        page = man_entries("gpuward.conf.5")
        policy = [e for (sh, _), es in page.items() if sh.startswith("IDLE-GPU") for e in es]
        keys = set()
        for tag, _ in policy:
            keys |= set(re.findall(r"(?:^|, )([a-z_]+) = ", tag))
        self.assertEqual(keys, section_keys("policy.") | section_keys("reclaim"))

    def test_the_example_config_is_good(self):
        with open(os.path.join(MAN, "gpuward.conf.5")) as f:
            page = f.read()
        example = page.split(".SH EXAMPLE\n")[1].split(".nf\n", 1)[1].split(".fi\n")[0]
        with tempfile.NamedTemporaryFile("w", suffix=".conf") as conf:
            conf.write(plain(example))
            conf.flush()
            p = subprocess.run([GPUWARDD, "--check-config", conf.name], capture_output=True, text=True, timeout=30)
        self.assertEqual((p.returncode, p.stderr), (0, ""), "gpuward.conf.5's EXAMPLE")

    def test_pages_render_without_warnings(self):
        if not shutil.which("man"):
            self.skipTest("man (Debian's man-db) is not installed")
        for page in PAGES:
            p = subprocess.run(["man", "-l", "--warnings", os.path.join(MAN, page)], capture_output=True,
                               text=True, timeout=60, env={**os.environ, "MANWIDTH": "80", "MANPAGER": "cat",
                                                           "PAGER": "cat"})
            self.assertEqual(p.returncode, 0, f"{page}: {p.stderr}")
            self.assertEqual(p.stderr, "", f"{page}: man --warnings")
            self.assertIn("NAME", p.stdout)
            long = [l for l in p.stdout.splitlines() if len(l) > 80]
            self.assertEqual(long, [], f"{page}: lines wider than 80 columns")

    def test_man_finds_the_pages_as_scripts_gw_demo_says(self):
        """scripts/gw demo prints the export that sets MANPATH to the build's man dir; with it,
        `man gpuward` finds the page (and the trailing colon keeps the system's pages)."""
        if not shutil.which("man"):
            self.skipTest("man (Debian's man-db) is not installed")
        with open(os.path.join(SOURCE, "scripts", "gw")) as f:
            demo = f.read().split("demo)", 1)[1].split(";;", 1)[0]
        m = re.search(r"export PATH=\$PWD/build:\\\$PATH MANPATH=\$PWD/(build/man):", demo)
        self.assertIsNotNone(m, "scripts/gw demo's hint exports MANPATH")
        for page, section in (("gpuward", "1"), ("gpuwardd", "1"), ("gpuward.conf", "5")):
            p = subprocess.run(["man", "-w", section, page], capture_output=True, text=True, timeout=30,
                               env={**os.environ, "MANPATH": os.path.join(BUILD, "man") + ":"})
            self.assertEqual(p.returncode, 0, f"man -w {section} {page}: {p.stderr}")
            self.assertEqual(os.path.realpath(p.stdout.strip()), os.path.realpath(os.path.join(MAN, f"{page}.{section}")))


if __name__ == "__main__":
    main()

"""The dashboard's page carries its data when it is served: the GPUs and the queue as HTML
tables (for curl, scripts, a browser without JavaScript, a screenshot taken as it loads) and as
the JSON the page's script starts from.  Each reader gets what the API shows that reader, no
more: a guest no command line, a signed-in reader what GET /api/v1/jobs gives them; and every
user-given string is escaped."""
import html
import json
import re
import urllib.request

from gwtest import DaemonTest, main, wait_until

EVIL = "<script>alert(1)</script>"
ARG_SECRET = "--password=hunter2-gwsec"
NOBODY = 65534  # a reader on the Unix socket who is neither the job's owner nor an admin


def state_of(page):
    """The JSON the page carries for its script."""
    m = re.search(r'<script type="application/json" id="gw-state">(.*?)</script>', page, re.S)
    assert m, "the page has no first-paint state"
    return json.loads(m.group(1))


def table(page, table_id):
    """The rows of one of the first paint's tables: [[cell text, ...], ...] (entities decoded)."""
    m = re.search(rf'<table id="{table_id}"[^>]*>.*?<tbody>(.*?)</tbody>', page, re.S)
    assert m, f"the page has no table {table_id}"
    return [[html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", m.group(1), re.S)]


class FirstPaintTest(DaemonTest):
    def page(self, headers=None):
        req = urllib.request.Request(f"http://127.0.0.1:{self.d.port}/", headers=headers or {})
        with urllib.request.urlopen(req, timeout=30) as r:
            self.assertEqual(r.status, 200)
            self.assertEqual(r.headers["Cache-Control"], "no-store", "a page for one reader is not cached")
            self.assertIn("script-src 'self'", r.headers["Content-Security-Policy"])
            return r.read().decode()

    def start_jobs(self):
        """A running job with a hostile name and a secret in its command line, with a process on
        its GPU, and one waiting behind it."""
        jid = self.d.submit_api(["sh", "-c", "sleep 120", "sh", ARG_SECRET], name=EVIL)
        pid = self.d.wait_pid(jid)
        self.d.write_procs(pid, [(0, 512, 30)])
        wait_until(lambda: any(g["processes"] for g in self.d.gpu_list()), what="the job's process on its GPU")
        waiting = self.d.submit_api(["sleep", "60"], name="big & <b>bold</b>", ngpus=4)
        return jid, waiting

    def test_guest_page_shows_gpus_and_queue_escaped_without_commands(self):
        jid, waiting = self.start_jobs()
        page = self.page()
        self.assertNotIn(EVIL, page, "a job's name is never markup")
        self.assertNotIn("<b>bold</b>", page)
        self.assertNotIn("hunter2", page, "a guest sees no command line, of jobs or of GPU processes")
        self.assertNotIn(self.d.work, page, "nor a job's directory")
        gpus = table(page, "fp-gpus")
        self.assertEqual([r[0] for r in gpus], ["GPU 0", "GPU 1", "GPU 2", "GPU 3"])
        self.assertIn(f"job {jid} {EVIL} (", gpus[0][6], gpus)
        self.assertEqual(gpus[1][6], "free")
        jobs = {int(r[0]): r for r in table(page, "fp-jobs")}
        self.assertEqual(jobs[jid][1:4], [EVIL, jobs[jid][2], "RUNNING"])
        self.assertEqual(jobs[waiting][1], "big & <b>bold</b>")
        self.assertEqual(jobs[waiting][3], "PENDING")
        self.assertIn('class="whoami">guest (read-only)<', page)
        st = state_of(page)
        self.assertEqual(st["session"]["role"], "guest")
        self.assertNotIn("csrf", st["session"])
        by_id = {j["id"]: j for j in st["jobs"]["jobs"]}
        self.assertEqual(by_id[jid]["name"], EVIL, "the JSON keeps the name as it is, with '<' escaped")
        self.assertIsNone(by_id[jid]["command"])
        self.assertIsNone(st["gpus"]["gpus"][0]["processes"][0]["command"])
        self.assertNotIn("</script", page.split('id="gw-state">', 1)[1].split("</script>", 1)[0])

    def test_each_reader_gets_what_the_api_gives_them(self):
        jid, _ = self.start_jobs()
        # Signed in on the web page (the session cookie) as the job's owner, root: an admin.
        st, tok = self.d.api("POST", "/api/v1/tokens", {"name": "web"})
        self.assertEqual(st, 201, tok)
        page = self.page({"Cookie": f"gw_token={tok['token']}"})
        self.assertIn('class="whoami">root (admin)<', page)
        st = state_of(page)
        self.assertTrue(st["session"]["signed_in"])
        self.assertNotIn("csrf", st["session"], "the page holds nothing that acts for its reader")
        own = {j["id"]: j for j in st["jobs"]["jobs"]}[jid]
        self.assertIn(ARG_SECRET, own["command"])
        self.assertIn(ARG_SECRET, st["gpus"]["gpus"][0]["processes"][0]["command"])
        # Another user, on the Unix socket: the page's jobs are the API's, field for field.
        status, body = self.d.raw_as(NOBODY, "GET", "/")
        self.assertEqual(status, 200)
        page = body.decode()
        status, api = self.d.raw_as(NOBODY, "GET", "/api/v1/jobs")
        api = {j["id"]: j for j in json.loads(api)["jobs"]}
        mine = {j["id"]: j for j in state_of(page)["jobs"]["jobs"]}
        self.assertEqual(mine.keys(), api.keys())
        for i, j in api.items():
            self.assertEqual(sorted(mine[i]), sorted(j))
            for field in ("command", "cwd", "log_path", "name", "user", "state"):
                self.assertEqual(mine[i][field], j[field], (i, field))
        self.assertEqual(state_of(page)["session"]["role"], "user")


class RefusedAnonymousTest(DaemonTest):
    """A TCP door that answers tokens only gives an anonymous reader the page, and no data."""
    extra = ("--tcp-anonymous", "refuse")

    def test_anonymous_page_has_no_data(self):
        jid = self.d.submit_api(["sleep", "60"], name="private-name")
        self.d.wait_state(jid, "RUNNING")
        req = urllib.request.Request(f"http://127.0.0.1:{self.d.port}/")
        with urllib.request.urlopen(req, timeout=30) as r:
            page = r.read().decode()
        self.assertNotIn("private-name", page)
        self.assertNotIn("NVIDIA", page)
        st = state_of(page)
        self.assertNotIn("gpus", st)
        self.assertNotIn("jobs", st)
        self.assertEqual(st["session"]["role"], "guest")
        self.assertIn("The GPUs are not available to this reader.", page)
        self.assertIn("The queue is not available to this reader.", page)


if __name__ == "__main__":
    main()

"""The web dashboard's HTTP side, without a browser: the files and their security headers,
path traversal refusals (plain, percent-encoded, through --web-dir symlinks), the
server-sent event stream (framing, ids, Last-Event-ID resume, reset), the dropping of a
slow client, and sign-in with a token (HttpOnly cookie, CSRF header, foreign Origin)."""
import json
import os
import re
import socket
import tempfile
import threading
import time
import unittest

from gwtest import TRAINER, DaemonTest, UnixHTTPConnection, wait_until

CSP_PARTS = ["default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"]


def raw_request(port, path, method="GET", headers=None, body=b"", timeout=10):
    """One request with the path sent byte for byte (no client-side normalisation)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        h = {"Host": f"127.0.0.1:{port}", "Connection": "close"}
        h.update(headers or {})
        if body:
            h["Content-Length"] = str(len(body))
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
        s.sendall(head.encode() + body)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs.setdefault(k.strip().lower(), []).append(v.strip())
    if "chunked" in ",".join(hdrs.get("transfer-encoding", [])):
        payload = dechunk(payload)
    return status, {k: v[-1] for k, v in hdrs.items()}, payload, hdrs


def dechunk(b):
    out = b""
    while b:
        size_line, _, rest = b.partition(b"\r\n")
        n = int(size_line.split(b";")[0], 16)
        if n == 0:
            break
        out += rest[:n]
        b = rest[n + 2:]
    return out


class SSE:
    """A raw server-sent event client: HTTP/1.1, chunked, parsed by hand."""

    def __init__(self, port, last_id=None, rcvbuf=None, timeout=10):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.s.settimeout(timeout)
        self.s.connect(("127.0.0.1", port))
        extra = f"Last-Event-ID: {last_id}\r\n" if last_id is not None else ""
        self.s.sendall(f"GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
                       f"{extra}\r\n".encode())
        self.raw = b""
        self.text = ""
        self.headers = None

    def _fill(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise EOFError("stream closed")
        self.raw += chunk
        if self.headers is None:
            if b"\r\n\r\n" not in self.raw:
                return
            head, _, self.raw = self.raw.partition(b"\r\n\r\n")
            self.headers = head.decode("latin-1")
        while True:  # complete chunks into text
            line, sep, rest = self.raw.partition(b"\r\n")
            if not sep:
                return
            n = int(line.split(b";")[0], 16)
            if len(rest) < n + 2:
                return
            self.text += rest[:n].decode()
            self.raw = rest[n + 2:]

    def next_event(self, types=None, timeout=15):
        """The next event block as a dict (id, event, data, retry), of one of types if given."""
        deadline = time.monotonic() + timeout
        while True:
            while "\n\n" not in self.text:
                if time.monotonic() > deadline:
                    raise AssertionError(f"no event {types or ''} within {timeout}s")
                self._fill()
            block, _, self.text = self.text.partition("\n\n")
            ev = {}
            for line in block.split("\n"):
                assert ":" in line, f"malformed line {line!r}"
                k, _, v = line.partition(":")
                ev[k] = v[1:] if v.startswith(" ") else v
            if "data" not in ev:  # "retry: 2000" alone, before a resumed stream
                self.retry = ev.get("retry")
                continue
            if not types or ev.get("event") in types:
                return ev

    def close(self):
        self.s.close()


class WebTest(DaemonTest):
    def get(self, path, **kw):
        return raw_request(self.d.port, path, **kw)

    def test_page_and_headers(self):
        for path, ctype in (("/", "text/html"), ("/static/app.js", "text/javascript"),
                            ("/static/style.css", "text/css"), ("/static/charts.js", "text/javascript")):
            st, h, body, _ = self.get(path)
            self.assertEqual(st, 200, path)
            self.assertTrue(h["content-type"].startswith(ctype), (path, h["content-type"]))
            for part in CSP_PARTS:
                self.assertIn(part, h["content-security-policy"], path)
            self.assertNotIn("unsafe-inline", h["content-security-policy"])
            self.assertEqual(h["x-content-type-options"], "nosniff")
            self.assertEqual(h["referrer-policy"], "no-referrer")
            self.assertTrue(body)
        st, h, html, _ = self.get("/")
        # The one script element with content is the first paint's JSON: data, not code.
        page = re.sub(r'<script type="application/json" id="gw-state">[^<]*</script>', "", html.decode(), count=1)
        self.assertNotRegex(page, r"<script>|<script [^>]*>[^<]|\son[a-z]+=|style=",
                            "the page has no inline script, handler or style")
        # The page carries what its reader sees (test_firstpaint.py): never cached.  The files
        # are validated.
        self.assertEqual(h["cache-control"], "no-store")
        self.assertNotIn("etag", h)
        st, h, _, _ = self.get("/static/app.js")
        st2, h2, _, _ = self.get("/static/app.js", headers={"If-None-Match": h["etag"]})
        self.assertEqual(st2, 304)
        st, h, _, _ = self.get("/", method="POST")
        self.assertEqual(st, 405)
        # The page's weight: at most 200 KiB uncompressed.
        total = sum(len(self.get(p)[2]) for p in ("/", "/static/app.js", "/static/views.js", "/static/charts.js",
                                                   "/static/style.css", "/static/favicon.svg"))
        self.assertLess(total, 200 * 1024)

    def test_traversal_refused(self):
        paths = ["/static/../gpuward.db", "/static/../../etc/passwd", "/static/%2e%2e/%2e%2e/etc/passwd",
                 "/static/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", "/static/..%2f..%2fetc%2fpasswd", "/static/.%2e/state",
                 "/static//etc/passwd", "/static/%2fetc%2fpasswd", "/static/./app.js", "/static/a/../app.js",
                 "/static/..\\..\\etc\\passwd", "/static/app.js%00.html", "/static/.hidden.js", "/static/",
                 "/static/%252e%252e/etc/passwd", "/static/index.html/..", "/static/app.js/"]
        for p in paths:
            st, h, body, _ = self.get(p)
            self.assertIn(st, (400, 404), p)
            self.assertNotIn(b"root:", body, p)
            self.assertNotIn(b"SQLite", body, p)
            self.assertTrue(json.loads(body)["error"], p)  # the API's error form, as everywhere

    def test_sse_framing_and_resume(self):
        sse = SSE(self.d.port)
        try:
            hello = sse.next_event()
            self.assertIn("HTTP/1.1 200", sse.headers)
            self.assertIn("text/event-stream", sse.headers)
            self.assertEqual(hello["event"], "hello")
            self.assertIn("retry", hello)
            hello_id = int(hello["id"])
            self.assertEqual(json.loads(hello["data"])["id"], hello_id)
            gpus = sse.next_event({"gpus"}, timeout=10)  # every sample interval
            self.assertEqual(len(json.loads(gpus["data"])["gpus"]), 4)
            jid = self.d.submit("--gpus", "1", "--", TRAINER, "epochs=30", "--epoch-seconds", "2")
            pending = sse.next_event({"job"})
            pj = json.loads(pending["data"])
            self.assertEqual((pj["id"], pj["state"], pj["kind"]), (jid, "PENDING", "submit"))
            self.assertEqual(pj["job"]["id"], jid)
            running = sse.next_event({"job"})
            self.assertEqual(json.loads(running["data"])["state"], "RUNNING")
            self.assertGreater(int(running["id"]), int(pending["id"]))
        finally:
            sse.close()
        # Resume right after the PENDING event: the RUNNING one comes again, no hello.
        again = SSE(self.d.port, last_id=pending["id"])
        try:
            want = int(pending["id"]) + 1
            while want <= int(running["id"]):  # every event after it, in order, then live ones
                ev = again.next_event()
                self.assertNotIn(ev["event"], ("hello", "reset"))
                self.assertEqual(int(ev["id"]), want)
                want += 1
            self.assertEqual(json.loads(ev["data"])["state"], "RUNNING")
            # Cancelling publishes the recorded stop (still RUNNING: its processes get
            # SIGTERM after it is written), then the end.
            self.d.cli("cancel", jid)
            stop = json.loads(again.next_event({"job"})["data"])
            self.assertEqual((stop["state"], stop["kind"]), ("RUNNING", "terminate"))
            end = again.next_event({"job"})
            self.assertEqual(json.loads(end["data"])["state"], "CANCELLED")
        finally:
            again.close()
        # An id this daemon never gave (too old, or from before a restart): reset.
        for bogus in ("1", "garbage", str(10 ** 18)):
            s = SSE(self.d.port, last_id=bogus)
            try:
                self.assertEqual(s.next_event()["event"], "reset", bogus)
            finally:
                s.close()

    def test_events_kept_from_the_first_stream_on(self):
        # Jobs that start and end before any stream was opened in this daemon run publish
        # nothing: no id of theirs was ever given, so none can be resumed from.
        jid = self.d.submit("--", "/bin/true")
        self.d.wait_state(jid, "COMPLETED")
        sse = SSE(self.d.port)
        try:
            hello = sse.next_event()
            self.assertEqual(hello["event"], "hello")
            hello_id = int(hello["id"])
            jid = self.d.submit("--", "/bin/true")
            first = sse.next_event({"job"})
            self.assertEqual(int(first["id"]), hello_id + 1)
            self.assertEqual(json.loads(first["data"])["id"], jid)
            self.d.wait_state(jid, "COMPLETED")
        finally:
            sse.close()
        # From then on the ring keeps them: a second client resumes after the hello's id.
        again = SSE(self.d.port, last_id=str(hello_id))
        try:
            ev = again.next_event()
            self.assertEqual((ev["event"], int(ev["id"])), ("job", hello_id + 1))
        finally:
            again.close()
        # The id before the hello was never given to a stream: reset, not events.
        old = SSE(self.d.port, last_id=str(hello_id - 1))
        try:
            self.assertEqual(old.next_event()["event"], "reset")
        finally:
            old.close()

    def hold_batch(self, n, name_len=120):
        jobs = [{"command": ["/bin/true"], "cwd": self.d.work, "hold": True, "name": "x" * name_len}
                for _ in range(n)]
        st, body = self.d.api("POST", "/api/v1/jobs/batch", {"jobs": jobs})
        self.assertEqual(st, 201, body)
        return body["ids"]

    def test_slow_client_dropped_fast_client_kept(self):
        slow = SSE(self.d.port, rcvbuf=4096)  # never read
        fast = SSE(self.d.port)
        hello = fast.next_event()
        got, jobs_seen, errors, stop = [], [], [], threading.Event()

        def reader():
            try:
                while not stop.is_set():
                    ev = fast.next_event(timeout=30)
                    got.append(int(ev["id"]))
                    if ev["event"] == "job":
                        jobs_seen.append(json.loads(ev["data"])["id"])
            except Exception as e:  # noqa: BLE001 - reported below
                if not stop.is_set():
                    errors.append(e)

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        rss0 = self.rss()
        ids = []
        try:
            for _ in range(8):  # ~8 x 400 events of ~700 bytes: past the 1 MiB a client may lag
                ids += self.hold_batch(400)
                if "dropping a client" in self.d.daemon_log():
                    break
                time.sleep(0.3)
            wait_until(lambda: "dropping a client" in self.d.daemon_log(), timeout=10, what="the slow client dropped")
            # The slow socket ends: what the kernel held, then EOF (or a reset).
            slow.s.settimeout(10)
            total = 0
            try:
                while True:
                    chunk = slow.s.recv(65536)
                    if not chunk:
                        break
                    total += len(chunk)
            except ConnectionResetError:
                pass
            self.assertLess(total, 4 << 20, "the slow client was sent everything instead of being dropped")
            # The fast client saw every job event, in order, and is still connected.
            wait_until(lambda: len(jobs_seen) >= len(ids), timeout=20, what="the fast client to read every event")
            self.assertEqual(jobs_seen[:len(ids)], ids)
            self.assertEqual(errors, [])
            self.assertEqual(got, list(range(got[0], got[0] + len(got))), "ids without gaps")
            self.assertGreater(got[0], int(hello["id"]))
            # Generous: the held jobs themselves live in memory, and ASan builds keep freed memory.
            self.assertLess(self.rss() - rss0, 256 << 20, "daemon memory grew without bound")
        finally:
            stop.set()
            fast.close()
            slow.close()
            t.join(timeout=5)

    def rss(self):
        with open(f"/proc/{self.d.proc.pid}/status") as f:
            return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) * 1024

    def test_many_streams_then_clean_stop(self):
        streams = [SSE(self.d.port) for _ in range(20)]
        for s in streams:
            self.assertEqual(s.next_event()["event"], "hello")
        for s in streams[:10]:
            s.close()  # gone while suspended: noticed at the next event
        for s in streams[10:]:
            s.next_event({"gpus"}, timeout=10)
        self.d.stop()  # SIGTERM with streams open: a clean exit
        self.assertIn("signal TERM: stopping", self.d.daemon_log())
        for s in streams[10:]:
            with self.assertRaises((EOFError, ConnectionResetError, AssertionError)):
                s.next_event(timeout=5)
            s.close()

    def test_streams_per_caller_are_capped(self):
        """On TCP every local user is 127.0.0.1: tokenless callers together hold at most 64 event
        streams, so one of them cannot take all 512 from everyone else."""
        streams = [SSE(self.d.port) for _ in range(64)]
        try:
            for s in streams:
                self.assertEqual(s.next_event()["event"], "hello")
            st, body = self.d.tcp("GET", "/api/v1/events", timeout=10)
            self.assertEqual(st, 429, body)
            self.assertIn(b"callers without a token already hold 64 event streams", body)
            # Root on the Unix socket still gets one.
            c = UnixHTTPConnection(self.d.socket, timeout=10)
            c.request("GET", "/api/v1/events")
            self.assertEqual(c.getresponse().status, 200)
            c.close()
        finally:
            for s in streams:
                s.close()

    def session_cookie(self, token):
        st, h, body, all_h = self.get("/api/v1/session", method="POST", body=json.dumps({"token": token}).encode(),
                                      headers={"Content-Type": "application/json"})
        return st, h, json.loads(body or b"{}"), all_h

    def test_session_cookie_and_csrf(self):
        st, _, body, _ = self.session_cookie("gw_" + "0" * 64)
        self.assertEqual(st, 401)
        st, _, _, _ = self.session_cookie("not a token")
        self.assertEqual(st, 400)
        token = self.d.cli("token", "create", "-q").stdout.strip()
        st, h, body, _ = self.session_cookie(token)
        self.assertEqual(st, 200, body)
        cookie = h["set-cookie"]
        for attr in ("HttpOnly", "SameSite=Strict", "Path=/"):
            self.assertIn(attr, cookie)
        jar = cookie.split(";")[0]
        csrf = body["csrf"]
        self.assertRegex(csrf, r"^[0-9a-f]{32}$")
        st, _, who, _ = self.get("/api/v1/whoami", headers={"Cookie": jar})
        self.assertNotEqual(json.loads(who)["role"], "guest")
        st, _, sess, _ = self.get("/api/v1/session", headers={"Cookie": jar})
        self.assertEqual(json.loads(sess)["csrf"], csrf)
        jid = self.d.submit("--hold", "--", "/bin/true")
        # The cookie alone (what a forged cross-site request carries) is a guest's: refused.
        st, _, _, _ = self.get(f"/api/v1/jobs/{jid}/release", method="POST", headers={"Cookie": jar})
        self.assertEqual(st, 401)
        st, _, _, _ = self.get(f"/api/v1/jobs/{jid}/release", method="POST",
                               headers={"Cookie": jar, "X-Gpuward-CSRF": "0" * 32})
        self.assertEqual(st, 401)
        st, _, _, _ = self.get(f"/api/v1/jobs/{jid}/release", method="POST",
                               headers={"Cookie": jar, "X-Gpuward-CSRF": csrf, "Origin": "http://evil.example"})
        self.assertEqual(st, 401)
        st, _, _, _ = self.get(f"/api/v1/jobs/{jid}/release", method="POST",
                               headers={"Cookie": jar, "X-Gpuward-CSRF": csrf,
                                        "Origin": f"http://127.0.0.1:{self.d.port}"})
        self.assertEqual(st, 200)
        # Sign-in from another site is refused outright.
        st, _, _, _ = self.get("/api/v1/session", method="POST", body=json.dumps({"token": token}).encode(),
                               headers={"Origin": "http://evil.example"})
        self.assertEqual(st, 403)
        # A revoked token in the cookie makes a guest (not an error page).
        tid = self.d.cli_json("token", "list")["tokens"][0]["id"]
        self.d.cli("token", "revoke", tid)
        st, _, who, _ = self.get("/api/v1/whoami", headers={"Cookie": jar})
        self.assertEqual((st, json.loads(who)["role"]), (200, "guest"))
        st, h, _, _ = self.get("/api/v1/session", method="DELETE", headers={"Cookie": jar})
        self.assertEqual(st, 200)
        self.assertIn("Max-Age=0", h["set-cookie"])

    def test_history_and_results(self):
        jid = self.d.submit("--gpus", "1", "--", TRAINER, "epochs=3", "--epoch-seconds", "0.3")
        self.d.wait_state(jid, "COMPLETED", timeout=30)
        st, body = self.d.api("GET", "/api/v1/gpus/history?minutes=15")
        self.assertEqual(st, 200)
        self.assertEqual(len(body["gpus"]), 4)
        self.assertTrue(body["gpus"][0]["points"])
        self.assertEqual(self.d.api("GET", "/api/v1/gpus/history?minutes=0")[0], 400)
        st, body = self.d.api("GET", f"/api/v1/jobs/{jid}/results")
        self.assertEqual(st, 200, body)
        self.assertEqual(body["epochs"], [1, 2, 3])
        self.assertIn("train/box_loss", body["loss"])
        self.assertEqual(len(body["series"][body["map50"]]), 3)
        plain = os.path.join(self.d.work, "plain")
        os.mkdir(plain)
        os.chmod(plain, 0o777)
        other = self.d.submit("--cwd", plain, "--", "/bin/true")
        self.d.wait_state(other, "COMPLETED")
        self.assertEqual(self.d.api("GET", f"/api/v1/jobs/{other}/results")[0], 404)


class StopWhileWaitingTest(DaemonTest):
    """SIGTERM while a cancel ?wait=1 and an event stream are suspended: a clean exit (libmicrohttpd
    aborts the process when stopped with suspended connections, unless they are resumed)."""
    grace = 30

    def test_stop_with_cancel_waiting_and_stream(self):
        jid = self.d.submit("--", TRAINER, "--sleep-forever", "--ignore-sigterm")
        pid = self.d.wait_pid(jid)
        wait_until(lambda: self.d.log_text(jid).strip(), what="the trainer to start (and ignore SIGTERM)")
        sse = SSE(self.d.port)
        self.assertEqual(sse.next_event()["event"], "hello")
        errors = []

        def cancel():
            try:
                self.d.api("DELETE", f"/api/v1/jobs/{jid}?wait=1", timeout=60)
            except Exception as e:  # noqa: BLE001 - the daemon goes away under it
                errors.append(e)

        t = threading.Thread(target=cancel, daemon=True)
        t.start()
        wait_until(lambda: "SIGTERM to every process" in self.d.daemon_log(), what="the cancel to wait")
        proc = self.d.proc
        self.d.stop()
        t.join(timeout=10)
        sse.close()
        self.assertNotIn("Fatal error", self.d.daemon_log())
        self.assertEqual(proc.returncode, 0)
        try:
            os.kill(pid, 9)  # the job we started ignores SIGTERM; the next daemon records its end
        except ProcessLookupError:
            pass
        self.d.start()
        self.d.wait_state(jid, {"CANCELLED", "FAILED"}, timeout=30)


class WebDirTest(DaemonTest):
    """--web-dir DIR: files from a directory, symlinks refused, nothing outside it."""

    def setUp(self):
        self.web = tempfile.mkdtemp(prefix="gw-web-")
        with open(os.path.join(self.web, "index.html"), "w") as f:
            f.write("<!doctype html><title>dev copy</title>")
        with open(os.path.join(self.web, "app.js"), "w") as f:
            f.write("'use strict';\n")
        os.symlink("/etc/passwd", os.path.join(self.web, "link.js"))
        os.mkdir(os.path.join(self.web, "sub"))
        os.symlink("/etc", os.path.join(self.web, "etc"))
        self.extra = ("--web-dir", self.web)
        super().setUp()

    def tearDown(self):
        super().tearDown()
        for name in ("index.html", "app.js", "link.js", "etc"):
            os.unlink(os.path.join(self.web, name))
        os.rmdir(os.path.join(self.web, "sub"))
        os.rmdir(self.web)

    def test_dir_serving(self):
        st, h, body, _ = raw_request(self.d.port, "/")
        self.assertEqual((st, body), (200, b"<!doctype html><title>dev copy</title>"))
        self.assertIn("frame-ancestors 'none'", h["content-security-policy"])
        self.assertEqual(raw_request(self.d.port, "/static/app.js")[0], 200)
        for p in ("/static/link.js", "/static/etc/passwd", "/static/etc/hostname", "/static/sub",
                  "/static/../gw.sock", "/static/%2e%2e/state/gpuward.db", "/static/nope.js"):
            st, h, body, _ = raw_request(self.d.port, p)
            self.assertIn(st, (400, 404), p)
            self.assertNotIn(b"root:", body, p)


if __name__ == "__main__":
    unittest.main(verbosity=2)

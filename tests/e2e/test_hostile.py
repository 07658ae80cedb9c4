"""Hostile clients: slow headers, a thousand and more idle connections on
each door, a 100 MiB body, invalid UTF-8, deeply nested JSON, path traversal, another user's
log.  Each attack checks that other clients are served promptly meanwhile, that the error is
clear, that the daemon's memory stays bounded (VmRSS from /proc) and that it still answers
afterwards; test_all_in_a_row runs every attack against one daemon.

Loopback only: TCP clients bind 127.0.0.x source addresses.  Every loop and wait is bounded,
every socket is closed by the test that opened it (ExitStack), and the harness stops the
daemon.  The daemon's limits these tests rely on (src/api/http.c): 1 MiB bodies, 4096
connections per door, 512 per TCP peer address, 30 s inactivity timeout."""
import contextlib
import json
import os
import pwd
import resource
import select
import socket
import subprocess
import sys
import threading
import time

from gwtest import IS_ROOT, UNDER_VALGRIND, DaemonTest, as_user, main, wait_until

MiB = 1 << 20
PROMPT = 3.0           # seconds: what "answers promptly" means while under attack
IDLE_PER_DOOR = 1200   # idle connections per door (the daemon holds up to 4096 per door)
IDLE_PER_ADDR = 400    # idle TCP connections per source address (the daemon's cap is 512)
PER_UID_CAP = 64       # the daemon's default max-connections-per-user (src/api/http.h)

# Run as another uid: opens N connections to the Unix socket and holds them; prints
# "held refused other" once each has either been answered 429 and closed or stayed open
# and silent for a second; on "release" on stdin closes one held connection, opens a new
# one and prints the status of a GET /healthz on it.  Exits when stdin closes.
HOG_SCRIPT = r"""
import select, socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])   # a socket path, or tcp:PORT on 127.0.0.1
def connect():
    s = socket.socket(socket.AF_INET if path.startswith("tcp:") else socket.AF_UNIX)
    s.settimeout(10)
    s.connect(("127.0.0.1", int(path[4:])) if path.startswith("tcp:") else path)
    return s
socks = [connect() for _ in range(n)]
held, refused, other = [], 0, 0
pending = list(socks)
deadline = time.monotonic() + 20
while pending and time.monotonic() < deadline:
    r, _, _ = select.select(pending, [], [], 1.5)
    if not r:
        break                      # 1.5 s of silence: the rest are held
    for s in r:
        data = b""
        while True:
            c = s.recv(4096)
            if not c:
                break
            data += c
        if data.startswith(b"HTTP/1.1 429") and b"max-connections-per-user" in data:
            refused += 1
        else:
            other += 1
        pending.remove(s)
        s.close()
held = pending
# A held one is really held: still open a second later.
time.sleep(1.5)
for s in list(held):
    s.setblocking(False)
    try:
        if s.recv(1, socket.MSG_PEEK) == b"":
            held.remove(s); other += 1
    except BlockingIOError:
        pass
print(len(held), refused, other, flush=True)
for line in sys.stdin:
    if line.strip() == "release":
        held.pop().close()
        time.sleep(0.3)
        s = connect()
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        d = b""
        while True:
            c = s.recv(4096)
            if not c:
                break
            d += c
        s.close()
        print(d.split(b" ", 2)[1].decode() if d else "none", flush=True)
for s in held:
    s.close()
"""

TCP_GET_SCRIPT = r"""
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
d = b""
while (c := s.recv(4096)):
    d += c
print(d.split(b" ", 2)[1].decode() if d else "none")
"""


# --- plumbing -------------------------------------------------------------------------------

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def settled_fds(pid, timeout=10):
    """The daemon's descriptor count once it has stopped changing (connections closed by an
    earlier test are released a little later)."""
    deadline = time.monotonic() + timeout
    last = open_fds(pid)
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = open_fds(pid)
        if now == last:
            return now
        last = now
    return last


def under_asan(pid):
    """ASan keeps freed memory in quarantine: RSS bounds get more slack under it."""
    with open(f"/proc/{pid}/exe", "rb") as f:   # gcc links libasan, clang its runtime: both
        return b"__asan_init" in f.read()        # leave this symbol name in the binary


def is_open(s):
    """True while the peer has not closed s (nothing is read)."""
    try:
        return s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def connect_unix(path, deadline):
    """A connected AF_UNIX socket.  Non-blocking connects, retried while the listen backlog
    is full (EAGAIN), so that a daemon that stopped accepting fails the test instead of
    hanging it."""
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(path)
        except BlockingIOError:
            s.close()
            if time.monotonic() > deadline:
                raise AssertionError("the daemon stopped accepting on its Unix socket")
            time.sleep(0.01)
            continue
        except BaseException:
            s.close()
            raise
        s.setblocking(True)
        return s


def connect_tcp(port, source="127.0.0.1", timeout=5):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        s.bind((source, 0))
        s.connect(("127.0.0.1", port))
        s.settimeout(None)
    except BaseException:
        s.close()
        raise
    return s


def parse_head(head):
    status = int(head.split(b" ", 2)[1])
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        headers[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    return status, headers


def read_response(s, timeout):
    """Status, headers (lower-case names) and body of one response read from s; the body up
    to Content-Length or to the peer's close.  None when the peer closed without answering."""
    s.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, BrokenPipeError, socket.timeout):
            break
        if not chunk:
            break
        data += chunk
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep and 0 <= int(parse_head(head)[1].get("content-length", "-1")) <= len(body):
            break
    if not data:
        return None
    head, _, body = data.partition(b"\r\n\r\n")
    return (*parse_head(head), body)


def raw_request(s, method, target, body=b"", headers=(), timeout=10):
    """Sends one request exactly as given (target is bytes, sent unnormalised) and reads the
    response.  Closes nothing: the caller owns s."""
    head = method.encode() + b" " + target + b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
    for h in headers:
        head += h + b"\r\n"
    if body:
        head += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
    s.settimeout(timeout)
    try:
        s.sendall(head + b"\r\n" + body)
    except (BrokenPipeError, ConnectionResetError):
        pass
    return read_response(s, timeout)


class HostileTest(DaemonTest):
    @classmethod
    def setUpClass(cls):
        # Two doors' worth of idle sockets, in this process and in the daemon it starts (the
        # daemon inherits the limit).
        cls.nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
        soft, hard = cls.nofile
        want = 2 * IDLE_PER_DOOR + 1024
        if soft != resource.RLIM_INFINITY and soft < want:
            new = want if hard == resource.RLIM_INFINITY else min(want, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))

    @classmethod
    def tearDownClass(cls):
        resource.setrlimit(resource.RLIMIT_NOFILE, cls.nofile)

    def setUp(self):
        super().setUp()
        self.pid = self.d.proc.pid
        self.asan = under_asan(self.pid)

    # --- helpers ---

    def door(self, name, source="127.0.0.1"):
        if name == "unix":
            return connect_unix(self.d.socket, time.monotonic() + 10)
        return connect_tcp(self.d.port, source)

    def request(self, door, method, target, body=b"", headers=(), timeout=10):
        with contextlib.closing(self.door(door)) as s:
            return raw_request(s, method, target, body, headers, timeout)

    def timed_get(self, door, path=b"/healthz"):
        """(seconds, status) of a GET from a fresh client."""
        t = time.monotonic()
        r = self.request(door, "GET", path, timeout=PROMPT + 5)
        return time.monotonic() - t, (r[0] if r else None)

    def assert_prompt(self, what):
        for door in ("unix", "tcp"):
            for path in (b"/healthz", b"/api/v1/jobs"):
                dt, st = self.timed_get(door, path)
                self.assertEqual(st, 200, f"{what}: GET {path.decode()} on {door}")
                self.assertLess(dt, PROMPT, f"{what}: GET {path.decode()} on {door} took {dt:.2f}s")

    def rss_slack_kib(self, mib):
        if UNDER_VALGRIND:
            return float("inf")  # the RSS is valgrind's own (shadow memory): its leak check stands in
        return (mib * 8 if self.asan else mib) * 1024

    def assert_healthy(self, rss0, slack_mib, what):
        self.assertIsNone(self.d.proc.poll(), f"{what}: the daemon exited")
        self.assert_prompt(f"after {what}")
        grown = rss_kib(self.pid) - rss0
        self.assertLess(grown, self.rss_slack_kib(slack_mib),
                        f"after {what}: the daemon's RSS grew by {grown} KiB")

    def jobs_count(self):
        st, r = self.d.api("GET", "/api/v1/jobs?state=PENDING,HELD,RUNNING,COMPLETED,FAILED,CANCELLED&limit=10000")
        self.assertEqual(st, 200)
        return len(r["jobs"])

    def assert_json_error(self, resp, status, what):
        self.assertIsNotNone(resp, f"{what}: no answer")
        st, headers, body = resp
        self.assertEqual(st, status, f"{what}: {body[:300]!r}")
        err = json.loads(body)
        self.assertIsInstance(err.get("error"), str, what)
        self.assertTrue(err["error"], what)
        return err

    # --- the attacks ---

    def attack_slow_headers(self):
        """20 clients trickle a request's headers one byte a second; meanwhile fresh clients
        on both doors are served promptly and a job goes through.  (The daemon's timeout is
        for inactivity, 30 s: a trickle is not dropped within this test's bounds.)"""
        rss0 = rss_kib(self.pid)
        trickle = b"GET /api/v1/jobs HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 200
        seconds = 8
        with contextlib.ExitStack() as stack:
            slow = []
            for i in range(20):
                s = self.door("unix" if i % 2 else "tcp", source=f"127.0.0.{2 + i % 3}")
                stack.callback(s.close)
                slow.append(s)
            stop = threading.Event()
            sent = [0]

            def drip():
                for k in range(seconds + 2):
                    for s in slow:
                        try:
                            s.send(trickle[k:k + 1], socket.MSG_DONTWAIT)
                        except OSError:
                            pass
                    sent[0] = k + 1
                    if stop.wait(1.0):
                        return

            t = threading.Thread(target=drip, daemon=True)
            t.start()
            stack.callback(t.join, 15)
            stack.callback(stop.set)
            # Fresh clients while the slow ones hold their connections.
            deadline = time.monotonic() + seconds
            served = 0
            worst = 0.0
            while time.monotonic() < deadline:
                for door in ("unix", "tcp"):
                    dt, st = self.timed_get(door)
                    self.assertEqual(st, 200, f"healthz on {door} during slow headers")
                    worst = max(worst, dt)
                    served += 1
                time.sleep(0.2)
            st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "cwd": "/"}, timeout=PROMPT + 5)
            self.assertEqual(st, 201, r)
            self.d.wait_state(r["id"], "COMPLETED", timeout=20)
            self.assertGreaterEqual(sent[0], seconds - 1, "the slow clients kept sending")
            self.assertGreater(served, 10)
            self.assertLess(worst, PROMPT, f"slowest healthz during slow headers: {worst:.2f}s")
            still = sum(is_open(s) for s in slow)
            self.assertEqual(still, 20, "the slow clients were connected throughout")
        self.assert_healthy(rss0, 4, "slow headers")

    def attack_idle_connections(self):
        """IDLE_PER_DOOR idle connections on the Unix socket and on TCP (from several
        127.0.0.x addresses, under the per-address cap); fresh clients still answered."""
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft != resource.RLIM_INFINITY and soft < 2 * IDLE_PER_DOOR + 256:
            self.skipTest(f"RLIMIT_NOFILE is {soft}: cannot hold {2 * IDLE_PER_DOOR} sockets")
        rss0 = rss_kib(self.pid)
        fds0 = settled_fds(self.pid)
        with contextlib.ExitStack() as stack:
            socks = {"unix": [], "tcp": []}
            t0 = time.monotonic()
            deadline = t0 + 15
            for i in range(IDLE_PER_DOOR):
                s = connect_unix(self.d.socket, deadline)
                stack.callback(s.close)
                socks["unix"].append(s)
                s = connect_tcp(self.d.port, source=f"127.0.0.{2 + i // IDLE_PER_ADDR}")
                stack.callback(s.close)
                socks["tcp"].append(s)
            # All accepted (held by the daemon, not waiting in a backlog) and still open.
            wait_until(lambda: open_fds(self.pid) >= fds0 + 2 * IDLE_PER_DOOR, timeout=10,
                       what=f"the daemon to accept {2 * IDLE_PER_DOOR} connections")
            self.assertLess(time.monotonic() - t0, 20, "opening took so long the daemon may time them out")
            for door, v in socks.items():
                self.assertEqual(sum(is_open(s) for s in v), len(v), f"idle connections on {door} dropped early")
            self.assert_prompt(f"{2 * IDLE_PER_DOOR} idle connections")
            held_rss = rss_kib(self.pid)
            self.assertLess(held_rss - rss0, self.rss_slack_kib(64),
                            f"RSS with {2 * IDLE_PER_DOOR} idle connections: +{held_rss - rss0} KiB")
        wait_until(lambda: open_fds(self.pid) <= fds0 + 8, timeout=10, what="the daemon to close the idle connections")
        self.assert_healthy(rss0, 16, "idle connections")

    def attack_per_address_cap(self):
        """600 connections from one TCP address: the daemon holds at most 512 of them, and a
        client from another address is still answered."""
        with contextlib.ExitStack() as stack:
            socks = []
            for _ in range(600):
                try:
                    s = connect_tcp(self.d.port, source="127.0.0.9")
                except OSError:
                    break
                stack.callback(s.close)
                socks.append(s)
            wait_until(lambda: sum(is_open(s) for s in socks) <= 512, timeout=10,
                       what="the daemon to refuse connections past 512 from one address")
            self.assert_prompt("600 connections from 127.0.0.9")

    def stream_body(self, s, total, chunked, sample):
        """Sends a POST whose body is total bytes (Content-Length or chunked) while reading;
        stops at the daemon's answer.  Returns (response, bytes of body sent, peak RSS)."""
        head = b"POST /api/v1/jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        head += b"Transfer-Encoding: chunked\r\n\r\n" if chunked else b"Content-Length: %d\r\n\r\n" % total
        s.sendall(head)
        s.setblocking(False)
        piece = b"x" * 65536
        pending, sent, reply, peak = b"", 0, b"", 0
        queued_all = False     # the whole body (and the last chunk) is in pending or gone
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and b"\r\n\r\n" not in reply:
            writing = bool(pending) or not queued_all
            r, w, _ = select.select([s], [s] if writing else [], [], 1.0)
            if r:
                try:
                    chunk = s.recv(65536)
                except (ConnectionResetError, BrokenPipeError):
                    chunk = b""
                if not chunk:
                    break
                reply += chunk
            if w and writing:
                if not pending and not queued_all:
                    if sent >= total:
                        pending, queued_all = (b"0\r\n\r\n" if chunked else b""), True
                    else:
                        pending = b"10000\r\n" + piece + b"\r\n" if chunked else piece
                        sent += len(piece)
                        if sent % (8 * MiB) == 0:
                            peak = max(peak, sample())
                try:
                    pending = pending[s.send(pending):] if pending else b""
                except BlockingIOError:
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    pending, queued_all = b"", True
        s.setblocking(True)
        if not reply:
            return None, sent, peak
        head, _, body = reply.partition(b"\r\n\r\n")
        return (*parse_head(head), body), sent, peak

    def attack_huge_body(self):
        """100 MiB bodies.  With Content-Length the daemon answers 413 before reading any of
        it; a chunked one (no size up front) gets 413 as soon as 1 MiB has passed, and the
        connection is closed rather than read to its end.  Either way it holds at most 1 MiB
        of it."""
        rss0 = rss_kib(self.pid)
        jobs0 = self.jobs_count()
        size = 100 * MiB
        sample = lambda: rss_kib(self.pid)
        for door in ("unix", "tcp"):
            # The headers alone already get the answer.
            with contextlib.closing(self.door(door)) as s:
                t = time.monotonic()
                s.sendall(b"POST /api/v1/jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n" % size)
                resp = read_response(s, 10)
                self.assert_json_error(resp, 413, f"100 MiB Content-Length on {door}, no body sent")
                self.assertLess(time.monotonic() - t, PROMPT)
            # A client that sends anyway is stopped early.
            with contextlib.closing(self.door(door)) as s:
                resp, sent, peak = self.stream_body(s, size, chunked=False, sample=sample)
                self.assertIsNotNone(resp, f"no answer to a 100 MiB body on {door}")
                self.assertEqual(resp[0], 413, f"100 MiB body on {door}")
                self.assertLess(sent, 16 * MiB, f"{door}: the client got {sent} bytes in before the 413")
            # Chunked: no size up front.
            with contextlib.closing(self.door(door)) as s:
                resp, sent, peak = self.stream_body(s, size, chunked=True, sample=sample)
                self.assertIsNotNone(resp, f"no answer to a 100 MiB chunked body on {door}")
                self.assertEqual(resp[0], 413, f"100 MiB chunked body on {door}")
                self.assertIn("1 MiB", json.loads(resp[2])["error"])
                # Answered early: the client could not push the whole body in (what the
                # kernel buffers between the two ends is a few MiB at most).
                self.assertLess(sent, 16 * MiB, f"{door}: the client got {sent} chunked bytes in before the 413")
                self.assertLess(peak - rss0, self.rss_slack_kib(4),
                                f"{door}: RSS peaked {peak - rss0} KiB above the start while reading the body")
        self.assertEqual(self.jobs_count(), jobs0)
        self.assert_healthy(rss0, 4, "100 MiB bodies")

    def attack_huge_headers(self):
        """A 256 KiB header line and 10,000 small headers: refused (4xx or closed), nothing
        else disturbed.  Long but sane ones (an 8 KiB header and an 8 KiB query together) are
        served: a connection's memory pool (32 KiB, src/api/http.c) holds them."""
        rss0 = rss_kib(self.pid)
        for door in ("unix", "tcp"):
            with contextlib.closing(self.door(door)) as s:
                resp = raw_request(s, "GET", b"/api/v1/jobs?name=" + b"n" * (8 << 10),
                                   headers=[b"X-Long: " + b"l" * (8 << 10)])
                self.assertIsNotNone(resp, f"no answer to 8 KiB headers on {door}")
                self.assertEqual(resp[0], 200, f"8 KiB header and 8 KiB query on {door}: {resp[:2]}")
            for extra in ([b"X-Big: " + b"b" * (256 << 10)], [b"X-H%d: v" % i for i in range(10000)]):
                with contextlib.closing(self.door(door)) as s:
                    resp = raw_request(s, "GET", b"/healthz", headers=extra)
                    if resp is not None:
                        self.assertTrue(400 <= resp[0] < 500, f"huge headers on {door}: {resp[0]}")
        self.assert_healthy(rss0, 4, "huge headers")

    def attack_invalid_utf8(self):
        """Invalid UTF-8 wherever a client can put bytes: 400 (or 404 for a path), never a
        crash, nothing queued."""
        bodies = [
            b'{"command":["\xff\xfe"],"cwd":"/"}',
            b'{"command":["true"],"name":"\xc0\xaf","cwd":"/"}',            # overlong '/'
            b'{"command":["true"],"name":"\xed\xa0\x80","cwd":"/"}',         # encoded surrogate
            b'{"command":["true"],"name":"\xf4\x90\x80\x80","cwd":"/"}',     # past U+10FFFF
            b'{"command":["true"],"name":"caf\xc3","cwd":"/"}',              # truncated sequence
            b'{"command":["true"],"name":"\\ud800","cwd":"/"}',              # lone surrogate escape
            b'{"command":["a\\u0000b"],"cwd":"/"}',                          # NUL
            b'{"\xff":1,"command":["true"],"cwd":"/"}',                      # in a key
            b'{"command":["true"],"cwd":"/","env":["A=\x80"]}',
            b'{"command":["true"],"cwd":"/","time_limit":"x' + "\u00e9".encode() * 40 + b'"}',
        ]
        jobs0 = self.jobs_count()
        for door in ("unix", "tcp"):
            for b in bodies:
                # TCP callers are guests: 401 before the body is looked at.
                want = 400 if door == "unix" else 401
                self.assert_json_error(self.request(door, "POST", b"/api/v1/jobs", body=b), want,
                                       f"POST {b[:40]!r} on {door}")
            st = self.request(door, "POST", b"/api/v1/jobs/batch", body=b'{"jobs":[{"command":["\xff"]}]}')
            self.assert_json_error(st, 400 if door == "unix" else 401, f"batch with invalid UTF-8 on {door}")
            for target in (b"/api/v1/jobs/%ff", b"/api/v1/jobs/\xff\xfe", b"/api/v1/\xc3"):
                r = self.request(door, "GET", target)
                self.assertIsNotNone(r, target)
                self.assertEqual(r[0], 404, target)
                json.loads(r[2])
            r = self.request(door, "GET", b"/api/v1/jobs?user=%ff%fe")
            self.assertIsNotNone(r)
            self.assertIn(r[0], (200, 400), "a query value that is not UTF-8")
            r = self.request(door, "GET", b"/healthz", headers=[b"X-Bad: \xff\xfe\x80"])
            self.assertEqual(r[0] if r else None, 200, "a header value that is not UTF-8")
        self.assertEqual(self.jobs_count(), jobs0)

    def attack_deep_nesting(self):
        """Nesting far past the JSON parser's depth limit: 400, no stack overflow."""
        deep = 100000
        jobs0 = self.jobs_count()
        bodies = [
            b"[" * deep,
            b"[" * deep + b"]" * deep,
            b'{"a":' * deep,
            b'{"command":' + b"[" * deep + b"]" * deep + b',"cwd":"/"}',
            b'{"command":["true"],"cwd":"/","env":' + b"[" * deep + b"]" * deep + b"}",
            b"[" * (MiB - 16),
        ]
        for b in bodies:
            self.assert_json_error(self.request("unix", "POST", b"/api/v1/jobs", body=b), 400,
                                   f"{len(b)} bytes of nesting")
        self.assert_json_error(self.request("unix", "POST", b"/api/v1/jobs/batch",
                                            body=b'{"jobs":' + b"[" * deep + b"]" * deep + b"}"),
                               400, "nested batch")
        # Within the parser's limit, in a field the decoder ignores: decoded and freed.
        ok = b'{"command":["true"],"cwd":"/nonexistent-gw-dir","x":' + b"[" * 2000 + b"]" * 2000 + b"}"
        self.assert_json_error(self.request("unix", "POST", b"/api/v1/jobs", body=ok), 400, "2000 levels")
        self.assertEqual(self.jobs_count(), jobs0)

    TRAVERSALS = [
        b"/api/v1/jobs/../../etc/passwd",
        b"/api/v1/jobs/%2e%2e/%2e%2e/etc/passwd",
        b"/api/v1/jobs/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
        b"/api/v1/jobs/..%2f..%2fetc%2fpasswd",
        b"/api/v1/jobs/%252e%252e/%252e%252e/etc/passwd",
        b"/api/v1/jobs/1/../../../etc/passwd",
        b"/api/v1/jobs/1/log/../../../../etc/passwd",
        b"/api/v1/jobs/1/log%2f..%2f..%2f..%2fetc%2fpasswd",
        b"/api/v1/jobs/..\\..\\etc\\passwd",
        b"/api/v1/jobs/%5c..%5c..%5cetc%5cpasswd",
        b"/api/v1/jobs/1/log/%2e%2e",
        b"/../../../../etc/passwd",
        b"//etc/passwd",
        b"/api/v1/jobs/1;/../../etc/passwd",
        b"/api/v1/jobs/%c0%ae%c0%ae/etc/passwd",
    ]
    # libmicrohttpd decodes %00 into a NUL that ends the path: the route sees what precedes it.
    NUL_TRAVERSALS = [
        b"/api/v1/jobs/%00../../etc/passwd",
        b"/api/v1/jobs/1/log%00/../../etc/passwd",
    ]

    def attack_path_traversal(self):
        """Paths that climb out of the API: 404 on both doors, and never a file's content."""
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["true"], "cwd": "/"})
        self.assertEqual(st, 201, r)
        self.d.wait_state(r["id"], "COMPLETED", timeout=20)
        with open("/etc/passwd", "rb") as f:
            passwd_line = f.readline().strip()
        for door in ("unix", "tcp"):
            for target in self.TRAVERSALS + self.NUL_TRAVERSALS:
                for method in ("GET", "DELETE"):
                    resp = self.request(door, method, target)
                    self.assertIsNotNone(resp, (door, method, target))
                    st, _, body = resp
                    self.assertNotIn(passwd_line, body, (door, method, target))
                    self.assertNotIn(b"root:", body, (door, method, target))
                    if target in self.TRAVERSALS:
                        self.assertIn(st, (400, 404), (door, method, target, body[:200]))
                    else:
                        self.assertLess(st, 500, (door, method, target, body[:200]))

    def attack_other_users_log(self):
        """Reading the log of a job one does not own: 403 for a guest on TCP always, and for
        another user on the Unix socket (root only: acts as nobody with setpriv)."""
        secret = "gw-hostile-secret-7f3a"
        st, r = self.d.api("POST", "/api/v1/jobs", {"command": ["sh", "-c", f"echo {secret}"], "cwd": "/"})
        self.assertEqual(st, 201, r)
        jid = r["id"]
        self.d.wait_state(jid, "COMPLETED", timeout=20)
        self.assertIn(secret, self.d.log_text(jid), "the owner reads it")
        for path in (f"/api/v1/jobs/{jid}/log", f"/api/v1/jobs/{jid}/log?offset=0&limit=65536"):
            resp = self.request("tcp", "GET", path.encode())
            self.assert_json_error(resp, 403, f"guest GET {path}")
            self.assertNotIn(secret.encode(), resp[2])
        if not IS_ROOT:
            return
        nobody = pwd.getpwnam("nobody")
        for method, path, want in (("GET", f"/api/v1/jobs/{jid}/log", 403),
                                   ("GET", f"/api/v1/jobs/{jid}/log?offset=0", 403),
                                   ("POST", f"/api/v1/jobs/{jid}/hold", 403),
                                   ("DELETE", f"/api/v1/jobs/{jid}", 403),
                                   ("GET", f"/api/v1/jobs/{jid}", 200)):
            st, body = self.d.raw_as(nobody.pw_uid, method, path, gid=nobody.pw_gid)
            self.assertEqual(st, want, (method, path, body[:300]))
            if method == "GET" and "/log" in path:
                self.assertNotIn(secret.encode(), body)
                self.assertIn(b"only they or an admin may", body)
        self.assertEqual(self.d.job(jid)["state"], "COMPLETED")

    def attack_per_uid_cap(self, cap, tcp=False):
        """One uid (nobody) opens 3x the daemon's per-uid cap of idle connections, on the Unix
        socket or on TCP from this host (where every user is 127.0.0.1): it holds at most the
        cap, the rest are answered 429 and closed; another uid (a numeric one with no passwd
        entry) is served meanwhile, and so is root.  Root only: the clients run under setpriv."""
        if not IS_ROOT:
            self.skipTest("needs root to act as other uids (setpriv)")
        nobody = pwd.getpwnam("nobody")
        where = f"tcp:{self.d.port}" if tcp else self.d.socket
        hog = subprocess.Popen(
            as_user(nobody.pw_uid, nobody.pw_gid) + [sys.executable, "-c", HOG_SCRIPT, where, str(3 * cap)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            line = hog.stdout.readline()          # the hog's tally once every connection settled
            if not line:
                hog.wait(timeout=20)
                self.fail(f"the hog said nothing: {hog.stderr.read()[-500:]!r}")
            held, refused, other = (int(x) for x in line.split())
            self.assertEqual(held, cap, f"nobody held {held} connections (cap {cap})")
            self.assertEqual(refused, 2 * cap, "every connection past the cap was answered 429")
            self.assertEqual(other, 0, "no connection past the cap was left open unanswered")
            # While nobody holds its cap: another uid, and root, are served.
            if tcp:
                other_uid = subprocess.run(as_user(43210) + [sys.executable, "-c", TCP_GET_SCRIPT, str(self.d.port)],
                                           capture_output=True, text=True, timeout=30)
                self.assertEqual(other_uid.stdout.strip(), "200", other_uid.stderr[-300:])
                self.assertEqual(self.d.tcp("GET", "/healthz")[0], 200)
            else:
                st, body = self.d.raw_as(43210, "GET", "/api/v1/whoami")
                self.assertEqual(st, 200, body[:300])
                self.assertIn(b'"uid": 43210', body.replace(b'"uid":43210', b'"uid": 43210'))
            self.assert_prompt(f"nobody holding {cap} connections")
            # nobody itself may still open one more once it lets one go: the count follows closes.
            hog.stdin.write(b"release\n")
            hog.stdin.flush()
            line = hog.stdout.readline()
            self.assertEqual(line.strip(), b"200", f"nobody after closing one: {line!r}")
        finally:
            if hog.poll() is None:
                hog.stdin.close()
                try:
                    hog.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    hog.kill()
                    hog.wait()
            hog.stdout.close()
            hog.stderr.close()
        self.assertIn("max-connections-per-user", self.d.daemon_log(), "the refusals are logged")

    # --- the tests ---

    def test_slow_headers(self):
        self.attack_slow_headers()

    def test_idle_connections(self):
        self.attack_idle_connections()

    def test_per_address_cap(self):
        self.attack_per_address_cap()

    def test_per_uid_cap(self):
        self.attack_per_uid_cap(PER_UID_CAP)

    def test_per_uid_cap_on_tcp_from_this_host(self):
        self.attack_per_uid_cap(PER_UID_CAP, tcp=True)

    def test_huge_body(self):
        self.attack_huge_body()

    def test_huge_headers(self):
        self.attack_huge_headers()

    def test_invalid_utf8(self):
        rss0 = rss_kib(self.pid)
        self.attack_invalid_utf8()
        self.assert_healthy(rss0, 4, "invalid UTF-8")

    def test_deep_nesting(self):
        rss0 = rss_kib(self.pid)
        self.attack_deep_nesting()
        self.assert_healthy(rss0, 4, "deep nesting")

    def test_path_traversal(self):
        self.attack_path_traversal()
        self.assert_prompt("path traversal")

    def test_other_users_log(self):
        self.attack_other_users_log()
        self.assert_prompt("another user's log")

    def test_foreign_host_on_tcp(self):
        """DNS rebinding: a page of another site whose name now points at 127.0.0.1 sends that name
        as Host; the loopback door answers it 421 and reads nothing out."""
        st, body = self.d.tcp("GET", "/api/v1/jobs", headers={"Host": "evil.example"})
        self.assertEqual(st, 421, body)
        self.assertIn(b"is not this server", body)
        self.assertEqual(self.d.tcp("GET", "/", headers={"Host": f"evil.example:{self.d.port}"})[0], 421)
        for host in (f"127.0.0.1:{self.d.port}", f"localhost:{self.d.port}", "LOCALHOST", f"[::1]:{self.d.port}",
                     "127.0.0.2"):
            self.assertEqual(self.d.tcp("GET", "/api/v1/jobs", headers={"Host": host})[0], 200, host)
        # The Unix socket is not a browser's: any Host goes.
        self.assertEqual(self.d.raw_as(0, "GET", "/api/v1/jobs")[0], 200)

    def test_all_in_a_row(self):
        """Every attack against one daemon; then it answers promptly and its memory is
        where it started, give or take."""
        rss0 = rss_kib(self.pid)
        for attack in (self.attack_invalid_utf8, self.attack_deep_nesting, self.attack_path_traversal,
                       self.attack_other_users_log, self.attack_huge_body, self.attack_huge_headers,
                       self.attack_per_address_cap, self.attack_slow_headers, self.attack_idle_connections):
            with self.subTest(attack=attack.__name__):
                attack()
        self.assert_healthy(rss0, 16, "all attacks")


if __name__ == "__main__":
    main()

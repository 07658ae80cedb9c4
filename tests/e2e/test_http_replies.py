#!/usr/bin/env python3
"""One reply per request: malformed and refused requests, sent on raw sockets to both doors,
each get exactly one status line and one set of headers (libmicrohttpd 0.9.75 queued its own
error reply twice for a Content-Length it cannot read), and the daemon answers afterwards."""
import re
import socket

import gwtest
from gwtest import DaemonTest

STATUS_LINE = re.compile(rb"(?:^|\r\n)HTTP/1\.[01] (\d{3}) ")


def post(cl, body=b"{}", path="/api/v1/jobs"):
    return b"POST " + path.encode() + b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: " + cl + b"\r\n\r\n" + body


CASES = {
    # name: (request, the one status expected; on the TCP door, without a token, where it differs)
    "Content-Length not a number": (post(b"abc"), 400),
    "Content-Length negative": (post(b"-1"), 400),
    "Content-Length with trailing words": (post(b"2 bytes"), 400),
    "Content-Length past 64 bits": (post(b"99999999999999999999999"), 413),
    "Content-Length over the limit": (post(b"2000000", b"x" * 1000), 413),
    "chunked body over the limit": (b"POST /api/v1/jobs HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
                                    + (b"10000\r\n" + b"x" * 0x10000 + b"\r\n") * 17 + b"0\r\n\r\n", 413),
    "malformed chunk": (b"POST /api/v1/jobs HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
                        b"zz\r\n{}\r\n0\r\n\r\n", 400),
    "bad JSON": (post(b"5", b"{bad}"), (400, 401)),
    "unknown method": (b"BREW /api/v1/jobs HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 405),
    "a body on GET": (b"GET /api/v1/jobs HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello", 200),
    "Expect: 100-continue over the limit": (b"POST /api/v1/jobs HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                                            b"Expect: 100-continue\r\nContent-Length: 2000000\r\n\r\n", 413),
}


class OneReplyTest(DaemonTest):
    gpus = 1

    def exchange(self, door, data):
        """Everything the daemon sends back for data (written, then the write side shut) until
        it closes the connection."""
        if door == "unix":
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(10)
            s.connect(self.d.socket)
        else:
            s = socket.create_connection(("127.0.0.1", self.d.port), timeout=10)
        with s:
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # refused before it was all sent: what came back still counts
            out = b""
            try:
                while len(out) < 1 << 20:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    out += chunk
            except ConnectionResetError:
                pass
            return out

    def test_each_request_gets_one_status_line(self):
        for door in ("unix", "tcp"):
            for name, (request, status) in CASES.items():
                if isinstance(status, tuple):
                    status = status[door == "tcp"]
                with self.subTest(door=door, case=name):
                    out = self.exchange(door, request)
                    statuses = [int(m) for m in STATUS_LINE.findall(out)]
                    self.assertEqual(statuses, [status], out[:600])
                    head = out.split(b"\r\n\r\n", 1)[0]
                    self.assertEqual(len(re.findall(rb"\r\nContent-Length: ", head)), 1, out[:600])
        st, _ = self.d.api("GET", "/healthz")
        self.assertEqual(st, 200)


if __name__ == "__main__":
    gwtest.main()

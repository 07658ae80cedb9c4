"""Webhooks: job events POSTed as JSON to the configured URLs, by a thread of the daemon's own."""
import http.server
import json
import subprocess
import threading
import time

from gwtest import GPUWARDD, DaemonTest, main, wait_until


class Receiver:
    """An HTTP server on loopback that keeps what is POSTed to it and answers `status`."""

    def __init__(self, status=200):
        self.bodies, self.status = [], status
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                outer.bodies.append((self.headers.get("Content-Type"), json.loads(self.rfile.read(n))))
                self.send_response(outer.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def events(self, job=None):
        return [b for _, b in self.bodies if job is None or b["job"]["id"] == job]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class WebhookTest(DaemonTest):
    status = 200
    topics = "start,end,warn"

    def setUp(self):
        self.hook = Receiver(self.status)
        self.extra = ("--webhook-url", self.hook.url, "--webhook-events", self.topics, "--time-limit-warn", "1s")
        super().setUp()

    def tearDown(self):
        super().tearDown()
        self.hook.stop()


class DeliveryTest(WebhookTest):
    def test_start_end_and_warning_reach_the_url(self):
        ok = self.d.submit("--name", "smoke", "--", "true")
        late = self.d.submit("--name", "slow", "--time", "3s", "--", "sleep", "30")
        self.d.wait_state(ok, "COMPLETED")
        self.d.wait_state(late, "TIMEOUT", timeout=30)
        wait_until(lambda: len(self.hook.events(late)) >= 3, what="the slow job's start, warning and end")
        kinds = [(e["event"], e["job"]["state"]) for e in self.hook.events(ok)]
        self.assertEqual(kinds, [("start", "RUNNING"), ("end", "COMPLETED")])
        end = self.hook.events(ok)[1]
        self.assertEqual((end["job"]["name"], end["job"]["user"], end["job"]["exit_code"]), ("smoke", "root", 0))
        self.assertRegex(end["text"], rf"^gpuward@\S+: job {ok} \(smoke, root\) COMPLETED")
        self.assertNotIn("command", end["job"], "the command line and environment stay on this host")
        self.assertEqual(self.hook.bodies[0][0], "application/json")
        late_events = [e["event"] for e in self.hook.events(late)]
        self.assertEqual(late_events, ["start", "warn", "end"])
        self.assertIn("its time limit 3s", self.hook.events(late)[1]["message"])
        self.assertEqual(self.hook.events(late)[2]["job"]["state"], "TIMEOUT")
        self.assertIn('gpuward_webhook_deliveries_total{result="sent"} 5', self.d.metrics())


class FailingReceiverTest(WebhookTest):
    status = 500
    topics = "end"

    def test_three_tries_then_counted_failed(self):
        jid = self.d.submit("--", "true")
        self.d.wait_state(jid, "COMPLETED")
        wait_until(lambda: 'result="failed"} 1' in self.d.metrics(), timeout=30, what="the failure counted")
        self.assertEqual(len(self.hook.events(jid)), 3, "tried three times")
        self.assertIn("not delivered after 3 tries: HTTP 500", self.d.daemon_log())


class SlowReceiverTest(DaemonTest):
    def test_a_receiver_that_never_answers_holds_nothing_up(self):
        import socket
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # accepts connections, never answers
        try:
            self.d.stop()
            self.d.extra = ["--webhook-url", f"http://127.0.0.1:{silent.getsockname()[1]}/", "--webhook-events", "all"]
            self.d.start()
            t0 = time.time()
            ids = [self.d.submit("--", "true") for _ in range(20)]
            for i in ids:
                self.d.wait_state(i, "COMPLETED", timeout=30)
            self.assertLess(time.time() - t0, 20, "jobs ran while the webhook waited")
            t0 = time.time()
            proc = self.d.proc
            self.d.stop()
            self.assertLess(time.time() - t0, 5, "a delivery in flight does not hold up the daemon's stop")
            self.assertEqual(proc.returncode, 0, "SIGTERM is the daemon's loop's, not the webhook thread's")
            self.assertIn("signal TERM: stopping", self.d.daemon_log())
            self.assertIn("not sent (the daemon stops)", self.d.daemon_log())
        finally:
            silent.close()


class WebhookConfigTest(DaemonTest):
    def test_bad_settings_are_refused_at_start(self):
        for args, said in ((("--webhook-url", "ftp://example.org/x"), "is not an http:// or https:// URL"),
                           (("--webhook-url", "http:///path"), "has no host"),
                           (("--webhook-url", ",,"), "no URL in the list"),
                           (("--webhook-events", "end,bogus"), "'bogus' is not one of start, end, retry")):
            p = subprocess.run([GPUWARDD, "--state-dir", self.d.dir + "/other", "--socket", self.d.dir + "/o.sock",
                                "--listen", "none", *args], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(said, p.stderr, args)


if __name__ == "__main__":
    main()

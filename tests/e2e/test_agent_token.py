"""Tokens of scope agent: what a node agent (gpuwardd --agent) posts its snapshots with.  Only an
admin makes one; it passes on POST /api/v1/agent/snapshot and is refused with 403 everywhere
else (jobs, whoami, the web page's sign-in); token list shows the scope; revoking ends it."""
import json
import os
import shutil
import tempfile
import unittest

import gwtest

FAKE_SLURM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fakes", "slurm")

SNAPSHOT = {"node": "gwatnode", "interval": 2, "driver": "550.54",
            "gpus": [{"index": 0, "name": "A100", "uuid": "GPU-1", "mem_total": 100, "mem_used": 40, "util": 50,
                      "health": "ok", "procs_total": 0, "procs": []}]}


def refusal(token_id):
    return f"token {token_id} is a node agent's (scope agent): it may only post node snapshots"


def agent_token(d, *extra):
    """(id, token) of a fresh agent token, made by root (an admin) with the CLI."""
    made = d.cli_json("token", "create", "--scope", "agent", "--name", "agents", *extra)
    assert made["scope"] == "agent", made
    return made["id"], made["token"]


class AgentTokenTest(gwtest.DaemonTest):
    def test_an_agent_token_may_only_post_snapshots(self):
        tid, tok = agent_token(self.d, "--expires", "never")
        for method, path, body in (("GET", "/api/v1/jobs", None),
                                   ("POST", "/api/v1/jobs", {"argv": ["/bin/true"], "gpus": 1}),
                                   ("GET", "/api/v1/whoami", None),
                                   ("GET", "/api/v1/tokens", None),
                                   ("POST", "/api/v1/gpus/0/drain", {"reason": "x"})):
            st, reply = self.d.tcp_json(method, path, body, token=tok)
            self.assertEqual((st, reply.get("error")), (403, refusal(tid)), f"{method} {path}")
        self.assertEqual(self.d.api("GET", "/api/v1/jobs")[1]["jobs"], [], "nothing was submitted")
        self.assertIsNone(self.d.api("GET", "/api/v1/gpus")[1]["gpus"][0]["drain_reason"], "nothing was drained")
        # Auth passes on the snapshot route: what refuses it now is this daemon's backend.
        st, reply = self.d.tcp_json("POST", "/api/v1/agent/snapshot", SNAPSHOT, token=tok)
        self.assertEqual(st, 409, reply)
        self.assertIn("not a cluster's controller", reply["error"])
        # The web page's sign-in refuses it with the same words, and sets no cookie.
        st, body = self.d.tcp("POST", "/api/v1/session", json.dumps({"token": tok}),
                              headers={"Content-Type": "application/json"})
        self.assertEqual(st, 403, body)
        self.assertEqual(json.loads(body)["error"], refusal(tid))

    def test_full_tokens_are_as_before(self):
        # An admin's full token still posts snapshots (agents set up before scoped tokens).
        admin = self.d.cli_json("token", "create", "--name", "old-agents")
        self.assertIsNone(admin["scope"])
        st, reply = self.d.tcp_json("POST", "/api/v1/agent/snapshot", SNAPSHOT, token=admin["token"])
        self.assertEqual(st, 409, reply)
        st, reply = self.d.tcp_json("GET", "/api/v1/whoami", token=admin["token"])
        self.assertEqual((st, reply.get("role")), (200, "admin"), reply)

    def test_list_shows_the_scope_and_revoking_ends_it(self):
        tid, tok = agent_token(self.d)
        full = self.d.cli_json("token", "create", "--name", "ci")
        listed = {t["id"]: t for t in self.d.cli_json("token", "list")["tokens"]}
        self.assertEqual(listed[tid]["scope"], "agent")
        self.assertIsNone(listed[full["id"]]["scope"])
        lines = self.d.cli("token", "list").stdout.splitlines()
        head = lines[0].split()
        self.assertEqual(head[:4], ["ID", "USER", "NAME", "SCOPE"], lines)
        rows = {line.split()[0]: line.split() for line in lines[1:]}
        self.assertEqual(rows[str(tid)][3], "agent", lines)
        self.assertEqual(rows[str(full["id"])][3], "-", lines)
        self.assertIn("--scope agent", self.d.cli("token", "create", "--help").stdout)
        self.d.cli("token", "revoke", str(tid))
        st, reply = self.d.tcp_json("POST", "/api/v1/agent/snapshot", SNAPSHOT, token=tok)
        self.assertEqual(st, 401, reply)
        self.assertIn(f"token {tid} was revoked", reply["error"])
        self.assertNotIn(tid, [t["id"] for t in self.d.cli_json("token", "list")["tokens"]])

    def test_a_bad_scope_is_refused_naming_it(self):
        for scope in ("admin", "", "AGENT", 1, ["agent"]):
            st, reply = self.d.api("POST", "/api/v1/tokens", {"name": "x", "scope": scope})
            self.assertEqual((st, reply.get("field")), (400, "scope"), f"{scope!r}: {reply}")
        p = self.d.cli("token", "create", "--scope", "admin", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--scope", p.stderr)
        self.assertEqual(self.d.cli_json("token", "list")["tokens"], [], "nothing was made")
        # null is the account's whole rights, as absent.
        st, reply = self.d.api("POST", "/api/v1/tokens", {"name": "x", "scope": None})
        self.assertEqual((st, reply.get("scope")), (201, None), reply)

    @unittest.skipUnless(gwtest.IS_ROOT, "needs root to make a user account")
    def test_a_user_may_not_make_an_agent_token(self):
        users = gwtest.Users(prefix="gwat")
        try:
            u = users.add("u")
            st, body = self.d.raw_as(u.pw_uid, "POST", "/api/v1/tokens", json.dumps({"scope": "agent"}).encode())
            reply = json.loads(body)
            self.assertEqual((st, reply.get("field")), (403, "scope"), reply)
            self.assertIn("only admins", reply["error"])
            p = self.d.cli("token", "create", "--scope", "agent", user=u.pw_uid, check=False)
            self.assertNotEqual(p.returncode, 0, p.stdout)
            self.assertIn("only admins may make a node agent's token", p.stderr)
            self.assertEqual(self.d.cli_json("token", "list")["tokens"], [], "nothing was made")
            # A user's full token is refused on the snapshot route, as before.
            full = json.loads(self.d.raw_as(u.pw_uid, "POST", "/api/v1/tokens", b"{}")[1])
            st, reply = self.d.tcp_json("POST", "/api/v1/agent/snapshot", SNAPSHOT, token=full["token"])
            self.assertEqual((st, reply.get("error")), (403, "only admins may do this"), reply)
        finally:
            users.remove_all()


class AgentTokenControllerTest(gwtest.DaemonTest):
    """On a cluster's controller (--backend slurm, fake Slurm commands) the agent's token's
    snapshot is taken and shows in GET /api/v1/gpus."""
    extra = ("--backend", "slurm")

    def setUp(self):
        self.sdir = tempfile.mkdtemp(prefix="gw-fakeslurm-")
        self.addCleanup(shutil.rmtree, self.sdir, True)
        os.chmod(self.sdir, 0o777)
        open(os.path.join(self.sdir, "squeue.out"), "w").close()
        self.env = {"PATH": os.path.abspath(FAKE_SLURM) + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
                    "SLURM_CONF": os.path.join(self.sdir, "slurm.conf")}
        super().setUp()

    def test_the_snapshot_is_accepted(self):
        tid, tok = agent_token(self.d, "--expires", "30d")
        st, reply = self.d.tcp_json("POST", "/api/v1/agent/snapshot", SNAPSHOT, token=tok)
        self.assertEqual((st, reply.get("node")), (200, "gwatnode"), reply)
        nodes = self.d.api("GET", "/api/v1/gpus")[1].get("nodes", [])
        self.assertEqual([n["node"] for n in nodes], ["gwatnode"])
        # Bad input is still a 400 naming the field: the token passed, the body did not.
        st, reply = self.d.tcp_json("POST", "/api/v1/agent/snapshot", {**SNAPSHOT, "node": "a/b"}, token=tok)
        self.assertEqual((st, reply.get("field")), (400, "node"), reply)
        st, reply = self.d.tcp_json("GET", "/api/v1/gpus", token=tok)
        self.assertEqual((st, reply.get("error")), (403, refusal(tid)))

    def test_a_bookings_share_is_of_the_nodes_gpus_not_the_head_nodes(self):
        """booking_max_gpus (50%) on a controller: of the GPUs the agents reported."""
        users = gwtest.Users(prefix="gwat")
        try:
            u = users.add("u")
            ask = lambda n: json.loads(self.d.raw_as(u.pw_uid, "POST", "/api/v1/bookings", json.dumps(
                {"ngpus": n, "start": "now+20d", "duration": "1h"}).encode())[1])
            b = ask(1)
            self.assertEqual(b.get("state"), "PENDING_APPROVAL", b)
            self.assertIn("no node's agent has reported them yet", b["note"])
            tid, tok = agent_token(self.d)
            two = {**SNAPSHOT, "gpus": [SNAPSHOT["gpus"][0], {**SNAPSHOT["gpus"][0], "index": 1, "uuid": "GPU-2"}]}
            st, reply = self.d.tcp_json("POST", "/api/v1/agent/snapshot", two, token=tok)
            self.assertEqual(st, 200, reply)
            b = ask(2)
            self.assertEqual(b.get("state"), "PENDING_APPROVAL", b)
            self.assertIn("2 of the cluster's 2 GPUs", b["note"])
            # (1 of 2 passes the policy and goes on to Slurm's reservation, which these fake
            # Slurm commands cannot make: unit test_bookpolicy and cluster_book cover it.)
        finally:
            users.remove_all()


if __name__ == "__main__":
    gwtest.main()

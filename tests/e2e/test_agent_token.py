"""Tokens of scope agent: what a node agent (gpuwardd --agent) posts its snapshots with.  Only an
admin makes one, for one node (--node); it passes on POST /api/v1/agent/snapshot for that node
only and is refused with 403 everywhere else (jobs, whoami, the web page's sign-in); token list
shows the scope and the node; revoking ends it.  On a controller a snapshot's size and the
nodes kept are bounded, and GET /api/v1/gpus shows the nodes a page at a time."""
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


def agent_token(d, *extra, node="gwatnode"):
    """(id, token) of a fresh agent token for node, made by root (an admin) with the CLI."""
    made = d.cli_json("token", "create", "--scope", "agent", "--node", node, "--name", "agents", *extra)
    assert (made["scope"], made["node"]) == ("agent", node), made
    return made["id"], made["token"]


def snapshot(node, gpus=1, procs=0):
    """A node's snapshot of gpus GPUs with procs processes on each."""
    return {**SNAPSHOT, "node": node,
            "gpus": [{**SNAPSHOT["gpus"][0], "index": i, "uuid": f"GPU-{node}-{i}", "procs_total": procs,
                      "procs": [{"pid": 100 + k, "mem": 1, "job": None, "uid": 0, "user": "root"}
                                for k in range(procs)]} for i in range(gpus)]}


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
        self.assertEqual((listed[tid]["scope"], listed[tid]["node"]), ("agent", "gwatnode"))
        self.assertEqual((listed[full["id"]]["scope"], listed[full["id"]]["node"]), (None, None))
        lines = self.d.cli("token", "list").stdout.splitlines()
        head = lines[0].split()
        self.assertEqual(head[:5], ["ID", "USER", "NAME", "SCOPE", "NODE"], lines)
        rows = {line.split()[0]: line.split() for line in lines[1:]}
        self.assertEqual(rows[str(tid)][3:5], ["agent", "gwatnode"], lines)
        self.assertEqual(rows[str(full["id"])][3:5], ["-", "-"], lines)
        self.assertIn("--scope agent --node NODE", self.d.cli("token", "create", "--help").stdout)
        self.d.cli("token", "revoke", str(tid))
        st, reply = self.d.tcp_json("POST", "/api/v1/agent/snapshot", SNAPSHOT, token=tok)
        self.assertEqual(st, 401, reply)
        self.assertIn(f"token {tid} was revoked", reply["error"])
        self.assertNotIn(tid, [t["id"] for t in self.d.cli_json("token", "list")["tokens"]])

    def test_an_agent_token_is_made_for_one_node(self):
        for body in ({"scope": "agent"}, {"scope": "agent", "node": None}, {"scope": "agent", "node": "a/b"},
                     {"scope": "agent", "node": ""}, {"scope": "agent", "node": "n" * 65},
                     {"scope": "agent", "node": 7}, {"node": "gpu1"}, {"scope": None, "node": "gpu1"}):
            st, reply = self.d.api("POST", "/api/v1/tokens", body)
            self.assertEqual((st, reply.get("field")), (400, "node"), f"{body}: {reply}")
        for args, why in ((("--scope", "agent"), "give --node NODE"),
                          (("--node", "gpu1"), "only a node agent's token (--scope agent)"),
                          (("--scope", "agent", "--node", "a b"), "is not a node's Slurm name")):
            p = self.d.cli("token", "create", *args, check=False)
            self.assertNotEqual(p.returncode, 0, args)
            self.assertIn(why, p.stderr, args)
        self.assertEqual(self.d.cli_json("token", "list")["tokens"], [], "nothing was made")
        out = self.d.cli("token", "create", "--scope", "agent", "--node", "gpu1").stdout
        self.assertIn("It is node gpu1's agent token", out)

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
            st, body = self.d.raw_as(u.pw_uid, "POST", "/api/v1/tokens",
                                     json.dumps({"scope": "agent", "node": "n1"}).encode())
            reply = json.loads(body)
            self.assertEqual((st, reply.get("field")), (403, "scope"), reply)
            self.assertIn("only admins", reply["error"])
            p = self.d.cli("token", "create", "--scope", "agent", "--node", "n1", user=u.pw_uid, check=False)
            self.assertNotEqual(p.returncode, 0, p.stdout)
            self.assertIn("only admins may make a node agent's token", p.stderr)
            self.assertEqual(self.d.cli_json("token", "list")["tokens"], [], "nothing was made")
            # A user's full token is refused on the snapshot route, as before.
            full = json.loads(self.d.raw_as(u.pw_uid, "POST", "/api/v1/tokens", b"{}")[1])
            st, reply = self.d.tcp_json("POST", "/api/v1/agent/snapshot", SNAPSHOT, token=full["token"])
            self.assertEqual((st, reply.get("error")), (403, "only admins may do this"), reply)
        finally:
            users.remove_all()


class ControllerTest(gwtest.DaemonTest):
    """A cluster's controller (--backend slurm) with fake Slurm commands."""
    extra = ("--backend", "slurm")

    def setUp(self):
        self.sdir = tempfile.mkdtemp(prefix="gw-fakeslurm-")
        self.addCleanup(shutil.rmtree, self.sdir, True)
        os.chmod(self.sdir, 0o777)
        open(os.path.join(self.sdir, "squeue.out"), "w").close()
        self.env = {"PATH": os.path.abspath(FAKE_SLURM) + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
                    "SLURM_CONF": os.path.join(self.sdir, "slurm.conf")}
        super().setUp()

    def refusals_logged(self, text):
        return sum(1 for line in self.d.daemon_log().splitlines() if "node snapshot refused" in line and text in line)


class AgentTokenControllerTest(ControllerTest):
    """The agent's token's snapshot is taken and shows in GET /api/v1/gpus; another node's is
    refused; a snapshot's size is bounded."""

    def test_the_snapshot_is_accepted(self):
        tid, tok = agent_token(self.d, "--expires", "30d")
        st, reply = self.d.tcp_json("POST", "/api/v1/agent/snapshot", SNAPSHOT, token=tok)
        self.assertEqual((st, reply.get("node")), (200, "gwatnode"), reply)
        gpus = self.d.api("GET", "/api/v1/gpus")[1]
        self.assertEqual([n["node"] for n in gpus.get("nodes", [])], ["gwatnode"])
        self.assertEqual((gpus["nodes_next"], gpus["nodes_total"]), (None, 1), "one page holds them all")
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

    def test_a_token_posts_for_its_own_node_only(self):
        tid, tok = agent_token(self.d)
        st, reply = self.d.tcp_json("POST", "/api/v1/agent/snapshot", SNAPSHOT, token=tok)
        self.assertEqual(st, 200, reply)
        # Five nodes' worth from one node's token: each refused, naming the token's node; logged once.
        for node in ("gwatnode2", "gwatnod", "GWATNODE", "other", "gwatnode.x"):
            st, reply = self.d.tcp_json("POST", "/api/v1/agent/snapshot", snapshot(node), token=tok)
            self.assertEqual((st, reply.get("field")), (403, "node"), reply)
            self.assertEqual(reply["error"], f"token {tid} is node gwatnode's agent token: "
                                             f"it may not post node {node}'s snapshot")
        self.assertEqual([n["node"] for n in self.d.api("GET", "/api/v1/gpus")[1]["nodes"]], ["gwatnode"])
        self.assertEqual(self.refusals_logged(f"token {tid} is node gwatnode's"), 1, self.d.daemon_log())
        # An admin's own token still posts for any node (agents set up with one before).
        admin = self.d.cli_json("token", "create", "--name", "old-agents")["token"]
        st, reply = self.d.tcp_json("POST", "/api/v1/agent/snapshot", snapshot("other"), token=admin)
        self.assertEqual(st, 200, reply)

    def test_a_snapshots_size_is_bounded(self):
        tid, tok = agent_token(self.d)
        # Past 192 KiB the body is refused unread, however well-formed.
        padded = json.dumps(SNAPSHOT) + " " * (192 << 10)
        st, body = self.d.tcp("POST", "/api/v1/agent/snapshot", padded,
                              headers={"Content-Type": "application/json", "Authorization": f"Bearer {tok}"})
        self.assertEqual(st, 413, body)
        self.assertIn("larger than the 192 KiB POST /api/v1/agent/snapshot takes", json.loads(body)["error"])
        # 256 processes a GPU pass on one GPU, but not 512 in all on three.
        st, reply = self.d.tcp_json("POST", "/api/v1/agent/snapshot", snapshot("gwatnode", 3, 171), token=tok)
        self.assertEqual((st, reply.get("field")), (400, "gpus[2].procs"), reply)
        self.assertIn("at most 512 processes in one snapshot", reply["error"])
        self.assertEqual(self.d.api("GET", "/api/v1/gpus")[1]["nodes"], [], "nothing was kept")
        st, reply = self.d.tcp_json("POST", "/api/v1/agent/snapshot", snapshot("gwatnode", 2, 256), token=tok)
        self.assertEqual(st, 200, reply)


class NodeBoundsTest(ControllerTest):
    """max_nodes nodes are kept, one more refused; GET /api/v1/gpus shows 64 nodes a page."""
    config = "max_nodes = 66\n"

    def post_nodes(self, n):
        for i in range(n):
            st, reply = self.d.api("POST", "/api/v1/agent/snapshot", snapshot(f"n{i:03d}"))
            self.assertEqual(st, 200, reply)

    def test_the_nodes_kept_are_bounded(self):
        self.post_nodes(66)
        for node in ("n999", "n998", "n997"):
            st, reply = self.d.api("POST", "/api/v1/agent/snapshot", {**snapshot(node), "xids": [{"gpu": 0, "xid": 79}]})
            self.assertEqual((st, reply.get("field")), (403, "node"), reply)
            self.assertEqual(reply["error"], f"node {node} is one node too many: this controller keeps max_nodes = 66")
        self.assertEqual(self.refusals_logged("one node too many"), 1, self.d.daemon_log())
        # A node refused leaves nothing: not its Xid either.
        st, ev = self.d.api("GET", "/api/v1/gpus/events")
        self.assertEqual([e for e in ev["events"] if e.get("node") in ("n999", "n998", "n997")], [], ev)
        st, reply = self.d.api("POST", "/api/v1/agent/snapshot", snapshot("n000", 2))  # a node kept: still heard
        self.assertEqual(st, 200, reply)
        self.assertEqual(self.d.api("GET", "/api/v1/gpus?limit=256")[1]["nodes_total"], 66)

    def test_gpus_shows_the_nodes_a_page_at_a_time(self):
        self.post_nodes(66)
        # A guest (no token over TCP): 64 nodes, and where the next page starts.
        st, page = self.d.tcp_json("GET", "/api/v1/gpus")
        self.assertEqual(st, 200, page)
        self.assertEqual([n["node"] for n in page["nodes"]], [f"n{i:03d}" for i in range(64)])
        self.assertEqual((page["nodes_next"], page["nodes_total"]), ("n063", 66))
        self.assertIn("gpus", page)
        st, rest = self.d.tcp_json("GET", "/api/v1/gpus?after=n063")
        self.assertEqual([n["node"] for n in rest["nodes"]], ["n064", "n065"])
        self.assertIsNone(rest["nodes_next"])
        st, small = self.d.tcp_json("GET", "/api/v1/gpus?limit=5&after=n010")
        self.assertEqual(([n["node"] for n in small["nodes"]], small["nodes_next"]),
                         ([f"n{i:03d}" for i in range(11, 16)], "n015"))
        for q, field in (("limit=0", "limit"), ("limit=257", "limit"), ("limit=x", "limit"), ("after=a/b", "after"),
                         ("after=", "after")):
            st, reply = self.d.tcp_json("GET", f"/api/v1/gpus?{q}")
            self.assertEqual((st, reply.get("field")), (400, field), q)
        # The CLI follows the pages: every node, in the table and in --json.
        everything = self.d.cli_json("gpus")
        self.assertEqual([n["node"] for n in everything["nodes"]], [f"n{i:03d}" for i in range(66)])
        self.assertIsNone(everything["nodes_next"])
        table = self.d.cli("gpus").stdout
        self.assertEqual(sum(1 for line in table.splitlines() if line.startswith("n0")), 66, table)


if __name__ == "__main__":
    gwtest.main()

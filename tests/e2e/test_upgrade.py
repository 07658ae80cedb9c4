#!/usr/bin/env python3
"""Upgrades: a state dir made by each earlier schema version (tests/fixtures/schema-vN.db, made
by the gpuwardd of that version: tests/fixtures/make_schema_fixtures.py) opens in this one
with its jobs, their events, the booking and the token intact (a node agent's token from before
agents' tokens were bound to a node is kept, bound to none, and refused saying what to make
instead); a database from a newer version is refused at start, its file unchanged."""
import glob
import json
import os
import re
import shutil
import sqlite3
import subprocess

import gwtest
from gwtest import Daemon

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
FINAL = "COMPLETED,FAILED,CANCELLED,TIMEOUT,RECLAIMED"


def fixtures():
    """(version, database path, what was made) of each fixture, oldest first."""
    out = []
    for meta in glob.glob(os.path.join(FIXTURES, "schema-v*.json")):  # only read, never opened as a database
        with open(meta) as f:
            made = json.load(f)
        out.append((made["version"], meta[:-len(".json")] + ".db", made))
    return sorted(out, key=lambda t: t[0])


def stored_events(db_path):
    """Each job's event kinds and messages as the old version stored them."""
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        ev = {}
        for jid, kind, msg in db.execute("SELECT job_id, kind, message FROM job_events ORDER BY id"):
            ev.setdefault(jid, []).append((kind, msg))
        return ev
    finally:
        db.close()


def daemon_on(db_path):
    """A daemon (not started) whose state dir holds a copy of db_path."""
    d = Daemon(gpus=2)
    os.makedirs(d.state, mode=0o700)
    shutil.copyfile(db_path, os.path.join(d.state, "gpuward.db"))
    return d


class UpgradeTest(gwtest.unittest.TestCase):
    def test_there_are_fixtures(self):
        # The first, and each version that changed the tables of jobs, events, bookings, tokens.
        versions = {v for v, _, _ in fixtures()}
        self.assertLessEqual({1, 3, 4, 5, 6, 8, 11, 12, 20}, versions)

    def test_each_earlier_schema_opens_with_everything_in_it(self):
        for version, db_path, made in fixtures():
            with self.subTest(schema=version), daemon_on(db_path) as d:
                # Read from the copy: opening the fixture would leave -wal and -shm beside it.
                events = stored_events(os.path.join(d.state, "gpuward.db"))
                d.start()
                self.check_jobs(d, made, events)
                if "booking" in made:
                    self.check_booking_and_token(d, made)

    def check_jobs(self, d, made, events):
        for jid, state in made["jobs"].items():
            j = d.job(int(jid))
            self.assertEqual(j["state"], state, j)
            got = [(e["kind"], e["message"]) for e in j["events"]]
            # Its history as stored, in order (a job still queued may have more since).
            self.assertEqual(got[:len(events[int(jid)])], events[int(jid)], jid)
            self.assertGreater(len(events[int(jid)]), 0)
        st, hist = d.api("GET", f"/api/v1/jobs?state={FINAL}")
        self.assertEqual(st, 200, hist)
        final = {str(j["id"]) for j in hist["jobs"]}
        self.assertEqual(final, {i for i, s in made["jobs"].items() if s in FINAL.split(",")})
        # The held job is still held; the one after it still waits for it.
        st, active = d.api("GET", "/api/v1/jobs")
        self.assertEqual({str(j["id"]): j["state"] for j in active["jobs"]},
                         {i: s for i, s in made["jobs"].items() if s not in FINAL.split(",")})

    def check_booking_and_token(self, d, made):
        st, body = d.api("GET", "/api/v1/bookings")
        self.assertEqual(st, 200, body)
        mine = [b for b in body["bookings"] if b["id"] == made["booking"]]
        self.assertEqual(len(mine), 1, body)
        self.assertEqual(mine[0]["name"], "fixture")
        st, body = d.api("GET", "/api/v1/tokens")
        self.assertEqual(st, 200, body)
        agent = "agent_token" in made
        self.assertEqual([t["name"] for t in body["tokens"]], ["fixture"] + ["fixture-agent"] * agent)
        # The token made by the old version still speaks for its owner over TCP.
        st, who = d.tcp_json("GET", "/api/v1/whoami", token=made["token"])
        self.assertEqual(st, 200, who)
        self.assertEqual(who["user"], body["tokens"][0]["user"])
        if agent:
            self.check_unbound_agent_token(d, made, body["tokens"][1])

    def check_unbound_agent_token(self, d, made, listed):
        """An agent's token made before they were bound to a node: listed, bound to none, and
        refused on the snapshot route with what the admin is to do (not taken for any node)."""
        self.assertEqual((listed["scope"], listed["node"]), ("agent", None), listed)
        snap = {"node": "gpu1", "interval": 2, "gpus": []}
        st, reply = d.tcp_json("POST", "/api/v1/agent/snapshot", snap, token=made["agent_token"])
        self.assertEqual((st, reply.get("field")), (403, "node"), reply)
        self.assertIn(f"token {listed['id']} is a node agent's token bound to no node", reply["error"])
        self.assertIn("gpuward token create --scope agent --node NODE", reply["error"])
        self.assertIn(f"node snapshot refused: token {listed['id']} is a node agent's token bound to no node",
                      d.daemon_log())


class NewerSchemaTest(gwtest.unittest.TestCase):
    def test_a_newer_database_is_refused_and_left_as_it_was(self):
        _, db_path, _ = fixtures()[-1]
        with daemon_on(db_path) as d:
            path = os.path.join(d.state, "gpuward.db")
            db = sqlite3.connect(path)
            # A rollback-journal database: a WAL switch would change its header.
            db.execute("PRAGMA journal_mode = DELETE")
            db.execute("PRAGMA user_version = 1000")
            db.close()
            with open(path, "rb") as f:
                before = f.read()
            p = subprocess.run(d.args(), capture_output=True, text=True, timeout=60)
            self.assertNotEqual(p.returncode, 0)
            self.assertRegex(p.stdout + p.stderr,
                             r"database schema 1000 is newer than this gpuwardd knows \(\d+\): "
                             + re.escape(path))
            with open(path, "rb") as f:
                self.assertEqual(f.read(), before)
            self.assertEqual(sorted(os.listdir(d.state)).count("gpuward.db-wal"), 0)


if __name__ == "__main__":
    gwtest.main()

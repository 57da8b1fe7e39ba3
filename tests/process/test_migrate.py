"""`rocksandra migrate` from a real Apache Cassandra 5.0.6 into a real
`rocksandra` process: schema, every cell's write time and TTL, statics,
collections with per-element write times, a frozen UDT, counters, a row
deleted before the copy (not resurrected), and a run killed with SIGKILL
half way then resumed from its checkpoint (same final checksums); static
counters and static lists; a materialized view built on the target from
the copied rows.

Starts Cassandra with scripts/cassandra/start.sh --auth (PasswordAuthenticator:
the copy logs in on both sides in one test; a no-op if a Cassandra already
runs on that base) and stops it with --wipe at the end if it started it:

    ROCKSANDRA_BIN=target/debug/rocksandra pytest tests/process/test_migrate.py

MIGRATE_CASSANDRA_BASE / MIGRATE_CASSANDRA_PORT (default /tmp/migrate-cass,
9460) and MIGRATE_CASSANDRA_STORAGE_PORT / MIGRATE_CASSANDRA_JMX_PORT choose
where Cassandra runs. About 90 s, most of it Cassandra's boot and stop
(20 s with one already running). On a new machine scripts/cassandra/start.sh
first fetches Cassandra's jars from Maven Central (about 2 minutes more).
"""

import json
import os
import re
import signal
import subprocess
import tempfile
import time

import pytest
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.policies import RoundRobinPolicy

from test_durability import BIN, PORT, Node

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASS_BASE = os.environ.get("MIGRATE_CASSANDRA_BASE", "/tmp/migrate-cass")
CASS_PORT = int(os.environ.get("MIGRATE_CASSANDRA_PORT", "9460"))
CASS_STORAGE_PORT = os.environ.get("MIGRATE_CASSANDRA_STORAGE_PORT", "9438")
CASS_JMX_PORT = os.environ.get("MIGRATE_CASSANDRA_JMX_PORT", "9439")
# The source runs PasswordAuthenticator (start.sh --auth): the copy logs in.
SOURCE_LOGIN = ["--username", "cassandra", "--password", "cassandra"]
BULK_ROWS = 3000
RANGES = 32


def cassandra_running():
    try:
        with open(os.path.join(CASS_BASE, "cassandra.pid")) as f:
            os.kill(int(f.read().strip()), 0)
        return True
    except (OSError, ValueError):
        return False


@pytest.fixture(scope="module")
def cassandra():
    started_here = not cassandra_running()
    subprocess.run([os.path.join(ROOT, "scripts/cassandra/start.sh"), "--base", CASS_BASE,
                    "--port", str(CASS_PORT), "--storage-port", CASS_STORAGE_PORT,
                    "--jmx-port", CASS_JMX_PORT, "--heap", "1G", "--timeout", "300", "--auth",
                    "--yaml", "materialized_views_enabled: true"], check=True)
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy())
    cluster = Cluster(["127.0.0.1"], port=CASS_PORT, protocol_version=4,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile}, connect_timeout=20,
                      auth_provider=PlainTextAuthProvider("cassandra", "cassandra"))
    session = cluster.connect()
    yield session
    session.execute("DROP KEYSPACE IF EXISTS mig")
    cluster.shutdown()
    if started_here:
        subprocess.run([os.path.join(ROOT, "scripts/cassandra/stop.sh"), "--base", CASS_BASE, "--wipe"],
                       check=True)


@pytest.fixture
def rocksandra():
    with tempfile.TemporaryDirectory() as d:
        n = Node(d, extra_yaml="materialized_views_enabled: true\n")
        n.start()
        cluster, session = n.session()
        yield n, session
        cluster.shutdown()
        if n.proc.poll() is None:
            n.proc.kill()
            n.proc.wait()


def fill_source(s):
    s.execute("DROP KEYSPACE IF EXISTS mig")
    s.execute("CREATE KEYSPACE mig WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TYPE mig.addr (street text, zip int)")
    s.execute("CREATE TABLE mig.main (k int, c int, v text, n bigint, st text static, s set<int>, "
              "m map<text, int>, l list<int>, a frozen<addr>, PRIMARY KEY (k, c))")
    s.execute("CREATE INDEX main_v ON mig.main (v)")
    s.execute("CREATE TABLE mig.udts (k int PRIMARY KEY, u addr)")
    s.execute("UPDATE mig.udts USING TIMESTAMP 100 SET u.street = 'Elm' WHERE k = 1")
    s.execute("UPDATE mig.udts USING TIMESTAMP 200 AND TTL 4000 SET u.zip = 7 WHERE k = 1")
    s.execute("INSERT INTO mig.udts (k, u) VALUES (2, {street: 'Oak'}) USING TIMESTAMP 300")
    s.execute("CREATE TABLE mig.types (k uuid, t timeuuid, a ascii, b blob, bo boolean, d date, "
              "de decimal, du duration, db double, f float, i inet, si smallint, ti tinyint, tm time, "
              "ts timestamp, vi varint, fl frozen<list<int>>, tu tuple<int, text>, ve vector<float, 3>, "
              "\"Mixed Case\" text, \"select\" int, PRIMARY KEY (k, t))")
    s.execute("INSERT INTO mig.types (k, t, a, b, bo, d, de, du, db, f, i, si, ti, tm, ts, vi, fl, tu, ve, "
              "\"Mixed Case\", \"select\") "
              "VALUES (uuid(), now(), 'asc', 0xcafe, true, '2026-11-28', 12.345, 1h2m, 1.5, 2.5, "
              "'10.0.0.1', 7, 3, '12:34:56', '2026-11-28 12:00:00+0000', 123456789012345678901234567890, "
              "[1, 2], (1, 'x'), [1.0, 2.0, 3.0], 'quoted', 9) USING TIMESTAMP 42")
    s.execute("CREATE TABLE mig.counts (k int PRIMARY KEY, hits counter, misses counter)")
    s.execute("CREATE TABLE mig.bulk (k int, c int, v text, PRIMARY KEY (k, c))")
    s.execute("CREATE MATERIALIZED VIEW mig.bulk_by_v AS SELECT k, c, v FROM mig.bulk "
              "WHERE v IS NOT NULL AND k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (v, k, c)")
    # Static counters: with rows, and a partition of static cells only.
    s.execute("CREATE TABLE mig.scounts (k int, c int, total counter static, hits counter, "
              "PRIMARY KEY (k, c))")
    s.execute("UPDATE mig.scounts SET total = total + 10 WHERE k = 1")
    s.execute("UPDATE mig.scounts SET hits = hits + 1 WHERE k = 1 AND c = 1")
    s.execute("UPDATE mig.scounts SET hits = hits + 2 WHERE k = 1 AND c = 2")
    s.execute("UPDATE mig.scounts SET total = total - 4 WHERE k = 2")
    # Static non-frozen lists: elements of two write times, one partition
    # with rows and one of static cells only.
    s.execute("CREATE TABLE mig.slists (k int, c int, sl list<int> static, v int, PRIMARY KEY (k, c))")
    s.execute("UPDATE mig.slists USING TIMESTAMP 100 SET sl = sl + [1, 2] WHERE k = 1")
    s.execute("UPDATE mig.slists USING TIMESTAMP 200 SET sl = sl + [3] WHERE k = 1")
    s.execute("INSERT INTO mig.slists (k, c, v) VALUES (1, 1, 10) USING TIMESTAMP 300")
    s.execute("INSERT INTO mig.slists (k, c, v) VALUES (1, 2, 20) USING TIMESTAMP 300")
    s.execute("UPDATE mig.slists USING TIMESTAMP 400 SET sl = sl + [9] WHERE k = 2")
    s.execute("INSERT INTO mig.main (k, c, v, n, a) VALUES (1, 1, 'one', 10, {street: 'Main', zip: 42}) "
              "USING TIMESTAMP 1000")
    s.execute("UPDATE mig.main USING TIMESTAMP 2000 AND TTL 3600 SET v = 'fading' WHERE k = 1 AND c = 2")
    s.execute("UPDATE mig.main USING TIMESTAMP 3000 SET s = s + {1, 2}, m = m + {'x': 1}, l = l + [7, 8] "
              "WHERE k = 2 AND c = 1")
    s.execute("UPDATE mig.main USING TIMESTAMP 4000 AND TTL 7200 SET s = s + {3}, l = l + [9] "
              "WHERE k = 2 AND c = 1")
    s.execute("UPDATE mig.main USING TIMESTAMP 8000 AND TTL 5000 SET m = m + {'y': 2, 'z': 3} "
              "WHERE k = 5 AND c = 1")
    s.execute("UPDATE mig.main USING TIMESTAMP 5000 SET st = 'shared' WHERE k = 2")
    s.execute("UPDATE mig.main USING TIMESTAMP 5000 SET st = 'alone' WHERE k = 3")
    s.execute("INSERT INTO mig.main (k, c, v) VALUES (4, 1, 'deleted') USING TIMESTAMP 6000")
    s.execute("DELETE FROM mig.main USING TIMESTAMP 7000 WHERE k = 4 AND c = 1")
    s.execute("UPDATE mig.counts SET hits = hits + 5, misses = misses + 2 WHERE k = 1")
    s.execute("UPDATE mig.counts SET hits = hits - 3 WHERE k = 2")
    insert = s.prepare("INSERT INTO mig.bulk (k, c, v) VALUES (?, ?, ?) USING TIMESTAMP ?")
    rows = [(i % 500, i, "v%d" % i, 10_000 + i) for i in range(BULK_ROWS)]
    # Each write is waited for (a loaded machine can time one out: it is
    # tried again, as an application would, up to three times).
    for _ in range(3):
        results = execute_concurrent_with_args(s, insert, rows, concurrency=32, raise_on_first_error=False)
        rows = [row for row, (ok, _) in zip(rows, results) if not ok]
        if not rows:
            break
    assert not rows, "%d bulk rows were not written" % len(rows)
    assert s.execute("SELECT count(*) FROM mig.bulk").one()[0] == BULK_ROWS


def migrate(checkpoint, **popen):
    return subprocess.Popen(
        [BIN, "migrate", "--from", "127.0.0.1:%d" % CASS_PORT, "--to", "127.0.0.1:%d" % PORT,
         *SOURCE_LOGIN, "--keyspaces", "mig", "--checkpoint", checkpoint, "--ranges", str(RANGES), "--jobs", "2",
         "--page-size", "100"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def ranges_done(checkpoint, table):
    try:
        with open(checkpoint) as f:
            return len(json.load(f)["tables"].get(table, {}).get("done", []))
    except (OSError, ValueError):
        return 0


def rows(session, query):
    return sorted(tuple(r) for r in session.execute(query))


def test_migrate_keeps_write_times_ttls_and_resumes_after_kill(cassandra, rocksandra):
    node, target = rocksandra
    fill_source(cassandra)
    with tempfile.TemporaryDirectory() as d:
        checkpoint = os.path.join(d, "checkpoint.json")

        # Killed half way through mig.bulk (tables go in name order: bulk first).
        first = migrate(checkpoint)
        deadline = time.monotonic() + 120
        while ranges_done(checkpoint, "mig.bulk") < 4:
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "no progress"
            time.sleep(0.02)
        first.send_signal(signal.SIGKILL)
        first.wait()
        killed_at = ranges_done(checkpoint, "mig.bulk")
        assert 4 <= killed_at < RANGES

        second = migrate(checkpoint)
        out, err = second.communicate(timeout=300)
        assert second.returncode == 0, err
        # The resumed run started where the checkpoint left off.
        first_line = re.search(r"mig\.bulk: (\d+)/%d ranges" % RANGES, err)
        assert first_line and int(first_line.group(1)) > killed_at, err
        assert ranges_done(checkpoint, "mig.bulk") == RANGES
        for table in ("bulk", "counts", "main", "scounts", "slists", "types", "udts"):
            assert re.search(r"mig\.%s: source (\d+) rows .*target \1 rows .*: same" % table, out), out
        assert "DIFFERENT" not in out

    source = cassandra
    main = ("SELECT k, c, v, writetime(v), n, writetime(n), st, writetime(st), s, writetime(s), m, "
            "writetime(m), l, writetime(l), a, writetime(a) FROM mig.main")
    assert rows(target, main) == rows(source, main)
    assert (4, 1) not in [(r.k, r.c) for r in target.execute("SELECT k, c FROM mig.main")]
    # Element write times survive: the TTL'd ones of 4000, the others of 3000.
    lists = target.execute("SELECT l, writetime(l), s, writetime(s) FROM mig.main WHERE k = 2 AND c = 1").one()
    assert lists[0] == [7, 8, 9] and lists[1] == [3000, 3000, 4000]
    assert lists[2] == {1, 2, 3} and lists[3] == [3000, 3000, 4000]
    # The TTL is kept (it counts down on both sides).
    ttl_source = source.execute("SELECT ttl(v) FROM mig.main WHERE k = 1 AND c = 2").one()[0]
    ttl_target = target.execute("SELECT ttl(v) FROM mig.main WHERE k = 1 AND c = 2").one()[0]
    assert 0 < ttl_target <= 3600 and abs(ttl_source - ttl_target) <= 5
    # A collection's element TTLs too (all set here: the Python driver cannot
    # decode the null TTL of an element without one).
    element_ttl = "SELECT ttl(m) FROM mig.main WHERE k = 5 AND c = 1"
    ttls_source, ttls_target = source.execute(element_ttl).one()[0], target.execute(element_ttl).one()[0]
    assert len(ttls_target) == 2 and all(0 < t <= 5000 for t in ttls_target)
    assert all(abs(a - b) <= 5 for a, b in zip(ttls_source, ttls_target))
    # Counters: as deltas, not counted twice by the resumed run.
    assert rows(target, "SELECT k, hits, misses FROM mig.counts") == [(1, 5, 2), (2, -3, None)]
    scounts = "SELECT k, c, total, hits FROM mig.scounts"
    assert rows(target, scounts) == rows(source, scounts) == [(1, 1, 10, 1), (1, 2, 10, 2), (2, None, -4, None)]
    # Static lists: each partition's once, with its elements' write times.
    slists = "SELECT k, c, sl, writetime(sl), v FROM mig.slists"
    assert rows(target, slists) == rows(source, slists)
    assert rows(target, "SELECT k, sl, writetime(sl) FROM mig.slists WHERE k = 1 LIMIT 1") == \
        [(1, [1, 2, 3], [100, 100, 200])]
    # The view, created on the target after the data, holds the source's rows.
    view = "SELECT v, k, c FROM mig.bulk_by_v"
    deadline = time.monotonic() + 60
    while len(rows(target, view)) < BULK_ROWS:
        assert time.monotonic() < deadline, "the view was not built"
        time.sleep(0.5)
    assert rows(target, view) == rows(source, view)
    bulk = "SELECT k, c, v, writetime(v) FROM mig.bulk"
    assert len(rows(target, bulk)) == BULK_ROWS
    assert rows(target, bulk) == rows(source, bulk)
    every_type = ("SELECT k, t, a, b, bo, d, de, du, db, f, i, si, ti, tm, ts, vi, fl, tu, ve, "
                  "writetime(ve), \"Mixed Case\", writetime(\"select\") FROM mig.types")
    assert rows(target, every_type) == rows(source, every_type)
    # A non-frozen UDT field by field, each with its write time and TTL.
    udts = "SELECT k, u, writetime(u.street), writetime(u.zip) FROM mig.udts"
    assert rows(target, udts) == rows(source, udts)
    assert rows(target, udts)[0][2:] == (100, 200)
    zip_ttl = "SELECT ttl(u.zip) FROM mig.udts WHERE k = 1"
    assert abs(source.execute(zip_ttl).one()[0] - target.execute(zip_ttl).one()[0]) <= 5
    # The index, created after the data, finds the copied rows.
    assert rows(target, "SELECT k, c FROM mig.main WHERE v = 'one'") == [(1, 1)]
    # The schema came over: the UDT and the table's columns.
    udt = target.execute("SELECT field_names FROM system_schema.types WHERE keyspace_name = 'mig' "
                         "AND type_name = 'addr'").one()
    assert udt.field_names == ["street", "zip"]


def test_a_target_table_with_other_columns_refuses_the_run_before_any_data(cassandra, rocksandra):
    node, target = rocksandra
    cassandra.execute("DROP KEYSPACE IF EXISTS migref")
    cassandra.execute("CREATE KEYSPACE migref WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    cassandra.execute("CREATE TABLE migref.fine (k int PRIMARY KEY, v int)")
    cassandra.execute("INSERT INTO migref.fine (k, v) VALUES (1, 1)")
    cassandra.execute("CREATE TABLE migref.other (k int, c int, sl list<int> static, PRIMARY KEY (k, c))")
    target.execute("CREATE KEYSPACE migref WITH replication = "
                   "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    target.execute("CREATE TABLE migref.other (k int PRIMARY KEY, v int)")
    try:
        with tempfile.TemporaryDirectory() as d:
            run = subprocess.run(
                [BIN, "migrate", "--from", "127.0.0.1:%d" % CASS_PORT, "--to", "127.0.0.1:%d" % PORT,
                 *SOURCE_LOGIN, "--keyspaces", "migref", "--checkpoint", os.path.join(d, "c.json")],
                capture_output=True, text=True, timeout=120)
        assert run.returncode == 1
        assert ("refused: table migref.other exists on the target with other columns: "
                "drop it or make it the same") in run.stderr, run.stderr
        # The schema step stopped the run: no data was copied.
        assert list(target.execute("SELECT * FROM migref.fine")) == []
    finally:
        cassandra.execute("DROP KEYSPACE migref")


def test_login_on_a_target_with_password_authentication(cassandra):
    with tempfile.TemporaryDirectory() as d:
        node = Node(d, extra_yaml="authenticator: PasswordAuthenticator\n"
                                  "auth_bcrypt_gensalt_log2_rounds: 4\n")
        node.start()
        try:
            def run(password):
                return subprocess.run(
                    [BIN, "migrate", "--from", "127.0.0.1:%d" % CASS_PORT, "--to", "127.0.0.1:%d" % PORT,
                     *SOURCE_LOGIN, "--keyspaces", "migauth", "--to-username", "cassandra", "--to-password", password,
                     "--checkpoint", os.path.join(d, "c-%s.json" % password)],
                    capture_output=True, text=True, timeout=120)
            refused = run("wrong")
            assert refused.returncode == 1
            assert "AUTH_RESPONSE" in refused.stderr and "password" in refused.stderr.lower()
            done = run("cassandra")
            assert done.returncode == 0, done.stderr
            assert re.search(r"migauth\.t: source 3 rows .*target 3 rows .*: same", done.stdout), done.stdout
        finally:
            node.proc.kill()
            node.proc.wait()


@pytest.fixture(autouse=True, scope="module")
def _auth_source(cassandra):
    cassandra.execute("DROP KEYSPACE IF EXISTS migauth")
    cassandra.execute("CREATE KEYSPACE migauth WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    cassandra.execute("CREATE TABLE migauth.t (k int PRIMARY KEY, v text)")
    for k in range(3):
        cassandra.execute("INSERT INTO migauth.t (k, v) VALUES (%s, 'x')", (k,))
    yield
    cassandra.execute("DROP KEYSPACE migauth")

"""`nodetool import KEYSPACE TABLE DIRECTORY`: one table restored from a
snapshot into the running node, through the real nodetool and a real
driver. Imported cells reconcile with the live ones by Cassandra's rules
(a newer value or tombstone wins), a TRUNCATE or a DROP and re-CREATE
(new table id, columns in another order) is undone, the table's index
finds the imported rows, the snapshot's files are left as they were, and
mistakes get Cassandra's errors.

    ROCKSANDRA_BIN=target/debug/rocksandra pytest tests/process/test_import.py
"""

import os
import socket
import subprocess
import tempfile
import time

import pytest
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import RoundRobinPolicy

BIN = os.environ.get("ROCKSANDRA_BIN", "target/debug/rocksandra")
PORT = int(os.environ.get("ROCKSANDRA_IMPORT_PORT", "9301"))
ADMIN_PORT = int(os.environ.get("ROCKSANDRA_IMPORT_ADMIN_PORT", "9321"))

TABLE = ("CREATE TABLE ks.t (p int, c int, v text, s int static, tags set<text>, "
         "PRIMARY KEY (p, c))")
# The same table declared in another order: every column gets another id.
TABLE_REORDERED = ("CREATE TABLE ks.t (p int, c int, extra int, tags set<text>, "
                   "s int static, v text, PRIMARY KEY (p, c))")


def port_taken(port):
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


def wait_for_port(port, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_taken(port):
            return
        time.sleep(0.05)
    raise AssertionError("server did not listen on %d within %ds" % (port, timeout))


@pytest.fixture(scope="module")
def server():
    for port in (PORT, ADMIN_PORT):
        assert not port_taken(port), "127.0.0.1:%d is already taken" % port
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "data")
        log = open(os.path.join(d, "server.log"), "wb")
        proc = subprocess.Popen(
            [BIN, "--data-dir", data, "--listen-address", "127.0.0.1",
             "--native-port", str(PORT), "--prometheus-port", "0",
             "--admin-port", str(ADMIN_PORT)],
            stdout=log, stderr=log)
        try:
            wait_for_port(PORT)
            wait_for_port(ADMIN_PORT)
            yield data
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            log.close()


@pytest.fixture(scope="module")
def session(server):
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy())
    cluster = Cluster(["127.0.0.1"], port=PORT, protocol_version=5,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile}, connect_timeout=10)
    yield cluster.connect()
    cluster.shutdown()


def nodetool(*args):
    return subprocess.run([BIN, "nodetool", "-p", str(ADMIN_PORT)] + list(args),
                          capture_output=True, text=True, timeout=120)


def ok(*args):
    r = nodetool(*args)
    assert r.returncode == 0, "nodetool %s: %s%s" % (" ".join(args), r.stdout, r.stderr)
    return r.stdout


def original(p, c):
    return "v%d-%d" % (p, c)


def fill(session):
    for p in range(3):
        session.execute("INSERT INTO ks.t (p, s) VALUES (%s, %s)", (p, p * 10))
        for c in range(5):
            ttl = " USING TTL 3600" if (p, c) == (0, 0) else ""
            session.execute("INSERT INTO ks.t (p, c, v, tags) VALUES (%s, %s, %s, %s)" + ttl,
                            (p, c, original(p, c), {"t%d" % c, "all"}))


def rows(session):
    return {(r.p, r.c): (r.v, r.s, r.tags)
            for r in session.execute("SELECT p, c, v, s, tags FROM ks.t")}


def files_of(directory):
    """Every file of the snapshot with its size and modification time."""
    out = {}
    for name in sorted(os.listdir(directory)):
        st = os.stat(os.path.join(directory, name))
        out[name] = (st.st_size, st.st_mtime_ns)
    return out


def assert_all_original(session):
    got = rows(session)
    assert set(got) == {(p, c) for p in range(3) for c in range(5)}
    for (p, c), (v, s, tags) in got.items():
        assert (v, s, tags) == (original(p, c), p * 10, {"t%d" % c, "all"}), (p, c)
    ttl = session.execute("SELECT TTL(v) FROM ks.t WHERE p = 0 AND c = 0").one()[0]
    assert 0 < ttl <= 3600


def test_import_restores_one_table(server, session):
    session.execute("CREATE KEYSPACE ks WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute(TABLE)
    session.execute("CREATE INDEX t_v ON ks.t (v)")
    fill(session)
    ok("snapshot", "-t", "T")
    snapshot = os.path.join(server, "snapshots", "T")
    before = files_of(snapshot)

    # (a) Newer deletions and values win over the snapshot's older cells.
    session.execute("DELETE FROM ks.t WHERE p = 1 AND c = 1")
    session.execute("DELETE FROM ks.t WHERE p = 2")
    session.execute("UPDATE ks.t SET v = 'new' WHERE p = 0 AND c = 2")
    session.execute("UPDATE ks.t SET s = 99 WHERE p = 0")
    session.execute("UPDATE ks.t SET tags = tags + {'added'} WHERE p = 1 AND c = 3")
    assert ok("import", "ks", "t", snapshot) == ""
    got = rows(session)
    assert (1, 1) not in got
    assert not any(p == 2 for p, _ in got)
    assert got[(0, 2)] == ("new", 99, {"t2", "all"})
    assert got[(1, 3)] == (original(1, 3), 10, {"t3", "all", "added"})
    assert got[(1, 4)] == (original(1, 4), 10, {"t4", "all"})
    assert got[(0, 0)][0] == original(0, 0)
    assert len(got) == 9
    ttl = session.execute("SELECT TTL(v) FROM ks.t WHERE p = 0 AND c = 0").one()[0]
    assert 0 < ttl <= 3600
    assert files_of(snapshot) == before, "the import changed the snapshot"

    # (b) TRUNCATE, then import: every row as it was at the snapshot.
    session.execute("TRUNCATE ks.t")
    assert rows(session) == {}
    ok("import", "ks", "t", snapshot)
    assert_all_original(session)
    found = list(session.execute("SELECT p, c FROM ks.t WHERE v = 'v2-4'"))
    assert [(r.p, r.c) for r in found] == [(2, 4)]

    # (c) DROP and CREATE again (another table id, other column ids, one
    # column more): the rows come back in their columns.
    session.execute("DROP TABLE ks.t")
    session.execute(TABLE_REORDERED)
    session.execute("CREATE INDEX t_v ON ks.t (v)")
    ok("import", "ks", "t", snapshot)
    assert_all_original(session)
    assert all(r.extra is None for r in session.execute("SELECT extra FROM ks.t"))
    found = list(session.execute("SELECT p, c FROM ks.t WHERE v = 'v1-2'"))
    assert [(r.p, r.c) for r in found] == [(1, 2)]
    assert files_of(snapshot) == before, "the import changed the snapshot"


def test_tables_that_do_not_fit_refuse_and_a_dropped_column_is_left_out(server, session):
    snapshot = os.path.join(server, "snapshots", "T")
    refusals = (
        ("v int, s int static, tags set<text>, PRIMARY KEY (p, c))",
         "column v is regular text in the snapshot and regular int in the live table"),
        ("v text, s int, tags set<text>, PRIMARY KEY (p, c))",
         "column s is static int in the snapshot and regular int in the live table"),
        ("v text, s int static, tags set<text>, PRIMARY KEY (p, c)) "
         "WITH CLUSTERING ORDER BY (c DESC)",
         "the primary key of ks.t in the snapshot is not the live table's"),
    )
    for columns, error in refusals:
        session.execute("DROP TABLE ks.t")
        session.execute("CREATE TABLE ks.t (p int, c int, " + columns)
        r = nodetool("import", "ks", "t", snapshot)
        assert r.returncode != 0 and error in r.stderr, r.stderr
        assert list(session.execute("SELECT p FROM ks.t")) == []

    session.execute("DROP TABLE ks.t")
    session.execute("CREATE TABLE ks.t (p int, c int, v text, s int static, "
                    "PRIMARY KEY (p, c))")
    r = nodetool("import", "ks", "t", snapshot)
    assert r.returncode != 0
    assert "Some directories failed to import, check server logs for details:" in r.stderr
    assert snapshot in r.stderr and "Unknown column tags during deserialization" in r.stderr
    assert list(session.execute("SELECT p FROM ks.t")) == []

    session.execute("ALTER TABLE ks.t ADD tags set<text>")
    session.execute("ALTER TABLE ks.t DROP tags")
    ok("import", "ks", "t", snapshot)
    got = {(r.p, r.c): (r.v, r.s) for r in session.execute("SELECT p, c, v, s FROM ks.t")}
    assert got == {(p, c): (original(p, c), p * 10) for p in range(3) for c in range(5)}


def test_mistakes_get_cassandras_errors(server, session):
    snapshot = os.path.join(server, "snapshots", "T")
    for keyspace, table in (("nosuch", "t"), ("ks", "nosuch")):
        r = nodetool("import", keyspace, table, snapshot)
        assert r.returncode != 0
        assert "ColumnFamilyStore for %s/%s not found." % (keyspace, table) in r.stderr

    missing = os.path.join(server, "no-such-snapshot")
    r = nodetool("import", "ks", "t", missing)
    assert r.returncode != 0
    assert "Directory %s does not exist" % missing in r.stderr
    assert "Some directories failed" not in r.stderr

    session.execute("CREATE TABLE ks.later (p int PRIMARY KEY)")
    r = nodetool("import", "ks", "later", snapshot)
    assert r.returncode != 0
    assert "has no table ks.later" in r.stderr

    r = nodetool("import", "ks", "t")
    assert r.returncode != 0
    assert "import requires keyspace, table name and directories" in r.stderr

    r = nodetool("refresh", "ks", "t")
    assert r.returncode != 0
    assert "nodetool refresh is deprecated, use nodetool import instead" in r.stdout
    assert "nodetool import ks t" in r.stderr


def test_a_vector_index_finds_the_imported_rows(server, session):
    session.execute("CREATE TABLE ks.vec (p int PRIMARY KEY, e vector<float, 2>)")
    session.execute("CREATE INDEX vec_e ON ks.vec (e) USING 'sai'")
    for p in range(3):
        session.execute("INSERT INTO ks.vec (p, e) VALUES (%s, [%s, 1.0])", (p, float(p)))
    ok("snapshot", "-t", "V")
    session.execute("TRUNCATE ks.vec")
    session.execute("INSERT INTO ks.vec (p, e) VALUES (3, [3.0, 1.0])")
    ann = "SELECT p FROM ks.vec ORDER BY e ANN OF [0.0, 1.0] LIMIT 4"
    # This query builds the graph of the one row there is now.
    assert [r.p for r in session.execute(ann)] == [3]
    ok("import", "ks", "vec", os.path.join(server, "snapshots", "V"))
    assert [r.p for r in session.execute(ann)] == [0, 1, 2, 3]

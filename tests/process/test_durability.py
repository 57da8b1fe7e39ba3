"""The real `rocksandra` process on RocksDB: schema and data survive a clean
stop (SIGTERM) and, with `commitlog_sync: batch`, every acknowledged write
survives kill -9. Each test starts its own server on its own data directory.

    ROCKSANDRA_BIN=target/debug/rocksandra pytest tests/process
"""

import os
import signal
import socket
import subprocess
import tempfile
import time

import pytest
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import RoundRobinPolicy

BIN = os.environ.get("ROCKSANDRA_BIN", "target/debug/rocksandra")
PORT = int(os.environ.get("ROCKSANDRA_PROCESS_PORT", "9043"))


def wait_for_port(port, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("server did not listen on %d within %ds" % (port, timeout))


class Node:
    def __init__(self, data_dir, sync="batch", extra_yaml=""):
        self.data_dir = data_dir
        self.config = os.path.join(data_dir, "rocksandra.yaml")
        with open(self.config, "w") as f:
            f.write("commitlog_sync: %s\n" % sync)
            if sync == "periodic":
                f.write("commitlog_sync_period: 10000ms\n")
            f.write(extra_yaml)
        self.proc = None

    def start(self):
        self.log = open(os.path.join(self.data_dir, "server.log"), "ab")
        self.proc = subprocess.Popen(
            [BIN, "--config", self.config, "--data-dir", os.path.join(self.data_dir, "data"),
             "--listen-address", "127.0.0.1", "--native-port", str(PORT),
             # No metrics endpoint: 9180 may be taken by another server on this host.
             "--prometheus-port", "0", "--admin-port", "0"],
            stdout=self.log, stderr=self.log)
        wait_for_port(PORT)

    def stop(self, sig):
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=30)
        self.log.close()
        return code

    def session(self):
        profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy())
        cluster = Cluster(["127.0.0.1"], port=PORT, protocol_version=5,
                          execution_profiles={EXEC_PROFILE_DEFAULT: profile}, connect_timeout=10)
        return cluster, cluster.connect()


@pytest.fixture
def node():
    with tempfile.TemporaryDirectory() as d:
        n = Node(d)
        yield n
        if n.proc and n.proc.poll() is None:
            n.proc.kill()
            n.proc.wait()


def create_schema(session):
    session.execute("CREATE KEYSPACE ks WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TYPE ks.addr (street text, zip int)")
    session.execute("CREATE TABLE ks.t (p int, c int, v text, s set<int>, a frozen<addr>, "
                    "PRIMARY KEY (p, c)) WITH comment = 'kept' AND gc_grace_seconds = 77")


def test_clean_stop_keeps_schema_and_data(node):
    node.start()
    cluster, session = node.session()
    create_schema(session)
    for i in range(200):
        session.execute("INSERT INTO ks.t (p, c, v, s) VALUES (%s, %s, %s, %s)",
                        (i % 7, i, "v%d" % i, {i, i + 1}))
    session.execute("DELETE FROM ks.t WHERE p = 3")
    cluster.shutdown()
    assert node.stop(signal.SIGTERM) == 0

    node.start()
    cluster, session = node.session()
    try:
        table = cluster.metadata.keyspaces["ks"].tables["t"]
        assert table.options["comment"] == "kept"
        assert table.options["gc_grace_seconds"] == 77
        assert "addr" in cluster.metadata.keyspaces["ks"].user_types
        rows = list(session.execute("SELECT p, c, v, s FROM ks.t"))
        expected = sorted((i % 7, i) for i in range(200) if i % 7 != 3)
        assert sorted((r.p, r.c) for r in rows) == expected
        for r in rows:
            assert r.v == "v%d" % r.c and r.s == {r.c, r.c + 1}
    finally:
        cluster.shutdown()


def test_kill_9_loses_no_acknowledged_write(node):
    node.start()
    cluster, session = node.session()
    create_schema(session)
    insert = session.prepare("INSERT INTO ks.t (p, c, v) VALUES (?, ?, ?)")
    acknowledged = []
    for i in range(300):
        session.execute(insert, (i % 5, i, "x%d" % i))
        acknowledged.append(i)
    # No clean shutdown: SIGKILL right after the last acknowledgement.
    node.proc.kill()
    node.proc.wait()
    node.log.close()
    cluster.shutdown()

    node.start()
    cluster, session = node.session()
    try:
        rows = {r.c: r.v for r in session.execute("SELECT c, v FROM ks.t")}
        missing = [i for i in acknowledged if rows.get(i) != "x%d" % i]
        assert not missing, "lost %d acknowledged writes, e.g. %s" % (len(missing), missing[:5])
    finally:
        cluster.shutdown()


def test_views_survive_kill_9_and_drivers_see_them():
    """A materialized view through the Python driver: its metadata (read from
    system_schema.views), its rows kept in step by prepared writes, and both
    after kill -9 (the view's rows are written with the base's, in one
    batch of the engine)."""
    with tempfile.TemporaryDirectory() as d:
        n = Node(d, extra_yaml="materialized_views_enabled: true\n")
        try:
            n.start()
            cluster, session = n.session()
            session.execute("CREATE KEYSPACE ks WITH replication = "
                            "{'class': 'SimpleStrategy', 'replication_factor': 1}")
            session.execute("CREATE TABLE ks.users (id int PRIMARY KEY, name text, state text)")
            result = session.execute(
                "CREATE MATERIALIZED VIEW ks.by_state AS SELECT * FROM ks.users "
                "WHERE state IS NOT NULL AND id IS NOT NULL PRIMARY KEY (state, id)")
            assert result.response_future.warnings == [
                "Materialized views are experimental and are not recommended for production use."]
            cluster.refresh_schema_metadata()
            keyspace = cluster.metadata.keyspaces["ks"]
            view = keyspace.views["by_state"]
            assert view.base_table_name == "users"
            assert view.include_all_columns
            assert [c.name for c in view.partition_key] == ["state"]
            assert [c.name for c in view.clustering_key] == ["id"]
            assert "by_state" in keyspace.tables["users"].views
            assert "CREATE MATERIALIZED VIEW ks.by_state AS" in keyspace.export_as_string()
            insert = session.prepare("INSERT INTO ks.users (id, name, state) VALUES (?, ?, ?)")
            for i in range(200):
                session.execute(insert, (i, "user%d" % i, "S%d" % (i % 4)))
            move = session.prepare("UPDATE ks.users SET state = ? WHERE id = ?")
            for i in range(0, 200, 2):
                session.execute(move, ("EVEN", i))
            session.execute("DELETE FROM ks.users WHERE id = 1")
            cluster.shutdown()
            assert n.stop(signal.SIGKILL) != 0

            n.start()
            cluster, session = n.session()
            select = session.prepare("SELECT id FROM ks.by_state WHERE state = ?")
            select.fetch_size = 30  # several pages
            rows = session.execute(select, ("EVEN",))
            assert sorted(r.id for r in rows) == list(range(0, 200, 2))
            odd = [r.id for r in session.execute("SELECT id FROM ks.by_state WHERE state = 'S1'")]
            assert odd == list(range(5, 200, 4))  # 1 was deleted
            assert session.execute("SELECT count(*) FROM ks.by_state").one()[0] == 199
            cluster.shutdown()
        finally:
            if n.proc and n.proc.poll() is None:
                n.proc.kill()
                n.proc.wait()


def restore(data, snapshot):
    """Cassandra's "restore from a snapshot", for a node that is stopped:
    the snapshot becomes the storage directory, its schema the node's."""
    import shutil
    shutil.rmtree(os.path.join(data, "rocksdb"))
    shutil.copytree(snapshot, os.path.join(data, "rocksdb"))
    shutil.move(os.path.join(data, "rocksdb", "schema.json"), os.path.join(data, "schema.json"))
    os.remove(os.path.join(data, "rocksdb", "schema.cql"))


def test_auto_snapshot_before_drop_and_truncate_restores_the_table(node):
    node.start()
    cluster, session = node.session()
    create_schema(session)
    for i in range(50):
        session.execute("INSERT INTO ks.t (p, c, v) VALUES (%s, %s, %s)", (i % 3, i, "v%d" % i))
    session.execute("TRUNCATE ks.t")
    session.execute("INSERT INTO ks.t (p, c, v) VALUES (0, 1000, 'after')")
    session.execute("DROP TABLE ks.t")
    cluster.shutdown()
    assert node.stop(signal.SIGTERM) == 0

    data = os.path.join(node.data_dir, "data")
    snapshots = sorted(os.listdir(os.path.join(data, "snapshots")))
    assert [s.split("-")[0] for s in snapshots] == ["dropped", "truncated"], snapshots
    assert all(s.endswith("-t") for s in snapshots), snapshots
    dropped = os.path.join(data, "snapshots", snapshots[0])
    with open(os.path.join(dropped, "schema.cql")) as f:
        cql = f.read()
    assert "CREATE TABLE ks.t (" in cql and "CREATE TYPE ks.addr" in cql, cql

    # Back to before the DROP: the row written after the TRUNCATE.
    restore(data, dropped)
    node.start()
    cluster, session = node.session()
    try:
        rows = list(session.execute("SELECT p, c, v FROM ks.t"))
        assert [(r.p, r.c, r.v) for r in rows] == [(0, 1000, "after")]
    finally:
        cluster.shutdown()
    assert node.stop(signal.SIGTERM) == 0

    # Back to before the TRUNCATE: the 50 rows.
    restore(data, os.path.join(data, "snapshots", snapshots[1]))
    node.start()
    cluster, session = node.session()
    try:
        rows = list(session.execute("SELECT p, c, v FROM ks.t"))
        assert sorted((r.p, r.c) for r in rows) == sorted((i % 3, i) for i in range(50))
    finally:
        cluster.shutdown()


def test_auto_snapshot_false_takes_none():
    with tempfile.TemporaryDirectory() as d:
        node = Node(d, extra_yaml="auto_snapshot: false\n")
        node.start()
        try:
            cluster, session = node.session()
            create_schema(session)
            session.execute("TRUNCATE ks.t")
            session.execute("DROP KEYSPACE ks")
            cluster.shutdown()
        finally:
            assert node.stop(signal.SIGTERM) == 0
        assert not os.path.exists(os.path.join(d, "data", "snapshots"))


def test_tombstone_thresholds_warn_then_fail():
    from cassandra import ReadFailure
    with tempfile.TemporaryDirectory() as d:
        node = Node(d, sync="periodic",
                    extra_yaml="tombstone_warn_threshold: 10\ntombstone_failure_threshold: 50\n")
        node.start()
        try:
            cluster, session = node.session()
            session.execute("CREATE KEYSPACE ks WITH replication = "
                            "{'class': 'SimpleStrategy', 'replication_factor': 1}")
            session.execute("CREATE TABLE ks.queue (k int, c int, v text, PRIMARY KEY (k, c))")
            insert = session.prepare("INSERT INTO ks.queue (k, c, v) VALUES (1, ?, 'x')")
            delete = session.prepare("DELETE FROM ks.queue WHERE k = 1 AND c = ?")
            for c in range(60):
                session.execute(insert, (c,))
            for c in range(20):
                session.execute(delete, (c,))
            select = session.prepare("SELECT c FROM ks.queue WHERE k = ?")
            # A single partition, prepared and simple, and a range scan.
            for statement, args in ((select, (1,)), ("SELECT c FROM ks.queue WHERE k = 1", None),
                                    ("SELECT c FROM ks.queue", None)):
                rs = session.execute(statement, args)
                assert [r.c for r in rs] == list(range(20, 60))
                warnings = rs.response_future.warnings or []
                assert any("40 live rows and 20 tombstone cells" in w
                           and "tombstone_warn_threshold" in w for w in warnings), warnings
            for c in range(20, 51):
                session.execute(delete, (c,))
            for statement, args in ((select, (1,)), ("SELECT c FROM ks.queue WHERE k = 1", None),
                                    ("SELECT c FROM ks.queue", None)):
                with pytest.raises(ReadFailure) as failure:
                    session.execute(statement, args)
                assert "READ_TOO_MANY_TOMBSTONES" in str(failure.value), failure.value
            cluster.shutdown()
        finally:
            assert node.stop(signal.SIGTERM) == 0
        with open(os.path.join(d, "server.log")) as f:
            log = f.read()
        assert "Scanned over 50 tombstones during query" in log


# (query, rows, tombstones counted) as Apache Cassandra 5.0.6 answered them
# with tombstone_warn_threshold: 1 (None: no warning, at most 1).
COUNTED_AS_CASSANDRA = [
    ("SELECT * FROM tc.t WHERE k = 1", 4, 3),           # 2 deleted cells, 1 deleted row
    ("SELECT * FROM tc.t WHERE k = 2", 6, 2),           # a range tombstone's 2 markers
    ("SELECT * FROM tc.t WHERE k = 2 AND c >= 6", 4, None),  # a slice beside it
    ("SELECT * FROM tc.t WHERE k = 3", 0, 6),           # 3 rows of 2 expired cells
    ("SELECT * FROM tc.t WHERE k = 4", 0, None),        # a partition deletion
    ("SELECT * FROM tc.t WHERE k = 5", 1, 2),           # a static cell and a cell
    ("SELECT k, c, v FROM tc.t WHERE k = 5", 1, 2),     # the static row read whole
    ("SELECT * FROM tc.t WHERE k = 6", 3, None),        # rows deleted, then written again
    ("SELECT * FROM tc.t", 14, 13),                     # a scan adds them up
]


def test_tombstones_are_counted_as_cassandra_counts():
    import re
    with tempfile.TemporaryDirectory() as d:
        node = Node(d, sync="periodic", extra_yaml="tombstone_warn_threshold: 1\n")
        node.start()
        try:
            cluster, s = node.session()
            s.execute("CREATE KEYSPACE tc WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}")
            s.execute("CREATE TABLE tc.t (k int, c int, v int, w int, s int static, "
                      "PRIMARY KEY (k, c))")
            for c in range(5):
                s.execute("INSERT INTO tc.t (k, c, v, w) VALUES (1, %d, 1, 1)" % c)
            s.execute("UPDATE tc.t SET v = null WHERE k = 1 AND c = 0")
            s.execute("UPDATE tc.t SET v = null WHERE k = 1 AND c = 1")
            s.execute("DELETE FROM tc.t WHERE k = 1 AND c = 2")
            for c in range(10):
                s.execute("INSERT INTO tc.t (k, c, v) VALUES (2, %d, 1)" % c)
            s.execute("DELETE FROM tc.t WHERE k = 2 AND c >= 2 AND c <= 5")
            for c in range(3):
                s.execute("INSERT INTO tc.t (k, c, v, w) VALUES (3, %d, 1, 1) USING TTL 1" % c)
            for c in range(4):
                s.execute("INSERT INTO tc.t (k, c, v) VALUES (4, %d, 1)" % c)
            s.execute("DELETE FROM tc.t WHERE k = 4")
            s.execute("INSERT INTO tc.t (k, c, v, s) VALUES (5, 0, 1, 1)")
            s.execute("UPDATE tc.t SET s = null WHERE k = 5")
            s.execute("DELETE v FROM tc.t WHERE k = 5 AND c = 0")
            for c in range(3):
                s.execute("INSERT INTO tc.t (k, c) VALUES (6, %d)" % c)
                s.execute("DELETE FROM tc.t WHERE k = 6 AND c = %d" % c)
                s.execute("INSERT INTO tc.t (k, c) VALUES (6, %d)" % c)
            time.sleep(2.5)
            seen = []
            for query, _, _ in COUNTED_AS_CASSANDRA:
                rs = s.execute(query)
                rows = len(list(rs))
                counts = [int(m.group(1)) for w in rs.response_future.warnings or []
                          for m in [re.search(r"live rows and (\d+) tombstone cells", w)] if m]
                seen.append((query, rows, counts[0] if counts else None))
            cluster.shutdown()
        finally:
            assert node.stop(signal.SIGTERM) == 0
    assert seen == COUNTED_AS_CASSANDRA

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
    def __init__(self, data_dir, sync="batch"):
        self.data_dir = data_dir
        self.config = os.path.join(data_dir, "rocksandra.yaml")
        with open(self.config, "w") as f:
            f.write("commitlog_sync: %s\n" % sync)
            if sync == "periodic":
                f.write("commitlog_sync_period: 10000ms\n")
        self.proc = None

    def start(self):
        self.log = open(os.path.join(self.data_dir, "server.log"), "ab")
        self.proc = subprocess.Popen(
            [BIN, "--config", self.config, "--data-dir", os.path.join(self.data_dir, "data"),
             "--listen-address", "127.0.0.1", "--native-port", str(PORT),
             # No metrics endpoint: 9180 may be taken by another server on this host.
             "--prometheus-port", "0"],
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

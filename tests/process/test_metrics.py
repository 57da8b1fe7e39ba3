"""The metrics endpoint of the real `rocksandra` process, through the Python
driver: reads and writes at ONE and QUORUM, a range read and lightweight
transactions move Cassandra's client request and table metrics by exactly
what was sent. The server gets its own data directory and a free port for
its endpoint.

    ROCKSANDRA_BIN=target/debug/rocksandra pytest tests/process/test_metrics.py
"""

import os
import re
import socket
import subprocess
import tempfile
import urllib.request

import pytest
from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import RoundRobinPolicy
from cassandra.query import SimpleStatement

from test_durability import wait_for_port

BIN = os.environ.get("ROCKSANDRA_BIN", "target/debug/rocksandra")
PORT = int(os.environ.get("ROCKSANDRA_PROCESS_PORT", "9043"))

SAMPLE = re.compile(r"^([a-z_]+)(\{.*\})? (\S+)$")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port):
    """{series as written (name and labels): value}."""
    url = "http://127.0.0.1:%d/metrics" % port
    with urllib.request.urlopen(url, timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("application/openmetrics-text")
        text = answer.read().decode()
    assert text.endswith("# EOF\n")
    samples = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, line
        samples[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return samples


@pytest.fixture
def server():
    with tempfile.TemporaryDirectory() as d:
        metrics_port = free_port()
        log = open(os.path.join(d, "server.log"), "ab")
        proc = subprocess.Popen(
            [BIN, "--data-dir", os.path.join(d, "data"), "--listen-address", "127.0.0.1",
             "--native-port", str(PORT), "--prometheus-port", str(metrics_port),
             "--admin-port", "0"],
            stdout=log, stderr=log)
        try:
            wait_for_port(PORT)
            wait_for_port(metrics_port)
            yield metrics_port
        finally:
            proc.kill()
            proc.wait()
            log.close()


def session_on(port):
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy())
    cluster = Cluster(["127.0.0.1"], port=port, protocol_version=5,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile}, connect_timeout=10)
    return cluster, cluster.connect()


def latency_count(samples, scope, cl):
    key = 'rocksandra_client_request_latency_seconds_count{scope="%s",cl="%s"}' % (scope, cl)
    return samples.get(key, 0.0)


def table_series(name, table="t"):
    return 'rocksandra_%s{keyspace="ks",table="%s"}' % (name, table)


def test_reads_and_writes_move_the_cassandra_shaped_metrics(server):
    cluster, session = session_on(PORT)
    try:
        session.execute("CREATE KEYSPACE ks WITH replication = "
                        "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        session.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        before = scrape(server)
        insert = session.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        insert.consistency_level = ConsistencyLevel.ONE
        select = session.prepare("SELECT v FROM ks.t WHERE k = ?")
        for i in range(20):
            session.execute(insert, (i, i))
        select.consistency_level = ConsistencyLevel.ONE
        for i in range(15):
            assert session.execute(select, (i,)).one().v == i
        select.consistency_level = ConsistencyLevel.QUORUM
        for i in range(5):
            assert session.execute(select, (i,)).one().v == i
        rows = session.execute(SimpleStatement("SELECT * FROM ks.t",
                                               consistency_level=ConsistencyLevel.ONE))
        assert len(list(rows)) == 20
        applied = session.execute("INSERT INTO ks.t (k, v) VALUES (100, 1) IF NOT EXISTS")
        assert applied.one().applied
        serial = SimpleStatement("SELECT v FROM ks.t WHERE k = 100",
                                 consistency_level=ConsistencyLevel.SERIAL)
        assert session.execute(serial).one().v == 1
        after = scrape(server)
    finally:
        cluster.shutdown()

    def moved(series_of):
        return after.get(series_of, 0.0) - before.get(series_of, 0.0)

    def level_moved(scope, cl):
        return latency_count(after, scope, cl) - latency_count(before, scope, cl)

    assert level_moved("Write", "ONE") == 20
    assert level_moved("Read", "ONE") == 15
    assert level_moved("Read", "QUORUM") == 5
    assert level_moved("RangeSlice", "ONE") >= 1
    assert level_moved("CASWrite", "SERIAL") == 1
    assert level_moved("CASRead", "SERIAL") == 1
    for scope in ("Read", "Write", "CASRead", "CASWrite", "RangeSlice"):
        for family in ("timeouts", "unavailables", "failures"):
            series = 'rocksandra_client_request_%s_total{scope="%s"}' % (family, scope)
            assert after[series] == 0, series

    assert moved(table_series("table_write_latency_seconds_count")) == 20
    # 20 prepared reads, the SERIAL read and the conditional insert's read.
    assert moved(table_series("table_read_latency_seconds_count")) >= 20
    assert moved(table_series("table_range_latency_seconds_count")) >= 1
    assert after[table_series("table_memtable_bytes")] > 0
    assert after['rocksandra_thread_pool_active{pool="Native-Transport-Requests"}'] >= 0
    assert moved('rocksandra_thread_pool_completed_total{pool="Native-Transport-Requests"}') >= 43
    assert after['rocksandra_dropped_messages_total{verb="MUTATION"}'] == 0
    assert after["rocksandra_hints_written_total"] == 0


def test_a_dropped_table_leaves_the_scrape(server):
    cluster, session = session_on(PORT)
    try:
        session.execute("CREATE KEYSPACE ks WITH replication = "
                        "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        session.execute("CREATE TABLE ks.gone (k int PRIMARY KEY, v int)")
        session.execute("INSERT INTO ks.gone (k, v) VALUES (1, 1)")
        assert scrape(server)[table_series("table_write_latency_seconds_count", "gone")] == 1
        session.execute("DROP TABLE ks.gone")
        samples = scrape(server)
    finally:
        cluster.shutdown()
    assert not any('table="gone"' in series for series in samples), \
        [s for s in samples if "gone" in s]

"""nodetool's figures against a real node alone, after reads and writes
through a real driver: `tablestats` (local read/write counts and
latencies), `tablehistograms` (SSTables per read too), `proxyhistograms`, `gossipinfo` and
`garbagecollect`, in Cassandra 5.0's layout; and
`setcompactionthroughput` applied to the running storage engine.

    ROCKSANDRA_BIN=target/debug/rocksandra pytest tests/process/test_nodetool_stats.py
"""

import os
import re
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import RoundRobinPolicy

BIN = os.environ.get("ROCKSANDRA_BIN", "target/debug/rocksandra")
PORT = int(os.environ.get("ROCKSANDRA_NODETOOL_STATS_PORT", "9241"))
ADMIN_PORT = int(os.environ.get("ROCKSANDRA_NODETOOL_STATS_ADMIN_PORT", "7241"))

WRITES = 20
READS = 7
RANGE_READS = 2
ROWS = ["50%", "75%", "95%", "98%", "99%", "Min", "Max"]


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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


METRICS_PORT = free_port()


@pytest.fixture(scope="module")
def server():
    for port in (PORT, ADMIN_PORT):
        assert not port_taken(port), "127.0.0.1:%d is already taken" % port
    with tempfile.TemporaryDirectory() as d:
        log = open(os.path.join(d, "server.log"), "wb")
        proc = subprocess.Popen(
            [BIN, "--data-dir", os.path.join(d, "data"), "--listen-address", "127.0.0.1",
             "--native-port", str(PORT), "--prometheus-port", str(METRICS_PORT),
             "--admin-port", str(ADMIN_PORT)],
            stdout=log, stderr=log)
        try:
            wait_for_port(PORT)
            wait_for_port(ADMIN_PORT)
            yield proc
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            log.close()


@pytest.fixture(scope="module")
def session(server):
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy())
    cluster = Cluster(["127.0.0.1"], port=PORT, protocol_version=5,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile}, connect_timeout=10)
    session = cluster.connect()
    session.execute("CREATE KEYSPACE ks WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
    session.execute("CREATE TABLE ks.gc (k int PRIMARY KEY, v text) WITH gc_grace_seconds = 0")
    insert = session.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
    for k in range(WRITES):
        session.execute(insert, (k, k))
    select = session.prepare("SELECT v FROM ks.t WHERE k = ?")
    for k in range(READS):
        assert session.execute(select, (k,)).one().v == k
    for _ in range(RANGE_READS):
        assert len(list(session.execute("SELECT * FROM ks.t"))) == WRITES
    yield session
    cluster.shutdown()


def nodetool(*args):
    return subprocess.run([BIN, "nodetool", "-p", str(ADMIN_PORT)] + list(args),
                          capture_output=True, text=True, timeout=120)


def ok(*args):
    r = nodetool(*args)
    assert r.returncode == 0, "nodetool %s: %s%s" % (" ".join(args), r.stdout, r.stderr)
    return r.stdout


def label(out, name, indent="\t\t"):
    m = re.search(r"^%s%s: (.*)$" % (indent, re.escape(name)), out, re.M)
    assert m, (name, out)
    return m.group(1)


def table_rows(out, header):
    """The seven percentile rows after `header`, as lists of numbers."""
    lines = out.splitlines()
    start = lines.index(header) + 2
    rows = [line.split() for line in lines[start:start + 7]]
    assert [r[0] for r in rows] == ROWS, out
    return [[float(v) for v in r[1:]] for r in rows]


def check_latency_column(rows, column):
    values = [r[column] for r in rows]
    # Bucket bounds: Min is the lowest used bucket's lower bound (0 for the first).
    assert all(v > 0 for v in values[:5] + values[6:]) and values[5] >= 0, values
    assert values[:5] == sorted(values[:5]), values
    assert values[5] <= values[0] <= values[6], values


def test_tablestats_counts_local_reads_and_writes(session):
    out = ok("tablestats", "ks.t")
    assert out.startswith("Total number of tables: 1\n----------------\nKeyspace: ks\n"), out
    assert int(label(out, "Read Count", "\t")) == READS
    assert int(label(out, "Write Count", "\t")) == WRITES
    assert re.fullmatch(r"\d+\.\d+ ms", label(out, "Read Latency", "\t")), out
    assert int(label(out, "Local read count")) == READS
    assert int(label(out, "Local write count")) == WRITES
    for name in ("Local read latency", "Local write latency"):
        m = re.fullmatch(r"(\d+\.\d{3}) ms", label(out, name))
        assert m and 0 < float(m.group(1)) < 10_000, (name, out)
    assert label(out, "Local read/write ratio") == "%.5f" % (READS / WRITES)


def test_tablehistograms(session):
    out = ok("tablehistograms", "ks", "t")
    assert ok("tablehistograms", "ks.t") == out
    assert out.startswith("No SSTables exists, unable to calculate 'Partition Size' and "
                          "'Cell Count' percentiles\nks/t histograms\n"), out
    header = ("Percentile      Read Latency     Write Latency          SSTables"
              "    Partition Size        Cell Count")
    rows = [line.split() for line in out.splitlines()[4:11]]
    assert [r[0] for r in rows] == ROWS, out
    assert all(r[4:] == ["NaN", "NaN"] and r[3] == "0.00" for r in rows), out
    numbers = [[float(v) for v in r[1:3]] for r in rows]
    check_latency_column(numbers, 0)
    check_latency_column(numbers, 1)
    assert header in out
    ok("flush", "ks", "t")
    assert ok("tablehistograms", "ks.t").startswith("ks/t histograms\n")
    everything = ok("tablehistograms")
    assert "ks/t histograms\n" in everything and "ks/gc histograms\n" in everything
    r = nodetool("tablehistograms", "ks", "nosuch")
    assert r.returncode == 1 and "Unknown table ks.nosuch" in r.stderr, r
    r = nodetool("tablehistograms", "ks")
    assert r.returncode == 1 and "requires keyspace and table name" in r.stderr, r


# Reads of a partition after a flush: one in 64 per server thread (the
# first of each thread too) is sampled, so 256 give at least one sample
# on a node with up to three reading threads.
SAMPLED_READS = 256


def test_tablehistograms_counts_sstables_per_read(session):
    session.execute("CREATE TABLE ks.h (k int, c int, v int, PRIMARY KEY (k, c))")
    for c in range(3):
        session.execute("INSERT INTO ks.h (k, c, v) VALUES (1, %d, %d)" % (c, c))
    ok("flush", "ks", "h")
    select = session.prepare("SELECT v FROM ks.h WHERE k = 1")
    for _ in range(SAMPLED_READS):
        assert len(list(session.execute(select))) == 3
    out = ok("tablehistograms", "ks.h")
    rows = [line.split() for line in out.splitlines()[3:10]]
    assert [r[0] for r in rows] == ROWS, out
    # Every sampled read looked into the one SST file holding the partition.
    assert [r[3] for r in rows] == ["1.00"] * 7, out
    sampled = metric('rocksandra_table_sstables_per_read_count{keyspace="ks",table="h"}')
    assert 1 <= sampled <= SAMPLED_READS
    files = metric('rocksandra_table_sstables_per_read_sum{keyspace="ks",table="h"}')
    assert files == sampled


def test_proxyhistograms(session):
    session.execute("INSERT INTO ks.t (k, v) VALUES (100, 1) IF NOT EXISTS")
    out = ok("proxyhistograms")
    header = ("Percentile       Read Latency      Write Latency      Range Latency"
              "   CAS Read Latency  CAS Write Latency View Write Latency")
    assert out.startswith("proxy histograms\n" + header + "\n"), out
    rows = table_rows(out, header)
    for column in (0, 1, 2, 4):  # Read, Write, Range, CAS Write
        check_latency_column(rows, column)
    assert all(r[3] == 0.0 and r[5] == 0.0 for r in rows), out  # CAS Read, View Write


def test_gossipinfo_of_a_node_alone(session):
    out = ok("gossipinfo")
    local = session.execute("SELECT host_id, data_center, rack, tokens FROM system.local").one()
    lines = out.splitlines()
    assert lines[0] == "/127.0.0.1", out
    generation = int(re.fullmatch(r"  generation:(\d+)", lines[1]).group(1))
    assert abs(generation - time.time()) < 3600, generation
    assert re.fullmatch(r"  heartbeat:\d+", lines[2]), out
    names = [line.split(":")[0].strip() for line in lines[3:] if line]
    assert names == ["STATUS", "SCHEMA", "DC", "RACK", "RELEASE_VERSION", "RPC_ADDRESS",
                     "HOST_ID", "NATIVE_ADDRESS_AND_PORT", "TOKENS"], out
    assert "  HOST_ID:1:%s\n" % local.host_id in out
    assert "  DC:1:%s\n" % local.data_center in out
    assert "  RACK:1:%s\n" % local.rack in out
    assert "  RELEASE_VERSION:1:5.0.6\n" in out
    assert "  NATIVE_ADDRESS_AND_PORT:1:127.0.0.1:%d\n" % PORT in out
    status = re.search(r"^  STATUS:1:NORMAL,(-?\d+)$", out, re.M)
    assert status and status.group(1) in set(local.tokens), out
    assert out.endswith("  TOKENS:1:<hidden>\n\n"), out


def test_garbagecollect_purges_deleted_rows(session):
    insert = session.prepare("INSERT INTO ks.gc (k, v) VALUES (?, 'x')")
    for k in range(50):
        session.execute(insert, (k,))
    ok("flush", "ks", "gc")
    for k in range(50):
        session.execute("DELETE FROM ks.gc WHERE k = %d" % k)
    ok("flush", "ks", "gc")
    time.sleep(1.5)  # past gc_grace_seconds = 0, counted in whole seconds
    before = ok("tablestats", "ks.gc")
    assert int(label(before, "Number of partitions (estimate)")) >= 50, before
    assert ok("garbagecollect", "-g", "CELL", "-j", "2", "ks", "gc") == ""
    after = ok("tablestats", "ks.gc")
    assert int(label(after, "Number of partitions (estimate)")) == 0, after
    assert int(label(after, "Space used (live)")) < int(label(before, "Space used (live)"))
    assert list(session.execute("SELECT * FROM ks.gc")) == []
    assert ok("garbagecollect") == ""
    r = nodetool("garbagecollect", "-g", "FOO", "ks")
    assert r.returncode == 1 and "TombstoneOption.FOO" in r.stderr, r
    r = nodetool("garbagecollect", "nosuch")
    assert r.returncode == 1 and "Keyspace [nosuch] does not exist." in r.stderr, r
    r = nodetool("garbagecollect", "ks", "nosuch")
    assert r.returncode == 1 and "Unknown keyspace/cf pair (ks.nosuch)" in r.stderr, r


def metric(name):
    url = "http://127.0.0.1:%d/metrics" % METRICS_PORT
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("no %s in the metrics" % name)


def test_setcompactionthroughput_applies_to_the_running_storage(session):
    # Started without compaction_throughput: unthrottled.
    assert ok("getcompactionthroughput") == "Current compaction throughput: 0 MB/s\n"
    assert metric("rocksandra_storage_compaction_throughput_bytes") == 0
    # Cassandra's command prints nothing; the storage's limiter takes the rate.
    assert ok("setcompactionthroughput", "4") == ""
    assert ok("getcompactionthroughput") == "Current compaction throughput: 4 MB/s\n"
    assert metric("rocksandra_storage_compaction_throughput_bytes") == 4 << 20
    # A flush writes through the limiter.
    before = metric("rocksandra_storage_rate_limited_bytes_total")
    session.execute("CREATE TABLE ks.rl (k int PRIMARY KEY, v text)")
    insert = session.prepare("INSERT INTO ks.rl (k, v) VALUES (?, ?)")
    for k in range(100):
        session.execute(insert, (k, os.urandom(512).hex()))
    ok("flush", "ks", "rl")
    assert metric("rocksandra_storage_rate_limited_bytes_total") >= before + 50_000
    assert ok("setcompactionthroughput", "0") == ""
    assert metric("rocksandra_storage_compaction_throughput_bytes") == 0
    assert nodetool("setcompactionthroughput", "x").returncode != 0

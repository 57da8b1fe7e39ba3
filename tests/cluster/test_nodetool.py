"""`rocksandra nodetool` against a real 2-node cluster: the command line
(clap: help, unknown commands), keyspace/table arguments of flush, compact
and cleanup, and the commands shaped like Cassandra 5.0's (version,
describecluster, getendpoints, snapshots, compaction throughput and stats,
drain). See harness.py for how nodes run.

    /work/main/.venv/bin/pytest -q -p no:cacheprovider tests/cluster/test_nodetool.py
"""

import glob
import os
import re
import struct
import subprocess

import pytest
from cassandra import ConsistencyLevel as CL

from harness import ADDRESSES, BIN, Nodes, stmt, wait_until

A, B = ADDRESSES[:2]
TWO = [A, B]


class Shared:
    def __init__(self, nodes):
        self.nodes = nodes
        self.session = nodes.connect(A, pinned=False)


@pytest.fixture(scope="module")
def two():
    nodes = Nodes()
    try:
        for ip in TWO:
            nodes.start(ip)
        nodes.wait_status({ip: "UN" for ip in TWO})
        shared = Shared(nodes)
        s = shared.session
        for name, rf in (("nt_rf1", 1), ("nt_rf2", 2)):
            s.execute("CREATE KEYSPACE %s WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': %d}" % (name, rf))
            s.execute("CREATE TABLE %s.t (k int PRIMARY KEY, v text)" % name)
        s.execute("CREATE TABLE nt_rf1.composite (a text, b int, v int, PRIMARY KEY ((a, b)))")
        s.cluster.refresh_schema_metadata()
        yield shared
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), "unclean stops: %s" % codes


def nodetool_raw(*args):
    return subprocess.run([BIN, "nodetool"] + list(args), capture_output=True, text=True,
                          timeout=60)


def sst_files(node):
    return set(glob.glob(os.path.join(node.data_dir, "**", "*.sst"), recursive=True))


def composite_key(*parts):
    """The driver's routing key of a composite partition key."""
    out = b""
    for p in parts:
        out += struct.pack(">H", len(p)) + p + b"\x00"
    return out


def test_help_lists_cassandras_commands():
    r = nodetool_raw("help")
    assert r.returncode == 0, r.stderr
    for command in ("status", "flush", "version", "describecluster", "getendpoints",
                    "listsnapshots", "clearsnapshot", "snapshot", "drain",
                    "getcompactionthroughput", "setcompactionthroughput", "compactionstats",
                    "tablestats", "tpstats", "proxyhistograms", "tablehistograms",
                    "gossipinfo", "garbagecollect"):
        assert re.search(r"^\s+%s\s" % command, r.stdout, re.M), (command, r.stdout)
    assert nodetool_raw("--help").returncode == 0


def test_unknown_command_is_an_error():
    r = nodetool_raw("-h", A, "nosuchcommand")
    assert r.returncode == 1, r
    assert "nodetool: Found unexpected parameters: [nosuchcommand]" in r.stderr, r.stderr
    r = nodetool_raw("-h", A, "flush", "--nosuchflag")
    assert r.returncode == 1, r
    assert "Found unexpected parameters: [--nosuchflag]" in r.stderr, r.stderr


def test_version(two):
    out = two.nodes[A].nodetool("version").stdout
    assert re.fullmatch(r"ReleaseVersion: 5\.0\.\d+\n", out), out


def test_describecluster(two):
    one_version = re.compile(r"^\t\t[0-9a-f-]{36}: \[%s, %s\]$" % (re.escape(A), re.escape(B)),
                             re.M)

    def agreed():
        return bool(one_version.search(two.nodes[B].nodetool("describecluster").stdout))
    wait_until(agreed, 15, what="one schema version on both nodes")
    out = two.nodes[B].nodetool("describecluster").stdout
    assert out.startswith("Cluster Information:\n\tName: Test Cluster\n"), out
    assert "\tSnitch: org.apache.cassandra.locator.SimpleSnitch\n" in out, out
    assert "\tPartitioner: org.apache.cassandra.dht.Murmur3Partitioner\n" in out, out
    assert "\tSchema versions:\n" in out, out
    assert "\tLive: 2\n" in out and "\tUnreachable: 0\n" in out, out
    assert "\tdatacenter1 #Nodes: 2 #Down: 0\n" in out, out
    assert re.search(r"^\tnt_rf2 -> Replication class: \S*SimpleStrategy "
                     r"\{replication_factor=2\}$", out, re.M), out


def test_getendpoints_match_the_drivers_token_map(two):
    metadata = two.session.cluster.metadata
    node = two.nodes[A]
    owners = set()
    for k in range(20):
        key = struct.pack(">i", k)
        driver = sorted(h.address for h in metadata.get_replicas("nt_rf1", key))
        server = node.nodetool("getendpoints", "nt_rf1", "t", str(k)).stdout.split()
        assert len(server) == 1 and server == driver, (k, server, driver)
        owners.update(server)
        both = sorted(two.nodes[B].nodetool("getendpoints", "nt_rf2", "t", str(k)).stdout.split())
        assert both == TWO, (k, both)
    assert owners == set(TWO), "20 keys over 32 vnodes land on both nodes: %s" % owners
    for a, b in (("x", 1), ("with:colon", 7)):
        key = composite_key(a.encode(), struct.pack(">i", b))
        driver = [h.address for h in metadata.get_replicas("nt_rf1", key)]
        text = "%s:%d" % (a.replace(":", "\\:"), b)
        server = node.nodetool("getendpoints", "nt_rf1", "composite", text).stdout.split()
        assert server == driver, (text, server, driver)


def test_getendpoints_errors(two):
    node = two.nodes[A]
    r = node.nodetool("getendpoints", "nosuch", "t", "1", check=False)
    assert r.returncode == 1 and "Keyspace [nosuch] does not exist." in r.stderr, r
    r = node.nodetool("getendpoints", "nt_rf1", "nosuch", "1", check=False)
    assert r.returncode == 1 and "Unknown table 'nosuch' in keyspace 'nt_rf1'" in r.stderr, r
    r = node.nodetool("getendpoints", "nt_rf1", "t", "notanint", check=False)
    assert r.returncode == 1, r


def test_flush_compact_cleanup_take_keyspace_and_tables(two):
    node = two.nodes[A]
    for command in ("flush", "compact", "cleanup"):
        r = node.nodetool(command, "nosuch", check=False)
        assert r.returncode == 1, (command, r)
        assert "nodetool: Keyspace [nosuch] does not exist." in r.stderr, (command, r.stderr)
        r = node.nodetool(command, "nt_rf2", "nosuch", check=False)
        assert r.returncode == 1, (command, r)
        assert "Unknown keyspace/cf pair (nt_rf2.nosuch)" in r.stderr, (command, r.stderr)
    before = sst_files(node)
    for k in range(50):
        two.session.execute(stmt("INSERT INTO nt_rf2.t (k, v) VALUES (%d, 'x')" % k, CL.ALL))
    node.nodetool("flush", "nt_rf2", "t")
    assert sst_files(node) - before, "flush nt_rf2 t wrote no SST file"
    node.nodetool("compact", "nt_rf2")
    node.nodetool("cleanup", "nt_rf2", "t")
    rows = two.session.execute(stmt("SELECT count(*) FROM nt_rf2.t", CL.ALL)).one()
    assert rows[0] == 50


def memtable_cells(node, table):
    out = node.nodetool("tablestats", table).stdout
    return int(re.search(r"^\t\tMemtable cell count: (\d+)$", out, re.M).group(1))


def test_flush_of_one_table_leaves_the_others(two):
    node = two.nodes[A]
    node.nodetool("flush")
    for k in range(300, 340):
        for ks in ("nt_rf1", "nt_rf2"):
            two.session.execute(stmt("INSERT INTO %s.t (k, v) VALUES (%d, 'f')" % (ks, k),
                                     CL.ALL))
    assert memtable_cells(node, "nt_rf2.t") >= 10
    node.nodetool("flush", "nt_rf2", "t")
    assert memtable_cells(node, "nt_rf2.t") == 0
    # RF 1 of 2: about half of the 40 keys are A's.
    assert memtable_cells(node, "nt_rf1.t") > 0, "flush nt_rf2 t flushed nt_rf1.t too"
    node.nodetool("flush", "nt_rf1")
    assert memtable_cells(node, "nt_rf1.t") == 0


def test_status_of_a_keyspace(two):
    out = two.nodes[A].nodetool("status", "nt_rf2").stdout
    owns = re.findall(r"^UN\s+(\S+)\s+.*?\s(\d+\.\d)%\s", out, re.M)
    assert sorted(owns) == [(A, "100.0"), (B, "100.0")], out
    r = two.nodes[A].nodetool("status", "nosuch", check=False)
    assert r.returncode == 1 and "Keyspace [nosuch] does not exist." in r.stderr, r


def test_drain_flushes(two):
    node = two.nodes[B]
    before = sst_files(node)
    for k in range(50, 80):
        two.session.execute(stmt("INSERT INTO nt_rf2.t (k, v) VALUES (%d, 'y')" % k, CL.ALL))
    assert node.nodetool("drain").returncode == 0
    assert sst_files(node) - before, "drain wrote no SST file"


def test_tablestats(two):
    node = two.nodes[A]
    for k in range(100, 140):
        two.session.execute(stmt("INSERT INTO nt_rf2.t (k, v) VALUES (%d, 'z')" % k, CL.ALL))
    node.nodetool("flush", "nt_rf2", "t")
    out = node.nodetool("tablestats", "nt_rf2.t").stdout
    assert out.startswith("Total number of tables: 1\n----------------\nKeyspace: nt_rf2\n"), out
    for label in ("Read Count", "Read Latency", "Write Count", "Write Latency"):
        assert re.search(r"^\t%s: " % label, out, re.M), (label, out)

    def number(label):
        m = re.search(r"^\t\t%s: (\d+)$" % re.escape(label), out, re.M)
        assert m, (label, out)
        return int(m.group(1))
    assert re.search(r"^\t\tTable: t$", out, re.M), out
    assert number("SSTable count") >= 1
    assert number("Space used (live)") > 0
    assert number("Space used (total)") >= number("Space used (live)")
    # Every row inserted so far through this node's replica (RF 2 of 2).
    assert number("Number of partitions (estimate)") >= 40
    for label in ("Memtable cell count", "Memtable data size", "Local read count",
                  "Local write count"):
        number(label)

    def writes_coordinated_by(ip):
        text = two.nodes[ip].nodetool("tablestats", "nt_rf2.t").stdout
        m = re.search(r"^\t\tLocal write count: (\d+)$", text, re.M)
        assert m and re.search(r"^\t\tLocal write latency: (\d+\.\d{3}|NaN) ms$", text, re.M), text
        return int(m.group(1))
    # Each of this test's 40 writes, counted by the node that coordinated it.
    assert writes_coordinated_by(A) + writes_coordinated_by(B) >= 40
    both = node.nodetool("tablestats", "nt_rf1", "nt_rf2.t").stdout
    assert both.startswith("Total number of tables: 3\n"), both
    r = node.nodetool("tablestats", "nosuch", check=False)
    assert r.returncode == 1 and "Keyspace [nosuch] does not exist." in r.stderr, r
    r = node.nodetool("tablestats", "nt_rf1.nosuch", check=False)
    assert r.returncode == 1 and "Unknown keyspace/cf pair (nt_rf1.nosuch)" in r.stderr, r


def test_snapshots(two):
    node = two.nodes[A]
    snapshots = os.path.join(node.data_dir, "snapshots")
    out = node.nodetool("listsnapshots").stdout
    assert out == "Snapshot Details: \nThere are no snapshots\n", out
    out = node.nodetool("snapshot", "-t", "first").stdout
    assert "Requested creating snapshot(s) for [all keyspaces] with snapshot name [first]" in out
    out = node.nodetool("snapshot", "--tag", "second", "nt_rf1").stdout
    assert "for [nt_rf1] with snapshot name [second]" in out, out
    r = node.nodetool("snapshot", "-t", "third", "nosuch", check=False)
    assert r.returncode == 1 and "Keyspace [nosuch] does not exist." in r.stderr, r
    assert not os.path.exists(os.path.join(snapshots, "third"))
    r = node.nodetool("snapshot", "-t", "first", check=False)
    assert r.returncode == 1 and "Snapshot first already exists." in r.stderr, r

    out = node.nodetool("listsnapshots").stdout
    lines = out.splitlines()
    assert lines[0] == "Snapshot Details: ", out
    assert re.match(r"Snapshot name +Keyspace name +Column family name +True size +"
                    r"Size on disk +Creation time +Expiration time$", lines[1]), out
    tags = [l.split()[0] for l in lines[2:4]]
    assert tags == ["first", "second"], out
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", lines[2]), out
    assert re.search(r"^Total TrueDiskSpaceUsed: \d", out, re.M), out

    r = node.nodetool("clearsnapshot", check=False)
    assert r.returncode == 1 and "Specify snapshot name or --all" in r.stderr, r
    r = node.nodetool("clearsnapshot", "-t", "first", "--all", check=False)
    assert r.returncode == 1 and "Specify only one of snapshot name or --all" in r.stderr, r
    out = node.nodetool("clearsnapshot", "-t", "first").stdout
    assert out == ("Requested clearing snapshot(s) for [all keyspaces] "
                   "with snapshot name [first]\n"), out
    assert sorted(os.listdir(snapshots)) == ["second"]
    out = node.nodetool("clearsnapshot", "--all").stdout
    assert "with [all snapshots]" in out, out
    assert os.listdir(snapshots) == []
    assert "There are no snapshots" in node.nodetool("listsnapshots").stdout


def tpstats(node):
    out = node.nodetool("tpstats").stdout
    lines = out.splitlines()
    assert re.match(r"Pool Name +Active +Pending +Completed +Blocked +All time blocked$",
                    lines[0]), out
    pools = {}
    for line in lines[1:]:
        name, active, pending, completed, blocked, all_time = line.split()
        pools[name] = int(completed)
        assert (pending, blocked, all_time) == ("0", "0", "0"), out
        assert int(active) >= 0
    return pools


def test_tpstats_count_local_replica_work(two):
    node = two.nodes[B]
    before = tpstats(node)
    assert set(before) == {"MutationStage", "ReadStage"}, before
    for k in range(200, 210):
        two.session.execute(stmt("INSERT INTO nt_rf2.t (k, v) VALUES (%d, 'w')" % k, CL.ALL))
        two.session.execute(stmt("SELECT v FROM nt_rf2.t WHERE k = %d" % k, CL.ALL))
    after = tpstats(node)
    # RF 2 of 2: every write and every read ran on B's replica.
    assert after["MutationStage"] - before["MutationStage"] >= 10, (before, after)
    assert after["ReadStage"] - before["ReadStage"] >= 10, (before, after)


def test_compaction_throughput_and_stats(two):
    node = two.nodes[B]
    # The nodes run without compaction_throughput: unthrottled, as 0.
    out = node.nodetool("getcompactionthroughput").stdout
    assert out == "Current compaction throughput: 0 MB/s\n", out
    # Silent, as Cassandra's; applied to the storage engine (the process
    # test reads the rate back from the metrics).
    out = node.nodetool("setcompactionthroughput", "16").stdout
    assert out == "", out
    out = node.nodetool("getcompactionthroughput").stdout
    assert out == "Current compaction throughput: 16 MB/s\n", out
    assert node.nodetool("setcompactionthroughput", "x", check=False).returncode == 1
    out = node.nodetool("compactionstats").stdout
    assert re.match(r"pending tasks: \d+\n", out), out


def test_logging_levels_on_a_member(two):
    """setlogginglevel/getlogginglevels on a cluster member: its own
    logger's levels (Cassandra's logger names mapped to tracing targets)."""
    node = two.nodes[B]
    before = node.nodetool("getlogginglevels").stdout
    assert before.splitlines()[:2] == ["", "%-50s%10s" % ("Logger Name", "Log Level")], before
    assert re.search(r"^ROOT\s+[A-Z]+$", before, re.M), before
    assert node.nodetool("setlogginglevel", "org.apache.cassandra.gms", "DEBUG").stdout == ""
    during = node.nodetool("getlogginglevel").stdout
    assert re.search(r"^rocksandra_cluster::gossip\s+DEBUG$", during, re.M), during
    assert two.nodes[A].nodetool("getlogginglevels").stdout == before, "B's levels only"
    r = node.nodetool("setlogginglevel", "org.apache.cassandra.nosuch", "DEBUG", check=False)
    assert r.returncode == 1 and "no Rocksandra logger" in r.stderr, r
    node.nodetool("setlogginglevel")
    assert node.nodetool("getlogginglevels").stdout == before


def gossip_blocks(out):
    """`gossipinfo`'s endpoints: address to {name: (version, value)}, with
    generation and heartbeat as names too."""
    blocks = {}
    current = None
    for line in out.splitlines():
        if line.startswith("/"):
            current = blocks.setdefault(line[1:], {})
        elif line.startswith("  ") and current is not None:
            name, rest = line.strip().split(":", 1)
            if name in ("generation", "heartbeat"):
                current[name] = int(rest)
            else:
                version, value = rest.split(":", 1)
                current[name] = (int(version), value)
    return blocks


def test_gossipinfo_lists_both_endpoints(two):
    seen = {}
    for ip in TWO:
        out = two.nodes[ip].nodetool("gossipinfo").stdout
        assert re.findall(r"^/(\S+)$", out, re.M) == TWO, out
        assert out.endswith("\n\n"), out
        seen[ip] = gossip_blocks(out)
        for peer, block in seen[ip].items():
            assert list(block)[:3] == ["generation", "heartbeat", "STATUS"], out
            assert block["STATUS"][1].startswith("NORMAL,"), out
            assert block["RPC_ADDRESS"][1] == peer, out
            assert block["RELEASE_VERSION"][1] == "5.0.6", out
            assert block["TOKENS"][1] == "<hidden>", out
            assert re.fullmatch(r"[0-9a-f-]{36}", block["HOST_ID"][1]), out
    # Both nodes know the same host ids and generations of each endpoint.
    for peer in TWO:
        assert seen[A][peer]["HOST_ID"] == seen[B][peer]["HOST_ID"]
        assert seen[A][peer]["generation"] == seen[B][peer]["generation"]
    assert seen[A][A]["HOST_ID"] != seen[A][B]["HOST_ID"]
    # Heartbeats go on.
    wait_until(lambda: gossip_blocks(two.nodes[A].nodetool("gossipinfo").stdout)[B]["heartbeat"]
               > seen[A][B]["heartbeat"], 10, what="B's heartbeat seen by A to grow")

"""Tombstone thresholds on every replica of a cluster read: a replica that
is not the coordinator counts the tombstones a read meets, logs Cassandra's
warning past tombstone_warn_threshold and refuses the read past
tombstone_failure_threshold; the coordinator answers READ_FAILURE with
READ_TOO_MANY_TOMBSTONES from that replica (protocol v5's reason map), or
the rows, with the client warning only when the coordinator's own replica
read met them (Cassandra with read_thresholds_enabled: false). Three nodes,
RF=1, reads through a node that holds none of the partitions read, and
through the one that holds them (see harness.py for addresses).

    /work/main/.venv/bin/pytest -q -p no:cacheprovider tests/cluster/test_tombstones.py

The single-node path and a coordinator answering from its own storage are
tested in tests/process and test_cluster.py.
"""

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra import ReadFailure

from harness import ADDRESSES, Nodes, bound, stmt

A, B, C = ADDRESSES[:3]
READ_TOO_MANY_TOMBSTONES = 0x0001


def keys_elsewhere(node, keyspace, table, count):
    """`count` keys of `keyspace.table` (int) that `node` does not hold,
    with their one replica (RF=1), by token ownership (getendpoints)."""
    found = []
    for k in range(1000):
        owners = node.nodetool("getendpoints", keyspace, table, str(k)).stdout.split()
        assert len(owners) == 1, owners
        if owners[0] != node.ip:
            found.append((k, owners[0]))
            if len(found) == count:
                return found
    raise AssertionError("no key held elsewhere than %s" % node.ip)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    config = tmp_path_factory.mktemp("tombstones") / "tombstones.yaml"
    config.write_text("tombstone_warn_threshold: 10\ntombstone_failure_threshold: 50\n")
    nodes = Nodes()
    try:
        for ip in (A, B, C):
            nodes.add(ip, extra=["--config", str(config)])
        nodes.start(A, B, C)
        nodes.wait_status({ip: "UN" for ip in (A, B, C)})
        session = nodes.connect(A, protocol_version=5)
        session.execute("CREATE KEYSPACE tr WITH replication = "
                        "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        session.execute("CREATE TABLE tr.queue (k int, c int, v text, PRIMARY KEY (k, c))")
        (warned, warned_at), (failed, failed_at), (cells, cells_at) = \
            keys_elsewhere(nodes[A], "tr", "queue", 3)
        insert = session.prepare("INSERT INTO tr.queue (k, c, v) VALUES (?, ?, 'x')")
        delete = session.prepare("DELETE FROM tr.queue WHERE k = ? AND c = ?")
        # 20 tombstones in one partition (past the warn threshold), 51 in
        # the other (past the failure threshold).
        for k, deleted in ((warned, 20), (failed, 51)):
            for c in range(60):
                session.execute(bound(insert, (k, c), CL.ONE))
            for c in range(deleted):
                session.execute(bound(delete, (k, c), CL.ONE))
        # 30 live rows, 15 of them with their one cell deleted: dead cells
        # count as Cassandra counts them.
        unset = session.prepare("UPDATE tr.queue SET v = null WHERE k = ? AND c = ?")
        for c in range(30):
            session.execute(bound(insert, (cells, c), CL.ONE))
        for c in range(15):
            session.execute(bound(unset, (cells, c), CL.ONE))
        yield nodes, session, {"warned": (warned, warned_at), "failed": (failed, failed_at),
                               "cells": (cells, cells_at)}
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), "unclean stops: %s" % codes


def test_a_read_past_the_warn_threshold_on_another_node_warns_in_its_log(cluster):
    """Cassandra's default: the replica logs; the client hears nothing of a
    read its coordinator did not run itself."""
    nodes, session, keys = cluster
    k, owner = keys["warned"]
    select = session.prepare("SELECT c FROM tr.queue WHERE k = ?")
    rs = session.execute(bound(select, (k,), CL.ONE))
    assert [r.c for r in rs] == list(range(20, 60))
    warnings = rs.response_future.warnings or []
    assert not any("tombstone" in w for w in warnings), warnings
    assert ("Read 40 live rows and 20 tombstone cells for query a read of table"
            in nodes[owner].log_text()), nodes[owner].tail()


def test_a_read_past_the_warn_threshold_on_the_coordinator_warns_the_client(cluster):
    nodes, _, keys = cluster
    k, owner = keys["warned"]
    session = nodes.connect(owner, protocol_version=5)
    select = session.prepare("SELECT c FROM tr.queue WHERE k = ?")
    rs = session.execute(bound(select, (k,), CL.ONE))
    assert [r.c for r in rs] == list(range(20, 60))
    warnings = rs.response_future.warnings or []
    assert any("Read 40 live rows and 20 tombstone cells for query SELECT" in w
               and "(see tombstone_warn_threshold)" in w for w in warnings), warnings


def test_deleted_cells_of_live_rows_are_counted(cluster):
    nodes, _, keys = cluster
    k, owner = keys["cells"]
    session = nodes.connect(owner, protocol_version=5)
    rs = session.execute(stmt("SELECT c, v FROM tr.queue WHERE k = %d" % k, CL.ONE))
    assert len(list(rs)) == 30
    warnings = rs.response_future.warnings or []
    assert any("Read 30 live rows and 15 tombstone cells" in w for w in warnings), warnings


def test_a_read_past_the_failure_threshold_on_another_node_fails(cluster):
    nodes, session, keys = cluster
    k, owner = keys["failed"]
    select = session.prepare("SELECT c FROM tr.queue WHERE k = ?")
    with pytest.raises(ReadFailure) as failure:
        session.execute(bound(select, (k,), CL.ONE))
    error = failure.value
    assert error.error_code_map == {owner: READ_TOO_MANY_TOMBSTONES}, error
    assert (error.failures, error.received_responses, error.required_responses) == (1, 0, 1), error
    assert "READ_TOO_MANY_TOMBSTONES from /%s" % owner in str(error), error
    assert ("Scanned over 50 tombstones during query 'a read of table"
            in nodes[owner].log_text()), nodes[owner].tail()


def test_a_range_scan_past_the_failure_threshold_fails(cluster):
    nodes, session, keys = cluster
    k, owner = keys["failed"]
    with pytest.raises(ReadFailure) as failure:
        session.execute(stmt("SELECT k, c FROM tr.queue", CL.ONE))
    error = failure.value
    assert error.error_code_map == {owner: READ_TOO_MANY_TOMBSTONES}, error
    assert "READ_TOO_MANY_TOMBSTONES from /%s" % owner in str(error), error
    assert ("Scanned over 50 tombstones during query 'a scan of table"
            in nodes[owner].log_text()), nodes[owner].tail()

"""`read_thresholds_enabled: true` in a cluster: every replica of a read
reports the tombstones it met and the bytes it loaded in its answer, and
the coordinator warns the client once per read naming how many nodes
passed each threshold (Cassandra 5.0's `CoordinatorWarnings`), or fails
the read with READ_FAILURE when a replica refused it. Three nodes, RF=3,
reads at ALL so that every replica answers (see harness.py for addresses;
the texts are checked against Cassandra 5.0.6 in
tests/process/test_read_thresholds.py).

    /work/main/.venv/bin/pytest -q -p no:cacheprovider tests/cluster/test_read_thresholds.py
"""

import re

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra import ReadFailure

from harness import ADDRESSES, Nodes, bound, stmt

A, B, C = ADDRESSES[:3]
READ_TOO_MANY_TOMBSTONES = 0x0001
READ_SIZE = 0x0004


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    config = tmp_path_factory.mktemp("read_thresholds") / "read_thresholds.yaml"
    config.write_text("read_thresholds_enabled: true\n"
                      "tombstone_warn_threshold: 10\ntombstone_failure_threshold: 50\n"
                      "local_read_size_warn_threshold: 4KiB\n"
                      "local_read_size_fail_threshold: 64KiB\n")
    nodes = Nodes()
    try:
        for ip in (A, B, C):
            nodes.add(ip, extra=["--config", str(config)])
        nodes.start(A, B, C)
        nodes.wait_status({ip: "UN" for ip in (A, B, C)})
        session = nodes.connect(A, protocol_version=5)
        session.execute("CREATE KEYSPACE rtc WITH replication = "
                        "{'class': 'SimpleStrategy', 'replication_factor': 3}")
        session.execute("CREATE TABLE rtc.queue (k int, c int, v text, PRIMARY KEY (k, c))")
        insert = session.prepare("INSERT INTO rtc.queue (k, c, v) VALUES (?, ?, ?)")
        delete = session.prepare("DELETE FROM rtc.queue WHERE k = ? AND c = ?")
        # k = 1: 20 tombstones; k = 2: 51 (past the failure threshold);
        # k = 3: 10 rows of 1,000 bytes (past the local size warning);
        # k = 4: 100 of them (past its failure threshold).
        for k, deleted in ((1, 20), (2, 51)):
            for c in range(60):
                session.execute(bound(insert, (k, c, "x"), CL.ALL))
            for c in range(deleted):
                session.execute(bound(delete, (k, c), CL.ALL))
        for k, rows in ((3, 10), (4, 100)):
            for c in range(rows):
                session.execute(bound(insert, (k, c, "v" * 1000), CL.ALL))
        yield nodes, session
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), "unclean stops: %s" % codes


def test_every_replica_past_the_warn_threshold_is_counted(cluster):
    nodes, session = cluster
    select = session.prepare("SELECT c FROM rtc.queue WHERE k = ?")
    for coordinator in (A, B):
        s = nodes.connect(coordinator, protocol_version=5)
        rs = s.execute(bound(s.prepare("SELECT c FROM rtc.queue WHERE k = ?"), (1,), CL.ALL))
        assert [r.c for r in rs] == list(range(20, 60))
        [warning] = rs.response_future.warnings
        assert re.fullmatch(
            r"3 nodes scanned up to 20 tombstones and issued tombstone warnings for query "
            r"SELECT c FROM rtc\.queue WHERE k = \? \(see tombstone_warn_threshold\) "
            r"with token=-?\d+", warning), warning
    # At ONE only the replica asked reports.
    rs = session.execute(bound(select, (1,), CL.ONE))
    [warning] = rs.response_future.warnings
    assert warning.startswith("1 nodes scanned up to 20 tombstones"), warning


def test_a_replica_past_the_failure_threshold_fails_the_read(cluster):
    nodes, session = cluster
    with pytest.raises(ReadFailure) as failure:
        session.execute(stmt("SELECT c FROM rtc.queue WHERE k = 2", CL.ALL))
    error = failure.value
    assert set(error.error_code_map.values()) == {READ_TOO_MANY_TOMBSTONES}, error
    assert set(error.error_code_map) <= {A, B, C}, error
    assert re.search(
        r"Operation failed - \d nodes scanned over 51 tombstones and aborted the query "
        r"SELECT c FROM rtc\.queue WHERE k = 2 \(see tombstone_failure_threshold\): "
        r"READ_TOO_MANY_TOMBSTONES from /127\.", str(error)), error
    # A scan meets them too.
    with pytest.raises(ReadFailure) as failure:
        session.execute(stmt("SELECT k, c FROM rtc.queue", CL.ALL))
    assert "aborted the query SELECT k, c FROM rtc.queue" in str(failure.value), failure.value


def test_replicas_report_the_bytes_they_loaded(cluster):
    nodes, session = cluster
    rs = session.execute(stmt("SELECT c, v FROM rtc.queue WHERE k = 3", CL.ALL))
    assert len(list(rs)) == 10
    [warning] = rs.response_future.warnings
    assert re.fullmatch(
        r"3 nodes loaded over \d+ bytes and issued local read size warnings for query "
        r"SELECT c, v FROM rtc\.queue WHERE k = 3 \(see local_read_size_warn_threshold\) "
        r"with token=-?\d+", warning), warning
    with pytest.raises(ReadFailure) as failure:
        session.execute(stmt("SELECT c FROM rtc.queue WHERE k = 4", CL.ALL))
    error = failure.value
    assert set(error.error_code_map.values()) == {READ_SIZE}, error
    assert re.search(r"nodes loaded over \d+ bytes and aborted the query SELECT c FROM "
                     r"rtc\.queue WHERE k = 4 \(see local_read_size_fail_threshold\): "
                     r"READ_SIZE from /127\.", str(error)), error

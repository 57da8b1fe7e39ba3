"""`read_thresholds_enabled: true` on a node alone, against what Apache
Cassandra 5.0.6 answered with the same yaml (recorded 2026-11-28 on one
node, `scripts/cassandra/start.sh --yaml ...` with the keys of YAML below,
through the Python driver on protocol v4): the aggregated tombstone and
local read size warnings, the coordinator read size warnings, and the
READ_FAILUREs with their reason codes.

Documented differences (docs/compatibility.md, read thresholds): the query
text (Cassandra prints its internal read command, `SELECT * FROM rt.t WHERE
k = 1 LIMIT 5000 ALLOW FILTERING`), the address without its port, and the
local read size's byte counts (Cassandra measures Java heap sizes).

    ROCKSANDRA_BIN=... ROCKSANDRA_PROCESS_PORT=9541 \\
        /work/main/.venv/bin/pytest -q -p no:cacheprovider tests/process/test_read_thresholds.py
"""

import re
import signal
import tempfile

import pytest
from cassandra import ReadFailure
from cassandra.cluster import Cluster

from test_durability import PORT, Node

YAML = """read_thresholds_enabled: true
tombstone_warn_threshold: 3
tombstone_failure_threshold: 10
coordinator_read_size_warn_threshold: 2KiB
coordinator_read_size_fail_threshold: 8KiB
local_read_size_warn_threshold: 4KiB
local_read_size_fail_threshold: 16KiB
"""

READ_TOO_MANY_TOMBSTONES = 0x0001
READ_SIZE = 0x0004
TOKEN_1 = "-4069959284402364209"
TOKEN_2 = "-3248873570005575792"
TOKEN_0 = "-3485513579396041028"


@pytest.fixture(scope="module")
def session():
    with tempfile.TemporaryDirectory() as d:
        node = Node(d, sync="periodic", extra_yaml=YAML)
        node.start()
        try:
            # The driver's schema reads would pass the small coordinator
            # read size thresholds (in Cassandra too): recorded without them.
            cluster = Cluster(["127.0.0.1"], port=PORT, protocol_version=5,
                              schema_metadata_enabled=False, token_metadata_enabled=False)
            s = cluster.connect()
            s.execute("CREATE KEYSPACE rt WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}")
            s.execute("CREATE TABLE rt.t (k int, c int, v text, PRIMARY KEY (k, c))")
            # Partition 1: 5 live rows and 5 deleted; partition 2: 12 deleted.
            for c in range(10):
                s.execute("INSERT INTO rt.t (k, c, v) VALUES (1, %d, 'x')" % c)
            for c in range(5):
                s.execute("DELETE FROM rt.t WHERE k = 1 AND c = %d" % c)
            for c in range(12):
                s.execute("DELETE FROM rt.t WHERE k = 2 AND c = %d" % c)
            s.execute("CREATE TABLE rt.big (k int, c int, v text, PRIMARY KEY (k, c))")
            for k, rows, letter in ((1, 3, "a"), (2, 12, "b"), (3, 40, "c")):
                for c in range(rows):
                    s.execute("INSERT INTO rt.big (k, c, v) VALUES (%d, %d, '%s')"
                              % (k, c, letter * 1000))
            s.execute("CREATE TABLE rt.w (k int, c int, v text, PRIMARY KEY (k, c))")
            for k in (1, 2):
                for c in range(10):
                    s.execute("INSERT INTO rt.w (k, c, v) VALUES (%d, %d, 'x')" % (k, c))
                for c in range(k * 4):
                    s.execute("DELETE FROM rt.w WHERE k = %d AND c = %d" % (k, c))
            s.execute("CREATE TABLE rt.s (k int PRIMARY KEY, v text)")
            for k in range(3):
                s.execute("INSERT INTO rt.s (k, v) VALUES (%d, '%s')" % (k, "a" * 1000))
            yield s
            cluster.shutdown()
        finally:
            assert node.stop(signal.SIGTERM) == 0


def warnings_of(session, query, rows):
    rs = session.execute(query)
    assert len(list(rs)) == rows
    return rs.response_future.warnings or []


def failure_of(session, query):
    with pytest.raises(ReadFailure) as failure:
        session.execute(query)
    error = failure.value
    assert (error.failures, error.received_responses, error.required_responses) == (1, 0, 1)
    return error


def test_a_read_past_the_tombstone_warn_threshold_warns_as_one_node(session):
    # Cassandra: "1 nodes scanned up to 5 tombstones and issued tombstone
    # warnings for query SELECT * FROM rt.t WHERE k = 1 LIMIT 5000 ALLOW
    # FILTERING (see tombstone_warn_threshold) with token=-4069959284402364209"
    query = "SELECT c FROM rt.t WHERE k = 1"
    assert warnings_of(session, query, 5) == [
        "1 nodes scanned up to 5 tombstones and issued tombstone warnings for query "
        "%s (see tombstone_warn_threshold) with token=%s" % (query, TOKEN_1)]
    prepared = session.prepare("SELECT c FROM rt.t WHERE k = ?")
    rs = session.execute(prepared, (1,))
    assert len(list(rs)) == 5
    [warning] = rs.response_future.warnings
    assert warning.startswith("1 nodes scanned up to 5 tombstones and issued tombstone warnings")
    assert warning.endswith("(see tombstone_warn_threshold) with token=%s" % TOKEN_1)


def test_each_partition_of_an_in_warns_apart(session):
    # Cassandra: one warning for k = 2 (8 tombstones), one for k = 1 (4).
    warnings = warnings_of(session, "SELECT c FROM rt.w WHERE k IN (1, 2)", 8)
    assert sorted(warnings) == sorted(
        "1 nodes scanned up to %d tombstones and issued tombstone warnings for query "
        "SELECT c FROM rt.w WHERE k IN (1, 2) (see tombstone_warn_threshold) with token=%s"
        % (count, token) for count, token in ((4, TOKEN_1), (8, TOKEN_2)))
    # A partition under the threshold says nothing.
    assert len(warnings_of(session, "SELECT c FROM rt.t WHERE k IN (1, 3)", 5)) == 1


def test_a_read_past_the_tombstone_failure_threshold_fails(session):
    # Cassandra: 'Operation failed - 1 nodes scanned over 11 tombstones and
    # aborted the query SELECT * FROM rt.t WHERE k = 2 LIMIT 5000 ALLOW
    # FILTERING (see tombstone_failure_threshold): READ_TOO_MANY_TOMBSTONES
    # from /127.0.0.1:7541'
    for query in ("SELECT c FROM rt.t WHERE k = 2", "SELECT c FROM rt.t", "SELECT c FROM rt.w"):
        error = failure_of(session, query)
        assert error.error_code_map == {"127.0.0.1": READ_TOO_MANY_TOMBSTONES}, error
        assert ("Operation failed - 1 nodes scanned over 11 tombstones and aborted the query "
                "%s (see tombstone_failure_threshold): READ_TOO_MANY_TOMBSTONES from /127.0.0.1"
                % query) in str(error), error


def test_the_coordinator_read_size_warns_and_fails(session):
    assert warnings_of(session, "SELECT v FROM rt.big WHERE k = 1", 3) == [
        "Read on table rt.big has exceeded the size warning threshold of 2,048 bytes "
        "with token: %s" % TOKEN_1]
    assert warnings_of(session, "SELECT v FROM rt.big WHERE k = 1 LIMIT 1", 1) == []
    assert warnings_of(session, "SELECT v FROM rt.s", 3) == [
        "Read on table rt.s has exceeded the size warning threshold of 2,048 bytes "
        "with token range: (-9223372036854775808, -9223372036854775808)"]
    assert warnings_of(session, "SELECT v FROM rt.s WHERE k IN (1, 2, 0)", 3) == [
        "Read on table rt.s has exceeded the size warning threshold of 2,048 bytes "
        "with tokens: [%s, %s, %s]" % (TOKEN_0, TOKEN_1, TOKEN_2)]
    assert warnings_of(session, "SELECT k, v FROM rt.s WHERE k = 1", 1) == []
    error = failure_of(session, "SELECT v FROM rt.big WHERE k = 2")
    assert error.error_code_map == {"127.0.0.1": READ_SIZE}, error
    assert ("Operation failed - Read on table rt.big has exceeded the size failure threshold "
            "of 8,192 bytes with token: %s: READ_SIZE from /127.0.0.1" % TOKEN_2) in str(error)


def test_the_local_read_size_warns_and_fails(session):
    # Cassandra: "1 nodes loaded over 15564 bytes and issued local read size
    # warnings for query ... (see local_read_size_warn_threshold) with
    # token=-3248873570005575792"; our byte counts differ (see above).
    query = "SELECT c FROM rt.big WHERE k = 2"
    [warning] = warnings_of(session, query, 12)
    assert re.fullmatch(
        r"1 nodes loaded over \d+ bytes and issued local read size warnings for query "
        r"%s \(see local_read_size_warn_threshold\) with token=%s" % (re.escape(query), TOKEN_2),
        warning), warning
    # Cassandra: 'Operation failed - 1 nodes loaded over 16856 bytes and
    # aborted the query ... (see local_read_size_fail_threshold): READ_SIZE
    # from /127.0.0.1:7541'
    for query in ("SELECT c FROM rt.big WHERE k = 3", "SELECT v FROM rt.big WHERE k = 3",
                  "SELECT k, c FROM rt.big", "SELECT count(*) FROM rt.big WHERE k = 3"):
        error = failure_of(session, query)
        assert error.error_code_map == {"127.0.0.1": READ_SIZE}, error
        assert re.search(
            r"Operation failed - 1 nodes loaded over \d+ bytes and aborted the query %s "
            r"\(see local_read_size_fail_threshold\): READ_SIZE from /127\.0\.0\.1"
            % re.escape(query), str(error)), error

"""Secondary indexes in a cluster of three real nodes: the index is global
(its entries partitioned by the indexed value and replicated as the
keyspace is), written through the coordinator with the base write, built
over existing data through the cluster, and every node answers indexed
queries as the filtered scan of an unindexed twin table does, while values
change and rows are deleted through other coordinators. See harness.py.

    ROCKSANDRA_CLUSTER_NET=127.0.0.9 /work/main/.venv/bin/pytest -q -p no:cacheprovider \\
        tests/cluster/test_secondary_index.py
"""

from cassandra import ConsistencyLevel as CL
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement

from harness import ADDRESSES, Nodes

THREE = ADDRESSES[:3]
QUERIES = [
    "k, c, v FROM ix.? WHERE v = 1",
    "k, c, s FROM ix.? WHERE s = 2",
    "k, c FROM ix.? WHERE l CONTAINS 3",
    "k, c FROM ix.? WHERE v = 2 PER PARTITION LIMIT 1",
    "k, c FROM ix.? WHERE v = 0 LIMIT 9",
]


def rows(session, query, cl=CL.QUORUM, fetch_size=None):
    stmt = SimpleStatement(query, consistency_level=cl, fetch_size=fetch_size)
    return [tuple(r) for r in session.execute(stmt)]


def same_everywhere(sessions):
    """Every node answers each indexed query on t as ALLOW FILTERING on u."""
    for q in QUERIES:
        expected = rows(sessions[THREE[0]], "SELECT %s ALLOW FILTERING" % q.replace("?", "u"))
        assert expected, q
        for ip, s in sessions.items():
            indexed = "SELECT " + q.replace("?", "t")
            assert rows(s, indexed) == expected, (ip, indexed)
            assert rows(s, indexed, fetch_size=7) == expected, (ip, indexed, "paged")


def write_both(session, statement, args):
    for name in ("t", "u"):
        prepared = session.prepare(statement.replace("ix.?", "ix." + name))
        prepared.consistency_level = CL.QUORUM
        results = execute_concurrent_with_args(session, prepared, args, concurrency=16)
        assert all(ok for ok, _ in results)


def test_indexes_across_three_nodes():
    nodes = Nodes()
    try:
        for ip in THREE:
            nodes.start(ip)
        nodes.wait_status({ip: "UN" for ip in THREE})
        sessions = {ip: nodes.connect(ip) for ip in THREE}
        first, second, third = (sessions[ip] for ip in THREE)
        first.execute("CREATE KEYSPACE ix WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 2}")
        for name in ("t", "u"):
            first.execute("CREATE TABLE ix.%s (k int, c int, v int, s int STATIC, l list<int>, "
                          "PRIMARY KEY (k, c))" % name)
        # One index before the data, two built over it.
        first.execute("CREATE INDEX t_v ON ix.t (v)")
        write_both(second, "INSERT INTO ix.? (k, c, v, l) VALUES (?, ?, ?, ?)",
                   [(k, c, (k + c) % 3, [c % 4, k % 5]) for k in range(60) for c in range(4)])
        write_both(third, "INSERT INTO ix.? (k, s) VALUES (?, ?)",
                   [(k, k % 3) for k in range(70)])
        third.execute("CREATE INDEX t_s ON ix.t (s)")
        second.execute("CREATE INDEX t_l ON ix.t (l)")
        # The index tables are storage, not tables.
        for ip, s in sessions.items():
            tables = {r.table_name for r in s.execute(
                "SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'ix'")}
            assert tables == {"t", "u"}, ip
            indexes = {r.index_name for r in s.execute(
                "SELECT index_name FROM system_schema.indexes WHERE keyspace_name = 'ix'")}
            assert indexes == {"t_v", "t_s", "t_l"}, ip
        same_everywhere(sessions)
        # Changes through one coordinator, read through the others.
        write_both(first, "UPDATE ix.? SET v = ? WHERE k = ? AND c = ?",
                   [((k + 1) % 3, k, 1) for k in range(0, 60, 2)])
        write_both(second, "DELETE FROM ix.? WHERE k = ? AND c = ?",
                   [(k, 2) for k in range(0, 60, 3)])
        write_both(third, "DELETE FROM ix.? WHERE k = ?", [(k,) for k in range(0, 70, 7)])
        write_both(first, "UPDATE ix.? SET s = ? WHERE k = ?", [(2, k) for k in range(1, 70, 5)])
        write_both(second, "UPDATE ix.? SET l = l - [3] WHERE k = ? AND c = ?",
                   [(k, 3) for k in range(0, 60, 2)])
        same_everywhere(sessions)
        # Stale entries were cleaned on the way: the answers stay the same.
        same_everywhere(sessions)
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), "unclean stops: %s" % codes

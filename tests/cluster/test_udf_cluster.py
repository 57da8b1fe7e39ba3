"""User-defined functions and aggregates in a cluster: a CREATE through one
node reaches the others with the schema (the whole schema travels, so
functions and aggregates go with tables), drivers on another node see the
SCHEMA_CHANGE and the metadata, and every node runs the calls. Two nodes on
loopback (ROCKSANDRA_CLUSTER_NET; see harness.py)."""

import os

from harness import ADDRESSES, Nodes, wait_until

A, B = ADDRESSES[:2]


def test_functions_and_aggregates_spread_with_the_schema():
    nodes = Nodes()
    try:
        config = os.path.join(nodes.root, "udf.yaml")
        with open(config, "w") as f:
            f.write("user_defined_functions_enabled: true\n")
        for ip in (A, B):
            nodes.start(ip, extra=["--config", config])
        nodes.wait_status({A: "UN", B: "UN"})
        a, b = nodes.connect(A), nodes.connect(B)
        a.execute("CREATE KEYSPACE ks WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 2}")
        a.execute("CREATE TABLE ks.t (k int, c int, v int, PRIMARY KEY (k, c))")
        a.execute("CREATE FUNCTION ks.acc (s int, v int) RETURNS NULL ON NULL INPUT "
                  "RETURNS int LANGUAGE java AS 'return s + v;'")
        a.execute("CREATE AGGREGATE ks.total (int) SFUNC acc STYPE int INITCOND 100")
        for c in range(5):
            a.execute("INSERT INTO ks.t (k, c, v) VALUES (1, %d, %d)" % (c, c))
        rows = b.execute("SELECT function_name FROM system_schema.functions "
                         "WHERE keyspace_name = 'ks'")
        assert [r.function_name for r in rows] == ["acc"]
        assert b.execute("SELECT ks.total(v) FROM ks.t WHERE k = 1").one()[0] == 110
        assert b.execute("SELECT ks.acc(v, 1) FROM ks.t WHERE k = 1 AND c = 4").one()[0] == 5
        cluster_b = nodes.clusters[-1]
        # The driver learns of the keyspace itself from a schema event too.
        def sees_aggregate():
            keyspace = cluster_b.metadata.keyspaces.get("ks")
            return keyspace is not None and "total(int)" in keyspace.aggregates
        wait_until(sees_aggregate, 10, what="node B's driver sees the aggregate")
        b.execute("DROP AGGREGATE ks.total")
        rows = a.execute("SELECT aggregate_name FROM system_schema.aggregates "
                         "WHERE keyspace_name = 'ks'")
        assert list(rows) == []
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), "unclean stops: %s" % codes

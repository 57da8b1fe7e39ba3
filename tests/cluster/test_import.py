"""`nodetool import` in a real 2-node cluster (RF 1): it runs on the node
it is sent to and loads only the partitions that node replicates (all of
them with --no-tokens), so each node restores its own share from its own
snapshot. See harness.py for how nodes run.

    ROCKSANDRA_CLUSTER_NET=127.0.0.4 /work/main/.venv/bin/pytest -q -p no:cacheprovider \
        tests/cluster/test_import.py
"""

import os
import re

import pytest
from cassandra import ConsistencyLevel as CL

from harness import ADDRESSES, Nodes, stmt

A, B = ADDRESSES[:2]
KEYS = range(40)


@pytest.fixture(scope="module")
def two():
    nodes = Nodes()
    try:
        for ip in (A, B):
            nodes.start(ip)
        nodes.wait_status({A: "UN", B: "UN"})
        yield nodes
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), "unclean stops: %s" % codes


def loaded_counts(node):
    """(loaded, stored) of each import the node logged, in order."""
    pattern = r"imported imp\.t from \S+: (\d+) of (\d+) stored entries loaded"
    return [(int(a), int(b)) for a, b in re.findall(pattern, node.log_text())]


def test_each_node_imports_the_partitions_it_replicates(two):
    s = two.connect(A, pinned=False)
    s.execute("CREATE KEYSPACE imp WITH replication = "
              "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE imp.t (k int PRIMARY KEY, v text)")
    for k in KEYS:
        s.execute(stmt("INSERT INTO imp.t (k, v) VALUES (%d, 'v%d')" % (k, k), CL.ONE))
    owner = {k: two[A].nodetool("getendpoints", "imp", "t", str(k)).stdout.split()
             for k in KEYS}
    on_a = {k for k in KEYS if owner[k] == [A]}
    assert 0 < len(on_a) < len(KEYS), owner
    snapshot = {}
    for ip in (A, B):
        two[ip].nodetool("snapshot", "-t", "S")
        snapshot[ip] = os.path.join(two[ip].data_dir, "snapshots", "S")

    s.execute(stmt("TRUNCATE imp.t", CL.ALL))
    select = stmt("SELECT k, v FROM imp.t", CL.ONE)
    assert list(s.execute(select)) == []

    # B's snapshot on A: none of its partitions is A's.
    assert two[A].nodetool("import", "imp", "t", snapshot[B]).stdout == ""
    assert list(s.execute(select)) == []
    (loaded, stored), = loaded_counts(two[A])
    assert loaded == 0 and stored == len(KEYS) - len(on_a)

    two[A].nodetool("import", "imp", "t", snapshot[A])
    assert {r.k: r.v for r in s.execute(select)} == {k: "v%d" % k for k in on_a}
    two[B].nodetool("import", "imp", "t", snapshot[B])
    assert {r.k: r.v for r in s.execute(select)} == {k: "v%d" % k for k in KEYS}

    # --no-tokens loads partitions the node does not replicate too.
    two[A].nodetool("import", "--no-tokens", "imp", "t", snapshot[B])
    loaded, stored = loaded_counts(two[A])[-1]
    assert loaded == stored == len(KEYS) - len(on_a)

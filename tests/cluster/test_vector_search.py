"""ANN queries (`ORDER BY v ANN OF [..] LIMIT n`) in a cluster of three real
nodes, RF=2: every replica answers from the graph of its own data for the
token ranges the coordinator gives it, and the coordinator ranks the
replies. The rows must be the exact top-k a full ranking computed here
gives, from every coordinator and at every consistency level (Cassandra
runs top-K queries at ONE and warns when another level was asked for),
from the graphs once built (each node's `ann_searches` counter says which
answered), with the writes made after the first query, and a range without
a live replica fails the query with Unavailable. Rows a replica receives as
streamed files (repair) bypass the write hook: its graph is dropped and
rebuilt, and finds them. See harness.py.

    ROCKSANDRA_CLUSTER_ADDRESSES=127.0.0.46,127.0.0.47,127.0.0.48 \\
    ROCKSANDRA_ANN_METRICS_PORTS=9261,9262,9263 \\
        /work/main/.venv/bin/pytest -q -p no:cacheprovider tests/cluster/test_vector_search.py
"""

import os
import random
import re
import socket
import struct
import urllib.request

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra import Unavailable
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement

from harness import ADDRESSES, Nodes, wait_until

THREE = ADDRESSES[:3]
DIMENSION = 8
ROWS = 3000
LIMIT = 10
DOWNGRADED = "Downgrading the consistency level to ONE."
SAMPLE = re.compile(r'^rocksandra_ann_searches_total\{answered_by="(\w+)"\} (\d+)', re.M)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics_ports():
    listed = [int(p) for p in os.environ.get("ROCKSANDRA_ANN_METRICS_PORTS", "").split(",") if p]
    return listed if len(listed) >= 3 else [free_port() for _ in THREE]


def f32(x):
    """x as the float the driver sends (a 32-bit float)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def random_vector(rng):
    return [f32(rng.uniform(-1, 1)) for _ in range(DIMENSION)]


def score(a, b):
    """Cassandra's euclidean similarity: 1 / (1 + squared distance)."""
    return 1.0 / (1.0 + sum((x - y) * (x - y) for x, y in zip(a, b)))


def searches(node):
    """{'graph': n, 'scan': n}: the ANN searches this replica answered."""
    url = "http://127.0.0.1:%d/metrics" % node.metrics_port
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    return {m.group(1): int(m.group(2)) for m in SAMPLE.finditer(text)}


def ann(session, query, cl=CL.ONE, limit=LIMIT):
    stmt = SimpleStatement("SELECT k, c, v FROM vs.t ORDER BY v ANN OF %s LIMIT %d"
                           % (query, limit), consistency_level=cl)
    future = session.execute_async(stmt)
    rows = [(r.k, r.c) for r in future.result()]
    return rows, future.warnings or []


def check_top(rows, data, query, limit=LIMIT):
    """`rows` are the exact top `limit` of `data` ({(k, c): vector}) by
    similarity to `query`: the same keys in the same order, but for rows
    whose scores tie within float precision."""
    ranked = sorted(data, key=lambda key: -score(data[key], query))
    expected = ranked[:limit]
    assert len(rows) == len(expected), (rows, expected)
    got = [score(data[key], query) for key in rows]
    want = [score(data[key], query) for key in expected]
    for g, w, key in zip(got, want, rows):
        assert abs(g - w) <= 1e-6 * max(w, 1e-30), (rows, expected)
        assert key in data
    assert len(set(rows)) == len(rows), rows


def write(session, rows):
    prepared = session.prepare("INSERT INTO vs.t (k, c, v) VALUES (?, ?, ?)")
    prepared.consistency_level = CL.QUORUM
    results = execute_concurrent_with_args(session, prepared, rows, concurrency=32)
    assert all(ok for ok, _ in results)


@pytest.fixture
def cluster():
    nodes = Nodes()
    try:
        for ip, port in zip(THREE, metrics_ports()):
            nodes.add(ip, metrics_port=port)
            nodes.start(ip)
        nodes.wait_status({ip: "UN" for ip in THREE})
        yield nodes
    finally:
        nodes.close()


def test_ann_queries_are_answered_from_each_replicas_graph(cluster):
    nodes = cluster
    sessions = {ip: nodes.connect(ip) for ip in THREE}
    first = sessions[THREE[0]]
    first.execute("CREATE KEYSPACE vs WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 2}")
    first.execute("CREATE TABLE vs.t (k int, c int, v vector<float, %d>, PRIMARY KEY (k, c))"
                  % DIMENSION)
    first.execute("CREATE CUSTOM INDEX ON vs.t (v) USING 'StorageAttachedIndex' "
                  "WITH OPTIONS = {'similarity_function': 'euclidean'}")
    rng = random.Random(46)
    data = {(i // 3, i % 3): random_vector(rng) for i in range(ROWS)}
    items = [(k, c, v) for (k, c), v in data.items()]
    # Through every coordinator in turn.
    for n, ip in enumerate(THREE):
        write(sessions[ip], items[n::3])

    # The first queries start each replica's graph build; until it is
    # built a replica answers by scan, with the same rows.
    query = random_vector(rng)
    for ip in THREE:
        rows, _ = ann(sessions[ip], query)
        check_top(rows, data, query)

    def graphs_answer():
        for ip in THREE:
            ann(sessions[ip], query)
        counts = {ip: searches(nodes[ip]) for ip in THREE}
        return all(c.get("graph", 0) > 0 for c in counts.values()) or counts
    wait_until(graphs_answer, 120, interval=1, what="every replica answering from its graph")

    # Every coordinator, every level: the exact top 10, from the graphs.
    before = {ip: searches(nodes[ip]) for ip in THREE}
    queries = [random_vector(rng) for _ in range(4)]
    for ip in THREE:
        for cl in (CL.ONE, CL.QUORUM, CL.ALL):
            for q in queries:
                rows, warnings = ann(sessions[ip], q, cl)
                check_top(rows, data, q)
                downgraded = any(DOWNGRADED in w for w in warnings)
                assert downgraded == (cl != CL.ONE), (cl, warnings)
    after = {ip: searches(nodes[ip]) for ip in THREE}
    for ip in THREE:
        assert after[ip]["scan"] == before[ip]["scan"], (ip, before, after)
    asked = sum(after[ip]["graph"] - before[ip]["graph"] for ip in THREE)
    # Each query asks two or three replicas (RF=2 on three nodes).
    assert asked >= 2 * 3 * 3 * len(queries), (before, after)

    # Writes made after the graphs were built are found: new rows next to
    # a query vector, an old row moved there, a row of the top deleted.
    target = random_vector(rng)
    fresh = {(5000 + i, 0): [f32(x + 0.001 * (i + 1)) for x in target] for i in range(6)}
    write(sessions[THREE[1]], [(k, c, v) for (k, c), v in fresh.items()])
    data.update(fresh)
    moved = (7, 1)
    data[moved] = [f32(x - 0.0005) for x in target]
    write(sessions[THREE[2]], [(moved[0], moved[1], data[moved])])
    gone = (5000, 0)
    sessions[THREE[0]].execute(SimpleStatement(
        "DELETE FROM vs.t WHERE k = %d AND c = %d" % gone, consistency_level=CL.QUORUM))
    del data[gone]
    before = {ip: searches(nodes[ip]) for ip in THREE}
    for ip in THREE:
        rows, _ = ann(sessions[ip], target)
        check_top(rows, data, target)
        assert moved in rows and gone not in rows, rows
    after = {ip: searches(nodes[ip]) for ip in THREE}
    for ip in THREE:
        assert after[ip]["scan"] == before[ip]["scan"], (ip, before, after)
    # The largest LIMIT (the graph asked for every point it holds).
    for ip in THREE:
        rows, _ = ann(sessions[ip], target, limit=1000)
        check_top(rows, data, target, limit=1000)

    # One node down: every range still has a live replica, and ALL (run
    # at ONE) answers from the other two.
    down = THREE[2]
    nodes[down].terminate()
    nodes.wait_status({down: "DN"}, askers=THREE[:2])
    for ip in THREE[:2]:
        for cl in (CL.ONE, CL.ALL):
            rows, _ = ann(sessions[ip], target, cl)
            check_top(rows, data, target)

    # Two down: the ranges only they replicate have no live replica.
    nodes[THREE[1]].terminate()
    nodes.wait_status({THREE[1]: "DN"}, askers=THREE[:1])
    for cl in (CL.ONE, CL.ALL):
        with pytest.raises(Unavailable):
            ann(first, target, cl)


def test_streamed_rows_reach_the_graph_after_a_repair():
    """Rows a replica receives as files (repair streams them) bypass the
    write hook: its graph is dropped and rebuilt from storage, so it finds
    them. RF=3 at ONE: each coordinator asks only itself."""
    nodes = Nodes()
    config = os.path.join(nodes.root, "no-hints.yaml")
    with open(config, "w") as f:
        f.write("hinted_handoff_enabled: false\n")
    try:
        for ip, port in zip(THREE, metrics_ports()):
            nodes.add(ip, metrics_port=port, extra=["--config", config])
            nodes.start(ip)
        nodes.wait_status({ip: "UN" for ip in THREE})
        a, c = THREE[0], THREE[2]
        sa = nodes.connect(a)
        sa.execute("CREATE KEYSPACE vs WITH replication = "
                   "{'class': 'SimpleStrategy', 'replication_factor': 3}")
        sa.execute("CREATE TABLE vs.t (k int, c int, v vector<float, %d>, PRIMARY KEY (k, c))"
                   % DIMENSION)
        sa.execute("CREATE CUSTOM INDEX ON vs.t (v) USING 'StorageAttachedIndex' "
                   "WITH OPTIONS = {'similarity_function': 'euclidean'}")
        rng = random.Random(47)
        data = {(k, 0): random_vector(rng) for k in range(1000)}
        write(sa, [(k, c_, v) for (k, c_), v in data.items()])
        target = random_vector(rng)

        def answered_by_graph(ip, expect):
            """Waits until `ip`'s graph answers its own query, then checks it."""
            session = nodes.connect(ip)

            def graph_answers():
                before = searches(nodes[ip]).get("graph", 0)
                rows, _ = ann(session, target)
                return (searches(nodes[ip]).get("graph", 0) > before) or rows
            wait_until(graph_answers, 120, interval=1, what="%s answering from its graph" % ip)
            rows, _ = ann(session, target)
            check_top(rows, expect, target)
            return rows

        answered_by_graph(c, data)
        # C misses rows written next to the target; no hint will bring them.
        nodes[c].terminate()
        nodes.wait_status({c: "DN"}, askers=THREE[:2])
        fresh = {(2000 + i, 0): [f32(x + 0.001 * (i + 1)) for x in target] for i in range(5)}
        write(sa, [(k, c_, v) for (k, c_), v in fresh.items()])
        nodes[c].start()
        nodes.wait_status({ip: "UN" for ip in THREE})
        # Its graph (saved at its stop and loaded at its start, or rebuilt)
        # has the rows it holds: not the fresh ones.
        stale = answered_by_graph(c, data)
        assert not set(stale) & set(fresh), stale
        out = nodes[c].nodetool("repair", "vs", timeout=120)
        assert "Repair completed" in out.stdout, out.stdout + out.stderr
        data.update(fresh)
        rows = answered_by_graph(c, data)
        assert set(fresh) <= set(rows), rows
    finally:
        nodes.close()

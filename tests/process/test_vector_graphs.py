"""The ANN graph of an SAI vector index across restarts of the real
`rocksandra` process: saved at a clean stop (SIGTERM) and loaded at the next
start, rebuilt from storage after kill -9; the same ANN queries answer the
same rows either way, and writes after a restart are found.

    ROCKSANDRA_BIN=target/debug/rocksandra pytest tests/process/test_vector_graphs.py
"""

import math
import os
import random
import re
import signal
import time

# `node`: a server on a data directory of its own (test_durability's fixture).
from test_durability import node  # noqa: F401

POINTS = 400
DIMENSION = 8
LIMIT = 10
GRAPH = "ks.t.v"


def vectors(seed, count):
    rng = random.Random(seed)
    return [[rng.uniform(-1.0, 1.0) for _ in range(DIMENSION)] for _ in range(count)]


def cosine_score(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return (1.0 + dot / norms) / 2.0


def exact_top(stored, query):
    ranked = sorted(stored, key=lambda p: -cosine_score(stored[p], query))
    return ranked[:LIMIT]


def ann(session, query):
    rows = session.execute("SELECT p FROM ks.t ORDER BY v ANN OF %s LIMIT %d" % (query, LIMIT))
    return [r.p for r in rows]


def log_text(node):
    with open(os.path.join(node.data_dir, "server.log"), "rb") as f:
        return f.read().decode("utf-8", "replace")


def wait_for_log(node, pattern, since, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if re.search(pattern, log_text(node)[since:]):
            return
        time.sleep(0.1)
    raise AssertionError("no log line %r within %ds" % (pattern, timeout))


def create_filled_table(session, seed, count):
    """ks.t with a vector SAI index and `count` rows: ({p: vector}, the
    prepared INSERT)."""
    session.execute("CREATE KEYSPACE ks WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE ks.t (p int PRIMARY KEY, v vector<float, %d>)" % DIMENSION)
    session.execute("CREATE INDEX ON ks.t (v) USING 'sai'")
    insert = session.prepare("INSERT INTO ks.t (p, v) VALUES (?, ?)")
    stored = dict(enumerate(vectors(seed, count)))
    for p, v in stored.items():
        session.execute(insert, (p, v))
    return stored, insert


def restart(node):
    since = len(log_text(node))
    node.start()
    cluster, session = node.session()
    return since, cluster, session


def test_the_graph_is_saved_at_stop_and_rebuilt_after_kill_9(node):
    node.start()
    cluster, session = node.session()
    stored, insert = create_filled_table(session, 1, POINTS)
    queries = vectors(2, 5)
    # The first ANN query starts the build; it answers by scan meanwhile.
    first = [ann(session, q) for q in queries]
    wait_for_log(node, r"built the ANN graph of %s from storage: %d points" % (GRAPH, POINTS), 0)
    answers = [ann(session, q) for q in queries]
    assert answers == first
    assert answers == [exact_top(stored, q) for q in queries]
    cluster.shutdown()
    assert node.stop(signal.SIGTERM) == 0
    assert "saved the ANN graph of %s: %d points" % (GRAPH, POINTS) in log_text(node)
    graphs = os.path.join(node.data_dir, "data", "vector_graphs")
    # Our manifest and hnsw_rs's two files, of one graph.
    files = os.listdir(graphs)
    assert sorted(f.split(".", 1)[1] for f in files) == ["hnsw.data", "hnsw.graph", "manifest"]
    assert len({f.split(".", 1)[0] for f in files}) == 1

    # A clean restart loads it, and deletes the saved files.
    since, cluster, session = restart(node)
    log = log_text(node)[since:]
    assert "loaded the ANN graph of %s saved at the last stop: %d points" % (GRAPH, POINTS) in log
    assert "built the ANN graph" not in log
    assert not os.path.exists(graphs)
    assert [ann(session, q) for q in queries] == answers
    # Writes after the restart reach the loaded graph.
    stored[POINTS] = list(queries[0])
    session.execute(insert, (POINTS, stored[POINTS]))
    assert ann(session, queries[0])[0] == POINTS
    answers = [exact_top(stored, q) for q in queries]
    assert [ann(session, q) for q in queries] == answers
    assert "built the ANN graph" not in log_text(node)[since:]
    cluster.shutdown()

    # kill -9: nothing saved, the graph is rebuilt at start from storage.
    assert node.stop(signal.SIGKILL) != 0
    since, cluster, session = restart(node)
    wait_for_log(node, r"built the ANN graph of %s from storage: %d points" % (GRAPH, POINTS + 1),
                 since)
    assert "loaded the ANN graph" not in log_text(node)[since:]
    assert [ann(session, q) for q in queries] == answers
    cluster.shutdown()
    assert node.stop(signal.SIGTERM) == 0


def test_a_graph_saved_before_later_writes_is_not_loaded(node):
    """A saved graph whose storage was written after it (here: a manifest
    put back after a restart and a write) is refused and rebuilt."""
    import shutil
    node.start()
    cluster, session = node.session()
    stored, insert = create_filled_table(session, 3, 100)
    queries = vectors(4, 3)
    ann(session, queries[0])
    wait_for_log(node, r"built the ANN graph of %s from storage: 100 points" % GRAPH, 0)
    cluster.shutdown()
    assert node.stop(signal.SIGTERM) == 0
    graphs = os.path.join(node.data_dir, "data", "vector_graphs")
    kept = os.path.join(node.data_dir, "kept_graphs")
    shutil.copytree(graphs, kept)

    since, cluster, session = restart(node)
    assert "loaded the ANN graph of %s" % GRAPH in log_text(node)[since:]
    stored[100] = queries[1]
    session.execute(insert, (100, queries[1]))
    cluster.shutdown()
    assert node.stop(signal.SIGKILL) != 0
    shutil.copytree(kept, graphs)

    since, cluster, session = restart(node)
    wait_for_log(node, r"built the ANN graph of %s from storage: 101 points" % GRAPH, since)
    log = log_text(node)[since:]
    assert "not loading the saved ANN graph of %s" % GRAPH in log
    assert "written since" in log
    assert "loaded the ANN graph" not in log
    assert not os.path.exists(graphs)
    assert [ann(session, q) for q in queries] == [exact_top(stored, q) for q in queries]
    cluster.shutdown()
    assert node.stop(signal.SIGTERM) == 0

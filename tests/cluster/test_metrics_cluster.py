"""The metrics endpoint of cluster members: with a replica down, a write
at ALL is Unavailable and writes at ONE are hinted; once it is back, the
hints are delivered. Each node serves its metrics on a port of its own.

    ROCKSANDRA_BIN=target/debug/rocksandra pytest tests/cluster/test_metrics_cluster.py
"""

import re
import socket
import urllib.request

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra import Unavailable

from harness import ADDRESSES, Nodes, bound, wait_until

A, B = ADDRESSES[:2]
SAMPLE = re.compile(r"^([a-z_]+)(\{.*\})? (\S+)$")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(node):
    url = "http://127.0.0.1:%d/metrics" % node.metrics_port
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    samples = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m:
            samples[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return samples


def two_nodes(yaml="hinted_handoff_enabled: true\n"):
    """A and B, each with its metrics endpoint, and `yaml` as their
    configuration; closed when the generator ends."""
    nodes = Nodes()
    try:
        config = nodes.root + "/node.yaml"
        with open(config, "w") as f:
            f.write(yaml)
        for ip in (A, B):
            nodes.add(ip, metrics_port=free_port(), extra=["--config", config])
            nodes.start(ip)
        nodes.wait_status({A: "UN", B: "UN"})
        yield nodes
    finally:
        nodes.close()


@pytest.fixture
def two():
    yield from two_nodes()


def test_unavailables_and_hints_are_counted(two):
    nodes = two
    session = nodes.connect(A)
    session.execute("CREATE KEYSPACE m WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 2}")
    session.execute("CREATE TABLE m.t (k int PRIMARY KEY, v int)")
    insert = session.prepare("INSERT INTO m.t (k, v) VALUES (?, ?)")
    select = session.prepare("SELECT v FROM m.t WHERE k = ?")
    for k in range(10):
        session.execute(bound(insert, (k, k), CL.ALL))
        assert session.execute(bound(select, (k,), CL.ALL)).one().v == k
    before = scrape(nodes[A])
    assert before['rocksandra_client_request_latency_seconds_count{scope="Write",cl="ALL"}'] == 10
    assert before['rocksandra_thread_pool_completed_total{pool="MutationStage"}'] >= 10
    assert before['rocksandra_thread_pool_completed_total{pool="ReadStage"}'] >= 10

    nodes[B].kill9()
    nodes.wait_status({A: "UN", B: "DN"}, askers=[A], timeout=30)
    hinted = 20
    for k in range(100, 100 + hinted):
        session.execute(bound(insert, (k, k), CL.ONE))
    with pytest.raises(Unavailable):
        session.execute(bound(insert, (1, 1), CL.ALL))
    with pytest.raises(Unavailable):
        session.execute(bound(select, (1,), CL.QUORUM))
    down = scrape(nodes[A])
    assert down['rocksandra_client_request_unavailables_total{scope="Write"}'] == 1
    assert down['rocksandra_client_request_unavailables_total{scope="Read"}'] == 1
    assert down['rocksandra_client_request_timeouts_total{scope="Write"}'] == 0
    assert down["rocksandra_hints_written_total"] >= hinted
    assert down["rocksandra_hints_pending_bytes"] > 0
    assert down['rocksandra_client_request_latency_seconds_count{scope="Write",cl="ONE"}'] \
        == hinted

    nodes[B].start()
    nodes.wait_status({A: "UN", B: "UN"}, askers=[A, B], timeout=30)

    def delivered():
        samples = scrape(nodes[A])
        return samples["rocksandra_hints_delivered_total"] >= hinted or samples
    wait_until(delivered, 60, interval=0.5, what="hints delivered to B")
    wait_until(lambda: scrape(nodes[A])["rocksandra_hints_pending_bytes"] == 0, 30,
               what="A's hints drained")


@pytest.fixture
def two_without_hints():
    yield from two_nodes("hinted_handoff_enabled: false\n")


def test_read_repairs_are_counted(two_without_hints):
    """Without hints, a replica cut off during writes is repaired by the
    first read at ALL that sees it differ."""
    nodes = two_without_hints
    session = nodes.connect(A)
    session.execute("CREATE KEYSPACE rr WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 2}")
    session.execute("CREATE TABLE rr.t (k int PRIMARY KEY, v int)")
    insert = session.prepare("INSERT INTO rr.t (k, v) VALUES (?, ?)")
    select = session.prepare("SELECT v FROM rr.t WHERE k = ?")
    keys = range(10)
    try:
        nodes[A].nodetool("isolate", B)
        nodes[B].nodetool("isolate", A)
        for k in keys:
            session.execute(bound(insert, (k, k), CL.ONE))
    finally:
        nodes[A].nodetool("isolate")
        nodes[B].nodetool("isolate")
    nodes.wait_status({A: "UN", B: "UN"}, timeout=30)
    assert scrape(nodes[A])["rocksandra_read_repair_total"] == 0
    for k in keys:
        assert session.execute(bound(select, (k,), CL.ALL)).one().v == k
    assert scrape(nodes[A])["rocksandra_read_repair_total"] >= len(keys)
    assert scrape(nodes[B])["rocksandra_read_repair_total"] == 0
    on_b = nodes.connect(B)
    local = on_b.prepare("SELECT v FROM rr.t WHERE k = ?")
    for k in keys:
        assert on_b.execute(bound(local, (k,), CL.ONE)).one().v == k

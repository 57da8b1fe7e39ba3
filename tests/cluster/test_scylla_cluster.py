"""The Rust `scylla` driver against a real 3-node cluster: discovery from one
contact point, token ownership and token-aware routing that agree with the
server's ring, and failover at QUORUM while a node is killed with kill -9 and
restarted. The checks live in tests/drivers/rust/tests/scylla_cluster.rs; this
file starts the nodes, creates the schema, hands the Rust tests the server's
ring, and kills and restarts the node when the failover test asks:

    Rust test                       this file
    writes, reads; "mid-loop"  ->   kill -9 the victim; "killed"
    keeps going; "restart"     ->   start it, wait until all see it UN; "restarted"
    keeps going until the driver uses the victim again, then reads every
    acknowledged key back at QUORUM

    ROCKSANDRA_CLUSTER_NET=127.0.0.3 /work/main/.venv/bin/pytest -q -p no:cacheprovider \
        tests/cluster/test_scylla_cluster.py
"""

import os
import subprocess
import time

from harness import ADDRESSES, CQL_PORT, Nodes
from harness import parse_ranges
from test_cluster import NUM_TOKENS, create_keyspace

A, B, C = ADDRESSES[:3]
THREE = [A, B, C]
# The driver's only contact point, so its control connection has to move.
VICTIM = A
DRIVER_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "drivers", "rust"))
# Its own target dir, as scripts/test-server.sh builds it (never the server's).
TARGET_DIR = os.path.expanduser("~/.cache/target-drivers-rust")
BUILD_TIMEOUT_S = 1800
RUN_TIMEOUT_S = 240
CARGO_TEST = ["cargo", "test", "--locked", "--test", "scylla_cluster"]


def cargo_env(**extra):
    env = dict(os.environ, CARGO_TARGET_DIR=TARGET_DIR)
    env.update(extra)
    return env


def build_driver_tests():
    """Compiled before any node starts, so build time eats no node timeout."""
    r = subprocess.run(CARGO_TEST + ["--no-run"], cwd=DRIVER_DIR, env=cargo_env(),
                       capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert r.returncode == 0, "building the Rust driver tests failed:\n%s%s" % (r.stdout, r.stderr)


def write_server_ring(nodes, keyspace, path):
    """Every node's `describering`, which must agree, as `start end ip,ip` lines."""
    rings = {ip: parse_ranges(nodes[ip].nodetool("describering", keyspace).stdout)
             for ip in THREE}
    ring = rings[A]
    assert len(ring) == len(THREE) * NUM_TOKENS, (
        "describering %s: %d ranges, not one per token of %d nodes (colliding tokens?):\n%s"
        % (keyspace, len(ring), len(THREE), nodes[A].nodetool("ring").stdout))
    for ip, other in rings.items():
        assert other == ring, "describering on %s differs from %s" % (ip, A)
    with open(path, "w") as f:
        for start, end, endpoints in ring:
            f.write("%d %d %s\n" % (start, end, ",".join(endpoints)))


def touch(path):
    open(path, "w").close()


def test_scylla_driver_on_three_nodes():
    build_driver_tests()
    nodes = Nodes()
    proc = None
    try:
        # One node at a time, each joining a settled ring (as Cassandra wants
        # it): a node's CQL port opens before it has chosen its tokens, and
        # two nodes joining at once can pick the very same tokens.
        for i, ip in enumerate(THREE):
            nodes.start(ip)
            nodes.wait_status({other: "UN" for other in THREE[:i + 1]})
        session = nodes.connect(A)
        for keyspace, rf in (("scylla_rf2", 2), ("scylla_rf3", 3)):
            create_keyspace(session, keyspace, rf)
            session.execute("CREATE TABLE IF NOT EXISTS %s.t (k int PRIMARY KEY, v text)"
                            % keyspace)
        session.cluster.shutdown()
        ring_path = os.path.join(nodes.root, "ring-scylla_rf2.txt")
        write_server_ring(nodes, "scylla_rf2", ring_path)
        signals = os.path.join(nodes.root, "signals")
        os.mkdir(signals)

        output_path = os.path.join(nodes.root, "cargo-test.log")
        env = cargo_env(ROCKSANDRA_CLUSTER_NODES=",".join(THREE),
                        ROCKSANDRA_CLUSTER_PORT=str(CQL_PORT),
                        ROCKSANDRA_CLUSTER_RING=ring_path,
                        ROCKSANDRA_CLUSTER_SIGNALS=signals,
                        ROCKSANDRA_CLUSTER_VICTIM=VICTIM)
        started = time.monotonic()
        with open(output_path, "wb") as output:
            # One test at a time: the failover test kills a node.
            proc = subprocess.Popen(CARGO_TEST + ["--", "--test-threads=1", "--nocapture"],
                                    cwd=DRIVER_DIR, env=env, stdout=output,
                                    stderr=subprocess.STDOUT)
        choreography = []
        deadline = started + RUN_TIMEOUT_S
        while proc.poll() is None and time.monotonic() < deadline:
            if os.path.exists(os.path.join(signals, "mid-loop")) and "killed" not in choreography:
                nodes[VICTIM].kill9()
                choreography.append("killed")
                touch(os.path.join(signals, "killed"))
            if os.path.exists(os.path.join(signals, "restart")) and "restarted" not in choreography:
                nodes[VICTIM].start()
                nodes.wait_status({ip: "UN" for ip in THREE}, timeout=30)
                choreography.append("restarted")
                touch(os.path.join(signals, "restarted"))
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        elapsed = time.monotonic() - started
        with open(output_path, encoding="utf-8", errors="replace") as f:
            output = f.read()
        print(output)
        print("cargo test ran %.1f s; choreography %s" % (elapsed, choreography))
        assert elapsed < RUN_TIMEOUT_S, "cargo test still running after %ds:\n%s\n%s" % (
            RUN_TIMEOUT_S, output, nodes.logs(30))
        assert proc.returncode == 0, "cargo test --test scylla_cluster exited %s:\n%s\n%s" % (
            proc.returncode, output, nodes.logs(30))
        # Ran for real, against the cluster, through the whole kill and restart.
        assert "NOT RUN" not in output, output
        assert "test result: ok. 3 passed" in output, output
        assert choreography == ["killed", "restarted"], choreography
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), "unclean stops: %s" % codes

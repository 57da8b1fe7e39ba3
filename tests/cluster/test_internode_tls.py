"""Internode TLS (`server_encryption_options`) between real processes: two
nodes with `internode_encryption: all` and `require_client_auth: true` form a
cluster (gossip included, which then leaves UDP), replicate, and answer
nodetool given the node's configuration; a process without a certificate
signed by the truststore gets nothing: plain connections, a certificate
from another CA, or a truststore that does not know the nodes' CA. Key
material comes from scripts/tls-test-certs.sh (the openssl CLI).

    /work/main/.venv/bin/pytest -q -p no:cacheprovider tests/cluster/test_internode_tls.py
"""

import os
import socket
import subprocess
import tempfile

import pytest
from cassandra import ConsistencyLevel as CL

from harness import ADDRESSES, BIN, STORAGE_PORT, Nodes, stmt

A, B = ADDRESSES[:2]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write_config(path, keystore, truststore, extra=""):
    with open(path, "w") as f:
        f.write("server_encryption_options:\n"
                "  internode_encryption: all\n"
                "  keystore: %s\n"
                "  truststore: %s\n"
                "  require_client_auth: true\n%s" % (keystore, truststore, extra))
    return path


@pytest.fixture(scope="module")
def certs():
    d = tempfile.mkdtemp(prefix="rocksandra-internode-tls-")
    subprocess.run([os.path.join(ROOT, "scripts", "tls-test-certs.sh"), d], check=True,
                   timeout=120)
    return d


@pytest.fixture(scope="module")
def cluster(certs):
    config = write_config(os.path.join(certs, "node.yaml"), os.path.join(certs, "node.pem"),
                          os.path.join(certs, "ca.pem"))
    nodes = Nodes()
    try:
        for ip in (A, B):
            nodes.start(ip, extra=["--config", config], nodetool_config=config)
        nodes.wait_status({A: "UN", B: "UN"}, timeout=60)
        yield nodes, config
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), "unclean stops: %s" % codes


def nodetool(config, *args):
    prefix = [BIN] + (["--config", config] if config else [])
    return subprocess.run(prefix + ["nodetool", "--host", A] + list(args),
                          capture_output=True, text=True, timeout=60)


def test_nodes_replicate_over_tls(cluster):
    nodes, _ = cluster
    s = nodes.connect(A, pinned=True)
    s.execute("CREATE KEYSPACE tls_ks WITH replication = "
              "{'class': 'SimpleStrategy', 'replication_factor': 2}")
    s.execute("CREATE TABLE tls_ks.t (k int PRIMARY KEY, v text)")
    for k in range(50):
        s.execute(stmt("INSERT INTO tls_ks.t (k, v) VALUES (%d, 'v%d')" % (k, k), CL.ALL))
    other = nodes.connect(B, pinned=True)
    rows = other.execute(stmt("SELECT k, v FROM tls_ks.t", CL.ALL))
    assert sorted((r.k, r.v) for r in rows) == [(k, "v%d" % k) for k in range(50)]


def test_gossip_leaves_udp(cluster):
    # No node listens for gossip datagrams on the storage port: binding it
    # succeeds (it would fail with EADDRINUSE against a listener).
    for ip in (A, B):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.bind((ip, STORAGE_PORT))
        finally:
            sock.close()


def test_nodetool_with_the_nodes_configuration(cluster):
    _, config = cluster
    r = nodetool(config, "status")
    assert r.returncode == 0, r.stderr
    assert A in r.stdout and B in r.stdout


def test_plain_connections_are_refused(cluster):
    r = nodetool(None, "status")
    assert r.returncode != 0
    assert A not in r.stdout
    # Raw bytes in the clear get no answer either: the node waits for a TLS
    # handshake, and closes the connection when the bytes are not one.
    with socket.create_connection((A, STORAGE_PORT), timeout=5) as sock:
        sock.sendall(b"\x00\x00\x00\x10" + b"\x01" * 16)
        sock.settimeout(15)
        try:
            answer = sock.recv(4096)
        except ConnectionResetError:
            answer = b""
        assert not answer.startswith(b"\x00"), answer


def test_a_certificate_from_another_ca_is_refused(cluster, certs):
    rogue = write_config(os.path.join(certs, "rogue.yaml"), os.path.join(certs, "rogue-node.pem"),
                         os.path.join(certs, "ca.pem"))
    r = nodetool(rogue, "status")
    assert r.returncode != 0
    assert A not in r.stdout


def test_nodes_not_signed_by_the_truststore_are_not_trusted(cluster, certs):
    # nodetool holding a good certificate but trusting only another CA
    # refuses the node's certificate.
    blind = write_config(os.path.join(certs, "blind.yaml"), os.path.join(certs, "node.pem"),
                         os.path.join(certs, "rogue-ca.pem"))
    r = nodetool(blind, "status")
    assert r.returncode != 0
    assert "certificate" in r.stderr.lower() or "unknown" in r.stderr.lower(), r.stderr


def test_a_node_without_truststore_refuses_to_start(certs):
    bad = os.path.join(certs, "no-truststore.yaml")
    with open(bad, "w") as f:
        f.write("server_encryption_options:\n  internode_encryption: all\n"
                "  keystore: %s\n" % os.path.join(certs, "node.pem"))
    nodes = Nodes()
    try:
        node = nodes.add(ADDRESSES[2], extra=["--config", bad])
        code, output = node.start_refused()
        assert code != 0
        assert "server_encryption_options: internode_encryption needs a truststore" in output, \
            output
    finally:
        nodes.close()


def test_dc_encryption_between_data_centers(certs):
    # `dc`: TLS between the two data centers; the port also takes plain
    # connections (peers in the same data center), as Cassandra's does.
    config = write_config(os.path.join(certs, "dc.yaml"), os.path.join(certs, "node.pem"),
                          os.path.join(certs, "ca.pem"))
    with open(config) as f:
        text = f.read().replace("internode_encryption: all", "internode_encryption: dc")
    with open(config, "w") as f:
        f.write(text)
    c, d = ADDRESSES[2], ADDRESSES[3]
    nodes = Nodes()
    try:
        nodes.start(c, seeds=c, extra=["--config", config, "--dc", "dc1"], nodetool_config=config)
        nodes.start(d, seeds=c, extra=["--config", config, "--dc", "dc2"], nodetool_config=config)
        nodes.wait_status({c: "UN", d: "UN"}, timeout=60)
        s = nodes.connect(c, pinned=True)
        s.execute("CREATE KEYSPACE dc_ks WITH replication = "
                  "{'class': 'NetworkTopologyStrategy', 'dc1': 1, 'dc2': 1}")
        s.execute("CREATE TABLE dc_ks.t (k int PRIMARY KEY, v int)")
        for k in range(20):
            s.execute(stmt("INSERT INTO dc_ks.t (k, v) VALUES (%d, %d)" % (k, k), CL.ALL))
        rows = nodes.connect(d, pinned=True).execute(stmt("SELECT k, v FROM dc_ks.t", CL.ALL))
        assert sorted((r.k, r.v) for r in rows) == [(k, k) for k in range(20)]
        r = subprocess.run([BIN, "nodetool", "--host", c, "status"], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0 and d in r.stdout, r.stderr
    finally:
        codes = nodes.close()
    assert all(code == 0 for code in codes.values()), "unclean stops: %s" % codes

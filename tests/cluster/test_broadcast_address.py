"""broadcast_address and broadcast_rpc_address between real processes, as
Cassandra 5.0 has them. Three nodes:

- A and C listen for clients on every address (`rpc_address: 0.0.0.0`) and
  tell drivers their loopback address (`broadcast_rpc_address`);
- B listens for other nodes on its address but is known to them by another
  one (`broadcast_address`), which it listens on too
  (`listen_on_broadcast_address`): the others reach it only there.

Each node has a CQL port of its own, which drivers learn from
system.peers_v2.

system.local and system.peers(_v2) on every node tell the broadcast
addresses; a driver given only A finds B and C through system.peers_v2 and
runs queries on each; a wildcard `rpc_address` without
`broadcast_rpc_address` is refused with Cassandra's message.

    /work/main/.venv/bin/pytest -q -p no:cacheprovider tests/cluster/test_broadcast_address.py
"""

import os
import socket

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import RoundRobinPolicy, TokenAwarePolicy

from harness import ADDRESSES, NET, Nodes, stmt, wait_until

A, B, C, D = ADDRESSES[:4]
# What the other nodes know B by: an address of the same range no node
# listens on unless told to.
B_BROADCAST = "%s6" % NET


def free_port():
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def write(root, name, text):
    path = os.path.join(root, name)
    with open(path, "w") as f:
        f.write(text)
    return path


# listen address -> (broadcast address, address told to clients)
EXPECTED = {A: (A, A), B: (B_BROADCAST, B), C: (C, C)}


@pytest.fixture(scope="module")
def cluster():
    nodes = Nodes()
    # Ports of their own: a wildcard rpc_address takes its port on every address.
    ports = {ip: free_port() for ip in (A, B, C)}
    configs = {
        ip: write(nodes.root, "%s.yaml" % ip,
                  "rpc_address: 0.0.0.0\nbroadcast_rpc_address: %s\n" % ip)
        for ip in (A, C)
    }
    configs[B] = write(nodes.root, "%s.yaml" % B, "broadcast_address: %s\n"
                       "listen_on_broadcast_address: true\n" % B_BROADCAST)
    try:
        for ip in (A, B, C):
            nodes.start(ip, extra=["--config", configs[ip]], native_port=ports[ip])
        nodes.wait_status({A: "UN", B_BROADCAST: "UN", C: "UN"}, timeout=60)
        yield nodes, ports
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), "unclean stops: %s" % codes


def test_system_tables_tell_the_broadcast_addresses(cluster):
    nodes, ports = cluster
    for ip, (broadcast, rpc) in EXPECTED.items():
        s = nodes.connect(ip)
        local = s.execute("SELECT listen_address, broadcast_address, rpc_address, rpc_port "
                          "FROM system.local").one()
        assert (local.listen_address, local.broadcast_address, local.rpc_address,
                local.rpc_port) == (ip, broadcast, rpc, ports[ip])
        others = {b: (r, ports[i]) for i, (b, r) in EXPECTED.items() if i != ip}
        peers = s.execute("SELECT peer, rpc_address FROM system.peers")
        assert {p.peer: p.rpc_address for p in peers} == {b: r for b, (r, _) in others.items()}
        peers_v2 = s.execute("SELECT peer, native_address, native_port FROM system.peers_v2")
        assert {p.peer: (p.native_address, p.native_port) for p in peers_v2} == others


def test_a_driver_finds_every_node_through_a_wildcard_node(cluster):
    nodes, ports = cluster
    profile = ExecutionProfile(load_balancing_policy=TokenAwarePolicy(RoundRobinPolicy()),
                               request_timeout=20)
    driver = Cluster([A], port=ports[A], protocol_version=4, connect_timeout=10,
                     execution_profiles={EXEC_PROFILE_DEFAULT: profile})
    nodes.clusters.append(driver)
    session = driver.connect()
    hosts = driver.metadata.all_hosts()
    assert sorted((h.endpoint.address, h.endpoint.port) for h in hosts) == \
        sorted((rpc, ports[ip]) for ip, (_, rpc) in EXPECTED.items())
    wait_until(lambda: all(h.is_up for h in hosts), 20, what="every host up")
    by_rpc = {rpc: broadcast for broadcast, rpc in EXPECTED.values()}
    session.execute("CREATE KEYSPACE bcast WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    session.execute("CREATE TABLE bcast.t (k int PRIMARY KEY, v text)")
    for n, host in enumerate(sorted(hosts, key=lambda h: h.endpoint.address)):
        local = session.execute("SELECT broadcast_address FROM system.local", host=host).one()
        assert local.broadcast_address == by_rpc[host.endpoint.address]
        session.execute(stmt("INSERT INTO bcast.t (k, v) VALUES (%d, '%s')"
                             % (n, host.endpoint.address), CL.ALL), host=host)
    for host in hosts:
        rows = session.execute(stmt("SELECT k, v FROM bcast.t", CL.ALL), host=host)
        assert sorted(r.v for r in rows) == sorted(rpc for _, rpc in EXPECTED.values())


def test_a_wildcard_rpc_address_needs_a_broadcast_rpc_address(cluster):
    nodes, _ = cluster
    for text, message in [
        ("rpc_address: 0.0.0.0\n",
         "If rpc_address is set to a wildcard address (0.0.0.0), then you must set "
         "broadcast_rpc_address to a value other than 0.0.0.0"),
        ("broadcast_address: 0.0.0.0\n",
         "broadcast_address cannot be a wildcard address (0.0.0.0)!"),
    ]:
        node = nodes.nodes.get(D) or nodes.add(D)
        node.extra = ["--config", write(nodes.root, "refused.yaml", text)]
        code, output = node.start_refused()
        assert code != 0 and message in output, (code, output)

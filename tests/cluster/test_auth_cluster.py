"""PasswordAuthenticator in a real 2-node cluster: `system_auth` takes a
new replication with ALTER KEYSPACE (the step of Cassandra's runbook), the
schema change reaches both nodes and survives their restart, roles created
afterwards are written to both replicas, so a login works through either
node while the other is down, and `nodetool repair system_auth` runs.
See harness.py for how nodes run.

    /work/main/.venv/bin/pytest -q -p no:cacheprovider tests/cluster/test_auth_cluster.py
"""

import os
import re

from cassandra.auth import PlainTextAuthProvider

from harness import ADDRESSES, Nodes, connect

A, B = ADDRESSES[:2]


def login(ip, user, password):
    cluster, session = connect(ip, pinned=True,
                               auth_provider=PlainTextAuthProvider(user, password))
    try:
        return list(session.execute("SELECT role FROM system_auth.roles WHERE role = %s",
                                    (user,)))
    finally:
        cluster.shutdown()


def test_system_auth_replicated_to_both_nodes():
    nodes = Nodes()
    config = os.path.join(nodes.root, "auth.yaml")
    with open(config, "w") as f:
        f.write("authenticator: PasswordAuthenticator\nauth_bcrypt_gensalt_log2_rounds: 4\n")
    try:
        for ip in (A, B):
            nodes.start(ip, extra=["--config", config],
                        nodetool_login=("cassandra", "cassandra"))
        nodes.wait_status({A: "UN", B: "UN"}, timeout=60)
        cluster, session = connect(A, pinned=True,
                                   auth_provider=PlainTextAuthProvider("cassandra", "cassandra"))
        session.execute("ALTER KEYSPACE system_auth WITH replication = "
                        "{'class': 'SimpleStrategy', 'replication_factor': 2}")
        session.execute("CREATE ROLE alice WITH PASSWORD = 'a' AND LOGIN = true")
        cluster.shutdown()
        for ip in (A, B):
            endpoints = nodes[ip].nodetool("getendpoints", "system_auth", "roles", "alice")
            assert sorted(endpoints.stdout.split()) == [A, B], endpoints.stdout
        # Only system_auth's tables (3) over the node's ranges are compared.
        repair = nodes[A].nodetool("repair", "system_auth")
        compared = re.search(r"Repair completed: (\d+) table ranges compared", repair.stdout)
        assert compared and int(compared.group(1)) > 0, repair.stdout

        # Either node alone serves alice's login.
        for up, down in ((A, B), (B, A)):
            assert nodes[down].terminate() == 0
            assert [r.role for r in login(up, "alice", "a")] == ["alice"]
            nodes[down].start()
            nodes.wait_status({A: "UN", B: "UN"}, timeout=60)

        # The replication was kept across the restarts, on both nodes.
        for ip in (A, B):
            cluster, session = connect(ip, pinned=True,
                                       auth_provider=PlainTextAuthProvider("alice", "a"))
            row = session.execute("SELECT replication FROM system_schema.keyspaces "
                                  "WHERE keyspace_name = 'system_auth'").one()
            cluster.shutdown()
            assert row.replication["replication_factor"] == "2", row
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), "unclean stops: %s" % codes

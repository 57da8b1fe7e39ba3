"""The roles, permissions and credentials caches in a real cluster, as
Cassandra 5.0's: two nodes, `system_auth` at RF 2 read at LOCAL_QUORUM
(both replicas). A has the caches on (`*_validity: 60s`,
`*_update_interval: 2s`), B has them off (`*_validity: 0ms`).

- A GRANT is seen at once on the node that ran it, even when the denial
  before it was cached there (Cassandra 5.0 would wait out
  `permissions_validity`; see docs/compatibility.md).
- With B down, an authenticated session on A keeps working, and alice logs
  in again, from the caches (each refresh fails and the old entry is
  served until its validity).
- With A down, B (caches off) refuses the login as before: the role read
  at LOCAL_QUORUM fails, once B knows A is down.

    ROCKSANDRA_BIN=... ROCKSANDRA_CLUSTER_NET=127.0.0.3 \\
        /work/main/.venv/bin/pytest -q -p no:cacheprovider tests/cluster/test_auth_cache.py
"""

import os

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra import Unauthorized
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import NoHostAvailable

from harness import ADDRESSES, Nodes, connect, stmt, wait_until

A, B = ADDRESSES[:2]

BASE = ("authenticator: PasswordAuthenticator\nauthorizer: CassandraAuthorizer\n"
        "auth_bcrypt_gensalt_log2_rounds: 4\nsuperuser_setup_delay_ms: 500\n")
CACHES_ON = "".join("%s_validity: 60s\n%s_update_interval: 2s\n" % (c, c)
                    for c in ("roles", "permissions", "credentials"))
CACHES_OFF = "".join("%s_validity: 0ms\n" % c for c in ("roles", "permissions", "credentials"))


def session_as(ip, user, password):
    return connect(ip, pinned=True, auth_provider=PlainTextAuthProvider(user, password))


def login_error(ip, user, password):
    """What logging in through `ip` answered ('' when it worked)."""
    try:
        cluster, _ = session_as(ip, user, password)
    except NoHostAvailable as e:
        return str(e)
    cluster.shutdown()
    return ""


def select(session):
    return list(session.execute(stmt("SELECT v FROM ks.t WHERE k = 1", CL.ONE)))


def test_caches_serve_logins_and_checks_while_system_auth_is_short_of_replicas():
    nodes = Nodes()
    try:
        for ip, caches in ((A, CACHES_ON), (B, CACHES_OFF)):
            config = os.path.join(nodes.root, "auth-%s.yaml" % ip)
            with open(config, "w") as f:
                f.write(BASE + caches)
            nodes.start(ip, extra=["--config", config],
                        nodetool_login=("cassandra", "cassandra"))
        wait_until(lambda: login_error(A, "cassandra", "cassandra") == "", 60,
                   what="the default superuser's login")
        nodes.wait_status({A: "UN", B: "UN"}, timeout=60)
        admin_cluster, admin = session_as(A, "cassandra", "cassandra")
        admin.execute("ALTER KEYSPACE system_auth WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 2}")
        admin.execute("CREATE KEYSPACE ks WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 2}")
        admin.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        admin.execute(stmt("INSERT INTO ks.t (k, v) VALUES (1, 10)", CL.ALL))
        admin.execute("CREATE ROLE alice WITH PASSWORD = 'a' AND LOGIN = true")

        # The denial is cached on A, the GRANT run on A drops it.
        alice_cluster, alice = session_as(A, "alice", "a")
        with pytest.raises(Unauthorized):
            select(alice)
        admin.execute("GRANT SELECT ON KEYSPACE ks TO alice")
        assert [r.v for r in select(alice)] == [10]
        admin_cluster.shutdown()

        # B down: A's replica alone cannot answer LOCAL_QUORUM, its
        # caches can.
        assert nodes[B].terminate() == 0
        nodes.wait_status({B: "DN"}, askers=[A], timeout=30)
        for _ in range(3):
            assert [r.v for r in select(alice)] == [10]
        assert login_error(A, "alice", "a") == ""
        assert "incorrect" in login_error(A, "alice", "wrong")
        alice_cluster.shutdown()

        # A down: B, caches off, reads the role at LOCAL_QUORUM and fails
        # as without caches.
        nodes[B].start()
        nodes.wait_status({A: "UN", B: "UN"}, timeout=60)
        assert login_error(B, "alice", "a") == ""
        # (nodetool's own login on B cannot read the superuser either:
        # wait for the failure the client sees.)
        assert nodes[A].terminate() == 0
        unavailable = ("Unable to perform authentication: "
                       "Cannot achieve consistency level LOCAL_QUORUM")
        wait_until(lambda: unavailable in login_error(B, "alice", "a") or "", 40,
                   what="B refusing alice's login with A down")
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), "unclean stops: %s" % codes

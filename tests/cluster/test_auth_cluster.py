"""PasswordAuthenticator in a real cluster: `system_auth` takes a new
replication with ALTER KEYSPACE (the step of Cassandra's runbook), the
schema change reaches both nodes and survives their restart, roles created
afterwards are written to both replicas, so a login works through either
node while the other is down (at `auth_read_consistency_level: ONE`), and
`nodetool repair system_auth` runs; the default superuser is set up once;
and with two of three replicas down, logins and role changes fail or work
by `auth_read_consistency_level` and `auth_write_consistency_level` as in
Cassandra 5.0. See harness.py for how nodes run.

    /work/main/.venv/bin/pytest -q -p no:cacheprovider tests/cluster/test_auth_cluster.py
"""

import os
import re
import time

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra import Unavailable
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import NoHostAvailable

from harness import ADDRESSES, Nodes, connect, stmt, wait_until

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
    # A login reads the role at auth_read_consistency_level: LOCAL_QUORUM
    # (Cassandra's default) needs both replicas of two, ONE either.
    with open(config, "w") as f:
        f.write("authenticator: PasswordAuthenticator\nauth_bcrypt_gensalt_log2_rounds: 4\n"
                "auth_read_consistency_level: ONE\n")
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


def session_as(ip, user, password):
    cluster, session = connect(ip, pinned=True,
                               auth_provider=PlainTextAuthProvider(user, password))
    return cluster, session


def can_login(ip, user, password):
    try:
        cluster, _ = session_as(ip, user, password)
    except NoHostAvailable:
        return False
    cluster.shutdown()
    return True


def roles(ip, user, password):
    """The roles the cluster holds, read at ALL through `ip`."""
    cluster, session = session_as(ip, user, password)
    try:
        rows = session.execute(stmt("SELECT role FROM system_auth.roles", CL.ALL))
        return sorted(r.role for r in rows)
    finally:
        cluster.shutdown()


def test_the_default_superuser_is_set_up_once_for_the_cluster():
    """As Cassandra's setupDefaultRole: a node looks for roles through the
    cluster after joining (superuser_setup_delay_ms) and writes
    cassandra/cassandra only when there is none, so neither a changed
    password nor a dropped default role comes back when a node joins or
    every node restarts."""
    nodes = Nodes()
    config = os.path.join(nodes.root, "auth.yaml")
    delay_s = 0.5
    with open(config, "w") as f:
        f.write("authenticator: PasswordAuthenticator\nauth_bcrypt_gensalt_log2_rounds: 4\n"
                "superuser_setup_delay_ms: %d\n" % (delay_s * 1000))
    A, B, C = ADDRESSES[:3]
    try:
        for ip in (A, B):
            nodes.start(ip, extra=["--config", config])
        wait_until(lambda: can_login(A, "cassandra", "cassandra"), 60,
                   what="the default superuser's login")
        cluster, session = session_as(A, "cassandra", "cassandra")
        session.execute("ALTER KEYSPACE system_auth WITH replication = "
                        "{'class': 'SimpleStrategy', 'replication_factor': 2}")
        session.execute("CREATE ROLE admin WITH SUPERUSER = true AND LOGIN = true "
                        "AND PASSWORD = 'admin'")
        session.execute("ALTER ROLE cassandra WITH PASSWORD = 'changed'")
        cluster.shutdown()
        nodes[A].nodetool_login = nodes[B].nodetool_login = ("admin", "admin")
        nodes[A].nodetool("repair", "system_auth")

        # A node joins: it finds the roles and writes nothing.
        nodes.start(C, extra=["--config", config], nodetool_login=("admin", "admin"))
        nodes.wait_status({A: "UN", B: "UN", C: "UN"}, timeout=60)
        time.sleep(4 * delay_s)
        assert "Created default superuser role" not in nodes[C].log_text()

        def restart_all():
            for ip in (A, B, C):
                assert nodes[ip].terminate() == 0
            for ip in (A, B, C):
                nodes[ip].start()
            nodes.wait_status({A: "UN", B: "UN", C: "UN"}, timeout=60)
            wait_until(lambda: can_login(A, "admin", "admin"), 60, what="admin's login")
            time.sleep(4 * delay_s)

        restart_all()
        for ip in (A, B, C):
            assert not can_login(ip, "cassandra", "cassandra"), ip
            assert can_login(ip, "cassandra", "changed"), ip
        assert roles(A, "admin", "admin") == ["admin", "cassandra"]

        # The default role dropped: the third probe (any role) finds admin.
        cluster, session = session_as(B, "admin", "admin")
        session.execute("DROP ROLE cassandra")
        cluster.shutdown()
        restart_all()
        for ip in (A, B, C):
            assert not can_login(ip, "cassandra", "cassandra"), ip
        assert roles(C, "admin", "admin") == ["admin"]

        # It was created once, by a node of the first two (both may have
        # found no role at once, as in Cassandra), never again; nothing
        # alarming was logged.
        created = {ip: nodes[ip].log_text().count("Created default superuser role 'cassandra'")
                   for ip in (A, B, C)}
        assert created[C] == 0 and created[A] + created[B] in (1, 2), created
        assert max(created.values()) == 1, created
        for ip in (A, B, C):
            log = nodes[ip].log_text()
            assert "ERROR" not in log and "panicked" not in log, nodes[ip].tail()
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), "unclean stops: %s" % codes


def login_error(ip, user, password):
    """What logging in through `ip` answered ('' when it worked)."""
    try:
        cluster, _ = session_as(ip, user, password)
    except NoHostAvailable as e:
        return str(e)
    cluster.shutdown()
    return ""


def test_auth_levels_with_two_of_three_replicas_down():
    """system_auth at RF 3 with two nodes down, one live replica: each node
    has its own levels. Cassandra's defaults (A) refuse every login, the
    role read failing at LOCAL_QUORUM (the default superuser's at QUORUM);
    reads at ONE (B) log in, but CREATE ROLE is UNAVAILABLE at EACH_QUORUM;
    writes at ONE too (C) create the role and grant its creator the
    permissions on it, while LIST ROLES still reads every role at QUORUM.
    These are Apache Cassandra 5.0.6's answers, word for word: one node of
    it with system_auth at RF 3 (one live replica of three, as here) gave
    the same logins, errors and grants under the same three settings."""
    nodes = Nodes()
    A, B, C = ADDRESSES[:3]
    base = ("authenticator: PasswordAuthenticator\nauthorizer: CassandraAuthorizer\n"
            "auth_bcrypt_gensalt_log2_rounds: 4\nsuperuser_setup_delay_ms: 500\n")
    levels = {A: "",
              B: "auth_read_consistency_level: ONE\n",
              C: "auth_read_consistency_level: ONE\nauth_write_consistency_level: ONE\n"}
    all_up = {A: "UN", B: "UN", C: "UN"}

    def only_up(alive):
        for ip in (A, B, C):
            if ip != alive:
                assert nodes[ip].terminate() == 0
        down = {ip: "DN" for ip in (A, B, C) if ip != alive}
        nodes.wait_status(down, askers=[alive], timeout=30)

    def restart_all():
        for ip in (A, B, C):
            if not nodes[ip].running():
                nodes[ip].start()
        nodes.wait_status(all_up, timeout=60)

    try:
        for ip in (A, B, C):
            config = os.path.join(nodes.root, "auth-%s.yaml" % ip)
            with open(config, "w") as f:
                f.write(base + levels[ip])
            nodes.start(ip, extra=["--config", config],
                        nodetool_login=("cassandra", "cassandra"))
        wait_until(lambda: can_login(A, "cassandra", "cassandra"), 60,
                   what="the default superuser's login")
        nodes.wait_status(all_up, timeout=60)
        cluster, session = session_as(A, "cassandra", "cassandra")
        session.execute("ALTER KEYSPACE system_auth WITH replication = "
                        "{'class': 'SimpleStrategy', 'replication_factor': 3}")
        session.execute("CREATE ROLE admin WITH SUPERUSER = true AND LOGIN = true "
                        "AND PASSWORD = 'admin'")
        cluster.shutdown()
        for ip in (A, B, C):
            nodes[ip].nodetool_login = ("admin", "admin")
        nodes[A].nodetool("repair", "system_auth")

        # A, Cassandra's defaults. nodetool's own login cannot read the
        # role either: wait for the failure the client sees.
        for ip in (B, C):
            assert nodes[ip].terminate() == 0

        def unavailable_on_a():
            error = login_error(A, "admin", "admin")
            return "Cannot achieve" in error or error
        wait_until(unavailable_on_a, 30, what="A sees B and C down")
        for user, level in (("admin", "LOCAL_QUORUM"), ("cassandra", "QUORUM")):
            error = login_error(A, user, user)
            assert "code=0100 [Bad credentials]" in error, error
            assert ('message="Unable to perform authentication: '
                    'Cannot achieve consistency level %s"' % level) in error, error

        # B reads at ONE: admin logs in; the write needs a quorum of 3.
        restart_all()
        only_up(B)
        cluster, session = session_as(B, "admin", "admin")
        with pytest.raises(Unavailable) as err:
            session.execute("CREATE ROLE r1 WITH LOGIN = true AND PASSWORD = 'r1'")
        assert err.value.consistency == CL.EACH_QUORUM, err.value
        assert (err.value.required_replicas, err.value.alive_replicas) == (2, 1), err.value
        cluster.shutdown()

        # C reads and writes at ONE: the role, and its creator's grants.
        restart_all()
        only_up(C)
        cluster, session = session_as(C, "admin", "admin")
        session.execute("CREATE ROLE r2 WITH LOGIN = true AND PASSWORD = 'r2'")
        session.execute("GRANT SELECT ON KEYSPACE system_auth TO r2")
        granted = session.execute("LIST ALL PERMISSIONS OF r2")
        assert [(p.resource, p.permission) for p in granted] == \
            [("<keyspace system_auth>", "SELECT")], granted
        creator = session.execute("LIST ALL PERMISSIONS ON ROLE r2")
        assert {p.role for p in creator} == {"admin"}, creator
        with pytest.raises(Unavailable) as err:
            session.execute("LIST ROLES")
        assert err.value.consistency == CL.QUORUM, err.value
        cluster.shutdown()
        assert can_login(C, "r2", "r2")
        assert login_error(C, "r1", "r1"), "r1 must not exist"
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), "unclean stops: %s" % codes

"""PasswordAuthenticator and CassandraAuthorizer through the Python driver:
the default superuser, roles created, altered and dropped with CQL, logins
accepted and refused (a server with `authenticator: PasswordAuthenticator`);
permissions granted, inherited through roles, listed and revoked (a second
server that also has `authorizer: CassandraAuthorizer`); nodetool on the
first server's admin port, which only a superuser's login opens."""

import os
import socket
import subprocess
import tempfile

import pytest
from cassandra import AuthenticationFailed, InvalidRequest, Unauthorized
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable
from cassandra.policies import RoundRobinPolicy
from cassandra.protocol import SyntaxException

from test_durability import BIN, PORT, wait_for_port


# The CassandraAuthorizer server's port (both servers may be up at once).
AUTHZ_PORT = int(os.environ.get("ROCKSANDRA_AUTHZ_PORT", str(PORT + 2)))
# nodetool's port of the first server (not 7199: Cassandra's JMX may hold it).
ADMIN_PORT = int(os.environ.get("ROCKSANDRA_AUTH_ADMIN_PORT", "17199"))


def port_taken(port):
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


def run_server(port, extra_config="", admin_port=0):
    # A listener we did not start would make every test here lie.
    assert not port_taken(port), "127.0.0.1:%d is already taken" % port
    with tempfile.TemporaryDirectory() as d:
        config = os.path.join(d, "rocksandra.yaml")
        with open(config, "w") as f:
            f.write("authenticator: PasswordAuthenticator\n")
            # Cheap hashes keep the test fast; the default is 10.
            f.write("auth_bcrypt_gensalt_log2_rounds: 4\n")
            f.write(extra_config)
        log = open(os.path.join(d, "server.log"), "wb")
        proc = subprocess.Popen(
            [BIN, "--config", config, "--data-dir", os.path.join(d, "data"),
             "--listen-address", "127.0.0.1", "--native-port", str(port),
             # No metrics endpoint: 9180 may be taken by another server on this host.
             "--prometheus-port", "0", "--admin-port", str(admin_port)],
            stdout=log, stderr=log)
        try:
            wait_for_port(port)
            yield
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            log.close()


@pytest.fixture(scope="module")
def server():
    yield from run_server(PORT, admin_port=ADMIN_PORT)


@pytest.fixture(scope="module")
def authz_server():
    yield from run_server(AUTHZ_PORT, "authorizer: CassandraAuthorizer\n")


def connect(user, password, port=PORT, protocol_version=5):
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy())
    auth = PlainTextAuthProvider(username=user, password=password) if user else None
    cluster = Cluster(["127.0.0.1"], port=port, protocol_version=protocol_version, auth_provider=auth,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile}, connect_timeout=10)
    return cluster, cluster.connect()


def login_error(user, password):
    with pytest.raises(NoHostAvailable) as info:
        connect(user, password)
    return list(info.value.errors.values())[0]


def test_roles_and_logins(server):
    cluster, admin = connect("cassandra", "cassandra")
    try:
        rows = list(admin.execute("LIST ROLES"))
        assert [(r.role, r.super, r.login) for r in rows] == [("cassandra", True, True)]
        admin.execute("CREATE ROLE alice WITH PASSWORD = 'secret' AND LOGIN = true")
        admin.execute("CREATE USER bob WITH PASSWORD 'pw' NOSUPERUSER")
        with pytest.raises(InvalidRequest, match="alice already exists"):
            admin.execute("CREATE ROLE alice WITH PASSWORD = 'x' AND LOGIN = true")
        admin.execute("CREATE ROLE IF NOT EXISTS alice")
        names = [r.role for r in admin.execute("LIST ROLES")]
        assert names == ["alice", "bob", "cassandra"]
        stored = admin.execute("SELECT role, can_login, is_superuser, salted_hash "
                               "FROM system_auth.roles WHERE role = 'alice'").one()
        assert stored.can_login and not stored.is_superuser
        assert stored.salted_hash.startswith("$2a$04$")
    finally:
        cluster.shutdown()

    c2, alice = connect("alice", "secret")
    try:
        alice.execute("CREATE KEYSPACE ks WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        alice.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
        alice.execute("INSERT INTO ks.t (k, v) VALUES (1, 'a')")
        assert alice.execute("SELECT v FROM ks.t WHERE k = 1").one().v == "a"
        with pytest.raises(Unauthorized):
            alice.execute("CREATE ROLE boss WITH SUPERUSER = true AND LOGIN = true")
        with pytest.raises(InvalidRequest, match="Cannot DROP primary role for current login"):
            alice.execute("DROP ROLE alice")
    finally:
        c2.shutdown()

    assert isinstance(login_error("alice", "wrong"), AuthenticationFailed)
    assert isinstance(login_error("nobody", "secret"), AuthenticationFailed)
    assert "are incorrect" in str(login_error("alice", "wrong"))

    cluster, admin = connect("cassandra", "cassandra")
    try:
        admin.execute("ALTER ROLE alice WITH PASSWORD = 'changed'")
        admin.execute("ALTER ROLE bob WITH LOGIN = false")
        admin.execute("DROP ROLE IF EXISTS nobody")
    finally:
        cluster.shutdown()
    assert isinstance(login_error("alice", "secret"), AuthenticationFailed)
    c3, _ = connect("alice", "changed")
    c3.shutdown()
    assert "not permitted to log in" in str(login_error("bob", "pw"))


def test_anonymous_clients_must_authenticate(server):
    error = login_error(None, None)
    assert "requires authentication" in str(error) or "authenticat" in str(error).lower()


NO_SELECT = "User alice has no SELECT permission on <table ks.t> or any of its parents"
NO_MODIFY = "User alice has no MODIFY permission on <table ks.t> or any of its parents"


def permissions(session, cql):
    return [(r.role, r.resource, r.permission) for r in session.execute(cql)]


def test_permissions_granted_inherited_listed_and_revoked(authz_server):
    admin_cluster, admin = connect("cassandra", "cassandra", AUTHZ_PORT)
    alice_cluster = None
    try:
        admin.execute("CREATE KEYSPACE ks WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        admin.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
        admin.execute("INSERT INTO ks.t (k, v) VALUES (1, 'a')")
        admin.execute("CREATE ROLE alice WITH PASSWORD = 'secret' AND LOGIN = true")
        admin.execute("CREATE ROLE readers")

        # The driver connects (its metadata queries need no grant) but a
        # role without permissions reads and writes nothing.
        alice_cluster, alice = connect("alice", "secret", AUTHZ_PORT)
        assert "ks" in alice_cluster.metadata.keyspaces
        with pytest.raises(Unauthorized, match=NO_SELECT):
            alice.execute("SELECT v FROM ks.t WHERE k = 1")
        with pytest.raises(Unauthorized, match=NO_MODIFY):
            alice.execute("INSERT INTO ks.t (k, v) VALUES (2, 'b')")
        insert = alice.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        with pytest.raises(Unauthorized, match=NO_MODIFY):
            alice.execute(insert, (2, "b"))

        admin.execute("GRANT SELECT ON TABLE ks.t TO alice")
        admin.execute("GRANT MODIFY ON KEYSPACE ks TO alice")
        assert alice.execute("SELECT v FROM ks.t WHERE k = 1").one().v == "a"
        alice.execute(insert, (2, "b"))
        assert alice.execute("SELECT v FROM ks.t WHERE k = 2").one().v == "b"
        assert permissions(admin, "LIST ALL PERMISSIONS OF alice") == [
            ("alice", "<keyspace ks>", "MODIFY"),
            ("alice", "<table ks.t>", "SELECT"),
        ]
        rows = list(admin.execute("LIST SELECT ON ks.t OF alice"))
        assert [(r.role, r.username, r.resource, r.permission) for r in rows] == [
            ("alice", "alice", "<table ks.t>", "SELECT")]

        admin.execute("REVOKE SELECT ON ks.t FROM alice")
        admin.execute("REVOKE MODIFY ON KEYSPACE ks FROM alice")
        with pytest.raises(Unauthorized, match=NO_SELECT):
            alice.execute("SELECT v FROM ks.t WHERE k = 1")
        with pytest.raises(Unauthorized, match=NO_MODIFY):
            alice.execute(insert, (3, "c"))

        # Through a granted role, until it is revoked.
        admin.execute("GRANT SELECT ON KEYSPACE ks TO readers")
        admin.execute("GRANT readers TO alice")
        assert alice.execute("SELECT v FROM ks.t WHERE k = 1").one().v == "a"
        assert permissions(alice, "LIST ALL PERMISSIONS OF alice") == [
            ("readers", "<keyspace ks>", "SELECT")]
        admin.execute("REVOKE readers FROM alice")
        with pytest.raises(Unauthorized, match=NO_SELECT):
            alice.execute("SELECT v FROM ks.t WHERE k = 1")

        # Permissions that do not apply to a resource are refused.
        with pytest.raises(SyntaxException, match="Resource type RoleResource does not "
                           "support any of the requested permissions"):
            admin.execute("GRANT MODIFY ON ROLE readers TO alice")
        with pytest.raises(Unauthorized, match="no AUTHORIZE permission on <table ks.t>"):
            alice.execute("GRANT SELECT ON ks.t TO alice")
        with pytest.raises(Unauthorized, match="not authorized to view everyone's permissions"):
            alice.execute("LIST ALL PERMISSIONS")
    finally:
        if alice_cluster:
            alice_cluster.shutdown()
        admin_cluster.shutdown()


def test_superusers_bypass_and_creators_own(authz_server):
    admin_cluster, admin = connect("cassandra", "cassandra", AUTHZ_PORT)
    try:
        admin.execute("CREATE ROLE IF NOT EXISTS carol WITH PASSWORD = 'pw' AND LOGIN = true")
        admin.execute("CREATE ROLE IF NOT EXISTS admins WITH SUPERUSER = true")
        admin.execute("GRANT CREATE ON ALL KEYSPACES TO carol")
    finally:
        admin_cluster.shutdown()

    carol_cluster, carol = connect("carol", "pw", AUTHZ_PORT)
    try:
        carol.execute("CREATE KEYSPACE carols WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        carol.execute("CREATE TABLE carols.t (k int PRIMARY KEY, v int)")
        carol.execute("INSERT INTO carols.t (k, v) VALUES (1, 1)")
        assert carol.execute("SELECT v FROM carols.t").one().v == 1
        with pytest.raises(Unauthorized, match="User carol has no SELECT permission"):
            carol.execute("SELECT * FROM system_auth.roles")
    finally:
        carol_cluster.shutdown()

    admin_cluster, admin = connect("cassandra", "cassandra", AUTHZ_PORT)
    try:
        admin.execute("GRANT admins TO carol")
    finally:
        admin_cluster.shutdown()
    carol_cluster, carol = connect("carol", "pw", AUTHZ_PORT)
    try:
        names = {r.role for r in carol.execute("SELECT role FROM system_auth.roles")}
        assert {"cassandra", "carol", "admins"} <= names
    finally:
        carol_cluster.shutdown()

    assert isinstance(login_error_on(AUTHZ_PORT, "carol", "wrong"), AuthenticationFailed)


def login_error_on(port, user, password):
    with pytest.raises(NoHostAvailable) as info:
        connect(user, password, port)
    return list(info.value.errors.values())[0]


def nodetool(*args):
    return subprocess.run([BIN, "nodetool", "-p", str(ADMIN_PORT)] + list(args),
                          capture_output=True, text=True, timeout=60)


def test_nodetool_needs_a_superuser_login(server):
    anonymous = nodetool("status")
    assert anonymous.returncode != 0
    assert "Credentials required" in anonymous.stderr, anonymous.stderr
    wrong = nodetool("-u", "cassandra", "-pw", "wrong", "status")
    assert wrong.returncode != 0
    assert "are incorrect" in wrong.stderr, wrong.stderr
    cluster, session = connect("cassandra", "cassandra")
    try:
        session.execute("CREATE ROLE IF NOT EXISTS operator_nt WITH PASSWORD = 'op' "
                        "AND LOGIN = true")
    finally:
        cluster.shutdown()
    plain_role = nodetool("-u", "operator_nt", "-pw", "op", "status")
    assert plain_role.returncode != 0
    assert "is not a superuser" in plain_role.stderr, plain_role.stderr
    ok = nodetool("-u", "cassandra", "-pw", "cassandra", "status")
    assert ok.returncode == 0, ok.stderr
    assert "UN  127.0.0.1" in ok.stdout, ok.stdout

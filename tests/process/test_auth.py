"""PasswordAuthenticator through the Python driver: the default superuser,
roles created, altered and dropped with CQL, logins accepted and refused.
The server runs with `authenticator: PasswordAuthenticator`."""

import os
import subprocess
import tempfile

import pytest
from cassandra import AuthenticationFailed, InvalidRequest, Unauthorized
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable
from cassandra.policies import RoundRobinPolicy

from test_durability import BIN, PORT, wait_for_port


@pytest.fixture(scope="module")
def server():
    with tempfile.TemporaryDirectory() as d:
        config = os.path.join(d, "rocksandra.yaml")
        with open(config, "w") as f:
            f.write("authenticator: PasswordAuthenticator\n")
            # Cheap hashes keep the test fast; the default is 10.
            f.write("auth_bcrypt_gensalt_log2_rounds: 4\n")
        log = open(os.path.join(d, "server.log"), "wb")
        proc = subprocess.Popen(
            [BIN, "--config", config, "--data-dir", os.path.join(d, "data"),
             "--listen-address", "127.0.0.1", "--native-port", str(PORT),
             # No metrics endpoint: 9180 may be taken by another server on this host.
             "--prometheus-port", "0"],
            stdout=log, stderr=log)
        try:
            wait_for_port(PORT)
            yield
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            log.close()


def connect(user, password):
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy())
    auth = PlainTextAuthProvider(username=user, password=password) if user else None
    cluster = Cluster(["127.0.0.1"], port=PORT, protocol_version=5, auth_provider=auth,
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

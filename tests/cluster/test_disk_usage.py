"""The data disk usage guardrails across nodes, as Cassandra 5.0's: each
node measures its own data volume and gossips the state (DISK_USAGE), and
a coordinator refuses an ordinary role's write whose replicas include a
full node, however healthy the coordinator itself is. Two nodes, RF 2; B's
usage is pushed past the failure threshold with a file in its data
directory (out of `data_disk_usage_max_disk_size`, so no root is needed).

    ROCKSANDRA_BIN=... pytest tests/cluster/test_disk_usage.py
"""

import os

from cassandra import ConsistencyLevel as CL
from cassandra import InvalidRequest
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import NoHostAvailable

from harness import ADDRESSES, Nodes, connect, stmt, wait_until

A, B = ADDRESSES[:2]
YAML = ("authenticator: PasswordAuthenticator\nauthorizer: CassandraAuthorizer\n"
        "auth_bcrypt_gensalt_log2_rounds: 4\nsuperuser_setup_delay_ms: 500\n"
        "data_disk_usage_percentage_warn_threshold: 50\n"
        "data_disk_usage_percentage_fail_threshold: 80\n"
        "data_disk_usage_max_disk_size: 40MiB\n"
        "disk_usage_monitor_interval_ms: 500\n")
FAILURE = ("Guardrail replica_disk_usage violated: "
           "Write request failed because disk usage exceeds failure threshold")


def session_as(ip, user, password):
    return connect(ip, pinned=True, auth_provider=PlainTextAuthProvider(user, password))


def logged_in(ip):
    try:
        cluster, _ = session_as(ip, "cassandra", "cassandra")
    except NoHostAvailable:
        return False
    cluster.shutdown()
    return True


def write_refused(session, k):
    try:
        session.execute(stmt("INSERT INTO ks.t (k, v) VALUES (%d, 0)" % k, CL.ONE))
    except InvalidRequest as e:
        return str(e)
    return False


def test_a_coordinator_refuses_writes_whose_replica_is_full():
    nodes = Nodes()
    clusters = []
    try:
        for ip in (A, B):
            config = os.path.join(nodes.root, "disk-%s.yaml" % ip)
            with open(config, "w") as f:
                f.write(YAML)
            nodes.start(ip, extra=["--config", config], nodetool_login=("cassandra", "cassandra"))
        wait_until(lambda: logged_in(A), 60, what="the default superuser's login")
        nodes.wait_status({A: "UN", B: "UN"}, timeout=60)
        admin_cluster, admin = session_as(A, "cassandra", "cassandra")
        clusters.append(admin_cluster)
        admin.execute("CREATE KEYSPACE ks WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 2}")
        admin.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        admin.execute("CREATE ROLE app WITH PASSWORD = 'app' AND LOGIN = true")
        admin.execute("GRANT ALL PERMISSIONS ON KEYSPACE ks TO app")
        app_cluster, app = session_as(A, "app", "app")
        clusters.append(app_cluster)
        app.execute(stmt("INSERT INTO ks.t (k, v) VALUES (1, 1)", CL.ONE))

        # B's volume past 80%: A, which is not full, refuses through gossip.
        filler = os.path.join(nodes[B].data_dir, "filler")
        with open(filler, "wb") as f:
            f.write(b"\0" * (36 * 1024 * 1024))
        wait_until(lambda: write_refused(app, 2) is not False, 30,
                   what="A refusing a write B replicates")
        assert write_refused(app, 3).endswith('message="%s"' % FAILURE)
        # The superuser is exempt; reads go on.
        admin.execute(stmt("INSERT INTO ks.t (k, v) VALUES (4, 4)", CL.ALL))
        assert app.execute(stmt("SELECT v FROM ks.t WHERE k = 4", CL.ALL)).one().v == 4

        # Freed: A takes the role's writes again once B says so.
        os.remove(filler)
        wait_until(lambda: write_refused(app, 5) is False, 30,
                   what="A taking writes again")
    finally:
        for c in clusters:
            c.shutdown()
        nodes.close()


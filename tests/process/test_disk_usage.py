"""Cassandra 5.0's data disk usage guardrails on a node alone: the data
volume's usage (the data directory's files and the memtables, out of
`data_disk_usage_max_disk_size` here, so no root or tmpfs is needed) is
measured at start and every `disk_usage_monitor_interval_ms`; an ordinary
role's unconditional writes are warned about past the warning threshold
(once per 30 minutes) and refused past the failure threshold, with the
texts Apache Cassandra 5.0.6 sends; the superuser is exempt; reads go on;
writes come back once the space is freed.

    ROCKSANDRA_BIN=target/debug/rocksandra pytest tests/process/test_disk_usage.py
"""

import os
import subprocess
import tempfile
import time

import pytest
from cassandra import InvalidRequest

from test_auth import connect
from test_durability import wait_for_port

BIN = os.environ.get("ROCKSANDRA_BIN", "target/debug/rocksandra")
PORT = int(os.environ.get("ROCKSANDRA_DISK_USAGE_PORT", "9058"))
MIB = 1024 * 1024
YAML = """\
authenticator: PasswordAuthenticator
authorizer: CassandraAuthorizer
auth_bcrypt_gensalt_log2_rounds: 4
data_disk_usage_percentage_warn_threshold: 50
data_disk_usage_percentage_fail_threshold: 80
data_disk_usage_max_disk_size: 40MiB
disk_usage_monitor_interval_ms: 500
"""
WARNING = "Guardrail replica_disk_usage violated: Replica disk usage exceeds warning threshold"
FAILURE = ("Guardrail replica_disk_usage violated: "
           "Write request failed because disk usage exceeds failure threshold")


def fill(path, mib):
    with open(path, "wb") as f:
        f.write(b"\0" * (mib * MIB))


def insert(session, k):
    return session.execute("INSERT INTO ks.t (k, v) VALUES (%d, %d)" % (k, k))


def eventually_refused(session, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            insert(session, 100)
        except InvalidRequest as e:
            return str(e)
        time.sleep(0.2)
    raise AssertionError("the write was not refused within %ds" % timeout)


def test_a_stuffed_volume_warns_a_full_one_refuses_and_a_freed_one_writes():
    base = tempfile.mkdtemp(prefix="rocksandra-disk-usage-")
    data = os.path.join(base, "data")
    os.makedirs(data)
    config = os.path.join(base, "rocksandra.yaml")
    with open(config, "w") as f:
        f.write(YAML)
    # 24 of 40 MiB: past 50%, below 80%, when the node starts.
    filler = os.path.join(data, "filler")
    fill(filler, 24)
    log_path = os.path.join(base, "server.log")
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        [BIN, "--config", config, "--data-dir", data, "--listen-address", "127.0.0.1",
         "--native-port", str(PORT), "--prometheus-port", "0", "--admin-port", "0"],
        stdout=log, stderr=log)
    clusters = []
    try:
        wait_for_port(PORT)
        admin_cluster, admin = connect("cassandra", "cassandra", port=PORT)
        clusters.append(admin_cluster)
        admin.execute("CREATE KEYSPACE ks WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        admin.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        admin.execute("CREATE ROLE app WITH PASSWORD = 'app' AND LOGIN = true")
        admin.execute("GRANT ALL PERMISSIONS ON KEYSPACE ks TO app")
        app_cluster, app = connect("app", "app", port=PORT)
        clusters.append(app_cluster)

        # Stuffed: the first write warns, the next ones do not (one
        # notification per interval), the superuser is exempt.
        assert insert(app, 1).response_future.warnings == [WARNING]
        assert insert(app, 2).response_future.warnings is None
        assert insert(admin, 3).response_future.warnings is None

        # Full: an ordinary role's writes are refused, a conditional one
        # and the superuser's are not, reads go on.
        fill(filler, 36)
        assert eventually_refused(app).endswith('message="%s"' % FAILURE)
        with pytest.raises(InvalidRequest, match="disk usage exceeds failure threshold"):
            app.execute("UPDATE ks.t SET v = 5 WHERE k = 5")
        with pytest.raises(InvalidRequest, match="disk usage exceeds failure threshold"):
            app.execute("BEGIN BATCH INSERT INTO ks.t (k, v) VALUES (6, 6); APPLY BATCH")
        assert app.execute("INSERT INTO ks.t (k, v) VALUES (7, 7) IF NOT EXISTS").one()[0]
        insert(admin, 8)
        # (100 went in while the volume was still measured as stuffed.)
        keys = {r.k for r in app.execute("SELECT k FROM ks.t")} - {100}
        assert keys == {1, 2, 3, 7, 8}

        # Freed: writes come back.
        os.remove(filler)
        deadline = time.monotonic() + 20
        while True:
            try:
                insert(app, 9)
                break
            except InvalidRequest:
                assert time.monotonic() < deadline, "writes did not come back"
                time.sleep(0.2)
        with open(log_path, "rb") as f:
            text = f.read().decode(errors="replace")
        assert "Guardrail local_data_disk_usage violated: Local data disk usage " in text
        assert "(Full) exceeds failure threshold of 80%, will stop accepting writes" in text
    finally:
        for c in clusters:
            c.shutdown()
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_a_max_disk_size_larger_than_the_volume_is_refused_at_startup():
    base = tempfile.mkdtemp(prefix="rocksandra-disk-usage-")
    config = os.path.join(base, "rocksandra.yaml")
    with open(config, "w") as f:
        f.write("data_disk_usage_max_disk_size: 100000000GiB\n")
    result = subprocess.run(
        [BIN, "--config", config, "--data-dir", os.path.join(base, "data"),
         "--listen-address", "127.0.0.1", "--native-port", str(PORT),
         "--prometheus-port", "0", "--admin-port", "0"],
        capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert ("Invalid guardrails configuration: Invalid value for data_disk_usage_max_disk_size: "
            "100000000GiB specified, but only ") in result.stderr, result.stderr
    assert " are actually available on disk" in result.stderr, result.stderr

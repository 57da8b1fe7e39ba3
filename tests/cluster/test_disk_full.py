"""A replica whose data volume is full, in a two-node cluster at RF 2.

B's data directory is a small tmpfs, filled to the brim. As in Cassandra,
B's failed write counts as one replica's failure: a write that needs both
replicas fails with WRITE_FAILURE naming B, one that needs one succeeds,
through either coordinator (B coordinating included: its own failure does
not fail a write A acknowledges). Once space is freed, B takes writes
again by itself. Mounting the tmpfs needs root.

    ROCKSANDRA_BIN=... pytest tests/cluster/test_disk_full.py
"""

import os
import subprocess
import time

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra import WriteFailure

from harness import ADDRESSES, Nodes, bound, connect, wait_until

A, B = ADDRESSES[:2]
VOLUME_MB = 160
LEFT_FREE = 3 * 1024 * 1024


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill_until_refused(session, insert):
    """Writes at ALL until B refuses; returns the refusal."""
    for i in range(200000):
        try:
            session.execute(bound(insert, (i, os.urandom(2000)), CL.ALL))
        except WriteFailure as e:
            return e
    raise AssertionError("B's full volume never refused a write")


def test_a_full_replica_fails_writes_that_need_it_and_recovers():
    nodes = Nodes()
    volume = None
    try:
        nodes.start(A)
        # B syncs its WAL every 100 ms, so syncs meet the full disk too.
        config = os.path.join(nodes.root, "sync.yaml")
        with open(config, "w") as f:
            f.write("commitlog_sync: periodic\ncommitlog_sync_period: 100ms\n")
        volume = nodes.add(B, extra=["--config", config]).data_dir
        result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % VOLUME_MB,
                                 "tmpfs", volume], capture_output=True, text=True)
        assert result.returncode == 0, "mounting a tmpfs needs root: %s" % result.stderr
        nodes.start(B)
        nodes.wait_status({A: "UN", B: "UN"}, timeout=60)
        session_a = nodes.connect(A)
        session_a.execute("CREATE KEYSPACE ks WITH replication = "
                          "{'class': 'SimpleStrategy', 'replication_factor': 2}")
        session_a.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v blob)")
        insert_a = session_a.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        wait_until(lambda: _knows_table(B), 30, what="B knowing ks.t")

        filler = os.path.join(volume, "filler")
        with open(filler, "wb") as f:
            f.write(b"\0" * (free_bytes(volume) - LEFT_FREE))
        refusal = fill_until_refused(session_a, insert_a)
        assert refusal.consistency == CL.ALL
        assert (refusal.received_responses, refusal.required_responses) == (1, 2)
        assert refusal.failures == 1
        assert "received 1 responses and 1 failures: UNKNOWN from /%s" % B in str(refusal), \
            str(refusal)

        # One replica is enough: A acknowledges, whoever coordinates.
        session_a.execute(bound(insert_a, (-1, b"one"), CL.ONE))
        session_b = nodes.connect(B)
        insert_b = session_b.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        session_b.execute(bound(insert_b, (-2, b"one"), CL.ONE))
        with pytest.raises(WriteFailure) as coordinated_by_b:
            session_b.execute(bound(insert_b, (-3, b"all"), CL.ALL))
        assert "UNKNOWN from /%s" % B in str(coordinated_by_b.value)

        time.sleep(1)  # several WAL syncs while B's disk is full

        # Freed space: B takes writes again, no restart.
        os.remove(filler)
        wait_until(lambda: _writes(session_a, insert_a, -4), 30, interval=1,
                   what="B taking writes again")
        row = session_b.execute(bound(session_b.prepare("SELECT v FROM ks.t WHERE k = ?"),
                                      (-4,), CL.ALL)).one()
        assert row.v == b"again"
    finally:
        nodes.close()
        if volume:
            subprocess.run(["umount", volume], check=False)


def _writes(session, insert, key):
    try:
        session.execute(bound(insert, (key, b"again"), CL.ALL))
        return True
    except WriteFailure as e:
        return str(e)


def _knows_table(ip):
    cluster, session = connect(ip)
    try:
        return session.execute("SELECT table_name FROM system_schema.tables "
                               "WHERE keyspace_name = 'ks' AND table_name = 't'").one() is not None
    finally:
        cluster.shutdown()

"""A full data volume: the real `rocksandra` process on a small tmpfs.

A write that finds the disk full is answered with WRITE_FAILURE (as a
Cassandra replica's failed write is), reads keep working, nothing
acknowledged is lost (across kill -9 too), and writes succeed again by
themselves once space is freed, without a restart.

Mounting the tmpfs needs root, as the package test does; without it the
test fails rather than skips.

    ROCKSANDRA_BIN=target/debug/rocksandra pytest tests/process/test_disk_full.py
"""

import os
import signal
import socket
import subprocess
import tempfile
import time

from cassandra import WriteFailure
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable
from cassandra.policies import FallthroughRetryPolicy, RoundRobinPolicy

BIN = os.environ.get("ROCKSANDRA_BIN", "target/debug/rocksandra")
PORT = int(os.environ.get("ROCKSANDRA_DISK_FULL_PORT", "9057"))
# Larger than RocksDB's disk buffer: it resumes only once the free space
# exceeds its largest memtable (64 MiB here).
VOLUME_MB = 160
LEFT_FREE = 3 * 1024 * 1024
ROW = 2000


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def wait_for_port(port, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("server did not listen on %d within %ds" % (port, timeout))


class Node:
    def __init__(self, volume, log_path):
        self.volume = volume
        self.log_path = log_path
        self.proc = None

    def start(self):
        self.log = open(self.log_path, "ab")
        # The WAL is synced every 100 ms, so syncs meet the full disk too.
        config = os.path.join(os.path.dirname(self.log_path), "rocksandra.yaml")
        with open(config, "w") as f:
            f.write("commitlog_sync: periodic\ncommitlog_sync_period: 100ms\n")
        self.proc = subprocess.Popen(
            [BIN, "--config", config, "--data-dir", os.path.join(self.volume, "data"),
             "--listen-address", "127.0.0.1", "--native-port", str(PORT),
             "--prometheus-port", "0", "--admin-port", "0"],
            stdout=self.log, stderr=self.log)
        wait_for_port(PORT)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.log.close()


def connect():
    # No retries: each failure is seen as the server sent it.
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy(),
                               retry_policy=FallthroughRetryPolicy(), request_timeout=20)
    cluster = Cluster(["127.0.0.1"], port=PORT, protocol_version=5,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile})
    return cluster, cluster.connect()


def server_error(e):
    """The server's error behind a driver exception."""
    if isinstance(e, NoHostAvailable):
        return next(iter(e.errors.values()))
    return e


def write_until_refused(session, insert, start):
    """Writes rows from id `start` until three in a row are refused; returns
    the acknowledged ids and the refusals."""
    acked, refusals, i = [], [], start
    while len(refusals) < 3:
        assert i - start < 200000, "the full volume never refused a write"
        try:
            session.execute(insert, (i, os.urandom(ROW)))
            acked.append(i)
            refusals = []
        except Exception as e:  # noqa: BLE001 - the error is the result
            refusals.append(server_error(e))
        i += 1
    return acked, refusals


def write_again(session, insert, key, timeout=60):
    """Retries one write until it succeeds; returns the seconds it took."""
    start = time.monotonic()
    while True:
        try:
            session.execute(insert, (key, b"after"))
            return time.monotonic() - start
        except Exception as e:  # noqa: BLE001
            assert isinstance(server_error(e), WriteFailure), repr(e)
            assert time.monotonic() - start < timeout, "writes did not resume: %r" % e
            time.sleep(0.5)


def ids(session):
    return {row.id for row in session.execute("SELECT id FROM ks.t")}


def mount_tmpfs(path):
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % VOLUME_MB, "tmpfs", path],
                            capture_output=True, text=True)
    assert result.returncode == 0, "mounting a tmpfs needs root: %s" % result.stderr


class FullNode:
    """A node on its own tmpfs, with ks.t created and the volume filled to
    all but LEFT_FREE bytes by `filler`."""

    def __enter__(self):
        base = tempfile.mkdtemp(prefix="rocksandra-disk-full-")
        self.volume = os.path.join(base, "volume")
        os.mkdir(self.volume)
        mount_tmpfs(self.volume)
        self.node = Node(self.volume, os.path.join(base, "server.log"))
        self.node.start()
        self.cluster, self.session = connect()
        self.session.execute("CREATE KEYSPACE ks WITH replication = "
                             "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        self.session.execute("CREATE TABLE ks.t (id int PRIMARY KEY, v blob)")
        self.insert = self.session.prepare("INSERT INTO ks.t (id, v) VALUES (?, ?)")
        self.filler = os.path.join(self.volume, "filler")
        with open(self.filler, "wb") as f:
            f.write(b"\0" * (free_bytes(self.volume) - LEFT_FREE))
        return self

    def restart(self):
        """kill -9, then start again; a new session."""
        self.cluster.shutdown()
        self.node.kill()
        self.node.start()
        self.cluster, self.session = connect()

    def __exit__(self, *exc):
        self.cluster.shutdown()
        if self.node.proc and self.node.proc.poll() is None:
            self.node.kill()
        subprocess.run(["umount", self.volume], check=False)


def test_a_full_disk_refuses_writes_loses_nothing_and_recovers_by_itself():
    with FullNode() as full:
        session, insert = full.session, full.insert
        acked, refusals = write_until_refused(session, insert, 0)
        assert acked, "no write fitted in the space left"
        time.sleep(1)  # several WAL syncs while the disk is full
        for e in refusals:
            assert isinstance(e, WriteFailure), repr(e)
            assert "Operation failed - received 0 responses and 1 failures: " \
                   "UNKNOWN from /127.0.0.1" in str(e), str(e)

        # Reads are served while the disk is full.
        assert ids(session) == set(acked)

        # Freed space: writes resume by themselves, no restart.
        os.remove(full.filler)
        waited = write_again(session, insert, -1)
        assert waited < 30, waited
        more = list(range(len(acked) + 10, len(acked) + 110))
        for i in more:
            session.execute(insert, (i, os.urandom(ROW)))

        # Nothing acknowledged is lost across kill -9.
        full.restart()
        assert ids(full.session) == set(acked) | set(more) | {-1}


def test_a_node_killed_while_its_disk_is_full_restarts_with_every_acknowledged_write():
    with FullNode() as full:
        acked, _ = write_until_refused(full.session, full.insert, 0)
        full.cluster.shutdown()
        full.node.kill()
        os.remove(full.filler)
        full.node.start()
        full.cluster, session = connect()
        assert ids(session) == set(acked)
        session.execute(session.prepare("INSERT INTO ks.t (id, v) VALUES (?, ?)"), (-1, b"after"))
        assert -1 in ids(session)

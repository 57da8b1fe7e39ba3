"""Short reads run on the network thread read only memory: after a restart
(an empty block cache), a prepared single-partition SELECT whose data is on
disk is handed to the blocking pool and answered there, whole and right,
and the endpoint counts the hand-off; once cached, the same read stays on
the network thread. The server gets its own data directory.

    ROCKSANDRA_BIN=target/debug/rocksandra pytest tests/process/test_memory_only_reads.py
"""

import os
import signal

import pytest

from test_durability import node_in_temp_dir
from test_metrics import free_port, scrape

MISSES = "rocksandra_storage_memory_only_misses_total"
ROWS = 2000


@pytest.fixture
def server():
    yield from node_in_temp_dir(sync="periodic", metrics_port=free_port())


def misses(server):
    return scrape(server.metrics_port)[MISSES]


def value(k):
    """Text that does not compress, so the rows fill many blocks on disk."""
    return os.urandom(150).hex() + str(k)


def test_a_read_of_data_on_disk_is_handed_off_and_answered_right(server):
    server.start()
    cluster, session = server.session()
    session.execute("CREATE KEYSPACE ks WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE ks.kv (k int PRIMARY KEY, v text)")
    session.execute("CREATE TABLE ks.wide (p int, c int, v text, PRIMARY KEY (p, c))")
    insert_kv = session.prepare("INSERT INTO ks.kv (k, v) VALUES (?, ?)")
    insert_wide = session.prepare("INSERT INTO ks.wide (p, c, v) VALUES (?, ?, ?)")
    written = {}
    for k in range(ROWS):
        written[k] = value(k)
        session.execute(insert_kv, (k, written[k]))
        session.execute(insert_wide, (k % 20, k, written[k]))
    cluster.shutdown()
    assert server.stop(signal.SIGTERM) == 0  # a clean stop flushes the memtables

    server.start()
    cluster, session = server.session()
    assert misses(server) == 0
    by_key = session.prepare("SELECT v FROM ks.kv WHERE k = ?")
    by_partition = session.prepare("SELECT c, v FROM ks.wide WHERE p = ?")
    for k in (7, 1234, 1999):
        assert [r.v for r in session.execute(by_key, (k,))] == [written[k]]
    rows = [(r.c, r.v) for r in session.execute(by_partition, (13,))]
    assert rows == [(c, written[c]) for c in range(13, ROWS, 20)]
    handed_off = misses(server)
    assert handed_off >= 4, handed_off

    # Cached now: the same reads stay on the network thread.
    for k in (7, 1234, 1999):
        assert [r.v for r in session.execute(by_key, (k,))] == [written[k]]
    assert [(r.c, r.v) for r in session.execute(by_partition, (13,))] == rows
    assert misses(server) == handed_off
    cluster.shutdown()

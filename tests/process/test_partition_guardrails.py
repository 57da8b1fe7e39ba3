"""The `partition_size` and `partition_tombstones` guardrails: a compaction
that writes a partition past a threshold logs Cassandra 5.0's line for it,
once per partition, a warning or an error; nothing is refused. Compared
with what Cassandra 5.0.6 logged at flush for the same writes and yaml
(recorded 2026-11-28 on one node): the same partitions named the same way
(`pg.t:1`, a composite key `pg.c:ab\\:c:7`), the same tombstone counts and
texts. Different (docs/compatibility.md, Guardrails): the byte counts (the
stored entries, not Cassandra's sstable format), no " on sstable PATH",
and the check runs at compaction, not at flush, over entries merged by an
earlier compaction.

    ROCKSANDRA_BIN=... ROCKSANDRA_PROCESS_PORT=9541 ROCKSANDRA_PROCESS_ADMIN_PORT=9542 \\
        /work/main/.venv/bin/pytest -q -p no:cacheprovider tests/process/test_partition_guardrails.py
"""

import os
import re
import subprocess
import tempfile
import time

from cassandra.cluster import Cluster

from test_durability import BIN, PORT, wait_for_port

ADMIN_PORT = int(os.environ.get("ROCKSANDRA_PROCESS_ADMIN_PORT", "7299"))
YAML = """partition_size_warn_threshold: 2KiB
partition_size_fail_threshold: 8KiB
partition_tombstones_warn_threshold: 5
partition_tombstones_fail_threshold: 20
"""

SIZE = ("Guardrail partition_size violated: Partition %s has size (\\d+), this exceeds the "
        "%s threshold of %d. Too large partitions can cause performance problems.")
TOMBSTONES = ("Guardrail partition_tombstones violated: Partition %s has %d tombstones, this "
              "exceeds the %s threshold of %d. Partitions with too many tombstones can cause "
              "performance problems.")


def write(session):
    session.execute("CREATE KEYSPACE pg WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE pg.t (k int, c int, v text, PRIMARY KEY (k, c))")
    session.execute("CREATE TABLE pg.c (k text, k2 int, c int, v text, PRIMARY KEY ((k, k2), c))")
    for c in range(3):
        session.execute("INSERT INTO pg.t (k, c, v) VALUES (1, %d, '%s')" % (c, "a" * 1000))
    for c in range(10):
        session.execute("INSERT INTO pg.t (k, c, v) VALUES (2, %d, '%s')" % (c, "b" * 1000))
    for c in range(6):
        session.execute("DELETE FROM pg.t WHERE k = 3 AND c = %d" % c)
    for c in range(25):
        session.execute("DELETE FROM pg.t WHERE k = 4 AND c = %d" % c)
    # A partition deletion, a range tombstone (two markers) and a null
    # cell: 4 tombstones, under the warn threshold.
    session.execute("DELETE FROM pg.t WHERE k = 5")
    session.execute("DELETE FROM pg.t WHERE k = 5 AND c > 1 AND c < 5")
    session.execute("INSERT INTO pg.t (k, c, v) VALUES (5, 7, null)")
    for c in range(3):
        session.execute("INSERT INTO pg.c (k, k2, c, v) VALUES ('ab:c', 7, %d, '%s')"
                        % (c, "a" * 1000))


def nodetool(*args):
    r = subprocess.run([BIN, "nodetool", "-p", str(ADMIN_PORT)] + list(args),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_compactions_log_partitions_past_the_thresholds():
    with tempfile.TemporaryDirectory() as d:
        config = os.path.join(d, "rocksandra.yaml")
        with open(config, "w") as f:
            f.write(YAML)
        log_path = os.path.join(d, "server.log")
        log = open(log_path, "wb")
        proc = subprocess.Popen(
            [BIN, "--config", config, "--data-dir", os.path.join(d, "data"),
             "--listen-address", "127.0.0.1", "--native-port", str(PORT),
             "--prometheus-port", "0", "--admin-port", str(ADMIN_PORT)],
            stdout=log, stderr=log)
        try:
            wait_for_port(PORT)
            wait_for_port(ADMIN_PORT)
            cluster = Cluster(["127.0.0.1"], port=PORT, protocol_version=5)
            write(cluster.connect())
            cluster.shutdown()
            nodetool("flush")
            # Writes are merge operands until a compaction merges them; the
            # next one sees the merged rows.
            nodetool("compact", "pg")
            nodetool("compact", "pg")
            time.sleep(0.5)
        finally:
            proc.terminate()
            assert proc.wait(timeout=30) == 0
            log.close()
        with open(log_path) as f:
            text = f.read()
    lines = [line for line in text.splitlines() if "Guardrail partition_" in line]

    def found(pattern, level):
        hits = [line for line in lines if re.search(pattern, line)]
        assert hits, "%r not in %s" % (pattern, lines)
        assert all(level in line for line in hits), hits
        return hits

    found(SIZE % ("pg\\.t:1", "warning", 2048), "WARN")
    found(SIZE % ("pg\\.t:2", "failure", 8192), "ERROR")
    found(SIZE % (re.escape("pg.c:ab\\:c:7"), "warning", 2048), "WARN")
    found(re.escape(TOMBSTONES % ("pg.t:3", 6, "warning", 5)), "WARN")
    found(re.escape(TOMBSTONES % ("pg.t:4", 25, "failure", 20)), "ERROR")
    assert not [line for line in lines if "pg.t:5" in line], lines
    # Each compaction that wrote a partition logs it once, the same way.
    texts = {line.split(" violated: ", 1)[1] for line in lines if "pg.t:4 " in line}
    assert len(texts) == 1, texts

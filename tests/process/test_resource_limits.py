"""Resource limits of one node, through a real process and real sockets
(issue 14, docs/security.md): idle connections cannot lock a client out,
a flood of large PREPAREs is held to `prepared_statements_cache_size`,
and aggregates and unpaged reads over a table much larger than the node's
caches do not hold the table in memory."""

import logging
import os
import resource
import socket
import struct
import subprocess
import tempfile
import threading
import time

import pytest
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.policies import RoundRobinPolicy
from cassandra.query import SimpleStatement

from test_durability import BIN

BASE_PORT = int(os.environ.get("ROCKSANDRA_LIMITS_PORT", "9741"))
IDLE_CONNECTIONS = 2000
# native_transport_max_concurrent_connections unless set.
DEFAULT_MAX_CONNECTIONS = 1024
OUT_OF_DESCRIPTORS = "accepting a CQL connection failed: Too many open files"
MIB = 1 << 20


class Server:
    """One node on 127.0.0.1:`port` with `yaml`, its fd limit lowered to
    `nofile` when given."""

    def __init__(self, workdir, port, yaml, nofile=None):
        self.port = port
        self.nofile = nofile
        config = os.path.join(workdir, "rocksandra.yaml")
        with open(config, "w") as f:
            f.write(yaml)
        self.log_path = os.path.join(workdir, "server.log")
        self.log = open(self.log_path, "wb")

        def limit_fds():
            if nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.proc = subprocess.Popen(
            [BIN, "--config", config, "--data-dir", os.path.join(workdir, "data"),
             "--listen-address", "127.0.0.1", "--native-port", str(port),
             "--prometheus-port", "0", "--admin-port", "0"],
            stdout=self.log, stderr=self.log, preexec_fn=limit_fds)
        self.wait_until_listening()

    def wait_until_listening(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "the server exited: %s" % self.log_text()[-2000:]
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("no listener on %d within %ds" % (self.port, timeout))

    def rss_bytes(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS for pid %d" % self.proc.pid)

    def open_fds(self):
        return len(os.listdir("/proc/%d/fd" % self.proc.pid))

    def fd_limit(self):
        with open("/proc/%d/limits" % self.proc.pid) as f:
            for line in f:
                if line.startswith("Max open files"):
                    return int(line.split()[3])
        raise AssertionError("no fd limit for pid %d" % self.proc.pid)

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.log.close()


def start(port, yaml="", nofile=None):
    with tempfile.TemporaryDirectory() as d:
        server = Server(d, port, yaml, nofile)
        try:
            yield server
        finally:
            server.stop()


def connect(port, auth=None, connect_timeout=10, request_timeout=30):
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy(),
                               request_timeout=request_timeout)
    provider = PlainTextAuthProvider(*auth) if auth else None
    cluster = Cluster(["127.0.0.1"], port=port, protocol_version=5, auth_provider=provider,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                      connect_timeout=connect_timeout)
    return cluster, cluster.connect()


def startup_frame():
    """A v4 STARTUP frame (CQL_VERSION 3.0.0)."""
    def string(s):
        return struct.pack(">H", len(s)) + s.encode()
    body = struct.pack(">H", 1) + string("CQL_VERSION") + string("3.0.0")
    return struct.pack(">BBhBI", 4, 0, 0, 0x01, len(body)) + body


def open_idle_connections(server, count, batch=64):
    """`count` connections; every other one sends STARTUP (then nothing: with
    PasswordAuthenticator it never logs in), the others send nothing.

    They are opened `batch` at a time, and each batch waits (up to 3 s) until
    the server has accepted it (its descriptor count grew by as much), holds
    as many connections as it takes, or has run out of descriptors: with a listen queue shorter than the flood
    (`net.core.somaxconn` 128 on some machines) the kernel drops the SYNs
    beyond it, and the flood would otherwise trickle in over SYN
    retransmissions (1 s, 3 s, 7 s) instead of holding every slot at once."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < count + 512:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 1024), hard))
    baseline = server.open_fds()
    frame = startup_frame()
    sockets = []
    out_of_descriptors = False
    while len(sockets) < count:
        for _ in range(min(batch, count - len(sockets))):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", server.port))
            sockets.append((s, len(sockets) % 2 == 1))
        deadline = time.monotonic() + 3
        while not out_of_descriptors and time.monotonic() < deadline:
            if server.open_fds() >= baseline + min(len(sockets), DEFAULT_MAX_CONNECTIONS) - 2:
                break
            out_of_descriptors = OUT_OF_DESCRIPTORS in server.log_text()
            time.sleep(0.01)
    # Connected (in the kernel's queue or accepted): send the STARTUPs.
    deadline = time.monotonic() + 10
    pending = [entry for entry in sockets if entry[1]]
    while pending and time.monotonic() < deadline:
        still = []
        for s, _ in pending:
            try:
                s.send(frame)
            except (BlockingIOError, OSError):
                still.append((s, True))
        pending = still
        if pending:
            time.sleep(0.05)
    return [s for s, _ in sockets]


@pytest.fixture
def auth_server(request):
    port, nofile = request.param
    yield from start(port, "authenticator: PasswordAuthenticator\n"
                           "auth_bcrypt_gensalt_log2_rounds: 4\n", nofile)


# The process's own limit (20,000 here), and a typical shell's 1,024, with
# which 2,000 connections exhaust the server's descriptors and accept fails
# with EMFILE.
@pytest.mark.parametrize("auth_server", [(BASE_PORT, None), (BASE_PORT + 1, 1024)],
                         ids=["own-fd-limit", "fd-limit-1024"], indirect=True)
def test_idle_connections_do_not_lock_out_a_new_client(auth_server):
    server = auth_server
    print("server fd limit", server.fd_limit())
    baseline_fds = server.open_fds()
    flood_started = time.monotonic()
    idle = open_idle_connections(server, IDLE_CONNECTIONS)
    print("server descriptors after the flood", server.open_fds())
    try:
        time.sleep(1)
        assert server.proc.poll() is None
        began = time.monotonic()
        cluster, session = connect(server.port, ("cassandra", "cassandra"), connect_timeout=5)
        try:
            row = session.execute("SELECT release_version FROM system.local").one()
            assert row.release_version
        finally:
            cluster.shutdown()
        took = time.monotonic() - began
        # Well within the 10 s login timeout after the flood began: the
        # client got in while the idle connections held every slot (or
        # every descriptor), not because they timed out.
        assert took < 5, "a new client needed %.1fs to connect and query" % took
        assert time.monotonic() - flood_started < 9.5
        # The idle connections were not all dropped on the floor: the
        # node still holds many of them.
        assert server.open_fds() > baseline_fds + 300
    finally:
        for s in idle:
            s.close()
    # Healthy afterwards: alive, its descriptors back near the baseline
    # (nothing leaked), serving queries.
    deadline = time.monotonic() + 20
    while server.open_fds() > baseline_fds + 20 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert server.open_fds() <= baseline_fds + 20, (baseline_fds, server.open_fds())
    assert server.proc.poll() is None
    cluster, session = connect(server.port, ("cassandra", "cassandra"))
    try:
        assert session.execute("SELECT key FROM system.local").one().key == "local"
    finally:
        cluster.shutdown()
    log = server.log_text()
    assert "panicked" not in log
    # With 1,024 descriptors accept failed (EMFILE), and that was logged,
    # but not once per attempt.
    if server.nofile:
        assert OUT_OF_DESCRIPTORS in log
    assert log.count("accepting a CQL connection failed") <= 3


def test_prepared_statement_flood_is_held_to_the_cache_size(caplog):
    cache = 8 * MIB
    statements = 200
    literal = 1 * MIB
    gen = start(BASE_PORT + 2, "prepared_statements_cache_size: 8MiB\n")
    server = next(gen)
    try:
        cluster, session = connect(server.port, request_timeout=60)
        try:
            session.execute("CREATE KEYSPACE ks WITH replication = "
                            "{'class': 'SimpleStrategy', 'replication_factor': 1}")
            session.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
            first = session.prepare("INSERT INTO ks.t (k, v) VALUES (?, 'first')")
            session.execute(first, [0])
            before = server.rss_bytes()
            peak = before
            samples = []
            filler = "x" * (literal - 64)
            for i in range(statements):
                # Distinct texts: the literal starts with the statement's number.
                session.prepare("INSERT INTO ks.t (k, v) VALUES (?, '%06d%s')" % (i, filler))
                if i % 10 == 0:
                    samples.append(server.rss_bytes() // MIB)
            samples.append(server.rss_bytes() // MIB)
            peak = max(peak, max(samples) * MIB)
            print("RSS (MiB) every 10 statements:", samples)
            # The statement texts alone are 200 MiB; the cache holds 8 MiB of
            # them (each weighed at 4x its text plus 1 KiB). The margin is
            # what the allocator keeps of the freed buffers of requests in
            # flight (each 1 MiB statement is read, parsed and answered on
            # several threads): 80-110 MiB on the debug build (measured on a
            # quiet machine on 2026-11-29: it varies with how the allocator
            # reuses those buffers), reached in the first few dozen
            # statements and flat afterwards (checked below).
            margin = 128 * MIB
            print("RSS before %d MiB, peak %d MiB" % (before // MIB, peak // MIB))
            assert peak < before + cache + margin, \
                "RSS grew by %d MiB over %d statements" % ((peak - before) // MIB, statements)
            # Flat over the second half (100 MiB more statements): nothing
            # kept per statement.
            half = len(samples) // 2
            assert samples[-1] - min(samples[half - 2:half + 1]) < 32, samples
            # The first statement was evicted long ago: its EXECUTE is
            # answered UNPREPARED and the driver prepares it again.
            caplog.set_level(logging.DEBUG, logger="cassandra.cluster")
            session.execute(first, [1])
            assert session.execute("SELECT v FROM ks.t WHERE k = 1").one().v == "first"
            assert "Re-preparing unrecognized prepared statement" in caplog.text
        finally:
            cluster.shutdown()
    finally:
        gen.close()


class RssSampler:
    """The server's largest RSS while a block runs (sampled every 20 ms)."""

    def __init__(self, server):
        self.server = server
        self.peak = 0
        self.done = threading.Event()

    def __enter__(self):
        self.before = self.server.rss_bytes()
        self.peak = self.before
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()
        return self

    def sample(self):
        while not self.done.is_set():
            self.peak = max(self.peak, self.server.rss_bytes())
            time.sleep(0.02)

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        self.peak = max(self.peak, self.server.rss_bytes())

    def growth(self):
        return self.peak - self.before


# RocksDB's own memory held small: the table below is six times the block
# cache and the memtables together.
SMALL_NODE = ("block_cache_size: 8MiB\n"
              "point_cache_size: 0MiB\n"
              "memtable_heap_space: 8MiB\n")
PARTITIONS = 40
ROWS_PER_PARTITION = 40
VALUE_BYTES = 64 * 1024


def load_table(session):
    session.execute("CREATE KEYSPACE ks WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE ks.big (p int, c int, v blob, PRIMARY KEY (p, c))")
    insert = session.prepare("INSERT INTO ks.big (p, c, v) VALUES (?, ?, ?)")
    rows = [(p, c, os.urandom(VALUE_BYTES))
            for p in range(PARTITIONS) for c in range(ROWS_PER_PARTITION)]
    results = execute_concurrent_with_args(session, insert, rows, concurrency=16)
    assert all(ok for ok, _ in results)
    return len(rows) * VALUE_BYTES


def test_aggregates_and_unpaged_reads_do_not_hold_the_table():
    gen = start(BASE_PORT + 3, SMALL_NODE)
    server = next(gen)
    try:
        cluster, session = connect(server.port, request_timeout=120)
        try:
            table_bytes = load_table(session)
            rows = PARTITIONS * ROWS_PER_PARTITION
            time.sleep(2)  # flushes and compactions of the load settle

            with RssSampler(server) as count_rss:
                assert session.execute("SELECT count(*) FROM ks.big").one().count == rows
            with RssSampler(server) as group_rss:
                groups = list(session.execute(
                    "SELECT p, count(*), max(c) FROM ks.big GROUP BY p"))
            assert len(groups) == PARTITIONS
            assert all(g.count == ROWS_PER_PARTITION and g.system_max_c == ROWS_PER_PARTITION - 1
                       for g in groups)
            with RssSampler(server) as keys_rss:
                unpaged = SimpleStatement("SELECT p, c FROM ks.big", fetch_size=None)
                assert len(list(session.execute(unpaged))) == rows
            with RssSampler(server) as all_rss:
                unpaged = SimpleStatement("SELECT * FROM ks.big", fetch_size=None)
                result = session.execute(unpaged)
                assert result.has_more_pages is False
                assert sum(len(r.v) for r in result) == table_bytes
            report = {name: sampler.growth() // MIB for name, sampler in
                      [("count", count_rss), ("group by", group_rss),
                       ("unpaged keys", keys_rss), ("unpaged *", all_rss)]}
            print("table %d MiB; RSS growth (MiB) %s" % (table_bytes // MIB, report))
            # Aggregates, and unpaged reads of the keys only, read the table
            # a batch at a time (about 4 MiB of values): their memory does not
            # follow the table's size. A quarter of the table is allowed for
            # the block cache filling (8 MiB), one batch, RocksDB's iterators
            # and what the allocator keeps.
            assert count_rss.growth() < table_bytes / 4, report
            assert group_rss.growth() < table_bytes / 4, report
            assert keys_rss.growth() < table_bytes / 4, report
            # An unpaged SELECT * answers in one message, so the node holds
            # the whole result, as Cassandra 5.0 does: its result rows, the
            # encoded message and its framing (4.2 to 5.4 times the result
            # on the debug build, measured on a quiet machine on 2026-11-29:
            # two modes, as the encoding buffer's growth falls), but not the
            # rows read whole.
            assert all_rss.growth() < 6 * table_bytes, report
        finally:
            cluster.shutdown()
        assert server.proc.poll() is None
    finally:
        gen.close()

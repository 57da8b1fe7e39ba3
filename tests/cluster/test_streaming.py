"""Ring changes that move data, across real processes: bootstrap and
decommission under a write load, removenode of a dead node, Merkle-tree
repair of a replica that missed writes, rebuild, and the streaming sessions
`nodetool netstats` shows. Each test forms its own cluster (see harness.py).

    /work/main/.venv/bin/pytest -q -p no:cacheprovider tests/cluster/test_streaming.py
"""

import os
import re
import struct
import subprocess
import threading
import time

from cassandra import ConsistencyLevel as CL
from cassandra.metadata import Murmur3Token

from harness import ADDRESSES, BIN, Nodes, bound, in_range, parse_ranges, stmt, wait_until

A, B, C, D = ADDRESSES[:4]


def create_table(session, keyspace, rf):
    session.execute("CREATE KEYSPACE %s WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': %d}" % (keyspace, rf))
    session.execute("CREATE TABLE %s.t (k int PRIMARY KEY, v text)" % keyspace)


def read_all(session, keyspace, keys, cl):
    sel = session.prepare("SELECT v FROM %s.t WHERE k = ?" % keyspace)
    out = {}
    for k in keys:
        row = session.execute(bound(sel, (k,), cl)).one()
        out[k] = row.v if row else None
    return out


def missing_rows(session, keyspace, want, cl):
    got = read_all(session, keyspace, sorted(want), cl)
    return [k for k in sorted(want) if got[k] != want[k]]


class Writer(threading.Thread):
    """Writes new rows at QUORUM through a token-aware session until
    stopped; remembers every acknowledged one."""

    def __init__(self, session, keyspace, first_key):
        super().__init__(daemon=True)
        self.ins = session.prepare("INSERT INTO %s.t (k, v) VALUES (?, ?)" % keyspace)
        self.session = session
        self.next = first_key
        self.acked = {}
        self.failures = 0
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            k, v = self.next, "w%d" % self.next
            self.next += 1
            try:
                self.session.execute(bound(self.ins, (k, v), CL.QUORUM))
                self.acked[k] = v
            except Exception:
                self.failures += 1
                time.sleep(0.05)

    def stop(self):
        self.halt.set()
        self.join(30)
        return self.acked


def status_addresses(nodes, asker):
    return set((nodes[asker].status() or {}).keys())


def test_bootstrap_and_decommission_under_load():
    nodes = Nodes()
    try:
        nodes.start(A, B, C)
        nodes.wait_status({ip: "UN" for ip in (A, B, C)})
        sa = nodes.connect(A)
        create_table(sa, "moves", 2)
        want = {k: "first%d" % k for k in range(300)}
        ins = sa.prepare("INSERT INTO moves.t (k, v) VALUES (?, ?)")
        for k, v in want.items():
            sa.execute(bound(ins, (k, v), CL.ALL))
        writer = Writer(nodes.connect(A, pinned=False), "moves", 10_000)
        writer.start()

        # A fourth node joins while writes go on.
        nodes.start(D)
        nodes.wait_status({ip: "UN" for ip in (A, B, C, D)}, timeout=40)
        netstats = nodes[D].nodetool("netstats").stdout
        assert "Mode: NORMAL" in netstats, netstats
        assert re.search(r"Bootstrap /\S+ \(completed", netstats), netstats

        # Then C leaves, still under load: it streams its ranges away and stops.
        before = len(writer.acked)
        out = nodes[C].nodetool("decommission", timeout=120)
        assert "Decommissioned" in out.stdout, out.stdout + out.stderr
        assert re.search(r"decommission streamed \d+ bytes", nodes[C].log_text())
        assert nodes[C].proc.wait(30) == 0, nodes[C].tail()
        nodes[C].proc = None
        wait_until(lambda: status_addresses(nodes, A) == {A, B, D}, 20,
                   what="C gone from A's status")
        wait_until(lambda: status_addresses(nodes, D) == {A, B, D}, 20,
                   what="C gone from D's status")
        peers = {r.peer for r in sa.execute("SELECT peer FROM system.peers")}
        assert C not in {str(p) for p in peers}, peers
        time.sleep(1)
        acked = writer.stop()
        assert len(acked) > before, "no write was acknowledged during the decommission"
        want.update(acked)
        print("acknowledged during the ring changes: %d writes (%d failures)"
              % (len(acked), writer.failures))

        # Every acknowledged write is readable at QUORUM, and with any one of
        # the remaining nodes stopped, at ONE: each row is on both replicas.
        assert not missing_rows(sa, "moves", want, CL.QUORUM)
        for stopped, reader in ((D, A), (A, B)):
            assert nodes[stopped].terminate() == 0
            nodes.wait_status({stopped: "DN"}, askers=[reader], timeout=30)
            session = nodes.connect(reader)
            missing = missing_rows(session, "moves", want, CL.ONE)
            assert not missing, "with %s stopped, %d rows missing, e.g. %s" % (
                stopped, len(missing), missing[:5])
            nodes[stopped].start()
            nodes.wait_status({ip: "UN" for ip in (A, B, D)}, timeout=30)

        # A decommissioned data directory does not start again.
        code, output = nodes[C].start_refused()
        assert code != 0 and "decommissioned" in output, (code, output)
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), codes


def test_removenode_restores_replica_count():
    nodes = Nodes()
    try:
        nodes.start(A, B, C)
        nodes.wait_status({ip: "UN" for ip in (A, B, C)})
        sa = nodes.connect(A)
        create_table(sa, "rm", 2)
        want = {k: "r%d" % k for k in range(300)}
        ins = sa.prepare("INSERT INTO rm.t (k, v) VALUES (?, ?)")
        for k, v in want.items():
            sa.execute(bound(ins, (k, v), CL.ALL))
        host_id = str(sa.execute("SELECT host_id FROM system.peers WHERE peer = %s",
                                 (C,)).one().host_id)
        nodes[C].kill9()
        nodes.wait_status({C: "DN"}, askers=[A, B], timeout=30)

        out = nodes[A].nodetool("removenode", host_id, timeout=120)
        assert "Removed" in out.stdout, out.stdout + out.stderr
        wait_until(lambda: status_addresses(nodes, A) == {A, B}
                   and status_addresses(nodes, B) == {A, B}, 20, what="C removed everywhere")
        netstats = nodes[A].nodetool("netstats").stdout
        assert "Restore replica count" in netstats, netstats
        # Every range C held now has a second live copy: with B stopped, A
        # alone answers every key.
        assert nodes[B].terminate() == 0
        nodes.wait_status({B: "DN"}, askers=[A], timeout=30)
        missing = missing_rows(sa, "rm", want, CL.ONE)
        assert not missing, "%d rows missing after removenode, e.g. %s" % (
            len(missing), missing[:5])
        nodes[B].start()
        nodes.wait_status({A: "UN", B: "UN"}, askers=[A, B], timeout=30)
        # Removing an unknown or live node is refused.
        bad = nodes[A].nodetool("removenode", "00000000-0000-0000-0000-000000000000",
                                check=False)
        assert bad.returncode != 0 and "Host ID not found" in bad.stderr + bad.stdout
    finally:
        codes = nodes.close()
    assert codes.get(A) == 0 and codes.get(B) == 0, codes


def test_repair_syncs_a_replica_that_missed_writes():
    nodes = Nodes()
    # Without hints, only repair can bring C up to date.
    config = os.path.join(nodes.root, "no-hints.yaml")
    with open(config, "w") as f:
        f.write("hinted_handoff_enabled: false\n")
    try:
        for ip in (A, B, C):
            nodes.add(ip, extra=["--config", config])
        nodes.start(A, B, C)
        nodes.wait_status({ip: "UN" for ip in (A, B, C)})
        sa = nodes.connect(A)
        create_table(sa, "rep", 3)
        ins = sa.prepare("INSERT INTO rep.t (k, v) VALUES (?, ?)")
        for k in range(200):
            sa.execute(bound(ins, (k, "old%d" % k), CL.ALL))
        # C misses the next writes and deletes.
        assert nodes[C].terminate() == 0
        nodes.wait_status({C: "DN"}, askers=[A, B], timeout=30)
        want = {k: "old%d" % k for k in range(200)}
        for k in range(0, 200, 3):
            sa.execute(bound(ins, (k, "new%d" % k), CL.QUORUM))
            want[k] = "new%d" % k
        dele = sa.prepare("DELETE FROM rep.t WHERE k = ?")
        for k in range(1, 200, 10):
            sa.execute(bound(dele, (k,), CL.QUORUM))
            want[k] = None
        nodes[C].start()
        nodes.wait_status({ip: "UN" for ip in (A, B, C)}, timeout=30)

        # C alone (cut off from the others) still has the old data.
        def alone(ip, others):
            nodes[ip].nodetool("isolate", *others)
            try:
                return read_all(nodes.connect(ip), "rep", sorted(want), CL.ONE)
            finally:
                nodes[ip].nodetool("isolate")
        stale = alone(C, [A, B])
        changed = set(range(0, 200, 3)) | set(range(1, 200, 10))
        assert {k for k in want if stale[k] != want[k]} == changed
        nodes.wait_status({ip: "UN" for ip in (A, B, C)}, timeout=30)

        # A sub-range repair (-st/-et: half the ring) fixes exactly the keys
        # whose tokens it covers.
        st, et = -(2 ** 62), 2 ** 62
        out = nodes[C].nodetool("repair", "-st", str(st), "-et", str(et), "rep", timeout=120)
        assert "Repair completed" in out.stdout, out.stdout + out.stderr
        nodes.wait_status({ip: "UN" for ip in (A, B, C)}, timeout=30)
        part = alone(C, [A, B])
        inside = {k for k in want if st < Murmur3Token.from_key(struct.pack(">i", k)).value <= et}
        assert 0 < len(changed & inside) < len(changed)
        assert {k for k in changed if part[k] != want[k]} == changed - inside
        nodes.wait_status({ip: "UN" for ip in (A, B, C)}, timeout=30)

        out = nodes[C].nodetool("repair", "rep", timeout=120)
        assert "Repair completed" in out.stdout, out.stdout + out.stderr
        m = re.search(r"(\d+) table ranges compared, (\d+) out of sync", out.stdout)
        assert m and int(m.group(2)) > 0, out.stdout
        # Only slices that differed were streamed: far fewer than all.
        slices = sum(int(x) for x in re.findall(r"(\d+) of \d+ slices out of sync", out.stdout))
        total = sum(int(x) for x in re.findall(r"of (\d+) slices out of sync", out.stdout))
        assert 0 < slices < total, out.stdout

        nodes.wait_status({ip: "UN" for ip in (A, B, C)}, timeout=30)
        repaired = alone(C, [A, B])
        wrong = [k for k in want if repaired[k] != want[k]]
        assert not wrong, "after repair C still differs on %d keys, e.g. %s" % (
            len(wrong), wrong[:5])
        # A second repair finds nothing to do.
        again = nodes[C].nodetool("repair", "rep", timeout=120).stdout
        assert re.search(r", 0 out of sync", again), again
        # Rebuild streams every range from the others and changes nothing.
        rebuilt = nodes[C].nodetool("rebuild", timeout=120).stdout
        assert "Rebuild finished" in rebuilt, rebuilt
        assert alone(C, [A, B]) == repaired
        bad = nodes[C].nodetool("repair", "nosuch", check=False)
        assert bad.returncode != 0 and "does not exist" in bad.stderr + bad.stdout
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), codes


def test_decommission_hands_its_hints_over():
    """The hints a leaving node keeps for a down node are not lost with it:
    decommission hands them to the closest live node, which delivers them
    once the down node is back. Two data centers, one replica in each, so
    the down node (dc2) takes none of the leaving node's (dc1) ranges."""
    nodes = Nodes()
    try:
        nodes.add(A)
        nodes.add(C)
        nodes.add(B, extra=["--dc", "dc2"])
        nodes.add(D, extra=["--dc", "dc2"])
        for ip in (A, B, C, D):
            nodes.start(ip)
        nodes.wait_status({ip: "UN" for ip in (A, B, C, D)})
        sc = nodes.connect(C)
        sc.execute("CREATE KEYSPACE hh WITH replication = {'class': 'NetworkTopologyStrategy', "
                   "'datacenter1': 1, 'dc2': 1}")
        sc.execute("CREATE TABLE hh.t (k int PRIMARY KEY, v text)")
        dc_of = {r.peer: r.data_center for r in sc.execute("SELECT peer, data_center FROM system.peers")}
        assert dc_of.get(str(D)) == "dc2" and dc_of.get(str(A)) == "datacenter1", dc_of
        assert nodes[D].terminate() == 0
        nodes.wait_status({D: "DN"}, askers=[A, B, C], timeout=30)
        ins = sc.prepare("INSERT INTO hh.t (k, v) VALUES (?, ?)")
        keys = list(range(60))
        for k in keys:
            sc.execute(bound(ins, (k, "h%d" % k), CL.ONE))

        out = nodes[C].nodetool("decommission", timeout=180)
        assert "Decommissioned" in out.stdout, out.stdout + out.stderr
        assert nodes[C].proc.wait(timeout=60) == 0, nodes[C].tail()
        m = re.search(r"handed (\d+) hints over to " + re.escape(A), nodes[C].log_text())
        assert m and int(m.group(1)) > 0, nodes[C].tail()

        nodes[D].start()
        nodes.wait_status({A: "UN", B: "UN", D: "UN"}, askers=[A, B, D], timeout=30)
        ranges = parse_ranges(nodes[A].nodetool("describering", "hh").stdout)
        owned = [k for k in keys if any(
            D in eps and in_range(Murmur3Token.from_key(struct.pack(">i", k)).value, s, e)
            for s, e, eps in ranges)]
        assert 0 < len(owned) < len(keys), owned
        want = {k: "h%d" % k for k in owned}

        def d_has_them():
            nodes[D].nodetool("isolate", A, B)
            try:
                got = read_all(nodes.connect(D), "hh", owned, CL.ONE)
            finally:
                nodes[D].nodetool("isolate")
            return got == want or sum(1 for k in owned if got[k] != want[k])
        wait_until(d_has_them, 40, interval=2, what="A delivering C's hints to D (rows missing)")
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), codes


def test_streams_move_in_small_chunks_at_the_throttled_rate(monkeypatch):
    """With 4 KiB chunks (a test build's ROCKSANDRA_TEST_STREAM_CHUNK_BYTES)
    a joining node takes its part of ~3 MB in hundreds of chunks, the
    sources pace them by setstreamthroughput, and a decommission pushes them
    back the same way."""
    monkeypatch.setenv("ROCKSANDRA_TEST_STREAM_CHUNK_BYTES", "4096")
    nodes = Nodes()
    try:
        nodes.start(A, B)
        nodes.wait_status({A: "UN", B: "UN"})
        sa = nodes.connect(A)
        create_table(sa, "chunks", 1)
        ins = sa.prepare("INSERT INTO chunks.t (k, v) VALUES (?, ?)")
        # About 1 KB each, random so that compression leaves them that size.
        want = {k: os.urandom(500).hex() for k in range(3000)}
        for k, v in want.items():
            sa.execute(bound(ins, (k, v), CL.ONE))
        for ip in (A, B):
            nodes[ip].nodetool("flush")
            # Cassandra's default, 24MiB/s, as Cassandra 5.0.6 states it: not
            # a whole number of megabits, so only -d or -m print it.
            rounded = nodes[ip].nodetool("getstreamthroughput", check=False)
            assert rounded.returncode != 0
            assert "Use the -d flag to quiet this error" in rounded.stdout + rounded.stderr
            assert nodes[ip].nodetool("getstreamthroughput", "-m").stdout.strip() == \
                "Current stream throughput: 24.0 MiB/s"
            nodes[ip].nodetool("setstreamthroughput", "-m", "1")
            assert nodes[ip].nodetool("getstreamthroughput", "-d").stdout.strip() == \
                "Current stream throughput: 8.388608 Mb/s"
            # 2 megabits: 250,000 bytes a second.
            nodes[ip].nodetool("setstreamthroughput", "2")
            assert nodes[ip].nodetool("getstreamthroughput").stdout.strip() == \
                "Current stream throughput: 2 Mb/s"

        nodes.start(C)
        nodes.wait_status({ip: "UN" for ip in (A, B, C)}, timeout=60)
        m = re.search(r"bootstrap streamed (\d+) bytes in ([\d.]+) s", nodes[C].log_text())
        assert m, nodes[C].tail()
        streamed, secs = int(m.group(1)), float(m.group(2))
        # C takes about a quarter of the data: hundreds of 4 KiB chunks,
        # sent by two sources at 250,000 bytes a second each at most.
        assert streamed > 150 * 4096, streamed
        assert secs >= 0.8 * streamed / 500_000, (streamed, secs)
        netstats = nodes[C].nodetool("netstats").stdout
        files = [int(n) for n in re.findall(r"Already received (\d+) files", netstats)]
        assert files and sum(files) > 0, netstats
        got = read_all(nodes.connect(C), "chunks", sorted(want), CL.ONE)
        assert got == want

        # Unthrottled, C pushes its ranges back when it leaves.
        nodes[C].nodetool("setstreamthroughput", "200")
        assert nodes[C].nodetool("getstreamthroughput").stdout.strip() == \
            "Current stream throughput: 200 Mb/s"
        nodes[C].nodetool("setstreamthroughput", "0")
        assert nodes[C].nodetool("getstreamthroughput").stdout.strip() == \
            "Current stream throughput: unlimited"
        # A keyspace that needs all three nodes holds C back, unless forced.
        sa.execute("CREATE KEYSPACE rf3 WITH replication = "
                   "{'class': 'SimpleStrategy', 'replication_factor': 3}")
        refused = nodes[C].nodetool("decommission", check=False)
        assert refused.returncode != 0
        assert ("Not enough live nodes to maintain replication factor in keyspace rf3 "
                "(RF = 3, N = 3). Perform a forceful decommission to ignore."
                in refused.stdout + refused.stderr), refused
        out = nodes[C].nodetool("decommission", "--force", timeout=120)
        assert "Decommissioned" in out.stdout, out.stdout + out.stderr
        assert nodes[C].proc.wait(30) == 0, nodes[C].tail()
        nodes[C].proc = None
        nodes.wait_status({A: "UN", B: "UN"}, askers=[A, B], timeout=30)
        got = read_all(sa, "chunks", sorted(want), CL.ONE)
        missing = [k for k in want if got[k] != want[k]]
        assert not missing, "%d rows lost, e.g. %s" % (len(missing), missing[:5])
        # The sessions went with their files on every node.
        for ip in (A, B):
            leftovers = os.listdir(os.path.join(nodes[ip].data_dir, "streaming")) \
                if os.path.isdir(os.path.join(nodes[ip].data_dir, "streaming")) else []
            assert leftovers == [], leftovers
    finally:
        nodes.close()


def test_a_second_nodetool_attaches_to_the_running_decommission(monkeypatch):
    """A nodetool killed while its decommission streams leaves the
    decommission running; running the command again starts no second one
    (nor fails because the node is LEAVING): it attaches, waits for the
    end and prints the outcome."""
    monkeypatch.setenv("ROCKSANDRA_TEST_STREAM_CHUNK_BYTES", "4096")
    nodes = Nodes()
    first = None
    try:
        nodes.start(A, B)
        nodes.wait_status({A: "UN", B: "UN"})
        sa = nodes.connect(A)
        create_table(sa, "attach", 1)
        ins = sa.prepare("INSERT INTO attach.t (k, v) VALUES (?, ?)")
        want = {k: os.urandom(500).hex() for k in range(3000)}
        for k, v in want.items():
            sa.execute(bound(ins, (k, v), CL.ONE))
        nodes[B].nodetool("flush")
        # 2 megabits: B's half of ~3 MB takes several seconds to push.
        nodes[B].nodetool("setstreamthroughput", "2")

        # Forced: system_traces (RF 2) keeps fewer replicas than its RF.
        command = [BIN, "nodetool", "--host", B, "decommission", "--force"]
        first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while "Unbootstrap" not in nodes[B].nodetool("netstats").stdout:
            assert first.poll() is None, first.stdout.read().decode()
            assert time.monotonic() < deadline, "B did not start streaming its ranges"
            time.sleep(0.2)
        first.kill()
        first.wait(timeout=30)

        # Without --force: it attaches before any check of its own.
        again = nodes[B].nodetool("decommission", timeout=180)
        out = again.stdout
        assert "A decommission was running already" in out, out + again.stderr
        assert "attached to it" in out and "Decommissioned" in out, out
        assert nodes[B].proc.wait(30) == 0, nodes[B].tail()
        nodes[B].proc = None
        # One decommission ran: one set of streams.
        log = nodes[B].log_text()
        assert len(re.findall(r"decommission streamed \d+ bytes", log)) == 1, log
        assert "nodetool attached to the decommission" in log, log
        missing = missing_rows(sa, "attach", want, CL.ONE)
        assert not missing, "%d rows lost, e.g. %s" % (len(missing), missing[:5])
    finally:
        if first is not None and first.poll() is None:
            first.kill()
            first.wait(timeout=30)
        codes = nodes.close()
    assert codes.get(A) == 0, codes

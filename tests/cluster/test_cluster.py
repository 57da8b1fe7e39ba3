"""Cluster mode across real processes: formation, schema agreement, replication
and consistency levels, lightweight transactions and counters across
coordinators, logged batches through a coordinator crash, a slow replica,
failure and hinted handoff, read repair under a
partition, nodetool, and bootstrap streaming. Each node is a `rocksandra`
process on its own loopback address (127.0.0.11-13); see harness.py.

    /work/main/.venv/bin/pytest -q -p no:cacheprovider tests/cluster

The tests in `TestThreeNodes` share one 3-node cluster (in file order; the
kill -9 test is last and restarts its node); the bootstrap test forms its own.
"""

import os
import re
import signal
import struct
import threading
import time

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra import ReadTimeout, Unavailable, WriteTimeout
from cassandra.metadata import Murmur3Token

from harness import ADDRESSES, Nodes, bound, in_range, parse_ranges, stmt, wait_until
from cassandra.query import SimpleStatement

A, B, C = ADDRESSES[:3]
THREE = [A, B, C]
NUM_TOKENS = 16


class Shared:
    def __init__(self, nodes):
        self.nodes = nodes
        self.pinned = {ip: nodes.connect(ip) for ip in THREE}

    def repin(self, ip):
        self.pinned[ip] = self.nodes.connect(ip)
        return self.pinned[ip]


@pytest.fixture(scope="class")
def three():
    nodes = Nodes()
    try:
        config = os.path.join(nodes.root, "views.yaml")
        with open(config, "w") as f:
            f.write("materialized_views_enabled: true\n")
        for ip in THREE:
            nodes.start(ip, extra=["--config", config])
        nodes.wait_status({ip: "UN" for ip in THREE})
        yield Shared(nodes)
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), "unclean stops: %s" % codes


def create_keyspace(session, name, rf):
    session.execute("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': %d}" % (name, rf))


def schema_versions(shared):
    """Every node's own schema_version and the versions it sees for its peers."""
    versions = {}
    for ip, s in shared.pinned.items():
        versions[ip] = s.execute("SELECT schema_version FROM system.local").one().schema_version
        for p in s.execute("SELECT peer, schema_version FROM system.peers"):
            versions["%s@%s" % (p.peer, ip)] = p.schema_version
    return versions


def assert_schema_agreement(shared, timeout=10):
    """Every node's own version agrees at once (the change reached every
    node before the statement returned); the versions nodes show for their
    peers come by gossip and agree within the drivers' schema agreement
    wait (max_schema_agreement_wait, 10 s)."""
    local = {ip: s.execute("SELECT schema_version FROM system.local").one().schema_version
             for ip, s in shared.pinned.items()}
    assert len(set(local.values())) == 1, local
    deadline = time.monotonic() + timeout
    while True:
        versions = schema_versions(shared)
        if len(set(versions.values())) == 1:
            return
        assert time.monotonic() < deadline, versions
        time.sleep(0.1)


def tables_on(session, keyspace):
    return {r.table_name for r in session.execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,))}


def read_all(session, prepared, keys, cl):
    out = {}
    for k in keys:
        row = session.execute(bound(prepared, (k,), cl)).one()
        out[k] = row.v if row else None
    return out


def lwt_stmt(query, cl=CL.QUORUM, serial=CL.SERIAL):
    return SimpleStatement(query, consistency_level=cl, serial_consistency_level=serial)


def lwt_bound(prepared, values, cl=CL.QUORUM, serial=CL.SERIAL):
    b = bound(prepared, values, cl)
    b.serial_consistency_level = serial
    return b


def serial_read(session, prepared, values, attempts=5):
    """A SERIAL read, retried when contention with concurrent Paxos rounds
    made it time out (it changes nothing, so a retry is safe)."""
    for i in range(attempts):
        try:
            return session.execute(bound(prepared, values, CL.SERIAL)).one()
        except (ReadTimeout, WriteTimeout):
            if i == attempts - 1:
                raise


def wait_for_rows(session, prepared, want, cl, timeout, interval, what):
    """Polls until reading each key of `want` at `cl` gives its value
    (while waiting, the predicate's value is how many rows still differ)."""
    def done():
        got = read_all(session, prepared, list(want), cl)
        return got == want or sum(1 for k in want if got[k] != want[k])
    wait_until(done, timeout, interval=interval, what=what + " (value = rows missing)")


class TestThreeNodes:
    def test_formation(self, three):
        local = {}
        peers = {}
        for ip in THREE:
            s = three.pinned[ip]
            row = s.execute("SELECT host_id, tokens, data_center, rack, rpc_address, "
                            "listen_address FROM system.local").one()
            assert len(row.tokens) == NUM_TOKENS, (ip, row.tokens)
            assert str(row.rpc_address) == ip and str(row.listen_address) == ip
            assert row.data_center == "datacenter1" and row.rack == "rack1"
            local[ip] = row
            peers[ip] = {str(p.peer): p for p in s.execute(
                "SELECT peer, rpc_address, data_center, rack, host_id, tokens FROM system.peers")}
            assert sorted(peers[ip]) == sorted(set(THREE) - {ip}), (ip, sorted(peers[ip]))
        assert len({r.host_id for r in local.values()}) == 3
        all_tokens = [t for r in local.values() for t in r.tokens]
        assert len(set(all_tokens)) == 3 * NUM_TOKENS, "tokens collide"
        for ip in THREE:
            for peer, p in peers[ip].items():
                assert str(p.rpc_address) == peer
                assert p.data_center == "datacenter1" and p.rack == "rack1"
                assert p.host_id == local[peer].host_id, (ip, peer)
                assert set(p.tokens) == set(local[peer].tokens), (ip, peer)

        for ip in THREE:
            status = three.nodes[ip].status()
            assert status == {a: "UN" for a in THREE}, (ip, status)

        # The driver discovers the others and builds a token map from them.
        cluster = three.nodes.connect(A, pinned=False).cluster
        assert sorted(h.address for h in cluster.metadata.all_hosts()) == THREE
        assert all(h.is_up for h in cluster.metadata.all_hosts())
        create_keyspace(cluster.connect(), "formation3", 3)
        create_keyspace(cluster.connect(), "formation1", 1)
        cluster.refresh_schema_metadata()
        token_map = cluster.metadata.token_map
        assert token_map is not None and len(token_map.ring) == 3 * NUM_TOKENS
        key = struct.pack(">i", 42)
        assert len(cluster.metadata.get_replicas("formation3", key)) == 3
        # With RF 1 the driver's replica is the one the server's ring names.
        ranges = parse_ranges(three.nodes[A].nodetool("describering", "formation1").stdout)
        for k in range(20):
            key = struct.pack(">i", k)
            token = Murmur3Token.from_key(key).value
            [server] = [eps for s, e, eps in ranges if in_range(token, s, e)]
            driver = [h.address for h in cluster.metadata.get_replicas("formation1", key)]
            assert driver == server, (k, token, driver, server)

    def test_nodetool(self, three):
        create_keyspace(three.pinned[A], "nt3", 3)
        node = three.nodes[B]
        ring = node.nodetool("ring").stdout
        token_lines = [l for l in ring.splitlines()
                       if re.match(r"^\d+\.\d+\.\d+\.\d+\s+\S+\s+Up\s+Normal\s+-?\d+\s*$", l)]
        assert len(token_lines) == 3 * NUM_TOKENS, ring
        assert {l.split()[0] for l in token_lines} == set(THREE)

        ranges = parse_ranges(node.nodetool("describering", "nt3").stdout)
        assert len(ranges) == 3 * NUM_TOKENS
        for start, end, eps in ranges:
            assert sorted(eps) == THREE, (start, end, eps)
        # The ranges tile the ring.
        for (_, end, _), (start, _, _) in zip(ranges, ranges[1:] + ranges[:1]):
            assert end == start

        info = node.nodetool("info").stdout
        assert re.search(r"^Status\s*:\s*NORMAL\s*$", info, re.M), info
        assert re.search(r"^Gossip active\s*:\s*true", info, re.M), info
        node.nodetool("flush")
        node.nodetool("cleanup")
        # Every node's load (gossiped, as Cassandra's LOAD) shows in status.
        load = re.compile(r"^[UD][NLJ]\s+(\S+)\s+(\d+(?:\.\d+)? (?:bytes|KiB|MiB|GiB|TiB))\s", re.M)

        def loads_known():
            seen = dict(load.findall(node.nodetool("status").stdout))
            return set(seen) == set(THREE) or seen
        wait_until(loads_known, 15, what="every node's load in status")

    def test_nodetool_snapshot(self, three):
        node = three.nodes[B]
        for tag in ("first", "second"):
            out = node.nodetool("snapshot", "-t", tag).stdout
            snap = os.path.join(node.data_dir, "snapshots", tag)
            assert os.path.isdir(snap) and os.listdir(snap), (out, snap)

    def test_schema_agreement(self, three):
        sa = three.pinned[A]
        sa.execute("CREATE KEYSPACE schema_ks WITH replication = "
                   "{'class': 'SimpleStrategy', 'replication_factor': 3}")
        sa.execute("CREATE TABLE schema_ks.t (k int PRIMARY KEY, v text)")
        sa.execute("ALTER TABLE schema_ks.t ADD extra int")
        # Spread before each statement returned: no polling.
        for ip, s in three.pinned.items():
            assert tables_on(s, "schema_ks") == {"t"}, ip
            cols = {r.column_name for r in s.execute(
                "SELECT column_name FROM system_schema.columns "
                "WHERE keyspace_name = 'schema_ks' AND table_name = 't'")}
            assert cols == {"k", "v", "extra"}, (ip, cols)
        assert_schema_agreement(three)
        # The new column is usable through every node.
        three.pinned[B].execute(stmt("INSERT INTO schema_ks.t (k, v, extra) VALUES (1, 'a', 7)",
                                     CL.ALL))
        row = three.pinned[C].execute(stmt("SELECT extra FROM schema_ks.t WHERE k = 1",
                                           CL.ALL)).one()
        assert row.extra == 7

    def test_concurrent_ddl(self, three):
        create_keyspace(three.pinned[A], "ddl_ks", 3)
        expected = set()
        errors = []
        for rnd in range(3):
            barrier = threading.Barrier(len(THREE))

            def create(ip, name):
                try:
                    barrier.wait(timeout=30)
                    three.pinned[ip].execute(
                        "CREATE TABLE ddl_ks.%s (k int PRIMARY KEY, v text)" % name)
                except Exception as e:  # reported below
                    errors.append((ip, name, repr(e)))

            threads = []
            for i, ip in enumerate(THREE):
                name = "t%d_%d" % (rnd, i)
                expected.add(name)
                threads.append(threading.Thread(target=create, args=(ip, name)))
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
        assert not errors, errors
        for ip, s in three.pinned.items():
            assert tables_on(s, "ddl_ks") == expected, ip
        assert_schema_agreement(three)
        # Every table is writable through another node than its creator.
        for name in sorted(expected):
            three.pinned[C].execute(stmt("INSERT INTO ddl_ks.%s (k, v) VALUES (1, 'x')" % name,
                                         CL.ALL))

    def test_replication_rf3(self, three):
        sa = three.pinned[A]
        create_keyspace(sa, "rep3", 3)
        sa.execute("CREATE TABLE rep3.t (k int PRIMARY KEY, v text)")
        ins = sa.prepare("INSERT INTO rep3.t (k, v) VALUES (?, ?)")
        keys = list(range(200))
        for k in keys:
            sa.execute(bound(ins, (k, "v%d" % k), CL.QUORUM))
        for ip, s in three.pinned.items():
            sel = s.prepare("SELECT v FROM rep3.t WHERE k = ?")
            got = read_all(s, sel, keys, CL.ONE)
            missing = [k for k in keys if got[k] != "v%d" % k]
            assert not missing, "%s misses %d rows, e.g. %s" % (ip, len(missing), missing[:5])
            scanned = {r.k: r.v for r in s.execute(stmt("SELECT k, v FROM rep3.t", CL.ONE))}
            assert scanned == {k: "v%d" % k for k in keys}, ip

    def test_decimal_keys_keep_their_written_form_across_replicas(self, three):
        """Map keys, set elements and clustering values written as `1.50`
        compare equal to `1.5` but read back as written on every replica,
        through replica writes, reads at ALL and read repair."""
        sa, sb, sc = (three.pinned[ip] for ip in THREE)
        create_keyspace(sa, "dec3", 3)
        sa.execute("CREATE TABLE dec3.t (k int, c decimal, m map<decimal, int>, "
                   "s set<decimal>, PRIMARY KEY (k, c))")

        def shown(session, k, cl):
            rows = session.execute(stmt("SELECT c, m, s FROM dec3.t WHERE k = %d" % k, cl))
            return [(str(r.c), sorted((str(key), v) for key, v in (r.m or {}).items()),
                     sorted(str(e) for e in (r.s or ()))) for r in rows]

        for k in range(10):
            sa.execute(stmt("UPDATE dec3.t SET m[1.50] = 1, m[100] = 2, s = s + {1.50, 2.0} "
                            "WHERE k = %d AND c = 1.50" % k, CL.ALL))
            sb.execute(stmt("UPDATE dec3.t SET m[1E+2] = 3, s = s + {2.00} "
                            "WHERE k = %d AND c = 1.5" % k, CL.ALL))
        want = [("1.50", [("1.50", 1), ("1E+2", 3)], ["1.50", "2.00"])]
        for ip, session in three.pinned.items():
            for k in range(10):
                assert shown(session, k, CL.ONE) == want, (ip, k)
                assert shown(session, k, CL.ALL) == want, (ip, k)
        # C misses a write; an ALL read through C repairs it with the
        # written keys.
        nodes = three.nodes
        try:
            nodes[C].nodetool("isolate", A, B)
            nodes[A].nodetool("isolate", C)
            nodes[B].nodetool("isolate", C)
            for k in range(10):
                sa.execute(stmt("UPDATE dec3.t SET m[1.500] = 4, s = s + {1.5000} "
                                "WHERE k = %d AND c = 1.5" % k, CL.QUORUM))
            assert shown(sc, 0, CL.ONE) == want, "isolated C received writes"
        finally:
            for ip in THREE:
                nodes[ip].nodetool("isolate")
        nodes.wait_status({ip: "UN" for ip in THREE}, timeout=30)
        repaired = [("1.50", [("1.500", 4), ("1E+2", 3)], ["1.5000", "2.00"])]
        for k in range(10):
            assert shown(sc, k, CL.ALL) == repaired, k
        for k in range(10):
            assert shown(sc, k, CL.ONE) == repaired, ("read repair did not write C", k)

    def test_materialized_view_across_coordinators(self, three):
        """Each coordinator maintains the view of the writes it coordinates
        (reading the base rows at the write's consistency level), so writes
        through any node, key changes and deletes included, show in the view
        at QUORUM from every node."""
        sa = three.pinned[A]
        create_keyspace(sa, "views", 3)
        sa.execute("CREATE TABLE views.users (id int PRIMARY KEY, name text, state text)")
        sa.execute("CREATE MATERIALIZED VIEW views.by_state AS SELECT * FROM views.users "
                   "WHERE state IS NOT NULL AND id IS NOT NULL PRIMARY KEY (state, id)")
        ids = list(range(60))
        for i in ids:
            s = three.pinned[THREE[i % 3]]
            s.execute(stmt("INSERT INTO views.users (id, name, state) VALUES (%d, 'u%d', 'S%d')"
                           % (i, i, i % 3), CL.QUORUM))
        for i in ids[::2]:  # moved by another coordinator than the one that wrote it
            s = three.pinned[THREE[(i + 1) % 3]]
            s.execute(stmt("UPDATE views.users SET state = 'MOVED' WHERE id = %d" % i, CL.QUORUM))
        three.pinned[C].execute(stmt("DELETE FROM views.users WHERE id = 1", CL.QUORUM))
        expected = {
            "MOVED": ids[::2],
            "S0": [i for i in ids if i % 2 and i % 3 == 0],
            "S1": [i for i in ids if i % 2 and i % 3 == 1 and i != 1],
            "S2": [i for i in ids if i % 2 and i % 3 == 2],
        }
        for ip, s in three.pinned.items():
            sel = s.prepare("SELECT id FROM views.by_state WHERE state = ?")
            for state, want in expected.items():
                got = sorted(r.id for r in s.execute(bound(sel, (state,), CL.QUORUM)))
                assert got == want, (ip, state, got)
            total = s.execute(stmt("SELECT count(*) FROM views.by_state", CL.QUORUM)).one()[0]
            assert total == len(ids) - 1, (ip, total)

    def test_replication_rf1_forwards(self, three):
        create_keyspace(three.pinned[A], "rep1", 1)
        three.pinned[A].execute("CREATE TABLE rep1.t (k int PRIMARY KEY, v text)")
        keys = list(range(90))
        for k in keys:  # each row through a different node
            s = three.pinned[THREE[k % 3]]
            s.execute(stmt("INSERT INTO rep1.t (k, v) VALUES (%d, 'w%d')" % (k, k), CL.ONE))
        for ip, s in three.pinned.items():
            sel = s.prepare("SELECT v FROM rep1.t WHERE k = ?")
            got = read_all(s, sel, keys, CL.ONE)
            missing = [k for k in keys if got[k] != "w%d" % k]
            assert not missing, "%s misses %d rows, e.g. %s" % (ip, len(missing), missing[:5])
            scanned = {r.k: r.v for r in s.execute(stmt("SELECT k, v FROM rep1.t", CL.ONE))}
            assert scanned == {k: "w%d" % k for k in keys}, ip

    def test_read_repair_after_partition(self, three):
        sa, sc = three.pinned[A], three.pinned[C]
        create_keyspace(sa, "rr", 3)
        sa.execute("CREATE TABLE rr.t (k int PRIMARY KEY, v text)")
        ins = sa.prepare("INSERT INTO rr.t (k, v) VALUES (?, ?)")
        sel_c = sc.prepare("SELECT v FROM rr.t WHERE k = ?")
        keys = list(range(50))
        for k in keys:
            sa.execute(bound(ins, (k, "old%d" % k), CL.ALL))
        nodes = three.nodes
        try:
            nodes[C].nodetool("isolate", A, B)
            nodes[A].nodetool("isolate", C)
            nodes[B].nodetool("isolate", C)
            t0 = time.monotonic()
            for k in keys:
                sa.execute(bound(ins, (k, "new%d" % k), CL.QUORUM))
            # C's own copy (ONE through C reads locally) missed the writes.
            stale = read_all(sc, sel_c, keys, CL.ONE)
            assert stale == {k: "old%d" % k for k in keys}, "isolated C received writes"
            partitioned_for = time.monotonic() - t0
        finally:
            for ip in THREE:
                nodes[ip].nodetool("isolate")
        nodes.wait_status({ip: "UN" for ip in THREE}, timeout=30)
        hints_before = "replayed" in nodes[A].log_text()
        # ALL through C: C's stale data and A/B's digests differ -> reconcile + repair.
        got = read_all(sc, sel_c, keys, CL.ALL)
        assert got == {k: "new%d" % k for k in keys}
        got = read_all(sc, sel_c, keys, CL.ONE)
        assert got == {k: "new%d" % k for k in keys}, "read repair did not write C"
        print("partitioned for %.1f s; hints replayed before the ALL read: %s"
              % (partitioned_for, hints_before))

    def test_lwt_linearizable_across_coordinators(self, three):
        """Three clients, each through another node, race compare-and-set
        increments of one value and IF NOT EXISTS inserts of the same ids:
        no update is lost and each id is inserted once. A WRITE_TIMEOUT of
        type CAS leaves the outcome unknown (as in Cassandra): counted apart."""
        sa = three.pinned[A]
        create_keyspace(sa, "lwt", 3)
        sa.execute("CREATE TABLE lwt.reg (k int PRIMARY KEY, v int)")
        sa.execute("CREATE TABLE lwt.ids (id int PRIMARY KEY, owner text)")
        first = sa.execute(lwt_stmt("INSERT INTO lwt.reg (k, v) VALUES (0, 0) IF NOT EXISTS"))
        assert first.one()[0] is True
        ids = list(range(30))
        rounds = 12
        results = {ip: {"applied": 0, "unknown": 0, "inserted": 0, "errors": []} for ip in THREE}

        def client(ip):
            s, r = three.pinned[ip], results[ip]
            cas = s.prepare("UPDATE lwt.reg SET v = ? WHERE k = 0 IF v = ?")
            ins = s.prepare("INSERT INTO lwt.ids (id, owner) VALUES (?, ?) IF NOT EXISTS")
            get = s.prepare("SELECT v FROM lwt.reg WHERE k = 0")
            try:
                current = serial_read(s, get, ()).v
                for i in range(rounds):
                    try:
                        row = s.execute(lwt_bound(cas, (current + 1, current))).one()
                    except WriteTimeout as e:
                        assert e.write_type == 5, e  # CAS
                        r["unknown"] += 1
                        current = serial_read(s, get, ()).v
                        continue
                    if row[0]:
                        r["applied"] += 1
                        current += 1
                    else:
                        current = row.v  # the value that made it fail
                    try:
                        done = s.execute(lwt_bound(ins, (ids[(i * 3 + THREE.index(ip)) % len(ids)], ip)))
                        r["inserted"] += int(done.one()[0])
                    except WriteTimeout:
                        r["unknown"] += 1
                for i in ids:  # every client tries every id
                    try:
                        r["inserted"] += int(s.execute(lwt_bound(ins, (i, ip))).one()[0])
                    except WriteTimeout:
                        r["unknown"] += 1
            except Exception as e:  # reported below
                r["errors"].append(repr(e))

        threads = [threading.Thread(target=client, args=(ip,)) for ip in THREE]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(r["errors"] for r in results.values()), results
        applied = sum(r["applied"] for r in results.values())
        unknown = sum(r["unknown"] for r in results.values())
        inserted = sum(r["inserted"] for r in results.values())
        final = serial_read(sa, sa.prepare("SELECT v FROM lwt.reg WHERE k = 0"), ()).v
        print("applied %d, unknown %d, final %d, inserted %d: %s"
              % (applied, unknown, final, inserted, results))
        assert applied > 0
        # Every applied increment is there, and only those (plus timed-out ones).
        assert applied <= final <= applied + unknown, results
        assert inserted <= len(ids) <= inserted + unknown, results
        # Every node holds the final value (the commit went to all).
        for ip, s in three.pinned.items():
            assert s.execute(stmt("SELECT v FROM lwt.reg WHERE k = 0", CL.QUORUM)).one().v == final

    def test_counters_from_three_coordinators(self, three):
        """Concurrent increments through three coordinators, two of them
        with IN over two partitions (each partition its own Paxos round):
        no increment is lost or applied twice."""
        sa = three.pinned[A]
        create_keyspace(sa, "cnt", 3)
        sa.execute("CREATE TABLE cnt.c (k int PRIMARY KEY, n counter)")
        per_client = 25
        keys_of = {A: (0,), B: (0, 1), C: (0, 1)}
        results = {ip: {"ok": 0, "unknown": 0, "errors": []} for ip in THREE}

        def client(ip):
            s, r = three.pinned[ip], results[ip]
            where = "k = 0" if len(keys_of[ip]) == 1 else "k IN (0, 1)"
            inc = s.prepare("UPDATE cnt.c SET n = n + 1 WHERE " + where)
            try:
                for _ in range(per_client):
                    try:
                        s.execute(bound(inc, (), CL.QUORUM))
                        r["ok"] += 1
                    except WriteTimeout:
                        r["unknown"] += 1
            except Exception as e:
                r["errors"].append(repr(e))

        threads = [threading.Thread(target=client, args=(ip,)) for ip in THREE]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(r["errors"] for r in results.values()), results
        for key in (0, 1):
            clients = [ip for ip in THREE if key in keys_of[ip]]
            ok = sum(results[ip]["ok"] for ip in clients)
            unknown = sum(results[ip]["unknown"] for ip in clients)
            row = sa.execute(stmt("SELECT n FROM cnt.c WHERE k = %d" % key, CL.QUORUM)).one()
            total = row.n if row else 0
            print("counter %d: %d acknowledged, %d unknown, total %d" % (key, ok, unknown, total))
            assert ok <= total <= ok + unknown, (key, total, results)
            assert ok >= per_client * len(clients) // 2, (key, results)

    def test_slow_replica(self, three):
        """A replica that answers every request later than the write
        timeout while gossip still calls it up: QUORUM writes and reads
        through the other nodes do not wait for it (reads speculate on
        another replica), ALL times out with Cassandra's fields, and once it
        is fast again it holds every write (applied late, or hinted)."""
        nodes = three.nodes
        sa = three.pinned[A]
        create_keyspace(sa, "slow", 3)
        sa.execute("CREATE TABLE slow.t (k int PRIMARY KEY, v text)")
        ins = sa.prepare("INSERT INTO slow.t (k, v) VALUES (?, ?)")
        sel = sa.prepare("SELECT v FROM slow.t WHERE k = ?")
        keys = list(range(30))
        want = {k: "s%d" % k for k in keys}
        nodes[C].nodetool("slow", "2500")
        try:
            for k in keys:
                sa.execute(bound(ins, (k, want[k]), CL.QUORUM))
            assert read_all(sa, sel, keys, CL.QUORUM) == want
            with pytest.raises(WriteTimeout) as err:
                sa.execute(bound(ins, (999, "all"), CL.ALL))
            e = err.value
            assert e.consistency == CL.ALL, e
            assert e.received_responses == 2 and e.required_responses == 3, e
            assert e.write_type == 0, e  # SIMPLE
            assert nodes[A].status().get(C) == "UN", "the slow node was called down"
        finally:
            nodes[C].nodetool("slow", "0")
        sc = three.pinned[C]
        sel_c = sc.prepare("SELECT v FROM slow.t WHERE k = ?")
        want[999] = "all"

        wait_for_rows(sc, sel_c, want, CL.ONE, 30, 0.5, "the slow node's copy")
        assert read_all(sa, sel, list(want), CL.ALL) == want

    def test_logged_batch_survives_coordinator_crash(self, three):
        """A logged batch whose coordinator dies right after storing it in
        the batchlog, before sending any mutation, is applied in full by the
        batchlog nodes' replay (and hinted to the dead coordinator, a replica
        too); a batch that was applied is removed from the batchlog and not
        replayed."""
        nodes = three.nodes
        sa, sc = three.pinned[A], three.pinned[C]
        create_keyspace(sa, "bl", 3)
        sa.execute("CREATE TABLE bl.t (k int PRIMARY KEY, v text)")
        sa.execute("CREATE TABLE bl.u (k int, c int, v text, PRIMARY KEY (k, c))")
        sel = sa.prepare("SELECT v FROM bl.t WHERE k = ?")
        sel_u = sa.prepare("SELECT v FROM bl.u WHERE k = ? AND c = ?")
        sc.execute(stmt("BEGIN BATCH INSERT INTO bl.t (k, v) VALUES (100, 'ok100'); "
                        "INSERT INTO bl.t (k, v) VALUES (101, 'ok101'); APPLY BATCH",
                        CL.QUORUM))
        assert read_all(sa, sel, [100, 101], CL.QUORUM) == {100: "ok100", 101: "ok101"}

        nodes[C].nodetool("failpoint", "crash-after-batchlog")
        keys = list(range(20))
        body = " ".join("INSERT INTO bl.t (k, v) VALUES (%d, 'b%d');" % (k, k) for k in keys)
        body += " UPDATE bl.u SET v = 'u' WHERE k = 1 AND c = 1;"
        with pytest.raises(Exception):  # the connection dies with its node
            sc.execute(stmt("BEGIN BATCH " + body + " APPLY BATCH", CL.QUORUM))
        crashed = time.monotonic()
        code = nodes[C].proc.wait(timeout=30)
        nodes[C].kill9()  # closes the log; the process is gone already
        assert code == -signal.SIGABRT, "C exited with %s" % code
        assert "failpoint crash-after-batchlog" in nodes[C].log_text()
        early = read_all(sa, sel, keys, CL.QUORUM)
        if time.monotonic() - crashed < 3:  # before any replay may start
            assert set(early.values()) == {None}, "mutations were sent before the crash"

        want = {k: "b%d" % k for k in keys}
        wait_for_rows(sa, sel, want, CL.QUORUM, 40, 1, "batchlog replay")
        assert sa.execute(bound(sel_u, (1, 1), CL.QUORUM)).one().v == "u"
        counts = [int(n) for ip in (A, B) for n in
                  re.findall(r"replayed (\d+) logged batches", nodes[ip].log_text())]
        # Both batchlog nodes (A and B: C's only peers) replay the crashed
        # batch once; the applied one was removed from them.
        assert counts and all(n == 1 for n in counts), counts

        nodes[C].start()
        nodes.wait_status({ip: "UN" for ip in THREE}, timeout=30)
        sc = three.repin(C)
        sel_c = sc.prepare("SELECT v FROM bl.t WHERE k = ?")

        wait_for_rows(sc, sel_c, want, CL.ONE, 30, 0.5, "hints of the replay to C")

    def test_kill9_unavailable_then_hints(self, three):
        nodes = three.nodes
        sa = three.pinned[A]
        create_keyspace(sa, "fail", 3)
        sa.execute("CREATE TABLE fail.t (k int PRIMARY KEY, v text)")
        ins = sa.prepare("INSERT INTO fail.t (k, v) VALUES (?, ?)")
        three.pinned[C].cluster.shutdown()
        nodes[C].kill9()
        nodes.wait_status({C: "DN", A: "UN", B: "UN"}, askers=[A, B], timeout=30)

        keys = list(range(100))
        for k in keys:
            sa.execute(bound(ins, (k, "down%d" % k), CL.QUORUM))
        with pytest.raises(Unavailable) as err:
            sa.execute(bound(ins, (1000, "all"), CL.ALL))
        assert err.value.required_replicas == 3 and err.value.alive_replicas == 2, err.value
        assert err.value.consistency == CL.ALL
        # QUORUM reads through the other live node see the writes.
        sb = three.pinned[B]
        sel_b = sb.prepare("SELECT v FROM fail.t WHERE k = ?")
        assert read_all(sb, sel_b, keys, CL.QUORUM) == {k: "down%d" % k for k in keys}

        # Lightweight transactions need a majority of the replicas: with one
        # of three down they work, and a SERIAL read through the other
        # coordinator sees the latest one.
        cas = sa.prepare("UPDATE fail.t SET v = ? WHERE k = 0 IF v = ?")
        assert sa.execute(lwt_bound(cas, ("lwt1", "down0"))).one()[0] is True
        assert sa.execute(lwt_bound(cas, ("lwt2", "lwt1"))).one()[0] is True
        refused = sa.execute(lwt_bound(cas, ("lwt3", "lwt1"))).one()
        assert refused[0] is False and refused.v == "lwt2"
        assert sb.execute(bound(sel_b, (0,), CL.SERIAL)).one().v == "lwt2"
        # With two down: Unavailable for the serial consistency.
        three.pinned[B].cluster.shutdown()
        nodes[B].kill9()
        nodes.wait_status({B: "DN", C: "DN"}, askers=[A], timeout=30)
        with pytest.raises(Unavailable) as err:
            sa.execute(lwt_bound(cas, ("lwt3", "lwt2")))
        assert err.value.consistency == CL.SERIAL, err.value
        assert err.value.required_replicas == 2 and err.value.alive_replicas == 1, err.value
        with pytest.raises(Unavailable):
            sa.execute(bound(sa.prepare("SELECT v FROM fail.t WHERE k = ?"), (0,), CL.SERIAL))
        # A logged batch needs a live batchlog node besides its coordinator
        # (Cassandra asks TWO of them, even at ONE).
        with pytest.raises(Unavailable) as err:
            sa.execute(stmt("BEGIN BATCH INSERT INTO fail.t (k, v) VALUES (2000, 'x'); "
                            "INSERT INTO fail.t (k, v) VALUES (2001, 'y'); APPLY BATCH", CL.ONE))
        assert err.value.consistency == CL.TWO, err.value
        assert err.value.required_replicas == 2 and err.value.alive_replicas == 0, err.value
        sa.execute(stmt("BEGIN UNLOGGED BATCH INSERT INTO fail.t (k, v) VALUES (2000, 'x'); "
                        "INSERT INTO fail.t (k, v) VALUES (2001, 'y'); APPLY BATCH", CL.ONE))
        nodes[B].start()
        nodes.wait_status({A: "UN", B: "UN"}, askers=[A, B], timeout=30)
        sb = three.repin(B)
        assert sb.execute(bound(sb.prepare("SELECT v FROM fail.t WHERE k = ?"), (0,),
                                CL.SERIAL)).one().v == "lwt2"
        want_zero = "lwt2"

        nodes[C].start()
        nodes.wait_status({ip: "UN" for ip in THREE}, timeout=30)
        sc = three.repin(C)
        sel_c = sc.prepare("SELECT v FROM fail.t WHERE k = ?")
        want = {k: "down%d" % k for k in keys}
        want[0] = want_zero
        wait_for_rows(sc, sel_c, want, CL.ONE, 30, 0.5, "hint replay to the restarted node")
        assert re.search(r"replayed \d+ hints to " + re.escape(C), nodes[A].log_text())

        def no_hints_pending():
            info = nodes[A].nodetool("info").stdout
            m = re.search(r"^Hints pending for\s*:\s*(\d+)", info, re.M)
            return bool(m) and m.group(1) == "0" or info
        wait_until(no_hints_pending, 10, what="A's hints drained")
        # Writes at ALL work again.
        sa.execute(bound(ins, (1000, "all"), CL.ALL))


def test_bootstrap_streams_ranges():
    nodes = Nodes()
    try:
        nodes.start(A, B)
        nodes.wait_status({A: "UN", B: "UN"})
        sa = nodes.connect(A)
        create_keyspace(sa, "boot", 2)
        sa.execute("CREATE TABLE boot.t (k int PRIMARY KEY, v text)")
        ins = sa.prepare("INSERT INTO boot.t (k, v) VALUES (?, ?)")
        keys = list(range(500))
        want = {k: "b%d-%s" % (k, "x" * 64) for k in keys}
        for k in keys:
            sa.execute(bound(ins, (k, want[k]), CL.ALL))

        nodes.start(C)
        nodes.wait_status({ip: "UN" for ip in THREE})
        line = re.search(r"bootstrap streamed .*", nodes[C].log_text())
        assert line, nodes[C].tail()
        print("new node:", line.group(0))
        sc = nodes.connect(C)
        sel_c = sc.prepare("SELECT v FROM boot.t WHERE k = ?")
        ranges = parse_ranges(nodes[C].nodetool("describering", "boot").stdout)
        assert any(C in eps for _, _, eps in ranges), "the new node owns no range"

        # With one old node stopped, the ranges it shared with the new node
        # are only on the new node: every row must still be found.
        for stopped, other in ((B, A), (A, B)):
            assert nodes[stopped].terminate() == 0
            nodes.wait_status({stopped: "DN"}, askers=[other, C], timeout=30)
            got = read_all(sc, sel_c, keys, CL.ONE)
            missing = [k for k in keys if got[k] != want[k]]
            assert not missing, ("with %s stopped, %d rows missing, e.g. %s"
                                 % (stopped, len(missing), missing[:5]))
            scanned = {r.k: r.v for r in sc.execute(stmt("SELECT k, v FROM boot.t", CL.ONE))}
            assert scanned == want, "scan with %s stopped: %d rows" % (stopped, len(scanned))
            nodes[stopped].start()
            nodes.wait_status({ip: "UN" for ip in THREE}, timeout=30)
    finally:
        codes = nodes.close()
    assert all(c == 0 for c in codes.values()), codes


def test_tombstone_thresholds_when_the_coordinator_is_the_replica(tmp_path):
    """A read at ONE through a node that holds the partition is answered
    from its own storage: it counts the tombstones it meets, warns past
    tombstone_warn_threshold and fails past tombstone_failure_threshold,
    as on a node alone."""
    from cassandra import ReadFailure
    config = tmp_path / "tombstones.yaml"
    config.write_text("tombstone_warn_threshold: 10\ntombstone_failure_threshold: 50\n")
    nodes = Nodes()
    try:
        for ip in (A, B):
            nodes.add(ip, extra=["--config", str(config)])
        nodes.start(A, B)
        nodes.wait_status({A: "UN", B: "UN"})
        session = nodes.connect(A)
        session.execute("CREATE KEYSPACE tq WITH replication = "
                        "{'class': 'SimpleStrategy', 'replication_factor': 2}")
        session.execute("CREATE TABLE tq.queue (k int, c int, v text, PRIMARY KEY (k, c))")
        insert = session.prepare("INSERT INTO tq.queue (k, c, v) VALUES (1, ?, 'x')")
        delete = session.prepare("DELETE FROM tq.queue WHERE k = 1 AND c = ?")
        for c in range(60):
            session.execute(bound(insert, (c,), CL.ALL))
        for c in range(20):
            session.execute(bound(delete, (c,), CL.ALL))
        select = session.prepare("SELECT c FROM tq.queue WHERE k = ?")
        rs = session.execute(bound(select, (1,), CL.ONE))
        assert [r.c for r in rs] == list(range(20, 60))
        warnings = rs.response_future.warnings or []
        assert any("40 live rows and 20 tombstone cells" in w for w in warnings), warnings
        for c in range(20, 51):
            session.execute(bound(delete, (c,), CL.ALL))
        with pytest.raises(ReadFailure) as failure:
            session.execute(bound(select, (1,), CL.ONE))
        assert "READ_TOO_MANY_TOMBSTONES" in str(failure.value), failure.value
        assert "Scanned over 50 tombstones during query" in nodes[A].log_text()
    finally:
        nodes.close()

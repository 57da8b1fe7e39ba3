"""cassandra-driver (Python) against the server under test: connect (protocol v4
and v5), metadata, every type through prepared and unprepared statements,
paging, deletes, TTL, USING TIMESTAMP conflicts, errors."""

import datetime
import decimal
import ipaddress
import time
import uuid

import pytest
from cassandra import (AlreadyExists, InvalidRequest, ConsistencyLevel)
from cassandra.protocol import SyntaxException, ConfigurationException
from cassandra.query import SimpleStatement, BatchStatement, dict_factory
from cassandra.util import Date, Time, Duration, SortedSet

from conftest import make_cluster


# ---------------------------------------------------------------------------
# connection and metadata
# ---------------------------------------------------------------------------

def test_connect_negotiates_requested_protocol(protocol_version):
    c = make_cluster(protocol_version)
    try:
        s = c.connect()
        assert c.protocol_version == protocol_version
        row = s.execute("SELECT release_version, cluster_name, partitioner FROM system.local").one()
        assert row.release_version
        assert row.partitioner == "org.apache.cassandra.dht.Murmur3Partitioner"
        assert len(c.metadata.all_hosts()) == 1
        host = c.metadata.all_hosts()[0]
        assert host.is_up
        assert host.host_id is not None
        assert host.datacenter and host.rack
    finally:
        c.shutdown()


def test_warnings_come_from_v4_on(protocol_version, session, keyspace):
    # Protocol v3 frames have no warnings (v4 brought them).
    session.execute("CREATE TABLE w (k int PRIMARY KEY, v int)")
    warnings = session.execute("SELECT count(*) FROM w").response_future.warnings
    if protocol_version == 3:
        assert not warnings
    else:
        assert warnings == ["Aggregation query used without partition key"]


def test_system_local_has_driver_columns(session):
    row = session.execute("SELECT * FROM system.local").one()
    for col in ("host_id", "broadcast_address", "rpc_address", "data_center", "rack",
                "release_version", "tokens", "partitioner", "schema_version",
                "cluster_name", "cql_version", "native_protocol_version"):
        assert getattr(row, col) is not None, col
    assert len(row.tokens) >= 1
    for t in row.tokens:
        int(t)  # tokens are decimal strings of signed 64-bit values


def test_peers_tables_answer(session):
    assert list(session.execute("SELECT * FROM system.peers_v2")) == []
    assert list(session.execute("SELECT * FROM system.peers")) == []


def test_schema_metadata(cluster, session, keyspace):
    session.execute("CREATE TYPE pair (a int, b text)")
    session.execute("""CREATE TABLE meta (p int, q text, c timeuuid, d int, s int static,
                       v frozen<pair>, m map<text, int>, PRIMARY KEY ((p, q), c, d))
                       WITH CLUSTERING ORDER BY (c DESC, d ASC) AND comment = 'drv'""")
    cluster.refresh_schema_metadata()
    ks = cluster.metadata.keyspaces[keyspace]
    assert ks.replication_strategy.replication_factor == 1
    assert "pair" in ks.user_types
    assert ks.user_types["pair"].field_names == ["a", "b"]
    t = ks.tables["meta"]
    assert [c.name for c in t.partition_key] == ["p", "q"]
    assert [c.name for c in t.clustering_key] == ["c", "d"]
    assert t.clustering_key[0].is_reversed and not t.clustering_key[1].is_reversed
    assert t.columns["s"].is_static
    assert t.columns["m"].cql_type == "map<text, int>"
    assert t.columns["v"].cql_type == "frozen<pair>"
    assert t.options["comment"] == "drv"
    cql = t.export_as_string()
    assert "CREATE TABLE %s.meta" % keyspace in cql
    assert "CLUSTERING ORDER BY (c DESC, d ASC)" in cql


def test_token_map_built(cluster, session, keyspace):
    session.execute("CREATE TABLE tm (k text PRIMARY KEY)")
    cluster.refresh_schema_metadata()
    tm = cluster.metadata.token_map
    assert tm is not None
    assert len(tm.ring) >= 1
    # Murmur3 token of 'test' (design notes, section 3)
    from cassandra.metadata import Murmur3Token
    token = cluster.metadata.token_map.token_class.from_key(b"test")
    assert token.value == -6017608668500074083
    replicas = cluster.metadata.get_replicas(keyspace, b"test")
    assert len(replicas) == 1
    row = session.execute("SELECT token(k) FROM tm WHERE k = 'test'").one()
    assert row is None  # no row yet
    session.execute("INSERT INTO tm (k) VALUES ('test')")
    assert session.execute("SELECT token(k) FROM tm WHERE k = 'test'").one()[0] == -6017608668500074083


def test_schema_agreement(cluster, session, keyspace):
    session.execute("CREATE TABLE sa (k int PRIMARY KEY)")
    assert cluster.control_connection.wait_for_schema_agreement()


# ---------------------------------------------------------------------------
# every type round-trips, prepared and unprepared
# ---------------------------------------------------------------------------

# (id, CQL type, Python value, the same value as a CQL literal)
TYPE_VALUES = [
    ("ascii", "ascii", "hello", "'hello'"),
    ("bigint", "bigint", -9223372036854775808, "-9223372036854775808"),
    ("blob", "blob", b"\x00\xffbinary", "0x00ff62696e617279"),
    ("boolean", "boolean", True, "true"),
    ("date", "date", Date(datetime.date(2024, 2, 29)), "'2024-02-29'"),
    ("decimal", "decimal", decimal.Decimal("-123456789.000000001"), "-123456789.000000001"),
    ("double", "double", 2.718281828459045, "2.718281828459045"),
    ("duration", "duration", Duration(1, 2, 3000000004), "1mo2d3s4ns"),
    ("float", "float", 1.5, "1.5"),
    ("inet4", "inet", "192.168.1.1", "'192.168.1.1'"),
    ("inet6", "inet", "2001:db8::1", "'2001:db8::1'"),
    ("int", "int", -2147483648, "-2147483648"),
    ("smallint", "smallint", -32768, "-32768"),
    ("text", "text", "kremówki ☃ 😀 'q'", "'kremówki ☃ 😀 ''q'''"),
    ("time", "time", Time(45296123456789), "'12:34:56.123456789'"),
    ("timestamp", "timestamp", datetime.datetime(2024, 1, 2, 3, 4, 5, 678000), "'2024-01-02 03:04:05.678+0000'"),
    ("timeuuid", "timeuuid", uuid.UUID("50554d6e-29bb-11e5-b345-feff819cdc9f"), "50554d6e-29bb-11e5-b345-feff819cdc9f"),
    ("tinyint", "tinyint", -128, "-128"),
    ("uuid", "uuid", uuid.UUID("550e8400-e29b-41d4-a716-446655440000"), "550e8400-e29b-41d4-a716-446655440000"),
    ("varchar", "varchar", "varchar value", "'varchar value'"),
    ("varint", "varint", -170141183460469231731687303715884105729, "-170141183460469231731687303715884105729"),
    ("vector", "vector<float, 3>", [1.0, -2.5, 3.25], "[1.0, -2.5, 3.25]"),
    ("list", "list<int>", [3, 1, 2], "[3, 1, 2]"),
    ("set", "set<text>", SortedSet(["a", "b"]), "{'b', 'a'}"),
    ("map", "map<text, int>", {"a": 1, "b": 2}, "{'b': 2, 'a': 1}"),
    ("frozen_list", "frozen<list<bigint>>", [1, 2], "[1, 2]"),
    ("tuple", "tuple<int, text, boolean>", (1, "x", False), "(1, 'x', false)"),
    ("nested", "map<text, frozen<list<int>>>", {"k": [1, 2]}, "{'k': [1, 2]}"),
]


def _normalize(v):
    if isinstance(v, SortedSet):
        return sorted(v)
    if hasattr(v, "items"):
        return dict(v.items())
    return v


@pytest.mark.parametrize("name,cql_type,value,literal", TYPE_VALUES, ids=[t[0] for t in TYPE_VALUES])
def test_type_roundtrip(session, keyspace, name, cql_type, value, literal):
    session.execute("CREATE TABLE rt (k int PRIMARY KEY, v %s)" % cql_type)
    ins = session.prepare("INSERT INTO rt (k, v) VALUES (?, ?)")
    session.execute(ins, (1, value))                                   # prepared, bound value
    session.execute("INSERT INTO rt (k, v) VALUES (2, %s)" % literal)  # unprepared, CQL literal
    sel = session.prepare("SELECT v FROM rt WHERE k = ?")
    expected = value
    if cql_type == "inet":
        expected = str(ipaddress.ip_address(value))
    for k in (1, 2):
        got_prepared = session.execute(sel, (k,)).one().v
        got_simple = session.execute("SELECT v FROM rt WHERE k = %d" % k).one().v
        assert _normalize(got_prepared) == _normalize(expected), (k, got_prepared)
        assert _normalize(got_simple) == _normalize(expected), (k, got_simple)
    # null round-trips too
    session.execute(ins, (3, None))
    assert session.execute(sel, (3,)).one().v is None
    # and the value works as a key where the type allows it
    if cql_type not in ("duration", "vector<float, 3>", "list<int>", "set<text>",
                        "map<text, int>", "map<text, frozen<list<int>>>"):
        session.execute("CREATE TABLE rtk (k %s PRIMARY KEY, n int)" % cql_type)
        session.execute(session.prepare("INSERT INTO rtk (k, n) VALUES (?, 1)"), (value,))
        assert session.execute("SELECT n FROM rtk WHERE k = %s" % literal).one().n == 1
        assert session.execute(session.prepare("SELECT n FROM rtk WHERE k = ?"), (value,)).one().n == 1


def test_udt_roundtrip(cluster, session, keyspace):
    session.execute("CREATE TYPE addr (street text, zip int)")
    session.execute("CREATE TABLE u (k int PRIMARY KEY, a frozen<addr>, b addr)")

    class Addr:
        def __init__(self, street=None, zip=None):
            self.street, self.zip = street, zip

    cluster.register_user_type(keyspace, "addr", Addr)
    ins = session.prepare("INSERT INTO u (k, a, b) VALUES (?, ?, ?)")
    session.execute(ins, (1, Addr("main", 12345), Addr("side", None)))
    session.execute("INSERT INTO u (k, a) VALUES (2, {street: 'lit', zip: 1})")
    row = session.execute("SELECT a, b FROM u WHERE k = 1").one()
    assert (row.a.street, row.a.zip) == ("main", 12345)
    assert (row.b.street, row.b.zip) == ("side", None)
    row = session.execute(session.prepare("SELECT a FROM u WHERE k = ?"), (2,)).one()
    assert (row.a.street, row.a.zip) == ("lit", 1)


def test_prepared_metadata_and_routing(cluster, session, keyspace):
    session.execute("CREATE TABLE pm (a int, b text, c int, v int, PRIMARY KEY ((a, b), c))")
    ps = session.prepare("SELECT v FROM pm WHERE a = ? AND b = ? AND c = ?")
    assert [c.name for c in ps.column_metadata] == ["a", "b", "c"]
    assert ps.routing_key_indexes == [0, 1]
    bound = ps.bind((1, "x", 2))
    assert bound.routing_key is not None
    ps2 = session.prepare("INSERT INTO pm (a, b, c, v) VALUES (?, ?, ?, ?)")
    session.execute(ps2, (1, "x", 2, 3))
    assert session.execute(ps, (1, "x", 2)).one().v == 3
    # named markers
    ps3 = session.prepare("SELECT v FROM pm WHERE a = :a AND b = :b AND c = :c")
    assert session.execute(ps3, {"a": 1, "b": "x", "c": 2}).one().v == 3


def test_batches(session, keyspace):
    session.execute("CREATE TABLE b (k int, c int, v text, PRIMARY KEY (k, c))")
    ins = session.prepare("INSERT INTO b (k, c, v) VALUES (?, ?, ?)")
    batch = BatchStatement()
    for i in range(10):
        batch.add(ins, (1, i, "v%d" % i))
    batch.add(SimpleStatement("INSERT INTO b (k, c, v) VALUES (2, 0, 'simple')"))
    session.execute(batch)
    assert session.execute("SELECT count(*) FROM b WHERE k = 1").one()[0] == 10
    assert session.execute("SELECT v FROM b WHERE k = 2 AND c = 0").one().v == "simple"


def test_lwt(session, keyspace):
    session.execute("CREATE TABLE l (k int PRIMARY KEY, v text)")
    r = session.execute("INSERT INTO l (k, v) VALUES (1, 'a') IF NOT EXISTS")
    assert r.was_applied
    r = session.execute("INSERT INTO l (k, v) VALUES (1, 'b') IF NOT EXISTS")
    assert not r.was_applied
    assert r.one().v == "a"
    r = session.execute(session.prepare("UPDATE l SET v = ? WHERE k = ? IF v = ?"), ("c", 1, "a"))
    assert r.was_applied
    assert session.execute("SELECT v FROM l WHERE k = 1").one().v == "c"


# ---------------------------------------------------------------------------
# paging
# ---------------------------------------------------------------------------

def test_paging_10000_rows(session, keyspace):
    session.execute("CREATE TABLE pg (p int, c int, v text, PRIMARY KEY (p, c))")
    ins = session.prepare("INSERT INTO pg (p, c, v) VALUES (?, ?, ?)")
    from cassandra.concurrent import execute_concurrent_with_args
    n = 12000
    args = [(i % 3, i, "value-%d" % i) for i in range(n)]
    results = execute_concurrent_with_args(session, ins, args, concurrency=64)
    assert all(ok for ok, _ in results)

    # whole-table scan, many pages
    stmt = SimpleStatement("SELECT p, c FROM pg", fetch_size=1000)
    rs = session.execute(stmt)
    seen = [tuple(r) for r in rs]
    assert len(seen) == n
    assert len(set(seen)) == n

    # single partition, pages keep clustering order
    ps = session.prepare("SELECT c FROM pg WHERE p = ?")
    ps.fetch_size = 333
    cs = [r.c for r in session.execute(ps, (1,))]
    assert cs == sorted(i for i in range(n) if i % 3 == 1)

    # manual paging with paging_state, reversed order
    stmt = SimpleStatement("SELECT c FROM pg WHERE p = 2 ORDER BY c DESC", fetch_size=777)
    rs = session.execute(stmt)
    collected = list(rs.current_rows)
    pages = 1
    while rs.paging_state is not None:
        rs = session.execute(stmt, paging_state=rs.paging_state)
        collected.extend(rs.current_rows)
        pages += 1
    assert [r.c for r in collected] == sorted((i for i in range(n) if i % 3 == 2), reverse=True)
    assert pages >= n // 3 // 777

    # LIMIT across pages
    rs = session.execute(SimpleStatement("SELECT c FROM pg WHERE p = 0 LIMIT 2500", fetch_size=1000))
    assert len(list(rs)) == 2500
    assert session.execute("SELECT count(*) FROM pg").one()[0] == n


# ---------------------------------------------------------------------------
# deletes
# ---------------------------------------------------------------------------

def test_deletes_of_every_kind(session, keyspace):
    session.execute("CREATE TABLE d (p int, a int, b int, v int, w int, s int static, m map<int, int>, PRIMARY KEY (p, a, b))")
    ins = session.prepare("INSERT INTO d (p, a, b, v, w) VALUES (?, ?, ?, ?, ?)")
    for p in (1, 2):
        for a in range(4):
            for b in range(3):
                session.execute(ins, (p, a, b, a * 10 + b, 0))
    session.execute("UPDATE d SET s = 5, m = {1: 1, 2: 2} WHERE p = 1 AND a = 0 AND b = 0")

    def keys(p):
        return [(r.a, r.b) for r in session.execute("SELECT a, b FROM d WHERE p = %s", (p,))]

    # cell
    session.execute("DELETE v FROM d WHERE p = 1 AND a = 0 AND b = 1")
    row = session.execute("SELECT v, w FROM d WHERE p = 1 AND a = 0 AND b = 1").one()
    assert row.v is None and row.w == 0
    # collection element
    session.execute("DELETE m[1] FROM d WHERE p = 1 AND a = 0 AND b = 0")
    assert dict(session.execute("SELECT m FROM d WHERE p = 1 AND a = 0 AND b = 0").one().m) == {2: 2}
    # static
    session.execute("DELETE s FROM d WHERE p = 1")
    assert session.execute("SELECT s FROM d WHERE p = 1 LIMIT 1").one().s is None
    # row
    session.execute(session.prepare("DELETE FROM d WHERE p = ? AND a = ? AND b = ?"), (1, 0, 2))
    assert (0, 2) not in keys(1)
    # range: prefix, slice, multi-column slice
    session.execute("DELETE FROM d WHERE p = 1 AND a = 1")
    assert not any(a == 1 for a, _ in keys(1))
    session.execute("DELETE FROM d WHERE p = 1 AND a = 2 AND b >= 1")
    assert [(a, b) for a, b in keys(1) if a == 2] == [(2, 0)]
    session.execute("DELETE FROM d WHERE p = 1 AND (a, b) > (2, 0) AND (a, b) <= (3, 1)")
    assert keys(1) == [(0, 0), (0, 1), (2, 0), (3, 2)]
    session.execute("DELETE FROM d WHERE p = 1 AND a >= 3")
    assert keys(1) == [(0, 0), (0, 1), (2, 0)]
    # partition
    session.execute("DELETE FROM d WHERE p = 2")
    assert keys(2) == []
    assert session.execute("SELECT count(*) FROM d").one()[0] == 3
    # writes newer than a delete are visible again
    session.execute(ins, (2, 0, 0, 1, 1))
    assert keys(2) == [(0, 0)]


# ---------------------------------------------------------------------------
# TTL and timestamps
# ---------------------------------------------------------------------------

def test_ttl_expiry(session, keyspace):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v text, w text)")
    session.execute("INSERT INTO t (k, v) VALUES (1, 'short') USING TTL 2")
    session.execute(session.prepare("INSERT INTO t (k, v) VALUES (?, ?) USING TTL ?"), (2, "bound", 2))
    session.execute("INSERT INTO t (k, v, w) VALUES (3, 'stays', 'x')")
    session.execute("UPDATE t USING TTL 2 SET w = 'goes' WHERE k = 3")
    row = session.execute("SELECT v, ttl(v) FROM t WHERE k = 1").one()
    assert row.v == "short" and 0 < row[1] <= 2
    assert session.execute("SELECT v FROM t WHERE k = 2").one().v == "bound"
    assert session.execute("SELECT w FROM t WHERE k = 3").one().w == "goes"
    time.sleep(3.5)
    assert session.execute("SELECT * FROM t WHERE k = 1").one() is None
    assert session.execute("SELECT * FROM t WHERE k = 2").one() is None
    row = session.execute("SELECT v, w FROM t WHERE k = 3").one()
    assert row.v == "stays" and row.w is None
    assert session.execute("SELECT count(*) FROM t").one()[0] == 1


def test_default_ttl(session, keyspace):
    session.execute("CREATE TABLE dt (k int PRIMARY KEY, v int) WITH default_time_to_live = 2")
    session.execute("INSERT INTO dt (k, v) VALUES (1, 1)")
    session.execute("INSERT INTO dt (k, v) VALUES (2, 2) USING TTL 0")
    time.sleep(3.5)
    assert [r.k for r in session.execute("SELECT k FROM dt")] == [2]


def test_using_timestamp_conflicts(session, keyspace):
    session.execute("CREATE TABLE ts (k int PRIMARY KEY, v text, n int)")
    ins = session.prepare("INSERT INTO ts (k, v) VALUES (?, ?) USING TIMESTAMP ?")
    # higher timestamp wins regardless of order
    session.execute(ins, (1, "newer", 2000))
    session.execute(ins, (1, "older", 1000))
    row = session.execute("SELECT v, writetime(v) FROM ts WHERE k = 1").one()
    assert (row.v, row[1]) == ("newer", 2000)
    session.execute(ins, (2, "older", 1000))
    session.execute(ins, (2, "newer", 2000))
    assert session.execute("SELECT v FROM ts WHERE k = 2").one().v == "newer"
    # equal timestamps: the larger value wins, in both arrival orders
    session.execute(ins, (3, "a", 5000))
    session.execute(ins, (3, "b", 5000))
    session.execute(ins, (4, "b", 5000))
    session.execute(ins, (4, "a", 5000))
    assert session.execute("SELECT v FROM ts WHERE k = 3").one().v == "b"
    assert session.execute("SELECT v FROM ts WHERE k = 4").one().v == "b"
    # ints compare as unsigned bytes: -1 (0xffffffff) beats 1
    insn = session.prepare("INSERT INTO ts (k, n) VALUES (?, ?) USING TIMESTAMP 7000")
    session.execute(insn, (5, 1))
    session.execute(insn, (5, -1))
    session.execute(insn, (6, -1))
    session.execute(insn, (6, 1))
    assert session.execute("SELECT n FROM ts WHERE k = 5").one().n == -1
    assert session.execute("SELECT n FROM ts WHERE k = 6").one().n == -1
    # equal timestamps: a delete beats a write
    session.execute(ins, (7, "live", 8000))
    session.execute("DELETE FROM ts USING TIMESTAMP 8000 WHERE k = 7")
    assert session.execute("SELECT * FROM ts WHERE k = 7").one() is None
    # a delete with an older timestamp does not hide a newer write
    session.execute(ins, (8, "kept", 9000))
    session.execute("DELETE FROM ts USING TIMESTAMP 8999 WHERE k = 8")
    assert session.execute("SELECT v FROM ts WHERE k = 8").one().v == "kept"
    # client-side default timestamps from the driver also work
    session.execute("INSERT INTO ts (k, v) VALUES (9, 'client ts')")
    assert session.execute("SELECT writetime(v) FROM ts WHERE k = 9").one()[0] > 1600000000000000


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------

ERROR_CASES = [
    ("SELEC * FROM t", SyntaxException, 0x2000, "no viable alternative at input 'SELEC'"),
    ("SELECT * FROM nosuchtable", InvalidRequest, 0x2200, "table nosuchtable does not exist"),
    ("SELECT * FROM nosuchks.t", InvalidRequest, 0x2200, "keyspace nosuchks does not exist"),
    ("SELECT nope FROM t", InvalidRequest, 0x2200, "Undefined column name nope"),
    ("INSERT INTO t (k, v) VALUES ('x', 1)", InvalidRequest, 0x2200, 'Invalid STRING constant (x) for "k" of type int'),
    ("INSERT INTO t (v) VALUES (1)", InvalidRequest, 0x2200, "Some partition key parts are missing: k"),
    ("SELECT * FROM t WHERE v = 1", InvalidRequest, 0x2200, "ALLOW FILTERING"),
    ("SELECT * FROM t WHERE k = 1 LIMIT 0", InvalidRequest, 0x2200, "LIMIT must be strictly positive"),
    ("CREATE TABLE t (k int PRIMARY KEY)", AlreadyExists, 0x2400, None),
    ("CREATE TABLE bad (k int, v int)", InvalidRequest, 0x2200, "No PRIMARY KEY specifed for table 'bad'"),
    ("ALTER TABLE t ADD v int", InvalidRequest, 0x2200, "Column with name 'v' already exists"),
    ("DROP TABLE nosuchtable", InvalidRequest, 0x2200, "doesn't exist"),
    ("CREATE TABLE bad (k int PRIMARY KEY) WITH nope = 1", SyntaxException, 0x2000, "Unknown property 'nope'"),
    ("ALTER TABLE t WITH default_time_to_live = -1", ConfigurationException, 0x2300, "default_time_to_live must be greater than or equal to 0"),
    ("INSERT INTO t (k, v) VALUES (1, 1) USING TTL -1", InvalidRequest, 0x2200, "A TTL must be greater or equal to 0"),
]


@pytest.mark.parametrize("stmt,exc,code,fragment", ERROR_CASES, ids=[c[0][:40] for c in ERROR_CASES])
def test_errors(session, keyspace, stmt, exc, code, fragment):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
    with pytest.raises(exc) as info:
        session.execute(stmt)
    err = info.value
    if isinstance(err, AlreadyExists):
        assert err.keyspace == keyspace and err.table == "t"
        return
    assert getattr(err, "code", None) == code or ("code=%04x" % code) in str(err)
    assert fragment in str(err)


def test_already_exists_keyspace(session, keyspace):
    with pytest.raises(AlreadyExists) as info:
        session.execute("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}" % keyspace)
    # on the wire the table string of a keyspace AlreadyExists error is empty
    assert info.value.keyspace == keyspace and info.value.table == ""


def test_prepare_errors(session, keyspace):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
    with pytest.raises(InvalidRequest) as info:
        session.prepare("SELECT nope FROM t WHERE k = ?")
    assert "Undefined column name nope" in str(info.value)
    with pytest.raises(SyntaxException):
        session.prepare("SELECT FROM t")
    # client-side encoding error for a wrongly typed bound value
    ps = session.prepare("INSERT INTO t (k, v) VALUES (?, ?)")
    with pytest.raises(TypeError):
        session.execute(ps, (1, "not an int"))


def test_tracing(session, keyspace):
    session.execute("CREATE TABLE traced (k int PRIMARY KEY, v int)")
    rs = session.execute("INSERT INTO traced (k, v) VALUES (1, 2)", trace=True)
    trace = rs.get_query_trace(max_wait_sec=10)
    assert trace.trace_id == rs.response_future.get_query_trace_ids()[0]
    assert trace.duration is not None and trace.duration.total_seconds() >= 0
    assert trace.coordinator
    assert trace.parameters["query"] == "INSERT INTO traced (k, v) VALUES (1, 2)"
    assert len(trace.events) >= 1
    ps = session.prepare("SELECT v FROM traced WHERE k = ?")
    rs = session.execute(ps, (1,), trace=True)
    assert rs.one().v == 2
    assert rs.get_query_trace(max_wait_sec=10).events

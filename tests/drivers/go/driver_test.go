// Driver tests: the Apache Cassandra GoCQL driver (v2) against a running
// Rocksandra server at $ROCKSANDRA_HOST:$ROCKSANDRA_PORT.
package drivers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/inf.v0"
)

// protocols this driver speaks and the server must accept.
var protocols = []int{4, 5}

func serverAddr(t *testing.T) (string, int) {
	t.Helper()
	host := os.Getenv("ROCKSANDRA_HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	port := 9042
	if p := os.Getenv("ROCKSANDRA_PORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("ROCKSANDRA_PORT=%q: %v", p, err)
		}
		port = n
	}
	return host, port
}

// connect opens a session pinned to the given protocol version with the
// token-aware host policy (falling back to round robin).
func connect(t *testing.T, proto int) *gocql.Session {
	t.Helper()
	return connectWith(t, proto, gocql.Full)
}

func connectWith(t *testing.T, proto int, cache gocql.MetadataCacheMode) *gocql.Session {
	t.Helper()
	host, port := serverAddr(t)
	cluster := gocql.NewCluster(host)
	cluster.Port = port
	cluster.ProtoVersion = proto
	cluster.Timeout = 10 * time.Second
	cluster.ConnectTimeout = 10 * time.Second
	cluster.Consistency = gocql.One
	cluster.Metadata.CacheMode = cache
	obs := &versionObserver{}
	cluster.FrameHeaderObserver = obs
	cluster.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	s, err := cluster.CreateSession()
	if err != nil {
		t.Fatalf("connect %s:%d protocol v%d: %v", host, port, proto, err)
	}
	t.Cleanup(s.Close)
	// Every response frame must carry the protocol version asked for (the
	// driver would have fallen back or failed otherwise).
	if got := obs.versions(); len(got) != 1 || got[0] != proto {
		t.Fatalf("protocol v%d session: response frame versions %v", proto, got)
	}
	return s
}

// versionObserver records the protocol versions of received frame headers.
type versionObserver struct {
	mu   sync.Mutex
	seen map[int]bool
}

func (o *versionObserver) ObserveFrameHeader(_ context.Context, h gocql.ObservedFrameHeader) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil {
		o.seen = map[int]bool{}
	}
	o.seen[int(h.Version)&0x7f] = true
}

func (o *versionObserver) versions() []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []int
	for v := range o.seen {
		out = append(out, v)
	}
	sort.Ints(out)
	return out
}

var ksCounter atomic.Int64

// newKeyspace creates a uniquely named SimpleStrategy keyspace and drops it
// when the test ends.
func newKeyspace(t *testing.T, s *gocql.Session) string {
	t.Helper()
	ks := fmt.Sprintf("go_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000_000, ksCounter.Add(1))
	mustExec(t, s, fmt.Sprintf("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", ks))
	t.Cleanup(func() {
		if err := s.Query("DROP KEYSPACE IF EXISTS " + ks).Exec(); err != nil {
			t.Errorf("DROP KEYSPACE %s: %v", ks, err)
		}
	})
	return ks
}

func mustExec(t *testing.T, s *gocql.Session, stmt string, values ...interface{}) {
	t.Helper()
	if err := s.Query(stmt, values...).Exec(); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

func forEachProtocol(t *testing.T, f func(t *testing.T, s *gocql.Session)) {
	for _, v := range protocols {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) { f(t, connect(t, v)) })
	}
}

// protoOf recovers the protocol version from a forEachProtocol subtest name.
func protoOf(t *testing.T) int {
	name := t.Name()
	v, err := strconv.Atoi(name[strings.LastIndex(name, "/v")+2:])
	if err != nil {
		t.Fatalf("no protocol in test name %q", name)
	}
	return v
}

// ---------------------------------------------------------------------------
// 1. Connection, token awareness and schema metadata

func TestConnectAndMetadata(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *gocql.Session) {
		// system.local is what the control connection reads; check it answers.
		var release, partitioner string
		var tokens []string
		if err := s.Query("SELECT release_version, partitioner, tokens FROM system.local WHERE key = 'local'").
			Scan(&release, &partitioner, &tokens); err != nil {
			t.Fatalf("system.local: %v", err)
		}
		if release == "" || !strings.HasSuffix(partitioner, "Murmur3Partitioner") || len(tokens) == 0 {
			t.Fatalf("system.local: release=%q partitioner=%q tokens=%d", release, partitioner, len(tokens))
		}

		ks := newKeyspace(t, s)
		mustExec(t, s, "CREATE TYPE "+ks+".address (street text, zip int, tags frozen<set<text>>)")
		mustExec(t, s, `CREATE TABLE `+ks+`.events (
			tenant text, day int, ts timestamp, seq int,
			owner text STATIC, body text, addr frozen<address>, scores map<text, int>,
			PRIMARY KEY ((tenant, day), ts, seq)
		) WITH CLUSTERING ORDER BY (ts DESC, seq ASC)`)

		// Full cache mode (the default): the driver refreshes its cache when
		// the server pushes SCHEMA_CHANGE events on the control connection,
		// debounced by 1s, so wait for the new table and type to show up.
		var km *gocql.KeyspaceMetadata
		deadline := time.Now().Add(15 * time.Second)
		for {
			var err error
			km, err = s.KeyspaceMetadata(ks)
			if err == nil && km.Tables["events"] != nil && km.UserTypes["address"] != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("KeyspaceMetadata(%s) never showed table events and type address (no SCHEMA_CHANGE event pushed?): meta=%v err=%v", ks, km != nil, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		checkEventsMetadata(t, ks, km)

		// Disabled cache mode: KeyspaceMetadata reads system_schema directly.
		direct := connectWith(t, protoOf(t), gocql.Disabled)
		km2, err := direct.KeyspaceMetadata(ks)
		if err != nil {
			t.Fatalf("KeyspaceMetadata(%s) without cache: %v", ks, err)
		}
		checkEventsMetadata(t, ks, km2)

		// Token-aware routing: the host the driver picked carries the ring's
		// tokens and partitioner, and a routed prepared statement works.
		mustExec(t, s, "INSERT INTO "+ks+".events (tenant, day, ts, seq, body) VALUES (?, ?, ?, ?, ?)",
			"acme", 1, time.UnixMilli(1_700_000_000_000), 1, "hello")
		iter := s.Query("SELECT body FROM "+ks+".events WHERE tenant = ? AND day = ?", "acme", 1).Iter()
		var body string
		if !iter.Scan(&body) || body != "hello" {
			t.Errorf("routed select: body = %q", body)
		}
		host := iter.Host()
		if err := iter.Close(); err != nil {
			t.Fatalf("routed select: %v", err)
		}
		if host == nil {
			t.Fatalf("iter.Host() is nil")
		}
		if len(host.Tokens()) == 0 || !strings.HasSuffix(host.Partitioner(), "Murmur3Partitioner") {
			t.Errorf("host %s: tokens=%d partitioner=%q", host.ConnectAddressAndPort(), len(host.Tokens()), host.Partitioner())
		}
	})
}

func checkEventsMetadata(t *testing.T, ks string, km *gocql.KeyspaceMetadata) {
	t.Helper()
	if km.Name != ks {
		t.Errorf("keyspace name = %q, want %q", km.Name, ks)
	}
	if !strings.HasSuffix(km.StrategyClass, "SimpleStrategy") {
		t.Errorf("strategy class = %q", km.StrategyClass)
	}
	if rf := fmt.Sprint(km.StrategyOptions["replication_factor"]); rf != "1" {
		t.Errorf("replication_factor = %q (options %v)", rf, km.StrategyOptions)
	}
	if !km.DurableWrites {
		t.Errorf("durable_writes = false")
	}

	tm := km.Tables["events"]
	if tm == nil {
		t.Fatalf("table events missing from metadata; have %v", mapKeys(km.Tables))
	}
	if got := colNames(tm.PartitionKey); !reflect.DeepEqual(got, []string{"tenant", "day"}) {
		t.Errorf("partition key = %v", got)
	}
	if got := colNames(tm.ClusteringColumns); !reflect.DeepEqual(got, []string{"ts", "seq"}) {
		t.Errorf("clustering columns = %v", got)
	} else {
		if tm.ClusteringColumns[0].Order != gocql.DESC || tm.ClusteringColumns[1].Order != gocql.ASC {
			t.Errorf("clustering orders = %v, %v; want DESC, ASC",
				tm.ClusteringColumns[0].ClusteringOrder, tm.ClusteringColumns[1].ClusteringOrder)
		}
	}
	wantCols := map[string]struct {
		kind gocql.ColumnKind
		typ  gocql.Type
	}{
		"tenant": {gocql.ColumnPartitionKey, gocql.TypeVarchar},
		"day":    {gocql.ColumnPartitionKey, gocql.TypeInt},
		"ts":     {gocql.ColumnClusteringKey, gocql.TypeTimestamp},
		"seq":    {gocql.ColumnClusteringKey, gocql.TypeInt},
		"owner":  {gocql.ColumnStatic, gocql.TypeVarchar},
		"body":   {gocql.ColumnRegular, gocql.TypeVarchar},
		"addr":   {gocql.ColumnRegular, gocql.TypeUDT},
		"scores": {gocql.ColumnRegular, gocql.TypeMap},
	}
	if len(tm.Columns) != len(wantCols) {
		t.Errorf("columns = %v, want %d", mapKeys(tm.Columns), len(wantCols))
	}
	for name, want := range wantCols {
		c := tm.Columns[name]
		if c == nil {
			t.Errorf("column %s missing", name)
			continue
		}
		if c.Kind != want.kind {
			t.Errorf("column %s kind = %v, want %v", name, c.Kind, want.kind)
		}
		switch {
		case c.Type == nil:
			t.Errorf("column %s has no type", name)
		case want.typ == gocql.TypeVarchar:
			if !isText(c.Type) {
				t.Errorf("column %s type = %#v, want text", name, c.Type)
			}
		case want.typ == gocql.TypeUDT:
			// gocql does not resolve UDT names in schema column types; it
			// keeps the CQL type text as a custom type.
			if c.Type.Type() != gocql.TypeUDT && fmt.Sprint(c.Type) != "frozen<address>" {
				t.Errorf("column %s type = %#v, want frozen<address>", name, c.Type)
			}
		case c.Type.Type() != want.typ:
			t.Errorf("column %s type = %#v, want %v", name, c.Type, want.typ)
		}
	}
	if mt, ok := tm.Columns["scores"].Type.(gocql.CollectionType); !ok ||
		!isText(mt.Key) || mt.Elem.Type() != gocql.TypeInt {
		t.Errorf("scores type = %#v, want map<text,int>", tm.Columns["scores"].Type)
	}

	ut := km.UserTypes["address"]
	if ut == nil {
		t.Fatalf("UDT address missing; have %v", mapKeys(km.UserTypes))
	}
	if !reflect.DeepEqual(ut.FieldNames, []string{"street", "zip", "tags"}) {
		t.Errorf("UDT field names = %v", ut.FieldNames)
	}
	if len(ut.FieldTypes) != 3 {
		t.Fatalf("UDT field types = %v", ut.FieldTypes)
	}
	if !isText(ut.FieldTypes[0]) || ut.FieldTypes[1].Type() != gocql.TypeInt ||
		ut.FieldTypes[2].Type() != gocql.TypeSet {
		t.Errorf("UDT field types = %v, %v, %v", ut.FieldTypes[0].Type(), ut.FieldTypes[1].Type(), ut.FieldTypes[2].Type())
	}

}

func isText(ti gocql.TypeInfo) bool {
	return ti != nil && (ti.Type() == gocql.TypeText || ti.Type() == gocql.TypeVarchar)
}

func colNames(cs []*gocql.ColumnMetadata) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ---------------------------------------------------------------------------
// 2. Type round trips (prepared statements)

type pair struct {
	A int
	B string
}

type address struct {
	Street string   `cql:"street"`
	Zip    int      `cql:"zip"`
	Tags   []string `cql:"tags"`
}

func TestScalarRoundTrip(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *gocql.Session) {
		ks := newKeyspace(t, s)
		mustExec(t, s, `CREATE TABLE `+ks+`.scalars (
			id int PRIMARY KEY, i int, bi bigint, t text, b blob, bo boolean, d double, f float,
			u uuid, tu timeuuid, ts timestamp, dt date, tm time, ip inet, vi varint, de decimal, du duration)`)

		type row struct {
			i  int32
			bi int64
			t  string
			b  []byte
			bo bool
			d  float64
			f  float32
			u  gocql.UUID
			tu gocql.UUID
			ts time.Time
			dt time.Time
			tm time.Duration
			ip net.IP
			vi *big.Int
			de *inf.Dec
			du gocql.Duration
		}
		bigVi, _ := new(big.Int).SetString("-123456789012345678901234567890", 10)
		cases := []row{
			{
				i: 42, bi: 9_007_199_254_740_993, t: "héllo, wörld ✓", b: []byte{0, 1, 2, 0xfe, 0xff}, bo: true,
				d: math.Pi, f: 1.5, u: mustUUID(t, "550e8400-e29b-41d4-a716-446655440000"), tu: gocql.TimeUUID(),
				ts: time.UnixMilli(1_700_000_123_456).UTC(), dt: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC),
				tm: 13*time.Hour + 45*time.Minute + 30*time.Second + 123456789, ip: net.ParseIP("192.168.1.20").To4(),
				vi: bigVi, de: inf.NewDec(-31415926535, 10), du: gocql.Duration{Months: 14, Days: 3, Nanoseconds: 3_600_000_000_123},
			},
			{
				i: math.MinInt32, bi: math.MinInt64, t: "", b: []byte{}, bo: false,
				d: -0.25, f: float32(math.MaxFloat32), u: mustUUID(t, "00000000-0000-0000-0000-000000000000"), tu: gocql.TimeUUID(),
				ts: time.UnixMilli(-86_400_000).UTC(), dt: time.Date(1969, 7, 20, 0, 0, 0, 0, time.UTC),
				tm: 0, ip: net.ParseIP("2001:db8::8a2e:370:7334"),
				vi: big.NewInt(0), de: inf.NewDec(1, -3), du: gocql.Duration{Months: -1, Days: -2, Nanoseconds: -3},
			},
		}
		ins := "INSERT INTO " + ks + ".scalars (id, i, bi, t, b, bo, d, f, u, tu, ts, dt, tm, ip, vi, de, du) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		for id, c := range cases {
			mustExec(t, s, ins, id, c.i, c.bi, c.t, c.b, c.bo, c.d, c.f, c.u, c.tu, c.ts, c.dt, c.tm, c.ip, c.vi, c.de, c.du)
		}
		for id, want := range cases {
			var got row
			err := s.Query("SELECT i, bi, t, b, bo, d, f, u, tu, ts, dt, tm, ip, vi, de, du FROM "+ks+".scalars WHERE id = ?", id).
				Scan(&got.i, &got.bi, &got.t, &got.b, &got.bo, &got.d, &got.f, &got.u, &got.tu, &got.ts, &got.dt, &got.tm, &got.ip, &got.vi, &got.de, &got.du)
			if err != nil {
				t.Fatalf("select id=%d: %v", id, err)
			}
			check := func(name string, ok bool, g, w interface{}) {
				t.Helper()
				if !ok {
					t.Errorf("id=%d %s: got %v, want %v", id, name, g, w)
				}
			}
			check("int", got.i == want.i, got.i, want.i)
			check("bigint", got.bi == want.bi, got.bi, want.bi)
			check("text", got.t == want.t, got.t, want.t)
			check("blob", bytes.Equal(got.b, want.b), got.b, want.b)
			check("boolean", got.bo == want.bo, got.bo, want.bo)
			check("double", got.d == want.d, got.d, want.d)
			check("float", got.f == want.f, got.f, want.f)
			check("uuid", got.u == want.u, got.u, want.u)
			check("timeuuid", got.tu == want.tu, got.tu, want.tu)
			check("timestamp", got.ts.Equal(want.ts), got.ts, want.ts)
			check("date", got.dt.Equal(want.dt), got.dt, want.dt)
			check("time", got.tm == want.tm, got.tm, want.tm)
			check("inet", got.ip.Equal(want.ip), got.ip, want.ip)
			check("varint", got.vi != nil && got.vi.Cmp(want.vi) == 0, got.vi, want.vi)
			check("decimal", got.de != nil && got.de.Cmp(want.de) == 0 && got.de.Scale() == want.de.Scale(), got.de, want.de)
			check("duration", got.du == want.du, got.du, want.du)
		}

		// timeuuid carries its time; the server's toTimestamp must agree.
		var tu gocql.UUID
		var tuTs time.Time
		if err := s.Query("SELECT tu, toTimestamp(tu) FROM "+ks+".scalars WHERE id = 0").Scan(&tu, &tuTs); err != nil {
			t.Fatalf("toTimestamp(timeuuid): %v", err)
		}
		if d := tuTs.Sub(tu.Time()); d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("toTimestamp(tu) = %v, tu.Time() = %v", tuTs, tu.Time())
		}

		// Nulls: a row with only the key reads back as nulls.
		mustExec(t, s, "INSERT INTO "+ks+".scalars (id) VALUES (?)", 99)
		var pi *int32
		var pt *string
		var pb []byte
		var pvi *big.Int
		if err := s.Query("SELECT i, t, b, vi FROM "+ks+".scalars WHERE id = ?", 99).Scan(&pi, &pt, &pb, &pvi); err != nil {
			t.Fatalf("select nulls: %v", err)
		}
		if pi != nil || pt != nil || pb != nil || pvi != nil {
			t.Errorf("nulls: got i=%v t=%v b=%v vi=%v", pi, pt, pb, pvi)
		}

		// MapScan decodes by the result metadata types.
		m := map[string]interface{}{}
		if err := s.Query("SELECT i, bi, t, ip, du FROM " + ks + ".scalars WHERE id = 0").MapScan(m); err != nil {
			t.Fatalf("MapScan: %v", err)
		}
		if m["i"] != 42 || m["bi"] != int64(9_007_199_254_740_993) || m["t"] != cases[0].t ||
			!m["ip"].(net.IP).Equal(cases[0].ip) || m["du"] != cases[0].du {
			t.Errorf("MapScan = %#v", m)
		}
	})
}

func TestCollectionsTupleUDTStatic(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *gocql.Session) {
		ks := newKeyspace(t, s)
		mustExec(t, s, "CREATE TYPE "+ks+".address (street text, zip int, tags frozen<set<text>>)")
		mustExec(t, s, `CREATE TABLE `+ks+`.things (
			pk int, ck int, st text STATIC,
			l list<int>, s set<text>, m map<text, int>, tp tuple<int, text>,
			lt list<frozen<tuple<int, text>>>, fs frozen<set<text>>, a frozen<address>,
			PRIMARY KEY (pk, ck))`)

		wantL := []int{3, 1, 2, 1}
		wantS := []string{"b", "a", "c", "a"}
		wantM := map[string]int{"one": 1, "two": 2, "neg": -7}
		wantTp := pair{A: 7, B: "seven"}
		wantA := address{Street: "1 Main St", Zip: 12345, Tags: []string{"home", "billing"}}
		wantLt := []pair{{1, "x"}, {2, "y"}}
		// gocql flattens a top-level tuple column into one bind value and one
		// scan destination per element, so the tuple is written as (?, ?);
		// tuples nested in a collection bind as a Go value.
		mustExec(t, s, "INSERT INTO "+ks+".things (pk, ck, st, l, s, m, tp, lt, a) VALUES (?, ?, ?, ?, ?, ?, (?, ?), ?, ?)",
			1, 1, "static-1", wantL, wantS, wantM, wantTp.A, wantTp.B, wantLt, wantA)

		var (
			l  []int
			st string
			ss []string
			m  map[string]int
			tp pair
			lt []pair
			a  address
		)
		if err := s.Query("SELECT st, l, s, m, tp, lt, a FROM "+ks+".things WHERE pk = ? AND ck = ?", 1, 1).
			Scan(&st, &l, &ss, &m, &tp.A, &tp.B, &lt, &a); err != nil {
			t.Fatalf("select: %v", err)
		}
		if st != "static-1" {
			t.Errorf("static = %q", st)
		}
		if !reflect.DeepEqual(l, wantL) {
			t.Errorf("list = %v, want %v", l, wantL)
		}
		if !reflect.DeepEqual(ss, []string{"a", "b", "c"}) {
			t.Errorf("set = %v, want sorted unique [a b c]", ss)
		}
		if !reflect.DeepEqual(m, wantM) {
			t.Errorf("map = %v, want %v", m, wantM)
		}
		if tp != wantTp {
			t.Errorf("tuple = %+v, want %+v", tp, wantTp)
		}
		if !reflect.DeepEqual(lt, wantLt) {
			t.Errorf("list<tuple> = %+v, want %+v", lt, wantLt)
		}

		// A frozen set bound out of order is stored sorted (CASSANDRA-17623).
		mustExec(t, s, "UPDATE "+ks+".things SET fs = ? WHERE pk = ? AND ck = ?", []string{"z", "m", "a"}, 1, 1)
		var fs []string
		if err := s.Query("SELECT fs FROM " + ks + ".things WHERE pk = 1 AND ck = 1").Scan(&fs); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fs, []string{"a", "m", "z"}) {
			t.Errorf("frozen<set<text>> = %v, want [a m z]", fs)
		}
		sort.Strings(a.Tags)
		if a.Street != wantA.Street || a.Zip != wantA.Zip || !reflect.DeepEqual(a.Tags, []string{"billing", "home"}) {
			t.Errorf("udt = %+v, want %+v", a, wantA)
		}

		// Nested tuples as []interface{}, UDT via map[string]interface{}, and
		// a null tuple element.
		mustExec(t, s, "INSERT INTO "+ks+".things (pk, ck, tp, lt, a) VALUES (?, ?, (?, ?), ?, ?)", 1, 2,
			-1, nil, [][]interface{}{{-1, "minus"}}, map[string]interface{}{"street": "Elm", "zip": 9})
		var lti [][]interface{}
		am := map[string]interface{}{}
		var st2 string
		var tpA *int
		var tpB *string
		if err := s.Query("SELECT st, tp, lt, a FROM "+ks+".things WHERE pk = 1 AND ck = 2").Scan(&st2, &tpA, &tpB, &lti, &am); err != nil {
			t.Fatalf("select ck=2: %v", err)
		}
		if st2 != "static-1" {
			t.Errorf("static seen from second row = %q, want static-1", st2)
		}
		if tpA == nil || *tpA != -1 || tpB != nil {
			t.Errorf("tuple with null element = (%v, %v), want (-1, null)", tpA, tpB)
		}
		if len(lti) != 1 || len(lti[0]) != 2 || lti[0][0] != -1 || lti[0][1] != "minus" {
			t.Errorf("list<tuple> as [][]interface{} = %#v", lti)
		}
		if am["street"] != "Elm" || am["zip"] != 9 {
			t.Errorf("udt as map = %#v", am)
		}
		if tags, ok := am["tags"].([]string); !ok || len(tags) != 0 {
			t.Errorf("udt unset field tags = %#v, want empty []string", am["tags"])
		}

		// Static column: one value per partition, shared by all rows.
		mustExec(t, s, "UPDATE "+ks+".things SET st = ? WHERE pk = ?", "static-2", 1)
		iter := s.Query("SELECT ck, st FROM "+ks+".things WHERE pk = ?", 1).Iter()
		var ck int
		n := 0
		for iter.Scan(&ck, &st) {
			n++
			if st != "static-2" {
				t.Errorf("ck=%d static = %q, want static-2", ck, st)
			}
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Errorf("rows in partition = %d, want 2", n)
		}
		// A partition holding only the static value.
		mustExec(t, s, "INSERT INTO "+ks+".things (pk, st) VALUES (?, ?)", 2, "lonely")
		var ckp *int
		if err := s.Query("SELECT ck, st FROM "+ks+".things WHERE pk = ?", 2).Scan(&ckp, &st); err != nil {
			t.Fatalf("static-only partition: %v", err)
		}
		if ckp != nil || st != "lonely" {
			t.Errorf("static-only partition: ck=%v st=%q", ckp, st)
		}

		// Collection updates through bound values.
		mustExec(t, s, "UPDATE "+ks+".things SET l = l + ?, s = s - ?, m[?] = ? WHERE pk = ? AND ck = ?",
			[]int{9}, []string{"b"}, "two", 22, 1, 1)
		if err := s.Query("SELECT l, s, m FROM "+ks+".things WHERE pk = 1 AND ck = 1").Scan(&l, &ss, &m); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(l, []int{3, 1, 2, 1, 9}) || !reflect.DeepEqual(ss, []string{"a", "c"}) || m["two"] != 22 || len(m) != 3 {
			t.Errorf("after collection update: l=%v s=%v m=%v", l, ss, m)
		}
	})
}

func mustUUID(t *testing.T, s string) gocql.UUID {
	t.Helper()
	u, err := gocql.ParseUUID(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// ---------------------------------------------------------------------------
// 3. Paging

func TestPaging(t *testing.T) {
	const partitions, perPartition, pageSize = 30, 100, 100
	const total = partitions * perPartition
	s := connect(t, 4)
	ks := newKeyspace(t, s)
	mustExec(t, s, "CREATE TABLE "+ks+".rows (p int, c int, v text, PRIMARY KEY (p, c))")
	for p := 0; p < partitions; p++ {
		b := s.Batch(gocql.UnloggedBatch)
		for c := 0; c < perPartition; c++ {
			b.Query("INSERT INTO "+ks+".rows (p, c, v) VALUES (?, ?, ?)", p, c, fmt.Sprintf("v%d-%d", p, c))
		}
		if err := b.Exec(); err != nil {
			t.Fatalf("batch insert p=%d: %v", p, err)
		}
	}

	var count int
	if err := s.Query("SELECT count(*) FROM " + ks + ".rows").Scan(&count); err != nil {
		t.Fatalf("count(*): %v", err)
	}
	if count != total {
		t.Fatalf("count(*) = %d, want %d", count, total)
	}

	t.Run("Iter", func(t *testing.T) {
		seen := make(map[[2]int]bool, total)
		iter := s.Query("SELECT p, c, v FROM " + ks + ".rows").PageSize(pageSize).Iter()
		var p, c int
		var v string
		n := 0
		for iter.Scan(&p, &c, &v) {
			n++
			k := [2]int{p, c}
			if seen[k] {
				t.Fatalf("row (%d,%d) returned twice", p, c)
			}
			seen[k] = true
			if v != fmt.Sprintf("v%d-%d", p, c) {
				t.Fatalf("row (%d,%d) v = %q", p, c, v)
			}
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		if n != total {
			t.Fatalf("iterated %d rows, want %d", n, total)
		}
	})

	t.Run("ManualPageState", func(t *testing.T) {
		var state []byte
		pages, n := 0, 0
		seen := make(map[[2]int]bool, total)
		for {
			iter := s.Query("SELECT p, c FROM " + ks + ".rows").PageSize(pageSize).PageState(state).Iter()
			rows := iter.NumRows()
			next := iter.PageState()
			var p, c int
			got := 0
			for iter.Scan(&p, &c) {
				got++
				k := [2]int{p, c}
				if seen[k] {
					t.Fatalf("page %d: row (%d,%d) returned twice", pages, p, c)
				}
				seen[k] = true
			}
			if err := iter.Close(); err != nil {
				t.Fatalf("page %d: %v", pages, err)
			}
			if got != rows {
				t.Fatalf("page %d: scanned %d rows, NumRows %d", pages, got, rows)
			}
			if rows > pageSize {
				t.Fatalf("page %d has %d rows > page size %d", pages, rows, pageSize)
			}
			pages++
			n += rows
			if len(next) == 0 {
				break
			}
			if pages > total {
				t.Fatalf("paging does not terminate")
			}
			state = next
		}
		if n != total {
			t.Fatalf("manual paging read %d rows, want %d", n, total)
		}
		if pages < total/pageSize {
			t.Fatalf("manual paging took %d pages, want at least %d", pages, total/pageSize)
		}
	})

	t.Run("SinglePartitionOrder", func(t *testing.T) {
		iter := s.Query("SELECT c FROM "+ks+".rows WHERE p = ? ORDER BY c DESC", 7).PageSize(7).Iter()
		var c int
		want := perPartition - 1
		for iter.Scan(&c) {
			if c != want {
				t.Fatalf("clustering order: got c=%d, want %d", c, want)
			}
			want--
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		if want != -1 {
			t.Fatalf("read %d rows of partition 7, want %d", perPartition-1-want, perPartition)
		}
	})
}

// ---------------------------------------------------------------------------
// 4. Errors

func TestErrors(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *gocql.Session) {
		ks := newKeyspace(t, s)
		mustExec(t, s, "CREATE TABLE "+ks+".t (k int PRIMARY KEY, v text)")

		err := s.Query("SELEC * FROM " + ks + ".t").Exec()
		var syn *gocql.RequestErrSyntax
		if !errors.As(err, &syn) {
			t.Errorf("syntax error: got %T %v, want *RequestErrSyntax", err, err)
		} else if syn.Code() != gocql.ErrCodeSyntax || syn.Message() == "" {
			t.Errorf("syntax error: code=%#x message=%q", syn.Code(), syn.Message())
		}

		err = s.Query(fmt.Sprintf("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", ks)).Exec()
		var ae *gocql.RequestErrAlreadyExists
		if !errors.As(err, &ae) {
			t.Errorf("CREATE KEYSPACE twice: got %T %v, want *RequestErrAlreadyExists", err, err)
		} else if ae.Keyspace != ks || ae.Table != "" || ae.Code() != gocql.ErrCodeAlreadyExists {
			t.Errorf("CREATE KEYSPACE twice: keyspace=%q table=%q code=%#x", ae.Keyspace, ae.Table, ae.Code())
		}
		if err := s.Query(fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", ks)).Exec(); err != nil {
			t.Errorf("CREATE KEYSPACE IF NOT EXISTS on existing: %v", err)
		}

		err = s.Query("CREATE TABLE " + ks + ".t (k int PRIMARY KEY)").Exec()
		ae = nil
		if !errors.As(err, &ae) {
			t.Errorf("CREATE TABLE twice: got %T %v, want *RequestErrAlreadyExists", err, err)
		} else if ae.Keyspace != ks || ae.Table != "t" {
			t.Errorf("CREATE TABLE twice: keyspace=%q table=%q", ae.Keyspace, ae.Table)
		}

		invalid := []string{
			"SELECT * FROM " + ks + ".no_such_table",
			"SELECT nope FROM " + ks + ".t",
			"INSERT INTO " + ks + ".t (v) VALUES ('x')",
			"INSERT INTO " + ks + ".t (k, v) VALUES ('not an int', 'x')",
			"SELECT * FROM " + ks + ".t WHERE v = 'x'",
		}
		for _, stmt := range invalid {
			err := s.Query(stmt).Exec()
			var inv *gocql.RequestErrInvalid
			if !errors.As(err, &inv) {
				t.Errorf("%s: got %T %v, want *RequestErrInvalid", stmt, err, err)
			} else if inv.Code() != gocql.ErrCodeInvalid || inv.Message() == "" {
				t.Errorf("%s: code=%#x message=%q", stmt, inv.Code(), inv.Message())
			}
		}

		// Unknown keyspace.
		err = s.Query("SELECT * FROM no_such_ks_xyz.t").Exec()
		var inv *gocql.RequestErrInvalid
		if !errors.As(err, &inv) {
			t.Errorf("unknown keyspace: got %T %v, want *RequestErrInvalid", err, err)
		}

		// Wrong bound value type is refused by the driver before sending.
		if err := s.Query("INSERT INTO "+ks+".t (k, v) VALUES (?, ?)", "x", "y").Exec(); err == nil {
			t.Errorf("binding text to int: no error")
		}

		// The session still works after errors.
		mustExec(t, s, "INSERT INTO "+ks+".t (k, v) VALUES (?, ?)", 1, "ok")
	})
}

// ---------------------------------------------------------------------------
// 5. Batches, TTL and lightweight transactions

func TestBatchTTLAndLWT(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *gocql.Session) {
		ks := newKeyspace(t, s)
		mustExec(t, s, "CREATE TABLE "+ks+".users (id int PRIMARY KEY, name text, email text)")
		mustExec(t, s, "CREATE TABLE "+ks+".by_email (email text PRIMARY KEY, id int)")

		t.Run("LoggedBatch", func(t *testing.T) {
			b := s.Batch(gocql.LoggedBatch)
			for i := 1; i <= 3; i++ {
				email := fmt.Sprintf("u%d@example.com", i)
				b.Query("INSERT INTO "+ks+".users (id, name, email) VALUES (?, ?, ?)", i, fmt.Sprintf("user%d", i), email)
				b.Query("INSERT INTO "+ks+".by_email (email, id) VALUES (?, ?)", email, i)
			}
			// Every statement of a batch gets the same write timestamp, so
			// this update ties with the insert of id 2 and, as in Cassandra,
			// the greater value ("user2" > "renamed") wins.
			b.Query("UPDATE "+ks+".users SET name = ? WHERE id = ?", "renamed", 2)
			if err := b.Exec(); err != nil {
				t.Fatalf("logged batch: %v", err)
			}
			var w1, w2 int64
			if err := s.Query("SELECT writetime(name) FROM " + ks + ".users WHERE id = 1").Scan(&w1); err != nil {
				t.Fatal(err)
			}
			if err := s.Query("SELECT writetime(name) FROM " + ks + ".users WHERE id = 2").Scan(&w2); err != nil {
				t.Fatal(err)
			}
			if w1 == 0 || w1 != w2 {
				t.Errorf("batch write timestamps differ: %d vs %d", w1, w2)
			}
			for i := 1; i <= 3; i++ {
				var name, email string
				var id int
				if err := s.Query("SELECT name, email FROM "+ks+".users WHERE id = ?", i).Scan(&name, &email); err != nil {
					t.Fatalf("users id=%d: %v", i, err)
				}
				if err := s.Query("SELECT id FROM "+ks+".by_email WHERE email = ?", email).Scan(&id); err != nil {
					t.Fatalf("by_email %s: %v", email, err)
				}
				wantName := fmt.Sprintf("user%d", i)
				if name != wantName || id != i {
					t.Errorf("id=%d: name=%q id=%d", i, name, id)
				}
			}
		})

		t.Run("TTL", func(t *testing.T) {
			mustExec(t, s, "INSERT INTO "+ks+".users (id, name) VALUES (?, ?) USING TTL 1000", 10, "long")
			mustExec(t, s, "INSERT INTO "+ks+".users (id, name) VALUES (?, ?) USING TTL ?", 11, "short", 1)
			var ttl *int
			if err := s.Query("SELECT TTL(name) FROM "+ks+".users WHERE id = ?", 10).Scan(&ttl); err != nil {
				t.Fatal(err)
			}
			if ttl == nil || *ttl <= 990 || *ttl > 1000 {
				t.Errorf("TTL(name) = %v, want in (990, 1000]", ttl)
			}
			if err := s.Query("SELECT TTL(name) FROM "+ks+".users WHERE id = ?", 1).Scan(&ttl); err != nil {
				t.Fatal(err)
			}
			if ttl != nil {
				t.Errorf("TTL of a column written without TTL = %d, want null", *ttl)
			}
			time.Sleep(2100 * time.Millisecond)
			var name string
			err := s.Query("SELECT name FROM "+ks+".users WHERE id = ?", 11).Scan(&name)
			if !errors.Is(err, gocql.ErrNotFound) {
				t.Errorf("row with TTL 1 after 2.1s: err=%v name=%q, want ErrNotFound", err, name)
			}
			if err := s.Query("SELECT name FROM "+ks+".users WHERE id = ?", 10).Scan(&name); err != nil || name != "long" {
				t.Errorf("row with TTL 1000: err=%v name=%q", err, name)
			}
		})

		t.Run("LWT", func(t *testing.T) {
			ins := "INSERT INTO " + ks + ".users (id, name, email) VALUES (?, ?, ?) IF NOT EXISTS"
			applied, err := s.Query(ins, 100, "first", "a@x").ScanCAS()
			if err != nil || !applied {
				t.Fatalf("first IF NOT EXISTS: applied=%v err=%v", applied, err)
			}

			// Not applied: the existing row comes back in the result
			// (columns after [applied]: id, email, name in table order).
			var id int
			var email, name string
			applied, err = s.Query(ins, 100, "second", "b@x").ScanCAS(&id, &email, &name)
			if err != nil {
				t.Fatalf("second IF NOT EXISTS: %v", err)
			}
			if applied {
				t.Fatalf("second IF NOT EXISTS applied")
			}
			if id != 100 || name != "first" || email != "a@x" {
				t.Errorf("not-applied row: id=%d name=%q email=%q", id, name, email)
			}

			m := map[string]interface{}{}
			applied, err = s.Query(ins, 100, "third", "c@x").MapScanCAS(m)
			if err != nil || applied {
				t.Fatalf("MapScanCAS not applied: applied=%v err=%v", applied, err)
			}
			if m["id"] != 100 || m["name"] != "first" || m["email"] != "a@x" {
				t.Errorf("MapScanCAS existing row = %#v", m)
			}

			m = map[string]interface{}{}
			applied, err = s.Query(ins, 101, "new", "d@x").MapScanCAS(m)
			if err != nil || !applied {
				t.Fatalf("MapScanCAS applied: applied=%v err=%v", applied, err)
			}

			// Conditional update.
			applied, err = s.Query("UPDATE "+ks+".users SET name = ? WHERE id = ? IF name = ?", "updated", 100, "first").ScanCAS()
			if err != nil || !applied {
				t.Fatalf("UPDATE IF name = first: applied=%v err=%v", applied, err)
			}
			var cur string
			applied, err = s.Query("UPDATE "+ks+".users SET name = ? WHERE id = ? IF name = ?", "again", 100, "first").ScanCAS(&cur)
			if err != nil || applied || cur != "updated" {
				t.Errorf("UPDATE IF stale condition: applied=%v current=%q err=%v", applied, cur, err)
			}
			if err := s.Query("SELECT name FROM "+ks+".users WHERE id = ?", 100).Scan(&name); err != nil || name != "updated" {
				t.Errorf("after LWTs: name=%q err=%v", name, err)
			}

			// Conditional batch on one partition.
			b := s.Batch(gocql.LoggedBatch)
			b.Query("UPDATE "+ks+".users SET email = ? WHERE id = ? IF name = ?", "z@x", 101, "new")
			applied, iter, err := b.ExecCAS()
			if err != nil || !applied {
				t.Fatalf("batch CAS: applied=%v err=%v", applied, err)
			}
			if iter != nil {
				iter.Close()
			}
			if err := s.Query("SELECT email FROM "+ks+".users WHERE id = ?", 101).Scan(&email); err != nil || email != "z@x" {
				t.Errorf("after batch CAS: email=%q err=%v", email, err)
			}
		})
	})
}

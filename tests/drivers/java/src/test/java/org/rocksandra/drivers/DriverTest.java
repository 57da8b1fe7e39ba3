package org.rocksandra.drivers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultProtocolVersion;
import com.datastax.oss.driver.api.core.ProtocolVersion;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.cql.BatchStatement;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.DefaultBatchType;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.data.CqlDuration;
import com.datastax.oss.driver.api.core.data.TupleValue;
import com.datastax.oss.driver.api.core.data.UdtValue;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.metadata.TokenMap;
import com.datastax.oss.driver.api.core.metadata.schema.ClusteringOrder;
import com.datastax.oss.driver.api.core.metadata.schema.KeyspaceMetadata;
import com.datastax.oss.driver.api.core.metadata.schema.TableMetadata;
import com.datastax.oss.driver.api.core.servererrors.AlreadyExistsException;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.servererrors.SyntaxError;
import com.datastax.oss.driver.api.core.type.DataTypes;
import com.datastax.oss.driver.api.core.type.TupleType;
import com.datastax.oss.driver.api.core.type.UserDefinedType;
import com.datastax.oss.driver.api.core.uuid.Uuids;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Apache Cassandra Java driver 4.x against a running Rocksandra server at
 * $ROCKSANDRA_HOST:$ROCKSANDRA_PORT: connection and protocol negotiation,
 * schema and token metadata, every scalar type, collections, tuples and user
 * types, paging, error types, batches, TTL, counters and lightweight
 * transactions.
 */
class DriverTest {
  private static final String HOST = System.getenv().getOrDefault("ROCKSANDRA_HOST", "127.0.0.1");
  private static final int PORT =
      Integer.parseInt(System.getenv().getOrDefault("ROCKSANDRA_PORT", "9042"));
  private static final AtomicInteger KEYSPACES = new AtomicInteger();
  private static CqlSession session;

  static CqlSession connect(DriverConfigLoader config) {
    var builder =
        CqlSession.builder()
            .addContactPoint(new InetSocketAddress(HOST, PORT))
            .withLocalDatacenter("datacenter1");
    return config == null ? builder.build() : builder.withConfigLoader(config).build();
  }

  @BeforeAll
  static void open() {
    session = connect(null);
  }

  @AfterAll
  static void close() {
    session.close();
  }

  /** A uniquely named keyspace; the caller drops it. */
  static String newKeyspace() {
    String name =
        "java_" + ProcessHandle.current().pid() + "_" + KEYSPACES.incrementAndGet();
    session.execute(
        "CREATE KEYSPACE "
            + name
            + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    return name;
  }

  static void drop(String keyspace) {
    session.execute("DROP KEYSPACE " + keyspace);
  }

  @Test
  void negotiatesTheNewestProtocolAndReadsMetadata() {
    assertEquals(DefaultProtocolVersion.V5, session.getContext().getProtocolVersion());
    Collection<Node> nodes = session.getMetadata().getNodes().values();
    assertEquals(1, nodes.size());
    Node node = nodes.iterator().next();
    assertEquals("datacenter1", node.getDatacenter());
    assertEquals("rack1", node.getRack());
    assertNotNull(node.getCassandraVersion());
    assertTrue(node.getHostId() != null);

    String ks = newKeyspace();
    try {
      session.execute(
          "CREATE TABLE "
              + ks
              + ".users (id uuid, bucket int, name text, tags set<text>, "
              + "PRIMARY KEY ((id, bucket), name)) WITH CLUSTERING ORDER BY (name DESC) "
              + "AND comment = 'c'");
      session.checkSchemaAgreement();
      KeyspaceMetadata keyspace = session.getMetadata().getKeyspace(ks).orElseThrow();
      assertEquals(
          "org.apache.cassandra.locator.SimpleStrategy", keyspace.getReplication().get("class"));
      TableMetadata table = keyspace.getTable("users").orElseThrow();
      assertEquals(
          List.of("id", "bucket"),
          table.getPartitionKey().stream().map(c -> c.getName().asInternal()).toList());
      assertEquals(
          List.of(ClusteringOrder.DESC), new ArrayList<>(table.getClusteringColumns().values()));
      assertEquals("c", table.getOptions().get(com.datastax.oss.driver.api.core.CqlIdentifier.fromCql("comment")));
      assertEquals(
          DataTypes.setOf(DataTypes.TEXT), table.getColumn("tags").orElseThrow().getType());

      // Token awareness: the only node is the replica of any key.
      TokenMap tokens = session.getMetadata().getTokenMap().orElseThrow();
      assertFalse(tokens.getTokenRanges().isEmpty());
      Set<Node> replicas = tokens.getReplicas(ks, ByteBuffer.wrap(new byte[] {0, 0, 0, 1}));
      assertEquals(Set.of(node), replicas);
    } finally {
      drop(ks);
    }
  }

  @Test
  void protocolV4AndV3OnRequest() {
    for (ProtocolVersion version : List.of(DefaultProtocolVersion.V4, DefaultProtocolVersion.V3)) {
      DriverConfigLoader config =
          DriverConfigLoader.programmaticBuilder()
              .withString(DefaultDriverOption.PROTOCOL_VERSION, version.name())
              .build();
      try (CqlSession pinned = connect(config)) {
        assertEquals(version, pinned.getContext().getProtocolVersion());
        Row row = pinned.execute("SELECT release_version FROM system.local").one();
        assertNotNull(row);
        assertNotNull(row.getString("release_version"));
      }
    }
  }

  @Test
  void scalarValuesRoundTrip() throws Exception {
    String ks = newKeyspace();
    try {
      session.execute(
          "CREATE TABLE "
              + ks
              + ".scalars (k int PRIMARY KEY, t text, a ascii, b bigint, vi varint, f float, "
              + "d double, dec decimal, bo boolean, u uuid, tu timeuuid, ts timestamp, dt date, "
              + "tm time, ip inet, bl blob, si smallint, ti tinyint, du duration)");
      UUID u = UUID.randomUUID();
      UUID tu = Uuids.timeBased();
      Instant ts = Instant.ofEpochMilli(1700000000123L);
      InetAddress ip = InetAddress.getByName("2001:db8::1");
      ByteBuffer bl = ByteBuffer.wrap(new byte[] {0, 1, 2, (byte) 255});
      CqlDuration du = CqlDuration.from("1y2mo3d4h5m6s7ms");
      BigInteger vi = new BigInteger("123456789012345678901234567890");
      BigDecimal dec = new BigDecimal("-12345.678901");
      LocalTime tm = LocalTime.parse("13:14:15.123456789");
      LocalDate dt = LocalDate.parse("2024-02-29");
      PreparedStatement insert =
          session.prepare(
              "INSERT INTO "
                  + ks
                  + ".scalars (k, t, a, b, vi, f, d, dec, bo, u, tu, ts, dt, tm, ip, bl, si, ti, du) "
                  + "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
      session.execute(
          insert.bind(
              1, "héllo ☃", "ascii", -9007199254740993L, vi, 1.5f, -2.25, dec, true, u, tu, ts,
              dt, tm, ip, bl, (short) -32768, (byte) 127, du));
      session.execute(
          SimpleStatement.newInstance(
              "INSERT INTO " + ks + ".scalars (k, t, b, u) VALUES (?, ?, ?, ?)",
              2, "simple", 42L, u));
      PreparedStatement select = session.prepare("SELECT * FROM " + ks + ".scalars WHERE k = ?");
      Row row = session.execute(select.bind(1)).one();
      assertNotNull(row);
      assertEquals("héllo ☃", row.getString("t"));
      assertEquals("ascii", row.getString("a"));
      assertEquals(-9007199254740993L, row.getLong("b"));
      assertEquals(vi, row.getBigInteger("vi"));
      assertEquals(1.5f, row.getFloat("f"));
      assertEquals(-2.25, row.getDouble("d"));
      assertEquals(dec, row.getBigDecimal("dec"));
      assertTrue(row.getBoolean("bo"));
      assertEquals(u, row.getUuid("u"));
      assertEquals(tu, row.getUuid("tu"));
      assertEquals(ts, row.getInstant("ts"));
      assertEquals(dt, row.getLocalDate("dt"));
      assertEquals(tm, row.getLocalTime("tm"));
      assertEquals(ip, row.getInetAddress("ip"));
      assertEquals(bl, row.getByteBuffer("bl"));
      assertEquals((short) -32768, row.getShort("si"));
      assertEquals((byte) 127, row.getByte("ti"));
      assertEquals(du, row.getCqlDuration("du"));

      Row simple = session.execute(select.bind(2)).one();
      assertNotNull(simple);
      assertEquals("simple", simple.getString("t"));
      assertEquals(42L, simple.getLong("b"));
      assertNull(simple.getString("a"));
      assertTrue(simple.isNull("vi"));
    } finally {
      drop(ks);
    }
  }

  @Test
  void collectionsTuplesUserTypesAndStatics() {
    String ks = newKeyspace();
    try {
      session.execute("CREATE TYPE " + ks + ".address (street text, zip int)");
      session.execute(
          "CREATE TABLE "
              + ks
              + ".c (p int, c int, l list<int>, s set<text>, m map<text, int>, "
              + "tp tuple<int, text>, addr frozen<address>, st text static, PRIMARY KEY (p, c))");
      UserDefinedType address =
          session
              .getMetadata()
              .getKeyspace(ks)
              .flatMap(k -> k.getUserDefinedType("address"))
              .orElseThrow();
      TupleType tupleType = DataTypes.tupleOf(DataTypes.INT, DataTypes.TEXT);
      PreparedStatement insert =
          session.prepare(
              "INSERT INTO " + ks + ".c (p, c, l, s, m, tp, addr, st) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
      BoundStatement bound =
          insert.bind(
              1,
              1,
              List.of(3, 1, 2),
              Set.of("b", "a"),
              Map.of("x", 1, "y", 2),
              tupleType.newValue(7, "seven"),
              address.newValue("Main", 12345),
              "shared");
      session.execute(bound);
      session.execute("INSERT INTO " + ks + ".c (p, c) VALUES (1, 2)");
      session.execute(
          "UPDATE " + ks + ".c SET l = l + [4], s = s - {'a'}, m['z'] = 26 WHERE p = 1 AND c = 1");
      List<Row> rows = session.execute("SELECT * FROM " + ks + ".c WHERE p = 1").all();
      assertEquals(2, rows.size());
      Row first = rows.get(0);
      assertEquals(List.of(3, 1, 2, 4), first.getList("l", Integer.class));
      assertEquals(Set.of("b"), first.getSet("s", String.class));
      assertEquals(Map.of("x", 1, "y", 2, "z", 26), first.getMap("m", String.class, Integer.class));
      TupleValue tp = first.getTupleValue("tp");
      assertNotNull(tp);
      assertEquals(7, tp.getInt(0));
      assertEquals("seven", tp.getString(1));
      UdtValue addr = first.getUdtValue("addr");
      assertNotNull(addr);
      assertEquals("Main", addr.getString("street"));
      assertEquals(12345, addr.getInt("zip"));
      assertEquals("shared", first.getString("st"));
      assertEquals("shared", rows.get(1).getString("st"));
      assertTrue(rows.get(1).getList("l", Integer.class).isEmpty(), "a null list reads empty");
    } finally {
      drop(ks);
    }
  }

  @Test
  void pagingAutomaticAndByPagingState() {
    String ks = newKeyspace();
    int partitions = 20;
    int perPartition = 50;
    int total = partitions * perPartition;
    try {
      session.execute("CREATE TABLE " + ks + ".rows (p int, c int, v text, PRIMARY KEY (p, c))");
      PreparedStatement insert =
          session.prepare("INSERT INTO " + ks + ".rows (p, c, v) VALUES (?, ?, ?)");
      for (int p = 0; p < partitions; p++) {
        var batch = BatchStatement.builder(DefaultBatchType.UNLOGGED);
        for (int c = 0; c < perPartition; c++) {
          batch.addStatement(insert.bind(p, c, "v" + p + "-" + c));
        }
        session.execute(batch.build());
      }
      assertEquals(
          total, session.execute("SELECT count(*) FROM " + ks + ".rows").one().getLong(0));

      Set<String> seen = new HashSet<>();
      ResultSet all =
          session.execute(SimpleStatement.newInstance("SELECT p, c, v FROM " + ks + ".rows").setPageSize(73));
      for (Row row : all) {
        String key = row.getInt("p") + "/" + row.getInt("c");
        assertTrue(seen.add(key), "row " + key + " twice");
        assertEquals("v" + key.replace('/', '-'), row.getString("v"));
      }
      assertEquals(total, seen.size());

      int pages = 0;
      int rows = 0;
      ByteBuffer state = null;
      SimpleStatement page =
          SimpleStatement.newInstance("SELECT p, c FROM " + ks + ".rows").setPageSize(100);
      do {
        ResultSet rs = session.execute(page.setPagingState(state));
        int inPage = rs.getAvailableWithoutFetching();
        assertTrue(inPage <= 100);
        for (int i = 0; i < inPage; i++) {
          rs.one();
        }
        rows += inPage;
        pages++;
        state = rs.getExecutionInfo().getPagingState();
        assertTrue(pages <= total, "paging ends");
      } while (state != null);
      assertEquals(total, rows);
      assertTrue(pages >= total / 100);

      List<Integer> cs = new ArrayList<>();
      for (Row row :
          session.execute(
              SimpleStatement.newInstance(
                      "SELECT c FROM " + ks + ".rows WHERE p = ? ORDER BY c DESC", 7)
                  .setPageSize(7))) {
        cs.add(row.getInt(0));
      }
      assertEquals(perPartition, cs.size());
      for (int i = 0; i < perPartition; i++) {
        assertEquals(perPartition - 1 - i, cs.get(i));
      }
    } finally {
      drop(ks);
    }
  }

  @Test
  void errorsAreTheDriversTypes() {
    String ks = newKeyspace();
    try {
      session.execute("CREATE TABLE " + ks + ".t (k int PRIMARY KEY, v text)");
      assertThrows(SyntaxError.class, () -> session.execute("SELEC * FROM " + ks + ".t"));
      AlreadyExistsException keyspace =
          assertThrows(
              AlreadyExistsException.class,
              () ->
                  session.execute(
                      "CREATE KEYSPACE "
                          + ks
                          + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"));
      assertTrue(keyspace.getMessage().contains(ks), keyspace.getMessage());
      assertThrows(
          AlreadyExistsException.class,
          () -> session.execute("CREATE TABLE " + ks + ".t (k int PRIMARY KEY)"));
      for (String query :
          List.of(
              "SELECT * FROM " + ks + ".no_such_table",
              "SELECT nope FROM " + ks + ".t",
              "INSERT INTO " + ks + ".t (v) VALUES ('x')",
              "SELECT * FROM " + ks + ".t WHERE v = 'x'",
              "SELECT * FROM no_such_ks_xyz.t")) {
        InvalidQueryException e =
            assertThrows(InvalidQueryException.class, () -> session.execute(query), query);
        assertFalse(e.getMessage().isEmpty());
      }
      assertThrows(
          InvalidQueryException.class,
          () -> session.prepare("SELECT * FROM " + ks + ".no_such_table WHERE k = ?"));
      session.execute("INSERT INTO " + ks + ".t (k, v) VALUES (1, 'ok')");
    } finally {
      drop(ks);
    }
  }

  @Test
  void batchesTtlCountersAndLightweightTransactions() {
    String ks = newKeyspace();
    try {
      session.execute("CREATE TABLE " + ks + ".users (id int PRIMARY KEY, name text, email text)");
      session.execute("CREATE TABLE " + ks + ".hits (page text PRIMARY KEY, n counter)");
      PreparedStatement user =
          session.prepare("INSERT INTO " + ks + ".users (id, name, email) VALUES (?, ?, ?)");
      session.execute(
          BatchStatement.newInstance(
              DefaultBatchType.LOGGED, user.bind(1, "ann", "a@x"), user.bind(2, "bob", "b@x")));
      assertEquals(2, session.execute("SELECT * FROM " + ks + ".users").all().size());

      session.execute("INSERT INTO " + ks + ".users (id, name) VALUES (3, 'tmp') USING TTL 1000");
      int ttl = session.execute("SELECT TTL(name) FROM " + ks + ".users WHERE id = 3").one().getInt(0);
      assertTrue(ttl > 990 && ttl <= 1000, "ttl " + ttl);

      PreparedStatement hit =
          session.prepare("UPDATE " + ks + ".hits SET n = n + ? WHERE page = ?");
      session.execute(
          BatchStatement.newInstance(DefaultBatchType.COUNTER, hit.bind(2L, "/"), hit.bind(3L, "/")));
      assertEquals(
          5L, session.execute("SELECT n FROM " + ks + ".hits WHERE page = '/'").one().getLong(0));

      String lwt = "INSERT INTO " + ks + ".users (id, name) VALUES (4, ?) IF NOT EXISTS";
      assertTrue(session.execute(SimpleStatement.newInstance(lwt, "dan")).wasApplied());
      ResultSet again = session.execute(SimpleStatement.newInstance(lwt, "eve"));
      assertFalse(again.wasApplied());
      assertEquals("dan", again.one().getString("name"));
      assertTrue(
          session
              .execute("UPDATE " + ks + ".users SET name = 'dan2' WHERE id = 4 IF name = 'dan'")
              .wasApplied());
      ResultSet refused =
          session.execute("UPDATE " + ks + ".users SET name = 'x' WHERE id = 4 IF name = 'dan'");
      assertFalse(refused.wasApplied());
      assertEquals("dan2", refused.one().getString("name"));
    } finally {
      drop(ks);
    }
  }
}

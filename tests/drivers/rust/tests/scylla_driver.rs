//! Driver tests: the Rust `scylla` driver against a running Rocksandra.
//!
//! The server address comes from `ROCKSANDRA_HOST` (default 127.0.0.1) and
//! `ROCKSANDRA_PORT` (default 9042). Every test creates its own keyspace and
//! drops it at the end, so the tests can run in parallel against one server.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::try_join_all;
use futures::TryStreamExt;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::cluster::metadata::{ColumnKind, Strategy};
use scylla::errors::{DbError, ExecutionError, PrepareError, RequestAttemptError};
use scylla::frame::response::result::{CollectionType, ColumnType, NativeType};
use scylla::response::{PagingState, PagingStateResponse};
use scylla::routing::Token;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::Statement;
use scylla::value::{
    CqlDate, CqlDecimal, CqlDuration, CqlTime, CqlTimestamp, CqlTimeuuid, CqlVarint,
};
use scylla::{DeserializeRow, DeserializeValue, SerializeRow, SerializeValue};
use uuid::Uuid;

// ---------------------------------------------------------------- helpers

fn server_host() -> String {
    std::env::var("ROCKSANDRA_HOST").unwrap_or_else(|_| "127.0.0.1".to_string())
}

fn server_port() -> u16 {
    std::env::var("ROCKSANDRA_PORT")
        .ok()
        .map(|p| p.parse().expect("ROCKSANDRA_PORT must be a port number"))
        .unwrap_or(9042)
}

async fn connect() -> Session {
    let addr = format!("{}:{}", server_host(), server_port());
    SessionBuilder::new()
        .known_node(&addr)
        .connection_timeout(Duration::from_secs(5))
        .build()
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {addr}: {e}"))
}

/// A keyspace name no other test (or earlier run) uses.
fn unique_keyspace(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .subsec_nanos();
    format!("rs_{prefix}_{}_{n}_{nanos}", std::process::id())
}

async fn run(session: &Session, cql: &str) {
    session
        .query_unpaged(cql, &[])
        .await
        .unwrap_or_else(|e| panic!("{cql}: {e}"));
}

async fn create_keyspace(session: &Session, prefix: &str) -> String {
    let ks = unique_keyspace(prefix);
    run(
        session,
        &format!(
            "CREATE KEYSPACE {ks} WITH replication = \
             {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
        ),
    )
    .await;
    ks
}

async fn drop_keyspace(session: &Session, ks: &str) {
    run(session, &format!("DROP KEYSPACE {ks}")).await;
}

/// The server's error for a statement that must fail, sent unprepared.
async fn query_db_error(session: &Session, cql: &str) -> (DbError, String) {
    match session.query_unpaged(cql, &[]).await {
        Ok(_) => panic!("{cql}: expected an error, got success"),
        Err(ExecutionError::LastAttemptError(RequestAttemptError::DbError(err, msg))) => (err, msg),
        Err(other) => panic!("{cql}: expected a server error, got {other:?}"),
    }
}

/// Minimal big-endian two's complement bytes, as `varint` stores them.
fn varint_bytes(value: i128) -> Vec<u8> {
    let bytes = value.to_be_bytes();
    let mut start = 0;
    while start + 1 < bytes.len() {
        let redundant = (bytes[start] == 0x00 && bytes[start + 1] & 0x80 == 0)
            || (bytes[start] == 0xff && bytes[start + 1] & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    bytes[start..].to_vec()
}

// ---------------------------------------------------------------- 1. metadata

#[tokio::test(flavor = "multi_thread")]
async fn cluster_metadata_and_token_map() {
    let session = connect().await;
    let ks = create_keyspace(&session, "meta").await;
    run(
        &session,
        &format!("CREATE TYPE {ks}.addr (street text, number int)"),
    )
    .await;
    run(
        &session,
        &format!(
            "CREATE TABLE {ks}.t (pk int, ck text, s int STATIC, v list<int>, \
             home frozen<addr>, PRIMARY KEY (pk, ck))"
        ),
    )
    .await;
    session.refresh_metadata().await.expect("refresh metadata");

    let (cluster_name, data_center, rack, tokens): (String, String, String, HashSet<String>) =
        session
            .query_unpaged(
                "SELECT cluster_name, data_center, rack, tokens FROM system.local",
                &[],
            )
            .await
            .expect("system.local")
            .into_rows_result()
            .expect("rows")
            .single_row()
            .expect("one row in system.local");

    let state = session.get_cluster_state();
    assert_eq!(state.cluster_name(), cluster_name);

    // Topology: exactly one node, at the address we connected to.
    let nodes = state.get_nodes_info();
    assert_eq!(nodes.len(), 1, "nodes: {nodes:?}");
    let node = &nodes[0];
    assert_eq!(node.address.ip(), server_host().parse::<IpAddr>().unwrap());
    assert_eq!(node.address.port(), server_port());
    assert_eq!(node.datacenter.as_deref(), Some(data_center.as_str()));
    assert_eq!(node.rack.as_deref(), Some(rack.as_str()));
    assert!(!data_center.is_empty());
    assert!(node.is_connected());

    // Token map: every token the node owns is in the ring, pointing at it.
    let locator = state.replica_locator();
    assert_eq!(
        locator.datacenter_names(),
        std::slice::from_ref(&data_center)
    );
    let ring = locator.ring();
    assert!(!tokens.is_empty());
    assert_eq!(ring.len(), tokens.len());
    let ring_tokens: HashSet<String> = ring.iter().map(|(t, _)| t.value().to_string()).collect();
    assert_eq!(ring_tokens, tokens);
    assert!(ring.iter().all(|(_, n)| n.host_id == node.host_id));
    let replicas = state
        .get_endpoints(&ks, "t", &(42_i32,))
        .expect("endpoints for a partition key");
    assert_eq!(replicas.len(), 1);
    assert_eq!(replicas[0].0.host_id, node.host_id);

    // Schema: the system keyspaces and ours.
    let names: HashSet<&str> = state.keyspaces_iter().map(|(name, _)| name).collect();
    for expected in ["system", "system_schema", ks.as_str()] {
        assert!(
            names.contains(expected),
            "{expected} missing from {names:?}"
        );
    }
    let keyspace = state.get_keyspace(&ks).expect("our keyspace");
    assert_eq!(
        keyspace.strategy,
        Strategy::SimpleStrategy {
            replication_factor: 1
        }
    );
    assert!(keyspace.durable_writes);

    let udt = keyspace.user_defined_types.get("addr").expect("udt addr");
    let fields: Vec<(&str, &ColumnType)> = udt
        .field_types
        .iter()
        .map(|(name, typ)| (name.as_ref(), typ))
        .collect();
    assert_eq!(
        fields,
        [
            ("street", &ColumnType::Native(NativeType::Text)),
            ("number", &ColumnType::Native(NativeType::Int)),
        ]
    );

    let table = keyspace.tables.get("t").expect("table t");
    assert_eq!(table.partition_key, ["pk"]);
    assert_eq!(table.clustering_key, ["ck"]);
    assert_eq!(table.columns.len(), 5);
    let column = |name: &str| table.columns.get(name).unwrap_or_else(|| panic!("{name}"));
    assert_eq!(column("pk").kind, ColumnKind::PartitionKey);
    assert_eq!(column("pk").typ, ColumnType::Native(NativeType::Int));
    assert_eq!(column("ck").kind, ColumnKind::Clustering);
    assert_eq!(column("ck").typ, ColumnType::Native(NativeType::Text));
    assert_eq!(column("s").kind, ColumnKind::Static);
    assert_eq!(column("v").kind, ColumnKind::Regular);
    assert_eq!(
        column("v").typ,
        ColumnType::Collection {
            frozen: false,
            typ: CollectionType::List(Box::new(ColumnType::Native(NativeType::Int))),
        }
    );
    match &column("home").typ {
        ColumnType::UserDefinedType { frozen, definition } => {
            assert!(*frozen);
            assert_eq!(definition.name, "addr");
            assert_eq!(definition.keyspace, ks);
        }
        other => panic!("home: expected a UDT, got {other:?}"),
    }

    // A dropped table disappears from the metadata.
    run(&session, &format!("DROP TABLE {ks}.t")).await;
    session.refresh_metadata().await.expect("refresh metadata");
    let state = session.get_cluster_state();
    assert!(!state.get_keyspace(&ks).unwrap().tables.contains_key("t"));

    drop_keyspace(&session, &ks).await;
    session.refresh_metadata().await.expect("refresh metadata");
    assert!(session.get_cluster_state().get_keyspace(&ks).is_none());
}

// ---------------------------------------------------------------- 2. routing

#[tokio::test(flavor = "multi_thread")]
async fn token_aware_routing_agrees_with_server_tokens() {
    let session = connect().await;
    let ks = create_keyspace(&session, "tok").await;
    run(
        &session,
        &format!("CREATE TABLE {ks}.tok (a int, b text, c int, v text, PRIMARY KEY ((a, b), c))"),
    )
    .await;
    session.refresh_metadata().await.expect("refresh metadata");

    // Bind markers out of partition key order: a is marker 3, b is marker 2.
    let insert = session
        .prepare(format!(
            "INSERT INTO {ks}.tok (v, c, b, a) VALUES (?, ?, ?, ?)"
        ))
        .await
        .expect("prepare insert");
    assert!(insert.is_token_aware());
    let pk: Vec<(u16, u16)> = insert
        .get_variable_pk_indexes()
        .iter()
        .map(|i| (i.index, i.sequence))
        .collect();
    assert_eq!(pk, [(2, 1), (3, 0)], "(bind index, position in key)");
    assert_eq!(insert.get_keyspace_name(), Some(ks.as_str()));
    assert_eq!(insert.get_table_name(), Some("tok"));

    let select = session
        .prepare(format!(
            "SELECT token(a, b), v FROM {ks}.tok WHERE b = ? AND a = ? AND c = ?"
        ))
        .await
        .expect("prepare select");
    assert!(select.is_token_aware());
    let pk: Vec<(u16, u16)> = select
        .get_variable_pk_indexes()
        .iter()
        .map(|i| (i.index, i.sequence))
        .collect();
    assert_eq!(pk, [(0, 1), (1, 0)]);

    let keys: Vec<(i32, String)> = [
        (0, ""),
        (1, "a"),
        (-1, "hello"),
        (i32::MAX, "ünïcødé"),
        (
            i32::MIN,
            "a somewhat longer partition key component, > 16 bytes",
        ),
    ]
    .into_iter()
    .map(|(a, b)| (a, b.to_string()))
    .chain((0..20).map(|i| (i * 7919, format!("k{i}"))))
    .collect();

    let state = session.get_cluster_state();
    for (a, b) in &keys {
        let v = format!("{a}/{b}");
        session
            .execute_unpaged(&insert, (&v, 1_i32, b, a))
            .await
            .expect("insert");
        let driver_token = insert
            .calculate_token(&(&v, 1_i32, b, a))
            .expect("calculate token")
            .expect("insert is token aware");
        let select_token = select
            .calculate_token(&(b, a, 1_i32))
            .expect("calculate token")
            .expect("select is token aware");
        let metadata_token = state
            .compute_token(&ks, "tok", &(a, b))
            .expect("compute token");
        assert_eq!(driver_token, select_token);
        assert_eq!(driver_token, metadata_token);

        let (server_token, read): (i64, String) = session
            .execute_unpaged(&select, (b, a, 1_i32))
            .await
            .expect("select")
            .into_rows_result()
            .expect("rows")
            .single_row()
            .expect("one row");
        assert_eq!(read, v);
        assert_eq!(
            driver_token,
            Token::new(server_token),
            "token({a}, {b:?}) differs between driver and server"
        );
    }

    // The same agreement for a single-column key of another type, through an
    // unprepared token() query.
    run(
        &session,
        &format!("CREATE TABLE {ks}.single (k bigint PRIMARY KEY, v int)"),
    )
    .await;
    session.refresh_metadata().await.expect("refresh metadata");
    let state = session.get_cluster_state();
    for k in [0_i64, 1, -1, i64::MAX, i64::MIN, 1 << 40] {
        run(
            &session,
            &format!("INSERT INTO {ks}.single (k, v) VALUES ({k}, 1)"),
        )
        .await;
        let (server_token,): (i64,) = session
            .query_unpaged(
                format!("SELECT token(k) FROM {ks}.single WHERE k = {k}"),
                &[],
            )
            .await
            .expect("select token")
            .into_rows_result()
            .expect("rows")
            .single_row()
            .expect("one row");
        let driver_token = state.compute_token(&ks, "single", &(k,)).expect("token");
        assert_eq!(driver_token, Token::new(server_token), "token({k})");
    }

    drop_keyspace(&session, &ks).await;
}

// ---------------------------------------------------------------- 3. types

#[derive(Debug, Clone, PartialEq, SerializeValue, DeserializeValue)]
struct Address {
    street: String,
    number: i32,
}

#[derive(Debug, Clone, PartialEq, SerializeRow, DeserializeRow)]
struct AllTypes {
    k: i32,
    i: i32,
    bi: i64,
    si: i16,
    ti: i8,
    t: String,
    a: String,
    b: Vec<u8>,
    bo: bool,
    d: f64,
    f: f32,
    u: Uuid,
    tu: CqlTimeuuid,
    ts: CqlTimestamp,
    dt: CqlDate,
    tm: CqlTime,
    ip: IpAddr,
    ip6: IpAddr,
    vi: CqlVarint,
    de: CqlDecimal,
    du: CqlDuration,
    li: Vec<i32>,
    st: BTreeSet<String>,
    mp: BTreeMap<String, i32>,
    tp: (i32, String),
    ud: Address,
    ve: Vec<f32>,
}

const ALL_TYPES_COLUMNS: &str = "k int PRIMARY KEY, i int, bi bigint, si smallint, \
    ti tinyint, t text, a ascii, b blob, bo boolean, d double, f float, u uuid, \
    tu timeuuid, ts timestamp, dt date, tm time, ip inet, ip6 inet, vi varint, \
    de decimal, du duration, li list<int>, st set<text>, mp map<text, int>, \
    tp tuple<int, text>, ud frozen<address>, ve vector<float, 3>";

/// The values of `ALL_TYPES_LITERALS`, as the driver sees them.
fn expected_all_types(k: i32) -> AllTypes {
    const DAYS_2024_05_06: u32 = 19849;
    let time_of_day_ms = ((7 * 60 + 8) * 60 + 9) * 1000 + 123;
    AllTypes {
        k,
        i: -123_456,
        bi: -9_000_000_000,
        si: -12_345,
        ti: -7,
        t: "héllo ✓ wörld".to_string(),
        a: "plain ascii".to_string(),
        b: vec![0xde, 0xad, 0xbe, 0xef, 0x00],
        bo: true,
        d: -6.022_140_76e23,
        f: 2.5,
        u: Uuid::parse_str("123e4567-e89b-42d3-a456-556642440000").unwrap(),
        tu: CqlTimeuuid::from(Uuid::parse_str("50554d6e-29bb-11e5-b345-feff819cdc9f").unwrap()),
        ts: CqlTimestamp(i64::from(DAYS_2024_05_06) * 86_400_000 + time_of_day_ms),
        dt: CqlDate((1 << 31) + DAYS_2024_05_06),
        tm: CqlTime(((7 * 60 + 8) * 60 + 9) * 1_000_000_000 + 123_456_789),
        ip: IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3)),
        ip6: IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x42)),
        vi: CqlVarint::from_signed_bytes_be(varint_bytes(-123_456_789_012_345_678_901_234_567_890)),
        de: CqlDecimal::from_signed_be_bytes_and_exponent(varint_bytes(123_456_789), 4),
        du: CqlDuration {
            months: 14,
            days: 3,
            nanoseconds: 4 * 3_600_000_000_000 + 5_000_000,
        },
        li: vec![3, 1, 2, 1],
        st: ["b", "a", "c"].iter().map(|s| s.to_string()).collect(),
        mp: [("x".to_string(), 1), ("y".to_string(), -2)].into(),
        tp: (7, "seven".to_string()),
        ud: Address {
            street: "Main St".to_string(),
            number: 221,
        },
        ve: vec![1.0, -2.5, 3.25],
    }
}

/// CQL literals for `expected_all_types`, column by column after `k`.
const ALL_TYPES_LITERALS: &str = "-123456, -9000000000, -12345, -7, 'héllo ✓ wörld', \
    'plain ascii', 0xdeadbeef00, true, -6.02214076e23, 2.5, \
    123e4567-e89b-42d3-a456-556642440000, 50554d6e-29bb-11e5-b345-feff819cdc9f, \
    '2024-05-06 07:08:09.123+0000', '2024-05-06', '07:08:09.123456789', \
    '10.1.2.3', '2001:db8::42', -123456789012345678901234567890, 12345.6789, \
    1y2mo3d4h5ms, [3, 1, 2, 1], {'b', 'a', 'c'}, {'x': 1, 'y': -2}, (7, 'seven'), \
    {street: 'Main St', number: 221}, [1.0, -2.5, 3.25]";

const ALL_TYPES_NAMES: &str = "k, i, bi, si, ti, t, a, b, bo, d, f, u, tu, ts, dt, tm, ip, \
    ip6, vi, de, du, li, st, mp, tp, ud, ve";

#[tokio::test(flavor = "multi_thread")]
async fn type_round_trips_prepared_and_unprepared() {
    let session = connect().await;
    let ks = create_keyspace(&session, "types").await;
    run(
        &session,
        &format!("CREATE TYPE {ks}.address (street text, number int)"),
    )
    .await;
    run(
        &session,
        &format!("CREATE TABLE {ks}.all_types ({ALL_TYPES_COLUMNS})"),
    )
    .await;

    // Row 1: written with bound values through a prepared statement.
    let markers = vec!["?"; ALL_TYPES_NAMES.split(',').count()].join(", ");
    let insert = session
        .prepare(format!(
            "INSERT INTO {ks}.all_types ({ALL_TYPES_NAMES}) VALUES ({markers})"
        ))
        .await
        .expect("prepare insert");
    session
        .execute_unpaged(&insert, expected_all_types(1))
        .await
        .expect("prepared insert");

    // Row 2: written as CQL literals through an unprepared statement.
    run(
        &session,
        &format!("INSERT INTO {ks}.all_types ({ALL_TYPES_NAMES}) VALUES (2, {ALL_TYPES_LITERALS})"),
    )
    .await;

    let select = session
        .prepare(format!("SELECT * FROM {ks}.all_types WHERE k = ?"))
        .await
        .expect("prepare select");
    for k in [1, 2] {
        let expected = expected_all_types(k);
        let prepared: AllTypes = session
            .execute_unpaged(&select, (k,))
            .await
            .expect("prepared select")
            .into_rows_result()
            .expect("rows")
            .single_row()
            .unwrap_or_else(|e| panic!("row {k} through a prepared select: {e}"));
        assert_eq!(prepared, expected, "row {k} through a prepared select");

        let unprepared: AllTypes = session
            .query_unpaged(format!("SELECT * FROM {ks}.all_types WHERE k = {k}"), &[])
            .await
            .expect("unprepared select")
            .into_rows_result()
            .expect("rows")
            .single_row()
            .unwrap_or_else(|e| panic!("row {k} through an unprepared select: {e}"));
        assert_eq!(unprepared, expected, "row {k} through an unprepared select");
    }

    // Both rows in one unpaged scan.
    let all: Vec<AllTypes> = session
        .query_unpaged(format!("SELECT * FROM {ks}.all_types"), &[])
        .await
        .expect("scan")
        .into_rows_result()
        .expect("rows")
        .rows::<AllTypes>()
        .expect("typed rows")
        .collect::<Result<_, _>>()
        .expect("rows deserialize");
    assert_eq!(all.len(), 2);

    // Nulls: a row with only its key reads back as None everywhere.
    run(
        &session,
        &format!("INSERT INTO {ks}.all_types (k) VALUES (3)"),
    )
    .await;
    type Nullable = (
        Option<i32>,
        Option<String>,
        Option<Vec<u8>>,
        Option<Vec<i32>>,
        Option<Address>,
        Option<Vec<f32>>,
    );
    let nulls: Nullable = session
        .query_unpaged(
            format!("SELECT i, t, b, li, ud, ve FROM {ks}.all_types WHERE k = 3"),
            &[],
        )
        .await
        .expect("select nulls")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    assert_eq!(nulls, (None, None, None, None, None, None));

    // Empty collections are nulls in CQL.
    session
        .execute_unpaged(
            &session
                .prepare(format!(
                    "UPDATE {ks}.all_types SET li = ?, st = ?, mp = ? WHERE k = 3"
                ))
                .await
                .expect("prepare update"),
            (
                Vec::<i32>::new(),
                BTreeSet::<String>::new(),
                BTreeMap::<String, i32>::new(),
            ),
        )
        .await
        .expect("update with empty collections");
    type Collections = (
        Option<Vec<i32>>,
        Option<BTreeSet<String>>,
        Option<BTreeMap<String, i32>>,
    );
    let empties: Collections = session
        .query_unpaged(
            format!("SELECT li, st, mp FROM {ks}.all_types WHERE k = 3"),
            &[],
        )
        .await
        .expect("select empties")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    assert_eq!(empties, (None, None, None));

    drop_keyspace(&session, &ks).await;
}

// ---------------------------------------------------------------- 4. paging

const ROWS_PER_CASE: i32 = 2_500;
const PAGE_SIZE: i32 = 100;

async fn insert_all(session: &Session, insert: &PreparedStatement, rows: Vec<(i32, i32, String)>) {
    for chunk in rows.chunks(100) {
        try_join_all(chunk.iter().map(|row| session.execute_unpaged(insert, row)))
            .await
            .expect("insert chunk");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn paging_counts_exactly_and_keeps_clustering_order() {
    let session = connect().await;
    let ks = create_keyspace(&session, "paging").await;
    run(
        &session,
        &format!("CREATE TABLE {ks}.p (pk int, ck int, v text, PRIMARY KEY (pk, ck))"),
    )
    .await;
    let insert = session
        .prepare(format!("INSERT INTO {ks}.p (pk, ck, v) VALUES (?, ?, ?)"))
        .await
        .expect("prepare insert");

    // 2,500 rows in partition 0, inserted in a shuffled clustering order.
    let one_partition = (0..ROWS_PER_CASE)
        .map(|i| {
            let ck = (i * 997) % ROWS_PER_CASE;
            (0, ck, format!("v{ck}"))
        })
        .collect();
    insert_all(&session, &insert, one_partition).await;
    // 2,500 rows in partitions 1..=2500, one row each.
    let many_partitions = (1..=ROWS_PER_CASE)
        .map(|pk| (pk, 0, format!("p{pk}")))
        .collect();
    insert_all(&session, &insert, many_partitions).await;

    // One partition, through the driver's paged iterator.
    let mut select_partition = session
        .prepare(format!("SELECT ck, v FROM {ks}.p WHERE pk = ?"))
        .await
        .expect("prepare select");
    select_partition.set_page_size(PAGE_SIZE);
    let rows: Vec<(i32, String)> = session
        .execute_iter(select_partition.clone(), (0,))
        .await
        .expect("execute_iter")
        .rows_stream::<(i32, String)>()
        .expect("row type")
        .try_collect()
        .await
        .expect("pages");
    assert_eq!(rows.len(), ROWS_PER_CASE as usize);
    for (i, (ck, v)) in rows.iter().enumerate() {
        assert_eq!(*ck, i as i32, "clustering order at row {i}");
        assert_eq!(*v, format!("v{ck}"));
    }

    // The same partition page by page: every page but the last is full.
    let mut paging_state = PagingState::start();
    let mut page_sizes = Vec::new();
    let mut next_ck = 0;
    loop {
        let (result, response) = session
            .execute_single_page(&select_partition, (0,), paging_state)
            .await
            .expect("page");
        let rows = result.into_rows_result().expect("rows");
        page_sizes.push(rows.rows_num());
        for row in rows.rows::<(i32, String)>().expect("row type") {
            let (ck, _) = row.expect("row");
            assert_eq!(ck, next_ck);
            next_ck += 1;
        }
        match response {
            PagingStateResponse::HasMorePages { state } => paging_state = state,
            PagingStateResponse::NoMorePages => break,
        }
    }
    assert_eq!(next_ck, ROWS_PER_CASE);
    let full_pages = (ROWS_PER_CASE / PAGE_SIZE) as usize;
    assert!(
        page_sizes.len() == full_pages || page_sizes.len() == full_pages + 1,
        "{} pages: {page_sizes:?}",
        page_sizes.len()
    );
    assert!(page_sizes[..full_pages]
        .iter()
        .all(|&n| n == PAGE_SIZE as usize));
    assert!(page_sizes[full_pages..].iter().all(|&n| n == 0));

    // Reversed clustering order, unprepared, paged.
    let reversed: Vec<(i32,)> = session
        .query_iter(
            Statement::new(format!(
                "SELECT ck FROM {ks}.p WHERE pk = 0 ORDER BY ck DESC"
            ))
            .with_page_size(PAGE_SIZE),
            &[],
        )
        .await
        .expect("query_iter")
        .rows_stream::<(i32,)>()
        .expect("row type")
        .try_collect()
        .await
        .expect("pages");
    let expected: Vec<(i32,)> = (0..ROWS_PER_CASE).rev().map(|ck| (ck,)).collect();
    assert_eq!(reversed, expected);

    // The whole table, across partitions, unprepared with paging.
    let all: Vec<(i32, i32, String)> = session
        .query_iter(
            Statement::new(format!("SELECT pk, ck, v FROM {ks}.p")).with_page_size(PAGE_SIZE),
            &[],
        )
        .await
        .expect("query_iter")
        .rows_stream::<(i32, i32, String)>()
        .expect("row type")
        .try_collect()
        .await
        .expect("pages");
    assert_eq!(all.len(), 2 * ROWS_PER_CASE as usize);
    let mut per_partition: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for (pk, ck, _) in &all {
        per_partition.entry(*pk).or_default().push(*ck);
    }
    assert_eq!(per_partition.len(), ROWS_PER_CASE as usize + 1);
    assert_eq!(
        per_partition[&0],
        (0..ROWS_PER_CASE).collect::<Vec<_>>(),
        "partition 0 out of order in a paged scan"
    );
    for pk in 1..=ROWS_PER_CASE {
        assert_eq!(per_partition[&pk], [0], "partition {pk}");
    }
    // A full scan returns partitions in token order, each once.
    let mut seen = HashSet::new();
    let mut last_token = i64::MIN;
    let mut prev_pk = None;
    session.refresh_metadata().await.expect("refresh metadata");
    let state = session.get_cluster_state();
    for (pk, _, _) in &all {
        if prev_pk == Some(*pk) {
            continue;
        }
        assert!(seen.insert(*pk), "partition {pk} split across the scan");
        let token = state
            .compute_token(&ks, "p", &(*pk,))
            .expect("token")
            .value();
        assert!(token >= last_token, "scan not in token order at pk {pk}");
        last_token = token;
        prev_pk = Some(*pk);
    }

    // COUNT(*) agrees.
    let (count,): (i64,) = session
        .query_unpaged(format!("SELECT COUNT(*) FROM {ks}.p"), &[])
        .await
        .expect("count")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    assert_eq!(count, 2 * i64::from(ROWS_PER_CASE));

    drop_keyspace(&session, &ks).await;
}

// ---------------------------------------------------------------- 5. errors

#[tokio::test(flavor = "multi_thread")]
async fn server_errors_map_to_driver_errors() {
    let session = connect().await;
    let ks = create_keyspace(&session, "errors").await;
    run(
        &session,
        &format!("CREATE TABLE {ks}.t (pk int, ck int, v text, PRIMARY KEY (pk, ck))"),
    )
    .await;

    // Syntax errors, unprepared and at prepare time.
    let (err, msg) = query_db_error(&session, "SELEC * FROM system.local").await;
    assert_eq!(err, DbError::SyntaxError, "{msg}");
    assert!(!msg.is_empty());
    let (err, msg) = query_db_error(&session, &format!("SELECT * FROM {ks}.t WHERE")).await;
    assert_eq!(err, DbError::SyntaxError, "{msg}");
    match session.prepare("INSERT INTO nowhere VALUES").await {
        Err(PrepareError::AllAttemptsFailed {
            first_attempt: RequestAttemptError::DbError(DbError::SyntaxError, _),
        }) => {}
        other => panic!("prepare of a syntax error: {other:?}"),
    }

    // Invalid requests.
    for cql in [
        format!("SELECT * FROM {ks}.no_such_table"),
        "SELECT * FROM no_such_keyspace_rs.t".to_string(),
        format!("INSERT INTO {ks}.t (pk, ck, v) VALUES ('text', 1, 'x')"),
        format!("INSERT INTO {ks}.t (pk, v) VALUES (1, 'no clustering key')"),
        format!("SELECT * FROM {ks}.t WHERE v = 'x'"),
        format!("SELECT no_such_column FROM {ks}.t"),
    ] {
        let (err, msg) = query_db_error(&session, &cql).await;
        assert_eq!(err, DbError::Invalid, "{cql}: {msg}");
        assert!(!msg.is_empty());
    }
    match session
        .prepare(format!("SELECT * FROM {ks}.no_such_table WHERE pk = ?"))
        .await
    {
        Err(PrepareError::AllAttemptsFailed {
            first_attempt: RequestAttemptError::DbError(DbError::Invalid, _),
        }) => {}
        other => panic!("prepare against a missing table: {other:?}"),
    }
    // Wrong number of bound values is caught by the driver itself.
    let insert = session
        .prepare(format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (?, ?, ?)"))
        .await
        .expect("prepare");
    assert!(session
        .execute_unpaged(&insert, (1_i32, 2_i32))
        .await
        .is_err());

    // AlreadyExists names the keyspace, and the table where there is one.
    let create_keyspace = format!(
        "CREATE KEYSPACE {ks} WITH replication = \
         {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
    );
    let (err, msg) = query_db_error(&session, &create_keyspace).await;
    assert_eq!(
        err,
        DbError::AlreadyExists {
            keyspace: ks.clone(),
            table: String::new(),
        },
        "{msg}"
    );
    let (err, msg) = query_db_error(
        &session,
        &format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY)"),
    )
    .await;
    assert_eq!(
        err,
        DbError::AlreadyExists {
            keyspace: ks.clone(),
            table: "t".to_string(),
        },
        "{msg}"
    );
    // ... and IF NOT EXISTS makes both a no-op.
    run(
        &session,
        &create_keyspace.replace("CREATE KEYSPACE", "CREATE KEYSPACE IF NOT EXISTS"),
    )
    .await;
    run(
        &session,
        &format!("CREATE TABLE IF NOT EXISTS {ks}.t (pk int PRIMARY KEY)"),
    )
    .await;

    // The session still works after all those errors.
    session
        .execute_unpaged(&insert, (1_i32, 2_i32, "ok"))
        .await
        .expect("insert after errors");

    drop_keyspace(&session, &ks).await;
}

// ---------------------------------------------------------------- 6. batch, TTL, writetime

#[tokio::test(flavor = "multi_thread")]
async fn logged_batch_ttl_and_writetime() {
    let session = connect().await;
    let ks = create_keyspace(&session, "batch").await;
    run(
        &session,
        &format!("CREATE TABLE {ks}.a (pk int, ck int, v text, PRIMARY KEY (pk, ck))"),
    )
    .await;
    run(
        &session,
        &format!("CREATE TABLE {ks}.b (k text PRIMARY KEY, n bigint)"),
    )
    .await;

    let insert_a = session
        .prepare(format!("INSERT INTO {ks}.a (pk, ck, v) VALUES (?, ?, ?)"))
        .await
        .expect("prepare a");
    let insert_b = session
        .prepare(format!("INSERT INTO {ks}.b (k, n) VALUES (?, ?)"))
        .await
        .expect("prepare b");

    // A logged batch over two tables, prepared statements and one unprepared,
    // with a client-side timestamp that every cell gets.
    let batch_timestamp: i64 = 1_700_000_000_000_000;
    let mut batch = Batch::new(BatchType::Logged);
    batch.append_statement(insert_a.clone());
    batch.append_statement(insert_a.clone());
    batch.append_statement(insert_b.clone());
    batch.append_statement(format!("UPDATE {ks}.b SET n = 7 WHERE k = 'unprepared'").as_str());
    batch.set_timestamp(Some(batch_timestamp));
    session
        .batch(
            &batch,
            (
                (1_i32, 1_i32, "one"),
                (1_i32, 2_i32, "two"),
                ("prepared", 42_i64),
                (),
            ),
        )
        .await
        .expect("logged batch");

    let rows: Vec<(i32, String, i64)> = session
        .query_unpaged(
            format!("SELECT ck, v, writetime(v) FROM {ks}.a WHERE pk = 1"),
            &[],
        )
        .await
        .expect("select a")
        .into_rows_result()
        .expect("rows")
        .rows()
        .expect("row type")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(
        rows,
        [
            (1, "one".to_string(), batch_timestamp),
            (2, "two".to_string(), batch_timestamp),
        ]
    );
    let mut b_rows: Vec<(String, i64, i64)> = session
        .query_unpaged(format!("SELECT k, n, writetime(n) FROM {ks}.b"), &[])
        .await
        .expect("select b")
        .into_rows_result()
        .expect("rows")
        .rows()
        .expect("row type")
        .collect::<Result<_, _>>()
        .expect("rows");
    b_rows.sort();
    assert_eq!(
        b_rows,
        [
            ("prepared".to_string(), 42, batch_timestamp),
            ("unprepared".to_string(), 7, batch_timestamp),
        ]
    );

    // An older write loses to the batch; a newer one wins.
    let mut older = insert_a.clone();
    older.set_timestamp(Some(batch_timestamp - 1));
    session
        .execute_unpaged(&older, (1_i32, 1_i32, "older"))
        .await
        .expect("older write");
    let mut newer = insert_a.clone();
    newer.set_timestamp(Some(batch_timestamp + 1));
    session
        .execute_unpaged(&newer, (1_i32, 2_i32, "newer"))
        .await
        .expect("newer write");
    let values: Vec<(String, i64)> = session
        .query_unpaged(
            format!("SELECT v, writetime(v) FROM {ks}.a WHERE pk = 1"),
            &[],
        )
        .await
        .expect("select")
        .into_rows_result()
        .expect("rows")
        .rows()
        .expect("row type")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(
        values,
        [
            ("one".to_string(), batch_timestamp),
            ("newer".to_string(), batch_timestamp + 1),
        ]
    );

    // Without a client timestamp, writetime is the server's clock in microseconds.
    let before_us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64;
    session
        .execute_unpaged(&insert_a, (2_i32, 1_i32, "now"))
        .await
        .expect("insert");
    let (server_writetime,): (i64,) = session
        .query_unpaged(
            format!("SELECT writetime(v) FROM {ks}.a WHERE pk = 2 AND ck = 1"),
            &[],
        )
        .await
        .expect("select")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    let minute_us = 60_000_000;
    assert!(
        (before_us - minute_us..before_us + minute_us).contains(&server_writetime),
        "writetime {server_writetime} far from now {before_us}"
    );

    // USING TTL with a bound TTL and timestamp; ttl() counts down from it.
    let insert_ttl = session
        .prepare(format!(
            "INSERT INTO {ks}.a (pk, ck, v) VALUES (?, ?, ?) USING TTL ? AND TIMESTAMP ?"
        ))
        .await
        .expect("prepare with TTL");
    session
        .execute_unpaged(&insert_ttl, (3_i32, 1_i32, "lasting", 1000_i32, 12_345_i64))
        .await
        .expect("insert with TTL");
    let (ttl, writetime): (Option<i32>, i64) = session
        .query_unpaged(
            format!("SELECT ttl(v), writetime(v) FROM {ks}.a WHERE pk = 3 AND ck = 1"),
            &[],
        )
        .await
        .expect("select ttl")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    let ttl = ttl.expect("a TTL on the cell");
    assert!((990..=1000).contains(&ttl), "ttl {ttl}");
    assert_eq!(writetime, 12_345);

    // A cell without TTL reports null; an expired row is gone.
    let (no_ttl,): (Option<i32>,) = session
        .query_unpaged(
            format!("SELECT ttl(v) FROM {ks}.a WHERE pk = 1 AND ck = 1"),
            &[],
        )
        .await
        .expect("select ttl")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    assert_eq!(no_ttl, None);
    run(
        &session,
        &format!("INSERT INTO {ks}.a (pk, ck, v) VALUES (4, 1, 'brief') USING TTL 1"),
    )
    .await;
    let (count,): (i64,) = session
        .query_unpaged(format!("SELECT COUNT(*) FROM {ks}.a WHERE pk = 4"), &[])
        .await
        .expect("count")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    assert_eq!(count, 1, "row with TTL 1 must be visible at first");
    tokio::time::sleep(Duration::from_millis(2_200)).await;
    let (count,): (i64,) = session
        .query_unpaged(format!("SELECT COUNT(*) FROM {ks}.a WHERE pk = 4"), &[])
        .await
        .expect("count")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    assert_eq!(count, 0, "row with TTL 1 must expire");

    // A logged batch with USING TTL on its statements.
    let mut ttl_batch = Batch::new(BatchType::Logged);
    ttl_batch.append_statement(
        format!("INSERT INTO {ks}.b (k, n) VALUES (?, ?) USING TTL 500").as_str(),
    );
    ttl_batch.append_statement(insert_b.clone());
    let ttl_batch = session
        .prepare_batch(&ttl_batch)
        .await
        .expect("prepare batch");
    session
        .batch(&ttl_batch, (("short", 1_i64), ("long", 2_i64)))
        .await
        .expect("batch with TTL");
    let mut ttls: Vec<(String, Option<i32>)> = session
        .query_unpaged(
            format!("SELECT k, ttl(n) FROM {ks}.b WHERE k IN ('short', 'long')"),
            &[],
        )
        .await
        .expect("select ttls")
        .into_rows_result()
        .expect("rows")
        .rows()
        .expect("row type")
        .collect::<Result<_, _>>()
        .expect("rows");
    ttls.sort();
    assert_eq!(ttls[0], ("long".to_string(), None));
    assert_eq!(ttls[1].0, "short");
    assert!(
        matches!(ttls[1].1, Some(t) if (490..=500).contains(&t)),
        "{ttls:?}"
    );

    drop_keyspace(&session, &ks).await;
}

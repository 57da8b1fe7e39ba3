//! `system.size_estimates` and `system.table_estimates` of a whole node
//! (`Service`, RocksDB in a temporary directory) after writes.

use rocksandra_server::config::Config;
use rocksandra_wire::{ProtocolVersion, ResultBody};

mod common;
use common::{expect_result, query, Client, Node};

fn bigint(cell: &Option<bytes::Bytes>) -> i64 {
    let bytes = cell.as_ref().expect("not null");
    i64::from_be_bytes(bytes[..].try_into().expect("8 bytes"))
}

async fn rows(client: &mut Client, cql: &str) -> Vec<Vec<Option<bytes::Bytes>>> {
    match expect_result(client.request(9, query(cql)).await) {
        ResultBody::Rows(rows) => rows.rows,
        other => panic!("expected rows, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn estimates_cover_the_ring_and_count_the_partitions() {
    let config = Config {
        prometheus_port: None,
        ..Config::default()
    };
    let node = Node::start(config).await;
    let mut client = Client::ready(node.native, ProtocolVersion::V4).await;
    for statement in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE ks.t (k int PRIMARY KEY, v text)",
    ] {
        expect_result(client.request(2, query(statement)).await);
    }
    for k in 0..500 {
        let insert = format!("INSERT INTO ks.t (k, v) VALUES ({k}, 'value')");
        expect_result(client.request(3, query(&insert)).await);
    }
    let size = rows(
        &mut client,
        "SELECT range_start, range_end, partitions_count FROM system.size_estimates \
         WHERE keyspace_name = 'ks' AND table_name = 't'",
    )
    .await;
    assert!(!size.is_empty());
    let total: i64 = size.iter().map(|r| bigint(&r[2])).sum();
    assert!(
        (450..=550).contains(&total),
        "{total} partitions estimated for 500"
    );
    // The ranges are unwrapped and end where the next begins: the ring once.
    let text = |c: &Option<bytes::Bytes>| -> i64 {
        let bytes = c.as_ref().expect("not null");
        std::str::from_utf8(bytes)
            .expect("utf8")
            .parse()
            .expect("a token")
    };
    let mut ranges: Vec<(i64, i64)> = size.iter().map(|r| (text(&r[0]), text(&r[1]))).collect();
    ranges.sort_unstable();
    assert_eq!(ranges[0].0, i64::MIN);
    assert_eq!(
        ranges.last().map(|r| r.1),
        Some(i64::MIN),
        "the last range ends at the top"
    );
    assert!(ranges.windows(2).all(|w| w[0].1 == w[1].0), "{ranges:?}");
    let table = rows(
        &mut client,
        "SELECT range_type FROM system.table_estimates WHERE keyspace_name = 'ks'",
    )
    .await;
    assert_eq!(table.len(), 2 * size.len(), "primary and local_primary");
    node.stop().await;
}

//! The final comparison: per table, the same scan on both sides (every
//! row's keys, values and write times; not TTLs, which count down) folded
//! into a row count and an order-independent checksum.

use bytes::Bytes;
use rocksandra_wire::Value;

use super::client::CqlClient;
use super::table::Table;
use super::values::bigint;
use super::MigrateError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Digest {
    pub rows: u64,
    pub checksum: u64,
}

/// Scans the whole table (the ring `(i64::MIN, i64::MAX]`).
pub async fn digest(
    client: &mut CqlClient,
    table: &Table,
    page_size: i32,
) -> Result<Digest, MigrateError> {
    let scan = table.range_scan();
    let mut digest = Digest::default();
    let mut paging_state = None;
    loop {
        let bounds = vec![
            Value::Bytes(bigint(i64::MIN)),
            Value::Bytes(bigint(i64::MAX)),
        ];
        let page = client.page(&scan, bounds, page_size, paging_state).await?;
        for cells in &page.rows.rows {
            digest.rows += 1;
            digest.checksum = digest.checksum.wrapping_add(row_hash(table, cells));
        }
        match page.next {
            Some(next) => paging_state = Some(next),
            None => return Ok(digest),
        }
    }
}

/// FNV-1a over each cell's length and bytes, TTL cells left out, then a
/// final mix so that summing row hashes does not cancel structure.
pub fn row_hash(table: &Table, cells: &[Option<Bytes>]) -> u64 {
    let keys = table.key_count();
    let width = table.cells_per_data_column();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (i, cell) in cells.iter().enumerate() {
        let is_ttl = i >= keys && width == 3 && (i - keys) % width == 2;
        if is_ttl {
            continue;
        }
        match cell {
            Some(bytes) => {
                feed(&(bytes.len() as i32).to_be_bytes());
                feed(bytes);
            }
            None => feed(&(-1i32).to_be_bytes()),
        }
    }
    // splitmix64's finalizer.
    let mut z = hash;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::table::{Column, ColumnKind, Storage};
    use crate::migrate::values::int;

    #[test]
    fn the_row_hash_sees_values_and_write_times_but_not_ttls() {
        let column = |name: &str, kind, type_text: &str| Column {
            name: name.into(),
            kind,
            position: 0,
            type_text: type_text.into(),
            storage: Storage::from_type(type_text).expect("supported"),
            fields: Vec::new(),
        };
        let table = Table::new(
            "ks",
            "t",
            vec![
                column("k", ColumnKind::PartitionKey, "int"),
                column("v", ColumnKind::Regular, "int"),
            ],
        )
        .expect("supported");
        let row = |v: i32, write_time: i64, ttl: Option<i32>| {
            vec![
                Some(int(1)),
                Some(int(v)),
                Some(bigint(write_time)),
                ttl.map(int),
            ]
        };
        let base = row_hash(&table, &row(5, 10, None));
        assert_eq!(base, row_hash(&table, &row(5, 10, Some(100))));
        assert_ne!(base, row_hash(&table, &row(6, 10, None)));
        assert_ne!(base, row_hash(&table, &row(5, 11, None)));
    }
}

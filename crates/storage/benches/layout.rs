//! Criterion benches for the byte layout and reconciliation, without RocksDB:
//! key encode/decode and the merge operator's work on stored values.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rocksandra_data::LocalTime;
use rocksandra_data::{CqlType, NativeType, Token};
use rocksandra_storage::cell::{Cell, ColumnId, LivenessInfo, RowState};
use rocksandra_storage::layout::keys::{self, ClusteringColumn};
use rocksandra_storage::layout::values::{decode_row, encode_row};
use rocksandra_storage::merge::{filter_entry, merge_entry};

fn columns() -> Vec<ClusteringColumn> {
    vec![
        ClusteringColumn {
            ty: CqlType::Native(NativeType::Bigint),
            descending: false,
        },
        ClusteringColumn {
            ty: CqlType::Native(NativeType::Text),
            descending: true,
        },
    ]
}

/// A row of the benchmark's `emp` shape: a marker and three text cells.
fn emp_row(timestamp: i64) -> RowState {
    RowState {
        liveness: Some(LivenessInfo::new(timestamp, 0, 0)),
        cells: (1..=3)
            .map(|c| Cell::live(ColumnId(c), timestamp, vec![b'x'; 300]))
            .collect(),
        ..Default::default()
    }
}

fn keys_bench(c: &mut Criterion) {
    let columns = columns();
    let partition_key = b"employee-000123456".to_vec();
    let clustering = vec![42i64.to_be_bytes().to_vec(), b"engineering".to_vec()];
    let token = Token::murmur3(&partition_key);
    c.bench_function("key/encode row key", |b| {
        b.iter(|| {
            let prefix = keys::partition_prefix(black_box(token), black_box(&partition_key));
            keys::row_key(&prefix, &columns, black_box(&clustering))
        })
    });
    let prefix = keys::partition_prefix(token, &partition_key);
    let key = keys::row_key(&prefix, &columns, &clustering).expect("encode");
    c.bench_function("key/decode row key", |b| {
        b.iter(|| {
            let (_, _, len) = keys::split_partition(black_box(&key)).expect("split");
            keys::decode_after_prefix(&columns, &key[len..]).expect("decode")
        })
    });
    c.bench_function("key/murmur3 token of an 18-byte key", |b| {
        b.iter(|| Token::murmur3(black_box(&partition_key)))
    });
}

fn merge_bench(c: &mut Criterion) {
    let stored = encode_row(&emp_row(1));
    let update = encode_row(&emp_row(2));
    c.bench_function("merge/stored row + one full-row operand", |b| {
        b.iter(|| merge_entry(Some(black_box(&stored)), [update.as_slice()]).expect("merge"))
    });
    let operands: Vec<Vec<u8>> = (2..12).map(|t| encode_row(&emp_row(t))).collect();
    c.bench_function("merge/stored row + ten operands", |b| {
        b.iter(|| {
            merge_entry(
                Some(black_box(&stored)),
                operands.iter().map(|o| o.as_slice()),
            )
            .expect("merge")
        })
    });
    c.bench_function("value/decode a 1 KB row", |b| {
        b.iter(|| decode_row(black_box(&stored)).expect("decode"))
    });
    let prefix = keys::partition_prefix(Token(7), b"k");
    let key = keys::row_key(
        &prefix,
        &columns(),
        &[1i64.to_be_bytes().to_vec(), b"a".to_vec()],
    )
    .expect("encode");
    c.bench_function("filter/compaction filter on a live 1 KB row", |b| {
        b.iter(|| filter_entry(&key, black_box(&stored), LocalTime(1_700_000_000), 864_000))
    });
}

criterion_group!(benches, keys_bench, merge_bench);
criterion_main!(benches);

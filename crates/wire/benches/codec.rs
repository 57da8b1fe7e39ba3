//! Criterion benches for the hot codec paths: frame cutting, a Rows result
//! encode, and v5 segment encode/decode with and without LZ4.

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_wire::*;

fn rows_response(row_count: usize) -> ResponseEnvelope {
    let columns = ["id", "name", "value"]
        .iter()
        .map(|name| ColumnSpec {
            table: TableSpec {
                keyspace: "ks".into(),
                table: "t".into(),
            },
            name: (*name).into(),
            cql_type: CqlType::Native(NativeType::Text),
        })
        .collect::<Vec<_>>();
    let cell = Some(Bytes::from_static(b"some cell value"));
    let rows = Rows {
        metadata: RowsMetadata {
            columns: ColumnsMetadata::Specs(columns.into()),
            paging_state: None,
            new_metadata_id: None,
        },
        rows: vec![vec![cell.clone(), cell.clone(), cell]; row_count],
    };
    ResponseEnvelope::new(
        ProtocolVersion::V5,
        1,
        Response::Result(ResultBody::Rows(rows)),
    )
}

fn bench_rows_encode(c: &mut Criterion) {
    let response = rows_response(1000);
    c.bench_function("encode_rows_1000x3", |b| {
        b.iter(|| encode_response(&response, None))
    });
}

fn bench_segments(c: &mut Criterion) {
    let frame = match encode_response(&rows_response(1000), None) {
        Ok(frame) => frame,
        Err(e) => panic!("bench frame must encode: {e}"),
    };
    let mut group = c.benchmark_group("segments");
    group.throughput(Throughput::Bytes(frame.encoded_bytes() as u64));
    for (name, compression) in [
        ("plain", SegmentCompression::None),
        ("lz4", SegmentCompression::Lz4),
    ] {
        let codec = SegmentCodec::new(compression);
        let mut wire = BytesMut::new();
        if let Err(e) = codec.encode_frames(std::slice::from_ref(&frame), &mut wire) {
            panic!("bench segments must encode: {e}");
        }
        group.bench_function(format!("encode_{name}"), |b| {
            b.iter(|| {
                let mut out = BytesMut::new();
                codec.encode_frames(std::slice::from_ref(&frame), &mut out)
            })
        });
        group.bench_function(format!("decode_{name}"), |b| {
            b.iter(|| {
                let mut decoder = SegmentedFrameDecoder::new(compression, Limits::default());
                let mut buf = wire.clone();
                decoder.decode(&mut buf)
            })
        });
    }
    group.finish();
}

fn bench_frame_decode(c: &mut Criterion) {
    let frame = match encode_response(&rows_response(10), None) {
        Ok(frame) => frame.to_bytes(),
        Err(e) => panic!("bench frame must encode: {e}"),
    };
    let decoder = FrameDecoder::new(Limits::default());
    c.bench_function("frame_decode_and_message", |b| {
        b.iter(|| {
            let mut buf = BytesMut::from(&frame[..]);
            decoder
                .decode(&mut buf)
                .map(|f| f.map(|f| decode_response(&f, None, Limits::default())))
        })
    });
}

criterion_group!(
    benches,
    bench_rows_encode,
    bench_segments,
    bench_frame_decode
);
criterion_main!(benches);

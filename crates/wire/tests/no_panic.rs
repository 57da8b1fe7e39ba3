//! Decoding never panics: arbitrary and mutated bytes through every decoder.

use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;
use rocksandra_wire::fuzz::decode_all;
use rocksandra_wire::*;

/// A valid v5 QUERY frame, to mutate: corruption deep inside a message
/// reaches more code than random bytes do.
fn query_frame_bytes() -> Vec<u8> {
    let mut params = QueryParameters::new(Consistency::LocalQuorum);
    params.values = BoundValues::Named(vec![("k".into(), Value::Bytes(Bytes::from_static(b"v")))]);
    params.page_size = Some(100);
    params.keyspace = Some("ks".into());
    let envelope = RequestEnvelope {
        version: ProtocolVersion::V5,
        stream: 1,
        tracing: false,
        custom_payload: None,
        request: Request::Query(Query {
            query: "SELECT * FROM t WHERE k = :k".into(),
            params,
        }),
    };
    match encode_request(&envelope, None) {
        Ok(frame) => frame.to_bytes().to_vec(),
        Err(e) => panic!("test frame must encode: {e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(data in vec(any::<u8>(), 0..512)) {
        decode_all(&data);
    }

    #[test]
    fn mutated_frames_never_panic(flips in vec((any::<usize>(), any::<u8>()), 1..6)) {
        let mut data = query_frame_bytes();
        for (at, byte) in flips {
            let len = data.len();
            data[at % len] = byte;
        }
        decode_all(&data);
    }
}

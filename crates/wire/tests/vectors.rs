//! Hand-checked byte vectors for whole messages, written out from the spec.

use bytes::{Bytes, BytesMut};
use rocksandra_wire::*;

fn decode_one(bytes: &[u8]) -> Frame {
    let mut buf = BytesMut::from(bytes);
    match FrameDecoder::new(Limits::default()).decode(&mut buf) {
        Ok(Some(frame)) if buf.is_empty() => frame,
        other => panic!("expected exactly one frame, got {other:?}"),
    }
}

#[test]
fn startup_request_decodes() {
    let mut bytes = vec![0x04, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x16];
    bytes.extend_from_slice(&[0x00, 0x01, 0x00, 0x0b]);
    bytes.extend_from_slice(b"CQL_VERSION");
    bytes.extend_from_slice(&[0x00, 0x05]);
    bytes.extend_from_slice(b"3.0.0");
    let request = decode_request(&decode_one(&bytes), None, Limits::default()).expect("decodes");
    assert_eq!(request.version, ProtocolVersion::V4);
    assert_eq!(request.stream, 0);
    let Request::Startup(options) = request.request else {
        panic!("not a STARTUP: {:?}", request.request);
    };
    assert_eq!(
        options.get("CQL_VERSION").map(String::as_str),
        Some("3.0.0")
    );
    let again = encode_request(
        &RequestEnvelope {
            request: Request::Startup(options),
            ..request
        },
        None,
    )
    .expect("encodes");
    assert_eq!(&again.to_bytes()[..], &bytes[..]);
}

#[test]
fn v5_query_with_unset_value_and_keyspace_decodes() {
    let query = b"INSERT INTO t (k, v) VALUES (?, ?)";
    let mut body = Vec::new();
    body.extend_from_slice(&(query.len() as i32).to_be_bytes());
    body.extend_from_slice(query);
    body.extend_from_slice(&[0x00, 0x06]); // LOCAL_QUORUM
    body.extend_from_slice(&[0x00, 0x00, 0x00, 0x81]); // values | keyspace, an [int] in v5
    body.extend_from_slice(&[0x00, 0x02]); // two values
    body.extend_from_slice(&[0x00, 0x00, 0x00, 0x01, 0x2a]); // 0x2a
    body.extend_from_slice(&[0xff, 0xff, 0xff, 0xfe]); // unset
    body.extend_from_slice(&[0x00, 0x02, b'k', b's']);
    let mut bytes = vec![0x05, 0x00, 0x00, 0x09, 0x07];
    bytes.extend_from_slice(&(body.len() as u32).to_be_bytes());
    bytes.extend_from_slice(&body);
    let request = decode_request(&decode_one(&bytes), None, Limits::default()).expect("decodes");
    let Request::Query(q) = request.request else {
        panic!("not a QUERY");
    };
    assert_eq!(q.params.consistency, Consistency::LocalQuorum);
    assert_eq!(
        q.params.values,
        BoundValues::Positional(vec![
            Value::Bytes(Bytes::from_static(&[0x2a])),
            Value::Unset
        ])
    );
    assert_eq!(q.params.keyspace.as_deref(), Some("ks"));
    assert_eq!(q.params.page_size, None);
}

#[test]
fn unavailable_error_encodes_as_the_spec_says() {
    let error = ErrorResponse::new(
        ErrorKind::Unavailable {
            consistency: Consistency::Quorum,
            required: 2,
            alive: 1,
        },
        "no",
    );
    let envelope = ResponseEnvelope::new(ProtocolVersion::V4, 5, Response::Error(error));
    let frame = encode_response(&envelope, None).expect("encodes");
    let expected = [
        0x84, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x12, // header: 18-byte body
        0x00, 0x00, 0x10, 0x00, // code 0x1000
        0x00, 0x02, b'n', b'o', // message
        0x00, 0x04, // QUORUM
        0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, // required, alive
    ];
    assert_eq!(&frame.to_bytes()[..], &expected[..]);
}

#[test]
fn v5_cas_write_timeout_carries_contentions() {
    let error = ErrorResponse::new(
        ErrorKind::WriteTimeout {
            consistency: Consistency::Serial,
            received: 0,
            block_for: 1,
            write_type: WriteType::Cas,
            contentions: Some(3),
        },
        "",
    );
    let envelope = ResponseEnvelope::new(ProtocolVersion::V5, 0, Response::Error(error.clone()));
    let bytes = encode_response(&envelope, None)
        .expect("encodes")
        .to_bytes();
    assert_eq!(
        &bytes[bytes.len() - 7..],
        &[0x00, 0x03, b'C', b'A', b'S', 0x00, 0x03]
    );
    let v4 = ResponseEnvelope::new(ProtocolVersion::V4, 0, Response::Error(error));
    let bytes = encode_response(&v4, None).expect("encodes").to_bytes();
    assert_eq!(&bytes[bytes.len() - 5..], &[0x00, 0x03, b'C', b'A', b'S']);
}

#[test]
fn wire_errors_map_to_the_error_to_answer() {
    let too_big = WireError::FrameTooBig {
        stream: 3,
        frame_bytes: 100,
        max_frame_bytes: 10,
    };
    let answer = ErrorResponse::from_wire_error(&too_big);
    assert_eq!(answer.kind, ErrorKind::Invalid);
    assert_eq!(
        answer.message,
        "Request is too big: length 100 exceeds maximum allowed length 10."
    );
    assert!(too_big.is_fatal());
    let truncated = WireError::Truncated {
        what: "query",
        needed_bytes: 4,
        remaining_bytes: 1,
    };
    assert_eq!(
        ErrorResponse::from_wire_error(&truncated).kind,
        ErrorKind::ProtocolError
    );
    assert!(!truncated.is_fatal());
}

#[test]
fn requests_in_the_wrong_direction_are_rejected() {
    let frame = decode_one(&[0x84, 0, 0, 1, 0x02, 0, 0, 0, 0]);
    assert!(matches!(
        decode_request(&frame, None, Limits::default()),
        Err(WireError::WrongDirection { .. })
    ));
    let frame = decode_one(&[0x04, 0, 0, 1, 0x04, 0, 0, 0, 0]);
    assert_eq!(
        decode_request(&frame, None, Limits::default()),
        Err(WireError::UnknownOpcode(4))
    );
}

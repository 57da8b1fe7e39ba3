//! Protocol v3: what it lacks against v4, and how Cassandra 5.0 writes and
//! reads it (unset values, partition key indexes, v4's native types, the
//! error codes and schema change targets v4 added, warnings, payloads).

use bytes::{Bytes, BytesMut};
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_wire::primitives::Reader;
use rocksandra_wire::types::{put_type, read_type};
use rocksandra_wire::*;

const V3: ProtocolVersion = ProtocolVersion::V3;

fn response_frame(version: ProtocolVersion, response: Response) -> Frame {
    let mut envelope = ResponseEnvelope::new(version, 1, response);
    envelope.warnings = vec!["careful".to_string()];
    encode_response(&envelope, None).expect("encodes")
}

fn round_trip(version: ProtocolVersion, response: Response) -> ResponseEnvelope {
    let frame = response_frame(version, response);
    decode_response(&frame, None, Limits::default()).expect("decodes")
}

fn error_after(version: ProtocolVersion, kind: ErrorKind) -> ErrorResponse {
    let response = Response::Error(ErrorResponse::new(kind, "it failed"));
    match round_trip(version, response).response {
        Response::Error(e) => e,
        other => panic!("not an error: {other:?}"),
    }
}

fn query_with_values(version: ProtocolVersion, values: &[u8]) -> WireResult<RequestEnvelope> {
    let mut body = BytesMut::new();
    body.extend_from_slice(&[0, 0, 0, 8]);
    body.extend_from_slice(b"SELECT 1");
    body.extend_from_slice(&[0, 1, 0x01]); // consistency ONE, flag VALUES
    body.extend_from_slice(values);
    let frame = Frame::new(
        version,
        FrameFlags::default(),
        3,
        Opcode::Query,
        body.freeze(),
    )
    .expect("frame");
    decode_request(&frame, None, Limits::default())
}

fn values_of(envelope: RequestEnvelope) -> Vec<Value> {
    match envelope.request {
        Request::Query(q) => match q.params.values {
            BoundValues::Positional(values) => values,
            other => panic!("named values: {other:?}"),
        },
        other => panic!("not a query: {other:?}"),
    }
}

#[test]
fn every_negative_value_length_is_null_before_v4() {
    // Two values: length -2 (unset from v4 on) and -7 (an error from v4 on).
    let values = [0, 2, 0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff, 0xf9];
    let v3 = values_of(query_with_values(V3, &values).expect("v3 reads it"));
    assert_eq!(v3, vec![Value::Null, Value::Null]);
    assert!(query_with_values(ProtocolVersion::V4, &values).is_err());
    let unset = [0, 1, 0xff, 0xff, 0xff, 0xfe];
    let v4 = values_of(query_with_values(ProtocolVersion::V4, &unset).expect("v4"));
    assert_eq!(v4, vec![Value::Unset]);
}

#[test]
fn v4_native_types_are_custom_types_in_v3() {
    let cases = [
        (
            NativeType::Date,
            "org.apache.cassandra.db.marshal.SimpleDateType",
        ),
        (NativeType::Time, "org.apache.cassandra.db.marshal.TimeType"),
        (
            NativeType::Smallint,
            "org.apache.cassandra.db.marshal.ShortType",
        ),
        (
            NativeType::Tinyint,
            "org.apache.cassandra.db.marshal.ByteType",
        ),
        (
            NativeType::Duration,
            "org.apache.cassandra.db.marshal.DurationType",
        ),
    ];
    for (native, class) in cases {
        let mut out = BytesMut::new();
        put_type(&mut out, &CqlType::Native(native), V3).expect("encodes");
        let mut expected = BytesMut::new();
        expected.extend_from_slice(&[0, 0, 0, class.len() as u8]);
        expected.extend_from_slice(class.as_bytes());
        assert_eq!(out, expected, "{native:?}");
    }
    let mut out = BytesMut::new();
    put_type(&mut out, &CqlType::Native(NativeType::Int), V3).expect("encodes");
    assert_eq!(&out[..], &[0, 0x09]);
    let mut reader = Reader::new(out.freeze());
    assert_eq!(
        read_type(&mut reader).expect("reads"),
        CqlType::Native(NativeType::Int)
    );
}

#[test]
fn prepared_metadata_has_no_partition_key_indexes_in_v3() {
    let spec = |name: &str| ColumnSpec {
        table: TableSpec {
            keyspace: "ks".into(),
            table: "t".into(),
        },
        name: name.into(),
        cql_type: CqlType::Native(NativeType::Int),
    };
    let prepared = || Prepared {
        id: Bytes::from_static(b"id"),
        result_metadata_id: None,
        bind_metadata: PreparedMetadata {
            pk_indexes: vec![0],
            columns: vec![spec("k"), spec("v")],
        },
        result_metadata: RowsMetadata {
            columns: ColumnsMetadata::Specs(vec![spec("v")].into()),
            paging_state: None,
            new_metadata_id: None,
        },
    };
    let result = || Response::Result(ResultBody::Prepared(prepared()));
    let v4 = response_frame(ProtocolVersion::V4, result());
    let v3 = response_frame(V3, result());
    // v4's body: the warning list, then the same bytes plus the key count
    // and its one index (4 + 2 bytes).
    let warning_bytes = 2 + 2 + "careful".len();
    assert_eq!(v3.body.len() + 6 + warning_bytes, v4.body.len());
    match round_trip(V3, result()).response {
        Response::Result(ResultBody::Prepared(p)) => {
            assert!(p.bind_metadata.pk_indexes.is_empty());
            assert_eq!(p.bind_metadata.columns.len(), 2);
            assert_eq!(p.result_metadata.column_count(), 1);
        }
        other => panic!("not prepared: {other:?}"),
    }
}

#[test]
fn v3_responses_carry_no_warnings() {
    let v3 = round_trip(V3, Response::Ready);
    assert!(v3.warnings.is_empty());
    assert!(!response_frame(V3, Response::Ready).header.flags.warning);
    let v4 = round_trip(ProtocolVersion::V4, Response::Ready);
    assert_eq!(v4.warnings, vec!["careful".to_string()]);
}

#[test]
fn a_v3_request_with_a_custom_payload_is_a_protocol_error() {
    let mut body = BytesMut::new();
    body.extend_from_slice(&[0, 0]); // an empty payload map
    let flags = FrameFlags {
        custom_payload: true,
        ..FrameFlags::default()
    };
    let frame = Frame::new(V3, flags, 1, Opcode::Options, body.freeze()).expect("frame");
    let error = decode_request(&frame, None, Limits::default()).expect_err("refused");
    assert_eq!(
        error.to_string(),
        "Received frame with CUSTOM_PAYLOAD flag for native protocol version < 4"
    );
}

fn failures() -> Failures {
    Failures {
        num_failures: 1,
        reasons: Vec::new(),
    }
}

#[test]
fn failures_are_timeouts_before_v4() {
    let read = ErrorKind::ReadFailure {
        consistency: Consistency::Quorum,
        received: 1,
        block_for: 2,
        failures: failures(),
        data_present: true,
    };
    let expected = ErrorKind::ReadTimeout {
        consistency: Consistency::Quorum,
        received: 1,
        block_for: 2,
        data_present: true,
    };
    assert_eq!(error_after(V3, read.clone()).kind, expected);
    assert_eq!(error_after(ProtocolVersion::V4, read.clone()).kind, read);
    let write = ErrorKind::WriteFailure {
        consistency: Consistency::One,
        received: 0,
        block_for: 1,
        failures: failures(),
        write_type: WriteType::Simple,
    };
    let e = error_after(V3, write);
    assert_eq!(e.kind.code(), 0x1100, "WRITE_TIMEOUT");
    assert_eq!(e.message, "it failed");
}

#[test]
fn function_failures_are_invalid_requests_before_v4() {
    let kind = ErrorKind::FunctionFailure {
        keyspace: "ks".into(),
        function: "f".into(),
        arg_types: vec!["int".into()],
    };
    let e = error_after(V3, kind);
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert_eq!(e.message, "ERROR FUNCTION_FAILURE: it failed");
}

#[test]
fn an_unknown_cas_outcome_is_a_cas_write_timeout_before_v5() {
    let kind = ErrorKind::CasWriteUnknown {
        consistency: Consistency::Serial,
        received: 1,
        block_for: 2,
    };
    for version in [V3, ProtocolVersion::V4] {
        match error_after(version, kind.clone()).kind {
            ErrorKind::WriteTimeout {
                write_type,
                received,
                block_for,
                ..
            } => assert_eq!((write_type, received, block_for), (WriteType::Cas, 1, 2)),
            other => panic!("{version:?}: {other:?}"),
        }
    }
    assert_eq!(error_after(ProtocolVersion::V5, kind.clone()).kind, kind);
}

#[test]
fn function_schema_changes_are_keyspace_updates_in_v3() {
    let change = |version| {
        let target = SchemaChangeTarget::Function {
            keyspace: "ks".into(),
            name: "f".into(),
            arg_types: vec!["int".into()],
        };
        let change = SchemaChange {
            change_type: SchemaChangeType::Created,
            target,
        };
        match round_trip(version, Response::Event(Event::SchemaChange(change))).response {
            Response::Event(Event::SchemaChange(c)) => c,
            other => panic!("not a schema change: {other:?}"),
        }
    };
    let v3 = change(V3);
    assert_eq!(v3.change_type, SchemaChangeType::Updated);
    assert_eq!(
        v3.target,
        SchemaChangeTarget::Keyspace {
            keyspace: "ks".into()
        }
    );
    assert_eq!(
        change(ProtocolVersion::V4).change_type,
        SchemaChangeType::Created
    );
}

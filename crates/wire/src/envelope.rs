//! Frame <-> message: the body prefixes set by header flags (tracing id,
//! warnings, custom payload), v4 body compression, and the direction checks.

use bytes::{BufMut, Bytes, BytesMut};

use crate::compression::BodyCompression;
use crate::error::{WireError, WireResult};
use crate::frame::{Direction, Frame, FrameFlags, ProtocolVersion};
use crate::limits::{Limits, FRAME_HEADER_BYTES};
use crate::primitives::{put_bytes_map, put_string_list, BytesMap, Reader};
use crate::request::Request;
use crate::response::Response;

/// A decoded request with what its frame header said about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestEnvelope {
    pub version: ProtocolVersion,
    pub stream: i16,
    /// The client asks for tracing (the response then carries a tracing id).
    pub tracing: bool,
    pub custom_payload: Option<BytesMap>,
    pub request: Request,
}

/// A response with its optional body prefixes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseEnvelope {
    pub version: ProtocolVersion,
    pub stream: i16,
    pub tracing_id: Option<[u8; 16]>,
    /// Warnings for the client; none means no warning flag.
    pub warnings: Vec<String>,
    pub custom_payload: Option<BytesMap>,
    pub response: Response,
}

impl ResponseEnvelope {
    /// A response with no tracing, warnings or payload.
    pub fn new(version: ProtocolVersion, stream: i16, response: Response) -> ResponseEnvelope {
        ResponseEnvelope {
            version,
            stream,
            tracing_id: None,
            warnings: Vec::new(),
            custom_payload: None,
            response,
        }
    }
}

fn check_direction(frame: &Frame, expected: Direction) -> WireResult<()> {
    if frame.header.direction != expected {
        return Err(WireError::WrongDirection {
            opcode: frame.header.opcode_byte,
            expected: match expected {
                Direction::Request => "REQUEST",
                Direction::Response => "RESPONSE",
            },
        });
    }
    Ok(())
}

/// The body of a frame, decompressed when the compression flag is set.
fn plain_body(
    frame: &Frame,
    compression: Option<BodyCompression>,
    limits: Limits,
) -> WireResult<Bytes> {
    if !frame.header.flags.compression {
        return Ok(frame.body.clone());
    }
    let compression = compression.ok_or(WireError::UnexpectedCompression)?;
    let body = compression.decompress(&frame.body, limits.max_frame_bytes)?;
    Ok(Bytes::from(body))
}

/// Compresses a body when a compression is given, setting the flag.
fn finish_body(
    body: BytesMut,
    flags: &mut FrameFlags,
    compression: Option<BodyCompression>,
) -> WireResult<Bytes> {
    match compression {
        None => Ok(body.freeze()),
        Some(c) => {
            flags.compression = true;
            Ok(Bytes::from(c.compress(&body)?))
        }
    }
}

/// Decodes a request frame. `compression` is the v4 body compression
/// negotiated by STARTUP (always `None` in v5, where segments compress).
pub fn decode_request(
    frame: &Frame,
    compression: Option<BodyCompression>,
    limits: Limits,
) -> WireResult<RequestEnvelope> {
    check_direction(frame, Direction::Request)?;
    let opcode = frame.header.opcode()?;
    let mut r = Reader::new(plain_body(frame, compression, limits)?);
    let custom_payload = if frame.header.flags.custom_payload {
        if frame.header.version < ProtocolVersion::V4 {
            return Err(WireError::CustomPayloadBeforeV4);
        }
        Some(r.bytes_map("custom payload")?)
    } else {
        None
    };
    let request = Request::decode_body(opcode, &mut r, frame.header.version)?;
    Ok(RequestEnvelope {
        version: frame.header.version,
        stream: frame.header.stream,
        tracing: frame.header.flags.tracing,
        custom_payload,
        request,
    })
}

/// Encodes a request into a frame (client side; used by tests).
pub fn encode_request(
    envelope: &RequestEnvelope,
    compression: Option<BodyCompression>,
) -> WireResult<Frame> {
    let mut flags = FrameFlags {
        tracing: envelope.tracing,
        custom_payload: envelope.custom_payload.is_some(),
        ..FrameFlags::default()
    };
    let mut body = BytesMut::new();
    if let Some(payload) = &envelope.custom_payload {
        put_bytes_map(&mut body, "custom payload", payload)?;
    }
    envelope.request.encode_body(&mut body, envelope.version)?;
    let body = finish_body(body, &mut flags, compression)?;
    let opcode = envelope.request.opcode();
    Frame::new(envelope.version, flags, envelope.stream, opcode, body)
}

/// Encodes a response into a frame. `compression` is the v4 body
/// compression, if one was negotiated (`None` in v5).
pub fn encode_response(
    envelope: &ResponseEnvelope,
    compression: Option<BodyCompression>,
) -> WireResult<Frame> {
    let mut flags = response_flags(envelope);
    let mut body = BytesMut::new();
    put_response_body(envelope, &mut body)?;
    let body = finish_body(body, &mut flags, compression)?;
    let opcode = envelope.response.opcode();
    Frame::new(envelope.version, flags, envelope.stream, opcode, body)
}

/// `encode_response` of an uncompressed frame, appended to `out` with its
/// header: the body is written in place, without a buffer of its own. On
/// an error `out` is left as it was.
pub fn encode_response_into(envelope: &ResponseEnvelope, out: &mut BytesMut) -> WireResult<()> {
    let start = out.len();
    out.put_bytes(0, FRAME_HEADER_BYTES);
    let header = put_response_body(envelope, out).and_then(|()| {
        let body_bytes = out.len() - start - FRAME_HEADER_BYTES;
        let flags = response_flags(envelope);
        let opcode = envelope.response.opcode();
        Frame::header_of(envelope.version, flags, envelope.stream, opcode, body_bytes)
    });
    match header {
        Ok(header) => {
            let mut encoded = BytesMut::with_capacity(FRAME_HEADER_BYTES);
            header.encode(&mut encoded);
            out[start..start + FRAME_HEADER_BYTES].copy_from_slice(&encoded);
            Ok(())
        }
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}

fn response_flags(envelope: &ResponseEnvelope) -> FrameFlags {
    FrameFlags {
        tracing: envelope.tracing_id.is_some(),
        warning: !warnings(envelope).is_empty(),
        custom_payload: custom_payload(envelope).is_some(),
        ..FrameFlags::default()
    }
}

/// The warnings a response carries: none before v4, which brought them.
fn warnings(envelope: &ResponseEnvelope) -> &[String] {
    if envelope.version < ProtocolVersion::V4 {
        return &[];
    }
    &envelope.warnings
}

/// The custom payload a response carries: none before v4.
fn custom_payload(envelope: &ResponseEnvelope) -> Option<&BytesMap> {
    if envelope.version < ProtocolVersion::V4 {
        return None;
    }
    envelope.custom_payload.as_ref()
}

/// The body of a response before any compression: the optional tracing id,
/// warnings and custom payload (as its flags announce), then the message.
fn put_response_body(envelope: &ResponseEnvelope, body: &mut BytesMut) -> WireResult<()> {
    if let Some(id) = &envelope.tracing_id {
        body.put_slice(id);
    }
    let warnings = warnings(envelope);
    if !warnings.is_empty() {
        put_string_list(body, "warnings", warnings)?;
    }
    if let Some(payload) = custom_payload(envelope) {
        put_bytes_map(body, "custom payload", payload)?;
    }
    envelope.response.encode_body(body, envelope.version)
}

/// Decodes a response frame (client side; used by tests).
pub fn decode_response(
    frame: &Frame,
    compression: Option<BodyCompression>,
    limits: Limits,
) -> WireResult<ResponseEnvelope> {
    check_direction(frame, Direction::Response)?;
    let opcode = frame.header.opcode()?;
    let flags = frame.header.flags;
    let mut r = Reader::new(plain_body(frame, compression, limits)?);
    let tracing_id = if flags.tracing {
        Some(r.uuid("tracing id")?)
    } else {
        None
    };
    let warnings = if flags.warning {
        r.string_list("warnings")?
    } else {
        Vec::new()
    };
    let custom_payload = if flags.custom_payload {
        Some(r.bytes_map("custom payload")?)
    } else {
        None
    };
    let response = Response::decode_body(opcode, &mut r, frame.header.version)?;
    Ok(ResponseEnvelope {
        version: frame.header.version,
        stream: frame.header.stream,
        tracing_id,
        warnings,
        custom_payload,
        response,
    })
}

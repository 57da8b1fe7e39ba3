//! The frame (envelope) layer: the 9-byte header, protocol versions, opcodes,
//! flags, and incremental frame decoding with the `max_frame_bytes` check.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::{WireError, WireResult};
use crate::limits::{Limits, FRAME_HEADER_BYTES};
use crate::primitives::put_string;

/// The protocol versions this codec speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProtocolVersion {
    V3,
    V4,
    V5,
}

/// How the supported versions are named in errors and in SUPPORTED's
/// `PROTOCOL_VERSIONS` (Cassandra's `ProtocolVersion.toString`).
pub const SUPPORTED_VERSIONS: [&str; 3] = ["3/v3", "4/v4", "5/v5"];

impl ProtocolVersion {
    pub fn from_number(number: u8) -> Option<ProtocolVersion> {
        match number {
            3 => Some(ProtocolVersion::V3),
            4 => Some(ProtocolVersion::V4),
            5 => Some(ProtocolVersion::V5),
            _ => None,
        }
    }

    pub fn number(self) -> u8 {
        match self {
            ProtocolVersion::V3 => 3,
            ProtocolVersion::V4 => 4,
            ProtocolVersion::V5 => 5,
        }
    }

    /// `4/v4`, as Cassandra's `ProtocolVersion.toString`.
    pub fn name(self) -> &'static str {
        match self {
            ProtocolVersion::V3 => SUPPORTED_VERSIONS[0],
            ProtocolVersion::V4 => SUPPORTED_VERSIONS[1],
            ProtocolVersion::V5 => SUPPORTED_VERSIONS[2],
        }
    }

    /// Whether frames travel inside checksummed segments after the handshake.
    pub fn uses_segments(self) -> bool {
        self >= ProtocolVersion::V5
    }
}

/// The PROTOCOL_ERROR text that makes drivers step down to a version we speak
/// (`ProtocolVersion.invalidVersionMessage` in Cassandra).
pub fn unsupported_version_message(version: u8) -> String {
    format!(
        "Invalid or unsupported protocol version ({version}); supported versions are ({})",
        SUPPORTED_VERSIONS.join(", ")
    )
}

/// The version byte's top bit: 0 for requests, 1 for responses.
const DIRECTION_RESPONSE_BIT: u8 = 0x80;
const VERSION_MASK: u8 = 0x7f;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    Request,
    Response,
}

/// The message kinds of spec section 2.4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    Error,
    Startup,
    Ready,
    Authenticate,
    Options,
    Supported,
    Query,
    Result,
    Prepare,
    Execute,
    Register,
    Event,
    Batch,
    AuthChallenge,
    AuthResponse,
    AuthSuccess,
}

impl Opcode {
    pub fn from_byte(byte: u8) -> WireResult<Opcode> {
        Ok(match byte {
            0x00 => Opcode::Error,
            0x01 => Opcode::Startup,
            0x02 => Opcode::Ready,
            0x03 => Opcode::Authenticate,
            0x05 => Opcode::Options,
            0x06 => Opcode::Supported,
            0x07 => Opcode::Query,
            0x08 => Opcode::Result,
            0x09 => Opcode::Prepare,
            0x0A => Opcode::Execute,
            0x0B => Opcode::Register,
            0x0C => Opcode::Event,
            0x0D => Opcode::Batch,
            0x0E => Opcode::AuthChallenge,
            0x0F => Opcode::AuthResponse,
            0x10 => Opcode::AuthSuccess,
            other => return Err(WireError::UnknownOpcode(other)),
        })
    }

    pub fn byte(self) -> u8 {
        match self {
            Opcode::Error => 0x00,
            Opcode::Startup => 0x01,
            Opcode::Ready => 0x02,
            Opcode::Authenticate => 0x03,
            Opcode::Options => 0x05,
            Opcode::Supported => 0x06,
            Opcode::Query => 0x07,
            Opcode::Result => 0x08,
            Opcode::Prepare => 0x09,
            Opcode::Execute => 0x0A,
            Opcode::Register => 0x0B,
            Opcode::Event => 0x0C,
            Opcode::Batch => 0x0D,
            Opcode::AuthChallenge => 0x0E,
            Opcode::AuthResponse => 0x0F,
            Opcode::AuthSuccess => 0x10,
        }
    }

    pub fn direction(self) -> Direction {
        match self {
            Opcode::Startup
            | Opcode::Options
            | Opcode::Query
            | Opcode::Prepare
            | Opcode::Execute
            | Opcode::Register
            | Opcode::Batch
            | Opcode::AuthResponse => Direction::Request,
            _ => Direction::Response,
        }
    }
}

/// Header flags (spec 2.2); unknown bits are ignored as the spec says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FrameFlags {
    pub compression: bool,
    pub tracing: bool,
    pub custom_payload: bool,
    pub warning: bool,
    pub use_beta: bool,
}

impl FrameFlags {
    pub fn from_byte(byte: u8) -> FrameFlags {
        FrameFlags {
            compression: byte & 0x01 != 0,
            tracing: byte & 0x02 != 0,
            custom_payload: byte & 0x04 != 0,
            warning: byte & 0x08 != 0,
            use_beta: byte & 0x10 != 0,
        }
    }

    pub fn byte(self) -> u8 {
        u8::from(self.compression)
            | u8::from(self.tracing) << 1
            | u8::from(self.custom_payload) << 2
            | u8::from(self.warning) << 3
            | u8::from(self.use_beta) << 4
    }
}

/// A parsed v4/v5 frame header. The opcode stays a raw byte so that an
/// unknown opcode is a per-request error (answered on its stream) rather
/// than a framing error: `opcode()` validates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameHeader {
    pub version: ProtocolVersion,
    pub direction: Direction,
    pub flags: FrameFlags,
    pub stream: i16,
    pub opcode_byte: u8,
    pub body_bytes: u32,
}

impl FrameHeader {
    pub fn opcode(&self) -> WireResult<Opcode> {
        Opcode::from_byte(self.opcode_byte)
    }

    /// Writes the 9 header bytes.
    pub fn encode(&self, out: &mut BytesMut) {
        let direction = match self.direction {
            Direction::Request => 0,
            Direction::Response => DIRECTION_RESPONSE_BIT,
        };
        out.put_u8(self.version.number() | direction);
        out.put_u8(self.flags.byte());
        out.put_i16(self.stream);
        out.put_u8(self.opcode_byte);
        out.put_u32(self.body_bytes);
    }

    /// Parses a header from the front of `bytes`: `Ok(None)` until nine bytes
    /// are there, except that an unsupported version is reported from the
    /// first byte on (v1/v2 headers are shorter), and a body above
    /// `max_frame_bytes` is reported as soon as the length is known.
    pub fn parse(bytes: &[u8], max_frame_bytes: u64) -> WireResult<Option<FrameHeader>> {
        let Some(&first) = bytes.first() else {
            return Ok(None);
        };
        let Some(version) = ProtocolVersion::from_number(first & VERSION_MASK) else {
            return Err(WireError::UnsupportedVersion {
                version: first & VERSION_MASK,
                stream: best_effort_stream(bytes),
            });
        };
        let Some(header) = bytes.first_chunk::<FRAME_HEADER_BYTES>() else {
            return Ok(None);
        };
        let stream = i16::from_be_bytes([header[2], header[3]]);
        let length = i32::from_be_bytes([header[5], header[6], header[7], header[8]]);
        let body_bytes =
            u32::try_from(length).map_err(|_| WireError::NegativeBodyLength(length))?;
        let frame_bytes = u64::from(body_bytes) + FRAME_HEADER_BYTES as u64;
        if frame_bytes > max_frame_bytes {
            return Err(WireError::FrameTooBig {
                stream,
                frame_bytes,
                max_frame_bytes,
            });
        }
        Ok(Some(FrameHeader {
            version,
            direction: direction_of(first),
            flags: FrameFlags::from_byte(header[1]),
            stream,
            opcode_byte: header[4],
            body_bytes,
        }))
    }
}

fn direction_of(version_byte: u8) -> Direction {
    if version_byte & DIRECTION_RESPONSE_BIT != 0 {
        Direction::Response
    } else {
        Direction::Request
    }
}

/// The stream id of a header in an unsupported version, as far as it can be
/// read: one byte in v1/v2, two bytes later, 0 when not yet received.
fn best_effort_stream(bytes: &[u8]) -> i16 {
    match (
        bytes.first().map(|b| b & VERSION_MASK),
        bytes.get(2),
        bytes.get(3),
    ) {
        (Some(1 | 2), Some(&s), _) => i16::from(s as i8),
        (Some(_), Some(&hi), Some(&lo)) => i16::from_be_bytes([hi, lo]),
        _ => 0,
    }
}

/// One complete frame: header and (possibly compressed) body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub header: FrameHeader,
    pub body: Bytes,
}

impl Frame {
    /// Builds a frame whose header length matches `body`.
    pub fn new(
        version: ProtocolVersion,
        flags: FrameFlags,
        stream: i16,
        opcode: Opcode,
        body: Bytes,
    ) -> WireResult<Frame> {
        let header = Frame::header_of(version, flags, stream, opcode, body.len())?;
        Ok(Frame { header, body })
    }

    /// The header of a frame whose body has `body_len` bytes.
    pub fn header_of(
        version: ProtocolVersion,
        flags: FrameFlags,
        stream: i16,
        opcode: Opcode,
        body_len: usize,
    ) -> WireResult<FrameHeader> {
        let body_bytes = u32::try_from(body_len)
            .ok()
            .filter(|len| *len <= i32::MAX as u32)
            .ok_or(WireError::TooLongToEncode {
                what: "frame body",
                len_bytes: body_len,
                max_bytes: i32::MAX as usize,
            })?;
        Ok(FrameHeader {
            version,
            direction: opcode.direction(),
            flags,
            stream,
            opcode_byte: opcode.byte(),
            body_bytes,
        })
    }

    pub fn encoded_bytes(&self) -> usize {
        FRAME_HEADER_BYTES + self.body.len()
    }

    pub fn encode(&self, out: &mut BytesMut) {
        debug_assert_eq!(self.header.body_bytes as usize, self.body.len());
        self.header.encode(out);
        out.put_slice(&self.body);
    }

    pub fn to_bytes(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(self.encoded_bytes());
        self.encode(&mut out);
        out.freeze()
    }
}

/// Cuts frames off the front of a byte buffer (plain v4/v5 framing, and the
/// envelopes inside v5 segments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameDecoder {
    limits: Limits,
}

impl FrameDecoder {
    pub fn new(limits: Limits) -> FrameDecoder {
        FrameDecoder { limits }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Removes one complete frame from the front of `buf`, or returns
    /// `Ok(None)` (consuming nothing) when more bytes are needed. After an
    /// error the buffer is left as it was; errors that `is_fatal()` mean the
    /// connection must be closed once answered.
    pub fn decode(&self, buf: &mut BytesMut) -> WireResult<Option<Frame>> {
        let Some(header) = FrameHeader::parse(buf, self.limits.max_frame_bytes)? else {
            return Ok(None);
        };
        let frame_bytes = FRAME_HEADER_BYTES + header.body_bytes as usize;
        if buf.len() < frame_bytes {
            return Ok(None);
        }
        buf.advance(FRAME_HEADER_BYTES);
        let body = buf.split_to(header.body_bytes as usize).freeze();
        Ok(Some(Frame { header, body }))
    }
}

/// The ERROR frame that answers a frame in an unsupported version: a
/// PROTOCOL_ERROR carrying `unsupported_version_message`. Like Cassandra it is
/// framed in the client's own version when that is an old one (so that a v1-v3
/// driver can read it; v1/v2 headers have a one-byte stream), and in v5 otherwise.
pub fn unsupported_version_reply(requested_version: u8, stream: i16) -> Bytes {
    const PROTOCOL_ERROR_CODE: i32 = 0x000A;
    let reply_version = match requested_version {
        1..=3 => requested_version,
        _ => ProtocolVersion::V5.number(),
    };
    let mut body = BytesMut::new();
    body.put_i32(PROTOCOL_ERROR_CODE);
    // The message is a few dozen ASCII bytes, far below the [string] limit.
    let _ = put_string(
        &mut body,
        "error message",
        &unsupported_version_message(requested_version),
    );
    let mut out = BytesMut::with_capacity(FRAME_HEADER_BYTES + body.len());
    out.put_u8(reply_version | DIRECTION_RESPONSE_BIT);
    out.put_u8(0);
    if reply_version < 3 {
        out.put_i8(stream as i8);
    } else {
        out.put_i16(stream);
    }
    out.put_u8(Opcode::Error.byte());
    out.put_u32(body.len() as u32);
    out.put_slice(&body);
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUERY_HEADER: [u8; 9] = [0x04, 0x03, 0x00, 0x2a, 0x07, 0x00, 0x00, 0x00, 0x10];

    #[test]
    fn header_parses_hand_checked_bytes() {
        let header = FrameHeader::parse(&QUERY_HEADER, 1 << 20)
            .expect("valid")
            .expect("complete");
        assert_eq!(header.version, ProtocolVersion::V4);
        assert_eq!(header.direction, Direction::Request);
        assert!(header.flags.compression && header.flags.tracing);
        assert!(!header.flags.custom_payload && !header.flags.warning);
        assert_eq!(header.stream, 42);
        assert_eq!(header.opcode(), Ok(Opcode::Query));
        assert_eq!(header.body_bytes, 16);
        let mut out = BytesMut::new();
        header.encode(&mut out);
        assert_eq!(&out[..], &QUERY_HEADER);
    }

    #[test]
    fn response_header_sets_the_direction_bit() {
        let frame = Frame::new(
            ProtocolVersion::V5,
            FrameFlags::default(),
            -1,
            Opcode::Event,
            Bytes::from_static(b"xy"),
        )
        .expect("frame");
        assert_eq!(
            &frame.to_bytes()[..],
            &[0x85, 0, 0xff, 0xff, 0x0c, 0, 0, 0, 2, b'x', b'y']
        );
    }

    #[test]
    fn partial_frames_need_more_bytes() {
        let decoder = FrameDecoder::new(Limits::default());
        let mut buf = BytesMut::from(&QUERY_HEADER[..5]);
        assert_eq!(decoder.decode(&mut buf), Ok(None));
        buf.extend_from_slice(&QUERY_HEADER[5..]);
        buf.extend_from_slice(&[0u8; 15]);
        assert_eq!(decoder.decode(&mut buf), Ok(None));
        buf.extend_from_slice(&[0u8; 2]);
        let frame = decoder.decode(&mut buf).expect("valid").expect("complete");
        assert_eq!(frame.body.len(), 16);
        assert_eq!(buf.len(), 1, "the next frame's first byte stays");
    }

    #[test]
    fn unsupported_versions_are_reported_from_the_first_byte() {
        let err = FrameHeader::parse(&[0x06], 1 << 20).expect_err("v6");
        assert_eq!(
            err,
            WireError::UnsupportedVersion {
                version: 6,
                stream: 0
            }
        );
        assert_eq!(
            err.to_string(),
            "Invalid or unsupported protocol version (6); supported versions are (3/v3, 4/v4, 5/v5)"
        );
        // v2's stream id is one byte.
        let err = FrameHeader::parse(&[0x02, 0, 7, 1], 1 << 20).expect_err("v2");
        assert_eq!(
            err,
            WireError::UnsupportedVersion {
                version: 2,
                stream: 7
            }
        );
    }

    #[test]
    fn too_big_frames_are_reported_before_the_body() {
        let err = FrameHeader::parse(&QUERY_HEADER, 20).expect_err("too big");
        assert_eq!(
            err,
            WireError::FrameTooBig {
                stream: 42,
                frame_bytes: 25,
                max_frame_bytes: 20
            }
        );
        let negative = [0x04, 0, 0, 1, 7, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(
            FrameHeader::parse(&negative, 20),
            Err(WireError::NegativeBodyLength(-1))
        );
    }

    #[test]
    fn version_reply_uses_old_header_layouts() {
        let v2 = unsupported_version_reply(2, 3);
        assert_eq!(&v2[..4], &[0x82, 0, 3, 0]);
        let v3 = unsupported_version_reply(3, 3);
        assert_eq!(&v3[..5], &[0x83, 0, 0, 3, 0]);
        let v6 = unsupported_version_reply(6, 3);
        assert_eq!(&v6[..5], &[0x85, 0, 0, 3, 0]);
        assert_eq!(&v6[9..13], &[0, 0, 0, 0x0a]);
    }
}

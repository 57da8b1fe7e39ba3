//! `WireError`: everything that can go wrong while encoding or decoding the native protocol.

use thiserror::Error;

/// An error from any layer of the codec (segment, frame, message).
///
/// Decoding never panics: every malformed input ends up as one of these. The
/// server maps them to protocol ERROR responses in one place; the variants keep
/// enough context (version, stream, sizes) for that answer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// The version byte names a protocol version this codec does not speak.
    /// `stream` is the best-effort stream id read from the same header.
    #[error("{}", crate::frame::unsupported_version_message(*version))]
    UnsupportedVersion { version: u8, stream: i16 },

    /// The frame header announces a body larger than the configured limit.
    /// The server answers with `too_big_message()` and closes the connection.
    #[error("Request is too big: length {frame_bytes} exceeds maximum allowed length {max_frame_bytes}.")]
    FrameTooBig {
        stream: i16,
        frame_bytes: u64,
        max_frame_bytes: u64,
    },

    /// The header announced a negative body length.
    #[error("Invalid value for envelope header body length field: {0}")]
    NegativeBodyLength(i32),

    /// A body ended before the value being read.
    #[error("Not enough bytes to read {what}: needed {needed_bytes}, {remaining_bytes} left")]
    Truncated {
        what: &'static str,
        needed_bytes: usize,
        remaining_bytes: usize,
    },

    #[error("Invalid UTF-8 in {0}")]
    InvalidUtf8(&'static str),

    #[error("Unknown opcode {0:#04x}")]
    UnknownOpcode(u8),

    /// A request opcode where a response was expected, or the reverse.
    #[error("Wrong protocol direction for opcode {opcode:#04x} (expected {expected})")]
    WrongDirection { opcode: u8, expected: &'static str },

    /// A field holds a value outside its domain (an unknown consistency, a
    /// `[value]` length below -2, an unknown result kind...).
    #[error("Invalid {what}: {value}")]
    InvalidValue { what: &'static str, value: i64 },

    /// A named string field holds an unknown word (event type, write type...).
    #[error("Unknown {what}: {value}")]
    UnknownName { what: &'static str, value: String },

    /// A count or nesting depth above a safety limit of this codec.
    #[error("{what} of {count} exceeds the limit of {max}")]
    LimitExceeded {
        what: &'static str,
        count: u64,
        max: u64,
    },

    /// A value too long for the length prefix the protocol gives it.
    #[error("{what} of {len_bytes} bytes is too long to encode (at most {max_bytes})")]
    TooLongToEncode {
        what: &'static str,
        len_bytes: usize,
        max_bytes: usize,
    },

    /// A field that the chosen protocol version cannot carry, or requires.
    #[error("{what} is not valid in protocol v{version}")]
    NotInVersion { what: &'static str, version: u8 },

    /// A v3 request frame with the custom payload flag (Cassandra's text).
    #[error("Received frame with CUSTOM_PAYLOAD flag for native protocol version < 4")]
    CustomPayloadBeforeV4,

    /// The frame sets the compression flag but no compression was negotiated.
    #[error("Frame is compressed but no compression was negotiated")]
    UnexpectedCompression,

    #[error("Decompression failed: {0}")]
    Decompression(String),

    /// A v5 segment header failed its CRC24: the stream is unrecoverable.
    #[error("Segment header CRC mismatch: read {read_crc:#08x}, computed {computed_crc:#08x}")]
    SegmentHeaderCrc { read_crc: u32, computed_crc: u32 },

    /// A v5 segment payload failed its CRC32.
    #[error("Segment payload CRC mismatch: read {read_crc:#010x}, computed {computed_crc:#010x}")]
    SegmentPayloadCrc { read_crc: u32, computed_crc: u32 },

    /// Segments do not carry whole frames the way the protocol requires.
    #[error("Malformed segment sequence: {0}")]
    SegmentFraming(&'static str),
}

impl WireError {
    /// Whether the connection cannot continue after this error: the byte
    /// stream has lost its framing, so the server answers (when it can) and closes.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            WireError::UnsupportedVersion { .. }
                | WireError::FrameTooBig { .. }
                | WireError::NegativeBodyLength(_)
                | WireError::SegmentHeaderCrc { .. }
                | WireError::SegmentPayloadCrc { .. }
                | WireError::SegmentFraming(_)
        )
    }
}

/// Shorthand used by every module of the crate.
pub type WireResult<T> = Result<T, WireError>;

//! CQL native protocol codec (v4 and v5), with no IO: the server feeds bytes
//! in and writes the bytes it gets back.
//!
//! # Layers, from the socket up
//!
//! 1. **Segment** ([`segment`], v5 only, after STARTUP/READY): a 6-byte
//!    header (17-bit payload length, self-contained flag, CRC24) or, with
//!    LZ4, an 8-byte one (compressed and uncompressed lengths, flag, CRC24);
//!    a payload of at most [`SEGMENT_PAYLOAD_BYTES_MAX`] bytes; a CRC32
//!    trailer. A self-contained segment holds whole frames; a larger frame
//!    is split over non-self-contained segments.
//!    [`SegmentedFrameDecoder`] turns bytes into frames; [`SegmentCodec::encode_frames`]
//!    packs frames into segments.
//! 2. **Frame** ([`frame`]): the 9-byte header (version and direction,
//!    flags, stream, opcode, body length) and the body. [`FrameDecoder`] cuts
//!    frames off a buffer, rejecting unsupported versions from the first
//!    byte and bodies above `max_frame_bytes` before reading them. v4 bodies
//!    may be compressed as a whole ([`BodyCompression`]: LZ4 or Snappy).
//! 3. **Message** ([`envelope`], [`request`], [`response`], [`error_response`]):
//!    the body prefixes set by flags (tracing id, warnings, custom payload)
//!    and the typed messages. Column types are `rocksandra_data`'s
//!    [`CqlType`](rocksandra_data::types::CqlType) ([`types`]); row cells
//!    stay opaque bytes, serialized by the caller.
//!
//! # Limits
//!
//! Everything read from the network is checked before it is allocated
//! ([`limits`]): `max_frame_bytes` (default [`MAX_FRAME_BYTES_DEFAULT`],
//! 16 MiB like `native_transport_max_frame_size`, also bounding decompressed
//! v4 bodies), the segment payload (128 KiB - 1), every length and count
//! against the bytes that remain (a forged count fails before any
//! allocation), column and row counts, the reason-map size, and type nesting
//! depth ([`TYPE_NESTING_DEPTH_MAX`]). Decoding never panics; malformed input
//! is a [`WireError`], and [`WireError::is_fatal`] says when the connection
//! must close.

pub mod compression;
pub mod crc;
pub mod envelope;
pub mod error;
pub mod error_response;
pub mod frame;
pub mod fuzz;
pub mod limits;
pub mod primitives;
pub mod request;
pub mod response;
pub mod segment;
pub mod types;

pub use compression::BodyCompression;
pub use envelope::{
    decode_request, decode_response, encode_request, encode_response, encode_response_into,
    RequestEnvelope, ResponseEnvelope,
};
pub use error::{WireError, WireResult};
pub use error_response::{ErrorKind, ErrorResponse, Failures, WriteType};
pub use frame::{
    unsupported_version_message, unsupported_version_reply, Direction, Frame, FrameDecoder,
    FrameFlags, FrameHeader, Opcode, ProtocolVersion, SUPPORTED_VERSIONS,
};
pub use limits::{
    Limits, MAX_FRAME_BYTES_DEFAULT, SEGMENT_PAYLOAD_BYTES_MAX, TYPE_NESTING_DEPTH_MAX,
};
pub use primitives::{BytesMap, StringMap, StringMultimap, Value};
pub use request::{
    Batch, BatchQuery, BatchStatement, BatchType, BoundValues, Execute, Prepare, Query,
    QueryParameters, Request,
};
pub use response::{
    ColumnSpec, ColumnsMetadata, Event, EventType, Prepared, PreparedMetadata, Response,
    ResultBody, Rows, RowsMetadata, SchemaChange, SchemaChangeTarget, SchemaChangeType,
    StatusChangeType, TableSpec, TopologyChangeType,
};
pub use segment::{
    FrameAssembler, Segment, SegmentCodec, SegmentCompression, SegmentedFrameDecoder,
};
pub use types::Consistency;

//! Named limits: every size or count read from the network is checked against one of these.

/// Default for the largest frame (header + body) accepted, like Cassandra's
/// `native_transport_max_frame_size` (16 MiB).
pub const MAX_FRAME_BYTES_DEFAULT: u64 = 16 * 1024 * 1024;

/// Size of a v3+ frame header: version, flags, stream (2), opcode, length (4).
pub const FRAME_HEADER_BYTES: usize = 9;

/// Largest v5 segment payload: the length field has 17 bits (128 KiB - 1).
pub const SEGMENT_PAYLOAD_BYTES_MAX: usize = (1 << 17) - 1;

/// Header of an uncompressed v5 segment: 3 bytes of fields + CRC24.
pub const SEGMENT_HEADER_BYTES_UNCOMPRESSED: usize = 6;

/// Header of an LZ4-compressed v5 segment: 5 bytes of fields + CRC24.
pub const SEGMENT_HEADER_BYTES_COMPRESSED: usize = 8;

/// The CRC32 trailer after each v5 segment payload.
pub const SEGMENT_TRAILER_BYTES: usize = 4;

/// Deepest nesting of `[option]` types (`list<map<int, tuple<...>>>`) or of
/// custom marshal type strings; bounds recursion on forged input.
pub const TYPE_NESTING_DEPTH_MAX: usize = 32;

/// Most columns in result or bind-variable metadata.
pub const COLUMN_COUNT_MAX: u32 = 65_535;

/// Most rows in one decoded RESULT Rows message. Each cell also costs at
/// least four bytes of input, which is checked first; this caps the row
/// vector itself when rows have no columns.
pub const ROW_COUNT_MAX: u32 = 1 << 20;

/// Most entries in a v5 failure reason map.
pub const REASON_MAP_ENTRIES_MAX: u32 = 65_535;

/// Negotiated limits for one connection. `Default` gives Cassandra's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest frame (9-byte header + body) accepted; checked before the body is read.
    pub max_frame_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_bytes: MAX_FRAME_BYTES_DEFAULT,
        }
    }
}

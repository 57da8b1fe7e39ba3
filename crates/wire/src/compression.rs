//! v4 whole-body compression, negotiated in STARTUP: Cassandra's LZ4 layout
//! (4-byte big-endian uncompressed length, then one LZ4 block) and raw Snappy.

use crate::error::{WireError, WireResult};

/// Size of the big-endian uncompressed-length prefix of an LZ4 body.
const LZ4_LENGTH_PREFIX_BYTES: usize = 4;

/// A body compression named in STARTUP's `COMPRESSION` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BodyCompression {
    Lz4,
    Snappy,
}

impl BodyCompression {
    /// Parses the STARTUP option value (`lz4`, `snappy`), case-insensitively.
    pub fn from_startup_name(name: &str) -> Option<BodyCompression> {
        match name.to_ascii_lowercase().as_str() {
            "lz4" => Some(BodyCompression::Lz4),
            "snappy" => Some(BodyCompression::Snappy),
            _ => None,
        }
    }

    pub fn startup_name(self) -> &'static str {
        match self {
            BodyCompression::Lz4 => "lz4",
            BodyCompression::Snappy => "snappy",
        }
    }

    /// Compresses a frame body.
    pub fn compress(self, body: &[u8]) -> WireResult<Vec<u8>> {
        match self {
            BodyCompression::Lz4 => Ok(lz4_compress(body)),
            BodyCompression::Snappy => snap::raw::Encoder::new()
                .compress_vec(body)
                .map_err(|e| WireError::Decompression(format!("snappy compression: {e}"))),
        }
    }

    /// Decompresses a frame body; the announced uncompressed size is checked
    /// against `max_body_bytes` before anything is allocated for it.
    pub fn decompress(self, body: &[u8], max_body_bytes: u64) -> WireResult<Vec<u8>> {
        match self {
            BodyCompression::Lz4 => lz4_decompress(body, max_body_bytes),
            BodyCompression::Snappy => snappy_decompress(body, max_body_bytes),
        }
    }
}

fn lz4_compress(body: &[u8]) -> Vec<u8> {
    let block = lz4_flex::block::compress(body);
    let mut out = Vec::with_capacity(LZ4_LENGTH_PREFIX_BYTES + block.len());
    // A body never exceeds the i32 frame length, so the length fits.
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&block);
    out
}

fn check_uncompressed_len(len: u64, max_body_bytes: u64) -> WireResult<usize> {
    if len > max_body_bytes {
        return Err(WireError::Decompression(format!(
            "Invalid uncompressed frame length {len}; it must be non-negative and no greater \
             than native_transport_max_frame_size ({max_body_bytes} bytes)"
        )));
    }
    usize::try_from(len).map_err(|_| WireError::Decompression("length overflows".to_string()))
}

fn lz4_decompress(body: &[u8], max_body_bytes: u64) -> WireResult<Vec<u8>> {
    let (prefix, block) = match body.split_first_chunk::<LZ4_LENGTH_PREFIX_BYTES>() {
        Some(split) => split,
        None => {
            return Err(WireError::Decompression(
                "Provided frame does not appear to be LZ4 compressed".to_string(),
            ))
        }
    };
    let len = check_uncompressed_len(u64::from(u32::from_be_bytes(*prefix)), max_body_bytes)?;
    lz4_block_decompress(block, len)
}

/// Decompresses one LZ4 block that must expand to exactly `len` bytes.
pub(crate) fn lz4_block_decompress(block: &[u8], len: usize) -> WireResult<Vec<u8>> {
    let mut out = vec![0u8; len];
    let written = lz4_flex::block::decompress_into(block, &mut out)
        .map_err(|e| WireError::Decompression(format!("lz4: {e}")))?;
    if written != len {
        return Err(WireError::Decompression(format!(
            "lz4: expected {len} bytes, got {written}"
        )));
    }
    Ok(out)
}

fn snappy_decompress(body: &[u8], max_body_bytes: u64) -> WireResult<Vec<u8>> {
    let len = snap::raw::decompress_len(body).map_err(|_| {
        WireError::Decompression("Provided frame does not appear to be Snappy compressed".into())
    })?;
    check_uncompressed_len(len as u64, max_body_bytes)?;
    snap::raw::Decoder::new()
        .decompress_vec(body)
        .map_err(|e| WireError::Decompression(format!("snappy: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-assembled LZ4 body: length 20, then sequence 1 = token 0x44
    /// (4 literals "abcd", match of 4 + 4 bytes at offset 4), sequence 2 =
    /// token 0x80 (8 final literals).
    const LZ4_BODY: [u8; 20] = [
        0, 0, 0, 20, // uncompressed length, big-endian
        0x44, b'a', b'b', b'c', b'd', 0x04, 0x00, // literals + match offset (LE)
        0x80, b'e', b'f', b'g', b'h', b'i', b'j', b'k', b'l', // last literals
    ];

    #[test]
    fn lz4_body_decodes_hand_assembled_bytes() {
        let out = BodyCompression::Lz4
            .decompress(&LZ4_BODY, 1024)
            .expect("decompresses");
        assert_eq!(out, b"abcdabcdabcdefghijkl");
    }

    #[test]
    fn lz4_body_rejects_wrong_length_and_oversize() {
        let mut body = LZ4_BODY.to_vec();
        body[3] = 21;
        assert!(BodyCompression::Lz4.decompress(&body, 1024).is_err());
        body[0] = 0x7f;
        assert!(BodyCompression::Lz4.decompress(&body, 1024).is_err());
        assert!(BodyCompression::Lz4.decompress(&[0, 0], 1024).is_err());
    }

    #[test]
    fn both_compressions_round_trip() {
        let body: Vec<u8> = (0..5000u32).map(|i| (i % 7) as u8).collect();
        for c in [BodyCompression::Lz4, BodyCompression::Snappy] {
            let packed = c.compress(&body).expect("compresses");
            assert!(packed.len() < body.len());
            assert_eq!(c.decompress(&packed, 1 << 20).expect("decompresses"), body);
            assert!(c.decompress(&packed, 100).is_err(), "limit is enforced");
        }
    }
}

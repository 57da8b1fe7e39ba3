//! The two checksums of v5 segments: CRC24 over the header, CRC32 over the payload.

/// Initial register of Cassandra's segment-header CRC24 (`Crc.java`).
const CRC24_INIT: u32 = 0x87_5060;
/// Generator polynomial of the CRC24, including the x^24 term (Koopman's choice).
const CRC24_POLY: u32 = 0x197_4F0B;

/// Bytes Cassandra feeds into the CRC32 before the payload, so that an all-zero
/// payload does not have a zero checksum.
const CRC32_INITIAL_BYTES: [u8; 4] = [0xFA, 0x2D, 0x55, 0xCA];

/// CRC24 of segment header bytes, in the order they appear on the wire.
///
/// Cassandra reads the header as a little-endian integer and feeds it least
/// significant byte first, which is wire order; each byte enters the top of
/// the 24-bit register and bits are shifted out most significant first.
pub fn crc24(bytes: &[u8]) -> u32 {
    let mut crc = CRC24_INIT;
    for &byte in bytes {
        crc ^= u32::from(byte) << 16;
        for _ in 0..8 {
            crc <<= 1;
            if crc & 0x100_0000 != 0 {
                crc ^= CRC24_POLY;
            }
        }
    }
    crc & 0xFF_FFFF
}

/// CRC32 (IEEE, as `java.util.zip.CRC32`) of a segment payload, seeded with
/// Cassandra's four initial bytes.
pub fn crc32(payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&CRC32_INITIAL_BYTES);
    hasher.update(payload);
    hasher.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values computed independently (Python: zlib.crc32, and a
    // transcription of Crc.crc24 run on a 64-bit register).

    #[test]
    fn crc24_matches_hand_checked_vectors() {
        assert_eq!(crc24(&[]), 0x87_5060);
        // Header of an uncompressed, self-contained segment with a 5-byte payload.
        assert_eq!(crc24(&[0x05, 0x00, 0x02]), CRC24_HEADER_5_SELF_CONTAINED);
        assert_eq!(crc24(&[0xff, 0xff, 0x03]), CRC24_HEADER_MAX_SELF_CONTAINED);
    }

    #[test]
    fn crc32_is_seeded_with_the_initial_bytes() {
        assert_eq!(crc32(&[]), CRC32_EMPTY);
        assert_eq!(crc32(b"123456789"), CRC32_DIGITS);
        assert_ne!(
            crc32(b"123456789"),
            0xCBF4_3926,
            "must differ from the unseeded CRC32"
        );
    }

    const CRC24_HEADER_5_SELF_CONTAINED: u32 = 0x9A_9919;
    const CRC24_HEADER_MAX_SELF_CONTAINED: u32 = 0x47_4025;
    const CRC32_EMPTY: u32 = 0x4477_7ED3;
    const CRC32_DIGITS: u32 = 0xE2A2_61A7;
}

//! Murmur3Partitioner tokens, bit-identical to Cassandra's, and the byte
//! layout of (composite) partition keys that the hash is computed over.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A position on the token ring, as Cassandra's Murmur3Partitioner computes
/// it. A node owns (previous token, its token].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Token(pub i64);

/// Errors from taking a serialized partition key apart, or building one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartitionKeyError {
    #[error("partition key component {index} is truncated")]
    Truncated { index: usize },
    #[error("partition key component {index} does not end with a 0x00 byte")]
    MissingEndOfComponent { index: usize },
    #[error("partition key has {extra_bytes} bytes after its {components} components")]
    TrailingBytes {
        components: usize,
        extra_bytes: usize,
    },
    #[error("a partition key has at least one component")]
    NoComponents,
}

/// Error from parsing a token's decimal text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid token '{text}': not a 64-bit signed integer")]
pub struct TokenParseError {
    pub text: String,
}

const C1: u64 = 0x87c3_7b91_1142_53d5;
const C2: u64 = 0x4cf5_ad43_2745_937f;

impl Token {
    /// The minimum token: the empty key's token, never owned by a node, and
    /// the start of the ring for range scans.
    pub const MIN: Token = Token(i64::MIN);
    /// The largest token a key can hash to.
    pub const MAX: Token = Token(i64::MAX);

    /// Cassandra's `Murmur3Partitioner.getToken`: MurmurHash3 x64_128 with
    /// seed 0, keeping the first 64-bit half as a signed integer.
    pub fn murmur3(key: &[u8]) -> Token {
        if key.is_empty() {
            return Token::MIN;
        }
        let hash = murmur3_x64_128_first_half(key) as i64;
        // Cassandra keeps i64::MIN for the minimum token only.
        if hash == i64::MIN {
            Token::MAX
        } else {
            Token(hash)
        }
    }

    /// Big-endian bytes with the sign bit flipped: unsigned byte order equals
    /// token order, so these can lead RocksDB keys.
    pub fn to_order_preserving_bytes(self) -> [u8; 8] {
        ((self.0 as u64) ^ (1 << 63)).to_be_bytes()
    }

    /// Inverse of [`Token::to_order_preserving_bytes`].
    pub fn from_order_preserving_bytes(bytes: [u8; 8]) -> Token {
        Token((u64::from_be_bytes(bytes) ^ (1 << 63)) as i64)
    }
}

fn fmix(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

fn mix_k1(k1: u64) -> u64 {
    k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2)
}

fn mix_k2(k2: u64) -> u64 {
    k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1)
}

/// Folds up to 8 tail bytes into one lane. Java reads them as signed bytes
/// and sign-extends each before shifting, so a high-bit byte also flips every
/// bit above it: that quirk is part of the token format.
fn tail_lane(bytes: &[u8]) -> u64 {
    bytes.iter().enumerate().rev().fold(0u64, |k, (i, &b)| {
        k ^ (((b as i8 as i64) << (8 * i)) as u64)
    })
}

fn lane(bytes: &[u8], index: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[index * 8..index * 8 + 8]);
    u64::from_le_bytes(word)
}

fn murmur3_x64_128_first_half(key: &[u8]) -> u64 {
    let (mut h1, mut h2) = (0u64, 0u64);
    let blocks = key.len() / 16;
    for block in key[..blocks * 16].chunks_exact(16) {
        h1 ^= mix_k1(lane(block, 0));
        h1 = h1
            .rotate_left(27)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);
        h2 ^= mix_k2(lane(block, 1));
        h2 = h2
            .rotate_left(31)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x3849_5ab5);
    }
    let tail = &key[blocks * 16..];
    if tail.len() > 8 {
        h2 ^= mix_k2(tail_lane(&tail[8..]));
    }
    if !tail.is_empty() {
        h1 ^= mix_k1(tail_lane(&tail[..tail.len().min(8)]));
    }
    let length = key.len() as u64;
    h1 ^= length;
    h2 ^= length;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix(h1);
    h2 = fmix(h2);
    h1.wrapping_add(h2)
}

/// The bytes a partition key is hashed and stored as: one component as is;
/// several as `[u16 BE length][bytes][0x00]` each (Cassandra's CompositeType).
///
/// A component longer than 65535 bytes cannot be represented; Cassandra
/// rejects such keys before this point, so it is a caller bug here.
pub fn serialize_partition_key(components: &[&[u8]]) -> Vec<u8> {
    if let [single] = components {
        return single.to_vec();
    }
    let total: usize = components.iter().map(|c| c.len() + 3).sum();
    let mut out = Vec::with_capacity(total);
    for component in components {
        debug_assert!(component.len() <= usize::from(u16::MAX));
        out.extend_from_slice(&(component.len() as u16).to_be_bytes());
        out.extend_from_slice(component);
        out.push(0);
    }
    out
}

/// Inverse of [`serialize_partition_key`] for a key of `components` parts.
pub fn split_partition_key(
    bytes: &[u8],
    components: usize,
) -> Result<Vec<&[u8]>, PartitionKeyError> {
    match components {
        0 => Err(PartitionKeyError::NoComponents),
        1 => Ok(vec![bytes]),
        _ => split_composite(bytes, components),
    }
}

fn split_composite(bytes: &[u8], components: usize) -> Result<Vec<&[u8]>, PartitionKeyError> {
    let mut parts = Vec::with_capacity(components);
    let mut rest = bytes;
    for index in 0..components {
        let (length, after) = match rest {
            [hi, lo, after @ ..] => (usize::from(u16::from_be_bytes([*hi, *lo])), after),
            _ => return Err(PartitionKeyError::Truncated { index }),
        };
        if after.len() <= length {
            return Err(PartitionKeyError::Truncated { index });
        }
        let (component, after) = after.split_at(length);
        match after {
            [0, remaining @ ..] => rest = remaining,
            _ => return Err(PartitionKeyError::MissingEndOfComponent { index }),
        }
        parts.push(component);
    }
    if !rest.is_empty() {
        return Err(PartitionKeyError::TrailingBytes {
            components,
            extra_bytes: rest.len(),
        });
    }
    Ok(parts)
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for Token {
    type Err = TokenParseError;

    fn from_str(text: &str) -> Result<Token, TokenParseError> {
        text.trim()
            .parse::<i64>()
            .map(Token)
            .map_err(|_| TokenParseError {
                text: text.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn published_string_vectors() {
        // scylladb/scylla-rust-driver routing/partitioner.rs tests.
        for (key, expected) in [
            ("test", -6017608668500074083),
            ("xd", 4507812186440344727),
            ("primary_key", -1632642444691073360),
            ("kremówki", 4354931215268080151),
        ] {
            assert_eq!(Token::murmur3(key.as_bytes()), Token(expected), "{key}");
        }
    }

    #[test]
    fn published_byte_vectors_with_high_bit_tails() {
        // datastax/csharp-driver TokenTests ("inputs and result values from Cassandra").
        let cases: &[(&[u8], i64)] = &[
            (
                &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],
                -5563837382979743776,
            ),
            (
                &[2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17],
                -1513403162740402161,
            ),
            (
                &[7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22],
                8228893370679682632,
            ),
            (&[0; 16], 5457549051747178710),
            (&[255; 16], -2824192546314762522),
            (&[254; 16], -833317529301936754),
            (
                &[
                    0, 1, 2, 3, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
                ],
                6463632673159404390,
            ),
            (&[254; 17], -1672437813826982685),
            (&[254, 254, 254, 254], 4566408979886474012),
            (&[0, 0, 0, 0], -3485513579396041028),
            (&[0, 1, 127, 127], 6573459401642635627),
            (&[0, 255, 255, 255], 123573637386978882),
            (&[255, 1, 2, 3], -2839127690952877842),
        ];
        for (key, expected) in cases {
            assert_eq!(Token::murmur3(key), Token(*expected), "{key:?}");
        }
    }

    /// A deliberately naive transcription of Java's `hash3_x64_128`: i64
    /// arithmetic, the tail `switch` spelled out byte by byte. Only used to
    /// cross-check tail lengths no published vector covers.
    fn reference_murmur3(key: &[u8]) -> i64 {
        let c1 = 0x87c37b91114253d5u64 as i64;
        let c2 = 0x4cf5ad432745937fu64 as i64;
        let rotl = |v: i64, r: u32| ((v as u64).rotate_left(r)) as i64;
        let fmix = |mut k: i64| {
            k ^= ((k as u64) >> 33) as i64;
            k = k.wrapping_mul(0xff51afd7ed558ccdu64 as i64);
            k ^= ((k as u64) >> 33) as i64;
            k = k.wrapping_mul(0xc4ceb9fe1a85ec53u64 as i64);
            k ^ ((k as u64) >> 33) as i64
        };
        let get_block = |i: usize| {
            let mut v = 0i64;
            for j in 0..8 {
                v |= (key[i * 8 + j] as i64) << (8 * j);
            }
            v
        };
        let (mut h1, mut h2) = (0i64, 0i64);
        let nblocks = key.len() >> 4;
        for i in 0..nblocks {
            let mut k1 = get_block(i * 2);
            let mut k2 = get_block(i * 2 + 1);
            k1 = rotl(k1.wrapping_mul(c1), 31).wrapping_mul(c2);
            h1 ^= k1;
            h1 = rotl(h1, 27)
                .wrapping_add(h2)
                .wrapping_mul(5)
                .wrapping_add(0x52dce729);
            k2 = rotl(k2.wrapping_mul(c2), 33).wrapping_mul(c1);
            h2 ^= k2;
            h2 = rotl(h2, 31)
                .wrapping_add(h1)
                .wrapping_mul(5)
                .wrapping_add(0x38495ab5);
        }
        let offset = nblocks * 16;
        let signed = |i: usize| key[offset + i] as i8 as i64;
        let rem = key.len() & 15;
        let (mut k1, mut k2) = (0i64, 0i64);
        let mut i = rem;
        while i > 8 {
            k2 ^= signed(i - 1) << ((i - 9) * 8);
            i -= 1;
        }
        if rem > 8 {
            k2 = rotl(k2.wrapping_mul(c2), 33).wrapping_mul(c1);
            h2 ^= k2;
        }
        let mut i = rem.min(8);
        while i > 0 {
            k1 ^= signed(i - 1) << ((i - 1) * 8);
            i -= 1;
        }
        if rem > 0 {
            k1 = rotl(k1.wrapping_mul(c1), 31).wrapping_mul(c2);
            h1 ^= k1;
        }
        h1 ^= key.len() as i64;
        h2 ^= key.len() as i64;
        h1 = h1.wrapping_add(h2);
        h2 = h2.wrapping_add(h1);
        h1 = fmix(h1);
        h2 = fmix(h2);
        h1.wrapping_add(h2)
    }

    #[test]
    fn every_tail_length_with_high_bit_bytes_matches_reference() {
        for length in 0..=47usize {
            let key: Vec<u8> = (0..length)
                .map(|i| 0x80 | (i as u8).wrapping_mul(37))
                .collect();
            let expected = match reference_murmur3(&key) {
                _ if key.is_empty() => i64::MIN,
                i64::MIN => i64::MAX,
                h => h,
            };
            assert_eq!(Token::murmur3(&key), Token(expected), "length {length}");
        }
    }

    #[test]
    fn reference_agrees_with_published_vectors() {
        assert_eq!(reference_murmur3(b"test"), -6017608668500074083);
        assert_eq!(reference_murmur3(&[255, 1, 2, 3]), -2839127690952877842);
        assert_eq!(reference_murmur3(&[254; 17]), -1672437813826982685);
    }

    #[test]
    fn empty_key_is_the_minimum_token() {
        assert_eq!(Token::murmur3(b""), Token::MIN);
    }

    #[test]
    fn composite_keys_round_trip() {
        let parts: [&[u8]; 3] = [b"ab", b"", &[0, 0xff]];
        let bytes = serialize_partition_key(&parts);
        assert_eq!(bytes, [0, 2, b'a', b'b', 0, 0, 0, 0, 0, 2, 0, 0xff, 0]);
        assert_eq!(split_partition_key(&bytes, 3), Ok(parts.to_vec()));
        assert_eq!(serialize_partition_key(&[b"solo"]), b"solo");
        assert_eq!(split_partition_key(b"solo", 1), Ok(vec![b"solo" as &[u8]]));
    }

    #[test]
    fn malformed_composite_keys_are_errors() {
        assert_eq!(
            split_partition_key(&[0, 5, 1, 0], 2),
            Err(PartitionKeyError::Truncated { index: 0 })
        );
        assert_eq!(
            split_partition_key(&[0, 1, 1, 7, 0, 0, 0], 2),
            Err(PartitionKeyError::MissingEndOfComponent { index: 0 })
        );
        assert_eq!(
            split_partition_key(&[0, 0, 0, 0, 0, 0, 9], 2),
            Err(PartitionKeyError::TrailingBytes {
                components: 2,
                extra_bytes: 1
            })
        );
        assert_eq!(
            split_partition_key(b"", 0),
            Err(PartitionKeyError::NoComponents)
        );
    }

    #[test]
    fn text_form_is_decimal() {
        assert_eq!(Token(-42).to_string(), "-42");
        assert_eq!("-9223372036854775808".parse::<Token>(), Ok(Token::MIN));
        assert!("12x".parse::<Token>().is_err());
    }

    proptest! {
        #[test]
        fn order_preserving_bytes_sort_like_tokens(a: i64, b: i64) {
            let (ta, tb) = (Token(a), Token(b));
            prop_assert_eq!(ta.cmp(&tb), ta.to_order_preserving_bytes().cmp(&tb.to_order_preserving_bytes()));
            prop_assert_eq!(Token::from_order_preserving_bytes(ta.to_order_preserving_bytes()), ta);
        }

        #[test]
        fn murmur3_matches_reference(key in proptest::collection::vec(any::<u8>(), 1..80)) {
            let expected = match reference_murmur3(&key) { i64::MIN => i64::MAX, h => h };
            prop_assert_eq!(Token::murmur3(&key), Token(expected));
        }

        #[test]
        fn split_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40), n in 0usize..5) {
            let _ = split_partition_key(&bytes, n);
        }

        #[test]
        fn composite_round_trip(parts in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 2..5)) {
            let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            let bytes = serialize_partition_key(&refs);
            prop_assert_eq!(split_partition_key(&bytes, refs.len()), Ok(refs));
        }
    }
}

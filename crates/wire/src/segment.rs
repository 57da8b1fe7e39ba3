//! The v5 segment layer (after STARTUP/READY): checksummed segments of up to
//! 128 KiB - 1, optionally LZ4-compressed, that carry either several whole
//! frames (self-contained) or one slice of a frame too large for one segment.

use std::collections::VecDeque;

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::compression::lz4_block_decompress;
use crate::crc::{crc24, crc32};
use crate::error::{WireError, WireResult};
use crate::frame::{Frame, FrameDecoder, FrameHeader};
use crate::limits::{
    Limits, FRAME_HEADER_BYTES, SEGMENT_HEADER_BYTES_COMPRESSED, SEGMENT_HEADER_BYTES_UNCOMPRESSED,
    SEGMENT_PAYLOAD_BYTES_MAX, SEGMENT_TRAILER_BYTES,
};

/// Compression of segment payloads: v5 knows only LZ4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SegmentCompression {
    None,
    Lz4,
}

impl SegmentCompression {
    /// The segment compression for STARTUP's `COMPRESSION` option in v5:
    /// `lz4`, or `None` for an unknown name (v5 has no Snappy).
    pub fn from_startup_name(name: &str) -> Option<SegmentCompression> {
        name.eq_ignore_ascii_case("lz4")
            .then_some(SegmentCompression::Lz4)
    }
}

/// One decoded segment: its (decompressed) payload and whether it holds
/// whole frames only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub self_contained: bool,
    pub payload: Bytes,
}

const LENGTH_MASK: u64 = 0x1_FFFF;
const LENGTH_BITS: u32 = 17;
const CRC24_BYTES: usize = 3;

/// Encodes and decodes single segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentCodec {
    compression: SegmentCompression,
}

impl SegmentCodec {
    pub fn new(compression: SegmentCompression) -> SegmentCodec {
        SegmentCodec { compression }
    }

    fn header_bytes(&self) -> usize {
        match self.compression {
            SegmentCompression::None => SEGMENT_HEADER_BYTES_UNCOMPRESSED,
            SegmentCompression::Lz4 => SEGMENT_HEADER_BYTES_COMPRESSED,
        }
    }

    /// Appends one segment carrying `payload` (at most `SEGMENT_PAYLOAD_BYTES_MAX`).
    pub fn encode_segment(
        &self,
        payload: &[u8],
        self_contained: bool,
        out: &mut BytesMut,
    ) -> WireResult<()> {
        if payload.len() > SEGMENT_PAYLOAD_BYTES_MAX {
            return Err(WireError::TooLongToEncode {
                what: "segment payload",
                len_bytes: payload.len(),
                max_bytes: SEGMENT_PAYLOAD_BYTES_MAX,
            });
        }
        match self.compression {
            SegmentCompression::None => {
                let fields = payload.len() as u64 | u64::from(self_contained) << LENGTH_BITS;
                put_header(out, fields, 3);
                put_payload(out, payload);
            }
            SegmentCompression::Lz4 => encode_lz4_segment(payload, self_contained, out),
        }
        Ok(())
    }

    /// Removes one complete segment from the front of `buf`, or returns
    /// `Ok(None)` (consuming nothing) when more bytes are needed. Checksum
    /// errors are fatal: the stream cannot be resynchronized.
    pub fn decode_segment(&self, buf: &mut BytesMut) -> WireResult<Option<Segment>> {
        let header_bytes = self.header_bytes();
        let Some(fields) = read_header(buf, header_bytes - CRC24_BYTES)? else {
            return Ok(None);
        };
        let wire_payload_bytes = (fields & LENGTH_MASK) as usize;
        let segment_bytes = header_bytes + wire_payload_bytes + SEGMENT_TRAILER_BYTES;
        if buf.len() < segment_bytes {
            return Ok(None);
        }
        let mut segment = buf.split_to(segment_bytes);
        segment.advance(header_bytes);
        let wire_payload = segment.split_to(wire_payload_bytes).freeze();
        check_payload_crc(&wire_payload, &segment)?;
        let (self_contained, payload) = match self.compression {
            SegmentCompression::None => (fields & 1 << LENGTH_BITS != 0, wire_payload),
            SegmentCompression::Lz4 => {
                let uncompressed_bytes = ((fields >> LENGTH_BITS) & LENGTH_MASK) as usize;
                let payload = lz4_payload(wire_payload, uncompressed_bytes)?;
                (fields & 1 << (2 * LENGTH_BITS) != 0, payload)
            }
        };
        Ok(Some(Segment {
            self_contained,
            payload,
        }))
    }

    /// Appends the segments that carry `frames`: consecutive frames that fit
    /// are packed into self-contained segments; a frame larger than one
    /// segment is split over non-self-contained segments of its own.
    pub fn encode_frames(&self, frames: &[Frame], out: &mut BytesMut) -> WireResult<()> {
        let mut packed = BytesMut::new();
        for frame in frames {
            let frame_bytes = frame.encoded_bytes();
            if packed.len() + frame_bytes > SEGMENT_PAYLOAD_BYTES_MAX && !packed.is_empty() {
                self.encode_segment(&packed, true, out)?;
                packed.clear();
            }
            if frame_bytes <= SEGMENT_PAYLOAD_BYTES_MAX {
                frame.encode(&mut packed);
            } else {
                self.encode_large_frame(frame, out)?;
            }
        }
        if !packed.is_empty() {
            self.encode_segment(&packed, true, out)?;
        }
        Ok(())
    }

    fn encode_large_frame(&self, frame: &Frame, out: &mut BytesMut) -> WireResult<()> {
        let bytes = frame.to_bytes();
        for chunk in bytes.chunks(SEGMENT_PAYLOAD_BYTES_MAX) {
            self.encode_segment(chunk, false, out)?;
        }
        Ok(())
    }
}

/// Writes `field_bytes` little-endian header bytes and their CRC24.
fn put_header(out: &mut BytesMut, fields: u64, field_bytes: usize) {
    let bytes = fields.to_le_bytes();
    let fields = &bytes[..field_bytes];
    out.put_slice(fields);
    out.put_slice(&crc24(fields).to_le_bytes()[..CRC24_BYTES]);
}

fn put_payload(out: &mut BytesMut, payload: &[u8]) {
    out.put_slice(payload);
    out.put_u32_le(crc32(payload));
}

fn encode_lz4_segment(payload: &[u8], self_contained: bool, out: &mut BytesMut) {
    let compressed = lz4_flex::block::compress(payload);
    // Like Cassandra, send the payload as is (uncompressed length 0) when
    // compression does not make it smaller.
    let (wire_payload, uncompressed_bytes) = if compressed.len() >= payload.len() {
        (payload, 0)
    } else {
        (compressed.as_slice(), payload.len())
    };
    let fields = wire_payload.len() as u64
        | (uncompressed_bytes as u64) << LENGTH_BITS
        | u64::from(self_contained) << (2 * LENGTH_BITS);
    put_header(out, fields, 5);
    put_payload(out, wire_payload);
}

/// Reads and verifies a header of `field_bytes` bytes plus CRC24.
fn read_header(buf: &[u8], field_bytes: usize) -> WireResult<Option<u64>> {
    let Some(header) = buf.get(..field_bytes + CRC24_BYTES) else {
        return Ok(None);
    };
    let (fields, crc) = header.split_at(field_bytes);
    let read_crc = u32::from(crc[0]) | u32::from(crc[1]) << 8 | u32::from(crc[2]) << 16;
    let computed_crc = crc24(fields);
    if read_crc != computed_crc {
        return Err(WireError::SegmentHeaderCrc {
            read_crc,
            computed_crc,
        });
    }
    let mut le = [0u8; 8];
    le[..field_bytes].copy_from_slice(fields);
    Ok(Some(u64::from_le_bytes(le)))
}

fn check_payload_crc(payload: &[u8], trailer: &[u8]) -> WireResult<()> {
    let Some(trailer) = trailer.first_chunk::<SEGMENT_TRAILER_BYTES>() else {
        return Err(WireError::SegmentFraming("missing CRC32 trailer"));
    };
    let read_crc = u32::from_le_bytes(*trailer);
    let computed_crc = crc32(payload);
    if read_crc != computed_crc {
        return Err(WireError::SegmentPayloadCrc {
            read_crc,
            computed_crc,
        });
    }
    Ok(())
}

fn lz4_payload(wire_payload: Bytes, uncompressed_bytes: usize) -> WireResult<Bytes> {
    if uncompressed_bytes == 0 {
        return Ok(wire_payload);
    }
    lz4_block_decompress(&wire_payload, uncompressed_bytes).map(Bytes::from)
}

/// Turns segments back into frames: splits self-contained payloads into
/// their frames, and gathers the slices of a large frame until it is whole.
#[derive(Debug, Clone)]
pub struct FrameAssembler {
    decoder: FrameDecoder,
    large_frame: Option<LargeFrame>,
}

/// A frame arriving over several non-self-contained segments.
#[derive(Debug, Clone)]
struct LargeFrame {
    frame_bytes: usize,
    received: BytesMut,
}

impl FrameAssembler {
    pub fn new(limits: Limits) -> FrameAssembler {
        FrameAssembler {
            decoder: FrameDecoder::new(limits),
            large_frame: None,
        }
    }

    /// Takes the next segment; returns the frames it completes (possibly none).
    pub fn push(&mut self, segment: Segment) -> WireResult<Vec<Frame>> {
        match (segment.self_contained, self.large_frame.is_some()) {
            (true, true) => Err(WireError::SegmentFraming(
                "self-contained segment while a large frame is incomplete",
            )),
            (true, false) => self.split_frames(segment.payload),
            (false, _) => self.continue_large_frame(segment.payload),
        }
    }

    fn split_frames(&self, payload: Bytes) -> WireResult<Vec<Frame>> {
        let mut buf = BytesMut::from(payload);
        let mut frames = Vec::new();
        while !buf.is_empty() {
            match self.decoder.decode(&mut buf)? {
                Some(frame) => frames.push(frame),
                None => {
                    return Err(WireError::SegmentFraming(
                        "self-contained segment ends inside a frame",
                    ))
                }
            }
        }
        Ok(frames)
    }

    fn continue_large_frame(&mut self, payload: Bytes) -> WireResult<Vec<Frame>> {
        let mut large = match self.large_frame.take() {
            Some(large) => large,
            None => self.start_large_frame(&payload)?,
        };
        large.received.extend_from_slice(&payload);
        if large.received.len() < large.frame_bytes {
            self.large_frame = Some(large);
            return Ok(Vec::new());
        }
        if large.received.len() > large.frame_bytes {
            return Err(WireError::SegmentFraming(
                "non-self-contained segment goes past the end of its frame",
            ));
        }
        let frame = self.decoder.decode(&mut large.received)?;
        Ok(frame.into_iter().collect())
    }

    /// The first slice of a large frame starts with the frame header, whose
    /// length is checked against `max_frame_bytes` before anything is kept.
    fn start_large_frame(&self, payload: &[u8]) -> WireResult<LargeFrame> {
        let max_frame_bytes = self.decoder.limits().max_frame_bytes;
        let Some(header) = FrameHeader::parse(payload, max_frame_bytes)? else {
            return Err(WireError::SegmentFraming(
                "first segment of a large frame is shorter than a frame header",
            ));
        };
        Ok(LargeFrame {
            frame_bytes: FRAME_HEADER_BYTES + header.body_bytes as usize,
            received: BytesMut::new(),
        })
    }
}

/// Bytes in, frames out, for a v5 connection after the handshake: segment
/// decoding and frame assembly behind the same call shape as `FrameDecoder`.
#[derive(Debug, Clone)]
pub struct SegmentedFrameDecoder {
    codec: SegmentCodec,
    assembler: FrameAssembler,
    ready: VecDeque<Frame>,
}

impl SegmentedFrameDecoder {
    pub fn new(compression: SegmentCompression, limits: Limits) -> SegmentedFrameDecoder {
        SegmentedFrameDecoder {
            codec: SegmentCodec::new(compression),
            assembler: FrameAssembler::new(limits),
            ready: VecDeque::new(),
        }
    }

    /// Returns the next complete frame, consuming whole segments from `buf`,
    /// or `Ok(None)` when more bytes are needed.
    pub fn decode(&mut self, buf: &mut BytesMut) -> WireResult<Option<Frame>> {
        while self.ready.is_empty() {
            let Some(segment) = self.codec.decode_segment(buf)? else {
                return Ok(None);
            };
            self.ready.extend(self.assembler.push(segment)?);
        }
        Ok(self.ready.pop_front())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{FrameFlags, Opcode, ProtocolVersion};

    fn frame(stream: i16, body_bytes: usize) -> Frame {
        let body: Vec<u8> = (0..body_bytes).map(|i| (i % 251) as u8).collect();
        Frame::new(
            ProtocolVersion::V5,
            FrameFlags::default(),
            stream,
            Opcode::Query,
            Bytes::from(body),
        )
        .expect("frame")
    }

    #[test]
    fn uncompressed_segment_matches_hand_checked_bytes() {
        let codec = SegmentCodec::new(SegmentCompression::None);
        let mut out = BytesMut::new();
        codec
            .encode_segment(b"hello", true, &mut out)
            .expect("encodes");
        // Length 5 with the self-contained bit (bit 17), CRC24 0x9a9919,
        // payload, then CRC32 (seeded) of "hello", all little-endian.
        let crc32_hello = crc32(b"hello").to_le_bytes();
        let mut expected = vec![0x05, 0x00, 0x02, 0x19, 0x99, 0x9a];
        expected.extend_from_slice(b"hello");
        expected.extend_from_slice(&crc32_hello);
        assert_eq!(&out[..], &expected[..]);
        let segment = codec
            .decode_segment(&mut out)
            .expect("valid")
            .expect("complete");
        assert!(segment.self_contained);
        assert_eq!(&segment.payload[..], b"hello");
    }

    #[test]
    fn corrupt_header_and_payload_are_detected() {
        let codec = SegmentCodec::new(SegmentCompression::None);
        let mut out = BytesMut::new();
        codec
            .encode_segment(b"hello", false, &mut out)
            .expect("encodes");
        let mut bad_header = out.clone();
        bad_header[0] ^= 1;
        assert!(matches!(
            codec.decode_segment(&mut bad_header),
            Err(WireError::SegmentHeaderCrc { .. })
        ));
        let mut bad_payload = out.clone();
        bad_payload[7] ^= 1;
        assert!(matches!(
            codec.decode_segment(&mut bad_payload),
            Err(WireError::SegmentPayloadCrc { .. })
        ));
    }

    #[test]
    fn compressed_segments_round_trip_and_fall_back_to_raw() {
        let codec = SegmentCodec::new(SegmentCompression::Lz4);
        for payload in [vec![7u8; 10_000], b"xyz".to_vec(), Vec::new()] {
            let mut out = BytesMut::new();
            codec
                .encode_segment(&payload, true, &mut out)
                .expect("encodes");
            let segment = codec
                .decode_segment(&mut out)
                .expect("valid")
                .expect("complete");
            assert_eq!(&segment.payload[..], &payload[..]);
            assert!(out.is_empty());
        }
    }

    #[test]
    fn small_frames_share_a_segment_and_large_frames_are_split() {
        for compression in [SegmentCompression::None, SegmentCompression::Lz4] {
            let codec = SegmentCodec::new(compression);
            let frames = vec![frame(1, 10), frame(2, 20), frame(3, 300_000), frame(4, 5)];
            let mut wire = BytesMut::new();
            codec.encode_frames(&frames, &mut wire).expect("encodes");
            let mut segments = Vec::new();
            let mut copy = wire.clone();
            while let Some(s) = codec.decode_segment(&mut copy).expect("valid") {
                segments.push(s.self_contained);
            }
            assert_eq!(segments, [true, false, false, false, true]);
            let mut decoder = SegmentedFrameDecoder::new(compression, Limits::default());
            let mut decoded = Vec::new();
            // Feed one byte at a time for the first segment, then the rest.
            let mut buf = BytesMut::new();
            for byte in wire.iter() {
                buf.put_u8(*byte);
                while let Some(f) = decoder.decode(&mut buf).expect("valid") {
                    decoded.push(f);
                }
            }
            assert_eq!(decoded, frames);
        }
    }

    #[test]
    fn large_frame_above_the_limit_is_rejected_at_its_first_segment() {
        let codec = SegmentCodec::new(SegmentCompression::None);
        let mut wire = BytesMut::new();
        codec
            .encode_frames(&[frame(9, 300_000)], &mut wire)
            .expect("encodes");
        let limits = Limits {
            max_frame_bytes: 200_000,
        };
        let mut decoder = SegmentedFrameDecoder::new(SegmentCompression::None, limits);
        assert!(matches!(
            decoder.decode(&mut wire),
            Err(WireError::FrameTooBig { stream: 9, .. })
        ));
    }
}

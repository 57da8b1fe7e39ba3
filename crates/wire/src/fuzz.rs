//! One entry point that feeds arbitrary bytes to every decoder, shared by the
//! `frame_decode` cargo-fuzz target and the crate's no-panic property test.

use bytes::{Bytes, BytesMut};

use crate::compression::BodyCompression;
use crate::envelope::{decode_request, decode_response};
use crate::frame::{Direction, Frame, FrameDecoder, FrameFlags, FrameHeader, ProtocolVersion};
use crate::limits::Limits;
use crate::primitives::Reader;
use crate::segment::{SegmentCompression, SegmentedFrameDecoder};
use crate::types::{parse_marshal, read_type};

/// A small frame limit so that the fuzzer reaches the "too big" paths.
const FUZZ_MAX_FRAME_BYTES: u64 = 1 << 20;

/// Runs `data` through the segment, frame and message decoders. Must never
/// panic, whatever the bytes; the results are discarded.
pub fn decode_all(data: &[u8]) {
    let limits = Limits {
        max_frame_bytes: FUZZ_MAX_FRAME_BYTES,
    };
    decode_frames(data, limits);
    for compression in [SegmentCompression::None, SegmentCompression::Lz4] {
        decode_segments(data, compression, limits);
    }
    decode_bodies(data, limits);
    let _ = read_type(&mut Reader::new(Bytes::copy_from_slice(data)));
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_marshal(text);
    }
    for compression in [BodyCompression::Lz4, BodyCompression::Snappy] {
        let _ = compression.decompress(data, FUZZ_MAX_FRAME_BYTES);
    }
}

fn decode_frames(data: &[u8], limits: Limits) {
    let decoder = FrameDecoder::new(limits);
    let mut buf = BytesMut::from(data);
    while let Ok(Some(frame)) = decoder.decode(&mut buf) {
        decode_messages(&frame, limits);
    }
}

fn decode_segments(data: &[u8], compression: SegmentCompression, limits: Limits) {
    let mut decoder = SegmentedFrameDecoder::new(compression, limits);
    let mut buf = BytesMut::from(data);
    while let Ok(Some(frame)) = decoder.decode(&mut buf) {
        decode_messages(&frame, limits);
    }
}

/// Treats the input as a message body under every opcode, flag set and version.
fn decode_bodies(data: &[u8], limits: Limits) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    for version in [
        ProtocolVersion::V3,
        ProtocolVersion::V4,
        ProtocolVersion::V5,
    ] {
        for opcode_byte in 0..=0x10u8 {
            for direction in [Direction::Request, Direction::Response] {
                let header = FrameHeader {
                    version,
                    direction,
                    flags: FrameFlags::from_byte(selector),
                    stream: 0,
                    opcode_byte,
                    body_bytes: body.len() as u32,
                };
                let frame = Frame {
                    header,
                    body: Bytes::copy_from_slice(body),
                };
                decode_messages(&frame, limits);
            }
        }
    }
}

fn decode_messages(frame: &Frame, limits: Limits) {
    for compression in [
        None,
        Some(BodyCompression::Lz4),
        Some(BodyCompression::Snappy),
    ] {
        let _ = decode_request(frame, compression, limits);
        let _ = decode_response(frame, compression, limits);
    }
}

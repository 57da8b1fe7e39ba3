//! Fuzz target `frame_decode`: arbitrary bytes into the segment, frame and message decoders.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    rocksandra_wire::fuzz::decode_all(data);
});

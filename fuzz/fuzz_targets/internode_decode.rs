//! Internode frames from a peer: decoding never panics and never allocates
//! by an untrusted length.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rocksandra_cluster::message::{decode_body, frame_length, Envelope, Hello};

fuzz_target!(|data: &[u8]| {
    if data.len() >= 4 {
        let _ = frame_length([data[0], data[1], data[2], data[3]]);
    }
    let _ = decode_body::<Envelope>(data);
    let _ = decode_body::<Hello>(data);
});

//! Fuzz target: decoding stored keys and values (and merging and purging
//! them) never panics on arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocksandra_data::LocalTime;
use rocksandra_storage::layout::{keys, values};
use rocksandra_storage::merge::{filter_entry, merge_entry};
use rocksandra_storage::testkit::test_table;

fuzz_target!(|data: &[u8]| {
    let spec = test_table(1);
    let (key, value) = data.split_at(data.len() / 2);
    if let Ok((_, _, prefix_len)) = keys::split_partition(key) {
        let _ = keys::decode_after_prefix(&spec.clustering, &key[prefix_len..]);
    }
    let _ = values::decode_row(value);
    let _ = merge_entry(Some(key), [value]);
    let _ = filter_entry(key, value, LocalTime(1_700_000_000), 10);
});

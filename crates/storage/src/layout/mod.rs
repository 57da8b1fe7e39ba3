//! The byte layout of everything the engine stores: RocksDB keys (`keys`) and
//! values (`values`). Architecture invariant: no other module reads or writes
//! stored bytes. Documented in `docs/internals/storage-format.md`; a change
//! here needs a format version bump and a fixture.

pub mod keys;
pub mod paths;
pub mod stream_file;
pub mod table_options;
pub mod values;

/// Error from decoding stored bytes: corrupt or foreign data, never a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("corrupt stored {what}: {detail}")]
pub struct CorruptData {
    pub what: &'static str,
    pub detail: String,
}

impl CorruptData {
    pub(crate) fn new(what: &'static str, detail: impl Into<String>) -> CorruptData {
        CorruptData {
            what,
            detail: detail.into(),
        }
    }
}

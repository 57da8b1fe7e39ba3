//! The storage engine: Cassandra's data model on an ordered key-value store.
//!
//! Layers, top to bottom:
//! - `api`: the engine API (write, read, stream) the server calls.
//! - `engine`: `KvEngine`, that API implemented once over any `KvStore`.
//! - `kv`: the backend seam; `memory` is the in-memory backend, the RocksDB
//!   backend lives in `rocksandra-storage-rocksdb`.
//! - `layout`: the byte layout of keys and values (owns every stored byte).
//! - `cell` + `merge`: reconciliation and purging (the one last-write-wins).
//! - `testkit` (feature `testkit`, for tests): the conformance suite and
//!   the reference model every engine is checked against.
//!
//! - `fs`: the one atomic file write.
//! - `import`: a snapshot table's stored values rewritten for a live table.
//!
//! Architecture invariant: this crate does not link RocksDB and does no IO
//! except writing stream and snapshot files of the in-memory backend and
//! `fs::write_atomically`.

pub mod api;
pub mod cell;
pub mod engine;
pub mod fs;
pub mod import;
pub mod kv;
pub mod layout;
pub mod memory;
pub mod merge;
pub mod partition_guard;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

pub use api::*;
pub use engine::group::{DirectWrites, WriteGroup, WRITE_GROUP_BYTES_MAX};
pub use engine::KvEngine;

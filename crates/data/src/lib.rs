//! The vocabulary of Rocksandra: CQL types and values, tokens, timestamps.
//!
//! This crate does no IO and knows nothing of schema storage, the network or
//! RocksDB. Every other crate depends on it.

pub mod comparable;
pub mod time;
pub mod token;
pub mod types;
pub mod uuid;
pub mod value;

pub use time::{LocalTime, Timestamp};
pub use token::Token;
pub use types::{CqlType, NativeType};
pub use value::{Value, ValueError};

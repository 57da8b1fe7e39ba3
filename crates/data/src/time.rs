//! Write timestamps (client or coordinator chosen, microseconds) and local
//! times (server clock, seconds), the two clocks of Cassandra's data model.

use serde::{Deserialize, Serialize};

/// A write timestamp in microseconds since the Unix epoch, as CQL's
/// `USING TIMESTAMP` and `writetime()` see it. Reconciliation compares these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// Cassandra's "no timestamp" marker (`Long.MIN_VALUE`), used for "live" deletion times.
    pub const MIN: Timestamp = Timestamp(i64::MIN);

    pub fn micros(self) -> i64 {
        self.0
    }
}

/// A local time in seconds since the Unix epoch, taken from the server clock
/// when a write or delete arrives. TTL expiry and gc_grace are measured on it
/// (never on the client's write timestamp).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LocalTime(pub i64);

impl LocalTime {
    pub fn seconds(self) -> i64 {
        self.0
    }

    pub fn plus_seconds(self, seconds: i64) -> LocalTime {
        LocalTime(self.0.saturating_add(seconds))
    }
}

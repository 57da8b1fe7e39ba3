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

    /// The local time of `micros` since the Unix epoch (whole seconds,
    /// rounded down as integer division does).
    pub fn of_micros(micros: i64) -> LocalTime {
        LocalTime(micros / 1_000_000)
    }
}

/// Microseconds since the Unix epoch by the system clock: the one place the
/// server reads it (0 before 1970). Logic that decides takes the time as an
/// argument; `rocksandra_query::Env::system` hands this clock to the rest.
#[allow(clippy::disallowed_methods)] // the one allowed reading
pub fn system_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

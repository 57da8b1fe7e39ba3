//! `read_request_timeout` and `range_request_timeout` on this node's own
//! reads: each page a SELECT reads (a client's page, or a batch of an
//! aggregate or ANN query) must finish within the timeout of its kind,
//! counted from the page's start, or the query fails with READ_TIMEOUT as
//! in Cassandra. A scan that filters out every row it meets therefore ends
//! instead of running through the whole table. A cluster's coordinator
//! also bounds each replica's answer (`cluster::coordinator::Timeouts`).
//!
//! Time comes from the executor's clock (`Env::now_micros`), checked
//! between batches of storage reads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rocksandra_wire::Consistency;

use crate::error::{QueryError, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadTimeouts {
    /// Reads of given partitions (`read_request_timeout`).
    pub read: Duration,
    /// Scans of token ranges, filtered or indexed (`range_request_timeout`).
    pub range: Duration,
}

impl Default for ReadTimeouts {
    /// Cassandra's defaults.
    fn default() -> Self {
        ReadTimeouts {
            read: Duration::from_secs(5),
            range: Duration::from_secs(10),
        }
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The timeouts in force, changed at run time by the node's configuration.
#[derive(Debug)]
pub(crate) struct TimeoutSettings {
    read_micros: AtomicU64,
    range_micros: AtomicU64,
}

impl TimeoutSettings {
    pub(crate) fn new(timeouts: ReadTimeouts) -> Self {
        let settings = TimeoutSettings {
            read_micros: AtomicU64::new(0),
            range_micros: AtomicU64::new(0),
        };
        settings.set(timeouts);
        settings
    }

    pub(crate) fn set(&self, timeouts: ReadTimeouts) {
        self.read_micros
            .store(micros(timeouts.read), Ordering::Relaxed);
        self.range_micros
            .store(micros(timeouts.range), Ordering::Relaxed);
    }

    /// How long a page of a read of this kind may take, in microseconds.
    pub(crate) fn micros(&self, range: bool) -> u64 {
        let timeout = if range {
            &self.range_micros
        } else {
            &self.read_micros
        };
        timeout.load(Ordering::Relaxed)
    }
}

/// The end of one page's time, read against the executor's clock.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline {
    pub at_micros: i64,
    pub consistency: Consistency,
}

impl Deadline {
    pub(crate) fn after(now_micros: i64, timeout_micros: u64, consistency: Consistency) -> Self {
        let timeout = i64::try_from(timeout_micros).unwrap_or(i64::MAX);
        Deadline {
            at_micros: now_micros.saturating_add(timeout),
            consistency,
        }
    }

    /// READ_TIMEOUT once `now_micros` is past the deadline.
    pub(crate) fn check(&self, now_micros: i64) -> Result<()> {
        if now_micros <= self.at_micros {
            return Ok(());
        }
        Err(QueryError::ReadTimeout {
            consistency: self.consistency,
            received: 0,
            block_for: 1,
            data_present: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_past_its_deadline_times_out_as_cassandra_says() {
        let d = Deadline::after(1_000, 500, Consistency::One);
        assert!(d.check(1_500).is_ok());
        let e = d.check(1_501).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Operation timed out - received only 0 responses."
        );
        assert!(matches!(e, QueryError::ReadTimeout { block_for: 1, .. }));
        let never = Deadline::after(i64::MAX - 1, u64::MAX, Consistency::One);
        assert!(never.check(i64::MAX).is_ok());
    }
}

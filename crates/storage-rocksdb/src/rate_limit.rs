//! The write rate of flushes and compactions (`compaction_throughput`),
//! changeable while the database runs (`nodetool setcompactionthroughput`).
//!
//! RocksDB's rate limiter is given to the database when it opens; its C API
//! can create one but not change its rate afterwards, so `rate_limit.cc`
//! adds that call. The database always gets a limiter, unthrottled unless
//! a rate is set, so that a rate can be set later without a restart.

use rocksdb::{AsRawPtr, Options};

use librocksdb_sys as ffi;

/// The rate that stands for "unthrottled" (Cassandra's 0): 1 TiB/s, far
/// above any disk, and small enough for RocksDB's per-period arithmetic.
const UNTHROTTLED_BYTES_PER_SECOND: i64 = 1 << 40;
/// RocksDB's usual refill period (100 ms) and fairness (10).
const REFILL_PERIOD_MICROS: i64 = 100_000;
const FAIRNESS: i32 = 10;

extern "C" {
    fn rocksandra_ratelimiter_set_bytes_per_second(
        limiter: *mut ffi::rocksdb_ratelimiter_t,
        bytes_per_second: i64,
    );
    fn rocksandra_ratelimiter_bytes_per_second(limiter: *const ffi::rocksdb_ratelimiter_t) -> i64;
    fn rocksandra_ratelimiter_total_bytes_through(
        limiter: *const ffi::rocksdb_ratelimiter_t,
    ) -> i64;
}

/// Our handle on the database's rate limiter (RocksDB shares it: the
/// database keeps its own reference, so either may be dropped first).
pub struct RateLimit {
    raw: *mut ffi::rocksdb_ratelimiter_t,
}

// SAFETY: RocksDB's rate limiters are thread-safe (the database calls them
// from every flush and compaction thread); the handle is only read.
unsafe impl Send for RateLimit {}
// SAFETY: as above.
unsafe impl Sync for RateLimit {}

impl RateLimit {
    /// A limiter at `bytes_per_second` (None: unthrottled), given to the
    /// database that `options` will open.
    pub fn install(options: &mut Options, bytes_per_second: Option<u64>) -> RateLimit {
        let rate = rate_of(bytes_per_second);
        // SAFETY: plain constructor; the result is owned by `RateLimit`.
        let raw = unsafe { ffi::rocksdb_ratelimiter_create(rate, REFILL_PERIOD_MICROS, FAIRNESS) };
        // SAFETY: both handles are alive; the options take their own
        // reference to the limiter.
        unsafe { ffi::rocksdb_options_set_ratelimiter(options.as_raw_ptr(), raw) };
        RateLimit { raw }
    }

    /// Changes the rate (None: unthrottled); takes effect at the next refill.
    pub fn set(&self, bytes_per_second: Option<u64>) {
        // SAFETY: `raw` is alive as long as `self`.
        unsafe { rocksandra_ratelimiter_set_bytes_per_second(self.raw, rate_of(bytes_per_second)) }
    }

    /// The rate in force; None when unthrottled.
    pub fn get(&self) -> Option<u64> {
        // SAFETY: `raw` is alive as long as `self`.
        let rate = unsafe { rocksandra_ratelimiter_bytes_per_second(self.raw) };
        (rate < UNTHROTTLED_BYTES_PER_SECOND).then(|| u64::try_from(rate).unwrap_or_default())
    }

    /// Bytes the limiter has let through since the database opened.
    pub fn bytes_through(&self) -> u64 {
        // SAFETY: `raw` is alive as long as `self`.
        let bytes = unsafe { rocksandra_ratelimiter_total_bytes_through(self.raw) };
        u64::try_from(bytes).unwrap_or_default()
    }
}

impl Drop for RateLimit {
    fn drop(&mut self) {
        // SAFETY: created by `rocksdb_ratelimiter_create`, destroyed once.
        unsafe { ffi::rocksdb_ratelimiter_destroy(self.raw) }
    }
}

/// RocksDB's rate for `bytes_per_second`: at least 1, at most "unthrottled".
fn rate_of(bytes_per_second: Option<u64>) -> i64 {
    match bytes_per_second {
        Some(bytes) if bytes > 0 => i64::try_from(bytes)
            .map_or(UNTHROTTLED_BYTES_PER_SECOND, |b| {
                b.min(UNTHROTTLED_BYTES_PER_SECOND)
            }),
        _ => UNTHROTTLED_BYTES_PER_SECOND,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_changed_and_read_back() {
        let mut options = Options::default();
        let limit = RateLimit::install(&mut options, Some(16 << 20));
        assert_eq!(limit.get(), Some(16 << 20));
        limit.set(Some(1 << 20));
        assert_eq!(limit.get(), Some(1 << 20));
        limit.set(None);
        assert_eq!(limit.get(), None);
        limit.set(Some(0));
        assert_eq!(limit.get(), None);
        limit.set(Some(u64::MAX));
        assert_eq!(limit.get(), None);
        // The options hold their own reference: dropping ours first is safe.
        drop(limit);
        drop(options);
    }
}

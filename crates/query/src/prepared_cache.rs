//! The prepared-statement cache, bounded in bytes as Cassandra's
//! `prepared_statements_cache_size` bounds it: the oldest statements are
//! evicted once the weights of those kept pass the limit (drivers prepare
//! again when an EXECUTE is answered UNPREPARED).
//!
//! A statement's weight is an estimate, not a measurement: its text four
//! times over (the text itself, and the parsed tree, bound and result
//! metadata and plan that repeat its identifiers and literals, with their
//! nodes) plus `STATEMENT_OVERHEAD_BYTES`.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;

/// Cassandra's default when `prepared_statements_cache_size` is empty
/// ("auto": the larger of 10 MiB and 1/256 of a heap Rocksandra does not
/// have).
pub const DEFAULT_LIMIT_BYTES: u64 = 10 << 20;

/// The weight of a statement besides its text: ids, metadata, plan.
pub const STATEMENT_OVERHEAD_BYTES: u64 = 1 << 10;

/// What one statement of `text_len` bytes is counted as.
pub fn weight(text_len: usize) -> u64 {
    (text_len as u64).saturating_mul(4) + STATEMENT_OVERHEAD_BYTES
}

pub struct PreparedCache<T> {
    by_id: HashMap<Bytes, (Arc<T>, u64)>,
    /// Ids oldest first.
    order: VecDeque<Bytes>,
    bytes: u64,
    limit_bytes: u64,
}

impl<T> PreparedCache<T> {
    pub fn new(limit_bytes: u64) -> Self {
        PreparedCache {
            by_id: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
            limit_bytes,
        }
    }

    /// Keeps `value` under `id` (replacing what was there, in its place in
    /// the eviction order), then evicts the oldest statements while the
    /// cache is over its limit. A statement heavier than the whole limit is
    /// not kept (its PREPARE still answers; the EXECUTE that follows is
    /// answered UNPREPARED, as in Cassandra).
    pub fn insert(&mut self, id: Bytes, value: Arc<T>, weight: u64) {
        if weight > self.limit_bytes {
            return;
        }
        match self.by_id.insert(id.clone(), (value, weight)) {
            Some((_, old)) => self.bytes -= old,
            None => self.order.push_back(id),
        }
        self.bytes += weight;
        self.evict();
    }

    pub fn get(&self, id: &[u8]) -> Option<Arc<T>> {
        self.by_id.get(id).map(|(value, _)| value.clone())
    }

    pub fn set_limit(&mut self, limit_bytes: u64) {
        self.limit_bytes = limit_bytes;
        self.evict();
    }

    /// The weight of the statements kept.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    fn evict(&mut self) {
        while self.bytes > self.limit_bytes {
            let Some(oldest) = self.order.pop_front() else {
                return;
            };
            if let Some((_, weight)) = self.by_id.remove(&oldest) {
                self.bytes -= weight;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> Bytes {
        Bytes::copy_from_slice(&n.to_be_bytes())
    }

    #[test]
    fn the_oldest_go_once_the_weights_pass_the_limit() {
        let mut cache = PreparedCache::new(3 * weight(100));
        for n in 0..3 {
            cache.insert(id(n), Arc::new(n), weight(100));
        }
        assert_eq!(cache.len(), 3);
        cache.insert(id(3), Arc::new(3), weight(100));
        assert_eq!(cache.get(&id(0)), None);
        assert_eq!(cache.get(&id(3)).as_deref(), Some(&3));
        assert_eq!(cache.bytes(), 3 * weight(100));
        // one heavy statement pushes out as many light ones as it needs
        cache.insert(id(4), Arc::new(4), 2 * weight(100));
        assert_eq!(cache.len(), 2);
        assert!(cache.bytes() <= 3 * weight(100));
    }

    #[test]
    fn a_statement_heavier_than_the_limit_is_not_kept() {
        let mut cache = PreparedCache::new(weight(1 << 20));
        cache.insert(id(1), Arc::new(1), weight(100));
        cache.insert(id(2), Arc::new(2), weight(2 << 20));
        assert_eq!(cache.get(&id(2)), None);
        assert_eq!(cache.get(&id(1)).as_deref(), Some(&1));
    }

    #[test]
    fn preparing_again_replaces_without_counting_twice() {
        let mut cache = PreparedCache::new(10 * weight(10));
        cache.insert(id(1), Arc::new(1), weight(10));
        cache.insert(id(1), Arc::new(2), weight(10));
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.bytes(), weight(10));
        assert_eq!(cache.get(&id(1)).as_deref(), Some(&2));
        cache.set_limit(0);
        assert!(cache.is_empty());
        assert_eq!(cache.bytes(), 0);
    }
}

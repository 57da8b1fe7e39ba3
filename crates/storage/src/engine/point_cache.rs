//! The point cache: the stored entries of recently read partitions of tables
//! without clustering columns (a partition header and one row), so that a
//! repeated point read answers from memory instead of the store.
//!
//! It holds the entries' bytes as the store returned them (merged), never
//! decoded rows: a hit is decoded at the reader's `now` like a store read, so
//! TTLs expire and deletions apply exactly as they would from the store.
//!
//! Coherence rests on two rules:
//! - Every store write goes through `KvEngine::apply`, which after the write
//!   calls `invalidate` for each partition it touched; every bulk change
//!   (ingest, truncate, drop, range deletion, alter) calls `clear` after it.
//! - A read that misses gets a `Ticket` under its shard's lock *before* it
//!   reads the store, and `fill` stores what it read only if no write touched
//!   that shard and no `clear` happened in between.
//!
//! So an entry never predates a write that finished before the entry could
//! be read: the writer's invalidation either removes it or makes its fill a
//! no-op. The bound is in bytes, split evenly over the shards.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use lru::LruCache;

use crate::api::TableId;

/// Shards, each with its own lock and least-recently-used order.
const SHARDS: usize = 64;

/// An entry larger than this is not cached (it would evict many small ones
/// for a read that is dominated by copying its bytes anyway).
pub const POINT_CACHE_MAX_ENTRY_BYTES: usize = 64 << 10;

/// What an entry costs beyond its bytes: the map slot, the list links, the
/// `Arc` and the boxes' headers (an estimate).
const ENTRY_OVERHEAD_BYTES: usize = 128;

/// A partition's stored entries: its header (partition deletion) and its row.
#[derive(Debug)]
pub struct Cached {
    generation: u64,
    pub header: Option<Box<[u8]>>,
    pub row: Option<Box<[u8]>>,
}

/// What a missed read must show `fill`: the state of its shard when it
/// missed.
#[derive(Debug)]
pub struct Ticket {
    key: Vec<u8>,
    shard: usize,
    writes: u64,
    generation: u64,
}

/// Hits, misses and the bytes held, for the metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PointCacheStats {
    pub hits: u64,
    pub misses: u64,
    pub bytes: u64,
}

struct Shard {
    entries: LruCache<Vec<u8>, Arc<Cached>>,
    bytes: usize,
    /// Invalidations since start: a fill is void if this moved.
    writes: u64,
    /// Counted per shard, under its lock, so readers on different cores
    /// do not contend on one counter.
    hits: u64,
    misses: u64,
}

pub struct PointCache {
    shards: Box<[Mutex<Shard>]>,
    shard_budget: usize,
    generation: AtomicU64,
}

impl PointCache {
    /// A cache of at most `capacity` bytes; `None` when `capacity` is 0.
    pub fn new(capacity: usize) -> Option<PointCache> {
        if capacity == 0 {
            return None;
        }
        let shards = (0..SHARDS)
            .map(|_| {
                Mutex::new(Shard {
                    entries: LruCache::unbounded(),
                    bytes: 0,
                    writes: 0,
                    hits: 0,
                    misses: 0,
                })
            })
            .collect();
        Some(PointCache {
            shards,
            shard_budget: capacity / SHARDS,
            generation: AtomicU64::new(0),
        })
    }

    /// The cached entries of `prefix`'s partition, or the ticket to fill them
    /// with after reading the store.
    pub fn lookup(&self, table: TableId, prefix: &[u8]) -> Result<Arc<Cached>, Ticket> {
        let key = cache_key(table, prefix);
        let shard_index = self.shard_of(&key);
        let generation = self.generation.load(Ordering::SeqCst);
        let mut shard = self.lock(shard_index);
        let found = match shard.entries.get(key.as_slice()) {
            Some(found) if found.generation == generation => Some(Arc::clone(found)),
            _ => None,
        };
        if let Some(found) = found {
            shard.hits += 1;
            return Ok(found);
        }
        shard.misses += 1;
        Err(Ticket {
            key,
            shard: shard_index,
            writes: shard.writes,
            generation,
        })
    }

    /// Stores what a read that missed found, unless a write or a clear came
    /// between its `lookup` and now.
    pub fn fill(&self, ticket: Ticket, header: Option<Vec<u8>>, row: Option<Vec<u8>>) {
        let stored = header.as_ref().map_or(0, Vec::len) + row.as_ref().map_or(0, Vec::len);
        let weight = ticket.key.len() + stored + ENTRY_OVERHEAD_BYTES;
        if stored > POINT_CACHE_MAX_ENTRY_BYTES || weight > self.shard_budget {
            return;
        }
        let entry = Arc::new(Cached {
            generation: ticket.generation,
            header: header.map(Vec::into_boxed_slice),
            row: row.map(Vec::into_boxed_slice),
        });
        let mut shard = self.lock(ticket.shard);
        if shard.writes != ticket.writes
            || self.generation.load(Ordering::SeqCst) != ticket.generation
        {
            return;
        }
        let key_len = ticket.key.len();
        if let Some(old) = shard.entries.put(ticket.key, entry) {
            shard.bytes -= entry_weight(key_len, &old);
        }
        shard.bytes += weight;
        while shard.bytes > self.shard_budget {
            match shard.entries.pop_lru() {
                Some((k, old)) => shard.bytes -= entry_weight(k.len(), &old),
                None => break,
            }
        }
    }

    /// Forgets `prefix`'s partition; called after every write to it.
    pub fn invalidate(&self, table: TableId, prefix: &[u8]) {
        let key = cache_key(table, prefix);
        let mut shard = self.lock(self.shard_of(&key));
        shard.writes += 1;
        if let Some(old) = shard.entries.pop(key.as_slice()) {
            shard.bytes -= entry_weight(key.len(), &old);
        }
    }

    /// Forgets everything; called after every bulk change to the store.
    pub fn clear(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        for i in 0..self.shards.len() {
            let mut shard = self.lock(i);
            shard.writes += 1;
            shard.entries.clear();
            shard.bytes = 0;
        }
    }

    pub fn stats(&self) -> PointCacheStats {
        let mut stats = PointCacheStats::default();
        for i in 0..self.shards.len() {
            let shard = self.lock(i);
            stats.hits += shard.hits;
            stats.misses += shard.misses;
            stats.bytes += shard.bytes as u64;
        }
        stats
    }

    /// The shard of a cache key: its partition's token (already a hash),
    /// mixed with the table's id.
    fn shard_of(&self, key: &[u8]) -> usize {
        let word = |range: std::ops::Range<usize>| {
            key.get(range)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_be_bytes)
        };
        let mixed = (word(8..16) ^ word(0..8).rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (mixed >> 32) as usize % self.shards.len()
    }

    /// A shard's lock; a poisoned one is taken anyway (its counters and map
    /// are updated in steps that cannot panic halfway).
    fn lock(&self, i: usize) -> MutexGuard<'_, Shard> {
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn cache_key(table: TableId, prefix: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(8 + prefix.len());
    key.extend_from_slice(&table.0.to_be_bytes());
    key.extend_from_slice(prefix);
    key
}

fn entry_weight(key_len: usize, entry: &Cached) -> usize {
    key_len
        + entry.header.as_deref().map_or(0, <[u8]>::len)
        + entry.row.as_deref().map_or(0, <[u8]>::len)
        + ENTRY_OVERHEAD_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: TableId = TableId(7);

    fn prefix(token: u8) -> Vec<u8> {
        vec![token, 1, 2, 3, 4, 5, 6, 7, b'k', 0, 0]
    }

    fn fill(cache: &PointCache, p: &[u8], row: &[u8]) -> bool {
        match cache.lookup(T, p) {
            Ok(_) => false,
            Err(ticket) => {
                cache.fill(ticket, None, Some(row.to_vec()));
                true
            }
        }
    }

    #[test]
    fn a_filled_entry_is_a_hit_until_its_partition_is_written() {
        let cache = PointCache::new(1 << 20).expect("cache");
        assert!(fill(&cache, &prefix(1), b"row"));
        let hit = cache.lookup(T, &prefix(1)).expect("hit");
        assert_eq!(hit.row.as_deref(), Some(&b"row"[..]));
        assert!(hit.header.is_none());
        assert!(
            cache.lookup(TableId(8), &prefix(1)).is_err(),
            "another table"
        );
        cache.invalidate(T, &prefix(1));
        assert!(cache.lookup(T, &prefix(1)).is_err());
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses, stats.bytes), (1, 3, 0));
    }

    #[test]
    fn a_write_between_the_miss_and_the_fill_voids_the_fill() {
        let cache = PointCache::new(1 << 20).expect("cache");
        let Err(ticket) = cache.lookup(T, &prefix(1)) else {
            panic!("empty cache hit")
        };
        cache.invalidate(T, &prefix(1));
        cache.fill(ticket, None, Some(b"old".to_vec()));
        assert!(cache.lookup(T, &prefix(1)).is_err(), "stale fill kept");
    }

    #[test]
    fn a_clear_between_the_miss_and_the_fill_voids_the_fill() {
        let cache = PointCache::new(1 << 20).expect("cache");
        let Err(ticket) = cache.lookup(T, &prefix(1)) else {
            panic!("empty cache hit")
        };
        cache.clear();
        cache.fill(ticket, None, Some(b"old".to_vec()));
        assert!(cache.lookup(T, &prefix(1)).is_err(), "stale fill kept");
        assert!(fill(&cache, &prefix(1), b"new"));
        cache.clear();
        assert!(cache.lookup(T, &prefix(1)).is_err());
        assert_eq!(cache.stats().bytes, 0);
    }

    #[test]
    fn the_bytes_held_stay_within_capacity() {
        let capacity = SHARDS * 4096;
        let cache = PointCache::new(capacity).expect("cache");
        let row = vec![9u8; 1000];
        for token in 0..=255u8 {
            for n in 0..8u8 {
                let mut p = prefix(token);
                p[1] = n;
                fill(&cache, &p, &row);
            }
        }
        let stats = cache.stats();
        assert!(stats.bytes as usize <= capacity, "{stats:?}");
        assert!(stats.bytes > 0);
        // Filling the same partition twice counts it once.
        let cache = PointCache::new(1 << 20).expect("cache");
        let (Err(first), Err(second)) = (cache.lookup(T, &prefix(3)), cache.lookup(T, &prefix(3)))
        else {
            panic!("hit")
        };
        cache.fill(first, None, Some(row.clone()));
        let once = cache.stats().bytes;
        cache.fill(second, None, Some(row.clone()));
        assert_eq!(cache.stats().bytes, once);
    }

    /// The coherence rule's first half, checked in the engine's source: one
    /// call writes to the store (in `apply`), and every bulk change of the
    /// store is followed by `changed_in_bulk`.
    #[test]
    fn every_store_write_goes_through_apply() {
        let sources = [include_str!("../engine.rs"), include_str!("purge.rs")];
        let count = |needle: &str| {
            sources
                .iter()
                .map(|s| s.matches(needle).count())
                .sum::<usize>()
        };
        assert_eq!(count("self.store.write("), 1, "store writes outside apply");
        let engine = sources[0];
        let apply = engine.find("fn apply(").expect("apply");
        let write = engine.find("self.store.write(").expect("write");
        assert!(
            write > apply && write - apply < 400,
            "the store write is not apply's"
        );
        for bulk in [
            "self.store.truncate(",
            "self.store.ingest(",
            "self.store.drop_table(",
            "self.store.set_options(",
        ] {
            assert_eq!(count(bulk), 1, "{bulk}");
            let at = engine.find(bulk).expect("bulk change");
            let next_line = engine[at..].lines().nth(1).unwrap_or_default();
            assert!(
                next_line.contains("self.changed_in_bulk()"),
                "{bulk} without changed_in_bulk"
            );
        }
    }

    #[test]
    fn entries_too_large_or_a_zero_capacity_are_not_cached() {
        assert!(PointCache::new(0).is_none());
        let cache = PointCache::new(64 << 20).expect("cache");
        assert!(fill(
            &cache,
            &prefix(1),
            &vec![0u8; POINT_CACHE_MAX_ENTRY_BYTES + 1]
        ));
        assert!(cache.lookup(T, &prefix(1)).is_err());
    }
}

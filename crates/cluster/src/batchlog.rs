//! The batchlog: a logged batch survives the crash of its coordinator (as
//! Cassandra's `BatchlogManager`).
//!
//! Before it applies a logged batch that spans several partitions, the
//! coordinator stores the whole batch on one or two other live nodes of its
//! data center (`endpoints`), and removes it there once every mutation was
//! acknowledged as the consistency level asks. A node whose stored batches
//! are older than `BATCHLOG_TIMEOUT` replays them (their coordinator died,
//! or failed to reach the replicas) through the normal write path, then
//! removes them: every mutation of the batch is applied, or none of the
//! client's writes was acknowledged and all are applied later. Mutations
//! carry their own timestamps, so a replay applied twice changes nothing.
//!
//! Layout (owned here, `docs/internals/internode.md`): table
//! `BATCHLOG_TABLE` (no clustering columns); partition key = the 16-byte
//! `BatchId`; one row, one cell (`ENTRY_COLUMN`) holding
//! `ENTRY_FORMAT_VERSION` and the postcard encoding of the `BatchEntry`,
//! written with the batch's time as timestamp. Removal is a partition
//! deletion one microsecond later; gc_grace is 0, so compaction drops both.
//! Writes go through the engine's WAL like any write (synced as
//! `commitlog_sync` says), as Cassandra's `system.batches` goes through its
//! commit log.

use std::net::IpAddr;
use std::time::Duration;

use rocksandra_data::{LocalTime, Timestamp, Token};
use rocksandra_storage::cell::{Cell, ColumnId, DeletionTime};
use rocksandra_storage::{
    Engine, Mutation, PartitionKey, RangeScan, RowUpdate, StorageError, TableId,
};
use serde::{Deserialize, Serialize};

use crate::message::{RecordError, RemoteError, Request, Response};

/// The reserved storage id of the batchlog table (next to the Paxos state
/// table, `paxos_store::PAXOS_STATE_TABLE`).
pub const BATCHLOG_TABLE: TableId = TableId(u64::MAX - 65);
/// A stored batch this old is replayed: its coordinator had twice
/// `write_request_timeout` to apply and remove it (Cassandra's
/// `BatchlogManager.getBatchlogTimeout`).
pub const BATCHLOG_TIMEOUT: Duration = Duration::from_secs(4);
/// How often a node looks for batches to replay (Cassandra's
/// `BatchlogManager` replay interval).
pub const REPLAY_PERIOD: Duration = Duration::from_secs(10);
/// Batches read per page of the replay scan.
pub const REPLAY_PAGE: usize = 64;
/// Batches replayed per round at most; the rest wait for the next one.
pub const REPLAY_PER_ROUND: usize = 1024;
/// The one cell of a batch row.
const ENTRY_COLUMN: ColumnId = ColumnId(1);
/// Leads a stored entry's bytes; changes when `BatchEntry` does.
pub const ENTRY_FORMAT_VERSION: u8 = 1;

/// A batch's id: its time (microseconds, big-endian) then the
/// coordinator's address bits and a sequence number, unique per coordinator.
pub type BatchId = [u8; 16];

/// A logged batch as stored on the batchlog nodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchEntry {
    /// When the coordinator stored it (microseconds since the epoch).
    pub written_at_micros: i64,
    /// The coordinator's local time for the write (TTL and deletion times).
    pub now: LocalTime,
    pub mutations: Vec<Mutation>,
}

/// The id of a batch a coordinator at `local` writes at `micros`, as its
/// `sequence`th batch.
pub fn batch_id(micros: i64, local: IpAddr, sequence: u32) -> BatchId {
    let address: u32 = match local {
        IpAddr::V4(v4) => u32::from(v4),
        IpAddr::V6(v6) => v6.octets().chunks(4).fold(0u32, |h, c| {
            h.rotate_left(5) ^ u32::from_be_bytes([c[0], c[1], c[2], c[3]])
        }),
    };
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&micros.to_be_bytes());
    id[8..12].copy_from_slice(&address.to_be_bytes());
    id[12..].copy_from_slice(&sequence.to_be_bytes());
    id
}

/// A node that may hold a batch: its address, rack and liveness.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub address: IpAddr,
    pub rack: String,
    pub alive: bool,
}

/// The nodes a coordinator stores a batch on, among the members of its
/// data center (`local_dc`, itself included), as Cassandra picks them:
///
/// - the coordinator alone when it is its data center's only node;
/// - otherwise live nodes other than itself: all of them when there are at
///   most two; else two, taken outside the coordinator's rack when at least
///   two live nodes are there, and from two different racks when there are
///   several racks to choose from.
///
/// `pick(n)` chooses an index below n (randomness comes in as an argument).
/// An empty answer means no node can hold the batch (Unavailable, unless
/// the consistency is ANY: then the coordinator keeps it itself).
pub fn endpoints(
    local: IpAddr,
    local_rack: &str,
    local_dc: &[Candidate],
    pick: &mut dyn FnMut(usize) -> usize,
) -> Vec<IpAddr> {
    if local_dc.len() == 1 && local_dc[0].address == local {
        return vec![local];
    }
    let mut live: Vec<&Candidate> = local_dc
        .iter()
        .filter(|c| c.alive && c.address != local)
        .collect();
    live.sort_by_key(|c| c.address);
    if live.len() <= 2 {
        return live.iter().map(|c| c.address).collect();
    }
    let elsewhere = live.iter().filter(|c| c.rack != local_rack).count();
    if elsewhere >= 2 {
        live.retain(|c| c.rack != local_rack);
    }
    let mut racks: Vec<&str> = live.iter().map(|c| c.rack.as_str()).collect();
    racks.sort_unstable();
    racks.dedup();
    if racks.len() == 1 {
        let first = live.remove(pick(live.len()) % live.len());
        let second = live.remove(pick(live.len()) % live.len());
        return vec![first.address, second.address];
    }
    let mut chosen = Vec::with_capacity(2);
    while chosen.len() < 2 {
        let rack = racks.remove(pick(racks.len()) % racks.len());
        let members: Vec<&&Candidate> = live.iter().filter(|c| c.rack == rack).collect();
        chosen.push(members[pick(members.len()) % members.len()].address);
    }
    chosen
}

/// Creates the batchlog table (at every start: the engine's table registry
/// is in memory; stored batches stay).
pub fn open(engine: &dyn Engine) -> Result<(), StorageError> {
    crate::replica::open_reserved_table(engine, BATCHLOG_TABLE)
}

pub fn encode_entry(entry: &BatchEntry) -> Vec<u8> {
    crate::message::encode_versioned(ENTRY_FORMAT_VERSION, entry)
}

pub fn decode_entry(bytes: &[u8]) -> Result<BatchEntry, RecordError> {
    crate::message::decode_versioned(ENTRY_FORMAT_VERSION, bytes, "batchlog entry")
}

/// Stores `entry` under `id` (durable as the engine's writes are).
pub fn store(engine: &dyn Engine, id: BatchId, entry: &BatchEntry) -> Result<(), StorageError> {
    let mut m = Mutation::new(BATCHLOG_TABLE, PartitionKey::new(id.to_vec()));
    m.rows.push((
        Vec::new(),
        RowUpdate {
            cells: vec![Cell::live(
                ENTRY_COLUMN,
                entry.written_at_micros,
                encode_entry(entry),
            )],
            ..RowUpdate::default()
        },
    ));
    engine.write(&[m], entry.now)
}

/// Removes the batch `id` written at `written_at_micros`.
pub fn remove(
    engine: &dyn Engine,
    id: BatchId,
    written_at_micros: i64,
    now: LocalTime,
) -> Result<(), StorageError> {
    let mut m = Mutation::new(BATCHLOG_TABLE, PartitionKey::new(id.to_vec()));
    m.partition_deletion = Some(DeletionTime {
        marked_for_delete_at: Timestamp(written_at_micros.saturating_add(1)),
        local_deletion_time: now,
    });
    engine.write(&[m], now)
}

/// A stored batch, or why its bytes could not be read.
pub type StoredBatch = (BatchId, Result<BatchEntry, RecordError>);

/// The stored batches written before `older_than_micros` (at most `limit`).
pub fn due(
    engine: &dyn Engine,
    older_than_micros: i64,
    now: LocalTime,
    limit: usize,
) -> Result<Vec<StoredBatch>, StorageError> {
    let mut found = Vec::new();
    let mut scan = RangeScan {
        table: BATCHLOG_TABLE,
        token_start: Token(i64::MIN),
        token_end: Token(i64::MAX),
        resume_after: None,
        include_static: false,
        per_partition_limit: 0,
        row_limit: REPLAY_PAGE,
    };
    loop {
        let page = engine.scan(&scan, now)?;
        for partition in page.partitions {
            let Ok(id) = BatchId::try_from(partition.key.key.as_slice()) else {
                continue;
            };
            let cell = partition.rows.into_iter().next().and_then(|r| {
                r.content
                    .cells
                    .into_iter()
                    .find(|c| c.column == ENTRY_COLUMN)
            });
            let Some(cell) = cell else { continue };
            if cell.timestamp.0 >= older_than_micros {
                continue;
            }
            found.push((id, decode_entry(&cell.value)));
            if found.len() >= limit {
                return Ok(found);
            }
        }
        match page.next {
            Some(next) => scan.resume_after = Some(next),
            None => return Ok(found),
        }
    }
}

/// Answers batchlog requests; Err(request) for others.
pub fn serve(engine: &dyn Engine, request: Request) -> Result<Response, Request> {
    let result = match request {
        Request::BatchStore { id, entry } => store(engine, id, &entry),
        Request::BatchRemove {
            id,
            written_at_micros,
            now,
        } => remove(engine, id, written_at_micros, now),
        other => return Err(other),
    };
    Ok(match result {
        Ok(()) => Response::Ack,
        Err(e) => Response::Error(RemoteError::Failed(e.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocksandra_storage::memory::MemoryStore;
    use rocksandra_storage::KvEngine;

    fn at(n: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, n])
    }

    fn node(n: u8, rack: &str, alive: bool) -> Candidate {
        Candidate {
            address: at(n),
            rack: rack.into(),
            alive,
        }
    }

    fn first(_: usize) -> usize {
        0
    }

    #[test]
    fn a_single_node_data_center_keeps_its_own_batches() {
        let chosen = endpoints(at(1), "r1", &[node(1, "r1", true)], &mut first);
        assert_eq!(chosen, vec![at(1)]);
    }

    #[test]
    fn the_coordinator_never_holds_its_batch_in_a_larger_data_center() {
        let dc = [node(1, "r1", true), node(2, "r1", true)];
        assert_eq!(endpoints(at(1), "r1", &dc, &mut first), vec![at(2)]);
        let dc = [node(1, "r1", true), node(2, "r1", false)];
        assert!(endpoints(at(1), "r1", &dc, &mut first).is_empty());
        let dc = [
            node(1, "r1", true),
            node(2, "r1", true),
            node(3, "r1", true),
        ];
        assert_eq!(endpoints(at(1), "r1", &dc, &mut first), vec![at(2), at(3)]);
    }

    #[test]
    fn other_racks_are_preferred_and_two_racks_are_used() {
        let dc = [
            node(1, "r1", true),
            node(2, "r1", true),
            node(3, "r2", true),
            node(4, "r2", true),
            node(5, "r3", true),
        ];
        for seed in 0..20usize {
            let mut state = seed;
            let mut pick = |n: usize| {
                state = state.wrapping_mul(31).wrapping_add(7);
                state % n
            };
            let chosen = endpoints(at(1), "r1", &dc, &mut pick);
            assert_eq!(chosen.len(), 2);
            assert!(!chosen.contains(&at(1)) && !chosen.contains(&at(2)));
            let rack = |a: IpAddr| dc.iter().find(|c| c.address == a).map(|c| c.rack.clone());
            assert_ne!(rack(chosen[0]), rack(chosen[1]), "{chosen:?}");
        }
        // Only one other live node outside the rack: the local rack counts.
        let dc = [
            node(1, "r1", true),
            node(2, "r1", true),
            node(3, "r2", true),
            node(4, "r2", false),
        ];
        let chosen = endpoints(at(1), "r1", &dc, &mut first);
        assert_eq!(chosen.len(), 2);
        assert!(chosen.contains(&at(2)) && chosen.contains(&at(3)));
    }

    #[test]
    fn ids_are_unique_per_coordinator_and_time_ordered() {
        let a = batch_id(10, at(1), 0);
        assert_ne!(a, batch_id(10, at(1), 1));
        assert_ne!(a, batch_id(10, at(2), 0));
        assert!(batch_id(9, at(9), 9) < a);
    }

    fn engine() -> KvEngine<MemoryStore> {
        let engine = KvEngine::new(MemoryStore::new(std::sync::Arc::new(|| LocalTime(100))));
        open(&engine).expect("opens");
        engine
    }

    fn entry(written_at_micros: i64) -> BatchEntry {
        BatchEntry {
            written_at_micros,
            now: LocalTime(written_at_micros / 1_000_000),
            mutations: vec![Mutation::new(TableId(7), PartitionKey::new(b"k".to_vec()))],
        }
    }

    #[test]
    fn stored_batches_become_due_and_removed_ones_do_not() {
        let engine = engine();
        let now = LocalTime(100);
        for i in 0..(REPLAY_PAGE as i64 * 2 + 3) {
            let e = entry(1_000_000 + i);
            store(&engine, batch_id(e.written_at_micros, at(1), 0), &e).expect("stored");
        }
        let late = entry(50_000_000);
        store(&engine, batch_id(late.written_at_micros, at(1), 0), &late).expect("stored");
        let due_now = due(&engine, 10_000_000, now, usize::MAX).expect("scans");
        assert_eq!(due_now.len(), REPLAY_PAGE * 2 + 3, "paged over every batch");
        assert!(due_now.iter().all(|(_, e)| e.is_ok()));
        assert_eq!(
            due(&engine, 10_000_000, now, 5).expect("scans").len(),
            5,
            "the limit holds"
        );
        for (id, e) in &due_now {
            let written = e.as_ref().map(|e| e.written_at_micros).unwrap_or_default();
            remove(&engine, *id, written, now).expect("removed");
        }
        assert!(due(&engine, 10_000_000, now, usize::MAX)
            .expect("scans")
            .is_empty());
        let all = due(&engine, i64::MAX, now, usize::MAX).expect("scans");
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].1, Ok(late));
    }

    #[test]
    fn requests_are_served_and_bad_entries_reported() {
        let engine = engine();
        let id = batch_id(5, at(3), 1);
        let e = entry(5);
        assert_eq!(
            serve(
                &engine,
                Request::BatchStore {
                    id,
                    entry: e.clone()
                }
            ),
            Ok(Response::Ack)
        );
        assert_eq!(
            due(&engine, 6, LocalTime(0), 10).expect("scans"),
            vec![(id, Ok(e))]
        );
        assert_eq!(
            serve(
                &engine,
                Request::BatchRemove {
                    id,
                    written_at_micros: 5,
                    now: LocalTime(0)
                }
            ),
            Ok(Response::Ack)
        );
        assert!(due(&engine, 6, LocalTime(0), 10).expect("scans").is_empty());
        assert!(serve(&engine, Request::SchemaPull).is_err());
        assert!(decode_entry(&[]).is_err());
        assert!(decode_entry(&[ENTRY_FORMAT_VERSION + 1]).is_err());
        assert!(decode_entry(&[ENTRY_FORMAT_VERSION, 0xff, 0xff]).is_err());
    }

    proptest::proptest! {
        #[test]
        fn stored_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let _ = decode_entry(&bytes);
            let mut versioned = vec![ENTRY_FORMAT_VERSION];
            versioned.extend_from_slice(&bytes);
            let _ = decode_entry(&versioned);
        }
    }
}

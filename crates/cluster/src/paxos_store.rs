//! The acceptor side of Paxos on a replica: each partition's
//! `AcceptorState` kept durable in a reserved storage table, changed only
//! by the pure functions of `paxos`, stored before the answer is sent.
//!
//! Layout (owned here, `docs/internals/internode.md`): table
//! `PAXOS_STATE_TABLE` (no clustering columns); partition key = the user
//! table's id (u64 big-endian) followed by the user partition key's bytes;
//! one row, one cell (`STATE_COLUMN`) holding `STATE_FORMAT_VERSION` and the
//! postcard encoding of the `AcceptorState`. The cell expires (TTL) after the
//! table's gc_grace, at least 3 hours, as Cassandra's system.paxos does; a
//! commit keeps only the newest commit and drops the proposals it
//! supersedes. Writes go through the engine's WAL like any write (synced as
//! `commitlog_sync` says): a kill -9 after an answer keeps the state. A
//! commit's data and its state change are one atomic engine write.

use std::sync::Mutex;

use rocksandra_data::LocalTime;
use rocksandra_storage::cell::{Cell, ColumnId};
use rocksandra_storage::{
    Engine, Mutation, PartitionKey, PartitionRead, RowUpdate, Slice, StorageError, TableId,
};

use crate::message::{RecordError, RemoteError, Request, Response};
use crate::paxos::{AcceptorState, PaxosKey, Proposal};

/// The reserved storage id of the acceptor state table (the schema's
/// stored system tables count down from `u64::MAX - 1`; user tables up
/// from 1).
pub const PAXOS_STATE_TABLE: TableId = TableId(u64::MAX - 64);
/// The one cell of a state row.
const STATE_COLUMN: ColumnId = ColumnId(1);
/// Leads the stored state's bytes; changes when `AcceptorState` does.
pub const STATE_FORMAT_VERSION: u8 = 1;
/// Partitions whose state changes serialize on the same lock.
const LOCK_STRIPES: usize = 256;

static LOCKS: [Mutex<()>; LOCK_STRIPES] = [const { Mutex::new(()) }; LOCK_STRIPES];

/// Creates the state table (at every start: the engine's table registry is
/// in memory; the stored data stays).
pub fn open(engine: &dyn Engine) -> Result<(), StorageError> {
    crate::replica::open_reserved_table(engine, PAXOS_STATE_TABLE)
}

fn state_key(key: &PaxosKey) -> PartitionKey {
    let mut bytes = Vec::with_capacity(8 + key.partition.key.len());
    bytes.extend_from_slice(&key.table.0.to_be_bytes());
    bytes.extend_from_slice(&key.partition.key);
    PartitionKey::new(bytes)
}

pub fn encode_state(state: &AcceptorState) -> Vec<u8> {
    crate::message::encode_versioned(STATE_FORMAT_VERSION, state)
}

/// Why an acceptor's stored state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PaxosStoreError {
    #[error("{0}")]
    Storage(#[from] StorageError),
    #[error("{0}")]
    Record(#[from] RecordError),
}

pub fn decode_state(bytes: &[u8]) -> Result<AcceptorState, RecordError> {
    crate::message::decode_versioned(STATE_FORMAT_VERSION, bytes, "paxos state")
}

/// The stored state and its cell's write timestamp.
fn load(
    engine: &dyn Engine,
    key: &PaxosKey,
    now: LocalTime,
) -> Result<(AcceptorState, i64), PaxosStoreError> {
    let read = PartitionRead {
        table: PAXOS_STATE_TABLE,
        partition: state_key(key),
        slices: vec![Slice::all()],
        reversed: false,
        include_static: false,
        row_limit: 1,
    };
    let partition = engine.read_partition(&read, now)?;
    let cell = partition.rows.into_iter().next().and_then(|r| {
        r.content
            .cells
            .into_iter()
            .find(|c| c.column == STATE_COLUMN)
    });
    match cell {
        Some(c) => Ok((decode_state(&c.value)?, c.timestamp.0)),
        None => Ok((AcceptorState::default(), i64::MIN)),
    }
}

/// The mutation storing `state`: a later timestamp than the stored cell's
/// (never before `now`, so a state written after an expired one wins).
fn state_mutation(
    key: &PaxosKey,
    state: &AcceptorState,
    previous_timestamp: i64,
    ttl_seconds: i32,
    now: LocalTime,
) -> Mutation {
    let timestamp = now
        .0
        .saturating_mul(1_000_000)
        .max(previous_timestamp.saturating_add(1));
    let mut m = Mutation::new(PAXOS_STATE_TABLE, state_key(key));
    m.rows.push((
        Vec::new(),
        RowUpdate {
            cells: vec![Cell::expiring(
                STATE_COLUMN,
                timestamp,
                ttl_seconds.max(1),
                now,
                encode_state(state),
            )],
            ..RowUpdate::default()
        },
    ));
    m
}

fn lock(key: &PaxosKey) -> std::sync::MutexGuard<'static, ()> {
    let stripe = (key.partition.token.0 as u64 ^ key.table.0) as usize % LOCK_STRIPES;
    LOCKS[stripe].lock().unwrap_or_else(|p| p.into_inner())
}

fn failed(e: impl std::fmt::Display) -> Response {
    Response::Error(RemoteError::Failed(e.to_string()))
}

/// Answers a Paxos request on this node; Err(request) for other requests.
pub fn serve(engine: &dyn Engine, request: Request) -> Result<Response, Request> {
    Ok(match request {
        Request::PaxosPrepare {
            key,
            ballot,
            ttl_seconds,
            now,
        } => {
            let _guard = lock(&key);
            match load(engine, &key, now) {
                Ok((state, written)) => {
                    let (next, answer) = state.prepare(ballot);
                    match next.map(|n| {
                        engine.write(&[state_mutation(&key, &n, written, ttl_seconds, now)], now)
                    }) {
                        Some(Err(e)) => failed(e),
                        _ => Response::PaxosPrepared(answer),
                    }
                }
                Err(e) => failed(e),
            }
        }
        Request::PaxosPropose {
            key,
            proposal,
            ttl_seconds,
            now,
        } => {
            if !proposal.is_for(&key) {
                return Ok(invalid_proposal());
            }
            let _guard = lock(&key);
            match load(engine, &key, now) {
                Ok((state, written)) => match state.propose(&proposal) {
                    Some(next) => {
                        let m = state_mutation(&key, &next, written, ttl_seconds, now);
                        match engine.write(&[m], now) {
                            Ok(()) => Response::PaxosAccepted(true),
                            Err(e) => failed(e),
                        }
                    }
                    None => Response::PaxosAccepted(false),
                },
                Err(e) => failed(e),
            }
        }
        Request::PaxosCommit {
            key,
            proposal,
            ttl_seconds,
            now,
        } => {
            if !proposal.is_for(&key) {
                return Ok(invalid_proposal());
            }
            let _guard = lock(&key);
            match commit(engine, &key, &proposal, ttl_seconds, now) {
                Ok(()) => Response::Ack,
                Err(e) => failed(e),
            }
        }
        other => return Err(other),
    })
}

fn invalid_proposal() -> Response {
    Response::Error(RemoteError::Invalid(
        "a paxos proposal touches another partition than its key".into(),
    ))
}

/// Applies the update and records the commit, in one write.
fn commit(
    engine: &dyn Engine,
    key: &PaxosKey,
    proposal: &Proposal,
    ttl_seconds: i32,
    now: LocalTime,
) -> Result<(), PaxosStoreError> {
    let (state, written) = load(engine, key, now)?;
    let next = state.commit(proposal);
    let mut batch = proposal.mutations.clone();
    if next != state {
        batch.push(state_mutation(key, &next, written, ttl_seconds, now));
    }
    Ok(engine.write(&batch, now)?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rocksandra_storage::memory::MemoryStore;
    use rocksandra_storage::{KvEngine, TableOptions, TableSpec};

    use super::*;
    use crate::paxos::{Ballot, PrepareAnswer};

    fn engine() -> KvEngine<MemoryStore> {
        let engine = KvEngine::new(MemoryStore::new(Arc::new(|| LocalTime(1_000))));
        open(&engine).expect("state table");
        open(&engine).expect("opening twice is fine");
        engine
            .create_table(TableSpec {
                id: TableId(5),
                clustering: Vec::new(),
                options: TableOptions::default(),
                dropped: Vec::new(),
            })
            .expect("user table");
        engine
    }

    fn key() -> PaxosKey {
        PaxosKey {
            table: TableId(5),
            partition: PartitionKey::new(b"p".to_vec()),
        }
    }

    fn ballot(micros: i64) -> Ballot {
        Ballot {
            micros,
            proposer: [1; 16],
        }
    }

    fn write_v(value: &[u8], b: Ballot) -> Proposal {
        let mut m = Mutation::new(key().table, key().partition);
        m.rows.push((
            Vec::new(),
            RowUpdate {
                cells: vec![Cell::live(ColumnId(1), b.micros, value.to_vec())],
                ..RowUpdate::default()
            },
        ));
        Proposal {
            ballot: b,
            mutations: vec![m],
        }
    }

    fn ask(engine: &dyn Engine, request: Request) -> Response {
        serve(engine, request).expect("a paxos request")
    }

    const NOW: LocalTime = LocalTime(1_000);

    #[test]
    fn rounds_are_stored_and_commits_applied() {
        let e = engine();
        let prepare = |micros| Request::PaxosPrepare {
            key: key(),
            ballot: ballot(micros),
            ttl_seconds: 3600,
            now: NOW,
        };
        assert_eq!(
            ask(&e, prepare(10)),
            Response::PaxosPrepared(PrepareAnswer::Promise {
                accepted: None,
                committed: None
            })
        );
        // The promise was stored: the same ballot is refused now.
        assert_eq!(
            ask(&e, prepare(10)),
            Response::PaxosPrepared(PrepareAnswer::Reject {
                highest: ballot(10)
            })
        );
        let p = write_v(b"x", ballot(10));
        let propose = Request::PaxosPropose {
            key: key(),
            proposal: p.clone(),
            ttl_seconds: 3600,
            now: NOW,
        };
        assert_eq!(ask(&e, propose), Response::PaxosAccepted(true));
        let commit = Request::PaxosCommit {
            key: key(),
            proposal: p.clone(),
            ttl_seconds: 3600,
            now: NOW,
        };
        assert_eq!(ask(&e, commit), Response::Ack);
        let data = e
            .read_partition(
                &PartitionRead {
                    table: key().table,
                    partition: key().partition,
                    slices: vec![Slice::all()],
                    reversed: false,
                    include_static: false,
                    row_limit: 0,
                },
                NOW,
            )
            .expect("read");
        assert_eq!(data.rows[0].content.cells[0].value, b"x");
        let (state, _) = load(&e, &key(), NOW).expect("state");
        assert_eq!(state.committed, Some(p));
        assert_eq!(state.accepted, None);
        // A proposal for another partition is refused.
        let mut other = write_v(b"y", ballot(20));
        other.mutations[0].partition = PartitionKey::new(b"q".to_vec());
        assert!(matches!(
            ask(
                &e,
                Request::PaxosPropose {
                    key: key(),
                    proposal: other,
                    ttl_seconds: 3600,
                    now: NOW
                }
            ),
            Response::Error(RemoteError::Invalid(_))
        ));
        // State expires with its TTL.
        let (later, _) = load(&e, &key(), LocalTime(1_000 + 3_601)).expect("state");
        assert_eq!(later, AcceptorState::default());
    }

    #[test]
    fn stored_state_round_trips_and_bad_bytes_are_errors() {
        let state = AcceptorState {
            promised: Some(ballot(3)),
            accepted: Some(write_v(b"a", ballot(3))),
            committed: None,
        };
        assert_eq!(decode_state(&encode_state(&state)), Ok(state));
        assert!(decode_state(&[]).is_err());
        assert!(decode_state(&[STATE_FORMAT_VERSION + 1]).is_err());
        assert!(decode_state(&[STATE_FORMAT_VERSION, 1, 0xff, 0xff]).is_err());
    }
}

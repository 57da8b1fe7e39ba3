//! Paxos for lightweight transactions, as Cassandra's Paxos v1
//! (`StorageProxy.cas`, `PaxosState`): ballots, the acceptor's state machine
//! per (table, partition) and the proposer's decisions over the acceptors'
//! answers, all pure. The coordinator runs the rounds over the network
//! (`coordinator`); `paxos_store` keeps each acceptor's state durable.
//!
//! One partition's history is a sequence of instances, each ended by a
//! commit: a proposer prepares a ballot at a quorum, finishes whatever a
//! promise reports as accepted but not committed, makes sure the quorum has
//! the most recent commit, then proposes its own update (computed from a
//! read made after the promises) and commits it.

use std::time::Duration;

use rocksandra_storage::{Mutation, PartitionKey, TableId};
use serde::{Deserialize, Serialize};

use crate::consistency::{Consistency, ConsistencyError};

/// Cassandra's `cas_contention_timeout`: how long a conditional update keeps
/// retrying lost rounds before it answers WriteTimeout (CAS).
pub const CAS_CONTENTION_TIMEOUT: Duration = Duration::from_secs(1);
/// After a lost round a proposer waits a random time below this, so that
/// the winner can finish (Cassandra: up to 100 ms).
pub const CONTENTION_BACKOFF_MAX: Duration = Duration::from_millis(100);
/// Acceptor state lives at least this long after its last change
/// (Cassandra: the table's gc_grace_seconds, at least 3 hours).
pub const MIN_STATE_TTL_SECONDS: i64 = 3 * 3600;

/// The acceptor state's lifetime for a table with `gc_grace_seconds`.
pub fn state_ttl_seconds(gc_grace_seconds: i64) -> i32 {
    gc_grace_seconds
        .max(MIN_STATE_TTL_SECONDS)
        .min(i64::from(i32::MAX)) as i32
}

/// A proposer's round number: its clock in microseconds, then its host id
/// so that two proposers never share one. Ordered by time first. The
/// micros are also the write timestamp of the update committed under it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Ballot {
    pub micros: i64,
    pub proposer: [u8; 16],
}

/// What one Paxos instance sequence is about: a partition of a table.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PaxosKey {
    pub table: TableId,
    pub partition: PartitionKey,
}

/// An update under a ballot; no mutations is Cassandra's empty update
/// (proposed by SERIAL reads and by conditions that do not hold, never
/// committed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    pub ballot: Ballot,
    pub mutations: Vec<Mutation>,
}

impl Proposal {
    pub fn is_empty(&self) -> bool {
        self.mutations.iter().all(|m| {
            m.partition_deletion.is_none()
                && m.range_tombstones.is_empty()
                && m.static_row.is_none()
                && m.rows.is_empty()
        })
    }

    /// Whether every mutation is of `key`'s partition (an acceptor refuses
    /// others).
    pub fn is_for(&self, key: &PaxosKey) -> bool {
        self.mutations
            .iter()
            .all(|m| m.table == key.table && m.partition == key.partition)
    }
}

/// One acceptor's state for one partition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcceptorState {
    /// The highest ballot promised (or accepted).
    pub promised: Option<Ballot>,
    /// The latest accepted proposal not yet known to be committed.
    pub accepted: Option<Proposal>,
    /// The most recent commit this acceptor learned.
    pub committed: Option<Proposal>,
}

/// An acceptor's answer to a prepare.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PrepareAnswer {
    /// Promised: no lower ballot will be accepted here. Reports what was
    /// accepted and the most recent commit.
    Promise {
        accepted: Option<Proposal>,
        committed: Option<Proposal>,
    },
    /// Refused: this ballot (or a commit with these micros) is already
    /// here; a retry needs a ballot above it.
    Reject { highest: Ballot },
}

impl AcceptorState {
    /// The ballot a new prepare must exceed, and whose micros it must exceed
    /// when it is a commit's (so that every commit writes with a later
    /// timestamp than the one before).
    fn floor(&self) -> Option<Ballot> {
        let committed = self.committed.as_ref().map(|c| Ballot {
            micros: c.ballot.micros,
            proposer: [0xff; 16],
        });
        self.promised.max(committed)
    }

    /// Prepare: promise `ballot` if it is above everything seen. Returns
    /// the state to store (None: unchanged) and the answer.
    pub fn prepare(&self, ballot: Ballot) -> (Option<AcceptorState>, PrepareAnswer) {
        if let Some(highest) = self.floor().filter(|f| ballot <= *f) {
            return (None, PrepareAnswer::Reject { highest });
        }
        let next = AcceptorState {
            promised: Some(ballot),
            ..self.clone()
        };
        let answer = PrepareAnswer::Promise {
            accepted: self.accepted.clone(),
            committed: self.committed.clone(),
        };
        (Some(next), answer)
    }

    /// Propose: accept unless a higher ballot was promised or a commit at
    /// or above this ballot's time is known. Returns the state to store;
    /// None is a refusal.
    pub fn propose(&self, proposal: &Proposal) -> Option<AcceptorState> {
        let ballot = proposal.ballot;
        if self.promised.is_some_and(|p| ballot < p)
            || self
                .committed
                .as_ref()
                .is_some_and(|c| ballot.micros <= c.ballot.micros)
        {
            return None;
        }
        Some(AcceptorState {
            promised: Some(ballot),
            accepted: Some(proposal.clone()),
            committed: self.committed.clone(),
        })
    }

    /// Commit: learn `proposal` (its update is applied by the caller in the
    /// same write). Keeps only the newest commit; an accepted proposal it
    /// supersedes is dropped.
    pub fn commit(&self, proposal: &Proposal) -> AcceptorState {
        let newer = self
            .committed
            .as_ref()
            .is_none_or(|c| proposal.ballot > c.ballot);
        AcceptorState {
            promised: self.promised,
            accepted: self.accepted.clone().filter(|a| a.ballot > proposal.ballot),
            committed: if newer {
                Some(proposal.clone())
            } else {
                self.committed.clone()
            },
        }
    }
}

/// A proposer's ballots: strictly increasing, above its clock and above
/// any ballot it was told of.
#[derive(Clone, Debug)]
pub struct BallotClock {
    proposer: [u8; 16],
    last_micros: i64,
}

impl BallotClock {
    pub fn new(proposer: [u8; 16]) -> BallotClock {
        BallotClock {
            proposer,
            last_micros: i64::MIN,
        }
    }

    /// The next ballot: after `now_micros`, after every earlier one, and
    /// with later micros than `above` (a ballot that refused us).
    pub fn next(&mut self, now_micros: i64, above: Option<Ballot>) -> Ballot {
        let micros = now_micros
            .max(self.last_micros.saturating_add(1))
            .max(above.map_or(i64::MIN, |b| b.micros.saturating_add(1)));
        self.last_micros = micros;
        Ballot {
            micros,
            proposer: self.proposer,
        }
    }
}

/// What a proposer does after a quorum promised (Cassandra's
/// `beginAndRepairPaxos`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NextStep<E> {
    /// An update was accepted after the most recent commit: propose it again
    /// under the new ballot and commit it, then start over.
    FinishInProgress(Proposal),
    /// These promising replicas lack the most recent commit: send it to
    /// them before going on.
    RepairCommit { commit: Proposal, replicas: Vec<E> },
    /// The ballot is clear: read, decide and propose.
    Proceed,
}

/// Decides from the promises of a quorum (each with its replica). A most
/// recent commit older than the acceptors' state lifetime may have expired
/// on some replicas and is not repaired (Cassandra, CASSANDRA-12043).
pub fn after_promises<E: Copy>(
    promises: &[(E, Option<Proposal>, Option<Proposal>)],
    now_micros: i64,
    state_ttl_seconds: i32,
) -> NextStep<E> {
    let most_recent_commit = promises
        .iter()
        .filter_map(|(_, _, c)| c.as_ref())
        .max_by_key(|c| c.ballot);
    let in_progress = promises
        .iter()
        .filter_map(|(_, a, _)| a.as_ref())
        .max_by_key(|a| a.ballot);
    if let Some(accepted) = in_progress {
        let after_commit = most_recent_commit.is_none_or(|c| accepted.ballot > c.ballot);
        // Empty updates are neither committed nor replayed (Cassandra).
        if after_commit && !accepted.is_empty() {
            return NextStep::FinishInProgress(accepted.clone());
        }
    }
    let Some(commit) = most_recent_commit else {
        return NextStep::Proceed;
    };
    let expired_before = now_micros.saturating_sub(i64::from(state_ttl_seconds) * 1_000_000);
    if commit.ballot.micros < expired_before {
        return NextStep::Proceed;
    }
    let missing: Vec<E> = promises
        .iter()
        .filter(|(_, _, c)| c.as_ref().map(|c| c.ballot) != Some(commit.ballot))
        .map(|(e, _, _)| *e)
        .collect();
    if missing.is_empty() {
        NextStep::Proceed
    } else {
        NextStep::RepairCommit {
            commit: commit.clone(),
            replicas: missing,
        }
    }
}

/// The replicas a partition's Paxos rounds run on (Cassandra's
/// `getPaxosParticipants`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Participants<E> {
    /// The live ones, asked in every round.
    pub live: Vec<E>,
    /// Answers a round needs: a majority of natural and pending replicas
    /// (of the local dc for LOCAL_SERIAL).
    pub required: usize,
}

/// Chooses the participants among `natural` and `pending` replicas (each
/// with its dc and liveness): all of them for SERIAL, the local dc's for
/// LOCAL_SERIAL. Unavailable when fewer than a majority are alive, and
/// (as Cassandra) when more than one replica is pending.
pub fn participants<E: Copy>(
    natural: &[(E, &str, bool)],
    pending: &[(E, &str, bool)],
    serial: Consistency,
    local_dc: &str,
) -> Result<Participants<E>, ConsistencyError> {
    if !matches!(serial, Consistency::Serial | Consistency::LocalSerial) {
        return Err(ConsistencyError::SerialRequired { cl: serial });
    }
    let counts = |dc: &str| serial == Consistency::Serial || dc == local_dc;
    let natural: Vec<&(E, &str, bool)> = natural.iter().filter(|(_, d, _)| counts(d)).collect();
    let pending: Vec<&(E, &str, bool)> = pending.iter().filter(|(_, d, _)| counts(d)).collect();
    let all = natural.len() + pending.len();
    let required = all / 2 + 1;
    let live: Vec<E> = natural
        .iter()
        .chain(pending.iter())
        .filter(|(_, _, alive)| *alive)
        .map(|(e, _, _)| *e)
        .collect();
    if live.len() < required {
        return Err(ConsistencyError::Unavailable {
            cl: serial,
            required,
            alive: live.len(),
        });
    }
    if pending.len() > 1 {
        // Cassandra reports an impossible requirement here.
        return Err(ConsistencyError::Unavailable {
            cl: serial,
            required: all + 1,
            alive: live.len(),
        });
    }
    Ok(Participants { live, required })
}

/// How a propose round ended (Cassandra's `PaxosProposeCallback`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProposeOutcome {
    /// A quorum accepted: the update is chosen.
    Accepted,
    /// Every replica asked refused: nothing was accepted, a retry is safe.
    Refused,
    /// Some accepted, too few: the update may still be chosen later by
    /// another proposer, so the client is told the outcome is unknown.
    Partial,
    /// Answers still missing.
    Pending,
}

/// The state of a propose round from the answers so far.
pub fn propose_outcome(
    accepts: usize,
    refusals: usize,
    asked: usize,
    required: usize,
) -> ProposeOutcome {
    if accepts >= required {
        ProposeOutcome::Accepted
    } else if refusals == asked {
        ProposeOutcome::Refused
    } else if accepts + refusals == asked || refusals > asked.saturating_sub(required) {
        // Quorum out of reach; refusals-only could still become Partial if
        // a late answer accepts, so wait for every answer in that case.
        if accepts > 0 {
            ProposeOutcome::Partial
        } else if accepts + refusals == asked {
            ProposeOutcome::Refused
        } else {
            ProposeOutcome::Pending
        }
    } else {
        ProposeOutcome::Pending
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use rocksandra_storage::cell::{Cell, ColumnId};
    use rocksandra_storage::RowUpdate;

    use super::*;

    fn ballot(micros: i64, proposer: u8) -> Ballot {
        Ballot {
            micros,
            proposer: [proposer; 16],
        }
    }

    fn key() -> PaxosKey {
        PaxosKey {
            table: TableId(7),
            partition: PartitionKey::new(b"k".to_vec()),
        }
    }

    /// An update writing `value` to the partition's one cell.
    fn update(value: u64, b: Ballot) -> Proposal {
        update_op(value, 0, b)
    }

    /// An update writing `value` and the id of the operation that made it.
    fn update_op(value: u64, op: u64, b: Ballot) -> Proposal {
        let mut m = Mutation::new(key().table, key().partition);
        m.rows.push((
            Vec::new(),
            RowUpdate {
                cells: vec![Cell::live(
                    ColumnId(1),
                    b.micros,
                    [value.to_be_bytes(), op.to_be_bytes()].concat(),
                )],
                ..RowUpdate::default()
            },
        ));
        Proposal {
            ballot: b,
            mutations: vec![m],
        }
    }

    fn empty(b: Ballot) -> Proposal {
        Proposal {
            ballot: b,
            mutations: Vec::new(),
        }
    }

    #[test]
    fn prepare_promises_only_higher_ballots() {
        let s = AcceptorState::default();
        let (next, answer) = s.prepare(ballot(10, 1));
        let next = next.expect("promised");
        assert_eq!(
            answer,
            PrepareAnswer::Promise {
                accepted: None,
                committed: None
            }
        );
        assert_eq!(next.promised, Some(ballot(10, 1)));
        // The same or a lower ballot is refused with the promise.
        for b in [ballot(10, 1), ballot(10, 0), ballot(9, 9)] {
            assert_eq!(
                next.prepare(b),
                (
                    None,
                    PrepareAnswer::Reject {
                        highest: ballot(10, 1)
                    }
                )
            );
        }
        // Same micros, higher proposer: a different, higher ballot.
        assert!(next.prepare(ballot(10, 2)).0.is_some());
    }

    #[test]
    fn propose_respects_the_promise() {
        let (s, _) = AcceptorState::default().prepare(ballot(10, 1));
        let s = s.expect("promised");
        assert_eq!(s.propose(&update(1, ballot(9, 1))), None);
        let accepted = s.propose(&update(1, ballot(10, 1))).expect("accepted");
        assert_eq!(accepted.accepted, Some(update(1, ballot(10, 1))));
        // A later prepare reports the accepted proposal.
        let (_, answer) = accepted.prepare(ballot(11, 2));
        assert_eq!(
            answer,
            PrepareAnswer::Promise {
                accepted: Some(update(1, ballot(10, 1))),
                committed: None
            }
        );
        // Accepting raises the promise.
        assert!(accepted.prepare(ballot(10, 1)).0.is_none());
    }

    #[test]
    fn commit_keeps_the_newest_and_prunes() {
        let s = AcceptorState::default()
            .propose(&update(1, ballot(10, 1)))
            .expect("accepted");
        let c = s.commit(&update(1, ballot(10, 1)));
        assert_eq!(c.accepted, None);
        assert_eq!(c.committed, Some(update(1, ballot(10, 1))));
        // An older commit arriving late changes nothing.
        assert_eq!(c.commit(&update(0, ballot(5, 1))), c);
        // Nothing at or below a commit's micros is promised or accepted, so
        // the next update's timestamps are later.
        assert!(c.prepare(ballot(10, 9)).0.is_none());
        assert_eq!(c.propose(&update(2, ballot(10, 9))), None);
        assert!(c.prepare(ballot(11, 0)).0.is_some());
    }

    #[test]
    fn ballots_increase_and_pass_refusals() {
        let mut clock = BallotClock::new([3; 16]);
        let a = clock.next(100, None);
        let b = clock.next(50, None);
        assert!(b > a && b.micros == 101);
        let c = clock.next(0, Some(ballot(500, 9)));
        assert!(c.micros == 501 && c > ballot(500, 9));
    }

    #[test]
    fn promises_decide_the_next_step() {
        let c1 = update(1, ballot(10, 1));
        // Nothing known: proceed.
        assert_eq!(
            after_promises::<u8>(&[(1, None, None), (2, None, None)], 0, 3600),
            NextStep::Proceed
        );
        // An accepted update after the latest commit is finished first.
        let p2 = update(2, ballot(20, 2));
        assert_eq!(
            after_promises(
                &[
                    (1, Some(p2.clone()), Some(c1.clone())),
                    (2, None, Some(c1.clone()))
                ],
                0,
                3600
            ),
            NextStep::FinishInProgress(p2)
        );
        // ... but not an empty one, nor one the commit superseded.
        assert_eq!(
            after_promises(
                &[
                    (1, Some(empty(ballot(20, 2))), Some(c1.clone())),
                    (2, Some(update(0, ballot(5, 1))), Some(c1.clone()))
                ],
                0,
                3600
            ),
            NextStep::Proceed
        );
        // A replica without the latest commit gets it.
        assert_eq!(
            after_promises(&[(1, None, Some(c1.clone())), (2, None, None)], 0, 3600),
            NextStep::RepairCommit {
                commit: c1.clone(),
                replicas: vec![2]
            }
        );
        // Unless that commit is older than the state's lifetime.
        assert_eq!(
            after_promises(
                &[(1, None, Some(c1)), (2, None, None)],
                10 + 3_600_000_001,
                3600
            ),
            NextStep::Proceed
        );
    }

    #[test]
    fn participants_are_a_majority_of_natural_and_pending() {
        let natural = [(1, "dc1", true), (2, "dc1", true), (3, "dc2", false)];
        let p = participants(&natural, &[], Consistency::Serial, "dc1").expect("available");
        assert_eq!(
            p,
            Participants {
                live: vec![1, 2],
                required: 2
            }
        );
        // A pending replica raises the majority.
        let pending = [(4, "dc1", false)];
        assert_eq!(
            participants(&natural, &pending, Consistency::Serial, "dc1"),
            Err(ConsistencyError::Unavailable {
                cl: Consistency::Serial,
                required: 3,
                alive: 2
            })
        );
        // LOCAL_SERIAL counts the local dc only.
        let p = participants(&natural, &pending, Consistency::LocalSerial, "dc1").expect("local");
        assert_eq!(p.required, 2);
        let two_pending = [(4, "dc1", true), (5, "dc1", true)];
        assert!(participants(&natural, &two_pending, Consistency::Serial, "dc1").is_err());
        assert_eq!(
            participants(&natural, &[], Consistency::Quorum, "dc1"),
            Err(ConsistencyError::SerialRequired {
                cl: Consistency::Quorum
            })
        );
    }

    #[test]
    fn propose_outcomes() {
        assert_eq!(propose_outcome(2, 0, 3, 2), ProposeOutcome::Accepted);
        assert_eq!(propose_outcome(1, 0, 3, 2), ProposeOutcome::Pending);
        assert_eq!(propose_outcome(0, 3, 3, 2), ProposeOutcome::Refused);
        assert_eq!(propose_outcome(1, 2, 3, 2), ProposeOutcome::Partial);
        // Two refusals of three: quorum out of reach, but the third may
        // still accept.
        assert_eq!(propose_outcome(0, 2, 3, 2), ProposeOutcome::Pending);
        assert_eq!(propose_outcome(1, 1, 2, 2), ProposeOutcome::Partial);
    }

    // ------------------------------------------------------------------
    // A randomized model: three proposers run compare-and-set increments
    // of one register against three acceptors. Each step moves one
    // proposer one phase on (prepare and read, propose, commit) or crashes
    // it, so proposers interleave arbitrarily; each message to acceptor i
    // is delivered when bit i of the step's mask is set, in the step's
    // order. Checks Paxos's safety: one value per ballot, and the chosen
    // updates form one sequence in which each read the value of the one
    // before (no lost update), acknowledged ones included.

    const ACCEPTORS: usize = 3;
    const QUORUM: usize = 2;
    const PROPOSERS: usize = 3;

    #[derive(Clone, Debug)]
    struct Step {
        proposer: u8,
        mask: u8,
        order: u8,
        crash: bool,
    }

    fn step() -> impl Strategy<Value = Step> {
        (
            0u8..PROPOSERS as u8,
            0u8..8,
            0u8..6,
            proptest::bool::weighted(0.05),
        )
            .prop_map(|(proposer, mask, order, crash)| Step {
                proposer,
                mask,
                order,
                crash,
            })
    }

    #[derive(Clone, Debug)]
    enum Phase {
        Idle,
        /// A quorum promised; `proposal` is to be proposed (`own`: the
        /// proposer's increment, not a finished in-progress update).
        Promised {
            proposal: Proposal,
            own: bool,
        },
        /// A quorum accepted; to be committed.
        Chosen {
            proposal: Proposal,
            own: bool,
        },
    }

    fn value_of(p: &Proposal) -> u64 {
        p.mutations
            .first()
            .and_then(|m| m.rows.first())
            .and_then(|(_, r)| r.cells.first())
            .and_then(|c| c.value.get(..8))
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_be_bytes)
            .unwrap_or(0)
    }

    fn op_of(p: &Proposal) -> u64 {
        p.mutations
            .first()
            .and_then(|m| m.rows.first())
            .and_then(|(_, r)| r.cells.first())
            .and_then(|c| c.value.get(8..16))
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_be_bytes)
            .unwrap_or(0)
    }

    fn timestamp_of(p: &Proposal) -> i64 {
        p.mutations
            .first()
            .and_then(|m| m.rows.first())
            .and_then(|(_, r)| r.cells.first())
            .map_or(i64::MIN, |c| c.timestamp.0)
    }

    /// The register as a quorum read after the commits sees it: the value
    /// with the highest timestamp among the data of the acceptors `mask`.
    fn read(data: &[Option<(i64, u64)>], mask: u8) -> u64 {
        (0..ACCEPTORS)
            .filter(|i| mask & (1 << i) != 0)
            .filter_map(|i| data[i])
            .max()
            .map_or(0, |(_, v)| v)
    }

    fn orders(order: u8) -> [usize; ACCEPTORS] {
        const ALL: [[usize; 3]; 6] = [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ];
        ALL[usize::from(order) % 6]
    }

    proptest! {
        #[test]
        fn no_two_values_chosen_and_no_increment_lost(steps in proptest::collection::vec(step(), 1..120)) {
            let mut acceptors = vec![AcceptorState::default(); ACCEPTORS];
            // Each acceptor's applied data: (timestamp, value).
            let mut data: Vec<Option<(i64, u64)>> = vec![None; ACCEPTORS];
            let mut clocks: Vec<BallotClock> =
                (0..PROPOSERS as u8).map(|p| BallotClock::new([p; 16])).collect();
            let mut phases = vec![Phase::Idle; PROPOSERS];
            let mut now = 1_000i64;
            // Every update chosen, by ballot: (operation, value).
            let mut chosen: BTreeMap<Ballot, (u64, u64)> = BTreeMap::new();
            let mut ops = 0u64;
            // Operations acknowledged to their proposer (committed).
            let mut acknowledged: Vec<u64> = Vec::new();
            for Step { proposer, mask, order, crash } in steps {
                now += 1;
                let p = usize::from(proposer);
                if crash {
                    phases[p] = Phase::Idle;
                    continue;
                }
                let targets: Vec<usize> =
                    orders(order).into_iter().filter(|i| mask & (1 << i) != 0).collect();
                phases[p] = match std::mem::replace(&mut phases[p], Phase::Idle) {
                    Phase::Idle => {
                        let b = clocks[p].next(now, None);
                        let mut promises = Vec::new();
                        for &i in &targets {
                            let (next, answer) = acceptors[i].prepare(b);
                            if let Some(n) = next {
                                acceptors[i] = n;
                            }
                            if let PrepareAnswer::Promise { accepted, committed } = answer {
                                promises.push((i, accepted, committed));
                            }
                        }
                        if promises.len() < QUORUM {
                            continue;
                        }
                        match after_promises(&promises, now, 3600) {
                            NextStep::FinishInProgress(f) => Phase::Promised {
                                proposal: Proposal { ballot: b, ..f },
                                own: false,
                            },
                            NextStep::RepairCommit { commit: c, replicas } => {
                                for i in replicas {
                                    acceptors[i] = acceptors[i].commit(&c);
                                    data[i] = data[i].max(Some((timestamp_of(&c), value_of(&c))));
                                }
                                Phase::Idle
                            }
                            NextStep::Proceed => {
                                // Read at the promising quorum (which holds
                                // the latest commit now), add one.
                                let promised: u8 = promises.iter().map(|(i, _, _)| 1u8 << i).sum();
                                ops += 1;
                                Phase::Promised {
                                    proposal: update_op(read(&data, promised) + 1, ops, b),
                                    own: true,
                                }
                            }
                        }
                    }
                    Phase::Promised { proposal, own } => {
                        let mut accepts = 0;
                        for &i in &targets {
                            if let Some(n) = acceptors[i].propose(&proposal) {
                                acceptors[i] = n;
                                accepts += 1;
                            }
                        }
                        if accepts < QUORUM {
                            continue;
                        }
                        let entry = (op_of(&proposal), value_of(&proposal));
                        let previous = chosen.insert(proposal.ballot, entry);
                        prop_assert!(
                            previous.is_none_or(|p| p == entry),
                            "ballot {:?} chose {:?} and {:?}", proposal.ballot, previous, entry
                        );
                        // The operations chosen in ballot order (a finished
                        // in-progress update repeats its operation) are
                        // consecutive increments, each chosen once.
                        let mut history: Vec<(u64, u64)> = chosen.values().copied().collect();
                        history.dedup();
                        for (n, (_, value)) in history.iter().enumerate() {
                            prop_assert_eq!(*value, n as u64 + 1, "history {:?}", chosen);
                        }
                        let mut seen: Vec<u64> = history.iter().map(|(op, _)| *op).collect();
                        seen.sort_unstable();
                        seen.dedup();
                        prop_assert_eq!(seen.len(), history.len(), "history {:?}", chosen);
                        Phase::Chosen { proposal, own }
                    }
                    Phase::Chosen { proposal, own } => {
                        // Commit (possibly to nobody: a later prepare
                        // finishes it), with the update's own timestamps.
                        for &i in &targets {
                            acceptors[i] = acceptors[i].commit(&proposal);
                            data[i] = data[i].max(Some((timestamp_of(&proposal), value_of(&proposal))));
                        }
                        if own {
                            acknowledged.push(op_of(&proposal));
                        }
                        Phase::Idle
                    }
                };
            }
            // Every update acknowledged to its proposer is in the history.
            let history: Vec<u64> = chosen.values().map(|(op, _)| *op).collect();
            for op in acknowledged {
                prop_assert!(history.contains(&op));
            }
        }
    }
}

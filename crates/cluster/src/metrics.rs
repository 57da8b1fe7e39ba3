//! What the cluster's work counts for the metrics endpoint, by
//! Cassandra's names: messages dropped by verb, hints written and
//! delivered, blocking read repairs, bytes streamed each way. Each
//! counter lives where its work happens (`Messaging`, `Hints`, `Shared`,
//! `Sessions`, `StreamServer`), is recorded with relaxed atomic adds, and
//! `ClusterNode::metrics` gathers them when a scrape arrives.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::message::Request;

/// Cassandra's verbs, as its `DroppedMessage` metrics name them: the
/// requests a replica serves, and `OTHER` for the rest (schema,
/// streaming, nodetool).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Mutation,
    Read,
    RangeSlice,
    Hint,
    BatchStore,
    BatchRemove,
    PaxosPrepare,
    PaxosPropose,
    PaxosCommit,
    Other,
}

impl Verb {
    pub const ALL: [Verb; 10] = [
        Verb::Mutation,
        Verb::Read,
        Verb::RangeSlice,
        Verb::Hint,
        Verb::BatchStore,
        Verb::BatchRemove,
        Verb::PaxosPrepare,
        Verb::PaxosPropose,
        Verb::PaxosCommit,
        Verb::Other,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Verb::Mutation => "MUTATION",
            Verb::Read => "READ",
            Verb::RangeSlice => "RANGE_SLICE",
            Verb::Hint => "HINT",
            Verb::BatchStore => "BATCH_STORE",
            Verb::BatchRemove => "BATCH_REMOVE",
            Verb::PaxosPrepare => "PAXOS_PREPARE",
            Verb::PaxosPropose => "PAXOS_PROPOSE",
            Verb::PaxosCommit => "PAXOS_COMMIT",
            Verb::Other => "OTHER",
        }
    }

    pub fn of(request: &Request) -> Verb {
        match request {
            Request::Mutate { .. } => Verb::Mutation,
            Request::Read { .. } | Request::ReadRaw { .. } => Verb::Read,
            Request::Scan { .. } | Request::AnnSearch { .. } => Verb::RangeSlice,
            Request::StoreHint { .. } => Verb::Hint,
            Request::BatchStore { .. } => Verb::BatchStore,
            Request::BatchRemove { .. } => Verb::BatchRemove,
            Request::PaxosPrepare { .. } => Verb::PaxosPrepare,
            Request::PaxosPropose { .. } => Verb::PaxosPropose,
            Request::PaxosCommit { .. } => Verb::PaxosCommit,
            _ => Verb::Other,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Requests dropped unserved, by verb: refused by a replica with all its
/// `MAX_INBOUND_REQUESTS` busy, or never sent because the peer's outbound
/// queue was full.
#[derive(Debug, Default)]
pub struct DroppedMessages([AtomicU64; Verb::ALL.len()]);

impl DroppedMessages {
    pub fn record(&self, verb: Verb) {
        if let Some(counter) = self.0.get(verb.index()) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn snapshot(&self) -> Vec<(Verb, u64)> {
        Verb::ALL
            .iter()
            .map(|verb| (*verb, self.0[verb.index()].load(Ordering::Relaxed)))
            .collect()
    }
}

/// Bytes of SST files streamed in and out.
#[derive(Debug, Default)]
pub struct StreamedBytes {
    incoming: AtomicU64,
    outgoing: AtomicU64,
}

impl StreamedBytes {
    pub fn record(&self, sending: bool, bytes: u64) {
        let counter = if sending {
            &self.outgoing
        } else {
            &self.incoming
        };
        counter.fetch_add(bytes, Ordering::Relaxed);
    }

    /// (incoming, outgoing).
    pub fn snapshot(&self) -> (u64, u64) {
        (
            self.incoming.load(Ordering::Relaxed),
            self.outgoing.load(Ordering::Relaxed),
        )
    }
}

/// Hints this node stored and delivered.
#[derive(Debug, Default)]
pub struct HintCounts {
    pub written: AtomicU64,
    /// Not stored: over `MAX_HINT_BYTES_PER_HOST` or too large a record.
    pub refused: AtomicU64,
    pub delivered: AtomicU64,
}

/// One of Cassandra's thread pools (`nodetool tpstats`' stages) at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolSnapshot {
    pub name: &'static str,
    pub active: u64,
    pub pending: u64,
    pub completed: u64,
}

/// Everything the cluster exports, at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterSnapshot {
    pub dropped: Vec<(Verb, u64)>,
    pub hints_written: u64,
    pub hints_refused: u64,
    pub hints_delivered: u64,
    /// Bytes of hints kept for other nodes, not delivered yet.
    pub hints_pending_bytes: u64,
    pub read_repairs: u64,
    /// This replica's ANN searches answered from its graph, and by scan.
    pub ann_searches_graph: u64,
    pub ann_searches_scan: u64,
    pub streamed_in_bytes: u64,
    pub streamed_out_bytes: u64,
    pub pools: Vec<PoolSnapshot>,
}

impl ClusterSnapshot {
    /// A node running alone: nothing dropped, hinted, repaired or
    /// streamed; its stages, as `nodetool tpstats` shows them, idle.
    pub fn alone() -> ClusterSnapshot {
        ClusterSnapshot {
            dropped: Verb::ALL.iter().map(|verb| (*verb, 0)).collect(),
            pools: crate::stages::Stages::default().pools(),
            ..ClusterSnapshot::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_messages_are_counted_by_verb() {
        let dropped = DroppedMessages::default();
        dropped.record(Verb::Mutation);
        dropped.record(Verb::Mutation);
        dropped.record(Verb::of(&Request::SchemaPull));
        let snapshot = dropped.snapshot();
        assert_eq!(snapshot.len(), Verb::ALL.len());
        assert_eq!(snapshot[0], (Verb::Mutation, 2));
        assert!(snapshot.contains(&(Verb::Other, 1)));
        assert!(snapshot.contains(&(Verb::Read, 0)));
        for (i, verb) in Verb::ALL.iter().enumerate() {
            assert_eq!(verb.index(), i);
        }
    }

    #[test]
    fn streamed_bytes_are_counted_by_direction() {
        let streamed = StreamedBytes::default();
        streamed.record(true, 10);
        streamed.record(false, 3);
        streamed.record(false, 4);
        assert_eq!(streamed.snapshot(), (7, 10));
    }
}

//! The one place where the cluster's failures become CQL errors
//! (`QueryError`, which `QueryError::to_response` turns into native
//! protocol error codes): a replica's refusal (`RemoteError`), a
//! consistency level the live replicas cannot meet, a full queue to a
//! peer, a schema change that cannot start, a TRUNCATE that did not reach
//! every node. The cluster's other errors (`StreamError`,
//! `OperationError`, `StartError`, ...) go to nodetool or the log, never to
//! a client.

use std::net::IpAddr;

use rocksandra_query::read_thresholds::{self, FailureCounts};
use rocksandra_query::tombstones::too_many_tombstones;
use rocksandra_query::QueryError;
use rocksandra_wire::Consistency;

use crate::consistency::ConsistencyError;
use crate::message::{RemoteError, Response};
use crate::schema_exchange::SchemaPullError;

pub(crate) fn consistency_error(e: ConsistencyError) -> QueryError {
    match e {
        ConsistencyError::Unavailable {
            cl,
            required,
            alive,
            ..
        } => QueryError::Unavailable {
            consistency: cl,
            required,
            alive,
        },
        other => QueryError::Invalid(other.to_string()),
    }
}

/// A replica's refusal, naming the replica.
pub(crate) fn remote_error(endpoint: IpAddr, e: &RemoteError) -> QueryError {
    match e {
        RemoteError::Overloaded(m) => QueryError::Overloaded(format!("{endpoint}: {m}")),
        RemoteError::Invalid(m) => QueryError::Invalid(format!("{endpoint}: {m}")),
        other => QueryError::Server(format!("{endpoint}: {other}")),
    }
}

/// READ_FAILURE's counts for a read with `received` of the `block_for`
/// answers it needs.
pub(crate) fn failure_counts(
    consistency: Consistency,
    received: usize,
    block_for: usize,
) -> FailureCounts {
    FailureCounts {
        consistency,
        received,
        block_for,
    }
}

/// `remote_error` for a read that had `received` of the `block_for`
/// answers it needs: a replica that refused it past its tombstone failure
/// threshold makes it READ_FAILURE, as in Cassandra.
pub(crate) fn read_error(
    endpoint: IpAddr,
    e: &RemoteError,
    consistency: Consistency,
    (received, block_for): (usize, usize),
) -> QueryError {
    match e {
        RemoteError::TooManyTombstones { .. } => {
            too_many_tombstones(consistency, received, block_for, endpoint)
        }
        RemoteError::ReadTooLarge { .. } => read_thresholds::read_failure(
            format!("received {received} responses and 1 failures"),
            failure_counts(consistency, received, block_for),
            vec![(endpoint, read_thresholds::READ_SIZE)],
        ),
        other => remote_error(endpoint, other),
    }
}

/// Too many requests queued for `peer` (`SendError::QueueFull`).
pub(crate) fn queue_full(peer: IpAddr) -> QueryError {
    QueryError::Overloaded(format!("too many requests queued for {peer}"))
}

/// A schema change refused because the schema lock was not given in time
/// (`answer`: the lock holder's last answer).
pub(crate) fn schema_lock_refused(leader: IpAddr, answer: &Response) -> QueryError {
    QueryError::Server(format!(
        "cannot take the cluster's schema lock from {leader}: {answer:?}"
    ))
}

/// A schema change refused because this node could not take the newest
/// schema of the live nodes first.
pub(crate) fn schema_change_refused(e: &SchemaPullError) -> QueryError {
    QueryError::Server(format!("cannot start a schema change: {e}"))
}

/// A TRUNCATE that failed, in Cassandra's words.
pub(crate) fn truncate_failed(detail: impl std::fmt::Display) -> QueryError {
    QueryError::Truncate(format!("Error during truncate: {detail}"))
}

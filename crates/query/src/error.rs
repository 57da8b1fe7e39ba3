//! Errors of query execution, and their one mapping to CQL error codes.
//!
//! Architecture invariant: `QueryError::to_response` is the only place where
//! an execution failure becomes a native-protocol ERROR. Storage errors,
//! parse errors and value errors all convert into `QueryError` first.

use bytes::Bytes;
use rocksandra_cql::ParseError;
use rocksandra_data::ValueError;
use rocksandra_storage::StorageError;
use rocksandra_wire::{Consistency, ErrorKind, ErrorResponse, WriteType};

/// Why a statement failed, by the CQL error class a client sees.
/// READ_FAILURE whose message names a query not known where it was
/// decided (`QueryError::ReadAborted`): the message is `before`, the
/// query's text, `after`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingReadFailure {
    pub consistency: Consistency,
    pub received: usize,
    pub block_for: usize,
    pub reasons: Vec<(std::net::IpAddr, u16)>,
    pub before: String,
    pub after: String,
}

impl PendingReadFailure {
    /// The READ_FAILURE, its message naming `query`.
    pub fn named(self, query: &str) -> QueryError {
        QueryError::ReadFailure {
            consistency: self.consistency,
            received: self.received,
            block_for: self.block_for,
            reasons: self.reasons,
            message: format!("{}{query}{}", self.before, self.after),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("{0}")]
    Syntax(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{message}")]
    AlreadyExists {
        keyspace: String,
        /// Empty for a keyspace.
        table: String,
        message: String,
    },
    #[error("Prepared query with ID {} not found (either the query was not prepared on this host (maybe the host has been restarted?) or you have prepared too many queries and it has been evicted from the internal cache)", hex::encode(.0))]
    Unprepared(Bytes),
    #[error("{0}")]
    Truncate(String),
    #[error("{0}")]
    BadCredentials(String),
    #[error("{0}")]
    Overloaded(String),
    /// A failure of this server, not of the request.
    #[error("{0}")]
    Server(String),
    /// This node's storage failed (an IO error, a full disk): as a
    /// replica's failure, a write reports it as WRITE_FAILURE
    /// (`QueryError::replica_write_failure`).
    #[error("{0}")]
    Storage(String),
    /// A function failed on its arguments (FUNCTION_FAILURE).
    #[error("{message}")]
    FunctionFailure {
        keyspace: String,
        function: String,
        arg_types: Vec<String>,
        message: String,
    },
    /// Fewer live replicas than the consistency level needs.
    #[error("Cannot achieve consistency level {}", .consistency.name())]
    Unavailable {
        consistency: Consistency,
        required: usize,
        alive: usize,
    },
    #[error("Operation timed out - received only {received} responses.")]
    ReadTimeout {
        consistency: Consistency,
        received: usize,
        block_for: usize,
        data_present: bool,
    },
    /// Replicas failed the read (READ_FAILURE), each with its reason code
    /// (`READ_TOO_MANY_TOMBSTONES` is 1).
    #[error("{message}")]
    ReadFailure {
        consistency: Consistency,
        received: usize,
        block_for: usize,
        reasons: Vec<(std::net::IpAddr, u16)>,
        message: String,
    },
    /// With `read_thresholds_enabled`, a replica refused a read past a
    /// failure threshold: Cassandra's READ_FAILURE, whose message names the
    /// query, which the statement gives (`PendingReadFailure::named`); left
    /// as it is, it names "a read".
    #[error("{}a read{}", .0.before, .0.after)]
    ReadAborted(Box<PendingReadFailure>),
    /// Replicas failed the write (WRITE_FAILURE), each with its reason code.
    #[error("{message}")]
    WriteFailure {
        consistency: Consistency,
        received: usize,
        block_for: usize,
        reasons: Vec<(std::net::IpAddr, u16)>,
        write_type: WriteType,
        message: String,
    },
    #[error("Operation timed out - received only {received} responses.")]
    WriteTimeout {
        consistency: Consistency,
        received: usize,
        block_for: usize,
        write_type: WriteType,
    },
}

/// READ_FAILURE's and WRITE_FAILURE's reason codes (Cassandra's
/// `RequestFailureReason`): a replica failed for another reason...
pub const UNKNOWN_FAILURE: u16 = 0;
/// ...met more tombstones than `tombstone_failure_threshold`...
pub const READ_TOO_MANY_TOMBSTONES: u16 = 1;
/// ...or loaded more than `local_read_size_fail_threshold`.
pub const READ_SIZE: u16 = 4;

/// `Operation failed - received R responses and F failures: REASON from
/// /ADDRESS, ...`, Cassandra's text for READ_FAILURE and WRITE_FAILURE.
pub fn failure_message(received: usize, failed: &[(std::net::IpAddr, u16)]) -> String {
    format!(
        "Operation failed - received {received} responses and {} failures: {}",
        failed.len(),
        failure_reasons(failed)
    )
}

/// `REASON from /ADDRESS, ...`: each failed replica with its reason.
pub fn failure_reasons(failed: &[(std::net::IpAddr, u16)]) -> String {
    let reasons: Vec<String> = failed
        .iter()
        .map(|(node, code)| format!("{} from /{node}", failure_reason_name(*code)))
        .collect();
    reasons.join(", ")
}

/// The name of a failure reason code.
fn failure_reason_name(code: u16) -> &'static str {
    match code {
        READ_TOO_MANY_TOMBSTONES => "READ_TOO_MANY_TOMBSTONES",
        READ_SIZE => "READ_SIZE",
        _ => "UNKNOWN",
    }
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

pub type Result<T, E = QueryError> = std::result::Result<T, E>;

impl QueryError {
    pub fn invalid(message: impl Into<String>) -> QueryError {
        QueryError::Invalid(message.into())
    }

    /// A Java exception Cassandra 5.0.6 lets through where it meets a
    /// request it cannot serve, which reaches the client as a SERVER_ERROR
    /// with Java's text: the class's name, then `: message` when it has
    /// one (`java.lang.UnsupportedOperationException` for a counter
    /// incremented by `fromJson()`).
    pub fn java_exception(class: &str, message: Option<&str>) -> QueryError {
        QueryError::Server(match message {
            Some(message) => format!("{class}: {message}"),
            None => class.to_string(),
        })
    }

    pub fn syntax(message: impl Into<String>) -> QueryError {
        QueryError::Syntax(message.into())
    }

    pub fn config(message: impl Into<String>) -> QueryError {
        QueryError::Config(message.into())
    }

    /// `Undefined column name X in table ks.t`, `label` being the column as
    /// the statement named it, printed as Cassandra prints it.
    pub fn undefined_column(label: &str, keyspace: &str, table: &str) -> QueryError {
        QueryError::Invalid(format!(
            "Undefined column name {label} in table {}",
            rocksandra_data::types::qualified_name(keyspace, table)
        ))
    }

    /// `Undefined column name X`, without the table: Cassandra's wording
    /// for `token()` in a selection.
    pub fn undefined_column_name(label: &str) -> QueryError {
        QueryError::Invalid(format!("Undefined column name {label}"))
    }

    /// WRITE_FAILURE: `failed` replicas (each with its reason code, 0 for
    /// UNKNOWN) failed a write that `received` replicas acknowledged, out
    /// of the `block_for` the consistency level needs; Cassandra's text.
    pub fn write_failure(
        consistency: Consistency,
        (received, block_for): (usize, usize),
        failed: Vec<(std::net::IpAddr, u16)>,
        write_type: WriteType,
    ) -> QueryError {
        QueryError::WriteFailure {
            message: failure_message(received, &failed),
            consistency,
            received,
            block_for,
            reasons: failed,
            write_type,
        }
    }

    /// READ_FAILURE: `failed` replicas (each with its reason code) failed a
    /// read that `received` replicas answered, out of the `block_for` the
    /// consistency level needs; Cassandra's text.
    pub fn read_failure(
        consistency: Consistency,
        (received, block_for): (usize, usize),
        failed: Vec<(std::net::IpAddr, u16)>,
    ) -> QueryError {
        QueryError::ReadFailure {
            message: failure_message(received, &failed),
            consistency,
            received,
            block_for,
            reasons: failed,
        }
    }

    /// WRITE_FAILURE from `node` alone: its storage failed a write it was
    /// the one replica of (a node alone).
    pub fn local_write_failure(
        node: std::net::IpAddr,
        consistency: Consistency,
        write_type: WriteType,
    ) -> QueryError {
        QueryError::write_failure(
            consistency,
            (0, 1),
            vec![(node, UNKNOWN_FAILURE)],
            write_type,
        )
    }

    /// Whether the request was valid but could not be carried out (too
    /// few replicas, a timeout, a failure on replicas, overload):
    /// Cassandra's `RequestExecutionException`.
    pub fn is_request_execution(&self) -> bool {
        matches!(
            self,
            QueryError::Unavailable { .. }
                | QueryError::ReadTimeout { .. }
                | QueryError::WriteTimeout { .. }
                | QueryError::ReadFailure { .. }
                | QueryError::ReadAborted(_)
                | QueryError::WriteFailure { .. }
                | QueryError::FunctionFailure { .. }
                | QueryError::Truncate(_)
                | QueryError::Overloaded(_)
        )
    }

    /// The ERROR message for this failure.
    pub fn to_response(&self) -> ErrorResponse {
        let kind = match self {
            QueryError::ReadAborted(pending) => {
                return pending.as_ref().clone().named("a read").to_response()
            }
            QueryError::Syntax(_) => ErrorKind::SyntaxError,
            QueryError::Invalid(_) => ErrorKind::Invalid,
            QueryError::Config(_) => ErrorKind::ConfigError,
            QueryError::Unauthorized(_) => ErrorKind::Unauthorized,
            QueryError::AlreadyExists {
                keyspace, table, ..
            } => ErrorKind::AlreadyExists {
                keyspace: keyspace.clone(),
                table: table.clone(),
            },
            QueryError::Unprepared(id) => ErrorKind::Unprepared { id: id.clone() },
            QueryError::Truncate(_) => ErrorKind::TruncateError,
            QueryError::BadCredentials(_) => ErrorKind::BadCredentials,
            QueryError::Overloaded(_) => ErrorKind::Overloaded,
            QueryError::Server(_) | QueryError::Storage(_) => ErrorKind::ServerError,
            QueryError::FunctionFailure {
                keyspace,
                function,
                arg_types,
                ..
            } => ErrorKind::FunctionFailure {
                keyspace: keyspace.clone(),
                function: function.clone(),
                arg_types: arg_types.clone(),
            },
            QueryError::Unavailable {
                consistency,
                required,
                alive,
            } => ErrorKind::Unavailable {
                consistency: *consistency,
                required: count(*required),
                alive: count(*alive),
            },
            QueryError::ReadTimeout {
                consistency,
                received,
                block_for,
                data_present,
            } => ErrorKind::ReadTimeout {
                consistency: *consistency,
                received: count(*received),
                block_for: count(*block_for),
                data_present: *data_present,
            },
            QueryError::ReadFailure {
                consistency,
                received,
                block_for,
                reasons,
                ..
            } => ErrorKind::ReadFailure {
                consistency: *consistency,
                received: count(*received),
                block_for: count(*block_for),
                failures: rocksandra_wire::Failures {
                    num_failures: count(reasons.len()),
                    reasons: reasons.clone(),
                },
                data_present: false,
            },
            QueryError::WriteFailure {
                consistency,
                received,
                block_for,
                reasons,
                write_type,
                ..
            } => ErrorKind::WriteFailure {
                consistency: *consistency,
                received: count(*received),
                block_for: count(*block_for),
                failures: rocksandra_wire::Failures {
                    num_failures: count(reasons.len()),
                    reasons: reasons.clone(),
                },
                write_type: write_type.clone(),
            },
            QueryError::WriteTimeout {
                consistency,
                received,
                block_for,
                write_type,
            } => ErrorKind::WriteTimeout {
                consistency: *consistency,
                received: count(*received),
                block_for: count(*block_for),
                write_type: write_type.clone(),
                contentions: None,
            },
        };
        ErrorResponse::new(kind, self.to_string())
    }
}

impl From<ParseError> for QueryError {
    fn from(e: ParseError) -> QueryError {
        if e.invalid {
            return QueryError::Invalid(e.message);
        }
        QueryError::Syntax(e.to_string())
    }
}

impl From<StorageError> for QueryError {
    fn from(e: StorageError) -> QueryError {
        match e {
            StorageError::Invalid(m) => QueryError::Invalid(m),
            e if e.is_storage_failure() => QueryError::Storage(e.to_string()),
            other => QueryError::Server(other.to_string()),
        }
    }
}

impl From<ValueError> for QueryError {
    fn from(e: ValueError) -> QueryError {
        QueryError::Invalid(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_failure_names_each_failed_replica_as_cassandra_does() {
        let a: std::net::IpAddr = "127.0.0.1".parse().unwrap();
        let b: std::net::IpAddr = "127.0.0.2".parse().unwrap();
        let e = QueryError::write_failure(
            Consistency::All,
            (1, 3),
            vec![(a, 0), (b, 1)],
            WriteType::Simple,
        );
        assert_eq!(
            e.to_string(),
            "Operation failed - received 1 responses and 2 failures: \
             UNKNOWN from /127.0.0.1, READ_TOO_MANY_TOMBSTONES from /127.0.0.2"
        );
        let response = e.to_response();
        assert!(matches!(
            response.kind,
            ErrorKind::WriteFailure { received: 1, block_for: 3, ref failures, .. }
                if failures.num_failures == 2
        ));
    }

    #[test]
    fn the_storage_failing_is_a_storage_error_and_a_bad_request_stays_invalid() {
        let full = StorageError::NoSpace {
            action: "writing",
            detail: "IO error: No space left on device".into(),
        };
        assert!(matches!(QueryError::from(full), QueryError::Storage(_)));
        let bad = StorageError::Invalid("no".into());
        assert_eq!(QueryError::from(bad), QueryError::Invalid("no".into()));
    }
}

//! What nodetool's commands report: a command refused or failed on the
//! node (`AdminError`, sent back as the answer's error), nodetool's own
//! connection to the node (`NodetoolError`) and `nodetool repair`'s
//! arguments (`RepairArgsError`). The words are Cassandra's where it has
//! them; the test suites match them.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::message::{DecodeError, Envelope, RemoteError, Response};

/// A command refused or failed on the node.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("Keyspace [{0}] does not exist.")]
    UnknownKeyspace(String),
    #[error("Unknown keyspace/cf pair ({keyspace}.{table})")]
    UnknownTable { keyspace: String, table: String },
    /// `tablehistograms`' words for a table it does not know.
    #[error("Unknown table {keyspace}.{table}")]
    UnknownHistogramTable { keyspace: String, table: String },
    #[error("You must supply a snapshot name.")]
    NoSnapshotName,
    #[error("Snapshot name is longer than {max_bytes} bytes")]
    SnapshotNameTooLong { max_bytes: usize },
    #[error("Snapshot name cannot contain {0:?}")]
    SnapshotNameCharacter(char),
    #[error("Snapshot name cannot start with '.': {0}")]
    HiddenSnapshotName(String),
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot remove {}: {source}", path.display())]
    Unremovable {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Why nodetool got no answer to its command, or the node's refusal.
#[derive(Debug, thiserror::Error)]
pub enum NodetoolError {
    #[error("Failed to connect to '{address}' - {source}")]
    Connect {
        address: SocketAddr,
        source: std::io::Error,
    },
    /// Setting up the connection, or reading an answer's body.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("cannot start TLS to {address}: {source}")]
    Tls {
        address: SocketAddr,
        source: rustls::Error,
    },
    #[error("cannot send to {address}: {source}")]
    Send {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("no answer from {address}: {source}")]
    NoAnswer {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("{0}")]
    Frame(#[from] DecodeError),
    /// The node refused the login or failed the command.
    #[error("{0}")]
    Refused(#[from] RemoteError),
    #[error("unexpected answer: {0:?}")]
    UnexpectedAnswer(Box<Response>),
    #[error("unexpected answer: {0:?}")]
    UnexpectedFrame(Box<Envelope>),
}

/// `nodetool repair`'s arguments that make no command.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum RepairArgsError {
    #[error("repair: {option} needs a {what} token")]
    MissingToken { option: String, what: &'static str },
    #[error("repair: {0} is not a token")]
    NotAToken(String),
    #[error("repair: unsupported option {0}")]
    UnsupportedOption(String),
    #[error("repair: -st and -et go together")]
    HalfRange,
    #[error("repair: -pr cannot be combined with -st/-et")]
    PrimaryRangeWithRange,
}

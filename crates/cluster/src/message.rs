//! The internode message format: every byte nodes send each other.
//!
//! A connection starts with a `Hello` frame from the connecting node; after
//! that, frames carry `Envelope`s. A frame is a 4-byte big-endian length
//! (of what follows), a format version byte (`FORMAT_VERSION`) and the
//! body encoded with postcard (serde). A node refuses frames of another
//! version and frames longer than `MAX_FRAME_BYTES`. Layout details:
//! `docs/internals/internode.md`.

use std::net::IpAddr;

use rocksandra_data::{LocalTime, Token};
use rocksandra_storage::{
    Mutation, Partition, PartitionRead, RangeScan, RawPartition, ScanPage, TokenRange,
};
use serde::{Deserialize, Serialize};

use crate::batchlog::{BatchEntry, BatchId};
use crate::paxos::{Ballot, PaxosKey, PrepareAnswer, Proposal};
use crate::streaming::StreamFile;

/// Changes whenever any message changes shape.
pub const FORMAT_VERSION: u8 = 5;

/// The largest frame a node sends or accepts (length prefix excluded).
pub const MAX_FRAME_BYTES: usize = 256 << 20;

/// The largest first frame (`Hello`) a node accepts: before it, the peer
/// is nobody, and may not make the node hold more than this.
pub const MAX_HELLO_BYTES: usize = 4 << 10;

/// Marks the first frame of a Rocksandra internode connection.
pub const HELLO_MAGIC: u32 = 0x5253_4e44; // "RSND"

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub magic: u32,
    pub cluster_name: String,
    /// The connecting node's listen address.
    pub from: IpAddr,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Envelope {
    Request { id: u64, body: Request },
    Response { id: u64, body: Response },
}

/// What one node asks another.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Request {
    /// Apply these mutations (a replica write, a hint or a read repair).
    Mutate {
        mutations: Vec<Mutation>,
        now: LocalTime,
    },
    /// A data read (`Response::Data`) or, with `digest`, only the digest of
    /// what it would return (`Response::Digest`).
    Read {
        read: PartitionRead,
        now: LocalTime,
        digest: bool,
    },
    /// The stored state for reconciliation (`Response::Raw`).
    ReadRaw {
        read: PartitionRead,
        now: LocalTime,
    },
    Scan {
        scan: RangeScan,
        now: LocalTime,
    },
    /// The sender's schema (`Response::Schema`).
    SchemaPull,
    /// Adopt this schema if it is newer than yours.
    SchemaPush {
        schema: SchemaBlob,
    },
    /// Take (or, with `release`, give back) the cluster's schema lock; the
    /// schema leader answers `Ack` when granted.
    SchemaLock {
        release: bool,
    },
    /// Write files of the token ranges of `table` for the sender to fetch
    /// (`Response::StreamOpened`).
    StreamOut {
        table: u64,
        ranges: Vec<TokenRange>,
    },
    /// An operator command (`rocksandra nodetool`).
    Admin(AdminCommand),
    /// Fetch the token ranges of `table` from `source` and ingest them
    /// (removenode asks the nodes that gain ranges to do this).
    StreamFrom {
        table: u64,
        ranges: Vec<TokenRange>,
        source: IpAddr,
    },
    /// The leaf hashes of a Merkle tree of `table` over `range` with 2^depth
    /// leaves (`Response::Merkle`), for repair.
    MerkleTree {
        table: u64,
        range: TokenRange,
        depth: u8,
        now: LocalTime,
    },
    /// Paxos phase 1: promise `ballot` for the partition
    /// (`Response::PaxosPrepared`). `ttl_seconds`: how long the acceptor
    /// keeps its state for this table.
    PaxosPrepare {
        key: PaxosKey,
        ballot: Ballot,
        ttl_seconds: i32,
        now: LocalTime,
    },
    /// Paxos phase 2: accept this proposal unless a higher ballot was
    /// promised (`Response::PaxosAccepted`).
    PaxosPropose {
        key: PaxosKey,
        proposal: Proposal,
        ttl_seconds: i32,
        now: LocalTime,
    },
    /// Apply the chosen proposal's mutations and record the commit (`Ack`).
    PaxosCommit {
        key: PaxosKey,
        proposal: Proposal,
        ttl_seconds: i32,
        now: LocalTime,
    },
    /// Keep this logged batch until its coordinator removes it, or replay
    /// it once it is older than `batchlog::BATCHLOG_TIMEOUT` (`Ack` once
    /// stored).
    BatchStore {
        id: BatchId,
        entry: BatchEntry,
    },
    /// The batch was applied: forget it (`Ack`).
    BatchRemove {
        id: BatchId,
        written_at_micros: i64,
        now: LocalTime,
    },
    /// Keep these mutations as a hint for `host` (a decommissioning node
    /// hands its hints over before it leaves; `Ack`).
    StoreHint {
        host: [u8; 16],
        written_at_micros: i64,
        mutations: Vec<Mutation>,
    },
    /// A gossip message (chitchat's encoding), when gossip runs over these
    /// connections (internode TLS); one-way: it has no answer.
    Gossip(Vec<u8>),
    /// nodetool's login on the admin port, before its commands when the
    /// node runs PasswordAuthenticator (`Ack`, or why not).
    Login {
        username: String,
        password: String,
    },
    /// TRUNCATE `keyspace.table` here: snapshot it (auto_snapshot), then
    /// empty it and its views (`Ack`).
    Truncate {
        keyspace: String,
        table: String,
    },
    /// The piece of file `file` of a `StreamOut` session at `offset`
    /// (`Response::Chunk`).
    StreamChunk {
        session: u64,
        file: u32,
        offset: u64,
    },
    /// The sender is done with a session: drop it and its files (`Ack`).
    StreamClose {
        session: u64,
    },
    /// The sender will push these files of `table`
    /// (`Response::StreamOpened`, without files).
    StreamBegin {
        table: u64,
        files: Vec<StreamFile>,
    },
    /// The next piece of file `file` of a `StreamBegin` session (`Ack`).
    StreamPut {
        session: u64,
        file: u32,
        offset: u64,
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
        crc32: u32,
    },
    /// Every file of a `StreamBegin` session went: ingest them (`Ack`).
    StreamCommit {
        session: u64,
    },
    /// The best `k` rows (at most `ANN_LIMIT_MAX`) of `table` by the
    /// similarity of column `column` to `vector`, among the rows of
    /// `ranges` (token intervals, both ends inclusive), from the replica's
    /// graph (`Response::AnnRows`). Sent only to peers whose gossiped
    /// messaging version is at least `gossip::ANN_SEARCH_VERSION`.
    AnnSearch {
        table: u64,
        column: u32,
        vector: Vec<f32>,
        k: u32,
        ranges: Vec<(Token, Token)>,
        now: LocalTime,
    },
}

/// The schema as nodes exchange it: the stored JSON with its epoch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SchemaBlob {
    pub epoch: u64,
    pub version: [u8; 16],
    pub json: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum AdminCommand {
    /// The ring by datacenter; ownership as `keyspace` replicates it.
    Status {
        keyspace: Option<String>,
    },
    Ring,
    Info,
    DescribeRing {
        keyspace: String,
    },
    /// The memtables of `tables` of `keyspace` (all its tables when
    /// empty; every table without a keyspace).
    Flush(TableSelection),
    Compact(TableSelection),
    /// Drops what this node no longer replicates.
    Cleanup(TableSelection),
    /// A snapshot named `tag`; `keyspaces` are checked to exist (the
    /// snapshot holds every keyspace: it is one RocksDB checkpoint).
    Snapshot {
        tag: String,
        keyspaces: Vec<String>,
    },
    /// Repair the ranges this node replicates (only its primary ranges
    /// with `primary_range`, only their part in `range` when given) of a
    /// keyspace's tables (all when empty).
    Repair {
        keyspace: Option<String>,
        tables: Vec<String>,
        primary_range: bool,
        /// Only the tokens in this range (`-st`/`-et`).
        range: Option<TokenRange>,
    },
    /// With `force`, even when a keyspace keeps fewer nodes than replicas.
    Decommission {
        force: bool,
    },
    RemoveNode {
        host_id: String,
    },
    /// Test-only fault injection: drop every message to and from these
    /// peers (an empty list heals).
    Isolate {
        peers: Vec<IpAddr>,
    },
    /// Stream every range this node replicates from other replicas (of
    /// `source_dc` when given).
    Rebuild {
        source_dc: Option<String>,
    },
    /// Streaming sessions, running and finished.
    Netstats,
    /// Test-only fault injection: answer other nodes' requests `millis`
    /// late (0 heals).
    Slow {
        millis: u64,
    },
    /// Test-only fault injection: arm a named failpoint
    /// (`coordinator::FAILPOINTS`).
    Failpoint {
        name: String,
    },
    /// The Cassandra release this node speaks for.
    Version,
    /// Cluster name, snitch, partitioner, schema versions.
    DescribeCluster,
    /// The replicas of a partition key given as text.
    GetEndpoints {
        keyspace: String,
        table: String,
        key: String,
    },
    ListSnapshots,
    /// Removes the snapshot `tag`, or every snapshot (`tag` None).
    ClearSnapshot {
        tag: Option<String>,
    },
    /// Flushes every memtable.
    Drain,
    GetCompactionThroughput,
    SetCompactionThroughput {
        mib_per_second: u32,
    },
    CompactionStats,
    /// Per-table figures of `keyspace` or `keyspace.table` names (every
    /// keyspace when empty).
    TableStats {
        names: Vec<String>,
    },
    /// Local replica reads and writes, as Cassandra's thread pool stages.
    TpStats,
    /// The log levels in force (answered by the server, which owns the
    /// process's logger).
    GetLoggingLevels,
    /// `level` for `logger` (Cassandra's logger names or tracing
    /// targets); both empty: back to the configured levels; an empty
    /// level removes the logger's own.
    SetLoggingLevel {
        logger: String,
        level: String,
    },
    /// The streaming throughput cap (`stream_throughput_outbound`).
    GetStreamThroughput {
        unit: ThroughputUnit,
    },
    /// Sets the streaming throughput cap until restart (0: none).
    SetStreamThroughput {
        value: u32,
        unit: ThroughputUnit,
    },
    /// Loads `keyspace.table`'s data from snapshot directories on this
    /// node (`nodetool import`); with `all_tokens`, partitions this node
    /// does not replicate too.
    Import {
        keyspace: String,
        table: String,
        dirs: Vec<String>,
        all_tokens: bool,
    },
    /// Drops entries of an auth cache on the node: those of `roles` (with
    /// `resources`, stored resource names, only those resources'), or all
    /// when no role is named.
    InvalidateAuthCache {
        cache: AuthCacheName,
        roles: Vec<String>,
        resources: Vec<String>,
    },
    /// Latency percentiles of the requests this node coordinated, by
    /// Cassandra's client request scope.
    ProxyHistograms,
    /// Latency percentiles of one table (`keyspace.table`), or of every
    /// table when None.
    TableHistograms {
        table: Option<(String, String)>,
    },
    /// Every endpoint's gossip state, as this node knows it.
    GossipInfo,
    /// Purges what is purgeable from the selected tables (a full
    /// compaction of each); `granularity` and `jobs` are Cassandra's
    /// options, checked by nodetool.
    GarbageCollect {
        selection: TableSelection,
        granularity: String,
        jobs: u32,
    },
    /// The guardrails in force, by Cassandra's names: of one category, or
    /// one guardrail; `expand` shows thresholds' warn and fail halves
    /// apart (answered by the server, which owns the guardrails' names).
    GetGuardrailsConfig {
        category: Option<String>,
        expand: bool,
        name: Option<String>,
    },
    /// A guardrail's setter and its values (`setguardrailsconfig`).
    SetGuardrailsConfig {
        args: Vec<String>,
    },
}

/// The auth caches nodetool's `invalidate*cache` commands name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuthCacheName {
    Roles,
    Permissions,
    Credentials,
}

/// How nodetool states a throughput: Cassandra's megabits per second
/// (rounded, or precise with `-d`) or MiB/s (`-m`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ThroughputUnit {
    Megabits,
    PreciseMegabits,
    Mebibytes,
}

/// The tables a flush, compaction or cleanup works on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TableSelection {
    /// None: every table.
    pub keyspace: Option<String>,
    /// Empty: every table of the keyspace.
    pub tables: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Response {
    Ack,
    /// A read's partition, with the tombstones the replica met reading it
    /// (for the tombstone thresholds; `replica::serve`) and, with
    /// `read_thresholds_enabled` and a local read size threshold, the bytes
    /// it loaded (else 0).
    Data {
        partition: Partition,
        tombstones: u64,
        bytes: u64,
    },
    Digest {
        digest: [u8; 16],
        tombstones: u64,
        bytes: u64,
    },
    Raw(RawPartition),
    Page {
        page: ScanPage,
        tombstones: u64,
        bytes: u64,
    },
    Schema(SchemaBlob),
    /// An operator command's output.
    Text(String),
    Error(RemoteError),
    /// Leaf hashes of a Merkle tree, in ring order.
    Merkle(Vec<[u8; 16]>),
    /// The answer to `PaxosPrepare`.
    PaxosPrepared(PrepareAnswer),
    /// The answer to `PaxosPropose`: accepted or refused.
    PaxosAccepted(bool),
    /// A streaming session opened: its id, and the files to fetch.
    StreamOpened {
        session: u64,
        files: Vec<StreamFile>,
    },
    /// An admin command is still running (sent on its request every
    /// `ADMIN_HEARTBEAT` until its answer).
    Running,
    /// A piece of a stream's file, with its CRC32.
    Chunk {
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
        crc32: u32,
    },
    /// The answer to `AnnSearch`: the rows, best first, each a partition
    /// of one row as a range read returns it; `from_graph`: the replica's
    /// graph proposed them (else its exact scan of the ranges).
    AnnRows {
        rows: Vec<Partition>,
        from_graph: bool,
    },
}

/// Why a node could not do what was asked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RemoteError {
    /// Too many requests in flight on that node.
    Overloaded(String),
    /// The request was wrong (e.g. an unknown table: schemas disagree).
    Invalid(String),
    /// The node failed (storage error).
    Failed(String),
    /// The replica refused a read that met more tombstones than its
    /// `tombstone_failure_threshold` (Cassandra's
    /// TombstoneOverwhelmingException, READ_TOO_MANY_TOMBSTONES).
    TooManyTombstones { tombstones: u64 },
    /// The replica refused a read that loaded at least its
    /// `local_read_size_fail_threshold` (Cassandra's
    /// LocalReadSizeTooLargeException, READ_SIZE).
    ReadTooLarge { bytes: u64 },
}

impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RemoteError::Overloaded(m) | RemoteError::Invalid(m) | RemoteError::Failed(m) => {
                f.write_str(m)
            }
            RemoteError::TooManyTombstones { tombstones } => {
                write!(f, "read aborted after {tombstones} tombstones")
            }
            RemoteError::ReadTooLarge { bytes } => {
                write!(f, "read aborted after loading {bytes} bytes")
            }
        }
    }
}

impl std::error::Error for RemoteError {}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("frame of {len} bytes is over the limit of {limit}")]
    TooLong { len: usize, limit: usize },
    #[error("frame has format version {0}, this node speaks {FORMAT_VERSION}")]
    Version(u8),
    #[error("empty frame")]
    Empty,
    #[error("malformed message: {0}")]
    Malformed(String),
}

/// A frame for `body`: length, version, postcard bytes.
pub fn encode_frame<T: Serialize>(body: &T) -> Vec<u8> {
    // Length placeholder and version, then the body. Serializing plain
    // data into a Vec cannot fail.
    let mut frame = postcard::to_extend(body, vec![0, 0, 0, 0, FORMAT_VERSION]).unwrap_or_default();
    let len = frame.len().saturating_sub(4) as u32;
    if frame.len() >= 4 {
        frame[..4].copy_from_slice(&len.to_be_bytes());
    }
    frame
}

/// The length a frame header announces, checked against `limit`
/// (`MAX_HELLO_BYTES` for a connection's first frame, else `MAX_FRAME_BYTES`).
pub fn frame_length(header: [u8; 4], limit: usize) -> Result<usize, DecodeError> {
    let len = u32::from_be_bytes(header) as usize;
    if len > limit {
        return Err(DecodeError::TooLong { len, limit });
    }
    if len == 0 {
        return Err(DecodeError::Empty);
    }
    Ok(len)
}

/// Decodes a frame's contents (after the length): version byte and body.
pub fn decode_body<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, DecodeError> {
    let (&version, body) = bytes.split_first().ok_or(DecodeError::Empty)?;
    if version != FORMAT_VERSION {
        return Err(DecodeError::Version(version));
    }
    postcard::from_bytes(body).map_err(|e| DecodeError::Malformed(e.to_string()))
}

/// A stored record: `version` then the postcard encoding of `value` (the
/// Paxos state and batchlog entries kept in reserved tables).
pub fn encode_versioned<T: Serialize>(version: u8, value: &T) -> Vec<u8> {
    // Serializing plain data into a Vec cannot fail.
    postcard::to_extend(value, vec![version]).unwrap_or_default()
}

/// Why a stored record (`decode_versioned`) could not be read; `what`
/// names the record ("paxos state", "batchlog entry").
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecordError {
    #[error("malformed {what}: {detail}")]
    Malformed { what: &'static str, detail: String },
    #[error("{what} of unknown format {version}")]
    UnknownFormat { what: &'static str, version: u8 },
    #[error("empty {what}")]
    Empty { what: &'static str },
}

/// Decodes what `encode_versioned` wrote; `what` names it in errors.
pub fn decode_versioned<T: for<'de> Deserialize<'de>>(
    version: u8,
    bytes: &[u8],
    what: &'static str,
) -> Result<T, RecordError> {
    match bytes.split_first() {
        Some((&v, body)) if v == version => {
            postcard::from_bytes(body).map_err(|e| RecordError::Malformed {
                what,
                detail: e.to_string(),
            })
        }
        Some((&v, _)) => Err(RecordError::UnknownFormat { what, version: v }),
        None => Err(RecordError::Empty { what }),
    }
}

/// The digest replicas compare: MD5 over the encoded live partition.
pub fn digest(partition: &Partition) -> [u8; 16] {
    use md5::Digest;
    let bytes = postcard::to_stdvec(partition).unwrap_or_default();
    md5::Md5::digest(&bytes).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocksandra_storage::PartitionKey;

    #[test]
    fn frames_round_trip() {
        let envelope = Envelope::Request {
            id: 7,
            body: Request::SchemaPull,
        };
        let frame = encode_frame(&envelope);
        let len = frame_length([frame[0], frame[1], frame[2], frame[3]], MAX_FRAME_BYTES)
            .expect("length");
        assert_eq!(len, frame.len() - 4);
        let back: Envelope = decode_body(&frame[4..]).expect("decodes");
        assert_eq!(back, envelope);
    }

    #[test]
    fn bad_frames_are_refused() {
        assert_eq!(
            frame_length(
                ((MAX_FRAME_BYTES + 1) as u32).to_be_bytes(),
                MAX_FRAME_BYTES
            ),
            Err(DecodeError::TooLong {
                len: MAX_FRAME_BYTES + 1,
                limit: MAX_FRAME_BYTES
            })
        );
        assert_eq!(
            frame_length(
                ((MAX_HELLO_BYTES + 1) as u32).to_be_bytes(),
                MAX_HELLO_BYTES
            ),
            Err(DecodeError::TooLong {
                len: MAX_HELLO_BYTES + 1,
                limit: MAX_HELLO_BYTES
            })
        );
        assert_eq!(
            frame_length([0; 4], MAX_FRAME_BYTES),
            Err(DecodeError::Empty)
        );
        assert_eq!(
            decode_body::<Envelope>(&[FORMAT_VERSION + 1, 0]),
            Err(DecodeError::Version(FORMAT_VERSION + 1))
        );
        assert!(matches!(
            decode_body::<Envelope>(&[FORMAT_VERSION, 9, 9, 9]),
            Err(DecodeError::Malformed(_))
        ));
        // A huge announced vector length must fail, not allocate.
        assert!(
            decode_body::<Envelope>(&[FORMAT_VERSION, 0, 1, 0, 0xff, 0xff, 0xff, 0x0f]).is_err()
        );
    }

    proptest::proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let _ = decode_body::<Envelope>(&bytes);
            let mut versioned = vec![FORMAT_VERSION];
            versioned.extend_from_slice(&bytes);
            let _ = decode_body::<Envelope>(&versioned);
            let _ = decode_body::<Hello>(&versioned);
        }
    }

    fn empty_partition(key: &[u8]) -> Partition {
        Partition {
            key: PartitionKey::new(key.to_vec()),
            static_row: None,
            rows: Vec::new(),
        }
    }

    #[test]
    fn read_answers_and_refusals_round_trip() {
        let partition = empty_partition(b"k");
        for body in [
            Response::Data {
                partition: partition.clone(),
                tombstones: 20,
                bytes: 4096,
            },
            Response::Digest {
                digest: digest(&partition),
                tombstones: 7,
                bytes: 0,
            },
            Response::Page {
                page: ScanPage {
                    partitions: vec![partition],
                    next: None,
                },
                tombstones: u64::MAX,
                bytes: u64::MAX,
            },
            Response::Error(RemoteError::TooManyTombstones { tombstones: 51 }),
            Response::Error(RemoteError::ReadTooLarge { bytes: 16856 }),
        ] {
            let envelope = Envelope::Response { id: 3, body };
            let frame = encode_frame(&envelope);
            let back: Envelope = decode_body(&frame[4..]).expect("decodes");
            assert_eq!(back, envelope);
        }
    }

    #[test]
    fn digests_differ_with_content() {
        let a = empty_partition(b"a");
        let b = empty_partition(b"b");
        assert_eq!(digest(&a), digest(&a.clone()));
        assert_ne!(digest(&a), digest(&b));
    }
}

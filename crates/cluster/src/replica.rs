//! What a replica does with a data request, whether it came over the
//! network or from this node's own coordinator. Reads (data, digest, the
//! raw reads a coordinator reconciles with, scans) count the tombstones
//! they meet and answer to the node's tombstone thresholds, as Cassandra's
//! replicas do: past the warn threshold a log line, past the failure
//! threshold the read stops and is refused
//! (`RemoteError::TooManyTombstones`). With `read_thresholds_enabled` and
//! a local read size threshold, reads also measure the bytes they loaded:
//! reported in the answer, refused from the fail threshold on
//! (`RemoteError::ReadTooLarge`).

use std::fmt;
use std::sync::Arc;

use rocksandra_query::read_thresholds::{self, ReadThresholdSettings, SizeThresholds};
use rocksandra_query::tombstones::{
    self, TombstoneSettings, TombstoneThresholds, TombstoneVerdict,
};
use rocksandra_storage::{
    Engine, PartitionRead, RangeScan, StorageError, TableId, TableOptions, TableSpec,
};

use crate::message::{digest, RemoteError, Request, Response};

/// This node's replica: its storage and the tombstone thresholds in force
/// (the executor's, which the node's configuration sets).
#[derive(Clone)]
pub struct Replica {
    pub engine: Arc<dyn Engine>,
    pub tombstones: Arc<TombstoneSettings>,
    /// `read_thresholds_enabled` and the read size thresholds (the
    /// coordinator's side: `read_reports`).
    pub read_thresholds: Arc<rocksandra_query::read_thresholds::ReadThresholdSettings>,
    /// The node's ANN graphs, which answer `AnnSearch` (None: no graphs).
    pub vectors: Option<crate::vector_search::VectorReplica>,
}

impl Replica {
    /// Runs a data request here (see `serve`), ANN searches included
    /// (`vector_search::serve`).
    pub fn serve(&self, request: Request) -> Result<Response, Request> {
        let vectors = self.vectors.as_ref();
        let thresholds = self.tombstones.get();
        let request = match crate::vector_search::serve(vectors, &self.engine, thresholds, request)
        {
            Ok(answered) => return Ok(answered),
            Err(other) => other,
        };
        serve(
            &*self.engine,
            ReadLimits::new(&self.tombstones, &self.read_thresholds),
            request,
        )
    }
}

/// What a replica's reads answer to: the tombstone thresholds and, with
/// `read_thresholds_enabled`, the local read size thresholds (None: no
/// size measured).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadLimits {
    pub tombstones: TombstoneThresholds,
    pub local_size: Option<SizeThresholds>,
}

impl ReadLimits {
    pub fn new(tombstones: &TombstoneSettings, read: &ReadThresholdSettings) -> Self {
        ReadLimits {
            tombstones: tombstones.get(),
            local_size: read.enabled().and_then(|read| read.local_size()),
        }
    }

    /// The bytes `measure` gives when sizes are measured; 0 otherwise.
    fn bytes(&self, measure: impl FnOnce() -> u64) -> u64 {
        self.local_size.map_or(0, |_| measure())
    }
}

impl From<TombstoneThresholds> for ReadLimits {
    fn from(tombstones: TombstoneThresholds) -> Self {
        ReadLimits {
            tombstones,
            local_size: None,
        }
    }
}

fn failed(e: StorageError) -> Response {
    Response::Error(match e {
        StorageError::UnknownTable(t) => {
            RemoteError::Invalid(format!("unknown table {t:?} (schemas disagree)"))
        }
        StorageError::Invalid(m) => RemoteError::Invalid(m),
        other => RemoteError::Failed(other.to_string()),
    })
}

/// What a replica's log lines call a read: it knows no CQL text, only the
/// table and the tokens.
pub(crate) enum ReadQuery<'a> {
    Partition(&'a PartitionRead),
    Scan(&'a RangeScan),
    /// An ANN search of a table over some token ranges (`vector_search`).
    Ann {
        table: TableId,
        ranges: usize,
    },
}

impl fmt::Display for ReadQuery<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadQuery::Partition(read) => write!(
                f,
                "a read of table {} at token {}",
                read.table.0, read.partition.token.0
            ),
            ReadQuery::Scan(scan) => write!(
                f,
                "a scan of table {} over tokens [{}, {}]",
                scan.table.0, scan.token_start.0, scan.token_end.0
            ),
            ReadQuery::Ann { table, ranges } => write!(
                f,
                "an ANN search of table {} over {ranges} token ranges",
                table.0
            ),
        }
    }
}

/// The size thresholds' word on a read that loaded `bytes`: refused (and
/// logged with Cassandra's text) from the fail threshold on.
fn judge_size(limits: ReadLimits, bytes: u64, query: ReadQuery<'_>) -> Result<(), RemoteError> {
    match limits.local_size.and_then(|size| size.fail) {
        Some(fail) if bytes >= fail => {
            let fail = format!("{fail}B");
            tracing::warn!(
                "{}",
                read_thresholds::local_size_refusal_text(&query, bytes, &fail)
            );
            Err(RemoteError::ReadTooLarge { bytes })
        }
        _ => Ok(()),
    }
}

/// The thresholds' word on a read that returned `live` rows and met
/// `tombstones`: logged past the warn threshold, refused (and logged) past
/// the failure threshold.
pub(crate) fn judge(
    thresholds: TombstoneThresholds,
    tombstones: u64,
    live: usize,
    query: ReadQuery<'_>,
) -> Result<(), RemoteError> {
    match thresholds.verdict(tombstones) {
        TombstoneVerdict::Within => Ok(()),
        TombstoneVerdict::Warn => {
            tracing::warn!("{}", tombstones::warning_text(live, tombstones, &query));
            Ok(())
        }
        TombstoneVerdict::Fail => {
            tracing::error!("{}", tombstones::failure_text(thresholds.failure, &query));
            Err(RemoteError::TooManyTombstones { tombstones })
        }
    }
}

/// Runs a data request (Paxos and batchlog ones included) on this node's
/// storage, reads held to `thresholds`; Err(request) for other requests.
pub fn serve(
    engine: &dyn Engine,
    limits: impl Into<ReadLimits>,
    request: Request,
) -> Result<Response, Request> {
    let limits = limits.into();
    let thresholds = limits.tombstones;
    Ok(match request {
        Request::Mutate { mutations, now } => match engine.write(&mutations, now) {
            Ok(()) => Response::Ack,
            Err(e) => failed(e),
        },
        Request::Read {
            read,
            now,
            digest: digest_only,
        } => serve_read(engine, limits, &read, now, digest_only),
        Request::ReadRaw { read, now } => {
            match engine.read_raw_counted(&read, now, thresholds.failure) {
                Ok((raw, tombstones)) => {
                    let query = ReadQuery::Partition(&read);
                    match judge(thresholds, tombstones, raw.live_rows, query) {
                        Err(refused) => Response::Error(refused),
                        Ok(()) => Response::Raw(raw),
                    }
                }
                Err(e) => failed(e),
            }
        }
        Request::Scan { scan, now } => serve_scan(engine, limits, &scan, now),
        Request::MerkleTree {
            table,
            range,
            depth,
            now,
        } => match crate::repair::leaf_hashes(engine, TableId(table), range, depth, now) {
            Ok(leaves) => Response::Merkle(leaves),
            Err(e) => Response::Error(RemoteError::Failed(e.to_string())),
        },
        other => {
            return crate::paxos_store::serve(engine, other)
                .or_else(|other| crate::batchlog::serve(engine, other))
        }
    })
}

/// A partition read's answer: its data, or only their digest, unless the
/// tombstones or the bytes it met refuse it.
fn serve_read(
    engine: &dyn Engine,
    limits: ReadLimits,
    read: &PartitionRead,
    now: rocksandra_data::LocalTime,
    digest_only: bool,
) -> Response {
    let thresholds = limits.tombstones;
    match engine.read_partition_counted(read, now, thresholds.failure) {
        Ok((partition, tombstones)) => {
            let live = partition.rows.len();
            let bytes = limits.bytes(|| read_thresholds::partition_bytes(&partition));
            let query = || ReadQuery::Partition(read);
            let judged = judge(thresholds, tombstones, live, query())
                .and_then(|()| judge_size(limits, bytes, query()));
            match judged {
                Err(refused) => Response::Error(refused),
                Ok(()) if digest_only => Response::Digest {
                    digest: digest(&partition),
                    tombstones,
                    bytes,
                },
                Ok(()) => Response::Data {
                    partition,
                    tombstones,
                    bytes,
                },
            }
        }
        Err(e) => failed(e),
    }
}

/// A range scan's page, unless the tombstones or the bytes it met refuse
/// it.
fn serve_scan(
    engine: &dyn Engine,
    limits: ReadLimits,
    scan: &RangeScan,
    now: rocksandra_data::LocalTime,
) -> Response {
    let thresholds = limits.tombstones;
    match engine.scan_counted(scan, now, thresholds.failure) {
        Ok((page, tombstones)) => {
            let live = page.partitions.iter().map(|p| p.rows.len()).sum();
            let bytes = limits.bytes(|| {
                page.partitions
                    .iter()
                    .map(read_thresholds::partition_bytes)
                    .sum()
            });
            let judged = judge(thresholds, tombstones, live, ReadQuery::Scan(scan))
                .and_then(|()| judge_size(limits, bytes, ReadQuery::Scan(scan)));
            match judged {
                Err(refused) => Response::Error(refused),
                Ok(()) => Response::Page {
                    page,
                    tombstones,
                    bytes,
                },
            }
        }
        Err(e) => failed(e),
    }
}

/// Creates one of the cluster's reserved tables (no clustering columns,
/// gc_grace 0) unless it exists: at every start, as the engine's table
/// registry is in memory while the stored data stays.
pub fn open_reserved_table(engine: &dyn Engine, id: TableId) -> Result<(), StorageError> {
    let spec = TableSpec {
        id,
        clustering: Vec::new(),
        options: TableOptions {
            gc_grace_seconds: 0,
            ..TableOptions::default()
        },
        dropped: Vec::new(),
    };
    match engine.create_table(spec) {
        Ok(()) | Err(StorageError::TableExists(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocksandra_data::{LocalTime, Token};
    use rocksandra_storage::cell::{DeletionTime, LivenessInfo};
    use rocksandra_storage::memory::MemoryStore;
    use rocksandra_storage::testkit::{clustering, full_read, full_scan, pk, test_table};
    use rocksandra_storage::{KvEngine, Mutation, RowUpdate};

    const NOW: LocalTime = LocalTime(1_700_000_000);
    const LOW: TombstoneThresholds = TombstoneThresholds {
        warn: 2,
        failure: 4,
    };

    /// Partition "p" of table 1 with rows 0..live, then rows
    /// live..live+dead deleted.
    fn engine_with(live: i32, dead: i32) -> KvEngine<MemoryStore> {
        let engine = KvEngine::new(MemoryStore::new(Arc::new(|| NOW)));
        engine.create_table(test_table(1)).unwrap();
        let mut m = Mutation::new(TableId(1), pk("p"));
        for c in 0..live {
            let update = RowUpdate {
                liveness: Some(LivenessInfo::new(10, 0, 0)),
                ..RowUpdate::default()
            };
            m.rows.push((clustering(c, "x"), update));
        }
        for c in live..live + dead {
            let update = RowUpdate {
                deletion: Some(DeletionTime::new(10, NOW.0)),
                ..RowUpdate::default()
            };
            m.rows.push((clustering(c, "x"), update));
        }
        engine.write(&[m], NOW).unwrap();
        engine
    }

    fn read(digest: bool) -> Request {
        Request::Read {
            read: full_read(TableId(1), pk("p")),
            now: NOW,
            digest,
        }
    }

    fn scan() -> Request {
        Request::Scan {
            scan: full_scan(TableId(1)),
            now: NOW,
        }
    }

    fn tombstones_of(response: &Response) -> Option<u64> {
        match response {
            Response::Data { tombstones, .. }
            | Response::Digest { tombstones, .. }
            | Response::Page { tombstones, .. } => Some(*tombstones),
            _ => None,
        }
    }

    #[test]
    fn reads_within_and_past_the_warn_threshold_answer_with_their_count() {
        for dead in [0, 3, 4] {
            let engine = engine_with(5, dead);
            for request in [read(false), read(true), scan()] {
                let response = serve(&engine, LOW, request).unwrap();
                assert_eq!(tombstones_of(&response), Some(dead as u64), "{response:?}");
            }
        }
        let engine = engine_with(5, 4);
        match serve(&engine, LOW, read(false)).unwrap() {
            Response::Data { partition, .. } => assert_eq!(partition.rows.len(), 5),
            other => panic!("not data: {other:?}"),
        }
    }

    fn bytes_of(response: &Response) -> Option<u64> {
        match response {
            Response::Data { bytes, .. }
            | Response::Digest { bytes, .. }
            | Response::Page { bytes, .. } => Some(*bytes),
            _ => None,
        }
    }

    #[test]
    fn reads_measure_their_bytes_only_with_a_local_read_size_threshold() {
        let engine = engine_with(5, 0);
        let off = serve(&engine, TombstoneThresholds::default(), read(false)).unwrap();
        assert_eq!(bytes_of(&off), Some(0));
        let limits = |fail| ReadLimits {
            tombstones: TombstoneThresholds::default(),
            local_size: Some(SizeThresholds {
                warn: Some(1),
                fail,
            }),
        };
        let measured = serve(&engine, limits(None), read(false)).unwrap();
        let bytes = bytes_of(&measured).unwrap();
        // The key "p", and 5 clusterings of an int and "x" with no cells.
        assert_eq!(bytes, 1 + 5 * (4 + 1));
        // Refused from the fail threshold on (as Cassandra's >=).
        for request in [read(false), read(true), scan()] {
            assert_eq!(
                serve(&engine, limits(Some(bytes)), request).unwrap(),
                Response::Error(RemoteError::ReadTooLarge { bytes })
            );
        }
        let under = serve(&engine, limits(Some(bytes + 1)), read(true)).unwrap();
        assert_eq!(bytes_of(&under), Some(bytes));
    }

    #[test]
    fn reads_past_the_failure_threshold_are_refused() {
        let engine = engine_with(5, 5);
        for request in [read(false), read(true), scan()] {
            assert_eq!(
                serve(&engine, LOW, request).unwrap(),
                Response::Error(RemoteError::TooManyTombstones { tombstones: 5 })
            );
        }
        // The same read under Cassandra's defaults is answered.
        let response = serve(&engine, TombstoneThresholds::default(), read(false)).unwrap();
        assert_eq!(tombstones_of(&response), Some(5));
    }

    #[test]
    fn reads_stop_as_soon_as_they_pass_the_failure_threshold() {
        // 100 deleted rows: every read stops at the fifth (failure 4), raw
        // reads for reconciliation included.
        let engine = engine_with(5, 100);
        let raw = Request::ReadRaw {
            read: full_read(TableId(1), pk("p")),
            now: NOW,
        };
        for request in [read(false), read(true), scan(), raw] {
            assert_eq!(
                serve(&engine, LOW, request).unwrap(),
                Response::Error(RemoteError::TooManyTombstones { tombstones: 5 })
            );
        }
        let full = serve(&engine, TombstoneThresholds::default(), read(false)).unwrap();
        assert_eq!(tombstones_of(&full), Some(100));
    }

    #[test]
    fn the_replica_reads_the_thresholds_in_force() {
        let replica = Replica {
            engine: Arc::new(engine_with(1, 5)),
            tombstones: Arc::default(),
            read_thresholds: Arc::default(),
            vectors: None,
        };
        assert_eq!(tombstones_of(&replica.serve(read(false)).unwrap()), Some(5));
        replica.tombstones.set(LOW);
        assert!(matches!(
            replica.serve(read(false)).unwrap(),
            Response::Error(RemoteError::TooManyTombstones { .. })
        ));
    }

    #[test]
    fn log_lines_name_the_table_and_tokens() {
        let read = full_read(TableId(7), pk("p"));
        let token = read.partition.token.0;
        assert_eq!(
            ReadQuery::Partition(&read).to_string(),
            format!("a read of table 7 at token {token}")
        );
        let scan = RangeScan {
            table: TableId(7),
            token_start: Token(-5),
            token_end: Token(9),
            resume_after: None,
            include_static: false,
            per_partition_limit: 0,
            row_limit: 0,
        };
        assert_eq!(
            ReadQuery::Scan(&scan).to_string(),
            "a scan of table 7 over tokens [-5, 9]"
        );
    }
}

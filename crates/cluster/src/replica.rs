//! What a replica does with a data request, whether it came over the
//! network or from this node's own coordinator.

use rocksandra_storage::{Engine, StorageError, TableId, TableOptions, TableSpec};

use crate::message::{digest, RemoteError, Request, Response};

fn failed(e: StorageError) -> Response {
    Response::Error(match e {
        StorageError::UnknownTable(t) => {
            RemoteError::Invalid(format!("unknown table {t:?} (schemas disagree)"))
        }
        StorageError::Invalid(m) => RemoteError::Invalid(m),
        other => RemoteError::Failed(other.to_string()),
    })
}

/// Runs a data request (Paxos and batchlog ones included) on this node's storage;
/// Err(request) for other requests.
pub fn serve(engine: &dyn Engine, request: Request) -> Result<Response, Request> {
    Ok(match request {
        Request::Mutate { mutations, now } => match engine.write(&mutations, now) {
            Ok(()) => Response::Ack,
            Err(e) => failed(e),
        },
        Request::Read {
            read,
            now,
            digest: d,
        } => match engine.read_partition(&read, now) {
            Ok(p) if d => Response::Digest(digest(&p)),
            Ok(p) => Response::Data(p),
            Err(e) => failed(e),
        },
        Request::ReadRaw { read, now } => match engine.read_raw(&read, now) {
            Ok(raw) => Response::Raw(raw),
            Err(e) => failed(e),
        },
        Request::Scan { scan, now } => match engine.scan(&scan, now) {
            Ok(page) => Response::Page(page),
            Err(e) => failed(e),
        },
        Request::MerkleTree {
            table,
            range,
            depth,
            now,
        } => match crate::repair::leaf_hashes(engine, TableId(table), range, depth, now) {
            Ok(leaves) => Response::Merkle(leaves),
            Err(e) => Response::Error(RemoteError::Failed(e)),
        },
        other => {
            return crate::paxos_store::serve(engine, other)
                .or_else(|other| crate::batchlog::serve(engine, other))
        }
    })
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

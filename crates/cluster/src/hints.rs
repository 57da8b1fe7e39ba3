//! Hinted handoff: writes a down (or silent) replica missed, kept on the
//! coordinator until the replica is back, then replayed to it.
//!
//! One append-only file per target host (`hints/<host id>.hints`): records
//! of a 4-byte big-endian length and a postcard-encoded `HintRecord`. A torn
//! record at the end (a crash mid-append) ends the file. Replaying renames
//! the file first, so new hints go to a fresh file meanwhile.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Duration;

use rocksandra_data::LocalTime;
use rocksandra_storage::Mutation;
use serde::{Deserialize, Serialize};

use crate::coordinator::{Shared, WRITE_REQUEST_TIMEOUT};
use crate::message::{RemoteError, Request, Response};
use crate::metrics::HintCounts;

/// Hints kept for one host at most; later ones are dropped (repair fixes
/// what they would have), as Cassandra's `max_hints_size_per_host`.
pub const MAX_HINT_BYTES_PER_HOST: u64 = 512 << 20;
/// Largest record a hints file may hold (a write larger than this is not
/// hinted).
pub const MAX_HINT_RECORD_BYTES: usize = 64 << 20;
/// How long one replayed hint may wait for its acknowledgement.
pub const HINT_DELIVERY_TIMEOUT: Duration =
    Duration::from_secs(WRITE_REQUEST_TIMEOUT.as_secs() * 5);

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HintRecord {
    /// When the write was coordinated (microseconds).
    pub written_at_micros: i64,
    pub mutations: Vec<Mutation>,
}

pub struct Hints {
    dir: PathBuf,
    files: Mutex<HashMap<[u8; 16], (File, u64)>>,
    /// Cassandra's `max_hint_window`; None when hinted handoff is off.
    window: Option<Duration>,
    /// Hints written, refused and delivered (for the metrics endpoint).
    pub counts: HintCounts,
}

impl Hints {
    pub fn open(dir: &Path, window: Option<Duration>) -> std::io::Result<Hints> {
        std::fs::create_dir_all(dir)?;
        Ok(Hints {
            dir: dir.to_path_buf(),
            files: Mutex::new(HashMap::new()),
            window,
            counts: HintCounts::default(),
        })
    }

    /// Whether a replica down for `down_for` still gets hints.
    pub fn accepts(&self, down_for: Duration) -> bool {
        self.window.is_some_and(|w| down_for <= w)
    }

    fn path(&self, host: &[u8; 16]) -> PathBuf {
        self.dir.join(format!("{}.hints", hex::encode(host)))
    }

    /// Appends a hint for `host`; false when it was dropped (over the
    /// per-host limit or too large).
    pub fn store(
        &self,
        host: [u8; 16],
        written_at_micros: i64,
        mutations: &[Mutation],
    ) -> std::io::Result<bool> {
        let record = HintRecord {
            written_at_micros,
            mutations: mutations.to_vec(),
        };
        let body = postcard::to_stdvec(&record).unwrap_or_default();
        if body.len() > MAX_HINT_RECORD_BYTES {
            self.counts.refused.fetch_add(1, Ordering::Relaxed);
            return Ok(false);
        }
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        let (file, size) = match files.entry(host) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(self.path(&host))?;
                let size = file.metadata()?.len();
                e.insert((file, size))
            }
        };
        if *size + body.len() as u64 > MAX_HINT_BYTES_PER_HOST {
            self.counts.refused.fetch_add(1, Ordering::Relaxed);
            return Ok(false);
        }
        let mut record = (body.len() as u32).to_be_bytes().to_vec();
        record.extend_from_slice(&body);
        file.write_all(&record)?;
        *size += record.len() as u64;
        self.counts.written.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// Hosts with hints waiting, in host id order (not the directory's, so
    /// replays run in the same order every time).
    pub fn hosts(&self) -> Vec<[u8; 16]> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut hosts: Vec<[u8; 16]> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                // A replay that stopped early left the rest in `.replaying`.
                let stem = name
                    .strip_suffix(".hints")
                    .or_else(|| name.strip_suffix(".replaying"))?;
                let meta = e.metadata().ok()?;
                (meta.len() > 0).then(|| crate::gossip::parse_hex16(stem))?
            })
            .collect();
        hosts.sort_unstable();
        hosts.dedup();
        hosts
    }

    /// Bytes of the hint files waiting for delivery (Cassandra's pending
    /// hints, in bytes: records are not counted without reading them).
    pub fn pending_bytes(&self) -> u64 {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        entries
            .filter_map(|e| e.ok()?.metadata().ok())
            .filter(|meta| meta.is_file())
            .map(|meta| meta.len())
            .sum()
    }

    /// Forgets the hints of a host that left the cluster (decommissioned
    /// or removed): they have nowhere to go.
    pub fn drop_host(&self, host: [u8; 16]) {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        files.remove(&host);
        let _ = std::fs::remove_file(self.path(&host));
        let _ = std::fs::remove_file(self.dir.join(format!("{}.replaying", hex::encode(host))));
    }

    /// Replays the hints of `host` through `send` (in order, stopping at
    /// the first failure); what was not delivered is kept. Returns how many
    /// records were delivered.
    pub fn replay(
        &self,
        host: [u8; 16],
        send: &mut dyn FnMut(Vec<Mutation>) -> bool,
    ) -> std::io::Result<usize> {
        self.replay_records(host, &mut |record| send(record.mutations))
    }

    /// `replay` with whole records (their write times too).
    pub fn replay_records(
        &self,
        host: [u8; 16],
        send: &mut dyn FnMut(HintRecord) -> bool,
    ) -> std::io::Result<usize> {
        let path = self.path(&host);
        let replaying = self.dir.join(format!("{}.replaying", hex::encode(host)));
        {
            // New hints go to a fresh file while these are replayed.
            let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
            files.remove(&host);
            if !replaying.exists() {
                match std::fs::rename(&path, &replaying) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
                    Err(e) => return Err(e),
                }
            }
        }
        let records = read_records(&replaying)?;
        let mut delivered = 0;
        let mut rest = Vec::new();
        for record in records {
            if rest.is_empty() && send(record.clone()) {
                delivered += 1;
                self.counts.delivered.fetch_add(1, Ordering::Relaxed);
            } else {
                rest.push(record);
            }
        }
        if rest.is_empty() {
            std::fs::remove_file(&replaying)?;
        } else {
            // Keep what failed for the next attempt, before newer hints.
            let mut bytes = Vec::new();
            for record in &rest {
                let body = postcard::to_stdvec(record).unwrap_or_default();
                bytes.extend_from_slice(&(body.len() as u32).to_be_bytes());
                bytes.extend_from_slice(&body);
            }
            std::fs::write(&replaying, bytes)?;
        }
        Ok(delivered)
    }
}

/// One pass of hinted handoff on `shared`'s node: every host with hints
/// that is up and has this node's schema gets them (through `shared`'s
/// transport; those it refuses as invalid are dropped); the hints of a host
/// gone from the ring are dropped once `has_left` says it left. Returns
/// what each replay delivered, by endpoint.
pub fn deliver(
    shared: &Shared,
    has_left: &dyn Fn([u8; 16]) -> bool,
) -> Vec<(IpAddr, std::io::Result<usize>)> {
    let topology = shared.topology();
    let mut delivered = Vec::new();
    for host in shared.hints.hosts() {
        let Some(endpoint) = topology.endpoint_of_host(host) else {
            // Gone from the ring (left or removed) and known to gossip
            // as such: its hints have nowhere to go.
            if has_left(host) {
                shared.hints.drop_host(host);
            }
            continue;
        };
        if !topology.is_alive(endpoint) || endpoint == shared.local {
            continue;
        }
        // As Cassandra, only to a node with the same schema: one that does
        // not know a hint's table yet would refuse it for good.
        let version = |a: IpAddr| topology.nodes.get(&a).map(|v| v.schema_version);
        if let (Some(ours), Some(theirs)) = (version(shared.local), version(endpoint)) {
            if ours != theirs {
                continue;
            }
        }
        let now = LocalTime((shared.now_micros)().div_euclid(1_000_000));
        let result = shared.hints.replay(host, &mut |mutations| {
            let answer = shared.messaging.call(
                endpoint,
                Request::Mutate { mutations, now },
                HINT_DELIVERY_TIMEOUT,
            );
            match answer {
                Ok(Response::Ack) => true,
                // Refused for good (a table the replica does not know: it
                // was dropped): kept, it would hold back every later hint
                // for the host. Dropped, as Cassandra drops such hints.
                Ok(Response::Error(RemoteError::Invalid(reason))) => {
                    tracing::warn!("dropping a hint {endpoint} refuses: {reason}");
                    true
                }
                _ => false,
            }
        });
        delivered.push((endpoint, result));
    }
    delivered
}

/// Hands the hints kept here to `to`, which keeps them for the same hosts
/// (decommission: this node's hints must not leave with it); hints for `to`
/// itself are not (deliver them first). What could not be handed over
/// stays. Returns how many records were.
pub fn hand_over(shared: &Shared, to: IpAddr) -> usize {
    let mut handed = 0;
    let heir = shared.topology().host_id(to);
    for host in shared.hints.hosts() {
        if Some(host) == heir {
            continue;
        }
        let result = shared.hints.replay_records(host, &mut |record| {
            matches!(
                shared.messaging.call(
                    to,
                    Request::StoreHint {
                        host,
                        written_at_micros: record.written_at_micros,
                        mutations: record.mutations,
                    },
                    HINT_DELIVERY_TIMEOUT
                ),
                Ok(Response::Ack)
            )
        });
        match result {
            Ok(n) => handed += n,
            Err(e) => tracing::warn!("cannot hand hints over to {to}: {e}"),
        }
    }
    handed
}

/// The complete records of a hints file (a torn last record is ignored).
fn read_records(path: &Path) -> std::io::Result<Vec<HintRecord>> {
    let mut bytes = Vec::new();
    File::open(path)?.read_to_end(&mut bytes)?;
    let mut records = Vec::new();
    let mut rest = bytes.as_slice();
    while rest.len() >= 4 {
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        if len > MAX_HINT_RECORD_BYTES || rest.len() < 4 + len {
            break;
        }
        match postcard::from_bytes::<HintRecord>(&rest[4..4 + len]) {
            Ok(record) => records.push(record),
            Err(_) => break,
        }
        rest = &rest[4 + len..];
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocksandra_storage::{PartitionKey, TableId};

    fn mutation(key: &str) -> Mutation {
        Mutation::new(TableId(3), PartitionKey::new(key.as_bytes().to_vec()))
    }

    #[test]
    fn hints_replay_in_order_and_keep_failures() {
        let dir = tempfile::tempdir().expect("tempdir");
        let hints = Hints::open(dir.path(), Some(Duration::from_secs(3600))).expect("opens");
        let host = [1u8; 16];
        for k in ["a", "b", "c"] {
            assert!(hints.store(host, 1, &[mutation(k)]).expect("stores"));
        }
        assert_eq!(hints.hosts(), vec![host]);
        // The second delivery fails: b and c are kept.
        let mut seen = Vec::new();
        let delivered = hints
            .replay(host, &mut |m| {
                seen.push(m[0].partition.key.clone());
                seen.len() != 2
            })
            .expect("replays");
        assert_eq!(delivered, 1);
        // What was kept is still offered, even with no newer hint.
        assert_eq!(hints.hosts(), vec![host]);
        // A hint written meanwhile waits behind the kept ones.
        assert!(hints.store(host, 2, &[mutation("d")]).expect("stores"));
        let mut order = Vec::new();
        hints
            .replay(host, &mut |m| {
                order.push(m[0].partition.key.clone());
                true
            })
            .expect("replays");
        assert_eq!(order, vec![b"b".to_vec(), b"c".to_vec()]);
        let mut last = Vec::new();
        hints
            .replay(host, &mut |m| {
                last.push(m[0].partition.key.clone());
                true
            })
            .expect("replays");
        assert_eq!(last, vec![b"d".to_vec()]);
        assert!(hints.hosts().is_empty());
    }

    #[test]
    fn a_torn_tail_is_ignored() {
        let dir = tempfile::tempdir().expect("tempdir");
        let hints = Hints::open(dir.path(), Some(Duration::from_secs(3600))).expect("opens");
        let host = [2u8; 16];
        hints.store(host, 1, &[mutation("a")]).expect("stores");
        drop(hints);
        let path = dir.path().join(format!("{}.hints", hex::encode(host)));
        let mut file = OpenOptions::new().append(true).open(&path).expect("opens");
        file.write_all(&[0, 0, 0, 50, 1, 2]).expect("writes");
        let hints = Hints::open(dir.path(), Some(Duration::from_secs(3600))).expect("opens");
        let mut n = 0;
        hints
            .replay(host, &mut |_| {
                n += 1;
                true
            })
            .expect("replays");
        assert_eq!(n, 1);
    }
}

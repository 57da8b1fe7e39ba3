//! Streaming a table's token ranges between nodes, in bounded pieces.
//!
//! The source writes the ranges' data to files (`Engine::stream_out`, SST
//! files of at most 64 MiB on RocksDB), the files travel in chunks of at
//! most `STREAM_CHUNK_BYTES`, each with its CRC32, and the receiver writes
//! them to its disk as they arrive and ingests them at the end
//! (`Engine::stream_in`). Neither side ever holds more than a chunk of a
//! stream in memory, so a range of any size moves.
//!
//! A stream is a session served by one node for one peer:
//! - **pull** (bootstrap, rebuild, removenode, repair): the receiver asks
//!   `StreamOut`; the source writes the files and answers their names and
//!   sizes; the receiver fetches `StreamChunk` after `StreamChunk`, then
//!   `StreamClose`s the session.
//! - **push** (decommission, repair): the source announces the files with
//!   `StreamBegin`, sends them with `StreamPut` in order, and
//!   `StreamCommit` makes the receiver ingest them.
//!
//! `StreamServer` keeps the sessions a node serves: at most
//! `STREAM_SESSIONS_MAX`, each dropped (with its files) after
//! `STREAM_SESSION_IDLE` without a request. `Throttle` spreads what a node
//! sends over time (`stream_throughput_outbound`). `fetch` and `send` are
//! the other side, over any `Transport`.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rocksandra_storage::{Engine, TableId, TokenRange};
use serde::{Deserialize, Serialize};

use crate::message::{RemoteError, Request, Response};
use crate::messaging::{SendError, Transport};

/// Why a stream (or a piece of one) failed.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// A stream file could not be opened, created or sized.
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Reading, writing or syncing an open stream file, or making its
    /// directory.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The engine could not write the ranges to files or ingest them.
    #[error("{0}")]
    Storage(#[from] rocksandra_storage::StorageError),
    /// A chunk asked for past the end of its file.
    #[error("offset {offset} is past the end of a {size}-byte file")]
    PastEnd { offset: u64, size: u64 },
    /// A chunk received out of order.
    #[error("a chunk at {offset} where {expected} was expected")]
    OutOfOrder { offset: u64, expected: u64 },
    /// A chunk received past its file's announced size.
    #[error("a chunk ending at {end}, past the file's announced {size} bytes")]
    PastAnnounced { end: u64, size: u64 },
    /// The peer could not be asked.
    #[error("{0}")]
    Send(#[from] SendError),
    /// The peer refused.
    #[error("{peer}: {error}")]
    Refused { peer: IpAddr, error: RemoteError },
    /// The peer answered something else than the request calls for.
    #[error("{peer} answered {answer:?}")]
    Unexpected { peer: IpAddr, answer: Box<Response> },
    /// The peer sent a chunk of the wrong size.
    #[error("{peer} sent {len} bytes at {offset} of a {size}-byte file")]
    BadChunk {
        peer: IpAddr,
        len: usize,
        offset: u64,
        size: u64,
    },
    /// The peer sent a chunk whose CRC32 does not match its bytes.
    #[error("a chunk from {peer} is corrupt (CRC32 mismatch at {offset} of file {file})")]
    Corrupt {
        peer: IpAddr,
        offset: u64,
        file: usize,
    },
}

impl StreamError {
    fn file(path: &Path) -> impl FnOnce(std::io::Error) -> StreamError + '_ {
        move |source| StreamError::File {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The largest piece of a file one message carries.
pub const STREAM_CHUNK_BYTES: usize = 4 << 20;
/// Sessions a node serves at once (both directions, all peers).
pub const STREAM_SESSIONS_MAX: usize = 64;
/// Files one session may announce.
pub const STREAM_FILES_MAX: usize = 16 << 10;
/// A served session without a request for this long is dropped with its
/// files (its peer died or gave up).
pub const STREAM_SESSION_IDLE: Duration = Duration::from_secs(180);
/// How long one streaming request may take (a chunk, a close).
pub const STREAM_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// How long the requests that do a range's bulk work may take: `StreamOut`
/// (the source writes the range's files) and `StreamCommit` (the receiver
/// ingests them).
pub const STREAM_PREPARE_TIMEOUT: Duration = Duration::from_secs(3600);
/// How long a node keeps asking a peer to open a session while the peer
/// answers Overloaded (it serves `STREAM_SESSIONS_MAX` sessions already).
pub const STREAM_OPEN_RETRY_FOR: Duration = Duration::from_secs(300);
/// The wait after a first Overloaded answer; each next one doubles, up to
/// `STREAM_OPEN_RETRY_WAIT_MAX`.
pub const STREAM_OPEN_RETRY_WAIT_FIRST: Duration = Duration::from_millis(100);
pub const STREAM_OPEN_RETRY_WAIT_MAX: Duration = Duration::from_secs(5);

/// The wait before asking again after the `attempt`-th (from 0) Overloaded
/// answer to a session's opening.
pub fn open_retry_wait(attempt: u32) -> Duration {
    STREAM_OPEN_RETRY_WAIT_FIRST
        .saturating_mul(1 << attempt.min(16))
        .min(STREAM_OPEN_RETRY_WAIT_MAX)
}

/// A file of a stream as announced: its size (files are known by their
/// place in the stream, never by a name a peer chose).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamFile {
    pub bytes: u64,
}

/// CRC32 (IEEE) of a chunk, checked by whoever receives it.
pub fn checksum(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// The chunk size this process uses: `STREAM_CHUNK_BYTES`, or in test
/// builds `ROCKSANDRA_TEST_STREAM_CHUNK_BYTES` (to move a small table in
/// many chunks).
pub fn chunk_bytes() -> usize {
    #[cfg(feature = "fault-injection")]
    if let Some(n) = std::env::var("ROCKSANDRA_TEST_STREAM_CHUNK_BYTES")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return n.clamp(1, STREAM_CHUNK_BYTES);
    }
    STREAM_CHUNK_BYTES
}

/// Writes `table`'s data in `ranges` to files under `work_dir` and
/// returns their paths (the caller removes `work_dir`).
pub fn export(
    engine: &dyn Engine,
    table: TableId,
    ranges: &[TokenRange],
    work_dir: &Path,
) -> Result<Vec<PathBuf>, StreamError> {
    let mut files = Vec::new();
    for (i, range) in ranges.iter().enumerate() {
        // One directory per range: a wrapping range is written in two
        // parts whose files may share names.
        let sub = work_dir.join(i.to_string());
        std::fs::create_dir_all(&sub)?;
        files.extend(engine.stream_out(table, *range, &sub)?);
    }
    Ok(files)
}

/// The sizes of `paths`, as a stream announces them.
pub fn describe(paths: &[PathBuf]) -> Result<Vec<StreamFile>, StreamError> {
    paths
        .iter()
        .map(|path| {
            let bytes = std::fs::metadata(path)
                .map_err(StreamError::file(path))?
                .len();
            Ok(StreamFile { bytes })
        })
        .collect()
}

/// Up to `max` bytes of `path` from `offset`.
fn read_chunk_at(path: &Path, offset: u64, size: u64, max: usize) -> Result<Vec<u8>, StreamError> {
    if offset >= size {
        return Err(StreamError::PastEnd { offset, size });
    }
    let len = (size - offset).min(max as u64) as usize;
    let mut file = File::open(path).map_err(StreamError::file(path))?;
    file.seek(SeekFrom::Start(offset))?;
    let mut bytes = vec![0; len];
    file.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// Spreads the bytes a node sends over time: at most `bytes_per_second`
/// on average, 0 unthrottled (`stream_throughput_outbound`).
pub struct Throttle {
    bytes_per_second: AtomicU64,
    /// When the bytes reserved so far will have gone at the rate.
    free_at: Mutex<Option<Instant>>,
}

impl Throttle {
    pub fn new(bytes_per_second: u64) -> Self {
        Throttle {
            bytes_per_second: bytes_per_second.into(),
            free_at: Mutex::new(None),
        }
    }

    pub fn rate(&self) -> u64 {
        self.bytes_per_second.load(Ordering::Relaxed)
    }

    pub fn set_rate(&self, bytes_per_second: u64) {
        self.bytes_per_second
            .store(bytes_per_second, Ordering::Relaxed);
    }

    /// Reserves `bytes` at `now`: how long to wait before sending them.
    pub fn reserve(&self, bytes: usize, now: Instant) -> Duration {
        let rate = self.rate();
        if rate == 0 {
            return Duration::ZERO;
        }
        let mut free_at = self.free_at.lock().unwrap_or_else(|p| p.into_inner());
        let start = free_at.map_or(now, |t| t.max(now));
        *free_at = Some(start + Duration::from_secs_f64(bytes as f64 / rate as f64));
        start - now
    }

    /// Waits as `reserve` says.
    pub fn wait(&self, bytes: usize) {
        let wait = self.reserve(bytes, Instant::now());
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
}

/// A file a peer is sending: where it goes and how much has come.
struct Incoming {
    path: PathBuf,
    size: u64,
    received: u64,
}

enum Direction {
    /// Being set up (a `StreamOut` writing its files): counted, never
    /// expired, not yet usable.
    Preparing,
    /// Files this node wrote for the peer to fetch: (path, size).
    Out(Vec<(PathBuf, u64)>),
    /// Files the peer sends, ingested into `table` at commit.
    In {
        table: TableId,
        files: Vec<Incoming>,
    },
}

struct Session {
    peer: IpAddr,
    dir: PathBuf,
    direction: Direction,
    last_used: Instant,
}

/// What a finished push leaves to ingest.
#[derive(Debug)]
pub struct Received {
    pub table: TableId,
    pub dir: PathBuf,
    pub files: Vec<PathBuf>,
    pub bytes: u64,
}

/// The streaming sessions a node serves for its peers.
pub struct StreamServer {
    chunk_bytes: usize,
    sessions: Mutex<HashMap<u64, Session>>,
    next_id: AtomicU64,
    /// Bytes of the chunks this node served and received for its peers'
    /// sessions.
    pub(crate) streamed: crate::metrics::StreamedBytes,
}

impl StreamServer {
    pub fn new(chunk_bytes: usize) -> Self {
        StreamServer {
            chunk_bytes: chunk_bytes.clamp(1, STREAM_CHUNK_BYTES),
            sessions: Mutex::new(HashMap::new()),
            next_id: 1.into(),
            streamed: Default::default(),
        }
    }

    /// The chunk size of this node's streams, sent or served.
    pub fn chunk_bytes(&self) -> usize {
        self.chunk_bytes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Session>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops sessions idle since before `now - STREAM_SESSION_IDLE`, and
    /// their files.
    pub fn expire(&self, now: Instant) {
        let expired: Vec<Session> = {
            let mut sessions = self.lock();
            let ids: Vec<u64> = sessions
                .iter()
                .filter(|(_, s)| !matches!(s.direction, Direction::Preparing))
                .filter(|(_, s)| now.saturating_duration_since(s.last_used) >= STREAM_SESSION_IDLE)
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| sessions.remove(id)).collect()
        };
        for session in expired {
            tracing::warn!(
                "dropped a streaming session of {} idle for {} s",
                session.peer,
                STREAM_SESSION_IDLE.as_secs()
            );
            let _ = std::fs::remove_dir_all(&session.dir);
        }
    }

    pub fn open_sessions(&self) -> usize {
        self.lock().len()
    }

    /// Takes a place for a new session of `peer` (being prepared), when
    /// there is room for one more: its id and directory under `base`.
    fn reserve(
        &self,
        peer: IpAddr,
        base: &Path,
        now: Instant,
    ) -> Result<(u64, PathBuf), RemoteError> {
        self.expire(now);
        let mut sessions = self.lock();
        if sessions.len() >= STREAM_SESSIONS_MAX {
            return Err(RemoteError::Overloaded(format!(
                "{STREAM_SESSIONS_MAX} streaming sessions open"
            )));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("session-{id}"));
        let session = Session {
            peer,
            dir: dir.clone(),
            direction: Direction::Preparing,
            last_used: now,
        };
        sessions.insert(id, session);
        Ok((id, dir))
    }

    /// A prepared session becomes usable.
    fn ready(&self, id: u64, direction: Direction, now: Instant) {
        if let Some(session) = self.lock().get_mut(&id) {
            session.direction = direction;
            session.last_used = now;
        }
    }

    /// Drops a session and its files.
    fn abandon(&self, id: u64) {
        let session = self.lock().remove(&id);
        if let Some(session) = session {
            let _ = std::fs::remove_dir_all(&session.dir);
        }
    }

    /// `StreamOut`: writes `table`'s data in `ranges` under `base` for
    /// `peer` to fetch.
    pub fn open_out(
        &self,
        engine: &dyn Engine,
        peer: IpAddr,
        (table, ranges): (TableId, &[TokenRange]),
        base: &Path,
        now: Instant,
    ) -> Result<(u64, Vec<StreamFile>), RemoteError> {
        let (id, dir) = self.reserve(peer, base, now)?;
        let written = export(engine, table, ranges, &dir).and_then(|paths| {
            let files = describe(&paths)?;
            Ok((paths, files))
        });
        let (paths, files) = match written {
            Ok(written) => written,
            Err(e) => {
                self.abandon(id);
                return Err(RemoteError::Failed(e.to_string()));
            }
        };
        let out = paths.into_iter().zip(files.iter().map(|f| f.bytes));
        self.ready(id, Direction::Out(out.collect()), Instant::now());
        Ok((id, files))
    }

    /// `StreamBegin`: `peer` will send `files` for `table`, kept under `base`.
    pub fn open_in(
        &self,
        peer: IpAddr,
        table: TableId,
        files: &[StreamFile],
        base: &Path,
        now: Instant,
    ) -> Result<u64, RemoteError> {
        if files.len() > STREAM_FILES_MAX {
            return Err(RemoteError::Invalid(format!(
                "a stream of {} files (at most {STREAM_FILES_MAX})",
                files.len()
            )));
        }
        let (id, dir) = self.reserve(peer, base, now)?;
        if let Err(e) = std::fs::create_dir_all(&dir) {
            self.abandon(id);
            return Err(RemoteError::Failed(e.to_string()));
        }
        let incoming = files
            .iter()
            .enumerate()
            .map(|(i, f)| Incoming {
                path: dir.join(format!("{i}.sst")),
                size: f.bytes,
                received: 0,
            })
            .collect();
        let direction = Direction::In {
            table,
            files: incoming,
        };
        self.ready(id, direction, now);
        Ok(id)
    }

    /// Answers a streaming request from `peer`, with session directories
    /// under `base`; gives back any other request.
    pub fn serve(
        &self,
        engine: &dyn Engine,
        throttle: &Throttle,
        peer: IpAddr,
        request: Request,
        base: &Path,
    ) -> Result<Response, Request> {
        let now = Instant::now();
        let answer = match request {
            Request::StreamOut { table, ranges } => self
                .open_out(engine, peer, (TableId(table), &ranges), base, now)
                .map(|(session, files)| Response::StreamOpened { session, files }),
            Request::StreamChunk {
                session,
                file,
                offset,
            } => self
                .read(peer, session, file, offset, now)
                .map(|(bytes, crc32)| {
                    throttle.wait(bytes.len());
                    self.streamed.record(true, bytes.len() as u64);
                    Response::Chunk { bytes, crc32 }
                }),
            Request::StreamClose { session } => self.close(peer, session).map(|()| Response::Ack),
            Request::StreamBegin { table, files } => self
                .open_in(peer, TableId(table), &files, base, now)
                .map(|session| Response::StreamOpened {
                    session,
                    files: Vec::new(),
                }),
            Request::StreamPut {
                session,
                file,
                offset,
                bytes,
                crc32,
            } => self
                .write(peer, session, (file, offset, &bytes, crc32), now)
                .map(|()| {
                    self.streamed.record(false, bytes.len() as u64);
                    Response::Ack
                }),
            Request::StreamCommit { session } => {
                self.finish_in(peer, session, now).and_then(|received| {
                    ingest(engine, received.table, &received.files, &received.dir)
                        .map(|()| Response::Ack)
                        .map_err(|e| RemoteError::Failed(e.to_string()))
                })
            }
            other => return Err(other),
        };
        Ok(answer.unwrap_or_else(Response::Error))
    }

    /// Runs `f` on `peer`'s session `id`, marking it used.
    fn with_session<T>(
        &self,
        peer: IpAddr,
        id: u64,
        now: Instant,
        f: impl FnOnce(&mut Session) -> Result<T, RemoteError>,
    ) -> Result<T, RemoteError> {
        let mut sessions = self.lock();
        match sessions.get_mut(&id) {
            Some(session) if session.peer == peer => {
                session.last_used = now;
                f(session)
            }
            _ => Err(RemoteError::Invalid(format!(
                "no streaming session {id} of {peer} (finished, or idle for over {} s)",
                STREAM_SESSION_IDLE.as_secs()
            ))),
        }
    }

    /// `StreamChunk`: the piece of file `file` at `offset`, with its CRC32.
    pub fn read(
        &self,
        peer: IpAddr,
        id: u64,
        file: u32,
        offset: u64,
        now: Instant,
    ) -> Result<(Vec<u8>, u32), RemoteError> {
        let (path, size) = self.with_session(peer, id, now, |s| match &s.direction {
            Direction::Out(files) => files
                .get(file as usize)
                .cloned()
                .ok_or_else(|| RemoteError::Invalid(format!("no file {file} in session {id}"))),
            Direction::In { .. } | Direction::Preparing => Err(RemoteError::Invalid(format!(
                "session {id} has no files to read"
            ))),
        })?;
        let bytes = read_chunk_at(&path, offset, size, self.chunk_bytes)
            .map_err(|e| RemoteError::Failed(e.to_string()))?;
        let crc = checksum(&bytes);
        Ok((bytes, crc))
    }

    /// `StreamPut`: appends a checked chunk to file `file`; chunks arrive
    /// in order.
    pub fn write(
        &self,
        peer: IpAddr,
        id: u64,
        put: (u32, u64, &[u8], u32),
        now: Instant,
    ) -> Result<(), RemoteError> {
        let (file, offset, bytes, crc) = put;
        if checksum(bytes) != crc {
            return Err(RemoteError::Failed(format!(
                "chunk at {offset} of file {file} of session {id} is corrupt (CRC32 mismatch)"
            )));
        }
        self.with_session(peer, id, now, |s| {
            let Direction::In { files, .. } = &mut s.direction else {
                return Err(RemoteError::Invalid(format!("session {id} takes no files")));
            };
            let incoming = files
                .get_mut(file as usize)
                .ok_or_else(|| RemoteError::Invalid(format!("no file {file} in session {id}")))?;
            append(incoming, offset, bytes).map_err(|e| RemoteError::Invalid(e.to_string()))
        })
    }

    /// `StreamCommit`: ends a push whose files all arrived whole.
    pub fn finish_in(&self, peer: IpAddr, id: u64, now: Instant) -> Result<Received, RemoteError> {
        self.with_session(peer, id, now, |s| match &s.direction {
            Direction::In { files, .. } => match files.iter().position(|f| f.received != f.size) {
                Some(i) => Err(RemoteError::Invalid(format!(
                    "file {i} of session {id} has {} of its {} bytes",
                    files[i].received, files[i].size
                ))),
                None => Ok(()),
            },
            Direction::Out(_) | Direction::Preparing => {
                Err(RemoteError::Invalid(format!("session {id} takes no files")))
            }
        })?;
        let session = self.lock().remove(&id);
        match session {
            Some(Session {
                dir,
                direction: Direction::In { table, files },
                ..
            }) => Ok(Received {
                table,
                dir,
                bytes: files.iter().map(|f| f.size).sum(),
                files: files.into_iter().map(|f| f.path).collect(),
            }),
            _ => Err(RemoteError::Invalid(format!(
                "session {id} ended meanwhile"
            ))),
        }
    }

    /// `StreamClose` (or a failed push): drops `peer`'s session and its files.
    pub fn close(&self, peer: IpAddr, id: u64) -> Result<(), RemoteError> {
        let owned = self.lock().get(&id).is_some_and(|s| s.peer == peer);
        if owned {
            self.abandon(id);
        }
        Ok(())
    }
}

/// Appends `bytes` at `offset` of an incoming file: the next piece, and
/// not past its announced size.
fn append(file: &mut Incoming, offset: u64, bytes: &[u8]) -> Result<(), StreamError> {
    if offset != file.received {
        return Err(StreamError::OutOfOrder {
            offset,
            expected: file.received,
        });
    }
    let end = offset + bytes.len() as u64;
    if end > file.size {
        return Err(StreamError::PastAnnounced {
            end,
            size: file.size,
        });
    }
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file.path)
        .map_err(StreamError::file(&file.path))?;
    out.write_all(bytes)?;
    file.received = end;
    Ok(())
}

/// Ingests the files of a finished stream into `table`; removes `dir`.
pub fn ingest(
    engine: &dyn Engine,
    table: TableId,
    files: &[PathBuf],
    dir: &Path,
) -> Result<(), StreamError> {
    let result = if files.is_empty() {
        Ok(())
    } else {
        engine.stream_in(table, files).map_err(StreamError::from)
    };
    let _ = std::fs::remove_dir_all(dir);
    result
}

fn unexpected(peer: IpAddr, response: Response) -> StreamError {
    match response {
        Response::Error(error) => StreamError::Refused { peer, error },
        other => StreamError::Unexpected {
            peer,
            answer: Box::new(other),
        },
    }
}

fn call(
    transport: &dyn Transport,
    peer: IpAddr,
    request: Request,
) -> Result<Response, StreamError> {
    let timeout = match request {
        Request::StreamOut { .. } | Request::StreamCommit { .. } => STREAM_PREPARE_TIMEOUT,
        _ => STREAM_REQUEST_TIMEOUT,
    };
    Ok(transport.call(peer, request, timeout)?)
}

/// `call` for a request that opens a session (`StreamOut`, `StreamBegin`):
/// while the peer answers Overloaded, asks again after `open_retry_wait`,
/// for at most `STREAM_OPEN_RETRY_FOR`; then its last answer stands.
fn open(
    transport: &dyn Transport,
    peer: IpAddr,
    request: Request,
) -> Result<Response, StreamError> {
    let mut waited = Duration::ZERO;
    let mut attempt = 0;
    loop {
        match call(transport, peer, request.clone())? {
            Response::Error(RemoteError::Overloaded(_)) if waited < STREAM_OPEN_RETRY_FOR => {
                let wait = open_retry_wait(attempt);
                std::thread::sleep(wait);
                waited += wait;
                attempt += 1;
            }
            answer => return Ok(answer),
        }
    }
}

/// Pulls `table`'s data in `ranges` from `source` into `dir`: opens the
/// session, fetches every chunk (`progress` sees each one's size), closes
/// it. Returns the files received, to ingest.
pub fn fetch(
    transport: &dyn Transport,
    source: IpAddr,
    (table, ranges): (TableId, &[TokenRange]),
    dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<PathBuf>, StreamError> {
    let request = Request::StreamOut {
        table: table.0,
        ranges: ranges.to_vec(),
    };
    let (session, files) = match open(transport, source, request)? {
        Response::StreamOpened { session, files } => (session, files),
        other => return Err(unexpected(source, other)),
    };
    progress(Progress::Files(files.len()));
    let result = std::fs::create_dir_all(dir)
        .map_err(StreamError::from)
        .and_then(|()| fetch_files(transport, source, session, &files, dir, progress));
    // The source drops its files now; a lost close expires.
    let _ = transport.call(
        source,
        Request::StreamClose { session },
        STREAM_REQUEST_TIMEOUT,
    );
    result
}

/// What a stream did so far, for `nodetool netstats`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The stream holds this many files.
    Files(usize),
    /// This many more bytes went.
    Bytes(u64),
    /// One more file went whole.
    FileDone,
}

fn fetch_files(
    transport: &dyn Transport,
    source: IpAddr,
    session: u64,
    files: &[StreamFile],
    dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<PathBuf>, StreamError> {
    let mut paths = Vec::with_capacity(files.len());
    for (i, file) in files.iter().enumerate() {
        let path = dir.join(format!("{i}.sst"));
        let mut out = File::create(&path).map_err(StreamError::file(&path))?;
        let mut offset = 0;
        while offset < file.bytes {
            let request = Request::StreamChunk {
                session,
                file: i as u32,
                offset,
            };
            let (bytes, crc) = match call(transport, source, request)? {
                Response::Chunk { bytes, crc32 } => (bytes, crc32),
                other => return Err(unexpected(source, other)),
            };
            if bytes.is_empty() || offset + bytes.len() as u64 > file.bytes {
                return Err(StreamError::BadChunk {
                    peer: source,
                    len: bytes.len(),
                    offset,
                    size: file.bytes,
                });
            }
            if checksum(&bytes) != crc {
                return Err(StreamError::Corrupt {
                    peer: source,
                    offset,
                    file: i,
                });
            }
            out.write_all(&bytes)?;
            offset += bytes.len() as u64;
            progress(Progress::Bytes(bytes.len() as u64));
        }
        out.sync_all()?;
        progress(Progress::FileDone);
        paths.push(path);
    }
    Ok(paths)
}

/// Pushes the files at `paths` to `target` for `table`, in chunks of
/// `chunk_bytes` paced by `throttle`, and has it ingest them. No files:
/// `target` is not asked anything (it may be down; it gains no data).
pub fn send(
    transport: &dyn Transport,
    target: IpAddr,
    table: TableId,
    paths: &[PathBuf],
    (chunk_bytes, throttle): (usize, &Throttle),
    progress: &mut dyn FnMut(Progress),
) -> Result<(), StreamError> {
    if paths.is_empty() {
        return Ok(());
    }
    let files = describe(paths)?;
    progress(Progress::Files(files.len()));
    let request = Request::StreamBegin {
        table: table.0,
        files: files.clone(),
    };
    let session = match open(transport, target, request)? {
        Response::StreamOpened { session, .. } => session,
        other => return Err(unexpected(target, other)),
    };
    let result = send_files(
        transport,
        target,
        session,
        paths,
        &files,
        (chunk_bytes, throttle),
        progress,
    )
    .and_then(
        |()| match call(transport, target, Request::StreamCommit { session })? {
            Response::Ack => Ok(()),
            other => Err(unexpected(target, other)),
        },
    );
    if result.is_err() {
        let _ = transport.call(
            target,
            Request::StreamClose { session },
            STREAM_REQUEST_TIMEOUT,
        );
    }
    result
}

fn send_files(
    transport: &dyn Transport,
    target: IpAddr,
    session: u64,
    paths: &[PathBuf],
    files: &[StreamFile],
    (chunk_bytes, throttle): (usize, &Throttle),
    progress: &mut dyn FnMut(Progress),
) -> Result<(), StreamError> {
    for (i, (path, file)) in paths.iter().zip(files).enumerate() {
        let mut offset = 0;
        while offset < file.bytes {
            let bytes = read_chunk_at(path, offset, file.bytes, chunk_bytes)?;
            throttle.wait(bytes.len());
            let len = bytes.len() as u64;
            let request = Request::StreamPut {
                session,
                file: i as u32,
                offset,
                crc32: checksum(&bytes),
                bytes,
            };
            match call(transport, target, request)? {
                Response::Ack => {}
                other => return Err(unexpected(target, other)),
            }
            offset += len;
            progress(Progress::Bytes(len));
        }
        progress(Progress::FileDone);
    }
    Ok(())
}

#[cfg(test)]
mod tests;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use rocksandra_data::{LocalTime, Token};
use rocksandra_storage::cell::{Cell, ColumnId};
use rocksandra_storage::memory::MemoryStore;
use rocksandra_storage::testkit::{full_read, pk, tempdir, test_table};
use rocksandra_storage::{KvEngine, Mutation, RowUpdate};

use super::*;
use crate::messaging::ReplySender;

const NOW: LocalTime = LocalTime(1_700_000_000);
const TABLE: TableId = TableId(1);
const ASKER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const SERVER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));

fn engine() -> Arc<dyn Engine> {
    let engine = KvEngine::new(MemoryStore::new(Arc::new(|| NOW)));
    engine.create_table(test_table(1)).expect("create table");
    Arc::new(engine)
}

/// An engine holding partitions k0..k{n}, each one row of `value_bytes`.
fn filled(n: usize, value_bytes: usize) -> Arc<dyn Engine> {
    let engine = engine();
    let writes: Vec<Mutation> = (0..n)
        .map(|p| {
            let mut m = Mutation::new(TABLE, pk(&format!("k{p}")));
            m.rows.push((
                vec![1i32.to_be_bytes().to_vec(), b"a".to_vec()],
                RowUpdate {
                    cells: vec![Cell::live(ColumnId(1), 5, vec![p as u8; value_bytes])],
                    ..Default::default()
                },
            ));
            m
        })
        .collect();
    engine.write(&writes, NOW).expect("write");
    engine
}

/// Two ranges, one wrapping past the ring's end (exported in two parts).
fn ranges() -> [TokenRange; 2] {
    [
        TokenRange {
            start_exclusive: Token(5_000_000_000_000_000_000),
            end_inclusive: Token(-5_000_000_000_000_000_000),
        },
        TokenRange {
            start_exclusive: Token(-1_000_000_000_000_000_000),
            end_inclusive: Token(1_000_000_000_000_000_000),
        },
    ]
}

/// How many of k0..k{n} `engine` holds, after checking it holds exactly
/// those of `ranges`.
fn check_holds_ranges(engine: &dyn Engine, n: usize, ranges: &[TokenRange]) -> usize {
    let mut held = 0;
    for p in 0..n {
        let key = pk(&format!("k{p}"));
        let inside = ranges.iter().any(|r| r.contains(key.token));
        let got = engine
            .read_partition(&full_read(TABLE, key.clone()), NOW)
            .expect("read");
        assert_eq!(!got.rows.is_empty(), inside, "k{p} (token {:?})", key.token);
        held += usize::from(inside);
    }
    held
}

/// A node that serves streams, reached without sockets; counts requests
/// and can flip a bit of every chunk it sends.
struct Loopback {
    server: StreamServer,
    engine: Arc<dyn Engine>,
    base: PathBuf,
    throttle: Throttle,
    chunks: AtomicUsize,
    corrupt: AtomicBool,
}

impl Loopback {
    fn new(engine: Arc<dyn Engine>, chunk_bytes: usize) -> Self {
        Loopback {
            server: StreamServer::new(chunk_bytes),
            engine,
            base: tempdir("stream-server"),
            throttle: Throttle::new(0),
            chunks: AtomicUsize::new(0),
            corrupt: AtomicBool::new(false),
        }
    }
}

impl Transport for Loopback {
    fn send(&self, peer: IpAddr, request: Request, reply: ReplySender) {
        if matches!(
            request,
            Request::StreamChunk { .. } | Request::StreamPut { .. }
        ) {
            self.chunks.fetch_add(1, Ordering::Relaxed);
        }
        let mut response = self
            .server
            .serve(&*self.engine, &self.throttle, ASKER, request, &self.base)
            .unwrap_or_else(|other| Response::Error(RemoteError::Invalid(format!("{other:?}"))));
        if let Response::Chunk { bytes, .. } = &mut response {
            if self.corrupt.load(Ordering::Relaxed) {
                bytes[0] ^= 1;
            }
        }
        let _ = reply.send((peer, Ok(response)));
    }
}

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

#[test]
fn a_pull_moves_every_partition_of_the_ranges_in_many_chunks() {
    let source = Loopback::new(filled(200, 300), 1000);
    let target = engine();
    let dir = tempdir("pull");
    let mut bytes = 0;
    let mut done = 0;
    let files = fetch(
        &source,
        SERVER,
        (TABLE, &ranges()),
        &dir,
        &mut |p| match p {
            Progress::Bytes(n) => bytes += n,
            Progress::FileDone => done += 1,
            Progress::Files(_) => {}
        },
    )
    .expect("fetch");
    assert_eq!(done, files.len());
    let sizes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).expect("file").len())
        .sum();
    assert_eq!(bytes, sizes);
    // Every chunk is at most 1000 bytes, so there were at least this many.
    assert!(source.chunks.load(Ordering::Relaxed) as u64 >= sizes / 1000);
    assert!(sizes > 10_000, "{sizes} bytes streamed");
    ingest(&*target, TABLE, &files, &dir).expect("ingest");
    let held = check_holds_ranges(&*target, 200, &ranges());
    assert!(held > 0 && held < 200);
    // The source dropped the session and its files; the target its own.
    assert_eq!(source.server.open_sessions(), 0);
    assert_eq!(entries(&source.base), 0);
    assert!(!dir.exists());
}

#[test]
fn a_push_moves_every_partition_of_the_ranges_in_many_chunks() {
    let source = filled(200, 300);
    let target = Loopback::new(engine(), STREAM_CHUNK_BYTES);
    let work = tempdir("push");
    let paths = export(&*source, TABLE, &ranges(), &work).expect("export");
    let mut files_announced = 0;
    send(
        &target,
        SERVER,
        TABLE,
        &paths,
        (700, &Throttle::new(0)),
        &mut |p| {
            if let Progress::Files(n) = p {
                files_announced += n;
            }
        },
    )
    .expect("send");
    assert_eq!(files_announced, paths.len());
    let sizes: u64 = paths
        .iter()
        .map(|f| std::fs::metadata(f).expect("file").len())
        .sum();
    assert!(target.chunks.load(Ordering::Relaxed) as u64 >= sizes / 700);
    check_holds_ranges(&*target.engine, 200, &ranges());
    assert_eq!(target.server.open_sessions(), 0);
    assert_eq!(
        entries(&target.base),
        0,
        "the received files were ingested and removed"
    );
}

#[test]
fn a_corrupt_chunk_fails_the_pull_and_the_source_drops_its_files() {
    let source = Loopback::new(filled(50, 300), 1000);
    source.corrupt.store(true, Ordering::Relaxed);
    let dir = tempdir("corrupt");
    let error = fetch(&source, SERVER, (TABLE, &ranges()), &dir, &mut |_| {}).expect_err("corrupt");
    assert!(error.to_string().contains("CRC32 mismatch"), "{error}");
    assert_eq!(source.server.open_sessions(), 0);
    assert_eq!(entries(&source.base), 0);
}

fn announced(bytes: u64) -> Vec<StreamFile> {
    vec![StreamFile { bytes }]
}

#[test]
fn pushed_chunks_are_checked_before_they_are_written() {
    let server = StreamServer::new(STREAM_CHUNK_BYTES);
    let base = tempdir("put-checks");
    let now = Instant::now();
    let id = server
        .open_in(ASKER, TABLE, &announced(10), &base, now)
        .expect("open");
    let put =
        |offset: u64, bytes: &[u8], crc: u32| server.write(ASKER, id, (0, offset, bytes, crc), now);
    let error = |r: Result<(), RemoteError>| r.expect_err("refused").to_string();
    assert!(error(put(0, b"abcd", checksum(b"abcX"))).contains("CRC32 mismatch"));
    assert!(error(put(2, b"abcd", checksum(b"abcd"))).contains("at 2 where 0 was expected"));
    put(0, b"abcd", checksum(b"abcd")).expect("first chunk");
    assert!(error(put(4, b"0123456", checksum(b"0123456")))
        .contains("past the file's announced 10 bytes"));
    // Another peer cannot write into (or read, or close) this session.
    let other = server.write(SERVER, id, (0, 4, b"ef", checksum(b"ef")), now);
    assert!(error(other).contains("no streaming session"));
    server.close(SERVER, id).expect("close is idempotent");
    assert_eq!(server.open_sessions(), 1);
    // A commit before every byte came is refused; after, it hands the file over.
    let early = server.finish_in(ASKER, id, now).expect_err("incomplete");
    assert!(
        early.to_string().contains("has 4 of its 10 bytes"),
        "{early}"
    );
    put(4, b"efghij", checksum(b"efghij")).expect("last chunk");
    let received = server.finish_in(ASKER, id, now).expect("complete");
    assert_eq!(received.bytes, 10);
    assert_eq!(
        std::fs::read(&received.files[0]).expect("file"),
        b"abcdefghij"
    );
    assert_eq!(server.open_sessions(), 0);
}

#[test]
fn sessions_are_bounded_and_idle_ones_go_with_their_files() {
    let server = StreamServer::new(STREAM_CHUNK_BYTES);
    let base = tempdir("bounded");
    let start = Instant::now();
    for _ in 0..STREAM_SESSIONS_MAX {
        server
            .open_in(ASKER, TABLE, &announced(1), &base, start)
            .expect("open");
    }
    let full = server.open_in(ASKER, TABLE, &announced(1), &base, start);
    assert!(matches!(full, Err(RemoteError::Overloaded(_))), "{full:?}");
    assert_eq!(entries(&base), STREAM_SESSIONS_MAX);
    let too_many = vec![announced(1)[0].clone(); STREAM_FILES_MAX + 1];
    assert!(matches!(
        server.open_in(ASKER, TABLE, &too_many, &base, start),
        Err(RemoteError::Invalid(_))
    ));
    // Idle long enough, every session goes, files and all, and there is room.
    let later = start + STREAM_SESSION_IDLE;
    server
        .open_in(ASKER, TABLE, &announced(1), &base, later)
        .expect("room again");
    assert_eq!(server.open_sessions(), 1);
    assert_eq!(entries(&base), 1);
}

#[test]
fn the_throttle_spaces_what_goes_at_its_rate() {
    let start = Instant::now();
    let unthrottled = Throttle::new(0);
    assert_eq!(unthrottled.reserve(1 << 30, start), Duration::ZERO);
    let throttle = Throttle::new(1_000_000);
    assert_eq!(throttle.reserve(500_000, start), Duration::ZERO);
    assert_eq!(throttle.reserve(500_000, start), Duration::from_millis(500));
    assert_eq!(throttle.reserve(1, start), Duration::from_secs(1));
    // After a pause, nothing is owed: credit does not pile up either.
    let later = start + Duration::from_secs(10);
    assert_eq!(throttle.reserve(1_000_000, later), Duration::ZERO);
    assert_eq!(throttle.reserve(1, later), Duration::from_secs(1));
    throttle.set_rate(0);
    assert_eq!(throttle.reserve(1, later), Duration::ZERO);
}

/// A peer that must not be asked anything.
struct Unasked;

impl Transport for Unasked {
    fn send(&self, peer: IpAddr, request: Request, _: ReplySender) {
        panic!("{peer} was asked {request:?}");
    }
}

#[test]
fn a_push_of_nothing_asks_the_target_nothing() {
    // A range without data on its way to a node that is down.
    send(
        &Unasked,
        SERVER,
        TABLE,
        &[],
        (700, &Throttle::new(0)),
        &mut |_| {},
    )
    .expect("nothing to send");
}

/// A source that serves as many sessions as it may for its first `busy`
/// requests to open one.
struct Busy {
    inner: Loopback,
    busy: AtomicUsize,
}

impl Transport for Busy {
    fn send(&self, peer: IpAddr, request: Request, reply: ReplySender) {
        let opening = matches!(
            request,
            Request::StreamOut { .. } | Request::StreamBegin { .. }
        );
        let still_busy = || {
            self.busy
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        };
        if opening && still_busy() {
            let overloaded = RemoteError::Overloaded("64 streaming sessions already".into());
            let _ = reply.send((peer, Ok(Response::Error(overloaded))));
        } else {
            self.inner.send(peer, request, reply);
        }
    }
}

#[test]
fn a_source_that_answers_overloaded_is_asked_again_until_it_has_room() {
    let source = Busy {
        inner: Loopback::new(filled(50, 300), 1000),
        busy: AtomicUsize::new(2),
    };
    let dir = tempdir("busy-pull");
    let files = fetch(&source, SERVER, (TABLE, &ranges()), &dir, &mut |_| {}).expect("pull");
    assert!(!files.is_empty());
    assert_eq!(
        source.busy.load(Ordering::SeqCst),
        0,
        "both busy answers were met"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_wait_after_overloaded_doubles_up_to_its_bound() {
    assert_eq!(open_retry_wait(0), STREAM_OPEN_RETRY_WAIT_FIRST);
    assert_eq!(open_retry_wait(1), STREAM_OPEN_RETRY_WAIT_FIRST * 2);
    assert_eq!(open_retry_wait(5), STREAM_OPEN_RETRY_WAIT_FIRST * 32);
    assert_eq!(open_retry_wait(6), STREAM_OPEN_RETRY_WAIT_MAX);
    assert_eq!(open_retry_wait(u32::MAX), STREAM_OPEN_RETRY_WAIT_MAX);
    let total: Duration = (0..70).map(open_retry_wait).sum();
    assert!(
        total >= STREAM_OPEN_RETRY_FOR,
        "70 waits cover the retry window"
    );
}

//! Writes held back to the end of a connection's turn, then written to the
//! store together.
//!
//! A serving thread that runs a connection's short requests one after the
//! other (each answered only when the turn's responses are sent) runs each
//! inside `WriteGroup::run`. While one runs, `KvEngine::write` queues the
//! request's entries in the group instead of writing them, and
//! `Engine::commit_group`, called before the responses leave, writes the
//! whole group to the store in one write: one WAL record and one pass
//! through the store's write queue per turn instead of one per request,
//! where two serving threads otherwise take turns leading and waiting in
//! RocksDB's write queue (about a sixth of a write's CPU).
//!
//! What keeps this exact:
//! - A queued write is not acknowledged: its response leaves only after
//!   `commit_group` wrote it. A reader elsewhere that misses it reads as if
//!   the write had not arrived yet, which it may.
//! - A plain read does not see the group's entries: they belong to
//!   requests not yet answered, which the client sent without waiting, as
//!   a read on another thread (or in Cassandra) would not. The group may be
//!   written on another thread meanwhile (the transport's committer), so
//!   that a slow write never holds up the reads of its serving thread.
//! - Read-before-write work (counters, conditional updates, views, list
//!   indexes) writes directly: it holds `DirectWrites` while it reads and
//!   writes, so the next reader under its lock sees its write; its reads
//!   write the group first (`KvEngine::settle_deferred`), so it sees every
//!   write queued before it on its connection's turn.
//! - Each request's entries stay together. When the group's write fails
//!   for a reason other than IO, each request's entries are written alone,
//!   so each request gets its own outcome (`take_failures`).
//! - The group is bounded: past `WRITE_GROUP_BYTES_MAX` of queued entries
//!   it is written at once.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::api::{StorageError, TableId};
use crate::kv::KvOp;

/// Queued bytes (keys and values) past which a group is written at once.
pub const WRITE_GROUP_BYTES_MAX: usize = 4 << 20;

/// The requests' writes a connection's turn holds back, with the outcome of
/// those already written. Owned by the connection; lent to the engine
/// while a request runs (`run`).
#[derive(Debug, Default)]
pub struct WriteGroup {
    /// The engine the queued entries belong to (`engine_id`); 0 when none
    /// is queued.
    engine: u64,
    ops: Vec<(TableId, KvOp)>,
    /// Each request's part of `ops`: (request, end index), in order.
    parts: Vec<(i64, usize)>,
    bytes: usize,
    /// The request that runs now (`run`).
    current: i64,
    /// How many times entries were queued, ever: a request queued writes
    /// when this grew while it ran.
    queued_count: u64,
    failures: Vec<(i64, StorageError)>,
}

thread_local! {
    /// The group of the request running on this thread, if any.
    static LENT: RefCell<Option<WriteGroup>> = const { RefCell::new(None) };
    /// How many `DirectWrites` this thread holds.
    static DIRECT: Cell<usize> = const { Cell::new(0) };
}

/// Ids of engines, so a group never mixes two engines' entries.
static NEXT_ENGINE: AtomicU64 = AtomicU64::new(1);

pub(crate) fn engine_id() -> u64 {
    NEXT_ENGINE.fetch_add(1, Ordering::Relaxed)
}

impl WriteGroup {
    pub fn new() -> WriteGroup {
        WriteGroup::default()
    }

    /// Runs `work`, a request identified by `request` (the connection's
    /// stream id, say), with its engine writes queued in this group.
    /// Inside another group's `run`, `work` joins that group.
    pub fn run<R>(&mut self, request: i64, work: impl FnOnce() -> R) -> R {
        if LENT.with(|l| l.borrow().is_some()) {
            return work();
        }
        self.current = request;
        let lent = Lent { group: self };
        LENT.with(|l| *l.borrow_mut() = Some(std::mem::take(lent.group)));
        work()
    }

    /// Whether entries wait to be written.
    pub fn is_pending(&self) -> bool {
        !self.ops.is_empty()
    }

    /// Whether writes wait, or failed writes wait to be reported: what a
    /// commit must be asked for before the requests are answered.
    pub fn needs_commit(&self) -> bool {
        !self.ops.is_empty() || !self.failures.is_empty()
    }

    /// Bytes (keys and values) of the entries waiting.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// How many times entries were queued since the group was made
    /// (whether written since or not).
    pub fn queued_count(&self) -> u64 {
        self.queued_count
    }

    /// The requests whose writes failed, with why, since the last call.
    pub fn take_failures(&mut self) -> Vec<(i64, StorageError)> {
        std::mem::take(&mut self.failures)
    }

    fn queue(&mut self, engine: u64, ops: Vec<(TableId, KvOp)>) {
        self.engine = engine;
        self.queued_count += 1;
        self.bytes += ops.iter().map(|(_, op)| op_bytes(op)).sum::<usize>();
        self.ops.extend(ops);
        match self.parts.last_mut() {
            Some((request, end)) if *request == self.current => *end = self.ops.len(),
            _ => self.parts.push((self.current, self.ops.len())),
        }
    }

    /// The queued entries of `engine`, taken out to be written: all of
    /// them together, and each request's part.
    pub(crate) fn take(&mut self, engine: u64) -> Option<Taken> {
        if self.engine != engine || self.ops.is_empty() {
            return None;
        }
        self.engine = 0;
        self.bytes = 0;
        Some(Taken {
            ops: std::mem::take(&mut self.ops),
            parts: std::mem::take(&mut self.parts),
        })
    }

    pub(crate) fn failed(&mut self, request: i64, error: StorageError) {
        if !self.failures.iter().any(|(r, _)| *r == request) {
            self.failures.push((request, error));
        }
    }
}

/// The entries of several groups, taken out to be written together, and
/// where each group's came from.
pub(crate) struct TakenAll {
    pub ops: Vec<(TableId, KvOp)>,
    /// Each group's entry count and parts, in order.
    origins: Vec<(usize, Vec<(i64, usize)>)>,
}

/// Takes the entries of `groups` out, all of them, if each group holds
/// entries of `engine` only (an empty group counts) and one at least holds
/// some; None, leaving them as they are, otherwise.
pub(crate) fn take_all(engine: u64, groups: &mut [WriteGroup]) -> Option<TakenAll> {
    let foreign = |g: &WriteGroup| g.is_pending() && g.engine != engine;
    if groups.iter().any(foreign) || !groups.iter().any(WriteGroup::is_pending) {
        return None;
    }
    let total = groups.iter().map(|g| g.ops.len()).sum();
    let mut taken = TakenAll {
        ops: Vec::with_capacity(total),
        origins: Vec::with_capacity(groups.len()),
    };
    for group in groups.iter_mut() {
        let (ops, parts) = match group.take(engine) {
            Some(Taken { ops, parts }) => (ops, parts),
            None => (Vec::new(), Vec::new()),
        };
        taken.origins.push((ops.len(), parts));
        taken.ops.extend(ops);
    }
    Some(taken)
}

impl TakenAll {
    /// Puts each group's entries back where they came from (the write
    /// together failed).
    pub(crate) fn put_back(self, engine: u64, groups: &mut [WriteGroup]) {
        let mut ops = self.ops.into_iter();
        for (group, (count, parts)) in groups.iter_mut().zip(self.origins) {
            if count == 0 {
                continue;
            }
            group.engine = engine;
            group.ops = ops.by_ref().take(count).collect();
            group.bytes = group.ops.iter().map(|(_, op)| op_bytes(op)).sum();
            group.parts = parts;
        }
    }
}

/// Entries taken out of a group to be written.
pub(crate) struct Taken {
    pub ops: Vec<(TableId, KvOp)>,
    pub parts: Vec<(i64, usize)>,
}

impl Taken {
    /// Each request's entries, in order.
    pub fn per_request(self) -> Vec<(i64, Vec<(TableId, KvOp)>)> {
        let mut ops = self.ops.into_iter();
        let mut start = 0;
        self.parts
            .into_iter()
            .map(|(request, end)| {
                let part = ops.by_ref().take(end - start).collect();
                start = end;
                (request, part)
            })
            .collect()
    }
}

/// Puts a lent group back where it came from, even if the work panicked.
struct Lent<'a> {
    group: &'a mut WriteGroup,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(group) = LENT.with(|l| l.borrow_mut().take()) {
            *self.group = group;
        }
    }
}

/// What `defer` did with a write's entries.
pub(crate) enum Deferred {
    /// Queued in the running request's group.
    Queued { full: bool },
    /// No group takes them: write them now.
    WriteNow(Vec<(TableId, KvOp)>),
}

/// Queues `ops` of `engine` in the group of the request running on this
/// thread, if there is one, it holds no other engine's entries and no
/// `DirectWrites` is held.
pub(crate) fn defer(engine: u64, ops: Vec<(TableId, KvOp)>) -> Deferred {
    if DIRECT.with(|d| d.get()) > 0 {
        return Deferred::WriteNow(ops);
    }
    LENT.with(|l| match l.borrow_mut().as_mut() {
        Some(group) if group.engine == 0 || group.engine == engine => {
            group.queue(engine, ops);
            Deferred::Queued {
                full: group.bytes > WRITE_GROUP_BYTES_MAX,
            }
        }
        _ => Deferred::WriteNow(ops),
    })
}

/// Runs `write` on the entries of `engine` queued in this thread's lent
/// group, if any; `write` records the outcome in the group.
pub(crate) fn with_lent(engine: u64, write: impl FnOnce(&mut WriteGroup)) {
    LENT.with(|l| {
        if let Some(group) = l.borrow_mut().as_mut() {
            if group.engine == engine && group.is_pending() {
                write(group);
            }
        }
    })
}

/// Whether this thread holds `DirectWrites` (runs read-before-write work).
pub(crate) fn direct_held() -> bool {
    DIRECT.with(|d| d.get() > 0)
}

/// While held, this thread's engine writes are written at once, never
/// queued: for read-before-write work, whose write the next reader under
/// the same lock must see.
pub struct DirectWrites {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl DirectWrites {
    pub fn hold() -> DirectWrites {
        DIRECT.with(|d| d.set(d.get() + 1));
        DirectWrites {
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Drop for DirectWrites {
    fn drop(&mut self) {
        DIRECT.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

fn op_bytes(op: &KvOp) -> usize {
    match op {
        KvOp::Merge { key, value } => key.len() + value.len(),
        KvOp::DeleteRange { start, end } => start.len() + end.as_ref().map_or(0, Vec::len),
    }
}

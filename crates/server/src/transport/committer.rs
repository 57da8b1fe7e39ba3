//! The committer: one thread that writes the short writes of connections'
//! turns (`WriteGroup`s) to storage, so that no serving thread ever waits
//! for a write.
//!
//! A write can block for as long as the disk does: a WAL append meets a
//! filesystem journal commit held up by a slow flush of the device, or
//! RocksDB stalls its writers while a memtable switch or compaction catches
//! up. On a serving thread that wait held up every read of every connection
//! of the core (a 700 ms device stall made a read P99 of 490 ms in the
//! benchmark's mixed phase); Cassandra's reads never wait behind its writes,
//! which run on the mutation stage. Here a serving thread hands its turn's
//! group to the committer and goes on serving; the writes' responses leave
//! once the committer has written them (`Commit`), the reads' at once.
//!
//! One thread, in order: groups are written in the order they were handed
//! over, and never two at a time (RocksDB's write queue would make two
//! writers take turns leading and waiting). Groups that queued up while
//! one was written go to the store together, in one write (up to
//! `WRITE_GROUP_BYTES_MAX`); when that write fails, each group is written
//! alone, so each request gets its own outcome. The queue is bounded in
//! bytes (`COMMIT_QUEUE_BYTES_MAX`): a connection that would go over it
//! waits (asynchronously) before it hands over its group.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rocksandra_storage::{WriteGroup, WRITE_GROUP_BYTES_MAX};
use rocksandra_wire::ErrorResponse;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};
use tracing::error;

use crate::handler::RequestHandler;

/// Bytes of groups handed to the committer and not yet written, their
/// entries and `JOB_BYTES` each.
pub const COMMIT_QUEUE_BYTES_MAX: usize = 64 << 20;

/// What a queued group counts beyond its entries: the job, its channel
/// and the responses waiting for it, roughly.
const JOB_BYTES: usize = 1024;

/// The streams whose writes failed, with the error to answer instead.
pub(super) type Failures = Vec<(i16, ErrorResponse)>;

struct Job {
    group: WriteGroup,
    done: oneshot::Sender<Failures>,
    _room: OwnedSemaphorePermit,
}

pub(super) struct Committer {
    queue: Mutex<Option<mpsc::Sender<Job>>>,
    room: Arc<Semaphore>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// A group handed to the committer: resolves to its failures once written.
pub(super) type Commit = oneshot::Receiver<Failures>;

impl Committer {
    /// Starts the committer's thread; it writes through `handler`
    /// (`RequestHandler::commit_inline`).
    pub(super) fn start(handler: Arc<dyn RequestHandler>) -> std::io::Result<Committer> {
        let (queue, jobs) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("cql-committer".into())
            .spawn(move || {
                while let Ok(first) = jobs.recv() {
                    let batch = gather(first, &jobs);
                    commit(&*handler, batch);
                }
            })?;
        Ok(Committer {
            queue: Mutex::new(Some(queue)),
            room: Arc::new(Semaphore::new(COMMIT_QUEUE_BYTES_MAX)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Hands `group` over, once the queue has room for it. When the
    /// committer has stopped, gives the group back: the caller writes it.
    pub(super) async fn submit(&self, group: WriteGroup) -> Result<Commit, WriteGroup> {
        let bytes = group.bytes().min(WRITE_GROUP_BYTES_MAX * 2) + JOB_BYTES;
        let Ok(room) = self.room.clone().acquire_many_owned(bytes as u32).await else {
            return Err(group);
        };
        let (done, commit) = oneshot::channel();
        let job = Job {
            group,
            done,
            _room: room,
        };
        let queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        match queue.as_ref() {
            Some(queue) => match queue.send(job) {
                Ok(()) => Ok(commit),
                Err(mpsc::SendError(job)) => Err(job.group),
            },
            None => Err(job.group),
        }
    }

    /// Stops taking groups and waits until those handed over are written.
    pub(super) fn stop(&self) {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.room.close();
        let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(thread) = thread {
            if thread.join().is_err() {
                error!("the CQL committer thread panicked");
            }
        }
    }
}

/// `first` and the groups queued behind it, up to `WRITE_GROUP_BYTES_MAX`
/// of entries: what one store write may take.
fn gather(first: Job, jobs: &mpsc::Receiver<Job>) -> Vec<Job> {
    let mut bytes = first.group.bytes();
    let mut batch = vec![first];
    while bytes < WRITE_GROUP_BYTES_MAX {
        let Ok(job) = jobs.try_recv() else {
            break;
        };
        bytes += job.group.bytes();
        batch.push(job);
    }
    batch
}

/// Writes a batch of groups, together when it can (one store write
/// instead of one per group), then answers each group's requests.
fn commit(handler: &dyn RequestHandler, mut batch: Vec<Job>) {
    if batch.len() > 1 {
        let mut groups: Vec<WriteGroup> = batch
            .iter_mut()
            .map(|job| std::mem::take(&mut job.group))
            .collect();
        let together = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            handler.commit_inline_together(&mut groups)
        }));
        if together.is_err() {
            error!("writing groups of requests together panicked");
        }
        for (job, group) in batch.iter_mut().zip(groups) {
            job.group = group;
        }
    }
    for job in batch {
        commit_one(handler, job);
    }
}

/// Writes what is left of a job's group (nothing when it was written
/// together with others) and answers its requests.
fn commit_one(handler: &dyn RequestHandler, mut job: Job) {
    let group = &mut job.group;
    let wrote = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        handler.commit_inline(group)
    }));
    match wrote {
        // A group the handler left unwritten is never acknowledged.
        Ok(_) if job.group.is_pending() => error!("a group of writes was left unwritten"),
        Ok(failures) => {
            let _ = job.done.send(failures);
        }
        // Dropping `done` answers the group's requests with a server error.
        Err(_) => error!("writing a group of requests panicked"),
    }
}

impl Drop for Committer {
    fn drop(&mut self) {
        self.stop();
    }
}

//! Connections that have not finished STARTUP (and their login), oldest
//! first. When every connection slot is taken, a new connection closes the
//! oldest of them instead of being refused: connections that never log in
//! (idle sockets, a stalled handshake) cannot lock a real client out, and
//! no longer wait for `login_timeout` to free their slots.
//!
//! The list holds at most one entry per connection slot, so it is bounded by
//! `native_transport_max_concurrent_connections`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

/// The connections not ready yet, in the order they were accepted.
#[derive(Debug, Default)]
pub(crate) struct Unready {
    inner: Mutex<Queue>,
    /// Woken whenever a connection leaves the list (ready or closed).
    left: Notify,
}

#[derive(Debug, Default)]
struct Queue {
    next_id: u64,
    waiting: VecDeque<(u64, Arc<Notify>)>,
}

impl Unready {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        // The queue stays consistent whatever panicked while it was held.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a new connection; it leaves the list when the guard is dropped.
    pub(crate) fn enter(self: &Arc<Self>) -> UnreadyGuard {
        let notify = Arc::new(Notify::new());
        let mut queue = self.queue();
        let id = queue.next_id;
        queue.next_id += 1;
        queue.waiting.push_back((id, notify.clone()));
        UnreadyGuard {
            id,
            notify,
            owner: self.clone(),
        }
    }

    /// Tells the oldest connection not ready yet to close; false when there
    /// is none.
    pub(crate) fn evict_oldest(&self) -> bool {
        let Some((_, notify)) = self.queue().waiting.pop_front() else {
            return false;
        };
        // Stored if the connection is not waiting yet: it closes when it does.
        notify.notify_one();
        true
    }

    /// Evicts the oldest connection not ready yet and waits, at most
    /// `wait`, until it (or another) leaves the list; false when there is
    /// none to evict.
    pub(crate) async fn evict_and_wait(&self, wait: Duration) -> bool {
        let left = self.left.notified();
        tokio::pin!(left);
        left.as_mut().enable();
        if !self.evict_oldest() {
            return false;
        }
        let _ = tokio::time::timeout(wait, left).await;
        true
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.queue().waiting.len()
    }
}

/// A connection's place in `Unready`, until it is ready or closed.
#[derive(Debug)]
pub(crate) struct UnreadyGuard {
    id: u64,
    notify: Arc<Notify>,
    owner: Arc<Unready>,
}

impl UnreadyGuard {
    /// Completes when a newer connection needs this one's slot.
    pub(crate) async fn evicted(&self) {
        self.notify.notified().await;
    }
}

impl Drop for UnreadyGuard {
    fn drop(&mut self) {
        let mut queue = self.owner.queue();
        if let Some(at) = queue.waiting.iter().position(|(id, _)| *id == self.id) {
            queue.waiting.remove(at);
        }
        drop(queue);
        self.owner.left.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_oldest_unready_connection_is_evicted_first() {
        let unready = Arc::new(Unready::default());
        let first = unready.enter();
        let second = unready.enter();
        assert!(unready.evict_oldest());
        let quick = Duration::from_millis(50);
        assert!(tokio::time::timeout(quick, first.evicted()).await.is_ok());
        assert!(tokio::time::timeout(quick, second.evicted()).await.is_err());
        assert_eq!(unready.len(), 1);
    }

    #[tokio::test]
    async fn eviction_waits_until_the_evicted_connection_leaves() {
        let unready = Arc::new(Unready::default());
        let guard = unready.enter();
        let closing = tokio::spawn(async move {
            guard.evicted().await;
            drop(guard);
        });
        let wait = Duration::from_secs(5);
        let started = std::time::Instant::now();
        assert!(unready.evict_and_wait(wait).await);
        assert!(started.elapsed() < wait);
        closing.await.unwrap();
        assert!(!unready.evict_and_wait(wait).await);
    }

    #[test]
    fn a_ready_connection_leaves_the_list() {
        let unready = Arc::new(Unready::default());
        let guard = unready.enter();
        drop(guard);
        assert_eq!(unready.len(), 0);
        assert!(!unready.evict_oldest());
    }
}

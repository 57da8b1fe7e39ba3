//! The answers to one request sent to several nodes, awaited until one
//! deadline: the wait every coordinator round (writes, reads, read repair,
//! scans, Paxos phases, the batchlog, truncation, schema pulls) shares.
//! A round reads its answers as an iterator that ends when the deadline
//! passes or when no node can answer any more; what the round decides
//! from them stays with the round.

use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use crate::messaging::Reply;

pub struct Replies {
    receiver: Receiver<Reply>,
    deadline: Instant,
}

impl Replies {
    /// Answers on `receiver`, awaited for `timeout` from now.
    pub fn within(receiver: Receiver<Reply>, timeout: Duration) -> Replies {
        Replies::until(receiver, Instant::now() + timeout)
    }

    /// Answers on `receiver`, awaited until `deadline`.
    pub fn until(receiver: Receiver<Reply>, deadline: Instant) -> Replies {
        Replies { receiver, deadline }
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the deadline has passed.
    pub fn expired(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// The next answer, waiting at most until the deadline; None once it
    /// has passed or every sender is gone.
    pub fn next(&self) -> Option<Reply> {
        self.next_by(self.deadline)
    }

    /// The next answer, waiting at most until `by` (never past the
    /// deadline): a round that acts at an earlier time (a speculative
    /// retry) waits in steps.
    pub fn next_by(&self, by: Instant) -> Option<Reply> {
        let left = by
            .min(self.deadline)
            .saturating_duration_since(Instant::now());
        self.receiver.recv_timeout(left).ok()
    }

    /// An answer that has already arrived, without waiting.
    pub fn ready(&self) -> Option<Reply> {
        self.receiver.try_recv().ok()
    }

    /// The answers as they arrive, until the deadline.
    pub fn wait(&self) -> impl Iterator<Item = Reply> + '_ {
        std::iter::from_fn(|| self.next())
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;
    use crate::message::Response;

    fn ip(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
    }

    #[test]
    fn the_answers_end_at_the_deadline_while_a_sender_is_alive() {
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send((ip(1), Ok(Response::Ack))).unwrap();
        let replies = Replies::within(rx, Duration::from_millis(50));
        let started = Instant::now();
        let answered: Vec<IpAddr> = replies.wait().map(|(e, _)| e).collect();
        assert_eq!(answered, vec![ip(1)]);
        assert!(started.elapsed() >= Duration::from_millis(40));
        assert!(replies.expired());
        drop(tx);
    }

    #[test]
    fn the_answers_end_at_once_when_no_sender_is_left() {
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send((ip(1), Ok(Response::Ack))).unwrap();
        tx.send((ip(2), Ok(Response::Ack))).unwrap();
        drop(tx);
        let replies = Replies::within(rx, Duration::from_secs(60));
        let started = Instant::now();
        assert_eq!(replies.wait().count(), 2);
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(!replies.expired());
    }

    #[test]
    fn an_earlier_wait_never_goes_past_the_deadline() {
        let (_tx, rx) = std::sync::mpsc::channel();
        let replies = Replies::within(rx, Duration::from_millis(20));
        let started = Instant::now();
        assert!(replies.next_by(started + Duration::from_secs(60)).is_none());
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(replies.ready().is_none());
    }
}

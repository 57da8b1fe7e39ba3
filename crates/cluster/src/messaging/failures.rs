//! Failed connections between nodes, reported as Cassandra's logs report
//! them (an ERROR naming the peer and the cause; a refused TCP connect, a
//! peer that is down, at INFO), at most once per peer, direction and cause
//! every `REPORT_INTERVAL`: a node that retries every second does not
//! flood the log, and the report after a quiet spell says how many
//! failures it left out. The cause is part of the key because an inbound
//! peer is known by its source address only, which nodes on one host
//! share (127.0.0.1 for every loopback address): two nodes refused for
//! different reasons are both reported. The last cause per peer stays for
//! the join error ("Unable to contact any seeds").
//!
//! The decisions take the time as an argument, so they are tested
//! without a clock or a socket.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// At most one report per peer, direction and cause in this time.
pub const REPORT_INTERVAL: Duration = Duration::from_secs(30);
/// Peers remembered at once; past it, the entries of peers quiet for a
/// report interval are forgotten, then any (a forgotten peer's next
/// failure is reported at once).
pub const PEERS_TRACKED_MAX: usize = 1024;

/// Which end of the connection this node was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// This node connected to the peer.
    Outbound,
    /// The peer connected to this node.
    Inbound,
}

/// A report that is due: log it now.
#[derive(Debug, PartialEq, Eq)]
pub struct Report {
    /// Failures of this peer and direction not reported since the last
    /// report.
    pub unreported: u64,
}

impl Report {
    /// The suffix of a log line that counts the failures left out.
    pub fn since(&self) -> String {
        match self.unreported {
            0 => String::new(),
            n => format!(" ({n} more since the last report)"),
        }
    }
}

struct Entry {
    reported_at: Instant,
    unreported: u64,
    last_seen: Instant,
}

/// A peer, the direction and the cause of its failures.
type Key = (IpAddr, Direction, String);

/// The failures of every peer: when each was last reported, what was left
/// out since, and when it last happened.
#[derive(Default)]
pub struct ConnectionFailures {
    peers: Mutex<HashMap<Key, Entry>>,
}

impl ConnectionFailures {
    /// Records a failure of `peer` at `now`; returns the report to log,
    /// or None while the peer's last report is recent.
    pub fn record(
        &self,
        peer: IpAddr,
        direction: Direction,
        cause: &str,
        now: Instant,
    ) -> Option<Report> {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        let key = (peer, direction, cause.to_string());
        if let Some(entry) = peers.get_mut(&key) {
            entry.last_seen = now;
            if now.duration_since(entry.reported_at) < REPORT_INTERVAL {
                entry.unreported += 1;
                return None;
            }
            let report = Report {
                unreported: entry.unreported,
            };
            entry.reported_at = now;
            entry.unreported = 0;
            return Some(report);
        }
        if peers.len() >= PEERS_TRACKED_MAX {
            peers.retain(|_, e| now.duration_since(e.reported_at) < REPORT_INTERVAL);
            if peers.len() >= PEERS_TRACKED_MAX {
                peers.clear();
            }
        }
        let entry = Entry {
            reported_at: now,
            unreported: 0,
            last_seen: now,
        };
        peers.insert(key, entry);
        Some(Report { unreported: 0 })
    }

    /// A connection with `peer` worked: its next failure is reported at
    /// once.
    pub fn succeeded(&self, peer: IpAddr, direction: Direction) {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        if !peers.is_empty() {
            peers.retain(|(ip, d, _), _| (*ip, *d) != (peer, direction));
        }
    }

    /// Why the last connection to `peer` failed, if it did.
    pub fn last_cause(&self, peer: IpAddr) -> Option<String> {
        let peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        peers
            .iter()
            .filter(|((ip, d, _), _)| (*ip, *d) == (peer, Direction::Outbound))
            .max_by_key(|(_, e)| e.last_seen)
            .map(|((_, _, cause), _)| cause.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));

    #[test]
    fn one_report_per_peer_direction_and_cause_per_interval() {
        let failures = ConnectionFailures::default();
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let out = Direction::Outbound;
        assert_eq!(
            failures.record(A, out, "unknown CA", at(0)),
            Some(Report { unreported: 0 })
        );
        // Retries within the interval are counted, not reported.
        for s in 1..30 {
            assert_eq!(failures.record(A, out, "unknown CA", at(s)), None);
        }
        // Another peer, the other direction, another cause have their own.
        assert!(failures.record(B, out, "unknown CA", at(5)).is_some());
        assert!(failures
            .record(A, Direction::Inbound, "unknown CA", at(5))
            .is_some());
        assert!(failures.record(A, out, "expired", at(6)).is_some());
        assert_eq!(failures.last_cause(A).as_deref(), Some("unknown CA"));
        let report = failures
            .record(A, out, "unknown CA", at(30))
            .expect("due again");
        assert_eq!(report.unreported, 29);
        assert_eq!(report.since(), " (29 more since the last report)");
        assert_eq!(failures.record(A, out, "expired", at(31)), None);
        assert_eq!(failures.last_cause(A).as_deref(), Some("expired"));
        // A connection that worked resets the limit.
        failures.succeeded(A, out);
        assert_eq!(failures.last_cause(A), None);
        assert_eq!(
            failures.record(A, out, "again", at(32)),
            Some(Report { unreported: 0 })
        );
    }

    #[test]
    fn the_peers_remembered_are_bounded() {
        let failures = ConnectionFailures::default();
        let start = Instant::now();
        for i in 0..(PEERS_TRACKED_MAX as u32 + 10) {
            let peer = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            assert!(failures
                .record(peer, Direction::Inbound, "x", start)
                .is_some());
        }
        let tracked = failures.peers.lock().unwrap().len();
        assert!(tracked <= PEERS_TRACKED_MAX, "{tracked}");
    }
}

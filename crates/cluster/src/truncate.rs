//! TRUNCATE across the cluster, as Cassandra runs it: every node of the
//! ring must be up (the operation is refused otherwise, with Cassandra's
//! words), each one snapshots and empties its own copy, and the
//! coordinator waits for all of them up to `truncate_request_timeout`.

use std::net::IpAddr;

use rocksandra_query::QueryError;

use crate::message::Response;
use crate::query_error::truncate_failed as error;
use crate::replies::Replies;
use crate::topology::Topology;

/// Cassandra's default `truncate_request_timeout`.
pub const TRUNCATE_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The other nodes a TRUNCATE coordinated by `topology.local` must reach;
/// an error when any node of the ring is down.
pub fn targets(topology: &Topology) -> Result<Vec<IpAddr>, QueryError> {
    if topology.nodes.values().any(|view| !view.alive) {
        return Err(error("Cannot achieve consistency level ALL"));
    }
    Ok(topology
        .nodes
        .keys()
        .copied()
        .filter(|address| *address != topology.local)
        .collect())
}

/// Waits for the answers of `asked` nodes until the replies' deadline. The local part
/// already succeeded: it counts as one response, as in Cassandra's message.
pub fn await_answers(replies: &Replies, asked: usize) -> Result<(), QueryError> {
    let mut responses = 1;
    for (from, result) in replies.wait().take(asked) {
        match result {
            Ok(Response::Ack) => responses += 1,
            Ok(Response::Error(e)) => return Err(error(format!("{e} (on {from})"))),
            Ok(other) => return Err(error(format!("unexpected answer from {from}: {other:?}"))),
            Err(e) => return Err(error(e)),
        }
    }
    if responses <= asked {
        return Err(error(format!(
            "Truncate timed out - received only {responses} responses"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::message::RemoteError;
    use crate::messaging::Reply;
    use crate::topology::tests::view;

    fn topology(down: &[u8]) -> Topology {
        let views = (1..=3)
            .map(|n| {
                let mut v = view(n, i64::from(n) * 100);
                v.alive = !down.contains(&n);
                v
            })
            .collect();
        Topology::new(view(1, 100).member.address, "dc1".into(), views)
    }

    #[test]
    fn every_other_node_is_asked_and_none_may_be_down() {
        let asked = targets(&topology(&[])).unwrap();
        assert_eq!(
            asked,
            vec![view(2, 0).member.address, view(3, 0).member.address]
        );
        let refused = targets(&topology(&[3])).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "Error during truncate: Cannot achieve consistency level ALL"
        );
        assert!(matches!(refused, QueryError::Truncate(_)));
    }

    #[test]
    fn all_answers_succeed_and_missing_or_failed_ones_do_not() {
        let (a, b) = (view(2, 0).member.address, view(3, 0).member.address);
        let answers = |sent: Vec<Reply>, asked: usize| {
            let (tx, rx) = std::sync::mpsc::channel();
            for reply in sent {
                tx.send(reply).unwrap();
            }
            // The sender stays alive: a missing answer waits for the deadline.
            let replies = Replies::within(rx, Duration::from_millis(20));
            let outcome = await_answers(&replies, asked);
            drop(tx);
            outcome
        };
        assert!(answers(vec![(a, Ok(Response::Ack)), (b, Ok(Response::Ack))], 2).is_ok());
        assert_eq!(
            answers(vec![(a, Ok(Response::Ack))], 2)
                .unwrap_err()
                .to_string(),
            "Error during truncate: Truncate timed out - received only 2 responses"
        );
        let failure = (b, Ok(Response::Error(RemoteError::Failed("disk".into()))));
        let failed = answers(vec![failure], 1).unwrap_err().to_string();
        assert_eq!(failed, "Error during truncate: disk (on 127.0.0.3)");
    }
}

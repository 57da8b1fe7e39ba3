//! Consistency levels as Cassandra 5.0 applies them: how many answers, from
//! which replicas, a read or a write waits for (block-for), whether the
//! replicas believed alive can give them (the UNAVAILABLE check), and the
//! order replicas are asked in. Pure: the caller brings the replicas and
//! their liveness.

pub use rocksandra_wire::Consistency;

use crate::ring::{Endpoint, Strategy};

/// How many replicas must answer for a consistency level, and which count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// `count` answers from any replicas (ONE, TWO, THREE, QUORUM, ALL, ANY,
    /// SERIAL; EACH_QUORUM without NetworkTopologyStrategy).
    Any { count: usize },
    /// `count` answers from replicas of `dc` (LOCAL_ONE, LOCAL_QUORUM,
    /// LOCAL_SERIAL).
    Local { dc: String, count: usize },
    /// EACH_QUORUM under NetworkTopologyStrategy: a quorum in every dc that
    /// has replicas.
    EachDc { counts: Vec<(String, usize)> },
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConsistencyError {
    #[error("ANY ConsistencyLevel is only supported for writes")]
    AnyForRead,
    /// SERIAL or LOCAL_SERIAL on a write that is not conditional.
    #[error("You must use conditional updates for serializable writes")]
    SerialForWrite,
    /// EACH_QUORUM as the commit consistency of a conditional update on a
    /// keyspace without NetworkTopologyStrategy (the only place Cassandra 5.0
    /// refuses it).
    #[error(
        "consistency level EACH_QUORUM not compatible with replication strategy ({strategy_class})"
    )]
    EachQuorumNeedsNts { strategy_class: &'static str },
    /// SERIAL or LOCAL_SERIAL as the commit consistency of a conditional
    /// update.
    #[error("{} is not supported as conditional update commit consistency. Use ANY if you mean \"make sure it is accepted but I don't care how many replicas commit it for non-SERIAL reads\"", .cl.name())]
    SerialForCasCommit { cl: Consistency },
    /// A serial consistency (of a conditional update or its reads) that is
    /// not SERIAL or LOCAL_SERIAL.
    #[error("Invalid consistency for conditional update. Must be one of SERIAL or LOCAL_SERIAL")]
    SerialRequired { cl: Consistency },
    /// Not enough live replicas: the UNAVAILABLE error (consistency,
    /// required, alive). For EACH_QUORUM `required` and `alive` are those of
    /// the first dc that falls short, as Cassandra reports them.
    #[error("Cannot achieve consistency level {}", .cl.name())]
    Unavailable {
        cl: Consistency,
        required: usize,
        alive: usize,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Read,
    Write,
}

/// Cassandra's block-for of `cl` for `op` on a keyspace replicated by
/// `strategy`, from a coordinator in `local_dc`: ONE 1, TWO 2, THREE 3,
/// QUORUM and SERIAL total_rf/2+1, ALL total_rf, LOCAL_ONE 1 in the local
/// dc, LOCAL_QUORUM and LOCAL_SERIAL rf_in(local)/2+1 in the local dc (the
/// whole quorum, still counted in the local dc, when the strategy is not
/// NetworkTopologyStrategy), EACH_QUORUM rf/2+1 in every dc (QUORUM when the
/// strategy is not NetworkTopologyStrategy), ANY 1. ANY is refused for reads,
/// SERIAL and LOCAL_SERIAL for (non-conditional) writes. Under `Local` every
/// level needs the one local answer. For writes during a join or a leave,
/// add the pending replicas with [`Requirement::with_pending`].
pub fn requirement(
    cl: Consistency,
    op: Operation,
    strategy: &Strategy,
    local_dc: &str,
) -> Result<Requirement, ConsistencyError> {
    match (cl, op) {
        (Consistency::Any, Operation::Read) => return Err(ConsistencyError::AnyForRead),
        (Consistency::Serial | Consistency::LocalSerial, Operation::Write) => {
            return Err(ConsistencyError::SerialForWrite)
        }
        _ => {}
    }
    if *strategy == Strategy::Local {
        return Ok(Requirement::Any { count: 1 });
    }
    let quorum = strategy.total_rf() / 2 + 1;
    let local = |count| Requirement::Local {
        dc: local_dc.to_owned(),
        count,
    };
    Ok(match cl {
        Consistency::Any | Consistency::One => Requirement::Any { count: 1 },
        Consistency::Two => Requirement::Any { count: 2 },
        Consistency::Three => Requirement::Any { count: 3 },
        Consistency::Quorum | Consistency::Serial => Requirement::Any { count: quorum },
        Consistency::All => Requirement::Any {
            count: strategy.total_rf(),
        },
        Consistency::LocalOne => local(1),
        Consistency::LocalQuorum | Consistency::LocalSerial => match strategy {
            Strategy::NetworkTopology { .. } => local(strategy.rf_in(local_dc) / 2 + 1),
            _ => local(quorum),
        },
        Consistency::EachQuorum => match strategy {
            Strategy::NetworkTopology { dcs } => Requirement::EachDc {
                counts: dcs
                    .iter()
                    .filter(|(_, rf)| **rf > 0)
                    .map(|(dc, rf)| (dc.clone(), rf / 2 + 1))
                    .collect(),
            },
            _ => Requirement::Any { count: quorum },
        },
    })
}

/// Refuses what Cassandra refuses as the commit consistency of a conditional
/// update: SERIAL and LOCAL_SERIAL, and EACH_QUORUM without
/// NetworkTopologyStrategy.
pub fn validate_cas_commit(cl: Consistency, strategy: &Strategy) -> Result<(), ConsistencyError> {
    match cl {
        Consistency::Serial | Consistency::LocalSerial => {
            Err(ConsistencyError::SerialForCasCommit { cl })
        }
        Consistency::EachQuorum if !matches!(strategy, Strategy::NetworkTopology { .. }) => {
            Err(ConsistencyError::EachQuorumNeedsNts {
                strategy_class: strategy.class_name(),
            })
        }
        _ => Ok(()),
    }
}

impl Requirement {
    /// Total answers needed (the `required` reported in errors).
    pub fn block_for(&self) -> usize {
        match self {
            Requirement::Any { count } | Requirement::Local { count, .. } => *count,
            Requirement::EachDc { counts } => counts.iter().map(|(_, count)| count).sum(),
        }
    }

    /// The requirement of a write that also goes to `pending_dcs` (the dc of
    /// each pending replica): Cassandra waits for one more answer per pending
    /// replica it counts (local ones only for the LOCAL levels; none for ANY),
    /// so that the write reaches the consistency level on the replicas as
    /// they will be once the move completes. The live replicas given to
    /// [`Requirement::check_available`] then include the live pending ones.
    pub fn with_pending(self, cl: Consistency, pending_dcs: &[&str]) -> Requirement {
        if cl == Consistency::Any || pending_dcs.is_empty() {
            return self;
        }
        match self {
            Requirement::Any { count } => Requirement::Any {
                count: count + pending_dcs.len(),
            },
            Requirement::Local { dc, count } => {
                let local_pending = pending_dcs.iter().filter(|d| **d == dc).count();
                Requirement::Local {
                    dc,
                    count: count + local_pending,
                }
            }
            Requirement::EachDc { mut counts } => {
                for pending_dc in pending_dcs {
                    match counts.iter_mut().find(|(dc, _)| dc == pending_dc) {
                        Some((_, count)) => *count += 1,
                        None => counts.push(((*pending_dc).to_owned(), 1)),
                    }
                }
                Requirement::EachDc { counts }
            }
        }
    }

    /// Err(Unavailable) unless the replicas believed up (`live`: each with
    /// its dc; an endpoint listed twice counts once) can satisfy it. `alive`
    /// is reported as Cassandra does: all live replicas, the local dc's for
    /// the LOCAL levels, and for EACH_QUORUM those of the first dc (by name)
    /// that falls short, with that dc's quorum as `required`. ANY never
    /// fails: a hint on the coordinator is enough.
    pub fn check_available(
        &self,
        cl: Consistency,
        live: &[(Endpoint, &str)],
    ) -> Result<(), ConsistencyError> {
        if cl == Consistency::Any {
            return Ok(());
        }
        let unavailable = |required: usize, alive: usize| {
            Err(ConsistencyError::Unavailable {
                cl,
                required,
                alive,
            })
        };
        match self {
            Requirement::Any { count } => {
                let alive = distinct_live(live, |_| true);
                if alive < *count {
                    return unavailable(*count, alive);
                }
            }
            Requirement::Local { dc, count } => {
                let alive = distinct_live(live, |d| d == dc);
                if alive < *count {
                    return unavailable(*count, alive);
                }
            }
            Requirement::EachDc { counts } => {
                for (dc, count) in counts {
                    let alive = distinct_live(live, |d| d == dc);
                    if alive < *count {
                        return unavailable(*count, alive);
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether these answers (each answering replica's dc, one entry per
    /// replica) satisfy it.
    pub fn is_satisfied(&self, answered: &[&str]) -> bool {
        let answered_in = |dc: &str| answered.iter().filter(|d| **d == dc).count();
        match self {
            Requirement::Any { count } => answered.len() >= *count,
            Requirement::Local { dc, count } => answered_in(dc) >= *count,
            Requirement::EachDc { counts } => {
                counts.iter().all(|(dc, count)| answered_in(dc) >= *count)
            }
        }
    }

    /// Whether an answer from a replica in `dc` counts toward it.
    pub fn counts(&self, dc: &str) -> bool {
        match self {
            Requirement::Any { .. } => true,
            Requirement::Local { dc: local, .. } => local == dc,
            Requirement::EachDc { counts } => counts.iter().any(|(d, _)| d == dc),
        }
    }
}

/// Distinct endpoints of `live` whose dc passes `in_dc`.
fn distinct_live(live: &[(Endpoint, &str)], in_dc: impl Fn(&str) -> bool) -> usize {
    live.iter()
        .enumerate()
        .filter(|(index, (endpoint, dc))| {
            in_dc(dc) && !live[..*index].iter().any(|(e, _)| e == endpoint)
        })
        .count()
}

/// Orders replicas for reads: `local` first, then the rest of `local_dc`,
/// then the others, keeping ring order within each group. `dc_of` gives an
/// endpoint's dc (None: unknown, counted as remote).
pub fn sort_by_proximity(
    replicas: &mut [Endpoint],
    local: Endpoint,
    local_dc: &str,
    dc_of: &dyn Fn(Endpoint) -> Option<String>,
) {
    // sort_by_cached_key is stable and asks `dc_of` once per replica.
    replicas.sort_by_cached_key(|&endpoint| {
        if endpoint == local {
            0_u8
        } else if dc_of(endpoint).as_deref() == Some(local_dc) {
            1
        } else {
            2
        }
    });
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::net::{IpAddr, Ipv4Addr};

    use proptest::prelude::{prop_assert, prop_assert_eq, proptest};

    use super::*;

    fn ip(last: u8) -> Endpoint {
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
    }

    fn simple(rf: usize) -> Strategy {
        Strategy::Simple { rf }
    }

    fn nts(dcs: &[(&str, usize)]) -> Strategy {
        Strategy::NetworkTopology {
            dcs: dcs.iter().map(|(dc, rf)| ((*dc).to_owned(), *rf)).collect(),
        }
    }

    fn any(count: usize) -> Requirement {
        Requirement::Any { count }
    }

    fn local(dc: &str, count: usize) -> Requirement {
        Requirement::Local {
            dc: dc.to_owned(),
            count,
        }
    }

    fn each(counts: &[(&str, usize)]) -> Requirement {
        Requirement::EachDc {
            counts: counts
                .iter()
                .map(|(dc, n)| ((*dc).to_owned(), *n))
                .collect(),
        }
    }

    fn unavailable(cl: Consistency, required: usize, alive: usize) -> ConsistencyError {
        ConsistencyError::Unavailable {
            cl,
            required,
            alive,
        }
    }

    type Expected = Result<Requirement, ConsistencyError>;

    /// Expected read and write requirements for every level.
    fn check_table(strategy: &Strategy, table: &[(Consistency, Expected, Expected)]) {
        assert_eq!(table.len(), Consistency::ALL.len());
        for (cl, read, write) in table {
            assert_eq!(
                &requirement(*cl, Operation::Read, strategy, "dc1"),
                read,
                "{cl:?} read"
            );
            assert_eq!(
                &requirement(*cl, Operation::Write, strategy, "dc1"),
                write,
                "{cl:?} write"
            );
        }
    }

    #[test]
    fn requirements_under_simple_rf3() {
        use Consistency as C;
        let any_for_read = Err(ConsistencyError::AnyForRead);
        let serial_for_write = Err(ConsistencyError::SerialForWrite);
        check_table(
            &simple(3),
            &[
                (C::Any, any_for_read, Ok(any(1))),
                (C::One, Ok(any(1)), Ok(any(1))),
                (C::Two, Ok(any(2)), Ok(any(2))),
                (C::Three, Ok(any(3)), Ok(any(3))),
                (C::Quorum, Ok(any(2)), Ok(any(2))),
                (C::All, Ok(any(3)), Ok(any(3))),
                (C::LocalQuorum, Ok(local("dc1", 2)), Ok(local("dc1", 2))),
                (C::EachQuorum, Ok(any(2)), Ok(any(2))),
                (C::Serial, Ok(any(2)), serial_for_write.clone()),
                (C::LocalSerial, Ok(local("dc1", 2)), serial_for_write),
                (C::LocalOne, Ok(local("dc1", 1)), Ok(local("dc1", 1))),
            ],
        );
    }

    #[test]
    fn requirements_under_network_topology() {
        use Consistency as C;
        let any_for_read = Err(ConsistencyError::AnyForRead);
        let serial_for_write = Err(ConsistencyError::SerialForWrite);
        let each_quorum = each(&[("dc1", 2), ("dc2", 2)]);
        check_table(
            &nts(&[("dc1", 3), ("dc2", 2)]),
            &[
                (C::Any, any_for_read, Ok(any(1))),
                (C::One, Ok(any(1)), Ok(any(1))),
                (C::Two, Ok(any(2)), Ok(any(2))),
                (C::Three, Ok(any(3)), Ok(any(3))),
                (C::Quorum, Ok(any(3)), Ok(any(3))),
                (C::All, Ok(any(5)), Ok(any(5))),
                (C::LocalQuorum, Ok(local("dc1", 2)), Ok(local("dc1", 2))),
                (C::EachQuorum, Ok(each_quorum.clone()), Ok(each_quorum)),
                (C::Serial, Ok(any(3)), serial_for_write.clone()),
                (C::LocalSerial, Ok(local("dc1", 2)), serial_for_write),
                (C::LocalOne, Ok(local("dc1", 1)), Ok(local("dc1", 1))),
            ],
        );
        // From dc2: rf 2, local quorum 2; from a dc without replicas: 1 of 0.
        let strategy = nts(&[("dc1", 3), ("dc2", 2)]);
        let from = |dc| requirement(C::LocalQuorum, Operation::Read, &strategy, dc);
        assert_eq!(from("dc2"), Ok(local("dc2", 2)));
        assert_eq!(from("dc3"), Ok(local("dc3", 1)));
        // A dc listed with rf 0 needs nothing under EACH_QUORUM.
        let with_empty_dc = nts(&[("dc1", 1), ("dc2", 0)]);
        assert_eq!(
            requirement(C::EachQuorum, Operation::Write, &with_empty_dc, "dc1"),
            Ok(each(&[("dc1", 1)]))
        );
    }

    #[test]
    fn local_strategy_needs_one_answer() {
        for cl in Consistency::ALL {
            let read = requirement(cl, Operation::Read, &Strategy::Local, "dc1");
            let write = requirement(cl, Operation::Write, &Strategy::Local, "dc1");
            match cl {
                Consistency::Any => assert_eq!(read, Err(ConsistencyError::AnyForRead)),
                _ => assert_eq!(read, Ok(any(1)), "{cl:?}"),
            }
            match cl {
                Consistency::Serial | Consistency::LocalSerial => {
                    assert_eq!(write, Err(ConsistencyError::SerialForWrite));
                }
                _ => assert_eq!(write, Ok(any(1)), "{cl:?}"),
            }
        }
    }

    #[test]
    fn block_for_sums_dcs() {
        assert_eq!(any(3).block_for(), 3);
        assert_eq!(local("dc1", 2).block_for(), 2);
        assert_eq!(each(&[("dc1", 2), ("dc2", 2)]).block_for(), 4);
        assert_eq!(each(&[]).block_for(), 0);
    }

    #[test]
    fn pending_replicas_raise_block_for() {
        use Consistency as C;
        assert_eq!(any(2).with_pending(C::Quorum, &["dc1", "dc2"]), any(4));
        assert_eq!(any(1).with_pending(C::Any, &["dc1"]), any(1));
        assert_eq!(
            local("dc1", 2).with_pending(C::LocalQuorum, &["dc1", "dc2"]),
            local("dc1", 3)
        );
        assert_eq!(
            each(&[("dc1", 2), ("dc2", 2)]).with_pending(C::EachQuorum, &["dc2", "dc2", "dc3"]),
            each(&[("dc1", 2), ("dc2", 4), ("dc3", 1)])
        );
        assert_eq!(
            local("dc1", 2).with_pending(C::LocalQuorum, &[]),
            local("dc1", 2)
        );
    }

    #[test]
    fn availability_counts_live_replicas() {
        use Consistency as C;
        let live = [(ip(1), "dc1"), (ip(2), "dc1"), (ip(3), "dc2")];
        assert_eq!(any(3).check_available(C::All, &live), Ok(()));
        assert_eq!(
            any(4).check_available(C::All, &live),
            Err(unavailable(C::All, 4, 3))
        );
        assert_eq!(
            any(1).check_available(C::One, &[]),
            Err(unavailable(C::One, 1, 0))
        );
        // ANY is served by a hint: never unavailable.
        assert_eq!(any(1).check_available(C::Any, &[]), Ok(()));
        // An endpoint listed twice is one replica.
        assert_eq!(
            any(2).check_available(C::Two, &[(ip(1), "dc1"), (ip(1), "dc1")]),
            Err(unavailable(C::Two, 2, 1))
        );
    }

    #[test]
    fn local_availability_counts_the_local_dc_only() {
        use Consistency as C;
        let live = [(ip(1), "dc1"), (ip(3), "dc2"), (ip(4), "dc2")];
        assert_eq!(
            local("dc1", 2).check_available(C::LocalQuorum, &live),
            Err(unavailable(C::LocalQuorum, 2, 1))
        );
        assert_eq!(
            local("dc2", 2).check_available(C::LocalQuorum, &live),
            Ok(())
        );
        assert_eq!(local("dc1", 1).check_available(C::LocalOne, &live), Ok(()));
        assert_eq!(
            local("dc3", 1).check_available(C::LocalOne, &live),
            Err(unavailable(C::LocalOne, 1, 0))
        );
    }

    #[test]
    fn each_quorum_availability_reports_the_short_dc() {
        use Consistency as C;
        let requirement = each(&[("dc1", 2), ("dc2", 2)]);
        let live = [(ip(1), "dc1"), (ip(2), "dc1"), (ip(3), "dc2")];
        let error = requirement.check_available(C::EachQuorum, &live);
        // dc2's quorum and live count, not the totals (4 and 3).
        assert_eq!(error, Err(unavailable(C::EachQuorum, 2, 1)));
        assert_eq!(
            error.map_err(|e| e.to_string()),
            Err("Cannot achieve consistency level EACH_QUORUM".to_owned())
        );
        let live = [
            (ip(1), "dc1"),
            (ip(2), "dc1"),
            (ip(3), "dc2"),
            (ip(4), "dc2"),
        ];
        assert_eq!(requirement.check_available(C::EachQuorum, &live), Ok(()));
    }

    #[test]
    fn is_satisfied_and_counts() {
        assert!(any(2).is_satisfied(&["dc1", "dc2"]));
        assert!(!any(2).is_satisfied(&["dc1"]));
        assert!(any(0).is_satisfied(&[]));
        assert!(any(1).counts("anything"));

        let local_quorum = local("dc1", 2);
        assert!(!local_quorum.is_satisfied(&["dc1", "dc2", "dc2"]));
        assert!(local_quorum.is_satisfied(&["dc2", "dc1", "dc1"]));
        assert!(local_quorum.counts("dc1"));
        assert!(!local_quorum.counts("dc2"));

        let each_quorum = each(&[("dc1", 2), ("dc2", 1)]);
        assert!(!each_quorum.is_satisfied(&["dc1", "dc1", "dc1"]));
        assert!(!each_quorum.is_satisfied(&["dc1", "dc2", "dc2"]));
        assert!(each_quorum.is_satisfied(&["dc2", "dc1", "dc1"]));
        assert!(each_quorum.counts("dc2"));
        assert!(!each_quorum.counts("dc3"));
    }

    #[test]
    fn error_texts_match_cassandra() {
        assert_eq!(
            ConsistencyError::AnyForRead.to_string(),
            "ANY ConsistencyLevel is only supported for writes"
        );
        assert_eq!(
            ConsistencyError::SerialForWrite.to_string(),
            "You must use conditional updates for serializable writes"
        );
        assert_eq!(
            unavailable(Consistency::LocalQuorum, 2, 1).to_string(),
            "Cannot achieve consistency level LOCAL_QUORUM"
        );
        assert_eq!(
            validate_cas_commit(Consistency::EachQuorum, &simple(3)).map_err(|e| e.to_string()),
            Err("consistency level EACH_QUORUM not compatible with replication strategy (org.apache.cassandra.locator.SimpleStrategy)".to_owned())
        );
        assert_eq!(
            validate_cas_commit(Consistency::Serial, &simple(3)).map_err(|e| e.to_string()),
            Err("SERIAL is not supported as conditional update commit consistency. Use ANY if you mean \"make sure it is accepted but I don't care how many replicas commit it for non-SERIAL reads\"".to_owned())
        );
        assert_eq!(
            validate_cas_commit(Consistency::EachQuorum, &nts(&[("dc1", 3)])),
            Ok(())
        );
        assert_eq!(validate_cas_commit(Consistency::Quorum, &simple(3)), Ok(()));
    }

    #[test]
    fn proximity_puts_local_then_local_dc_first() {
        let dcs: BTreeMap<Endpoint, &str> = BTreeMap::from([
            (ip(1), "dc2"),
            (ip(2), "dc1"),
            (ip(3), "dc2"),
            (ip(4), "dc1"),
            (ip(5), "dc1"),
        ]);
        let dc_of = |e: Endpoint| dcs.get(&e).map(|dc| (*dc).to_owned());
        let mut replicas = vec![ip(1), ip(2), ip(3), ip(4), ip(5), ip(6)];
        sort_by_proximity(&mut replicas, ip(4), "dc1", &dc_of);
        assert_eq!(replicas, vec![ip(4), ip(2), ip(5), ip(1), ip(3), ip(6)]);
        // The coordinator is not a replica: local dc first, ring order kept.
        let mut replicas = vec![ip(3), ip(5), ip(1), ip(2)];
        sort_by_proximity(&mut replicas, ip(9), "dc1", &dc_of);
        assert_eq!(replicas, vec![ip(5), ip(2), ip(3), ip(1)]);
    }

    fn arbitrary_cl() -> impl proptest::strategy::Strategy<Value = Consistency> {
        proptest::sample::select(Consistency::ALL.to_vec())
    }

    proptest! {
        /// Live replicas that all answer satisfy any requirement that
        /// `check_available` accepted for them, and vice versa.
        #[test]
        fn available_iff_all_live_answers_satisfy(
            cl in arbitrary_cl(),
            write: bool,
            nts_strategy: bool,
            rf1 in 0..5_usize,
            rf2 in 0..4_usize,
            live_dcs in proptest::collection::vec(0..3_u8, 0..8),
        ) {
            let strategy = if nts_strategy { nts(&[("dc1", rf1), ("dc2", rf2)]) } else { simple(rf1) };
            let op = if write { Operation::Write } else { Operation::Read };
            let Ok(requirement) = requirement(cl, op, &strategy, "dc1") else {
                return Ok(());
            };
            let names: Vec<String> = live_dcs.iter().map(|d| format!("dc{d}")).collect();
            let live: Vec<(Endpoint, &str)> = names
                .iter()
                .enumerate()
                .map(|(i, dc)| (ip(u8::try_from(i).unwrap_or(0)), dc.as_str()))
                .collect();
            let answered: Vec<&str> = names.iter().map(String::as_str).collect();
            let available = requirement.check_available(cl, &live);
            if cl != Consistency::Any {
                prop_assert_eq!(available.is_ok(), requirement.is_satisfied(&answered));
            }
            if let Err(ConsistencyError::Unavailable { required, alive, .. }) = available {
                prop_assert!(alive < required);
            }
            // Only answers that count can satisfy.
            let counted: Vec<&str> = answered.iter().copied().filter(|dc| requirement.counts(dc)).collect();
            prop_assert_eq!(requirement.is_satisfied(&counted), requirement.is_satisfied(&answered));
            prop_assert!(requirement.block_for() <= strategy.total_rf().max(3) + 1);
        }
    }
}

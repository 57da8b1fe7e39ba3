//! What a node believes about the cluster at one moment: every node gossip
//! knows of, which are up, and the ring built from them. Immutable; the
//! membership loop swaps in a new one when gossip changes.

use std::collections::BTreeMap;
use std::sync::Arc;

use rocksandra_data::Token;

use crate::consistency::sort_by_proximity;
use crate::gossip::NodeView;
use crate::ring::{Endpoint, MemberStatus, Ring, Strategy};

#[derive(Clone, Debug)]
pub struct Topology {
    pub local: Endpoint,
    pub local_dc: String,
    pub ring: Ring,
    /// Every known node that has not left, this one included.
    pub nodes: BTreeMap<Endpoint, NodeView>,
}

impl Topology {
    /// Builds the topology from gossip's view. Nodes that left, or that a
    /// live node has removed, are not members of the ring; nodes being
    /// removed are leaving.
    pub fn new(local: Endpoint, local_dc: String, views: Vec<NodeView>) -> Topology {
        let removals: BTreeMap<[u8; 16], bool> = views
            .iter()
            .filter(|v| !v.left)
            .flat_map(|v| v.removals.iter().copied())
            .fold(BTreeMap::new(), |mut all, (id, done)| {
                *all.entry(id).or_insert(false) |= done;
                all
            });
        let nodes: BTreeMap<Endpoint, NodeView> = views
            .into_iter()
            .filter(|v| !v.left && removals.get(&v.member.host_id) != Some(&true))
            .map(|mut v| {
                if removals.contains_key(&v.member.host_id) {
                    v.member.status = MemberStatus::Leaving;
                }
                (v.member.address, v)
            })
            .collect();
        let ring = Ring::new(nodes.values().map(|v| v.member.clone()));
        Topology {
            local,
            local_dc,
            ring,
            nodes,
        }
    }

    pub fn is_alive(&self, endpoint: Endpoint) -> bool {
        endpoint == self.local || self.nodes.get(&endpoint).is_some_and(|n| n.alive)
    }

    pub fn dc_of(&self, endpoint: Endpoint) -> Option<String> {
        self.nodes.get(&endpoint).map(|n| n.member.dc.clone())
    }

    /// Its data center and rack.
    pub fn place_of(&self, endpoint: Endpoint) -> Option<(String, String)> {
        self.nodes
            .get(&endpoint)
            .map(|n| (n.member.dc.clone(), n.member.rack.clone()))
    }

    pub fn host_id(&self, endpoint: Endpoint) -> Option<[u8; 16]> {
        self.nodes.get(&endpoint).map(|n| n.member.host_id)
    }

    pub fn endpoint_of_host(&self, host_id: [u8; 16]) -> Option<Endpoint> {
        self.nodes
            .values()
            .find(|n| n.member.host_id == host_id)
            .map(|n| n.member.address)
    }

    /// Natural replicas of `token`; this node alone for LocalStrategy (or a
    /// ring with no owner yet).
    pub fn replicas(&self, strategy: &Strategy, token: Token) -> Vec<Endpoint> {
        let replicas = match strategy {
            Strategy::Local => Vec::new(),
            _ => self.ring.replicas(strategy, token),
        };
        if replicas.is_empty() {
            vec![self.local]
        } else {
            replicas
        }
    }

    pub fn pending(&self, strategy: &Strategy, token: Token) -> Vec<Endpoint> {
        match strategy {
            Strategy::Local => Vec::new(),
            _ => self.ring.pending_replicas(strategy, token),
        }
    }

    /// The live natural replicas of `token`, closest first.
    pub fn live_replicas_by_proximity(&self, strategy: &Strategy, token: Token) -> Vec<Endpoint> {
        self.live_by_proximity(&self.replicas(strategy, token))
    }

    /// The live ones of `endpoints`, closest first.
    pub fn live_by_proximity(&self, endpoints: &[Endpoint]) -> Vec<Endpoint> {
        let mut live: Vec<Endpoint> = endpoints
            .iter()
            .copied()
            .filter(|e| self.is_alive(*e))
            .collect();
        let dc_of = |e: Endpoint| self.dc_of(e);
        sort_by_proximity(&mut live, self.local, &self.local_dc, &dc_of);
        live
    }

    /// Replicas with their dc, for consistency checks.
    pub fn with_dcs(&self, endpoints: &[Endpoint]) -> Vec<(Endpoint, String)> {
        endpoints
            .iter()
            .map(|e| {
                let dc = self.dc_of(*e).unwrap_or_else(|| self.local_dc.clone());
                (*e, dc)
            })
            .collect()
    }
}

/// The keyspaces whose data is spread over the ring, with their placement
/// (what bootstrap streams, decommission hands over, repair compares and
/// cleanup trims): the user keyspaces, and the replicated system keyspaces
/// (`system_auth`, ...) with only their tables kept in storage.
pub fn replicated_keyspaces(
    schema: &rocksandra_query::schema::Schema,
) -> Vec<(Arc<rocksandra_query::schema::Keyspace>, Strategy)> {
    use rocksandra_query::schema::{is_system_keyspace, REPLICATED_SYSTEM_KEYSPACES};
    schema
        .keyspaces
        .values()
        .filter_map(|k| {
            if REPLICATED_SYSTEM_KEYSPACES.contains(&k.name.as_str()) {
                let mut stored = rocksandra_query::schema::Keyspace::clone(k);
                stored.tables.retain(|_, t| !t.is_virtual);
                return (!stored.tables.is_empty()).then(|| Arc::new(stored));
            }
            (!k.is_virtual && !is_system_keyspace(&k.name)).then(|| k.clone())
        })
        .map(|k| {
            let strategy = Strategy::from_replication(&k.replication);
            (k, strategy)
        })
        .filter(|(_, s)| *s != Strategy::Local)
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;
    use crate::ring::Member;

    /// A live, normal node 127.0.0.`last` of dc1 with one token.
    pub(crate) fn view(last: u8, token: i64) -> NodeView {
        NodeView {
            member: Member {
                address: IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)),
                host_id: [last; 16],
                dc: "dc1".into(),
                rack: "r1".into(),
                tokens: vec![Token(token)],
                status: MemberStatus::Normal,
            },
            alive: true,
            left: false,
            rpc_address: IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)),
            native_port: 9042,
            schema_version: [0; 16],
            schema_epoch: 0,
            generation: 1,
            removals: Vec::new(),
            load: None,
            disk_usage: Default::default(),
            messaging_version: crate::gossip::MESSAGING_VERSION,
        }
    }

    #[test]
    fn removed_nodes_leave_the_ring_and_removing_ones_are_leaving() {
        let local = view(1, 0).member.address;
        let mut remover = view(1, 0);
        let mut dead = view(3, 200);
        dead.alive = false;
        remover.removals = vec![([3; 16], false)];
        let t = Topology::new(
            local,
            "dc1".into(),
            vec![remover.clone(), view(2, 100), dead.clone()],
        );
        assert_eq!(
            t.nodes[&dead.member.address].member.status,
            MemberStatus::Leaving
        );
        // Removed: gone, even when only a dead node still says so.
        remover.removals = vec![([3; 16], true)];
        remover.alive = false;
        let t = Topology::new(
            local,
            "dc1".into(),
            vec![remover, view(2, 100), dead.clone()],
        );
        assert!(!t.nodes.contains_key(&dead.member.address));
        assert_eq!(
            t.ring
                .replicas(&Strategy::Simple { rf: 1 }, Token(150))
                .len(),
            1
        );
    }
}

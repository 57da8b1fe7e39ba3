//! What a node believes about the cluster at one moment: every node gossip
//! knows of, which are up, and the ring built from them. Immutable; the
//! membership loop swaps in a new one when gossip changes.

use std::collections::BTreeMap;

use rocksandra_data::Token;

use crate::consistency::sort_by_proximity;
use crate::gossip::NodeView;
use crate::ring::{Endpoint, Ring, Strategy};

#[derive(Clone, Debug)]
pub struct Topology {
    pub local: Endpoint,
    pub local_dc: String,
    pub ring: Ring,
    /// Every known node that has not left, this one included.
    pub nodes: BTreeMap<Endpoint, NodeView>,
}

impl Topology {
    /// Builds the topology from gossip's view (nodes that left are not
    /// members of the ring).
    pub fn new(local: Endpoint, local_dc: String, views: Vec<NodeView>) -> Topology {
        let nodes: BTreeMap<Endpoint, NodeView> = views
            .into_iter()
            .filter(|v| !v.left)
            .map(|v| (v.member.address, v))
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
        let mut live: Vec<Endpoint> = self
            .replicas(strategy, token)
            .into_iter()
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

/// The user keyspaces whose data is spread over the ring, with their
/// placement (what bootstrap streams and cleanup trims).
pub fn replicated_keyspaces(
    schema: &rocksandra_query::schema::Schema,
) -> Vec<(
    &std::sync::Arc<rocksandra_query::schema::Keyspace>,
    Strategy,
)> {
    schema
        .keyspaces
        .values()
        .filter(|k| !k.is_virtual && !rocksandra_query::schema::is_system_keyspace(&k.name))
        .map(|k| (k, Strategy::from_replication(&k.replication)))
        .filter(|(_, s)| *s != Strategy::Local)
        .collect()
}

//! Membership by gossip: chitchat's scuttlebutt gossip over UDP on the
//! storage port, with its phi-accrual failure detector. Each node publishes
//! its application state as key-values (`KEY_*`); `Gossip::view` turns what
//! it knows of every node into `NodeView`s. The same isolation set as the
//! messaging layer filters datagrams, so a test's network partition cuts
//! gossip too.
//!
//! With internode TLS, gossip leaves UDP and travels over the messaging
//! layer's (authenticated, encrypted) connections instead
//! (`MessagingTransport`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use chitchat::transport::{RecvOutcome, SendOutcome, Socket, Transport, UdpTransport};
use chitchat::FailureDetectorConfig;
use chitchat::{spawn_chitchat, ChitchatConfig, ChitchatEnvelope, ChitchatHandle, ChitchatId};
use rocksandra_data::Token;
use rocksandra_query::disk_usage::DiskUsage;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

use crate::message::Request;
use crate::messaging::Messaging;
use crate::ring::{Member, MemberStatus};

/// How often a node gossips with a random peer.
pub const GOSSIP_INTERVAL: Duration = Duration::from_millis(250);
/// Phi above which a silent node is declared down (Cassandra's
/// `phi_convict_threshold` default).
pub const PHI_CONVICT_THRESHOLD: f64 = 8.0;

pub const KEY_HOST_ID: &str = "host_id";
pub const KEY_DC: &str = "dc";
pub const KEY_RACK: &str = "rack";
pub const KEY_TOKENS: &str = "tokens";
pub const KEY_STATUS: &str = "status";
pub const KEY_RPC_ADDRESS: &str = "rpc_address";
pub const KEY_NATIVE_PORT: &str = "native_port";
pub const KEY_SCHEMA_VERSION: &str = "schema_version";
pub const KEY_SCHEMA_EPOCH: &str = "schema_epoch";
pub const KEY_RELEASE: &str = "release_version";
/// Which internode requests a node understands beyond those of the frame
/// format (`MESSAGING_VERSION`); a peer that publishes none is older and
/// is sent none of the newer requests.
pub const KEY_MESSAGING_VERSION: &str = "messaging_version";
/// This node's messaging version: 1 adds `Request::AnnSearch`.
pub const MESSAGING_VERSION: u32 = 1;
/// The messaging version from which a peer answers `Request::AnnSearch`.
pub const ANN_SEARCH_VERSION: u32 = 1;
/// Nodes this node is removing (`nodetool removenode`), as
/// `hostid=removing` or `hostid=removed`, comma-separated.
pub const KEY_REMOVALS: &str = "removals";
/// The bytes of data the node stores (`nodetool status`'s Load), as
/// Cassandra gossips LOAD.
pub const KEY_LOAD: &str = "load";
/// How full its data volume is for the disk usage guardrails (Cassandra's
/// DISK_USAGE: `NOT_AVAILABLE`, `SPACIOUS`, `STUFFED`, `FULL`).
pub const KEY_DISK_USAGE: &str = "disk_usage";

/// What gossip says about one node.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeView {
    pub member: Member,
    /// The failure detector thinks it is up (always true for this node).
    pub alive: bool,
    /// Decommissioned or removed: it owns nothing any more.
    pub left: bool,
    pub rpc_address: IpAddr,
    pub native_port: u16,
    pub schema_version: [u8; 16],
    pub schema_epoch: u64,
    /// Its start time; a restarted node has a higher one.
    pub generation: u64,
    /// Dead nodes it is removing: (host id, finished).
    pub removals: Vec<([u8; 16], bool)>,
    /// The bytes it stores, as it last published them.
    pub load: Option<u64>,
    /// Its data disk usage, as it last published it.
    pub disk_usage: DiskUsage,
    /// Its `KEY_MESSAGING_VERSION` (0: it publishes none).
    pub messaging_version: u32,
}

/// `KEY_REMOVALS`'s value for these removals.
pub fn format_removals(removals: &[([u8; 16], bool)]) -> String {
    removals
        .iter()
        .map(|(id, done)| {
            format!(
                "{}={}",
                hex::encode(id),
                if *done { "removed" } else { "removing" }
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn parse_removals(text: &str) -> Vec<([u8; 16], bool)> {
    text.split(',')
        .filter_map(|item| {
            let (id, state) = item.split_once('=')?;
            Some((parse_hex16(id)?, state == "removed"))
        })
        .collect()
}

/// This node's application state, as published.
#[derive(Clone, Debug)]
pub struct LocalState {
    pub host_id: [u8; 16],
    pub dc: String,
    pub rack: String,
    pub tokens: Vec<Token>,
    pub status: &'static str,
    pub rpc_address: IpAddr,
    pub native_port: u16,
    pub schema_version: [u8; 16],
    pub schema_epoch: u64,
}

pub const STATUS_NORMAL: &str = "NORMAL";
pub const STATUS_JOINING: &str = "JOINING";
pub const STATUS_LEAVING: &str = "LEAVING";
pub const STATUS_LEFT: &str = "LEFT";

/// 16 bytes from 32 hex digits (host ids and schema versions in gossip).
pub fn parse_hex16(text: &str) -> Option<[u8; 16]> {
    let mut out = [0u8; 16];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

impl LocalState {
    pub(crate) fn key_values(&self) -> Vec<(String, String)> {
        let tokens: Vec<String> = self.tokens.iter().map(|t| t.0.to_string()).collect();
        vec![
            (KEY_HOST_ID.into(), hex::encode(self.host_id)),
            (KEY_DC.into(), self.dc.clone()),
            (KEY_RACK.into(), self.rack.clone()),
            (KEY_TOKENS.into(), tokens.join(",")),
            (KEY_STATUS.into(), self.status.into()),
            (KEY_RPC_ADDRESS.into(), self.rpc_address.to_string()),
            (KEY_NATIVE_PORT.into(), self.native_port.to_string()),
            (KEY_SCHEMA_VERSION.into(), hex::encode(self.schema_version)),
            (KEY_SCHEMA_EPOCH.into(), self.schema_epoch.to_string()),
            (KEY_RELEASE.into(), rocksandra_query::RELEASE_VERSION.into()),
            (KEY_MESSAGING_VERSION.into(), MESSAGING_VERSION.to_string()),
        ]
    }
}

/// Parses a node's published state; None while it is incomplete.
pub fn parse_view(
    address: IpAddr,
    generation: u64,
    alive: bool,
    get: &dyn Fn(&str) -> Option<String>,
) -> Option<NodeView> {
    let host_id = parse_hex16(&get(KEY_HOST_ID)?)?;
    let tokens: Vec<Token> = get(KEY_TOKENS)?
        .split(',')
        .filter(|t| !t.is_empty())
        .map(|t| t.parse().map(Token))
        .collect::<Result<_, _>>()
        .ok()?;
    let status_text = get(KEY_STATUS)?;
    let (status, left) = match status_text.as_str() {
        STATUS_NORMAL => (MemberStatus::Normal, false),
        STATUS_JOINING => (MemberStatus::Joining, false),
        STATUS_LEAVING => (MemberStatus::Leaving, false),
        STATUS_LEFT => (MemberStatus::Normal, true),
        _ => return None,
    };
    Some(NodeView {
        member: Member {
            address,
            host_id,
            dc: get(KEY_DC)?,
            rack: get(KEY_RACK)?,
            tokens,
            status,
        },
        alive,
        left,
        rpc_address: get(KEY_RPC_ADDRESS)?.parse().ok()?,
        native_port: get(KEY_NATIVE_PORT)?.parse().ok()?,
        schema_version: get(KEY_SCHEMA_VERSION)
            .and_then(|v| parse_hex16(&v))
            .unwrap_or([0; 16]),
        schema_epoch: get(KEY_SCHEMA_EPOCH)
            .and_then(|e| e.parse().ok())
            .unwrap_or(0),
        generation,
        removals: get(KEY_REMOVALS)
            .map(|r| parse_removals(&r))
            .unwrap_or_default(),
        load: get(KEY_LOAD).and_then(|l| l.parse().ok()),
        disk_usage: get(KEY_DISK_USAGE)
            .and_then(|d| DiskUsage::from_name(&d))
            .unwrap_or_default(),
        messaging_version: get(KEY_MESSAGING_VERSION)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    })
}

/// One endpoint's gossip state as chitchat holds it (`nodetool gossipinfo`).
#[derive(Clone, Debug, PartialEq)]
pub struct EndpointState {
    pub address: IpAddr,
    /// Its start time in milliseconds (chitchat's generation id).
    pub generation: u64,
    pub heartbeat: u64,
    /// This node's keys (`KEY_*`) with the version of their last change;
    /// deleted keys are left out.
    pub values: BTreeMap<String, (u64, String)>,
}

impl EndpointState {
    /// A node that does not gossip (alone) as it would publish itself:
    /// heartbeat 0, every key at version 1.
    pub fn unpublished(address: IpAddr, generation: u64, state: &LocalState) -> EndpointState {
        EndpointState {
            address,
            generation,
            heartbeat: 0,
            values: state
                .key_values()
                .into_iter()
                .map(|(key, value)| (key, (1, value)))
                .collect(),
        }
    }
}

pub struct Gossip {
    handle: ChitchatHandle,
    local: IpAddr,
}

/// Why gossip could not start: chitchat's error, on the address it was
/// to listen on.
#[derive(Debug, thiserror::Error)]
#[error("cannot start gossip on {listen}: {cause}")]
pub struct GossipStartError {
    pub listen: SocketAddr,
    pub cause: anyhow::Error,
}

impl Gossip {
    /// Joins the cluster through `seeds` (gossip addresses) as
    /// `advertised`, the address peers gossip with, listening on `bind`:
    /// the listen address, and at most one more
    /// (`listen_on_broadcast_address`).
    pub async fn start(
        advertised: SocketAddr,
        bind: &[SocketAddr],
        cluster_name: &str,
        seeds: Vec<SocketAddr>,
        generation: u64,
        state: &LocalState,
        messaging: &Arc<Messaging>,
    ) -> Result<Gossip, GossipStartError> {
        debug_assert!(bind.len() <= 2, "{bind:?}: the listen address and one more");
        let listen = bind.first().copied().unwrap_or(advertised);
        let local = advertised.ip();
        let config = ChitchatConfig {
            chitchat_id: ChitchatId::new(local.to_string(), generation, advertised),
            cluster_id: cluster_name.to_string(),
            gossip_interval: GOSSIP_INTERVAL,
            listen_addr: listen,
            seed_nodes: seeds
                .iter()
                .filter(|s| **s != advertised)
                .map(|s| s.to_string())
                .collect(),
            failure_detector_config: FailureDetectorConfig {
                phi_threshold: PHI_CONVICT_THRESHOLD,
                sampling_window_size: 1000,
                max_interval: Duration::from_secs(10),
                initial_interval: GOSSIP_INTERVAL * 4,
                dead_node_grace_period: Duration::from_secs(24 * 3600),
            },
            marked_for_deletion_grace_period: Duration::from_secs(3600),
            catchup_callback: None,
            extra_liveness_predicate: None,
            protocol_version: chitchat::ProtocolVersion::V0,
        };
        let handle = if messaging.is_encrypted() {
            let transport = MessagingTransport {
                messaging: messaging.clone(),
            };
            spawn_chitchat(config, state.key_values(), &transport).await
        } else {
            let transport = FilteredTransport {
                isolated: messaging.isolation(),
                also_bind: bind.get(1).copied(),
            };
            spawn_chitchat(config, state.key_values(), &transport).await
        }
        .map_err(|cause| GossipStartError { listen, cause })?;
        Ok(Gossip { handle, local })
    }

    /// Publishes a new value of one of this node's keys.
    pub async fn set(&self, key: &str, value: String) {
        let chitchat = self.handle.chitchat();
        let mut chitchat = chitchat.lock().await;
        chitchat.self_node_state().set(key, value);
    }

    /// Every node gossip knows of (this one included), the newest
    /// generation of each address.
    pub async fn view(&self) -> Vec<NodeView> {
        let chitchat = self.handle.chitchat();
        let chitchat = chitchat.lock().await;
        let live: HashSet<&ChitchatId> = chitchat.live_nodes().collect();
        let mut newest: BTreeMap<IpAddr, NodeView> = BTreeMap::new();
        for (id, state) in chitchat.node_states() {
            let Ok(address) = id.node_id.parse::<IpAddr>() else {
                continue;
            };
            let alive = address == self.local || live.contains(id);
            let get = |k: &str| state.get(k).map(str::to_string);
            let Some(view) = parse_view(address, id.generation_id, alive, &get) else {
                continue;
            };
            match newest.get(&address) {
                Some(v) if v.generation >= view.generation => {}
                _ => {
                    newest.insert(address, view);
                }
            }
        }
        newest.into_values().collect()
    }

    /// Every endpoint's state as this node knows it, the newest
    /// generation of each address, by address.
    pub async fn endpoint_states(&self) -> Vec<EndpointState> {
        let chitchat = self.handle.chitchat();
        let chitchat = chitchat.lock().await;
        let mut newest: BTreeMap<IpAddr, EndpointState> = BTreeMap::new();
        for (id, state) in chitchat.node_states() {
            let Ok(address) = id.node_id.parse::<IpAddr>() else {
                continue;
            };
            if newest
                .get(&address)
                .is_some_and(|known| known.generation >= id.generation_id)
            {
                continue;
            }
            let values = state
                .key_values_including_deleted()
                .filter(|(_, v)| !v.is_deleted())
                .map(|(key, v)| (key.to_string(), (v.version, v.value.clone())))
                .collect();
            newest.insert(
                address,
                EndpointState {
                    address,
                    generation: id.generation_id,
                    heartbeat: state.heartbeat().into(),
                    values,
                },
            );
        }
        newest.into_values().collect()
    }

    pub async fn shutdown(self) {
        let _ = self.handle.shutdown().await;
    }
}

/// chitchat's UDP transport, dropping datagrams to and from isolated peers.
struct FilteredTransport {
    isolated: Arc<RwLock<HashSet<IpAddr>>>,
    /// One more address to receive gossip on (`listen_on_broadcast_address`).
    also_bind: Option<SocketAddr>,
}

#[async_trait::async_trait]
impl Transport for FilteredTransport {
    async fn open(&self, listen_addr: SocketAddr) -> anyhow::Result<Box<dyn Socket>> {
        let inner = UdpTransport.open(listen_addr).await?;
        let also = match self.also_bind {
            Some(address) => Some(UdpTransport.open(address).await?),
            None => None,
        };
        Ok(Box::new(FilteredSocket {
            inner,
            also,
            isolated: self.isolated.clone(),
        }))
    }
}

/// Sends from the listen address; receives on it and on `also`.
struct FilteredSocket {
    inner: Box<dyn Socket>,
    also: Option<Box<dyn Socket>>,
    isolated: Arc<RwLock<HashSet<IpAddr>>>,
}

impl FilteredSocket {
    fn blocked(&self, peer: IpAddr) -> bool {
        self.isolated
            .read()
            .map(|s| s.contains(&peer))
            .unwrap_or(false)
    }
}

#[async_trait::async_trait]
impl Socket for FilteredSocket {
    fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        self.inner.local_addr()
    }

    async fn send(
        &mut self,
        to: SocketAddr,
        envelope: ChitchatEnvelope,
    ) -> anyhow::Result<SendOutcome> {
        if self.blocked(to.ip()) {
            return Ok(SendOutcome { num_bytes_sent: 0 });
        }
        self.inner.send(to, envelope).await
    }

    /// Cancel-safe, as chitchat needs: both sockets' `recv` are.
    async fn recv(&mut self) -> anyhow::Result<RecvOutcome> {
        loop {
            let outcome = match &mut self.also {
                Some(also) => tokio::select! {
                    outcome = self.inner.recv() => outcome?,
                    outcome = also.recv() => outcome?,
                },
                None => self.inner.recv().await?,
            };
            if !self.blocked(outcome.from_addr.ip()) {
                return Ok(outcome);
            }
        }
    }
}

/// Peers gossip is kept with over messaging at most (one loopback relay
/// socket each).
pub const MAX_GOSSIP_PEERS: usize = 4096;
/// The largest message chitchat encodes (it sizes them for a UDP datagram).
const MAX_GOSSIP_MESSAGE_BYTES: usize = 65_507;
/// How long chitchat's encoder may take to hand a message to a relay.
const RELAY_TIMEOUT: Duration = Duration::from_secs(1);

/// chitchat's messages carried by internode messaging, not UDP.
///
/// chitchat keeps its wire encoding private, so its own UDP socket, bound
/// to the loopback interface, encodes and decodes: a message to send goes
/// from that socket to a loopback relay socket kept for the peer, which
/// hands the bytes to messaging; a message the peer sent goes from its
/// relay socket to chitchat's, and the relay's address says whom it came
/// from. Datagrams from any other address are dropped.
struct MessagingTransport {
    messaging: Arc<Messaging>,
}

#[async_trait::async_trait]
impl Transport for MessagingTransport {
    async fn open(&self, listen_addr: SocketAddr) -> anyhow::Result<Box<dyn Socket>> {
        let inbox = self
            .messaging
            .gossip_inbox()
            .ok_or_else(|| anyhow::anyhow!("gossip already runs over internode messaging"))?;
        let codec = UdpTransport
            .open(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0))
            .await?;
        let codec_addr = codec.local_addr()?;
        Ok(Box::new(MessagingSocket {
            messaging: self.messaging.clone(),
            listen_addr,
            inbox,
            codec,
            codec_addr,
            relays: HashMap::new(),
            peers_by_relay: HashMap::new(),
            buffer: vec![0; MAX_GOSSIP_MESSAGE_BYTES],
        }))
    }
}

struct MessagingSocket {
    messaging: Arc<Messaging>,
    listen_addr: SocketAddr,
    inbox: mpsc::Receiver<(IpAddr, Vec<u8>)>,
    /// chitchat's own UDP socket on the loopback interface.
    codec: Box<dyn Socket>,
    codec_addr: SocketAddr,
    relays: HashMap<IpAddr, UdpSocket>,
    peers_by_relay: HashMap<SocketAddr, IpAddr>,
    buffer: Vec<u8>,
}

impl MessagingSocket {
    /// The loopback relay socket of `peer`, bound on first use.
    async fn relay(&mut self, peer: IpAddr) -> anyhow::Result<&UdpSocket> {
        if !self.relays.contains_key(&peer) {
            if self.relays.len() >= MAX_GOSSIP_PEERS {
                anyhow::bail!("gossip with more than {MAX_GOSSIP_PEERS} peers");
            }
            let socket = UdpSocket::bind(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0)).await?;
            self.peers_by_relay.insert(socket.local_addr()?, peer);
            self.relays.insert(peer, socket);
        }
        self.relays
            .get(&peer)
            .ok_or_else(|| anyhow::anyhow!("no relay for {peer}"))
    }

    /// chitchat's encoding of `envelope`, through `peer`'s relay.
    async fn encode(
        &mut self,
        peer: IpAddr,
        envelope: ChitchatEnvelope,
    ) -> anyhow::Result<Vec<u8>> {
        let relay_addr = self.relay(peer).await?.local_addr()?;
        self.codec.send(relay_addr, envelope).await?;
        let codec_addr = self.codec_addr;
        let mut buffer = std::mem::take(&mut self.buffer);
        let relay = self.relay(peer).await?;
        let received = tokio::time::timeout(RELAY_TIMEOUT, async {
            loop {
                let (len, from) = relay.recv_from(&mut buffer).await?;
                if from == codec_addr {
                    return Ok::<_, std::io::Error>(buffer[..len].to_vec());
                }
            }
        })
        .await;
        self.buffer = buffer;
        Ok(received??)
    }
}

#[async_trait::async_trait]
impl Socket for MessagingSocket {
    fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listen_addr)
    }

    async fn send(
        &mut self,
        to: SocketAddr,
        envelope: ChitchatEnvelope,
    ) -> anyhow::Result<SendOutcome> {
        let bytes = self.encode(to.ip(), envelope).await?;
        let num_bytes_sent = bytes.len();
        self.messaging.send_oneway(to.ip(), Request::Gossip(bytes));
        Ok(SendOutcome { num_bytes_sent })
    }

    /// Cancel-safe as chitchat needs: a message taken from the inbox but
    /// not yet relayed is lost, as a datagram can be.
    async fn recv(&mut self) -> anyhow::Result<RecvOutcome> {
        loop {
            tokio::select! {
                outcome = self.codec.recv() => {
                    let outcome = outcome?;
                    if let Some(peer) = self.peers_by_relay.get(&outcome.from_addr) {
                        let from_addr = SocketAddr::new(*peer, self.listen_addr.port());
                        return Ok(RecvOutcome { from_addr, ..outcome });
                    }
                }
                message = self.inbox.recv() => {
                    let Some((from, bytes)) = message else {
                        anyhow::bail!("internode messaging stopped");
                    };
                    let codec_addr = self.codec_addr;
                    self.relay(from).await?.send_to(&bytes, codec_addr).await?;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_state_parses_back() {
        let state = LocalState {
            host_id: [7; 16],
            dc: "dc1".into(),
            rack: "r1".into(),
            tokens: vec![Token(-5), Token(42)],
            status: STATUS_JOINING,
            rpc_address: "127.0.0.2".parse().expect("ip"),
            native_port: 9042,
            schema_version: [3; 16],
            schema_epoch: 12,
        };
        let kv: BTreeMap<String, String> = state.key_values().into_iter().collect();
        let get = |k: &str| kv.get(k).cloned();
        let address: IpAddr = "127.0.0.2".parse().expect("ip");
        let view = parse_view(address, 9, true, &get).expect("parses");
        assert_eq!(view.member.host_id, [7; 16]);
        assert_eq!(view.member.tokens, vec![Token(-5), Token(42)]);
        assert_eq!(view.member.status, MemberStatus::Joining);
        assert_eq!(view.schema_epoch, 12);
        assert_eq!(view.schema_version, [3; 16]);
        assert_eq!(view.native_port, 9042);
        assert!(!view.left);
        // Incomplete state (a key missing) is not a node yet.
        let partial = |k: &str| (k != KEY_TOKENS).then(|| kv.get(k).cloned()).flatten();
        assert_eq!(parse_view(address, 9, true, &partial), None);
    }

    #[test]
    fn hex_round_trips() {
        let bytes = [0xab; 16];
        assert_eq!(parse_hex16(&hex::encode(bytes)), Some(bytes));
        assert_eq!(parse_hex16("zz"), None);
    }
}

//! Operator commands (`rocksandra nodetool`), answered by the node as text
//! shaped like Apache Cassandra's nodetool output.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use rocksandra_data::Token;
use rocksandra_query::Executor;
use rocksandra_storage::{Engine, TokenRange};

use crate::message::{AdminCommand, RemoteError, Response, TableSelection};
use crate::node::ClusterConfig;
use crate::ring::{MemberStatus, Strategy};
use crate::stages::Stages;
use crate::topology::Topology;

mod error;
pub mod listener;
pub use error::{AdminError, NodetoolError, RepairArgsError};

mod cluster_info;
mod gossip_info;
mod histograms;
mod import;
mod snapshots;
pub(crate) mod stats;
mod table_stats;
mod tables;

pub(crate) fn uuid(bytes: &[u8; 16]) -> String {
    rocksandra_data::uuid::to_text(bytes)
}

pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

pub(crate) fn failed(e: impl ToString) -> Response {
    Response::Error(RemoteError::Failed(e.to_string()))
}

/// What operator commands read and act on: a cluster member as it is now
/// (`ClusterNode::admin_node`), or a node running alone (`AdminNode::alone`).
pub struct AdminNode {
    config: ClusterConfig,
    executor: Arc<Executor>,
    pub(crate) engine: Arc<dyn Engine>,
    pub(crate) topology: Arc<Topology>,
    pub(crate) status: &'static str,
    pub(crate) token_count: usize,
    pub(crate) hints_pending: usize,
    /// Thread pool counts (`tpstats`); all zero on a node alone, whose
    /// engine is not staged.
    pub(crate) stages: Arc<Stages>,
    /// The compaction throughput in force (`setcompactionthroughput`).
    pub(crate) compaction_throughput: Arc<AtomicU32>,
    /// When a node alone started, in milliseconds since the epoch (the
    /// generation its `gossipinfo` shows); 0 for a member, whose gossip
    /// holds its generation.
    started_millis: u64,
}

/// The parts of a cluster member `AdminNode::member` takes.
pub(crate) struct MemberParts {
    pub topology: Arc<Topology>,
    pub status: &'static str,
    pub hints_pending: usize,
    pub stages: Arc<Stages>,
}

impl AdminNode {
    /// A node running alone (no seeds): the ring is itself, as its
    /// `system.local` says.
    pub fn alone(
        config: ClusterConfig,
        executor: Arc<Executor>,
        engine: Arc<dyn Engine>,
        compaction_throughput: Arc<AtomicU32>,
        started_millis: u64,
    ) -> AdminNode {
        let topology = Arc::new(crate::node::topology_alone(&config, &executor));
        AdminNode {
            token_count: config.tokens.len(),
            config,
            executor,
            engine,
            topology,
            status: crate::gossip::STATUS_NORMAL,
            hints_pending: 0,
            stages: Arc::new(Stages::default()),
            compaction_throughput,
            started_millis,
        }
    }

    pub(crate) fn member(
        config: ClusterConfig,
        executor: Arc<Executor>,
        engine: Arc<dyn Engine>,
        compaction_throughput: Arc<AtomicU32>,
        parts: MemberParts,
    ) -> AdminNode {
        AdminNode {
            token_count: config.tokens.len(),
            config,
            executor,
            engine,
            topology: parts.topology,
            status: parts.status,
            hints_pending: parts.hints_pending,
            stages: parts.stages,
            compaction_throughput,
            started_millis: 0,
        }
    }

    pub fn executor(&self) -> &Arc<Executor> {
        &self.executor
    }

    pub fn config(&self) -> &ClusterConfig {
        &self.config
    }
}

/// A command on a node alone: the cluster's commands (decommission,
/// removenode, rebuild, repair, netstats) have nothing to act on.
pub fn run_alone(node: &AdminNode, command: AdminCommand) -> Response {
    match command {
        AdminCommand::Decommission { .. } => {
            failed("no other normal nodes in the ring; decommission would be pointless")
        }
        AdminCommand::RemoveNode { .. } => {
            failed("this node runs alone: there is no other node to remove")
        }
        AdminCommand::Rebuild { .. } => {
            failed("this node runs alone: there is no other node to rebuild from")
        }
        AdminCommand::Repair { keyspace, .. } => Response::Text(format!(
            "Nothing to repair for {}: this node runs alone\n",
            keyspace.as_deref().unwrap_or("any keyspace")
        )),
        AdminCommand::Netstats => Response::Text("Mode: NORMAL\nNot sending any streams.\n".into()),
        AdminCommand::GetStreamThroughput { unit } => {
            stats::stream_throughput_line(node.config().stream_throughput_bytes, unit)
        }
        AdminCommand::SetStreamThroughput { .. } => {
            failed("this node runs alone: it streams to no other node")
        }
        AdminCommand::GossipInfo => Response::Text(gossip_info::format(&[alone_state(node)])),
        other => run(node, other),
    }
}

/// A node alone as it would gossip itself, started at `started_millis`.
fn alone_state(node: &AdminNode) -> crate::gossip::EndpointState {
    let state = crate::node::local_state(&node.config, &node.executor, false);
    crate::gossip::EndpointState::unpublished(
        node.config.broadcast_address,
        node.started_millis,
        &state,
    )
}

/// `nodetool gossipinfo` of a cluster member: what its gossip holds.
pub(crate) fn gossip_info(states: &[crate::gossip::EndpointState]) -> Response {
    Response::Text(gossip_info::format(states))
}

pub fn run(node: &AdminNode, command: AdminCommand) -> Response {
    match command {
        AdminCommand::Status { keyspace } => status_of(node, keyspace.as_deref()),
        AdminCommand::Ring => Response::Text(ring(node)),
        AdminCommand::Info => Response::Text(info(node)),
        AdminCommand::DescribeRing { keyspace } => describe_ring(node, &keyspace),
        AdminCommand::Flush(selection) => tables::flush(node, &selection),
        AdminCommand::Drain => tables::flush(node, &TableSelection::default()),
        AdminCommand::Compact(selection) => tables::compact(node, &selection),
        AdminCommand::Cleanup(selection) => tables::cleanup(node, &selection),
        AdminCommand::Snapshot { tag, keyspaces } => snapshots::create(node, &tag, &keyspaces),
        AdminCommand::ListSnapshots => snapshots::list(node),
        AdminCommand::ClearSnapshot { tag } => snapshots::clear(node, tag.as_deref()),
        AdminCommand::Import {
            keyspace,
            table,
            dirs,
            all_tokens,
        } => import::import(node, &keyspace, &table, &dirs, all_tokens),
        AdminCommand::Version => cluster_info::version(),
        AdminCommand::DescribeCluster => cluster_info::describe_cluster(node),
        AdminCommand::GetEndpoints {
            keyspace,
            table,
            key,
        } => cluster_info::get_endpoints(node, &keyspace, &table, &key),
        AdminCommand::GetCompactionThroughput => stats::get_compaction_throughput(node),
        AdminCommand::SetCompactionThroughput { mib_per_second } => {
            stats::set_compaction_throughput(node, mib_per_second)
        }
        AdminCommand::CompactionStats => stats::compaction_stats(node),
        AdminCommand::TableStats { names } => table_stats::table_stats(node, &names),
        AdminCommand::TpStats => stats::tp_stats(node),
        AdminCommand::ProxyHistograms => histograms::proxy_histograms(node),
        AdminCommand::TableHistograms { table } => histograms::table_histograms(node, &table),
        AdminCommand::GarbageCollect { selection, .. } => tables::compact(node, &selection),
        AdminCommand::InvalidateAuthCache {
            cache,
            roles,
            resources,
        } => invalidate_auth_cache(node, cache, &roles, &resources),
        AdminCommand::Isolate { .. }
        | AdminCommand::Repair { .. }
        | AdminCommand::Decommission { .. }
        | AdminCommand::RemoveNode { .. }
        | AdminCommand::Rebuild { .. }
        | AdminCommand::Netstats
        | AdminCommand::GossipInfo
        | AdminCommand::GetStreamThroughput { .. }
        | AdminCommand::SetStreamThroughput { .. }
        | AdminCommand::Failpoint { .. }
        | AdminCommand::Slow { .. } => failed("handled by the node"),
        AdminCommand::GetLoggingLevels | AdminCommand::SetLoggingLevel { .. } => {
            failed("this process's log levels are not under nodetool's control")
        }
        AdminCommand::GetGuardrailsConfig { .. } | AdminCommand::SetGuardrailsConfig { .. } => {
            failed("this node's guardrails are not under nodetool's control")
        }
    }
}

/// nodetool's `invalidaterolescache`, `invalidatepermissionscache` and
/// `invalidatecredentialscache`: silent on success, as Cassandra's.
fn invalidate_auth_cache(
    node: &AdminNode,
    cache: crate::message::AuthCacheName,
    roles: &[String],
    resources: &[String],
) -> Response {
    use crate::message::AuthCacheName as N;
    use rocksandra_query::auth_cache::CacheName;
    let cache = match cache {
        N::Roles => CacheName::Roles,
        N::Permissions => CacheName::Permissions,
        N::Credentials => CacheName::Credentials,
    };
    node.executor()
        .invalidate_auth_cache(cache, roles, resources);
    Response::Text(String::new())
}

fn status_of(node: &AdminNode, keyspace: Option<&str>) -> Response {
    if let Some(name) = keyspace {
        if node.executor().schema().keyspace(name).is_none() {
            return failed(tables::unknown_keyspace(name));
        }
    }
    Response::Text(status(node, keyspace))
}

/// A snapshot tag names a directory under `<data_dir>/snapshots`: one plain
/// file name, never a path out of it (`..`, `/`, an absolute path) and never
/// hidden. The node checks it, whatever the client sent.
pub(crate) fn check_snapshot_tag(tag: &str) -> Result<(), AdminError> {
    const MAX_TAG_BYTES: usize = 255;
    if tag.is_empty() {
        return Err(AdminError::NoSnapshotName);
    }
    if tag.len() > MAX_TAG_BYTES {
        return Err(AdminError::SnapshotNameTooLong {
            max_bytes: MAX_TAG_BYTES,
        });
    }
    if let Some(c) = tag
        .chars()
        .find(|c| matches!(c, '/' | '\\' | ':' | '\0') || c.is_control())
    {
        return Err(AdminError::SnapshotNameCharacter(c));
    }
    if tag.starts_with('.') {
        return Err(AdminError::HiddenSnapshotName(tag.to_string()));
    }
    Ok(())
}

/// `nodetool status`, grouped by datacenter.
fn status(node: &AdminNode, keyspace: Option<&str>) -> String {
    let topology = node.topology.clone();
    let schema = node.executor().schema();
    let strategy = keyspace
        .and_then(|k| schema.keyspace(k))
        .map(|k| Strategy::from_replication(&k.replication));
    let ownership = topology
        .ring
        .effective_ownership(strategy.as_ref().unwrap_or(&Strategy::Simple { rf: 1 }));
    let local_load = node.engine.stats().sst_bytes;
    let mut by_dc: BTreeMap<&str, Vec<&crate::gossip::NodeView>> = BTreeMap::new();
    for view in topology.nodes.values() {
        by_dc.entry(view.member.dc.as_str()).or_default().push(view);
    }
    let mut out = String::new();
    for (dc, nodes) in by_dc {
        let title = format!("Datacenter: {dc}");
        let _ = writeln!(out, "{title}\n{}", "=".repeat(title.len()));
        let _ = writeln!(
            out,
            "Status=Up/Down\n|/ State=Normal/Leaving/Joining/Moving"
        );
        let _ = writeln!(
            out,
            "--  {:<15} {:<11} {:<7} {:<17} {:<37} Rack",
            "Address", "Load", "Tokens", "Owns (effective)", "Host ID"
        );
        for v in nodes {
            let up = if v.alive { 'U' } else { 'D' };
            let state = match v.member.status {
                MemberStatus::Normal => 'N',
                MemberStatus::Joining => 'J',
                MemberStatus::Leaving => 'L',
            };
            let load = if v.member.address == topology.local {
                human_bytes(local_load)
            } else {
                v.load.map(human_bytes).unwrap_or_else(|| "?".to_string())
            };
            let owns = ownership
                .get(&v.member.address)
                .map(|o| format!("{:.1}%", o * 100.0))
                .unwrap_or_else(|| "?".into());
            let _ = writeln!(
                out,
                "{up}{state}  {:<15} {:<11} {:<7} {:<17} {:<37} {}",
                v.member.address.to_string(),
                load,
                v.member.tokens.len(),
                owns,
                uuid(&v.member.host_id),
                v.member.rack
            );
        }
        out.push('\n');
    }
    out
}

/// `nodetool ring`: every token with its owner.
fn ring(node: &AdminNode) -> String {
    let topology = node.topology.clone();
    let mut tokens: Vec<(i64, &crate::gossip::NodeView)> = topology
        .nodes
        .values()
        .flat_map(|v| v.member.tokens.iter().map(move |t| (t.0, v)))
        .collect();
    tokens.sort_by_key(|(t, _)| *t);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{:<15} {:<8} {:<7} {:<8} {:<20}",
        "Address", "Rack", "Status", "State", "Token"
    );
    if let Some((last, _)) = tokens.last() {
        let _ = writeln!(out, "{:>63}", last);
    }
    for (token, v) in tokens {
        let _ = writeln!(
            out,
            "{:<15} {:<8} {:<7} {:<8} {:<20}",
            v.member.address.to_string(),
            v.member.rack,
            if v.alive { "Up" } else { "Down" },
            match v.member.status {
                MemberStatus::Normal => "Normal",
                MemberStatus::Joining => "Joining",
                MemberStatus::Leaving => "Leaving",
            },
            token
        );
    }
    out
}

fn info(node: &AdminNode) -> String {
    let topology = node.topology.clone();
    let config = node.config();
    let stats = node.engine.stats();
    let mut out = String::new();
    let _ = writeln!(out, "{:<24}: {}", "ID", uuid(&config.host_id));
    let _ = writeln!(out, "{:<24}: true", "Gossip active");
    let _ = writeln!(out, "{:<24}: true", "Native Transport active");
    let _ = writeln!(out, "{:<24}: {}", "Load", human_bytes(stats.sst_bytes));
    let _ = writeln!(out, "{:<24}: {}", "Data Center", config.dc);
    let _ = writeln!(out, "{:<24}: {}", "Rack", config.rack);
    let _ = writeln!(out, "{:<24}: {}", "Status", node.status);
    let _ = writeln!(
        out,
        "{:<24}: {} nodes, {} up",
        "Cluster",
        topology.nodes.len(),
        topology.nodes.values().filter(|v| v.alive).count()
    );
    let _ = writeln!(out, "{:<24}: {}", "Hints pending for", node.hints_pending);
    let _ = writeln!(
        out,
        "{:<24}: {}",
        "Token",
        format_args!(
            "(invoke with -T/--tokens to see all {} tokens)",
            node.token_count
        )
    );
    out
}

/// `nodetool describering KEYSPACE`: each range with its replicas.
fn describe_ring(node: &AdminNode, keyspace: &str) -> Response {
    let schema = node.executor().schema();
    let Some(ks) = schema.keyspace(keyspace) else {
        return failed(format!("The keyspace {keyspace}, does not exist"));
    };
    let strategy = Strategy::from_replication(&ks.replication);
    let topology = node.topology.clone();
    let mut out = format!("Schema Version:{}\nTokenRange: \n", uuid(&schema.version));
    for (range, replicas) in topology.ring.ranges(&strategy) {
        let endpoints: Vec<String> = replicas.iter().map(|e| e.to_string()).collect();
        let details: Vec<String> = replicas
            .iter()
            .map(|e| {
                format!(
                    "EndpointDetails(host:{e}, datacenter:{}, rack:{})",
                    topology.dc_of(*e).unwrap_or_default(),
                    topology
                        .nodes
                        .get(e)
                        .map(|v| v.member.rack.clone())
                        .unwrap_or_default()
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "\tTokenRange(start_token:{}, end_token:{}, endpoints:[{}], rpc_endpoints:[{}], endpoint_details:[{}])",
            range.start_exclusive.0,
            range.end_inclusive.0,
            endpoints.join(", "),
            endpoints.join(", "),
            details.join(", ")
        );
    }
    Response::Text(out)
}

/// Who nodetool logs in as (`-u`, `-pw`).
pub struct Credentials {
    pub username: String,
    pub password: String,
}

/// Sends one admin command to the node's admin port at `address`
/// (nodetool), over TLS when `tls` is given (the node's
/// `server_encryption_options`: its truststore, and the certificate
/// presented), logged in as `credentials` if given, and returns its answer.
pub fn call(
    address: std::net::SocketAddr,
    command: AdminCommand,
    tls: Option<&crate::tls::InternodeTls>,
    credentials: Option<&Credentials>,
) -> Result<String, NodetoolError> {
    let timeout = listener::ADMIN_SILENCE_LIMIT;
    let stream = std::net::TcpStream::connect_timeout(&address, std::time::Duration::from_secs(5))
        .map_err(|source| NodetoolError::Connect { address, source })?;
    stream.set_read_timeout(Some(timeout))?;
    let local = stream.local_addr()?.ip();
    let session = |stream: &mut dyn ReadWrite| -> Result<String, NodetoolError> {
        let hello = crate::message::Hello {
            magic: crate::message::HELLO_MAGIC,
            cluster_name: String::new(),
            from: local,
        };
        send(stream, &crate::message::encode_frame(&hello), address)?;
        if let Some(c) = credentials {
            let login = crate::message::Request::Login {
                username: c.username.clone(),
                password: c.password.clone(),
            };
            if let Response::Error(e) = exchange(stream, 1, login, address)? {
                return Err(NodetoolError::Refused(e));
            }
        }
        match exchange(stream, 2, crate::message::Request::Admin(command), address)? {
            Response::Text(text) => Ok(text),
            Response::Error(e) => Err(NodetoolError::Refused(e)),
            other => Err(NodetoolError::UnexpectedAnswer(Box::new(other))),
        }
    };
    match tls {
        None => session(&mut { stream }),
        Some(tls) => {
            let server = rustls::pki_types::ServerName::IpAddress(address.ip().into());
            let connection = rustls::ClientConnection::new(tls.client.clone(), server)
                .map_err(|source| NodetoolError::Tls { address, source })?;
            session(&mut rustls::StreamOwned::new(connection, stream))
        }
    }
}

/// A connection nodetool reads and writes, plain or TLS.
trait ReadWrite: std::io::Read + std::io::Write {}
impl<T: std::io::Read + std::io::Write> ReadWrite for T {}

fn send(
    stream: &mut dyn ReadWrite,
    bytes: &[u8],
    address: std::net::SocketAddr,
) -> Result<(), NodetoolError> {
    stream
        .write_all(bytes)
        .and_then(|()| stream.flush())
        .map_err(|source| NodetoolError::Send { address, source })
}

/// Sends one request and reads its answer (past the `Running` frames of
/// a command that takes a while).
fn exchange(
    stream: &mut dyn ReadWrite,
    id: u64,
    body: crate::message::Request,
    address: std::net::SocketAddr,
) -> Result<Response, NodetoolError> {
    use crate::message::{decode_body, encode_frame, frame_length, Envelope, MAX_FRAME_BYTES};
    send(
        stream,
        &encode_frame(&Envelope::Request { id, body }),
        address,
    )?;
    loop {
        let mut header = [0u8; 4];
        stream
            .read_exact(&mut header)
            .map_err(|source| NodetoolError::NoAnswer { address, source })?;
        let len = frame_length(header, MAX_FRAME_BYTES)?;
        let mut body = vec![0u8; len];
        stream.read_exact(&mut body)?;
        match decode_body::<Envelope>(&body)? {
            Envelope::Response {
                body: Response::Running,
                ..
            } => continue,
            Envelope::Response { body, .. } => return Ok(body),
            other => return Err(NodetoolError::UnexpectedFrame(Box::new(other))),
        }
    }
}

/// `nodetool repair`'s options and names (Cassandra's spellings, `-st`
/// and `-pr` included) as a command.
pub fn repair_command(args: &[String]) -> Result<AdminCommand, RepairArgsError> {
    let mut primary_range = false;
    let (mut start, mut end) = (None, None);
    let mut names = Vec::new();
    let mut words = args.iter().map(String::as_str);
    while let Some(word) = words.next() {
        let mut token = |what: &'static str| -> Result<i64, RepairArgsError> {
            let value = words.next().ok_or_else(|| RepairArgsError::MissingToken {
                option: word.to_string(),
                what,
            })?;
            value
                .parse()
                .map_err(|_| RepairArgsError::NotAToken(value.to_string()))
        };
        match word {
            "-pr" | "--partitioner-range" => primary_range = true,
            "-full" | "--full" => {}
            "-st" | "--start-token" => start = Some(token("start")?),
            "-et" | "--end-token" => end = Some(token("end")?),
            option if option.starts_with('-') => {
                return Err(RepairArgsError::UnsupportedOption(option.to_string()))
            }
            name => names.push(name.to_string()),
        }
    }
    let range = match (start, end) {
        (None, None) => None,
        (Some(s), Some(e)) => Some(TokenRange {
            start_exclusive: Token(s),
            end_inclusive: Token(e),
        }),
        _ => return Err(RepairArgsError::HalfRange),
    };
    if primary_range && range.is_some() {
        return Err(RepairArgsError::PrimaryRangeWithRange);
    }
    let mut names = names.into_iter();
    Ok(AdminCommand::Repair {
        keyspace: names.next(),
        tables: names.collect(),
        primary_range,
        range,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &str) -> Result<AdminCommand, RepairArgsError> {
        let args: Vec<String> = words.split_whitespace().map(str::to_string).collect();
        let rest = args.strip_prefix(&["repair".to_string()]);
        repair_command(rest.expect("a repair command"))
    }

    #[test]
    fn repair_options() {
        assert_eq!(
            parse("repair -full ks t1 t2"),
            Ok(AdminCommand::Repair {
                keyspace: Some("ks".into()),
                tables: vec!["t1".into(), "t2".into()],
                primary_range: false,
                range: None,
            })
        );
        assert_eq!(
            parse("repair -st -5 --end-token 7 ks"),
            Ok(AdminCommand::Repair {
                keyspace: Some("ks".into()),
                tables: Vec::new(),
                primary_range: false,
                range: Some(TokenRange {
                    start_exclusive: Token(-5),
                    end_inclusive: Token(7),
                }),
            })
        );
        assert!(matches!(
            parse("repair -pr"),
            Ok(AdminCommand::Repair {
                primary_range: true,
                ..
            })
        ));
        for bad in [
            "repair -st 5",
            "repair -st x -et 5",
            "repair -et",
            "repair -pr -st 1 -et 2",
            "repair --in-local-dc",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn snapshot_tags_stay_inside_the_snapshots_directory() {
        for good in ["1764000000000", "before-upgrade", "nightly_2026.11.25"] {
            assert!(check_snapshot_tag(good).is_ok(), "{good}");
        }
        let long = "x".repeat(256);
        for bad in [
            "", "..", ".", "../x", "/tmp/x", "a/b", "a\\b", ".hidden", "a:b", "a\0b", "a\nb", &long,
        ] {
            assert!(check_snapshot_tag(bad).is_err(), "{bad:?}");
        }
    }
}

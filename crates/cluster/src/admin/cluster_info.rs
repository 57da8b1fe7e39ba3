//! `nodetool version`, `describecluster` and `getendpoints`.

use std::collections::BTreeMap;
use std::fmt::Write;

use rocksandra_data::Token;

use super::AdminNode;
use super::{failed, tables::unknown_keyspace, uuid};
use crate::gossip::NodeView;
use crate::message::Response;
use crate::ring::{MemberStatus, Strategy};

/// `nodetool version`: the Cassandra release this node speaks for.
pub(crate) fn version() -> Response {
    Response::Text(format!(
        "ReleaseVersion: {}\n",
        rocksandra_query::RELEASE_VERSION
    ))
}

/// The snitch's Java class name, as Cassandra prints it.
fn snitch_class(configured: &str) -> String {
    if configured.contains('.') {
        configured.to_string()
    } else {
        format!("org.apache.cassandra.locator.{configured}")
    }
}

/// `nodetool describecluster`: name, snitch, partitioner, the schema
/// version each node gossips, node counts by state and datacenter, and
/// the keyspaces' replication. Cassandra's "Database versions" section
/// is left out: nodes do not gossip their release.
pub(crate) fn describe_cluster(node: &AdminNode) -> Response {
    let config = node.config();
    let mut out = String::from("Cluster Information:\n");
    let _ = writeln!(out, "\tName: {}", config.cluster_name);
    let _ = writeln!(out, "\tSnitch: {}", snitch_class(&config.endpoint_snitch));
    let _ = writeln!(out, "\tDynamicEndPointSnitch: disabled");
    let _ = writeln!(out, "\tPartitioner: {}", rocksandra_query::PARTITIONER);
    out.push_str(&schema_versions(node));
    out.push_str(&node_counts(node));
    out.push_str(&keyspaces(node));
    Response::Text(out)
}

/// `\t\tVERSION: [addresses]` per schema version; unreachable nodes under
/// `UNREACHABLE`, as Cassandra groups them.
fn schema_versions(node: &AdminNode) -> String {
    let topology = node.topology.clone();
    let mut by_version: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for view in topology.nodes.values() {
        let version = if view.alive {
            uuid(&view.schema_version)
        } else {
            "UNREACHABLE".into()
        };
        by_version
            .entry(version)
            .or_default()
            .push(view.member.address.to_string());
    }
    let mut out = String::from("\tSchema versions:\n");
    for (version, addresses) in by_version {
        let _ = writeln!(out, "\t\t{version}: [{}]\n", addresses.join(", "));
    }
    out
}

fn node_counts(node: &AdminNode) -> String {
    let topology = node.topology.clone();
    let views: Vec<_> = topology.nodes.values().collect();
    let count = |f: fn(&NodeView) -> bool| views.iter().filter(|v| f(v)).count();
    let mut out = String::from("Stats for all nodes:\n");
    let _ = writeln!(out, "\tLive: {}", count(|v| v.alive));
    let _ = writeln!(
        out,
        "\tJoining: {}",
        count(|v| v.member.status == MemberStatus::Joining)
    );
    let _ = writeln!(out, "\tMoving: 0");
    let _ = writeln!(
        out,
        "\tLeaving: {}",
        count(|v| v.member.status == MemberStatus::Leaving)
    );
    let _ = writeln!(out, "\tUnreachable: {}", count(|v| !v.alive));
    let mut by_dc: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for v in &views {
        let entry = by_dc.entry(v.member.dc.as_str()).or_default();
        entry.0 += 1;
        entry.1 += usize::from(!v.alive);
    }
    out.push_str("\nData Centers: \n");
    for (dc, (nodes, down)) in by_dc {
        let _ = writeln!(out, "\t{dc} #Nodes: {nodes} #Down: {down}");
    }
    out
}

fn keyspaces(node: &AdminNode) -> String {
    let schema = node.executor().schema();
    let mut out = String::from("\nKeyspaces:\n");
    for (name, keyspace) in &schema.keyspaces {
        let class = keyspace
            .replication
            .get("class")
            .map(String::as_str)
            .unwrap_or("?");
        let options: Vec<String> = keyspace
            .replication
            .iter()
            .filter(|(k, _)| k.as_str() != "class")
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(
            out,
            "\t{name} -> Replication class: {class} {{{}}}",
            options.join(", ")
        );
    }
    out
}

/// `nodetool getendpoints KEYSPACE TABLE KEY`: the replicas of the key's
/// token, one address a line.
pub(crate) fn get_endpoints(node: &AdminNode, keyspace: &str, table: &str, key: &str) -> Response {
    let schema = node.executor().schema();
    let Some(ks) = schema.keyspace(keyspace) else {
        return failed(unknown_keyspace(keyspace));
    };
    let Some(table) = ks.tables.get(table) else {
        return failed(format!("Unknown table '{table}' in keyspace '{keyspace}'"));
    };
    let key = match rocksandra_query::rows::partition_key_from_text(table, key) {
        Ok(key) => key,
        Err(e) => return failed(e),
    };
    let strategy = Strategy::from_replication(&ks.replication);
    let replicas = node.topology.replicas(&strategy, Token::murmur3(&key));
    let mut out = String::new();
    for address in replicas {
        let _ = writeln!(out, "{address}");
    }
    Response::Text(out)
}

//! `nodetool gossipinfo`: every endpoint's gossip state in Cassandra's
//! layout (`/ADDRESS`, `generation`, `heartbeat`, then `NAME:VERSION:VALUE`
//! lines), this node's keys under Cassandra's application state names.

use std::fmt::Write;

use rocksandra_data::value::java_double;

use crate::gossip::{self, EndpointState};

/// A 32-hex-digit id (host id, schema version) as a UUID's text.
fn uuid_text(hex: &str) -> Option<String> {
    gossip::parse_hex16(hex).map(|bytes| super::uuid(&bytes))
}

/// Cassandra's STATUS value: the state and the first token (`BOOT` for
/// a joining node, as Cassandra calls bootstrapping).
fn status_text(status: &str, tokens: &str) -> String {
    let first = tokens.split(',').next().unwrap_or_default();
    let state = match status {
        gossip::STATUS_JOINING => "BOOT",
        other => other,
    };
    format!("{state},{first}")
}

/// The application states, in Cassandra's order, that this endpoint's
/// keys give: (name, version, value).
fn application_states(state: &EndpointState) -> Vec<(&'static str, u64, String)> {
    let get = |key: &str| state.values.get(key);
    let mut lines = Vec::new();
    let mut push = |name, entry: Option<(u64, String)>| {
        if let Some((version, value)) = entry {
            lines.push((name, version, value));
        }
    };
    let tokens = get(gossip::KEY_TOKENS).map(|(_, t)| t.as_str());
    push(
        "STATUS",
        get(gossip::KEY_STATUS).map(|(v, s)| (*v, status_text(s, tokens.unwrap_or_default()))),
    );
    push(
        "LOAD",
        get(gossip::KEY_LOAD)
            .and_then(|(v, l)| Some((*v, java_double(l.parse::<u64>().ok()? as f64)))),
    );
    push(
        "SCHEMA",
        get(gossip::KEY_SCHEMA_VERSION).and_then(|(v, s)| Some((*v, uuid_text(s)?))),
    );
    push("DC", get(gossip::KEY_DC).cloned());
    push("RACK", get(gossip::KEY_RACK).cloned());
    push("RELEASE_VERSION", get(gossip::KEY_RELEASE).cloned());
    push("RPC_ADDRESS", get(gossip::KEY_RPC_ADDRESS).cloned());
    push(
        "HOST_ID",
        get(gossip::KEY_HOST_ID).and_then(|(v, h)| Some((*v, uuid_text(h)?))),
    );
    push(
        "NATIVE_ADDRESS_AND_PORT",
        match (get(gossip::KEY_RPC_ADDRESS), get(gossip::KEY_NATIVE_PORT)) {
            (Some((_, address)), Some((version, port))) => {
                Some((*version, format!("{address}:{port}")))
            }
            _ => None,
        },
    );
    push("DISK_USAGE", get(gossip::KEY_DISK_USAGE).cloned());
    push(
        "TOKENS",
        get(gossip::KEY_TOKENS).map(|(v, _)| (*v, "<hidden>".to_string())),
    );
    lines
}

/// The whole answer: each endpoint by address, then the blank line
/// Cassandra's nodetool prints after it all. The generation is in
/// seconds, as Cassandra's.
pub(crate) fn format(states: &[EndpointState]) -> String {
    let mut out = String::new();
    for state in states {
        let _ = writeln!(out, "/{}", state.address);
        let _ = writeln!(out, "  generation:{}", state.generation / 1000);
        let _ = writeln!(out, "  heartbeat:{}", state.heartbeat);
        for (name, version, value) in application_states(state) {
            let _ = writeln!(out, "  {name}:{version}:{value}");
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn endpoint(address: &str, values: &[(&str, u64, &str)]) -> EndpointState {
        EndpointState {
            address: address.parse().expect("address"),
            generation: 1_795_908_088_123,
            heartbeat: 52,
            values: values
                .iter()
                .map(|(k, v, value)| (k.to_string(), (*v, value.to_string())))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    #[test]
    fn endpoints_in_cassandras_layout() {
        let a = endpoint(
            "127.0.0.1",
            &[
                ("host_id", 1, "873110b2613b4fa7b896c2c7f77c1295"),
                ("dc", 2, "datacenter1"),
                ("rack", 3, "rack1"),
                ("tokens", 4, "-1017826087261203451,42"),
                ("status", 9, "NORMAL"),
                ("rpc_address", 5, "127.0.0.1"),
                ("native_port", 6, "9042"),
                ("schema_version", 7, "d03783d7b4683c1a82f18e30b2edde8b"),
                ("schema_epoch", 8, "3"),
                ("release_version", 10, "5.0.6"),
                ("load", 16, "68028"),
            ],
        );
        let b = endpoint("127.0.0.2", &[("status", 2, "JOINING"), ("tokens", 1, "7")]);
        assert_eq!(
            format(&[a, b]),
            "/127.0.0.1\n  generation:1795908088\n  heartbeat:52\n\
             \x20 STATUS:9:NORMAL,-1017826087261203451\n  LOAD:16:68028.0\n\
             \x20 SCHEMA:7:d03783d7-b468-3c1a-82f1-8e30b2edde8b\n  DC:2:datacenter1\n\
             \x20 RACK:3:rack1\n  RELEASE_VERSION:10:5.0.6\n  RPC_ADDRESS:5:127.0.0.1\n\
             \x20 HOST_ID:1:873110b2-613b-4fa7-b896-c2c7f77c1295\n\
             \x20 NATIVE_ADDRESS_AND_PORT:6:127.0.0.1:9042\n  TOKENS:4:<hidden>\n\
             /127.0.0.2\n  generation:1795908088\n  heartbeat:52\n\
             \x20 STATUS:2:BOOT,7\n  TOKENS:1:<hidden>\n\n"
        );
    }

    #[test]
    fn a_node_alone_prints_itself() {
        let state = gossip::LocalState {
            host_id: [1; 16],
            dc: "dc1".into(),
            rack: "r1".into(),
            tokens: vec![rocksandra_data::Token(5)],
            status: gossip::STATUS_NORMAL,
            rpc_address: "127.0.0.1".parse().expect("address"),
            native_port: 9042,
            schema_version: [2; 16],
            schema_epoch: 1,
        };
        let address = "127.0.0.1".parse().expect("address");
        let text = format(&[EndpointState::unpublished(address, 4_000, &state)]);
        assert!(
            text.starts_with("/127.0.0.1\n  generation:4\n  heartbeat:0\n  STATUS:1:NORMAL,5\n")
        );
        assert!(text.contains("  HOST_ID:1:01010101-0101-0101-0101-010101010101\n"));
        assert!(text.ends_with("  TOKENS:1:<hidden>\n\n"));
        assert!(!text.contains("LOAD"), "a node alone publishes no load");
    }
}

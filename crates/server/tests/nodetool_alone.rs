//! nodetool against a node running alone (no seeds), over its admin port
//! (`Service`, RocksDB in a temporary directory): the ring is the node
//! itself, the table commands act on its storage, the cluster's commands
//! say why they have nothing to do, and with PasswordAuthenticator only a
//! superuser's login opens the port.

use rocksandra_cluster::admin::{call, Credentials};
use rocksandra_cluster::message::{AdminCommand, TableSelection};
use rocksandra_server::config::Config;
use rocksandra_wire::ProtocolVersion;

mod common;
use common::{query, Client, Node};

async fn nodetool(
    node: &Node,
    command: AdminCommand,
    credentials: Option<Credentials>,
) -> Result<String, String> {
    // The answer, or the words nodetool would print.
    let address = node.admin.expect("the admin port is on");
    tokio::task::spawn_blocking(move || call(address, command, None, credentials.as_ref()))
        .await
        .expect("joins")
        .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_alone_answers_nodetool() {
    let config = Config {
        prometheus_port: None,
        ..Config::default()
    };
    let node = Node::start(config).await;
    let mut client = Client::ready(node.native, ProtocolVersion::V5).await;
    client
        .request(
            2,
            query("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"),
        )
        .await;
    client
        .request(3, query("CREATE TABLE ks.t (k int PRIMARY KEY, v int)"))
        .await;
    client
        .request(4, query("INSERT INTO ks.t (k, v) VALUES (1, 1)"))
        .await;

    let status = nodetool(&node, AdminCommand::Status { keyspace: None }, None)
        .await
        .expect("status");
    assert!(status.contains("Datacenter: datacenter1"), "{status}");
    assert!(status.contains("UN  127.0.0.1"), "{status}");
    assert!(status.contains("100.0%"), "{status}");

    let info = nodetool(&node, AdminCommand::Info, None)
        .await
        .expect("info");
    assert!(info.contains("NORMAL"), "{info}");

    let flush = AdminCommand::Flush(TableSelection {
        keyspace: Some("ks".into()),
        tables: vec!["t".into()],
    });
    nodetool(&node, flush, None).await.expect("flush");
    let stats = nodetool(
        &node,
        AdminCommand::TableStats {
            names: vec!["ks.t".into()],
        },
        None,
    )
    .await
    .expect("tablestats");
    assert!(stats.contains("Table: t"), "{stats}");

    // The process's logger is the binary's (tests/logging.rs): a node
    // started without it says so.
    let levels = nodetool(&node, AdminCommand::GetLoggingLevels, None).await;
    assert!(
        levels
            .as_ref()
            .is_err_and(|e| e.contains("not under nodetool's control")),
        "{levels:?}"
    );

    let refused = nodetool(&node, AdminCommand::Decommission { force: false }, None).await;
    assert_eq!(
        refused,
        Err("no other normal nodes in the ring; decommission would be pointless".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_password_authentication_only_a_superuser_gets_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = dir.path().join("node.yaml");
    std::fs::write(
        &yaml,
        "authenticator: PasswordAuthenticator\nauth_bcrypt_gensalt_log2_rounds: 4\n\
         prometheus_port: 0\n",
    )
    .expect("writes");
    let config = Config::from_file(&yaml).expect("parses");
    let node = Node::start(config).await;
    let login = |username: &str, password: &str| {
        Some(Credentials {
            username: username.into(),
            password: password.into(),
        })
    };
    let anonymous = nodetool(&node, AdminCommand::Version, None).await;
    assert!(
        anonymous
            .as_ref()
            .is_err_and(|e| e.contains("Credentials required")),
        "{anonymous:?}"
    );
    let wrong = nodetool(&node, AdminCommand::Version, login("cassandra", "nope")).await;
    assert!(
        wrong.as_ref().is_err_and(|e| e.contains("are incorrect")),
        "{wrong:?}"
    );
    let version = nodetool(
        &node,
        AdminCommand::Version,
        login("cassandra", "cassandra"),
    )
    .await
    .expect("a superuser gets in");
    assert!(version.starts_with("ReleaseVersion: "), "{version}");
}

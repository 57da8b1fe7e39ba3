//! Driver tests: the Rust `scylla` driver against a real 3-node Rocksandra
//! cluster: node discovery, token ownership, token-aware routing, and
//! failover when a node is killed with kill -9 and restarted.
//!
//! These tests are driven by tests/cluster/test_scylla_cluster.py, which
//! starts the nodes, creates the keyspaces below, writes the server's ring
//! (`nodetool describering`) to a file, runs this binary with
//! `--test-threads=1`, and kills and restarts a node when the failover test
//! asks for it. The environment it passes:
//!
//! - `ROCKSANDRA_CLUSTER_NODES`: the nodes' addresses, `ip1,ip2,ip3`; the
//!   first is the driver's only contact point.
//! - `ROCKSANDRA_CLUSTER_PORT`: their CQL port (default 9042).
//! - `ROCKSANDRA_CLUSTER_RING`: a file with the server's replicas of
//!   `RF2_KEYSPACE`, one range a line: `start_token end_token ip,ip`.
//! - `ROCKSANDRA_CLUSTER_SIGNALS`: a directory the two sides talk through by
//!   creating empty files (see `failover_at_quorum_when_a_node_is_killed`).
//! - `ROCKSANDRA_CLUSTER_VICTIM`: the node the pytest kills.
//!
//! Without `ROCKSANDRA_CLUSTER_NODES` every test returns at once and says so:
//! there is no cluster to test against.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::{join_all, try_join_all};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::cluster::metadata::Strategy;
use scylla::cluster::Node;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::response::query_result::QueryResult;
use scylla::routing::Token;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::{Consistency, Statement};
use uuid::Uuid;

/// Keyspaces (each with `t (k int PRIMARY KEY, v text)`) the pytest creates.
const RF2_KEYSPACE: &str = "scylla_rf2";
const RF3_KEYSPACE: &str = "scylla_rf3";
const DATACENTER: &str = "datacenter1";
const RACK: &str = "rack1";

// ---------------------------------------------------------------- environment

struct ClusterUnderTest {
    nodes: Vec<IpAddr>,
    port: u16,
}

/// The cluster the pytest started, or `None` (and a note on stderr) when
/// this binary runs on its own.
fn cluster_under_test(test: &str) -> Option<ClusterUnderTest> {
    let Ok(list) = std::env::var("ROCKSANDRA_CLUSTER_NODES") else {
        // Straight to stderr: libtest would swallow `eprintln!` of a passing test.
        let note = format!(
            "{test}: NOT RUN: ROCKSANDRA_CLUSTER_NODES is not set. This test needs a \
             3-node cluster and is driven by tests/cluster/test_scylla_cluster.py.\n"
        );
        let _ = std::io::stderr().write_all(note.as_bytes());
        return None;
    };
    let nodes: Vec<IpAddr> = list
        .split(',')
        .map(|ip| {
            ip.trim()
                .parse()
                .unwrap_or_else(|e| panic!("ROCKSANDRA_CLUSTER_NODES: {ip:?}: {e}"))
        })
        .collect();
    assert_eq!(nodes.len(), 3, "ROCKSANDRA_CLUSTER_NODES={list}");
    let port = std::env::var("ROCKSANDRA_CLUSTER_PORT")
        .map(|p| {
            p.parse()
                .expect("ROCKSANDRA_CLUSTER_PORT must be a port number")
        })
        .unwrap_or(9042);
    Some(ClusterUnderTest { nodes, port })
}

fn required_env(name: &str) -> String {
    std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} must be set with ROCKSANDRA_CLUSTER_NODES"))
}

/// A session knowing only the first node; it must find the others itself.
async fn connect(cluster: &ClusterUnderTest) -> Session {
    let contact_point = format!("{}:{}", cluster.nodes[0], cluster.port);
    let session = SessionBuilder::new()
        .known_node(&contact_point)
        .connection_timeout(Duration::from_secs(5))
        .build()
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {contact_point}: {e}"));
    wait_for(
        "the driver to connect to every node",
        Duration::from_secs(15),
        || {
            let state = session.get_cluster_state();
            let nodes = state.get_nodes_info();
            nodes.len() == cluster.nodes.len() && nodes.iter().all(|n| n.is_connected())
        },
    )
    .await;
    session
}

async fn wait_for(what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn coordinator_ip(result: &QueryResult) -> IpAddr {
    result.request_coordinator().node().address.ip()
}

fn node_by_ip(session: &Session, ip: IpAddr) -> Arc<Node> {
    session
        .get_cluster_state()
        .get_nodes_info()
        .iter()
        .find(|n| n.address.ip() == ip)
        .unwrap_or_else(|| panic!("the driver does not know {ip}"))
        .clone()
}

// ---------------------------------------------------------------- the server's ring

/// One line of `nodetool describering`: the replicas of the tokens in
/// (start, end], primary replica first.
#[derive(Debug)]
struct ServerRange {
    start: i64,
    end: i64,
    endpoints: Vec<IpAddr>,
}

impl ServerRange {
    fn contains(&self, token: Token) -> bool {
        let t = token.value();
        if self.start < self.end {
            self.start < t && t <= self.end
        } else {
            t > self.start || t <= self.end // wraps around
        }
    }
}

fn read_server_ring(path: &Path) -> Vec<ServerRange> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("reading the server ring {}: {e}", path.display()));
    let ranges: Vec<ServerRange> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(fields.len(), 3, "server ring line {line:?}");
            let token = |s: &str| -> i64 {
                s.parse()
                    .unwrap_or_else(|e| panic!("token {s:?} in {line:?}: {e}"))
            };
            ServerRange {
                start: token(fields[0]),
                end: token(fields[1]),
                endpoints: fields[2]
                    .split(',')
                    .map(|ip| {
                        ip.parse()
                            .unwrap_or_else(|e| panic!("{ip:?} in {line:?}: {e}"))
                    })
                    .collect(),
            }
        })
        .collect();
    assert!(
        !ranges.is_empty(),
        "empty server ring in {}",
        path.display()
    );
    ranges
}

/// The server's replicas of `token`, primary first.
fn server_replicas(ring: &[ServerRange], token: Token) -> &[IpAddr] {
    let owners: Vec<&ServerRange> = ring.iter().filter(|r| r.contains(token)).collect();
    assert_eq!(owners.len(), 1, "token {token:?} is in ranges {owners:?}");
    &owners[0].endpoints
}

// ---------------------------------------------------------------- 1. discovery and ownership

#[tokio::test(flavor = "multi_thread")]
async fn driver_discovers_cluster_and_token_ownership() {
    let Some(cluster) = cluster_under_test("driver_discovers_cluster_and_token_ownership") else {
        return;
    };
    let ring = read_server_ring(Path::new(&required_env("ROCKSANDRA_CLUSTER_RING")));
    let session = connect(&cluster).await;
    let state = session.get_cluster_state();

    // Three nodes, found from one contact point, with the topology they report.
    let nodes = state.get_nodes_info();
    let found: BTreeSet<IpAddr> = nodes.iter().map(|n| n.address.ip()).collect();
    let expected: BTreeSet<IpAddr> = cluster.nodes.iter().copied().collect();
    assert_eq!(found, expected, "nodes: {nodes:?}");
    for node in nodes {
        assert_eq!(node.address.port(), cluster.port, "{node:?}");
        assert_eq!(node.datacenter.as_deref(), Some(DATACENTER), "{node:?}");
        assert_eq!(node.rack.as_deref(), Some(RACK), "{node:?}");
    }
    assert_eq!(state.replica_locator().datacenter_names(), [DATACENTER]);

    // What the driver learnt from the contact point's system.peers agrees
    // with what each node says of itself in system.local.
    let driver_ring = state.replica_locator().ring();
    for node in nodes {
        let mut local = Statement::new("SELECT host_id, data_center, tokens FROM system.local");
        local.set_load_balancing_policy(Some(SingleTargetLoadBalancingPolicy::new(
            NodeIdentifier::Node(node.clone()),
            None,
        )));
        let result = session
            .query_unpaged(local, &[])
            .await
            .unwrap_or_else(|e| panic!("system.local on {}: {e}", node.address));
        assert_eq!(
            coordinator_ip(&result),
            node.address.ip(),
            "pinned query went elsewhere"
        );
        let (host_id, data_center, tokens): (Uuid, String, BTreeSet<String>) = result
            .into_rows_result()
            .expect("rows")
            .single_row()
            .expect("one row in system.local");
        assert_eq!(host_id, node.host_id, "{}", node.address);
        assert_eq!(data_center, DATACENTER);
        let in_driver_ring: BTreeSet<String> = driver_ring
            .iter()
            .filter(|(_, owner)| owner.host_id == node.host_id)
            .map(|(token, _)| token.value().to_string())
            .collect();
        assert!(!tokens.is_empty(), "{} owns no token", node.address);
        assert_eq!(in_driver_ring, tokens, "tokens of {}", node.address);
    }

    // The driver's ring is the server's: the same tokens, each owned by the
    // primary replica of the range it ends.
    let distinct: BTreeSet<i64> = driver_ring.iter().map(|(t, _)| t.value()).collect();
    assert_eq!(
        distinct.len(),
        driver_ring.len(),
        "two nodes own the same token"
    );
    assert_eq!(driver_ring.len(), ring.len());
    for (token, owner) in driver_ring.iter() {
        let range = ring
            .iter()
            .find(|r| r.end == token.value())
            .unwrap_or_else(|| panic!("no server range ends at driver token {token:?}"));
        assert_eq!(
            range.endpoints[0],
            owner.address.ip(),
            "primary of {range:?}"
        );
    }

    // Replicas the driver computes for keys are the ones the server names.
    let keyspace = state.get_keyspace(RF2_KEYSPACE).expect("the RF 2 keyspace");
    assert_eq!(
        keyspace.strategy,
        Strategy::SimpleStrategy {
            replication_factor: 2
        }
    );
    let mut primaries: BTreeMap<IpAddr, usize> = BTreeMap::new();
    for k in -1000_i32..1000 {
        let token = state
            .compute_token(RF2_KEYSPACE, "t", &(k,))
            .expect("token");
        let driver: Vec<IpAddr> = state
            .get_token_endpoints(RF2_KEYSPACE, "t", token)
            .iter()
            .map(|(node, _)| node.address.ip())
            .collect();
        let server = server_replicas(&ring, token);
        assert_eq!(driver, server, "replicas of key {k} (token {token:?})");
        *primaries.entry(server[0]).or_default() += 1;
    }
    assert_eq!(
        primaries.len(),
        3,
        "2000 keys all on a few nodes: {primaries:?}"
    );
}

// ---------------------------------------------------------------- 2. routing

#[tokio::test(flavor = "multi_thread")]
async fn prepared_statements_are_routed_to_replicas() {
    let Some(cluster) = cluster_under_test("prepared_statements_are_routed_to_replicas") else {
        return;
    };
    let ring = read_server_ring(Path::new(&required_env("ROCKSANDRA_CLUSTER_RING")));
    let session = connect(&cluster).await;

    let insert = session
        .prepare(format!("INSERT INTO {RF2_KEYSPACE}.t (k, v) VALUES (?, ?)"))
        .await
        .expect("prepare insert");
    let select = session
        .prepare(format!("SELECT v FROM {RF2_KEYSPACE}.t WHERE k = ?"))
        .await
        .expect("prepare select");
    assert!(insert.is_token_aware() && select.is_token_aware());

    // With RF 2 of 3 nodes, a coordinator picked without the token is not a
    // replica a third of the time; token-aware routing must never miss.
    let mut coordinated: BTreeMap<IpAddr, usize> = BTreeMap::new();
    for k in 0_i32..300 {
        let value = format!("routed{k}");
        let token = insert
            .calculate_token(&(k, &value))
            .expect("calculate token")
            .expect("insert is token aware");
        let replicas = server_replicas(&ring, token);

        let written = session
            .execute_unpaged(&insert, (k, &value))
            .await
            .unwrap_or_else(|e| panic!("insert {k}: {e}"));
        let read = session
            .execute_unpaged(&select, (k,))
            .await
            .unwrap_or_else(|e| panic!("select {k}: {e}"));
        for (what, coordinator) in [
            ("insert", coordinator_ip(&written)),
            ("select", coordinator_ip(&read)),
        ] {
            assert!(
                replicas.contains(&coordinator),
                "{what} of key {k} (token {token:?}) coordinated by {coordinator}, \
                 replicas {replicas:?}"
            );
            *coordinated.entry(coordinator).or_default() += 1;
        }
        let (v,): (String,) = read
            .into_rows_result()
            .expect("rows")
            .single_row()
            .expect("one row");
        assert_eq!(v, value);
    }
    assert_eq!(coordinated.len(), 3, "coordinators: {coordinated:?}");

    // The control: the same check fails for statements without routing
    // information, which go to any node.
    let mut off_replica = 0;
    for k in 0_i32..60 {
        let token = insert
            .calculate_token(&(k, ""))
            .expect("token")
            .expect("token aware");
        let result = session
            .query_unpaged(format!("SELECT v FROM {RF2_KEYSPACE}.t WHERE k = {k}"), &[])
            .await
            .unwrap_or_else(|e| panic!("unprepared select {k}: {e}"));
        if !server_replicas(&ring, token).contains(&coordinator_ip(&result)) {
            off_replica += 1;
        }
    }
    assert!(
        off_replica > 0,
        "60 unrouted requests all hit a replica: the check proves nothing"
    );
    println!(
        "coordinators of routed requests: {coordinated:?}; unrouted off replica: {off_replica}/60"
    );
}

// ---------------------------------------------------------------- 3. failover

/// Requests in flight at once in the failover loop.
const FAILOVER_CONCURRENCY: i32 = 8;
/// Keys written before the pytest is asked to kill the victim.
const KEYS_BEFORE_KILL: usize = 200;
/// Requests the restarted node must coordinate before the loop stops.
const VICTIM_REQUESTS_AFTER_RESTART_MIN: usize = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    /// All nodes up.
    Healthy,
    /// "mid-loop" sent; the victim dies at some point in this phase.
    Killing,
    /// The pytest confirmed the victim is dead ("killed").
    Down,
    /// "restart" sent; the victim comes back at some point in this phase.
    Restarting,
    /// The pytest confirmed the victim is up and every node sees it ("restarted").
    Back,
}

/// The two sides of the kill choreography, through empty files in a directory.
struct Signals {
    dir: PathBuf,
}

impl Signals {
    fn send(&self, name: &str) {
        let path = self.dir.join(name);
        std::fs::write(&path, b"").unwrap_or_else(|e| panic!("signal {}: {e}", path.display()));
        println!("signalled {name}");
    }

    fn received(&self, name: &str) -> bool {
        self.dir.join(name).exists()
    }
}

#[derive(Default, Debug)]
struct PhaseTally {
    operations: usize,
    coordinators: BTreeMap<IpAddr, usize>,
}

/// Writes `key` at QUORUM and reads it back at QUORUM; the coordinators of both.
async fn write_then_read(
    session: &Session,
    insert: &PreparedStatement,
    select: &PreparedStatement,
    key: i32,
) -> Result<[IpAddr; 2], String> {
    let value = format!("v{key}");
    let written = session
        .execute_unpaged(insert, (key, &value))
        .await
        .map_err(|e| format!("write of key {key}: {e}"))?;
    let read = session
        .execute_unpaged(select, (key,))
        .await
        .map_err(|e| format!("read of key {key}: {e}"))?;
    let coordinators = [coordinator_ip(&written), coordinator_ip(&read)];
    let row: Option<(String,)> = read
        .into_rows_result()
        .map_err(|e| format!("read of key {key}: {e}"))?
        .maybe_first_row()
        .map_err(|e| format!("read of key {key}: {e}"))?;
    match row {
        Some((v,)) if v == value => Ok(coordinators),
        other => Err(format!(
            "read of key {key} right after its write gave {other:?}"
        )),
    }
}

fn quorum_idempotent(mut statement: PreparedStatement) -> PreparedStatement {
    statement.set_consistency(Consistency::Quorum);
    statement.set_is_idempotent(true);
    statement
}

/// While the loop writes and reads at QUORUM (RF 3), the pytest kills the
/// victim with kill -9 and later restarts it. No request may fail, none may
/// be coordinated by the victim while it is dead, every acknowledged write
/// must be readable at the end, and the driver must use the victim again
/// once it is back.
#[tokio::test(flavor = "multi_thread")]
async fn failover_at_quorum_when_a_node_is_killed() {
    let Some(cluster) = cluster_under_test("failover_at_quorum_when_a_node_is_killed") else {
        return;
    };
    let signals = Signals {
        dir: PathBuf::from(required_env("ROCKSANDRA_CLUSTER_SIGNALS")),
    };
    let victim: IpAddr = required_env("ROCKSANDRA_CLUSTER_VICTIM")
        .parse()
        .expect("ROCKSANDRA_CLUSTER_VICTIM must be an address");
    assert!(
        cluster.nodes.contains(&victim),
        "victim {victim} is not a node"
    );
    let session = connect(&cluster).await;
    let keyspace = session
        .get_cluster_state()
        .get_keyspace(RF3_KEYSPACE)
        .map(|k| k.strategy.clone());
    assert_eq!(
        keyspace,
        Some(Strategy::SimpleStrategy {
            replication_factor: 3
        })
    );

    let insert = quorum_idempotent(
        session
            .prepare(format!("INSERT INTO {RF3_KEYSPACE}.t (k, v) VALUES (?, ?)"))
            .await
            .expect("prepare insert"),
    );
    let select = quorum_idempotent(
        session
            .prepare(format!("SELECT v FROM {RF3_KEYSPACE}.t WHERE k = ?"))
            .await
            .expect("prepare select"),
    );

    let started = Instant::now();
    let mut phase = Phase::Healthy;
    let mut phase_started = Instant::now();
    let mut tallies: BTreeMap<Phase, PhaseTally> = BTreeMap::new();
    let mut acknowledged: Vec<i32> = Vec::new();
    let mut next_key: i32 = 0;
    loop {
        let keys: Vec<i32> = (next_key..next_key + FAILOVER_CONCURRENCY).collect();
        next_key += FAILOVER_CONCURRENCY;
        let outcomes = join_all(
            keys.iter()
                .map(|&k| write_then_read(&session, &insert, &select, k)),
        )
        .await;
        let tally = tallies.entry(phase).or_default();
        for (key, outcome) in keys.iter().zip(outcomes) {
            let coordinators = outcome.unwrap_or_else(|e| {
                panic!(
                    "{e} (phase {phase:?}, {:?} in, victim {victim})",
                    started.elapsed()
                )
            });
            if phase == Phase::Down {
                assert!(
                    !coordinators.contains(&victim),
                    "key {key}: coordinators {coordinators:?} include the dead {victim}"
                );
            }
            acknowledged.push(*key);
            tally.operations += 1;
            for ip in coordinators {
                *tally.coordinators.entry(ip).or_default() += 1;
            }
        }

        let in_phase = phase_started.elapsed();
        let next = match phase {
            Phase::Healthy if acknowledged.len() >= KEYS_BEFORE_KILL => {
                signals.send("mid-loop");
                Some(Phase::Killing)
            }
            Phase::Killing if signals.received("killed") => Some(Phase::Down),
            Phase::Killing => {
                assert!(
                    in_phase < Duration::from_secs(30),
                    "no \"killed\" signal in 30 s"
                );
                None
            }
            Phase::Down => {
                let noticed = !node_by_ip(&session, victim).is_connected();
                assert!(
                    noticed || in_phase < Duration::from_secs(10),
                    "the driver still has connections to the dead {victim} after 10 s"
                );
                let long_enough = in_phase >= Duration::from_secs(1) && tally.operations >= 100;
                if noticed && long_enough {
                    signals.send("restart");
                    Some(Phase::Restarting)
                } else {
                    None
                }
            }
            Phase::Restarting if signals.received("restarted") => Some(Phase::Back),
            Phase::Restarting => {
                assert!(
                    in_phase < Duration::from_secs(60),
                    "no \"restarted\" signal in 60 s"
                );
                None
            }
            Phase::Back => {
                let used = tally.coordinators.get(&victim).copied().unwrap_or(0);
                if node_by_ip(&session, victim).is_connected()
                    && used >= VICTIM_REQUESTS_AFTER_RESTART_MIN
                {
                    break;
                }
                assert!(
                    in_phase < Duration::from_secs(30),
                    "30 s after the restart the driver sent {used} requests to {victim} \
                     (connected: {})",
                    node_by_ip(&session, victim).is_connected()
                );
                None
            }
            Phase::Healthy => None,
        };
        if let Some(next) = next {
            println!("{:?} -> {next:?} after {:?}", phase, started.elapsed());
            phase = next;
            phase_started = Instant::now();
        }
    }
    for (phase, tally) in &tallies {
        println!(
            "{phase:?}: {} keys, coordinators {:?}",
            tally.operations, tally.coordinators
        );
    }
    assert!(tallies.contains_key(&Phase::Down) && tallies.contains_key(&Phase::Back));

    // Every acknowledged write is there, read back at QUORUM.
    for chunk in acknowledged.chunks(64) {
        let reads = try_join_all(chunk.iter().map(|&k| {
            let select = &select;
            let session = &session;
            async move {
                let row: Option<(String,)> = session
                    .execute_unpaged(select, (k,))
                    .await?
                    .into_rows_result()
                    .expect("rows")
                    .maybe_first_row()
                    .expect("row type");
                Ok::<_, scylla::errors::ExecutionError>((k, row))
            }
        }))
        .await
        .expect("final QUORUM read");
        for (k, row) in reads {
            assert_eq!(
                row,
                Some((format!("v{k}"),)),
                "acknowledged key {k} after failover"
            );
        }
    }
    println!(
        "{} acknowledged writes all read back at QUORUM; loop took {:?}",
        acknowledged.len(),
        started.elapsed()
    );
}

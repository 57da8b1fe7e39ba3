//! The golden CQL suite (tests/golden/cases) against an in-process node over
//! a real socket, in seconds: every case must match at least as many
//! statements as tests/golden/baseline.json says (the same ratchet as
//! tests/golden/runner.py, which stays for the driver-level check).
//!
//! `GOLDEN_CASES=collections,json` runs those cases only;
//! `GOLDEN_PROTOCOL=4` speaks v4 instead of v5; `GOLDEN_ACTUAL_DIR=DIR`
//! writes each case's output to DIR/<case>.out; `GOLDEN_VERBOSE=1` shows
//! the first differing blocks of every case, not only of failing ones.
//!
//! A node per configuration: the cases' `-- golden: server-yaml` lines, and
//! the auth_* cases on one with PasswordAuthenticator and
//! CassandraAuthorizer (caches off), logged in as cassandra.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use rocksandra_server::config::Config;
use rocksandra_wire::ProtocolVersion;

mod common;
mod golden;

use common::Node;
use golden::{block_diff, compare, golden_dir, run_case, Target};

/// The auth_* cases' server, as scripts/test-server.sh starts it.
const AUTH_YAML: [&str; 8] = [
    "authenticator: PasswordAuthenticator",
    "authorizer: CassandraAuthorizer",
    "roles_validity: 0ms",
    "permissions_validity: 0ms",
    "credentials_validity: 0ms",
    "user_defined_functions_enabled: true",
    "dynamic_data_masking_enabled: true",
    "materialized_views_enabled: true",
];

struct Case {
    name: String,
    path: PathBuf,
}

/// What one case gave, against its baseline.
struct Outcome {
    name: String,
    matched: usize,
    expected_blocks: usize,
    baseline: usize,
    report: String,
}

fn selected_cases() -> Vec<Case> {
    let dir = golden_dir().join("cases");
    let wanted: Option<Vec<String>> = std::env::var("GOLDEN_CASES").ok().map(|list| {
        list.split([',', ' '])
            .filter(|s| !s.is_empty())
            .map(|s| s.trim_end_matches(".cql").to_string())
            .collect()
    });
    let mut cases: Vec<Case> = std::fs::read_dir(&dir)
        .expect("tests/golden/cases")
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let name = path.file_stem()?.to_str()?.to_string();
            (path.extension()? == "cql").then_some(Case { name, path })
        })
        .filter(|c| wanted.as_ref().is_none_or(|w| w.contains(&c.name)))
        .collect();
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(wanted) = wanted {
        for name in wanted {
            assert!(cases.iter().any(|c| c.name == name), "no such case: {name}");
        }
    }
    cases
}

/// The yaml lines of the server a case needs.
fn server_yaml(case: &Case, source: &str) -> Vec<String> {
    let mut lines = golden::case::server_yaml(source);
    if case.name.starts_with("auth_") {
        lines.extend(AUTH_YAML.iter().map(|l| l.to_string()));
        lines.sort();
        lines.dedup();
    }
    lines
}

fn baseline() -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(golden_dir().join("baseline.json")).expect("baseline");
    serde_json::from_str(&text).expect("baseline.json is {case: count}")
}

fn protocol_version() -> ProtocolVersion {
    match std::env::var("GOLDEN_PROTOCOL").as_deref() {
        Ok("4") => ProtocolVersion::V4,
        Ok("5") | Err(_) => ProtocolVersion::V5,
        Ok(other) => panic!("GOLDEN_PROTOCOL is 4 or 5, not {other}"),
    }
}

async fn run_one(target: &Target, case: &Case, source: &str, baseline: usize) -> Outcome {
    let started = Instant::now();
    // A task of its own: a case that breaks the connection (the test
    // client panics) fails alone, as runner.py's RUNNER FAILURE.
    let (task_target, task_source) = (target.clone(), source.to_string());
    let run = tokio::spawn(async move { run_case(&task_target, &task_source).await });
    let actual = match run.await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => format!("RUNNER FAILURE: {e}\n"),
        Err(panicked) => format!("RUNNER FAILURE: {panicked}\n"),
    };
    if let Ok(dir) = std::env::var("GOLDEN_ACTUAL_DIR") {
        std::fs::create_dir_all(&dir).expect("GOLDEN_ACTUAL_DIR");
        std::fs::write(
            PathBuf::from(dir).join(format!("{}.out", case.name)),
            &actual,
        )
        .expect("writes the actual output");
    }
    let expected_path = golden_dir().join(format!("expected/{}.out", case.name));
    let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
    let comparison = compare(&expected, &actual);
    let status = if expected == actual { "ok" } else { "differs" };
    let mut report = format!(
        "{:<32} {status} ({:.1}s) {}/{} statements match (baseline {baseline})\n",
        case.name,
        started.elapsed().as_secs_f64(),
        comparison.matched,
        comparison.expected_blocks,
    );
    let verbose = std::env::var("GOLDEN_VERBOSE").is_ok_and(|v| v == "1");
    if comparison.matched < baseline || (verbose && expected != actual) {
        for (i, e, a) in &comparison.first_differences {
            report.push_str(&format!("  block {} (expected -, actual +):\n", i + 1));
            report.push_str(&block_diff(e, a));
        }
    }
    Outcome {
        name: case.name.clone(),
        matched: comparison.matched,
        expected_blocks: comparison.expected_blocks,
        baseline,
        report,
    }
}

/// Runs the cases of one configuration on a node of their own.
async fn run_group(yaml: &[String], cases: &[(&Case, String)]) -> Vec<Outcome> {
    let config = Config::from_yaml(&yaml.join("\n"), "golden server-yaml").expect("yaml");
    let node = Node::start(config).await;
    let auth = yaml.iter().any(|l| l.contains("PasswordAuthenticator"));
    let target = Target {
        address: node.native,
        version: protocol_version(),
        login: auth.then(|| ("cassandra".to_string(), "cassandra".to_string())),
    };
    let baseline = baseline();
    let mut outcomes = Vec::new();
    for (case, source) in cases {
        let count = baseline.get(&case.name).copied().unwrap_or(0);
        outcomes.push(run_one(&target, case, source, count).await);
    }
    node.stop().await;
    outcomes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_cases_match_at_least_their_baseline() {
    let started = Instant::now();
    let mut groups: BTreeMap<Vec<String>, Vec<(&Case, String)>> = BTreeMap::new();
    let cases = selected_cases();
    for case in &cases {
        let source = std::fs::read_to_string(&case.path).expect("case file");
        groups
            .entry(server_yaml(case, &source))
            .or_default()
            .push((case, source));
    }
    let mut outcomes = Vec::new();
    for (yaml, group) in &groups {
        println!("== a node with {yaml:?}");
        let group_outcomes = run_group(yaml, group).await;
        for outcome in &group_outcomes {
            print!("{}", outcome.report);
        }
        outcomes.extend(group_outcomes);
    }
    let matched: usize = outcomes.iter().map(|o| o.matched).sum();
    let total: usize = outcomes.iter().map(|o| o.expected_blocks).sum();
    println!(
        "{} cases, {matched}/{total} statements match ({:.1}s)",
        outcomes.len(),
        started.elapsed().as_secs_f64()
    );
    let above: Vec<String> = outcomes
        .iter()
        .filter(|o| o.matched > o.baseline)
        .map(|o| format!("{} {} > {}", o.name, o.matched, o.baseline))
        .collect();
    if !above.is_empty() {
        println!("above baseline (raise tests/golden/baseline.json): {above:?}");
    }
    let below: Vec<String> = outcomes
        .iter()
        .filter(|o| o.matched < o.baseline)
        .map(|o| format!("{}: {} < baseline {}", o.name, o.matched, o.baseline))
        .collect();
    assert_eq!(outcomes.len(), cases.len(), "every selected case ran");
    assert!(below.is_empty(), "below baseline: {below:#?}");
}

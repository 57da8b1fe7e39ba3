//! The `rocksandra` binary's log files: with a log directory
//! (`CASSANDRA_LOG_DIR` or `--log-dir`) it writes `system.log` there,
//! rotated by size into `system.log.YYYY-MM-DD[.N].gz`, as text or JSON
//! lines, and `rocksandra nodetool setlogginglevel` / `getlogginglevels`
//! change and show the levels of the running node.

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A port nothing listens on right now.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// The node, killed when the test ends, even on a failed assertion.
struct Node {
    child: Child,
    native_port: u16,
    admin_port: u16,
    log: PathBuf,
    stderr: PathBuf,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Node {
    /// Starts the binary in `dir` with `log_flags`, its environment
    /// given `env`, and waits for `system.log` in `logs` to say it serves.
    fn start(dir: &Path, logs: &Path, log_flags: &[&str], env: &[(&str, &Path)]) -> Node {
        let (native_port, admin_port) = (free_port(), free_port());
        let stderr = dir.join("stderr");
        let mut command = Command::new(env!("CARGO_BIN_EXE_rocksandra"));
        command
            .arg("--data-dir")
            .arg(dir.join("data"))
            .args(["--native-port", &native_port.to_string()])
            .args(["--admin-port", &admin_port.to_string()])
            .args(["--storage-port", &free_port().to_string()])
            .args(["--prometheus-port", "0"])
            .args(log_flags)
            .env("RUST_LOG", "info")
            .env_remove("CASSANDRA_LOG_DIR")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).expect("stderr file"));
        for (name, value) in env {
            command.env(name, value);
        }
        let child = command.spawn().expect("the rocksandra binary starts");
        let mut node = Node {
            child,
            native_port,
            admin_port,
            log: logs.join("system.log"),
            stderr,
        };
        node.wait_for("listening for CQL clients");
        node
    }

    /// The rotated files' lines, oldest first, then `system.log`'s.
    fn log_text(&self) -> String {
        let mut text = String::new();
        for file in rotated_files(&self.log) {
            let compressed = std::fs::File::open(&file).expect("a rotated file");
            let mut lines = String::new();
            flate2::read::GzDecoder::new(compressed)
                .read_to_string(&mut lines)
                .expect("gzip");
            assert!(lines.ends_with('\n'), "{file:?} ends mid-line");
            text.push_str(&lines);
        }
        text + &std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until `system.log` holds `text`, and returns the file.
    fn wait_for(&mut self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let log = self.log_text();
            if log.contains(text) {
                return log;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
                panic!("the node exited ({status}):\n{stderr}");
            }
            assert!(Instant::now() < deadline, "no '{text}' in 60 s:\n{log}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `rocksandra nodetool -p ADMIN_PORT words...`, which must succeed.
    fn nodetool(&self, words: &[&str]) -> String {
        let output = self.nodetool_output(words);
        assert!(output.status.success(), "nodetool {words:?}: {output:?}");
        String::from_utf8(output.stdout).expect("utf-8")
    }

    fn nodetool_output(&self, words: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_rocksandra"))
            .args(["nodetool", "-p", &self.admin_port.to_string()])
            .args(words)
            .output()
            .expect("nodetool runs")
    }

    /// A CQL connection opened and closed: the transport logs its end at
    /// DEBUG.
    fn connect_and_close(&self) {
        let socket = TcpStream::connect(("127.0.0.1", self.native_port)).expect("connects");
        drop(socket);
    }
}

/// `system.log.YYYY-MM-DD[.N].gz` next to `log`, oldest first.
fn rotated_files(log: &Path) -> Vec<PathBuf> {
    let Some(dir) = log.parent() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(String, u32, PathBuf)> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_owned();
            let suffix = name.strip_prefix("system.log.")?.strip_suffix(".gz")?;
            let (date, number) = suffix.split_once('.').unwrap_or((suffix, "0"));
            Some((date.to_owned(), number.parse().ok()?, path))
        })
        .collect();
    files.sort();
    files.into_iter().map(|(_, _, path)| path).collect()
}

fn table(rows: &[(&str, &str)]) -> String {
    let mut text = format!("\n{:<50}{:>10}\n", "Logger Name", "Log Level");
    for (name, level) in rows {
        text.push_str(&format!("{name:<50}{level:>10}\n"));
    }
    text
}

const DEBUG_LINE: &str = "connection stops reading";

#[test]
fn system_log_and_runtime_levels() {
    let dir = tempfile::tempdir().expect("tempdir");
    let logs = dir.path().join("logs");
    let mut node = Node::start(dir.path(), &logs, &[], &[("CASSANDRA_LOG_DIR", &logs)]);
    let file = std::fs::symlink_metadata(&node.log).expect("system.log");
    assert!(file.file_type().is_file(), "{file:?}");
    // 50MiB by default: nothing rotated yet.
    assert_eq!(rotated_files(&node.log), Vec::<PathBuf>::new());

    let configured = table(&[("ROOT", "INFO")]);
    assert_eq!(node.nodetool(&["getlogginglevels"]), configured);
    assert!(!node.log_text().contains(" DEBUG "), "{}", node.log_text());

    assert_eq!(
        node.nodetool(&["setlogginglevel", "org.apache.cassandra.transport", "DEBUG"]),
        ""
    );
    node.wait_for("set log level to DEBUG for classes under 'org.apache.cassandra.transport'");
    assert_eq!(
        node.nodetool(&["getlogginglevel"]),
        table(&[("ROOT", "INFO"), ("rocksandra_server::transport", "DEBUG")])
    );
    node.connect_and_close();
    let debug_lines = node.wait_for(DEBUG_LINE).matches(DEBUG_LINE).count();

    let refused = node.nodetool_output(&["setlogginglevel", "rocksandra_query", "LOUD"]);
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("unknown log level 'LOUD'"), "{message}");

    assert_eq!(node.nodetool(&["setlogginglevel"]), "");
    node.wait_for("log levels reset to the configured ones");
    assert_eq!(node.nodetool(&["getlogginglevels"]), configured);
    node.connect_and_close();
    // The transport would have logged its end by now; the mark below is
    // written after it.
    std::thread::sleep(Duration::from_millis(500));
    node.nodetool(&["setlogginglevel", "ROOT", "INFO"]);
    let log = node.wait_for("set log level to INFO for the root logger");
    assert_eq!(
        log.matches(DEBUG_LINE).count(),
        debug_lines,
        "none after the reset:\n{log}"
    );

    // stderr shows INFO and above only, as Cassandra's console.
    let stderr = std::fs::read_to_string(&node.stderr).expect("stderr");
    assert!(stderr.contains("listening for CQL clients"), "{stderr}");
    assert!(!stderr.contains(DEBUG_LINE), "{stderr}");
}

#[test]
fn json_lines_with_the_log_dir_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let logs = dir.path().join("json-logs");
    let logs_flag = logs.to_string_lossy().to_string();
    let flags = ["--log-dir", &logs_flag, "--log-format", "json"];
    // The flag wins over the environment.
    let elsewhere = dir.path().join("not-here");
    let mut node = Node::start(
        dir.path(),
        &logs,
        &flags,
        &[("CASSANDRA_LOG_DIR", &elsewhere)],
    );
    let log = node.wait_for("nodetool connects to");
    for line in log.lines() {
        let object: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        assert!(object["level"].is_string(), "{line}");
        assert!(object["target"].is_string(), "{line}");
    }
    let listening = log
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("JSON"))
        .find(|object| {
            object["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("listening for CQL clients"))
        });
    let listening = listening.expect("the startup line");
    assert_eq!(listening["level"], "INFO");
    assert_eq!(listening["cluster_name"], "Test Cluster");
    assert!(!elsewhere.exists());
}

#[test]
fn system_log_rotated_by_size_without_losing_a_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let logs = dir.path().join("logs");
    let logs_flag = logs.to_string_lossy().to_string();
    let flags = ["--log-dir", &logs_flag, "--log-max-file-size", "1KiB"];
    let mut node = Node::start(dir.path(), &logs, &flags, &[]);
    for i in 0..20 {
        node.nodetool(&[
            "setlogginglevel",
            &format!("rocksandra_query::mark{i}"),
            "INFO",
        ]);
    }
    let log = node.wait_for("classes under 'rocksandra_query::mark19'");
    let rotated = rotated_files(&node.log);
    assert!(rotated.len() >= 2, "{rotated:?}");
    let name = rotated[0].file_name().expect("name").to_string_lossy();
    assert!(
        name.starts_with("system.log.20") && name.ends_with(".gz"),
        "{name}"
    );
    // Every line whole and once, across the files (log_text checks each
    // rotated file ends with a whole line).
    assert_eq!(log.matches("listening for CQL clients").count(), 1, "{log}");
    for i in 0..20 {
        let line = format!("classes under 'rocksandra_query::mark{i}'");
        assert_eq!(log.matches(&line).count(), 1, "{line}:\n{log}");
    }
}

//! `nodetool snapshot`, `listsnapshots` and `clearsnapshot`. A snapshot is
//! one RocksDB checkpoint of every table in `<data_dir>/snapshots/<tag>`,
//! with the schema (`query::snapshot`): hard links to the live SST files,
//! so it costs disk only once the live files are compacted away.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::AdminNode;
use super::{check_snapshot_tag, failed, human_bytes, tables::unknown_keyspace, AdminError};
use crate::message::Response;

fn snapshots_dir(node: &AdminNode) -> PathBuf {
    node.config().data_dir.join("snapshots")
}

/// `nodetool snapshot [-t TAG] [KEYSPACE...]`. Named keyspaces must exist;
/// the checkpoint holds every keyspace all the same, and says so.
pub(crate) fn create(node: &AdminNode, tag: &str, keyspaces: &[String]) -> Response {
    if let Err(e) = check_snapshot_tag(tag) {
        return failed(e);
    }
    let schema = node.executor().schema();
    if let Some(missing) = keyspaces.iter().find(|k| schema.keyspace(k).is_none()) {
        return failed(unknown_keyspace(missing));
    }
    let parent = snapshots_dir(node);
    if let Err(e) = std::fs::create_dir_all(&parent) {
        return failed(format!("cannot create {}: {e}", parent.display()));
    }
    let dir = parent.join(tag);
    if dir.exists() {
        return failed(format!("Snapshot {tag} already exists."));
    }
    if let Err(e) = node.executor().snapshot(&dir) {
        return failed(e);
    }
    let mut out = format!(
        "Requested creating snapshot(s) for [{}] with snapshot name [{tag}]\nSnapshot directory: {}\n",
        named(keyspaces),
        dir.display()
    );
    if !keyspaces.is_empty() {
        out.push_str("(the snapshot holds every keyspace: it is one RocksDB checkpoint)\n");
    }
    Response::Text(out)
}

fn named(keyspaces: &[String]) -> String {
    if keyspaces.is_empty() {
        "all keyspaces".into()
    } else {
        keyspaces.join(", ")
    }
}

/// One snapshot's line of `listsnapshots`.
struct Details {
    tag: String,
    /// Bytes only the snapshot holds (files no live table links to).
    true_size: u64,
    size_on_disk: u64,
    created: String,
}

/// `nodetool listsnapshots`, as Cassandra's table (one line per snapshot:
/// each holds every keyspace and table).
pub(crate) fn list(node: &AdminNode) -> Response {
    let snapshots = match read_snapshots(&snapshots_dir(node)) {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let mut out = String::from("Snapshot Details: \n");
    if snapshots.is_empty() {
        out.push_str("There are no snapshots\n");
        return Response::Text(out);
    }
    let mut rows = vec![[
        "Snapshot name",
        "Keyspace name",
        "Column family name",
        "True size",
        "Size on disk",
        "Creation time",
        "Expiration time",
    ]
    .map(String::from)];
    for s in &snapshots {
        rows.push([
            s.tag.clone(),
            "*".into(),
            "*".into(),
            human_bytes(s.true_size),
            human_bytes(s.size_on_disk),
            s.created.clone(),
            String::new(),
        ]);
    }
    out.push_str(&aligned(&rows));
    let total: u64 = snapshots.iter().map(|s| s.true_size).sum();
    let _ = writeln!(out, "\nTotal TrueDiskSpaceUsed: {}\n", human_bytes(total));
    Response::Text(out)
}

/// Columns padded to their widest cell, one space apart.
pub(crate) fn aligned<const N: usize>(rows: &[[String; N]]) -> String {
    let mut widths = [0; N];
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join(" ").trim_end());
    }
    out
}

/// `AdminError::Unreadable` for `path`.
fn unreadable(path: &Path) -> impl Fn(std::io::Error) -> AdminError + Copy + '_ {
    move |source| AdminError::Unreadable {
        path: path.to_path_buf(),
        source,
    }
}

fn read_snapshots(parent: &Path) -> Result<Vec<Details>, AdminError> {
    let entries = match std::fs::read_dir(parent) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(unreadable(parent)(e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(unreadable(parent))?;
        let tag = entry.file_name().to_string_lossy().into_owned();
        if tag.starts_with('.') || !entry.path().is_dir() {
            continue;
        }
        out.push(details(&entry.path(), tag)?);
    }
    out.sort_by(|a, b| a.tag.cmp(&b.tag));
    Ok(out)
}

fn details(dir: &Path, tag: String) -> Result<Details, AdminError> {
    use std::os::unix::fs::MetadataExt;
    let unreadable = unreadable(dir);
    let (mut true_size, mut size_on_disk) = (0, 0);
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let meta = entry.map_err(unreadable)?.metadata().map_err(unreadable)?;
        if meta.is_file() {
            size_on_disk += meta.len();
            if meta.nlink() <= 1 {
                true_size += meta.len();
            }
        }
    }
    let created = std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .map(iso_instant)
        .unwrap_or_default();
    Ok(Details {
        tag,
        true_size,
        size_on_disk,
        created,
    })
}

/// Java's `Instant.toString` to the millisecond: `2026-11-27T04:15:00.123Z`.
fn iso_instant(time: std::time::SystemTime) -> String {
    use rocksandra_data::types::{CqlType, NativeType};
    let millis = time
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    // Its JSON is `"2026-11-27 04:15:00.123Z"`.
    rocksandra_data::Value::Timestamp(millis)
        .to_json(&CqlType::Native(NativeType::Timestamp))
        .trim_matches('"')
        .replacen(' ', "T", 1)
}

/// `nodetool clearsnapshot -t TAG` or `--all` (`tag` None).
pub(crate) fn clear(node: &AdminNode, tag: Option<&str>) -> Response {
    let parent = snapshots_dir(node);
    let result = match tag {
        Some(tag) => check_snapshot_tag(tag).and_then(|()| remove(&parent.join(tag))),
        None => read_snapshots(&parent)
            .and_then(|all| all.iter().try_for_each(|s| remove(&parent.join(&s.tag)))),
    };
    let what = match tag {
        Some(tag) => format!("snapshot name [{tag}]"),
        None => "[all snapshots]".into(),
    };
    match result {
        Ok(()) => Response::Text(format!(
            "Requested clearing snapshot(s) for [all keyspaces] with {what}\n"
        )),
        Err(e) => failed(e),
    }
}

/// Removes a snapshot directory; one that does not exist is no error (as
/// in Cassandra).
fn remove(dir: &Path) -> Result<(), AdminError> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(AdminError::Unremovable {
            path: dir.to_path_buf(),
            source,
        }),
    }
}

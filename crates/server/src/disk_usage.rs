//! The data disk usage monitor (Cassandra's `DiskUsageMonitor`): while the
//! `data_disk_usage_percentage_*` guardrails are set, measures how full the
//! data volume is at start and every 30 seconds, and records the state the
//! guardrails act on (`rocksandra_query::disk_usage`; the cluster gossips
//! it). Past a threshold it logs Cassandra's `local_data_disk_usage` line,
//! at most once per notify interval.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rocksandra_query::disk_usage::{self, DiskUsage, LocalDiskUsage};
use rocksandra_query::guardrails::Threshold;
use rocksandra_query::Executor;
use rocksandra_storage::Engine;

/// Why the monitor could not start or measure.
#[derive(Debug, thiserror::Error)]
pub enum DiskUsageError {
    /// The data volume's figures could not be read.
    #[error("{}: {source}", dir.display())]
    Volume {
        dir: std::path::PathBuf,
        source: rustix::io::Errno,
    },
    /// Cassandra's message, `written` as the configuration has it.
    #[error(
        "Invalid guardrails configuration: Invalid value for data_disk_usage_max_disk_size: \
         {written} specified, but only {available} are actually available on disk"
    )]
    MaxDiskSizeTooLarge { written: String, available: String },
    #[error("cannot start the disk usage monitor: {0}")]
    Monitor(#[source] std::io::Error),
}

/// `statvfs` of `dir`'s volume.
fn volume(dir: &Path) -> Result<rustix::fs::StatVfs, DiskUsageError> {
    rustix::fs::statvfs(dir).map_err(|source| DiskUsageError::Volume {
        dir: dir.to_path_buf(),
        source,
    })
}

/// Cassandra's `cassandra.disk_usage.monitor_interval_ms` default.
pub const MONITOR_INTERVAL: Duration = Duration::from_secs(30);

/// Starts the monitor when the guardrails ask for it; it ends with the
/// executor.
pub fn spawn_monitor(
    executor: &Arc<Executor>,
    engine: &Arc<dyn Engine>,
    dir: &Path,
    config: &crate::config::Config,
) -> Result<(), DiskUsageError> {
    let guardrails = &config.guardrails;
    let interval = config.disk_usage_monitor_interval;
    let max_disk_size = guardrails.data_disk_usage_max_disk_size;
    let written = config.data_disk_usage_max_disk_size.as_deref();
    check_max_disk_size(dir, max_disk_size, written.unwrap_or_default())?;
    let threshold = guardrails.data_disk_usage_percentage;
    if !threshold.is_enabled() {
        return Ok(());
    }
    let state = executor.local_disk_usage();
    let executor = Arc::downgrade(executor);
    let engine = Arc::downgrade(engine);
    let dir = dir.to_path_buf();
    let mut last_logs = LastLogs::default();
    std::thread::Builder::new()
        .name("disk-usage".into())
        .spawn(move || loop {
            let (Some(_executor), Some(engine)) = (executor.upgrade(), engine.upgrade()) else {
                return;
            };
            match measure(&dir, &*engine, max_disk_size) {
                Ok(percentage) => {
                    let now = DiskUsage::of(percentage, threshold);
                    record(&state, now, percentage, threshold, &mut last_logs);
                }
                Err(e) => tracing::warn!("cannot measure the data disk usage: {e}"),
            }
            drop(engine);
            std::thread::sleep(interval);
        })
        .map(drop)
        .map_err(DiskUsageError::Monitor)
}

/// The data volume's usage in percent: the data directory's files and the
/// memtables, out of those files plus the volume's free space (at most
/// `max_disk_size`).
fn measure(
    dir: &Path,
    engine: &dyn Engine,
    max_disk_size: Option<u64>,
) -> Result<u64, DiskUsageError> {
    let on_disk = directory_bytes(dir);
    let in_memory = engine.stats().memtable_bytes;
    let free = free_bytes(dir)?;
    Ok(disk_usage::percentage(
        on_disk,
        in_memory,
        free,
        max_disk_size,
    ))
}

/// The bytes of every file under `dir` (Cassandra's data directory raw
/// size); what cannot be read counts as empty.
fn directory_bytes(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_type().is_file())
        .filter_map(|entry| entry.metadata().ok())
        .map(|metadata| metadata.len())
        .fold(0, u64::saturating_add)
}

/// `data_disk_usage_max_disk_size` must not be larger than the data
/// volume; Cassandra's message.
pub fn check_max_disk_size(
    dir: &Path,
    max_disk_size: Option<u64>,
    written: &str,
) -> Result<(), DiskUsageError> {
    let Some(max) = max_disk_size else {
        return Ok(());
    };
    let stat = volume(dir)?;
    let total = stat.f_blocks.saturating_mul(stat.f_frsize);
    if max > total {
        return Err(DiskUsageError::MaxDiskSizeTooLarge {
            written: written.to_string(),
            available: file_size_text(total),
        });
    }
    Ok(())
}

/// A size as Cassandra's `FileUtils.stringifyFileSize` writes it: the
/// largest binary unit it reaches, at most two decimals (`300 MiB`).
fn file_size_text(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    let (unit, size) = UNITS
        .into_iter()
        .find(|(_, size)| bytes >= *size)
        .unwrap_or(("bytes", 1));
    let hundredths = (u128::from(bytes) * 100 + u128::from(size) / 2) / u128::from(size);
    let text = format!("{}.{:02}", hundredths / 100, hundredths % 100);
    format!(
        "{} {unit}",
        text.trim_end_matches('0').trim_end_matches('.')
    )
}

/// The bytes an unprivileged process may still write on `dir`'s volume
/// (Java's `FileStore.getUsableSpace`).
pub fn free_bytes(dir: &Path) -> Result<u64, DiskUsageError> {
    let stat = volume(dir)?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Cassandra logs the same `local_data_disk_usage` line again only after
/// this long (its NoSpamLogger); a line with another percentage at once.
const SAME_LINE_INTERVAL: Duration = Duration::from_secs(10 * 60);

/// The warning and the failure lines last logged, and when.
#[derive(Default)]
struct LastLogs {
    warning: Option<(String, std::time::Instant)>,
    failure: Option<(String, std::time::Instant)>,
}

/// Records the new state, logging Cassandra's `local_data_disk_usage`
/// line past a threshold.
fn record(
    state: &LocalDiskUsage,
    now: DiskUsage,
    percentage: u64,
    threshold: Threshold,
    last_logs: &mut LastLogs,
) {
    let previous = state.set(now);
    if previous != now {
        tracing::info!(
            "data disk usage {percentage}%: {} (was {})",
            now.name(),
            previous.name()
        );
    }
    let Some(line) = local_usage_line(now, percentage, threshold) else {
        return;
    };
    let last = match now {
        DiskUsage::Full => &mut last_logs.failure,
        _ => &mut last_logs.warning,
    };
    let repeated = last
        .as_ref()
        .is_some_and(|(text, at)| *text == line && at.elapsed() < SAME_LINE_INTERVAL);
    if repeated {
        return;
    }
    match now {
        DiskUsage::Full => tracing::error!("{line}"),
        _ => tracing::warn!("{line}"),
    }
    *last = Some((line, std::time::Instant::now()));
}

/// Cassandra's `local_data_disk_usage` guardrail text for a volume past
/// a threshold.
fn local_usage_line(state: DiskUsage, percentage: u64, threshold: Threshold) -> Option<String> {
    let message = match state {
        DiskUsage::Full => format!(
            "Local data disk usage {percentage}%(Full) exceeds failure threshold of {}%, will stop accepting writes",
            threshold.fail
        ),
        DiskUsage::Stuffed => format!(
            "Local data disk usage {percentage}%(Stuffed) exceeds warning threshold of {}%",
            threshold.warn
        ),
        _ => return None,
    };
    Some(format!(
        "Guardrail local_data_disk_usage violated: {message}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_line_is_cassandra_s() {
        let t = Threshold { warn: 50, fail: 80 };
        assert_eq!(
            local_usage_line(DiskUsage::Stuffed, 63, t).as_deref(),
            Some("Guardrail local_data_disk_usage violated: Local data disk usage 63%(Stuffed) exceeds warning threshold of 50%")
        );
        assert_eq!(
            local_usage_line(DiskUsage::Full, 91, t).as_deref(),
            Some("Guardrail local_data_disk_usage violated: Local data disk usage 91%(Full) exceeds failure threshold of 80%, will stop accepting writes")
        );
        assert_eq!(local_usage_line(DiskUsage::Spacious, 10, t), None);
    }

    #[test]
    fn sizes_are_written_as_cassandra_writes_them() {
        assert_eq!(file_size_text(300 << 20), "300 MiB");
        assert_eq!(file_size_text(3 << 29), "1.5 GiB");
        assert_eq!(file_size_text(1000), "1000 bytes");
        assert_eq!(file_size_text((1 << 40) + (1 << 38)), "1.25 TiB");
    }

    #[test]
    fn a_directory_s_files_are_counted_and_the_volume_has_room() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("a"), [0u8; 100]).unwrap();
        std::fs::write(dir.path().join("sub/b"), [0u8; 50]).unwrap();
        assert_eq!(directory_bytes(dir.path()), 150);
        assert!(free_bytes(dir.path()).unwrap() > 0);
    }
}

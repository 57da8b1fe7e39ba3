//! `system.log` rotated as Cassandra 5.0's logback.xml rotates its own
//! (`SizeAndTimeBasedRollingPolicy`): a new file when the current one has
//! passed `max_file_size`, the old ones compressed, those older than
//! `max_history` days removed, and the oldest removed while all of them
//! together pass `total_size_cap`. Rotation, naming, compression and the
//! age limit are `file-rotate`'s; the total cap, which it lacks, is here.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use file_rotate::compression::Compression;
use file_rotate::suffix::{AppendTimestamp, DateFrom, FileLimit};
use file_rotate::{ContentLimit, FileRotate};

/// The limits of the files, with the defaults of Cassandra's logback.xml
/// for `system.log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// A new file starts once the current one has passed this
    /// (`maxFileSize`, 50MB). A line is never split between two files.
    pub max_file_size: u64,
    /// Days of rotated files kept (`maxHistory`, 7).
    pub max_history_days: u32,
    /// The rotated files together, at most (`totalSizeCap`, 5GB).
    pub total_size_cap: u64,
}

impl Default for Rotation {
    fn default() -> Rotation {
        Rotation {
            max_file_size: 50 << 20,
            max_history_days: 7,
            total_size_cap: 5 << 30,
        }
    }
}

/// The rotated files' date, `system.log.YYYY-MM-DD[.N].gz` (`N` from 1
/// for the second file of a day), in the local time zone as logback's.
const DATE_FORMAT: &str = "%Y-%m-%d";

/// The writer of `dir/NAME` and its rotated files.
pub struct RotatingFile {
    path: PathBuf,
    rotation: Rotation,
    inner: FileRotate<AppendTimestamp>,
    /// Bytes written since the total cap was last enforced: it is again
    /// after every `max_file_size` bytes, at most once per rotation.
    since_cap_check: u64,
}

impl RotatingFile {
    /// Opens `dir/name` for appending (`dir` must exist). A link there (the
    /// daily files' link of earlier versions) is removed first, and the
    /// cap enforced on the files already there.
    pub fn open(dir: &Path, name: &str, rotation: Rotation) -> io::Result<RotatingFile> {
        let path = std::path::absolute(dir)?.join(name);
        if fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            fs::remove_file(&path)?;
        }
        // Fail here, with the reason, rather than drop every line later.
        fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        let mut file = RotatingFile {
            inner: rotate(&path, rotation),
            path,
            rotation,
            since_cap_check: 0,
        };
        file.enforce_total_cap()?;
        Ok(file)
    }

    /// The rotated files, oldest first.
    pub fn rotated(&mut self) -> Vec<PathBuf> {
        self.inner.log_paths()
    }

    /// Removes the oldest rotated files while they pass the total cap.
    fn enforce_total_cap(&mut self) -> io::Result<()> {
        let files: Vec<(PathBuf, u64)> = self
            .rotated()
            .into_iter()
            .filter_map(|path| fs::metadata(&path).ok().map(|m| (path, m.len())))
            .collect();
        let mut total: u64 = files.iter().map(|(_, len)| len).sum();
        let mut removed = false;
        for (path, len) in &files {
            if total <= self.rotation.total_size_cap {
                break;
            }
            fs::remove_file(path)?;
            total -= len;
            removed = true;
        }
        if removed {
            // file-rotate removes the files past their age itself, from
            // its own list: it must not list the ones removed here.
            self.inner = rotate(&self.path, self.rotation);
        }
        Ok(())
    }
}

fn rotate(path: &Path, rotation: Rotation) -> FileRotate<AppendTimestamp> {
    let age = chrono::Duration::days(i64::from(rotation.max_history_days));
    FileRotate::new(
        path,
        AppendTimestamp::with_format(DATE_FORMAT, FileLimit::Age(age), DateFrom::Now),
        ContentLimit::BytesSurpassed(usize::try_from(rotation.max_file_size).unwrap_or(usize::MAX)),
        Compression::OnRotate(0),
        None,
    )
}

impl Write for RotatingFile {
    /// Writes all of `buf` (one or more whole lines) to the current file,
    /// after rotating when it has passed the size limit.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // file-rotate panics when it cannot create or list the directory
        // while rotating; that would end the writer's thread and every
        // line after it. The line fails instead, and the next tries again.
        let inner = &mut self.inner;
        let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.write(buf)))
            .map_err(|_| io::Error::other("the log file could not be rotated"))??;
        self.since_cap_check = self.since_cap_check.saturating_add(written as u64);
        if self.since_cap_check >= self.rotation.max_file_size {
            self.since_cap_check = 0;
            if let Err(e) = self.enforce_total_cap() {
                // The line is written; the logger cannot log its own trouble.
                eprintln!(
                    "cannot remove old log files next to {}: {e}",
                    self.path.display()
                );
            }
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn lines_of(path: &Path) -> Vec<String> {
        let mut text = String::new();
        if path.extension().is_some_and(|e| e == "gz") {
            let file = fs::File::open(path).expect("open");
            flate2::read::GzDecoder::new(file)
                .read_to_string(&mut text)
                .expect("gunzip");
        } else {
            text = fs::read_to_string(path).expect("read");
        }
        assert!(
            text.is_empty() || text.ends_with('\n'),
            "{path:?} ends mid-line"
        );
        text.lines().map(str::to_owned).collect()
    }

    fn write_lines(file: &mut RotatingFile, range: std::ops::Range<u32>) {
        for i in range {
            // One write a line, as the log writer's thread does.
            let line = format!("line {i:05} {}\n", "x".repeat(40));
            file.write_all(line.as_bytes()).expect("write");
        }
        file.flush().expect("flush");
    }

    #[test]
    fn rotates_by_size_compresses_and_loses_no_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let rotation = Rotation {
            max_file_size: 1024,
            max_history_days: 7,
            total_size_cap: 1 << 30,
        };
        let mut file = RotatingFile::open(dir.path(), "system.log", rotation).expect("open");
        write_lines(&mut file, 0..200);
        let rotated = file.rotated();
        // 200 lines of 52 bytes, a new file after each 1024 (+ one line).
        assert!(rotated.len() >= 9, "{rotated:?}");
        let today = chrono::Local::now().format(DATE_FORMAT).to_string();
        let first = dir.path().join(format!("system.log.{today}.gz"));
        assert_eq!(rotated[0], first);
        assert_eq!(
            rotated[1],
            dir.path().join(format!("system.log.{today}.1.gz"))
        );
        let mut all = Vec::new();
        for path in &rotated {
            let lines = lines_of(path);
            assert!(lines.len() <= 20, "{path:?} holds {} lines", lines.len());
            all.extend(lines);
        }
        all.extend(lines_of(&dir.path().join("system.log")));
        let expected: Vec<String> = (0..200)
            .map(|i| format!("line {i:05} {}", "x".repeat(40)))
            .collect();
        assert_eq!(all, expected);
    }

    #[test]
    fn removes_the_oldest_past_the_total_cap() {
        let dir = tempfile::tempdir().expect("tempdir");
        let rotation = Rotation {
            max_file_size: 1024,
            max_history_days: 7,
            total_size_cap: 600,
        };
        let mut file = RotatingFile::open(dir.path(), "system.log", rotation).expect("open");
        write_lines(&mut file, 0..400);
        let rotated = file.rotated();
        let sizes: Vec<u64> = rotated
            .iter()
            .map(|p| fs::metadata(p).expect("metadata").len())
            .collect();
        assert!(!rotated.is_empty());
        // Checked after each 1024 bytes: the files of one rotation or two
        // since the last check may pass the cap.
        let newest: u64 = sizes.iter().rev().take(2).sum();
        assert!(sizes.iter().sum::<u64>() <= 600 + newest, "{sizes:?}");
        // The newest lines are the ones kept.
        let current = lines_of(&dir.path().join("system.log"));
        assert!(current.last().is_some_and(|l| l.starts_with("line 00399")));
        let oldest_kept = lines_of(&rotated[0]);
        assert!(oldest_kept[0].as_str() > "line 00100", "{}", oldest_kept[0]);
    }

    #[test]
    fn removes_files_older_than_the_history_and_the_old_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let old = dir.path().join("system.log.2000-01-01.gz");
        let recent_day = chrono::Local::now() - chrono::Duration::days(2);
        let recent = dir
            .path()
            .join(format!("system.log.{}", recent_day.format(DATE_FORMAT)));
        fs::write(&old, b"old").expect("write");
        fs::write(&recent, b"recent\n").expect("write");
        // The daily appender's `system.log` was a link to the day's file.
        std::os::unix::fs::symlink(&recent, dir.path().join("system.log")).expect("link");
        let rotation = Rotation {
            max_file_size: 512,
            ..Rotation::default()
        };
        let mut file = RotatingFile::open(dir.path(), "system.log", rotation).expect("open");
        write_lines(&mut file, 0..30);
        assert!(!old.exists(), "a file past maxHistory is kept");
        // Rotated files are compressed when the next rotation comes.
        let recent = PathBuf::from(format!("{}.gz", recent.display()));
        assert_eq!(lines_of(&recent)[0], "recent", "the link's file is kept");
        assert!(!fs::symlink_metadata(dir.path().join("system.log"))
            .expect("system.log")
            .file_type()
            .is_symlink());
    }
}

//! The process's own memory and CPU, read from Linux's `/proc/self`.
//! Elsewhere (or if `/proc` cannot be read) the figures are absent, and the
//! endpoint leaves them out.

/// Clock ticks per second of the CPU times in `/proc/<pid>/stat`: Linux's
/// `USER_HZ`, which is 100 on every architecture it exposes to user space.
pub const CLOCK_TICKS_PER_SECOND: u64 = 100;

/// Memory and CPU of this process; None where unknown.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessStats {
    /// `VmRSS`: memory resident now.
    pub resident_bytes: Option<u64>,
    /// `VmHWM`: the most memory ever resident.
    pub peak_resident_bytes: Option<u64>,
    /// User and system CPU time since start.
    pub cpu_seconds: Option<f64>,
}

impl ProcessStats {
    pub fn read() -> ProcessStats {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        ProcessStats {
            resident_bytes: status_kib(&status, "VmRSS").map(|kib| kib.saturating_mul(1024)),
            peak_resident_bytes: status_kib(&status, "VmHWM").map(|kib| kib.saturating_mul(1024)),
            cpu_seconds: cpu_ticks(&stat).map(|ticks| ticks as f64 / CLOCK_TICKS_PER_SECOND as f64),
        }
    }
}

/// Where the calling thread's time went since it started, from Linux's
/// `/proc/thread-self/schedstat`: on a CPU, and runnable but waiting for one.
/// The rest of a wall-clock interval the thread was asleep or blocked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadTimes {
    pub thread: std::thread::ThreadId,
    pub running_ns: u64,
    pub waiting_ns: u64,
}

/// Longest `schedstat` line read: three decimal u64 and their separators.
const SCHEDSTAT_BYTES_MAX: usize = 64;

thread_local! {
    /// This thread's `schedstat`, opened once: each reading is then one
    /// `pread` (the kernel writes the line anew at offset 0), not an open,
    /// a stat, two reads and a close. The event-loop probes read it every
    /// 10 ms on every loop, busy or idle.
    static SCHEDSTAT: Option<std::fs::File> =
        std::fs::File::open("/proc/thread-self/schedstat").ok();
}

impl ThreadTimes {
    /// None where the file cannot be read (not Linux, no schedstat).
    pub fn read() -> Option<ThreadTimes> {
        use std::os::unix::fs::FileExt;
        let mut line = [0u8; SCHEDSTAT_BYTES_MAX];
        let n = SCHEDSTAT.with(|file| file.as_ref()?.read_at(&mut line, 0).ok())?;
        let text = std::str::from_utf8(&line[..n]).ok()?;
        let (running_ns, waiting_ns) = schedstat_times(text)?;
        Some(ThreadTimes {
            thread: std::thread::current().id(),
            running_ns,
            waiting_ns,
        })
    }
}

/// The first two fields of a `schedstat` line: time on a CPU and time
/// waiting on a run queue, in nanoseconds.
fn schedstat_times(text: &str) -> Option<(u64, u64)> {
    let mut fields = text.split_whitespace();
    let running = fields.next()?.parse().ok()?;
    let waiting = fields.next()?.parse().ok()?;
    Some((running, waiting))
}

/// A `Name:   1234 kB` line of `/proc/<pid>/status`, in KiB.
fn status_kib(status: &str, name: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(':')?;
        value.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

/// utime + stime of `/proc/<pid>/stat`, in clock ticks. The command name
/// (field 2, in parentheses) may hold spaces and parentheses itself, so the
/// fields are counted from the last `)`: state is field 3, utime 14, stime 15.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let (_, after_name) = stat.rsplit_once(')')?;
    let mut fields = after_name.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user.saturating_add(system))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_fields_in_order() {
        assert_eq!(schedstat_times("120 45 3\n"), Some((120, 45)));
        assert_eq!(schedstat_times("120"), None);
        // Linux has the file; its figures are updated at context switches and ticks.
        assert!(ThreadTimes::read().is_some());
    }

    #[test]
    fn each_reading_of_the_open_schedstat_is_fresh() {
        let before = ThreadTimes::read().expect("schedstat");
        let started = std::time::Instant::now();
        let mut spin = 0u64;
        while started.elapsed() < std::time::Duration::from_millis(50) {
            spin = std::hint::black_box(spin.wrapping_add(1));
        }
        let after = ThreadTimes::read().expect("schedstat");
        assert_eq!(before.thread, after.thread);
        assert!(after.running_ns > before.running_ns, "{before:?} {after:?}");
    }

    #[test]
    fn status_lines_in_kib() {
        let status = "Name:\trocksandra\nVmPeak:\t  900 kB\nVmHWM:\t   5120 kB\n\
                      VmRSS:\t    4096 kB\nThreads:\t7\n";
        assert_eq!(status_kib(status, "VmRSS"), Some(4096));
        assert_eq!(status_kib(status, "VmHWM"), Some(5120));
        assert_eq!(status_kib(status, "VmSwap"), None);
        assert_eq!(status_kib("VmRSS: lots\n", "VmRSS"), None);
        assert_eq!(status_kib("", "VmRSS"), None);
    }

    #[test]
    fn cpu_ticks_count_fields_after_the_command_name() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
        // majflt cmajflt utime stime ...
        let stat = "4242 (rocks (a) b) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 70 0 0 20 0";
        assert_eq!(cpu_ticks(stat), Some(320));
        assert_eq!(cpu_ticks("4242 (x) S 1 2"), None);
        assert_eq!(cpu_ticks("garbage"), None);
    }

    #[test]
    fn this_process_is_measured_on_linux() {
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        let stats = ProcessStats::read();
        let resident = stats.resident_bytes.expect("VmRSS");
        let peak = stats.peak_resident_bytes.expect("VmHWM");
        assert!(resident > 0 && peak >= resident, "{stats:?}");
        assert!(stats.cpu_seconds.expect("CPU time") >= 0.0);
    }
}

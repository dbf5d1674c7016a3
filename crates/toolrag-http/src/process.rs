//! The standard process metrics (`process_resident_memory_bytes`,
//! `process_cpu_seconds_total`, `process_open_fds`, …), read from
//! `/proc/self` at each scrape, under the names and meanings of the
//! Prometheus client libraries' process collectors, so existing dashboards
//! work unchanged.
//!
//! prometheus-client has no process collector, and these are a few file
//! reads, so they are written here rather than taken from another crate.
//! Off Linux (no `/proc`) nothing is reported.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Clock ticks per second of `/proc/self/stat`'s times. The kernel reports
/// them in USER_HZ, which is 100 on every Linux architecture (the Go
/// client's procfs assumes the same).
const USER_HZ: f64 = 100.0;

/// A snapshot of the process, as read from `/proc`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Process {
    /// User plus system CPU time, in seconds.
    pub cpu_seconds: Option<f64>,
    /// Resident set size, in bytes.
    pub resident_bytes: Option<u64>,
    /// Virtual memory size, in bytes.
    pub virtual_bytes: Option<u64>,
    /// Open file descriptors.
    pub open_fds: Option<u64>,
    /// The soft limit on open file descriptors.
    pub max_fds: Option<u64>,
    /// When the process started, in seconds since the Unix epoch.
    pub start_time_seconds: Option<f64>,
}

impl Process {
    /// Reads `/proc/self`; a file that cannot be read leaves its fields `None`.
    pub fn read() -> Process {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        let mut out = Process::default();
        if let Some(stat) = read("/proc/self/stat") {
            let boot = read("/proc/stat").and_then(|s| boot_time(&s));
            parse_stat(&stat, boot, &mut out);
        }
        if let Some(status) = read("/proc/self/status") {
            out.resident_bytes = status_kib(&status, "VmRSS:").map(|k| k * 1024);
            out.virtual_bytes = status_kib(&status, "VmSize:").map(|k| k * 1024);
        }
        out.open_fds = std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as u64);
        out.max_fds = read("/proc/self/limits").and_then(|l| max_open_files(&l));
        out
    }
}

/// CPU time and start time from `/proc/self/stat`. The command name (field
/// 2) may hold spaces and parentheses, so fields are counted after its last
/// `)`: utime and stime are fields 14 and 15, starttime field 22.
fn parse_stat(stat: &str, boot_time: Option<u64>, out: &mut Process) {
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return;
    };
    // `rest` starts with field 3 (the state).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    if let (Some(user), Some(system)) = (field(14), field(15)) {
        out.cpu_seconds = Some((user + system) as f64 / USER_HZ);
    }
    if let (Some(start), Some(boot)) = (field(22), boot_time) {
        out.start_time_seconds = Some(boot as f64 + start as f64 / USER_HZ);
    }
}

/// `btime` of `/proc/stat`: the boot time, in seconds since the epoch.
fn boot_time(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// A `kB` line of `/proc/self/status`, such as `VmRSS:   12345 kB`.
fn status_kib(status: &str, key: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// The soft limit of `Max open files` in `/proc/self/limits`.
fn max_open_files(limits: &str) -> Option<u64> {
    limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Reports [`Process::read`] at each scrape.
#[derive(Debug)]
pub(super) struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let p = Process::read();
        if let Some(v) = p.cpu_seconds {
            let m = ConstCounter::new(v);
            m.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                m.metric_type(),
            )?)?;
        }
        let counts: [(&str, &str, Option<u64>); 4] = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                p.resident_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                p.virtual_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors",
                p.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors",
                p.max_fds,
            ),
        ];
        for (name, help, value) in counts {
            if let Some(v) = value {
                let m = ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX));
                m.encode(encoder.encode_descriptor(name, help, None, m.metric_type())?)?;
            }
        }
        if let Some(v) = p.start_time_seconds {
            let m = ConstGauge::new(v);
            m.encode(encoder.encode_descriptor(
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                None,
                m.metric_type(),
            )?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        // A command name with a space and a parenthesis, as a process may
        // name itself.
        let stat = "4242 (tool rag) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 \
                    250 50 0 0 20 0 9 0 1234500 123456789 3000 18446744073709551615";
        let mut p = Process::default();
        parse_stat(stat, Some(1_700_000_000), &mut p);
        assert_eq!(p.cpu_seconds, Some(3.0));
        assert_eq!(p.start_time_seconds, Some(1_700_000_000.0 + 12345.0));
        assert_eq!(
            boot_time("cpu 1 2\nbtime 1700000000\n"),
            Some(1_700_000_000)
        );
        assert_eq!(
            status_kib("Name:\ttoolrag\nVmRSS:\t   20480 kB\n", "VmRSS:"),
            Some(20480)
        );
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max open files            1024                 524288               files     \n";
        assert_eq!(max_open_files(limits), Some(1024));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_read() {
        let p = Process::read();
        assert!(p.resident_bytes.unwrap() > 0, "{p:?}");
        assert!(p.open_fds.unwrap() >= 3, "{p:?}");
        assert!(p.cpu_seconds.unwrap() >= 0.0, "{p:?}");
        assert!(p.max_fds.unwrap() >= p.open_fds.unwrap(), "{p:?}");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let start = p.start_time_seconds.unwrap();
        assert!(
            start <= now + 1.0 && start > now - 86_400.0 * 365.0,
            "{p:?}"
        );
    }
}

//! Resident memory of processes, read from `/proc` (Linux): what the benchmarks report.
//! Elsewhere every figure is zero.

/// A `kB` field of `/proc/<pid>/status`, in MB (0 when unreadable).
fn status_mb(pid: &str, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// This process's peak resident memory (VmHWM), in MB.
#[must_use]
pub fn peak_rss_mb() -> f64 {
    status_mb("self", "VmHWM:")
}

/// The resident memory (VmRSS) of process `pid` now, in MB; 0 once it is gone.
#[must_use]
pub fn rss_mb(pid: u32) -> f64 {
    status_mb(&pid.to_string(), "VmRSS:")
}

/// The peak resident memory (VmHWM) of process `pid`, in MB; 0 once it is gone.
#[must_use]
pub fn peak_rss_mb_of(pid: u32) -> f64 {
    status_mb(&pid.to_string(), "VmHWM:")
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_has_a_resident_size_no_larger_than_its_peak() {
        let now = super::rss_mb(std::process::id());
        let peak = super::peak_rss_mb();
        assert!(now > 0.0, "VmRSS read");
        assert!(peak >= now, "peak {peak} MB, now {now} MB");
        assert!((super::peak_rss_mb_of(std::process::id()) - peak).abs() < 64.0);
        assert_eq!(super::rss_mb(u32::MAX), 0.0, "no such process");
    }
}

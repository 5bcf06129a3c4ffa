//! Resident memory of processes, read from `/proc` (Linux): what the benchmarks report.
//! Elsewhere every figure is zero.

/// The sum of the `kB` fields named `fields` in `/proc/<pid>/<file>`, in MB (0 when
/// unreadable).
fn fields_mb(pid: &str, file: &str, fields: &[&str]) -> f64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/{file}")) else {
        return 0.0;
    };
    let kb: f64 = text
        .lines()
        .filter_map(|l| fields.iter().find_map(|f| l.strip_prefix(f)))
        .filter_map(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
        .sum();
    kb / 1024.0
}

/// A `kB` field of `/proc/<pid>/status`, in MB (0 when unreadable).
fn status_mb(pid: &str, field: &str) -> f64 {
    fields_mb(pid, "status", &[field])
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

/// The memory process `pid` holds alone, in MB: its private pages, clean and dirty
/// (`/proc/<pid>/smaps_rollup`), which its exit would free. Unlike VmRSS it leaves out
/// the pages of shared libraries and of the executable that other processes map too:
/// every agent on a machine counts ONNX Runtime's code in its VmRSS, but the machine
/// holds it once. 0 once it is gone.
#[must_use]
pub fn private_mb(pid: u32) -> f64 {
    fields_mb(
        &pid.to_string(),
        "smaps_rollup",
        &["Private_Clean:", "Private_Dirty:"],
    )
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

    #[test]
    fn what_a_process_holds_alone_grows_with_its_own_pages_and_stays_below_its_resident_size() {
        let pid = std::process::id();
        let before = super::private_mb(pid);
        let block = vec![7u8; 64 << 20];
        let during = super::private_mb(pid);
        let resident = super::rss_mb(pid);
        assert!(before > 0.0, "smaps_rollup read");
        assert!(
            during - before > 48.0,
            "64 MB written is private: {before:.1} -> {during:.1} MB"
        );
        assert!(
            during <= resident + 1.0,
            "private {during:.1} MB, resident {resident:.1} MB"
        );
        assert_eq!(
            block.iter().map(|&b| usize::from(b)).sum::<usize>(),
            7 << 26
        );
        assert_eq!(super::private_mb(u32::MAX), 0.0, "no such process");
    }
}

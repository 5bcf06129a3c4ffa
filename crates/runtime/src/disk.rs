//! Room on disk. A store that runs out of space mid-write (redb on ENOSPC) is left
//! unusable until it is opened again, and a story that logs an event its characters
//! cannot store runs on without them. So writers keep a reserve: below it, a write is
//! refused before it starts, with a clear error, and is accepted again once space
//! returns.

use std::path::Path;

/// The variable that sets the reserve, in MiB (`0` turns the check off).
pub const RESERVE_VAR: &str = "DRAMATIS_DISK_RESERVE_MB";

/// The reserve when [`RESERVE_VAR`] is unset: more than one growth step of a store
/// file, small beside any real disk.
pub const DEFAULT_RESERVE_MB: u64 = 64;

/// The reserve in bytes: [`RESERVE_VAR`] when it is set to a number, else
/// [`DEFAULT_RESERVE_MB`].
#[must_use]
pub fn reserve() -> u64 {
    std::env::var(RESERVE_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(DEFAULT_RESERVE_MB)
        .saturating_mul(1024 * 1024)
}

/// Bytes an unprivileged writer may still use on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    let stat = rustix::fs::statvfs(dir)?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Whether a write of a few pages may start in `dir`: `Err` says how little room
/// there is (without the path, which callers log but do not show to clients). A file
/// system that cannot be asked counts as roomy: the write itself will tell.
pub fn ensure_room(dir: &Path) -> Result<(), String> {
    ensure_room_above(dir, reserve())
}

/// [`ensure_room`] with the reserve given, in bytes.
pub fn ensure_room_above(dir: &Path, reserve: u64) -> Result<(), String> {
    if reserve == 0 {
        return Ok(());
    }
    match free_bytes(dir) {
        Ok(free) if free < reserve => Err(format!(
            "the disk is full: {} MiB free, below the {} MiB reserve ({RESERVE_VAR}); \
             free space and try again",
            free / (1024 * 1024),
            reserve / (1024 * 1024)
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_refused_only_below_the_reserve() {
        let dir = std::env::temp_dir();
        let free = free_bytes(&dir).expect("statvfs");
        assert!(free > 0);
        assert_eq!(ensure_room_above(&dir, 0), Ok(()), "0 turns the check off");
        assert_eq!(ensure_room_above(&dir, 1), Ok(()));
        let short = ensure_room_above(&dir, free + (1 << 40)).expect_err("below the reserve");
        assert!(short.starts_with("the disk is full: "), "{short}");
        assert!(short.contains(" MiB free, below the "), "{short}");
        assert!(
            !short.contains(dir.to_str().expect("utf-8")),
            "no path: {short}"
        );
    }
}

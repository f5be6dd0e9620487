//! Giving freed heap memory back to the system.
//!
//! The first call of a turn is built from the project's listing and its repository map, whose
//! working sets are the largest pai holds (at 100,000 files, a few megabytes freed at once
//! when the call's text is built). glibc's allocator keeps freed memory in its arenas, and
//! returns to the system only the top of each one, so those megabytes stay resident while the
//! plan runs: its RUN steps, which take a status pass over every file, and its commit. This
//! hands the free pages back once that working set is gone.

/// Give the free pages of every allocator arena back to the system (glibc's `malloc_trim`,
/// which releases whole free pages anywhere in an arena, not only at its top). Cheap (a walk
/// of the free lists) and without effect on what is allocated; elsewhere than glibc, nothing.
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only changes which free pages are backed; it touches no live
    // allocation, and may be called from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    /// Resident anonymous memory of this process, in kB.
    fn rss_anon_kb() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("RssAnon:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn freed_small_allocations_leave_the_process_once_released() {
        // 32 MB in small pieces (below the size glibc maps on its own), freed, with one piece
        // allocated after them kept, so the arena's top cannot shrink by itself: the freed
        // pages stay resident until released.
        let pieces: Vec<Vec<u8>> = (0..256 * 1024).map(|i| vec![i as u8; 100]).collect();
        let pin = Box::new([1u8; 100]);
        drop(pieces);
        let before = rss_anon_kb();
        super::release_freed();
        let after = rss_anon_kb();
        assert!(pin[0] == 1);
        // Other tests allocate meanwhile; most of the 32 MB must still have gone.
        assert!(
            before.saturating_sub(after) >= 16 * 1024,
            "RssAnon {before} kB -> {after} kB"
        );
    }
}

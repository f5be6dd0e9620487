//! Giving freed heap memory back to the system.
//!
//! The first call of a turn is built from the project's listing and its repository map, whose
//! working sets are the largest pai holds (at 100,000 files, a few megabytes freed at once
//! when the call's text is built). glibc's allocator keeps freed memory in its arenas, and
//! returns to the system only the top of each one, so those megabytes stay resident while the
//! plan runs: its RUN steps, which take a status pass over every file, and its commit. This
//! hands the free pages back once that working set is gone.

/// Allocations from this size on get pages of their own, handed back when freed.
const MMAP_FROM: usize = 256 * 1024;

/// Free memory at the top of an arena beyond this is handed back when memory is freed.
const TRIM_ABOVE: usize = 128 * 1024;

/// Tune glibc's allocator for a process whose working set comes in bursts (the listing, the
/// map, a status pass), to be called first thing in `main`, before any other thread exists.
///
/// - At most two arenas. By default each thread that allocates may get an arena of its own
///   (up to eight per core), and memory freed in one is never reused by another: at 100,000
///   files the scan's threads, the map's helper threads and the runtime's workers each keep
///   their part, which raises a `pai run`'s peak RSS by many megabytes for no speed gained
///   (`pai map` and a cold map take the same time with one, two or the default number).
/// - Fixed thresholds for mapping large allocations and trimming. glibc raises both each
///   time a large mapped allocation is freed (to that allocation's size, and twice it), so
///   after the map's few-megabyte buffers, freed memory of that size stays at the top of an
///   arena, where [`release_freed`] cannot hand it back (it trims only the main arena's
///   top): the same `pai run` at 100,000 files peaked 3 MB higher in some runs than others.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes tuning parameters of glibc's allocator; called before
    // any other thread exists, nothing allocates concurrently.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_FROM as libc::c_int);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_ABOVE as libc::c_int);
    }
}

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

    /// Whether glibc gave the allocation at `p` pages of its own (the `IS_MMAPPED` bit of
    /// the chunk's size word, just before it).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn is_mapped(p: *const u8) -> bool {
        // SAFETY: glibc keeps every chunk's size word in the word before the pointer it
        // returns; `p` is a live allocation's start.
        unsafe { (p as *const usize).sub(1).read() & 2 != 0 }
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn large_allocations_stay_mapped_after_a_larger_one_is_freed() {
        // In a process of its own, tuned first as pai's `main` does: here, other tests'
        // freed memory in the arenas could serve the allocations below.
        const CHILD: &str = "PAI_HEAP_TEST_CHILD";
        if std::env::var_os(CHILD).is_none() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "heap::tests::large_allocations_stay_mapped_after_a_larger_one_is_freed",
                    "--test-threads=1",
                ])
                .env(CHILD, "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success() && text.contains("1 passed"), "{text}");
            return;
        }
        super::tune_allocator();
        // By default, freeing a mapped 8 MB allocation raises the threshold to 8 MB, and the
        // 1 MB allocated next would come from an arena, to stay resident once freed.
        let large = vec![1u8; 8 << 20];
        assert!(is_mapped(large.as_ptr()));
        drop(large);
        let next = vec![2u8; 1 << 20];
        assert!(is_mapped(next.as_ptr()), "1 MB allocated in an arena");
        let small = vec![3u8; 1024];
        assert!(!is_mapped(small.as_ptr()));
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

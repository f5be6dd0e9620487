//! The pai binary: parse, run, map the outcome to an exit code.
fn main() {
    few_malloc_arenas();
    std::process::exit(pai::cli::main());
}

/// At most two glibc malloc arenas. By default each thread that allocates may get an arena of
/// its own (up to eight per core), and memory freed in one is never reused by another: at
/// 100,000 files the scan's threads, the map's helper threads and the runtime's workers each
/// keep their part, which raises a `pai run`'s peak RSS by many megabytes for no speed gained
/// (`pai map` and a cold map take the same time with one, two or the default number of
/// arenas).
fn few_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes a tuning parameter of glibc's allocator, and is called
    // first thing in `main`, before any thread that could be allocating exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

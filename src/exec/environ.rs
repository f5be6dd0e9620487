//! Hiding pai's own environment from `/proc/<pai>/environ`.
//!
//! pai is started with API keys in its environment, and the kernel serves that initial block
//! (the bytes between the process's `env_start` and `env_end`) to whoever may read
//! `/proc/<pid>/environ`. pai marks itself non-dumpable, which makes the file root's with mode
//! 0400, so a RUN child of the same ordinary user is refused. Root is not: a RUN child running as
//! root reads it even without `CAP_SYS_PTRACE` (on Linux 6.18 only `/proc/<pid>/mem` is
//! refused then). So pai does not rely on permission checks for it: it tells the kernel the
//! block is empty, by setting `env_end` to `env_start` with
//! `prctl(PR_SET_MM, PR_SET_MM_MAP)`. Nothing in memory changes: libc's `environ` (and so
//! `std::env`) keeps pointing at the same strings, only the kernel's report of them is gone.
//!
//! Why `PR_SET_MM_MAP` and not `PR_SET_MM_ENV_END`: the single-field form needs
//! `CAP_SYS_RESOURCE`, which root lacks in many containers and VMs; the whole-map form needs
//! no capability when the executable is left alone
//! (`exe_fd` -1), for root and ordinary users alike. It replaces every field, so each is
//! passed as the kernel reports it (`/proc/self/stat`, and `brk(0)` for the current break)
//! and only `env_end` differs. The current break is the one field another thread could move
//! (malloc growing the heap) between reading and writing it, so this is done only while the
//! process has a single thread (the stat line says how many), first thing in `main`.

use std::io;

/// The fields of `/proc/<pid>/stat` this reads (1-based, as `proc(5)` counts).
mod field {
    pub const NUM_THREADS: usize = 20;
    pub const START_CODE: usize = 26;
    pub const END_CODE: usize = 27;
    pub const START_STACK: usize = 28;
    pub const START_DATA: usize = 45;
    pub const END_DATA: usize = 46;
    pub const START_BRK: usize = 47;
    pub const ARG_START: usize = 48;
    pub const ARG_END: usize = 49;
    pub const ENV_START: usize = 50;
}

/// Make `/proc/<pai>/environ` empty (see the module comment). An error says why the kernel's
/// view was left as it was (an old kernel without `CONFIG_CHECKPOINT_RESTORE`, more than one
/// thread); nothing changed then.
///
/// Call it once, first thing in `main`, before any thread or RUN child exists.
pub fn hide_from_proc() -> io::Result<()> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let number = |n: usize| -> io::Result<u64> {
        field_after_command(&stat, n)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| io::Error::other(format!("/proc/self/stat has no field {n}")))
    };
    if number(field::NUM_THREADS)? != 1 {
        return Err(io::Error::other("pai already runs more than one thread"));
    }
    let env_start = number(field::ENV_START)?;
    let mut map = rustix::process::PrctlMmMap {
        start_code: number(field::START_CODE)?,
        end_code: number(field::END_CODE)?,
        start_data: number(field::START_DATA)?,
        end_data: number(field::END_DATA)?,
        start_brk: number(field::START_BRK)?,
        brk: 0,
        start_stack: number(field::START_STACK)?,
        arg_start: number(field::ARG_START)?,
        arg_end: number(field::ARG_END)?,
        env_start,
        env_end: env_start,
        auxv: std::ptr::null_mut(),
        auxv_size: 0,
        exe_fd: -1,
    };
    // Read last, with nothing allocated after it, so the break passed is the current one.
    map.brk = current_break()?;
    // SAFETY: every address is the kernel's own current value for this process except
    // `env_end`, which moves down onto `env_start` (an empty range). The kernel uses
    // `env_start`/`env_end` only to serve /proc/<pid>/environ and to check later prctl calls;
    // no memory is mapped, unmapped or written, so every pointer in the process stays valid.
    // With `auxv_size` 0 the saved auxiliary vector is kept, with `exe_fd` -1 the executable.
    // The break cannot have moved since `current_break` (a single thread, no allocation).
    unsafe { rustix::process::configure_virtual_memory_map(&map) }?;
    Ok(())
}

/// The process's current program break, as `brk(0)` reports it.
fn current_break() -> io::Result<u64> {
    // rustix has no wrapper for brk outside its runtime feature.
    // SAFETY: brk with 0 asks for the current break and changes nothing (0 lies below the
    // heap's start, which the kernel refuses as a new break).
    let brk = unsafe { libc::syscall(libc::SYS_brk, 0usize) };
    u64::try_from(brk)
        .ok()
        .filter(|b| *b != 0)
        .ok_or_else(|| io::Error::other("brk(0) reported no break"))
}

/// Field `number` (1-based, as `proc(5)` counts) of a `/proc/<pid>/stat` line. The command
/// name (field 2) is in parentheses and may hold spaces and parentheses itself, so fields are
/// counted from the last `)`.
fn field_after_command(stat: &str, number: usize) -> Option<&str> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(number.checked_sub(3)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let line = "42 (a) b) (c) S 1 2 3";
        assert_eq!(field_after_command(line, 3), Some("S"));
        assert_eq!(field_after_command(line, 6), Some("3"));
        assert_eq!(field_after_command(line, 7), None);
        assert_eq!(field_after_command("no name", 3), None);
    }

    #[test]
    fn a_process_with_threads_is_left_alone() {
        // The test harness runs tests on threads of their own, so this refuses and changes
        // nothing (the real call is tested end to end, on the binary).
        let _second = std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_secs(2)));
        assert!(hide_from_proc().is_err());
        let environ = std::fs::read("/proc/self/environ").unwrap_or_default();
        assert!(!environ.is_empty() || std::env::vars_os().next().is_none());
    }
}

//! The command's process group: signalling all of it, telling whether any of it still runs, and
//! killing it when the run is abandoned.
//!
//! Every RUN command leads a session and process group of its own, so one `killpg` reaches the
//! shell and everything it started, including background jobs whose parent already exited.
//! A descendant that starts a new session of its own (`setsid`) leaves the group; pai is
//! therefore a child subreaper while commands run: such an orphan becomes pai's child when its
//! parent exits, and is killed and reaped when the step ends ([`Orphans`]).

use std::fs;

/// Send `signal` to every process in group `pgid`. Failure (the group is already empty) is not
/// an error for a caller that only wants the group gone.
pub(crate) fn signal_group(pgid: libc::pid_t, signal: libc::c_int) {
    // SAFETY: killpg only takes integers; a positive pgid never addresses "every process".
    if pgid > 1 {
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
}

/// Whether group `pgid` still has a member that is not a zombie. Zombies count as gone: they run
/// nothing, and orphans are reaped by init on its own schedule (or never, in some containers).
pub(crate) fn has_live_members(pgid: libc::pid_t) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence.
    if unsafe { libc::killpg(pgid, 0) } != 0 {
        // ESRCH: empty. EPERM: its members are beyond our reach, so waiting for them is useless.
        return false;
    }
    let Ok(entries) = fs::read_dir("/proc") else {
        return true; // no /proc to tell zombies apart: trust killpg
    };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            return false;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false; // it exited while we looked
        };
        matches!(parse_stat(&stat), Some((state, pgrp)) if pgrp == pgid && !matches!(state, 'Z' | 'X' | 'x'))
    })
}

/// The state letter and process group from a `/proc/<pid>/stat` line. The command name sits in
/// parentheses and may itself contain spaces and parentheses, so fields are read after the last
/// `)`: ` state ppid pgrp ...`.
fn parse_stat(stat: &str) -> Option<(char, libc::pid_t)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// pai's direct children as `/proc` lists them.
fn children() -> Vec<libc::pid_t> {
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: libc::pid_t = entry.file_name().to_str()?.parse().ok()?;
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let rest = &stat[stat.rfind(')')? + 1..];
            let ppid: libc::pid_t = rest.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == me).then_some(pid)
        })
        .collect()
}

/// The descendants a command leaves behind after escaping its process group. Taken before the
/// command starts (pai becomes a child subreaper then); [`Orphans::kill`] after it ended
/// kills and reaps every child pai gained meanwhile, and the children those had.
pub(crate) struct Orphans {
    before: Vec<libc::pid_t>,
    /// The value of [`MARKER`] this run's processes carry: only they are killed, never a
    /// child of another run of the same process (tests run commands side by side).
    id: String,
}

/// The environment variable that marks a run's processes. A descendant that clears its
/// environment and leaves the process group escapes this (documented).
const MARKER: &str = "PAIRUN_MARK";

/// Whether process `pid` carries `MARKER=id` in its environment.
fn carries(pid: libc::pid_t, id: &str) -> bool {
    let wanted = format!("{MARKER}={id}");
    fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|b| *b == 0).any(|kv| kv == wanted.as_bytes()))
        .unwrap_or(false)
}

impl Orphans {
    /// Note pai's children now, and make orphans of later descendants pai's children.
    pub(crate) fn watch() -> Orphans {
        // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) only sets this process's attribute.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: getpid cannot fail.
        let me = unsafe { libc::getpid() };
        Orphans {
            before: children(),
            id: format!("{me}-{n}"),
        }
    }

    /// The environment variable and value the run's command gets.
    pub(crate) fn marker(&self) -> (&str, &str) {
        (MARKER, &self.id)
    }

    /// Kill and reap what the command left behind; returns how many processes were killed.
    pub(crate) fn kill(&self) -> usize {
        let mut killed = 0;
        // Killing an orphan hands its own children to pai: a few rounds reach them too.
        for _ in 0..8 {
            let left: Vec<libc::pid_t> = children()
                .into_iter()
                .filter(|p| !self.before.contains(p) && carries(*p, &self.id))
                .collect();
            if left.is_empty() {
                break;
            }
            for pid in &left {
                // SAFETY: signalling and reaping our own child processes.
                unsafe {
                    libc::kill(*pid, libc::SIGKILL);
                }
            }
            for pid in &left {
                let mut status = 0;
                for _ in 0..50 {
                    // SAFETY: waitpid on our own child with a valid out-pointer.
                    let r = unsafe { libc::waitpid(*pid, &mut status, libc::WNOHANG) };
                    if r != 0 {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
            killed += left.len();
        }
        killed
    }
}

/// Kills the whole group with SIGKILL when dropped while armed: dropping a `run_command` future
/// (cancellation) must not leave the command or its children behind.
#[derive(Debug)]
pub(crate) struct GroupGuard {
    pgid: libc::pid_t,
    armed: bool,
}

impl GroupGuard {
    /// Guard group `pgid`.
    pub(crate) fn new(pgid: libc::pid_t) -> Self {
        Self { pgid, armed: true }
    }

    /// The run finished and the group was dealt with: do nothing on drop (the group id may be
    /// reused once empty, so it must not be signalled later).
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            signal_group(self.pgid, libc::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_lines_with_awkward_command_names() {
        assert_eq!(parse_stat("123 (sleep) S 1 123 123 0 -1"), Some(('S', 123)));
        assert_eq!(parse_stat("77 (a) b (c)) Z 5 70 70 0"), Some(('Z', 70)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn our_own_group_is_alive_and_a_bogus_one_is_not() {
        // SAFETY: getpgrp cannot fail.
        let own = unsafe { libc::getpgrp() };
        if own > 1 {
            assert!(has_live_members(own));
        }
        assert!(!has_live_members(0));
        assert!(!has_live_members(1));
        assert!(!has_live_members(i32::MAX - 7));
    }
}

//! The command's process group: signalling all of it, telling whether any of it still runs, and
//! killing it when the run is abandoned.
//!
//! Every RUN command leads a session and process group of its own, so one `killpg` reaches the
//! shell and everything it started, including background jobs whose parent already exited.
//! (A descendant that starts a new session of its own leaves the group; only a cgroup or a PID
//! namespace could follow it, which pai does not set up.)

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

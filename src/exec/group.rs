//! The command's process group: signalling all of it, telling whether any of it still runs, and
//! killing it when the run is abandoned.
//!
//! Every RUN command leads a session and process group of its own, so one `killpg` reaches the
//! shell and everything it started, including background jobs whose parent already exited.
//! A descendant that starts a new session of its own (`setsid`) leaves the group; pai is
//! therefore a child subreaper while commands run: such an orphan becomes pai's child when its
//! parent exits, and is killed and reaped when the step ends ([`Orphans`]).

use std::fs;

use rustix::process::{self, Pid, Signal, WaitOptions};

/// `raw` as a process id when it names one process or group: 0 and negative ids address
/// whole sets of processes in kill(2), and `Pid::from_raw` debug-asserts against them.
fn one_pid(raw: libc::pid_t) -> Option<Pid> {
    if raw > 0 { Pid::from_raw(raw) } else { None }
}

/// Send `signal` to every process in group `pgid`. Failure (the group is already empty) is not
/// an error for a caller that only wants the group gone.
pub(crate) fn signal_group(pgid: libc::pid_t, signal: Signal) {
    // Group 1 is init's: never a command's own group.
    if pgid > 1
        && let Some(pgid) = one_pid(pgid)
    {
        let _ = process::kill_process_group(pgid, signal);
    }
}

/// Whether group `pgid` still has a member that is not a zombie. Zombies count as gone: they run
/// nothing, and orphans are reaped by init on its own schedule (or never, in some containers).
pub(crate) fn has_live_members(pgid: libc::pid_t) -> bool {
    let Some(group) = one_pid(pgid).filter(|_| pgid > 1) else {
        return false;
    };
    if process::test_kill_process_group(group).is_err() {
        // ESRCH: empty. EPERM: its members are beyond our reach, so waiting for them is useless.
        return false;
    }
    let Some(processes) = crate::procfs::processes() else {
        return true; // no /proc to tell zombies apart: trust killpg
    };
    processes
        .iter()
        .any(|(_, stat)| stat.pgrp == pgid && !stat.exited())
}

/// pai's direct children as `/proc` lists them.
fn children() -> Vec<libc::pid_t> {
    let me = process::getpid().as_raw_pid();
    crate::procfs::children_of(me)
        .into_iter()
        .map(|(pid, _)| pid)
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
///
/// A process in the middle of `execve` (a daemon's `setsid` becoming its shell, say) reads as
/// an empty environment for that moment, and would be taken for one that is not the run's:
/// an empty read of a live process is tried again for a short while before it counts.
fn carries(pid: libc::pid_t, id: &str) -> bool {
    let wanted = format!("{MARKER}={id}");
    for _ in 0..20 {
        match fs::read(format!("/proc/{pid}/environ")) {
            Ok(env) if !env.is_empty() => {
                return env.split(|b| *b == 0).any(|kv| kv == wanted.as_bytes());
            }
            Ok(_) if is_live(pid) => std::thread::sleep(std::time::Duration::from_millis(5)),
            _ => return false,
        }
    }
    false
}

/// Whether `pid` is a process that has not exited (a zombie's environment is empty for good).
fn is_live(pid: libc::pid_t) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|line| crate::procfs::parse_stat(&line))
        .is_some_and(|stat| !stat.exited())
}

impl Orphans {
    /// Note pai's children now, and make orphans of later descendants pai's children.
    pub(crate) fn watch() -> Orphans {
        let me = process::getpid();
        // The kernel only reads whether the argument is non-zero; rustix spells it as a pid.
        // Best effort: without it orphans are reaped by init instead.
        let _ = process::set_child_subreaper(Some(me));
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let me = me.as_raw_pid();
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
            let targets: Vec<Pid> = left.iter().copied().filter_map(one_pid).collect();
            for pid in &targets {
                let _ = process::kill_process(*pid, Signal::KILL);
            }
            for pid in &targets {
                for _ in 0..50 {
                    // Reaped, or an error (no longer our child): either way nothing to wait for.
                    if !matches!(process::waitpid(Some(*pid), WaitOptions::NOHANG), Ok(None)) {
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
            signal_group(self.pgid, Signal::KILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_group_is_alive_and_a_bogus_one_is_not() {
        let own = process::getpgrp().as_raw_pid();
        if own > 1 {
            assert!(has_live_members(own));
        }
        assert!(!has_live_members(0));
        assert!(!has_live_members(1));
        assert!(!has_live_members(i32::MAX - 7));
    }
}

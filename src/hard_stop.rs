//! The second stop signal ends pai within a second, whatever state it is in.
//!
//! The first Ctrl+C (or SIGTERM, SIGHUP) stops a turn gracefully: the command frontends and
//! the interactive session listen for it on the async runtime, cancel the turn, let a commit
//! under way finish and exit. That path needs the runtime to make progress. When it does not (a
//! step stuck in a system call, a command that ignores SIGTERM during its grace period, a
//! blocked worker), a user who presses Ctrl+C again, or a supervisor that sends a second
//! signal, must still get their terminal back. So while a graceful handler is installed, every
//! stop signal is also counted here, outside the runtime: a second one that arrives before the
//! graceful path has settled the first arms a watchdog thread, which gives that path a short
//! grace and then kills what pai started, puts the terminal back and ends the process.
//!
//! Ending the process mid-operation is safe for the same reason a SIGKILL is: every history
//! operation is journalled, and the next command finishes or rolls it back.

use std::os::fd::AsFd as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::time::Duration;

/// The signals that ask pai to stop.
const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// How long the graceful path may still take after the second signal. Short enough that the
/// whole stop stays within a second of the press on a loaded machine (killing the children
/// and restoring the terminal take the rest); long enough for a turn that is already
/// unwinding to print its summary.
const GRACE: Duration = Duration::from_millis(400);

/// Stop signals received since the graceful path last settled.
static PENDING: AtomicU32 = AtomicU32::new(0);

/// The write end of the pipe the watchdog waits on; -1 until installed.
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);

/// The terminal's settings when pai started, put back by a hard stop.
static TERMINAL: OnceLock<rustix::termios::Termios> = OnceLock::new();

/// Whether a signal count means the process must end: a second signal before the first was
/// settled.
fn must_end(pending: u32) -> bool {
    pending >= 2
}

/// Count stop signals and arm the watchdog on a second unsettled one. Idempotent; call it
/// where a graceful handler for the same signals is installed (the handler replaces the
/// signals' default action, so without one the first signal would no longer stop pai).
pub fn install() {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    INSTALLED.get_or_init(|| install_once().is_ok());
}

fn install_once() -> std::io::Result<()> {
    if let Ok(saved) = rustix::termios::tcgetattr(std::io::stdin()) {
        let _ = TERMINAL.set(saved);
    }
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    std::thread::Builder::new()
        .name("pai-hard-stop".into())
        .spawn(move || watchdog(read))?;
    WAKE_FD.store(std::os::fd::IntoRawFd::into_raw_fd(write), Ordering::SeqCst);
    for signal in STOP_SIGNALS {
        // SAFETY: the action is async-signal-safe (see `on_stop_signal`).
        // signal-hook-registry runs it alongside the runtime's own handler for the same
        // signal, which stays registered.
        unsafe { signal_hook_registry::register(signal, move || on_stop_signal(signal)) }?;
    }
    Ok(())
}

/// Runs in the signal handler: only atomics and write(2), both async-signal-safe; nothing
/// allocates or takes a lock.
fn on_stop_signal(signal: i32) {
    let pending = PENDING.fetch_add(1, Ordering::SeqCst).saturating_add(1);
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if must_end(pending) && fd >= 0 {
        let byte = u8::try_from(signal).unwrap_or(u8::MAX);
        // SAFETY: `fd` is the pipe's write end, kept open for the life of the process, and
        // the buffer is one live byte.
        unsafe {
            libc::write(fd, std::ptr::from_ref(&byte).cast(), 1);
        }
    }
}

/// The graceful path has dealt with the signals received so far (a turn stopped and the
/// session goes on): the next one is a first again.
pub fn settled() {
    PENDING.store(0, Ordering::SeqCst);
}

/// Wait for a second signal, give the graceful path [`GRACE`], then end the process.
fn watchdog(read: std::os::fd::OwnedFd) {
    let mut byte = [0u8; 1];
    loop {
        match rustix::io::read(&read, &mut byte) {
            Ok(1) => break,
            Ok(_) => return, // the write end is gone: nothing can wake us
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return,
        }
    }
    std::thread::sleep(GRACE);
    kill_children();
    restore_terminal();
    // SAFETY: _exit ends the process without running atexit handlers or destructors, which
    // could block on the very state that kept the graceful path from finishing.
    unsafe { libc::_exit(128 + i32::from(byte[0])) }
}

/// Kill what pai started and would otherwise leave running: every child's process group (a
/// RUN command leads one of its own, with whatever it started), or the child alone when it
/// shares pai's group. Orphans of RUN commands are pai's children too (it is their subreaper).
fn kill_children() {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let my_group = rustix::process::getpgrp().as_raw_nonzero().get();
    for (pid, stat) in crate::procfs::children_of(me) {
        // SAFETY: kill(2) with a positive id addresses one process or one group; pids and
        // groups 0 and 1 (everyone, init) are never addressed.
        unsafe {
            if stat.pgrp > 1 && stat.pgrp != my_group {
                libc::kill(-stat.pgrp, libc::SIGKILL);
            } else if pid > 1 {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// Put the terminal back as pai found it and show the cursor a spinner may have hidden.
fn restore_terminal() {
    if let Some(saved) = TERMINAL.get() {
        let _ = rustix::termios::tcsetattr(
            std::io::stdin(),
            rustix::termios::OptionalActions::Now,
            saved,
        );
    }
    if rustix::termios::isatty(std::io::stderr().as_fd()) {
        let _ = rustix::io::write(std::io::stderr().as_fd(), b"\x1b[?25h\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_second_unsettled_signal_ends_the_process() {
        assert!(!must_end(0));
        assert!(!must_end(1));
        assert!(must_end(2));
        assert!(must_end(7));
    }
}

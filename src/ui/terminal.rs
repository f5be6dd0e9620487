//! Leaving the terminal as it was found, on every way out: the terminal modes of stdin are
//! saved when a session starts and put back when it ends, when it is dropped during unwinding,
//! and from a panic hook (which runs before anything else can print over a raw-mode screen).
//! In rich mode the cursor is also shown again and bracketed paste switched off, in case a
//! prompt or the line editor was interrupted halfway.

use std::io::IsTerminal;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};

use rustix::termios::{LocalModes, OptionalActions, Termios, tcgetattr, tcsetattr};

static SAVED: Mutex<Option<Termios>> = Mutex::new(None);
static RICH: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

/// Restores the terminal when dropped.
pub(crate) struct TerminalGuard;

impl TerminalGuard {
    /// Save the current modes and arrange for their restoration. `rich`: escape sequences
    /// may be written to stdout.
    pub(crate) fn install(rich: bool) -> Self {
        RICH.store(rich, Ordering::SeqCst);
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            let saved = tcgetattr(stdin.as_fd()).ok();
            if let Ok(mut slot) = SAVED.lock() {
                *slot = saved;
            }
        }
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
        });
        TerminalGuard
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
        RICH.store(false, Ordering::SeqCst);
        if let Ok(mut slot) = SAVED.lock() {
            *slot = None;
        }
    }
}

/// Put the saved modes back (if a session saved any) and, in rich mode, show the cursor.
fn restore() {
    // try_lock: a panic while the lock is held must not deadlock the hook.
    if let Ok(slot) = SAVED.try_lock()
        && let Some(modes) = slot.as_ref()
    {
        let _ = tcsetattr(std::io::stdin().as_fd(), OptionalActions::Drain, modes);
    }
    if RICH.load(Ordering::SeqCst) && std::io::stdout().is_terminal() {
        super::stream::write(super::stream::Stream::Out, b"\x1b[?25h\x1b[?2004l");
    }
}

/// Switch the terminal's echo of typed keys off (`false`) while a turn draws a spinner and
/// panels, and back on. Otherwise a key typed during a turn, Ctrl+C's `^C` among them, lands in
/// the middle of the drawing (after a full-width spinner line it even wraps and leaves the
/// spinner behind). Line editing and Ctrl+C keep working; prompts set their own modes.
pub(crate) fn set_echo(on: bool) {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return;
    }
    // Passed back unchanged except for the ECHO bit.
    let Ok(mut modes) = tcgetattr(stdin.as_fd()) else {
        return;
    };
    modes.local_modes.set(LocalModes::ECHO, on);
    let _ = tcsetattr(stdin.as_fd(), OptionalActions::Drain, &modes);
}

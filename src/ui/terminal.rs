//! Leaving the terminal as it was found, on every way out: the terminal modes of stdin are
//! saved when a session starts and put back when it ends, when it is dropped during unwinding,
//! and from a panic hook (which runs before anything else can print over a raw-mode screen).
//! In rich mode the cursor is also shown again and bracketed paste switched off, in case a
//! prompt or the line editor was interrupted halfway.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};

static SAVED: Mutex<Option<libc::termios>> = Mutex::new(None);
static RICH: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

/// Restores the terminal when dropped.
pub(crate) struct TerminalGuard;

impl TerminalGuard {
    /// Save the current modes and arrange for their restoration. `rich`: escape sequences
    /// may be written to stdout.
    pub(crate) fn install(rich: bool) -> Self {
        RICH.store(rich, Ordering::SeqCst);
        if std::io::stdin().is_terminal() {
            let mut modes = std::mem::MaybeUninit::<libc::termios>::uninit();
            // SAFETY: tcgetattr fills the struct when it returns 0; fd 0 is open (it is a
            // terminal, checked above).
            let saved = unsafe {
                if libc::tcgetattr(libc::STDIN_FILENO, modes.as_mut_ptr()) == 0 {
                    Some(modes.assume_init())
                } else {
                    None
                }
            };
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
        // SAFETY: `modes` is a valid termios obtained from tcgetattr on the same fd.
        unsafe {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSADRAIN, modes);
        }
    }
    if RICH.load(Ordering::SeqCst) && std::io::stdout().is_terminal() {
        let mut out = std::io::stdout();
        let _ = out.write_all(b"\x1b[?25h\x1b[?2004l");
        let _ = out.flush();
    }
}

/// Switch the terminal's echo of typed keys off (`false`) while a turn draws a spinner and
/// panels, and back on. Otherwise a key typed during a turn, Ctrl+C's `^C` among them, lands in
/// the middle of the drawing (after a full-width spinner line it even wraps and leaves the
/// spinner behind). Line editing and Ctrl+C keep working; prompts set their own modes.
pub(crate) fn set_echo(on: bool) {
    if !std::io::stdin().is_terminal() {
        return;
    }
    let mut modes = std::mem::MaybeUninit::<libc::termios>::uninit();
    // SAFETY: tcgetattr fills the struct when it returns 0; it is used only then, and passed
    // back unchanged except for the ECHO bit.
    unsafe {
        if libc::tcgetattr(libc::STDIN_FILENO, modes.as_mut_ptr()) != 0 {
            return;
        }
        let mut modes = modes.assume_init();
        if on {
            modes.c_lflag |= libc::ECHO;
        } else {
            modes.c_lflag &= !libc::ECHO;
        }
        libc::tcsetattr(libc::STDIN_FILENO, libc::TCSADRAIN, &modes);
    }
}

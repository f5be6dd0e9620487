//! Ctrl+C while the terminal is in its normal (cooked) mode, that is during a turn or at a
//! plain prompt: SIGINT is caught for the whole session, the running turn's token is cancelled
//! at once (from the listener task, so it works even while the session's own task is blocked
//! in an approval prompt), and the time of each press is queued for the session loop, which
//! decides whether it was the second press within 2 seconds. In the line editor's raw mode
//! Ctrl+C arrives as a key instead and the editor reports it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The session's SIGINT listener.
pub(crate) struct Interrupts {
    presses: UnboundedReceiver<Instant>,
    turn: Arc<Mutex<Option<CancellationToken>>>,
    task: Option<JoinHandle<()>>,
    /// The SIGTERM/SIGHUP listener.
    ending: Option<JoinHandle<()>>,
}

impl Interrupts {
    /// Start listening. Without a signal driver (no runtime with signals enabled) Ctrl+C keeps
    /// its default effect and this reports nothing.
    pub(crate) fn listen() -> Self {
        // A second signal while the first is still stopping a turn ends the process.
        crate::hard_stop::install();
        let (tx, presses) = unbounded_channel();
        let tx_end = tx.clone();
        let turn: Arc<Mutex<Option<CancellationToken>>> = Arc::new(Mutex::new(None));
        let task = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
            Ok(mut signal) => {
                let turn = Arc::clone(&turn);
                Some(tokio::spawn(async move {
                    while signal.recv().await.is_some() {
                        let at = Instant::now();
                        if let Ok(slot) = turn.lock()
                            && let Some(token) = slot.as_ref()
                        {
                            token.cancel();
                        }
                        if tx.send(at).is_err() {
                            break;
                        }
                    }
                }))
            }
            Err(_) => None,
        };
        // SIGTERM and SIGHUP end the session. During a turn they stop it the way a double
        // Ctrl+C does (the turn unwinds, its plan is recorded, no lock is left); at the prompt
        // nothing is under way, so pai exits at once.
        let ending = {
            use tokio::signal::unix::{SignalKind, signal};
            match (
                signal(SignalKind::terminate()),
                signal(SignalKind::hangup()),
            ) {
                (Ok(mut term), Ok(mut hup)) => {
                    let turn = Arc::clone(&turn);
                    let tx = tx_end;
                    Some(tokio::spawn(async move {
                        let code = tokio::select! {
                            _ = term.recv() => 128 + libc::SIGTERM,
                            _ = hup.recv() => 128 + libc::SIGHUP,
                        };
                        let running = turn.lock().ok().and_then(|slot| slot.clone());
                        match running {
                            Some(token) => {
                                token.cancel();
                                let at = Instant::now();
                                let _ = tx.send(at);
                                let _ = tx.send(at);
                            }
                            None => std::process::exit(code),
                        }
                    }))
                }
                _ => None,
            }
        };
        Self {
            presses,
            turn,
            task,
            ending,
        }
    }

    /// Cancel `token` on the next Ctrl+C (the turn that is starting).
    pub(crate) fn arm(&self, token: &CancellationToken) {
        if let Ok(mut slot) = self.turn.lock() {
            *slot = Some(token.clone());
        }
    }

    /// No turn is running: the presses so far have been dealt with.
    pub(crate) fn disarm(&self) {
        crate::hard_stop::settled();
        if let Ok(mut slot) = self.turn.lock() {
            *slot = None;
        }
    }

    /// The next press (waits forever when not listening).
    pub(crate) async fn next(&mut self) -> Instant {
        match self.presses.recv().await {
            Some(at) => at,
            None => std::future::pending().await,
        }
    }

    /// A press already queued, if any.
    pub(crate) fn try_next(&mut self) -> Option<Instant> {
        self.presses.try_recv().ok()
    }
}

impl Drop for Interrupts {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        if let Some(task) = self.ending.take() {
            task.abort();
        }
    }
}

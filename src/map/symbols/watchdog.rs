//! The time budget of one extraction. tree-sitter stops a parse (and the tags crate its
//! matching) only when a cancellation flag is raised from outside, so each extractor keeps one
//! small timer thread that raises the flag of the extraction in progress once its deadline has
//! passed. A fresh flag per extraction means a late timer can never cancel the next one.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread;
use std::time::Instant;

/// What the extractor tells its timer thread.
enum Msg {
    /// An extraction started: raise this flag at this instant unless disarmed first.
    Arm(Arc<AtomicUsize>, Instant),
    /// The extraction ended.
    Disarm,
}

/// The timer thread of one extractor; it ends when this is dropped.
pub(super) struct Watchdog {
    tx: Sender<Msg>,
}

/// Disarms the watchdog when the extraction ends, however it ends.
pub(super) struct Armed<'a> {
    tx: &'a Sender<Msg>,
}

impl Watchdog {
    /// Starts the timer thread.
    pub(super) fn start() -> io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        thread::Builder::new()
            .name("pai-map-timer".into())
            .spawn(move || run(&rx))?;
        Ok(Self { tx })
    }

    /// Raises `flag` at `deadline` unless the returned guard is dropped before.
    pub(super) fn arm(&self, flag: Arc<AtomicUsize>, deadline: Instant) -> Armed<'_> {
        // A send fails only when the thread is gone (it panicked); the extraction then runs
        // unbounded rather than not at all.
        let _ = self.tx.send(Msg::Arm(flag, deadline));
        Armed { tx: &self.tx }
    }
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Disarm);
    }
}

/// The timer loop: wait for an extraction, then for its end or its deadline.
fn run(rx: &mpsc::Receiver<Msg>) {
    while let Ok(msg) = rx.recv() {
        let Msg::Arm(mut flag, mut deadline) = msg else {
            continue;
        };
        loop {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Msg::Disarm) => break,
                // Not sent while armed (every Arm is followed by its Disarm); take the newer.
                Ok(Msg::Arm(f, d)) => (flag, deadline) = (f, d),
                Err(RecvTimeoutError::Timeout) => {
                    flag.store(1, Ordering::SeqCst);
                    break;
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

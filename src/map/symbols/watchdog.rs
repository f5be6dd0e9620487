//! The time budget of one extraction. tree-sitter stops a parse (and the tags crate its
//! matching) only when a cancellation flag is raised from outside, so each extractor keeps one
//! small timer thread that raises the flag of the extraction in progress once its budget is
//! spent. A fresh flag per extraction means a late timer can never cancel the next one.
//!
//! The budget counts the extracting thread's CPU time, not the clock's: the cut-off exists
//! for inputs that make a grammar work too long, and a loaded machine that merely runs the
//! thread less must not change which symbols a map finds (nor make a map differ from run to
//! run). Where the thread's CPU clock cannot be read, wall-clock time is the budget.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

/// What the extractor tells its timer thread.
enum Msg {
    /// An extraction started: raise this flag once the budget is spent, unless disarmed first.
    Arm(Arc<AtomicUsize>, Budget),
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

    /// Raises `flag` once the calling thread has used `budget` of CPU time from now, unless
    /// the returned guard is dropped before.
    pub(super) fn arm(&self, flag: Arc<AtomicUsize>, budget: Duration) -> Armed<'_> {
        // A send fails only when the thread is gone (it panicked); the extraction then runs
        // unbounded rather than not at all.
        let _ = self.tx.send(Msg::Arm(flag, Budget::start(budget)));
        Armed { tx: &self.tx }
    }
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Disarm);
    }
}

/// One extraction's budget: the CPU time it may use, measured on the extracting thread's
/// CPU clock from where it stood when the extraction started.
struct Budget {
    allowed: Duration,
    clock: Option<(libc::clockid_t, Duration)>,
    started: Instant,
}

impl Budget {
    /// A budget for the calling thread, starting now.
    fn start(allowed: Duration) -> Budget {
        let clock = own_cpu_clock().and_then(|id| Some((id, cpu_time(id)?)));
        Budget {
            allowed,
            clock,
            started: Instant::now(),
        }
    }

    /// How much of the budget is left: CPU time where the thread's clock can be read, wall
    /// time otherwise. A thread's CPU time never runs ahead of the wall clock, so the first
    /// wait (the whole budget) is never too long.
    fn left(&self) -> Duration {
        let used = match self.clock {
            Some((id, at_start)) => match cpu_time(id) {
                Some(now) => now.saturating_sub(at_start),
                // The thread is gone (its extraction ended): nothing is left to cancel.
                None => self.allowed,
            },
            None => self.started.elapsed(),
        };
        self.allowed.saturating_sub(used)
    }
}

/// The calling thread's CPU clock.
fn own_cpu_clock() -> Option<libc::clockid_t> {
    let mut id: libc::clockid_t = 0;
    // SAFETY: pthread_self() is the calling thread's live handle, and `id` is a valid place
    // for the result.
    let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
    (rc == 0).then_some(id)
}

/// The CPU time a thread's clock `id` reads now; `None` when it cannot be read.
fn cpu_time(id: libc::clockid_t) -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; an invalid clock id only makes the call
    // fail with EINVAL.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    (rc == 0).then(|| {
        Duration::new(
            u64::try_from(ts.tv_sec).unwrap_or(0),
            u32::try_from(ts.tv_nsec).unwrap_or(0),
        )
    })
}

/// The timer loop: wait for an extraction, then for its end or until its budget is spent.
fn run(rx: &mpsc::Receiver<Msg>) {
    while let Ok(msg) = rx.recv() {
        let Msg::Arm(mut flag, mut budget) = msg else {
            continue;
        };
        let mut wait = budget.allowed;
        loop {
            match rx.recv_timeout(wait) {
                Ok(Msg::Disarm) => break,
                // Not sent while armed (every Arm is followed by its Disarm); take the newer.
                Ok(Msg::Arm(f, b)) => {
                    (flag, budget) = (f, b);
                    wait = budget.allowed;
                }
                Err(RecvTimeoutError::Timeout) => {
                    wait = budget.left();
                    if wait.is_zero() {
                        flag.store(1, Ordering::SeqCst);
                        break;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread that is merely not running (asleep, or starved on a loaded machine) keeps
    /// its budget: only the CPU time it uses counts.
    #[test]
    fn time_the_thread_does_not_run_is_not_spent() {
        let dog = Watchdog::start().unwrap();
        let flag = Arc::new(AtomicUsize::new(0));
        let armed = dog.arm(Arc::clone(&flag), Duration::from_millis(50));
        thread::sleep(Duration::from_millis(300));
        assert_eq!(flag.load(Ordering::SeqCst), 0);
        drop(armed);
    }

    /// A thread that works past its budget is cancelled, soon after the budget is spent.
    #[test]
    fn cpu_time_past_the_budget_cancels() {
        let dog = Watchdog::start().unwrap();
        let flag = Arc::new(AtomicUsize::new(0));
        let armed = dog.arm(Arc::clone(&flag), Duration::from_millis(50));
        let started = Instant::now();
        let mut x = 0u64;
        while flag.load(Ordering::SeqCst) == 0 && started.elapsed() < Duration::from_secs(60) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        assert_eq!(flag.load(Ordering::SeqCst), 1, "{x}");
        drop(armed);
    }
}

//! How long a process spent waiting on the programs it started (RUN commands), measured exactly
//! with the kernel's process-event connector (netlink `NETLINK_CONNECTOR`, `CN_IDX_PROC`): every
//! fork and exit on the machine arrives with a nanosecond timestamp, so the lifetime of each
//! child of a given process is known without touching that process. Where the kernel refuses
//! the subscription (some kernels want `CAP_NET_ADMIN`) or delivers nothing,
//! [`ChildWatch::start`] returns `None` and the caller falls back to an estimate.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const NETLINK_CONNECTOR: libc::c_int = 11;
const CN_IDX_PROC: u32 = 1;
const CN_VAL_PROC: u32 = 1;
const PROC_CN_MCAST_LISTEN: u32 = 1;
const PROC_CN_MCAST_IGNORE: u32 = 2;
const PROC_EVENT_FORK: u32 = 1;
const PROC_EVENT_EXIT: u32 = 0x8000_0000;
/// `nlmsghdr` (16 bytes) + `cn_msg` header (20 bytes).
const HEADERS: usize = 36;

/// A process event.
#[derive(Debug, Clone, Copy)]
enum Event {
    /// A new process (not a thread) `child`, started by a thread of process `parent`.
    Fork { parent: u32, child: u32, at: u64 },
    /// Process `pid` ended.
    Exit { pid: u32, at: u64 },
}

/// A subscription to the machine's process events, read by a background thread.
pub struct ChildWatch {
    fd: Arc<OwnedFd>,
    events: Arc<Mutex<Vec<Event>>>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
}

fn u32_at(buf: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(buf.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(buf: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(buf.get(at..at + 8)?.try_into().ok()?))
}

/// One netlink message to the connector: listen or stop listening.
fn control(fd: &OwnedFd, op: u32) -> bool {
    let mut msg = Vec::with_capacity(HEADERS + 4);
    let len = u32::try_from(HEADERS + 4).unwrap_or(0);
    // nlmsghdr: length, type NLMSG_DONE, flags, sequence, port.
    msg.extend_from_slice(&len.to_ne_bytes());
    msg.extend_from_slice(&(libc::NLMSG_DONE as u16).to_ne_bytes());
    msg.extend_from_slice(&0u16.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&std::process::id().to_ne_bytes());
    // cn_msg: id {idx, val}, seq, ack, len, flags.
    msg.extend_from_slice(&CN_IDX_PROC.to_ne_bytes());
    msg.extend_from_slice(&CN_VAL_PROC.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&4u16.to_ne_bytes());
    msg.extend_from_slice(&0u16.to_ne_bytes());
    msg.extend_from_slice(&op.to_ne_bytes());
    // SAFETY: sends `msg.len()` bytes from a live buffer on a socket this module owns.
    let sent = unsafe { libc::send(fd.as_raw_fd(), msg.as_ptr().cast(), msg.len(), 0) };
    usize::try_from(sent).is_ok_and(|n| n == msg.len())
}

impl ChildWatch {
    /// Subscribes, or `None` when the kernel or the privileges do not allow it.
    pub fn start() -> Option<ChildWatch> {
        // SAFETY: plain socket calls; every result is checked and the descriptor is owned below.
        let fd = unsafe {
            let raw = libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                NETLINK_CONNECTOR,
            );
            if raw < 0 {
                return None;
            }
            OwnedFd::from_raw_fd(raw)
        };
        // SAFETY: a zeroed sockaddr_nl is valid; the fields set are plain integers.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        addr.nl_groups = CN_IDX_PROC;
        let big: libc::c_int = 8 << 20;
        let tick = libc::timeval {
            tv_sec: 0,
            tv_usec: 50_000,
        };
        // SAFETY: the pointers and lengths describe live locals of the right types.
        let ok = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&raw const addr).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            ) == 0
                && libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_RCVBUF,
                    (&raw const big).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                ) == 0
                && libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_RCVTIMEO,
                    (&raw const tick).cast(),
                    std::mem::size_of::<libc::timeval>() as libc::socklen_t,
                ) == 0
        };
        if !ok || !control(&fd, PROC_CN_MCAST_LISTEN) {
            return None;
        }
        let fd = Arc::new(fd);
        let events = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (fd, events, stop) = (Arc::clone(&fd), Arc::clone(&events), Arc::clone(&stop));
            std::thread::spawn(move || read_events(&fd, &events, &stop))
        };
        let watch = ChildWatch {
            fd,
            events,
            stop,
            reader: Some(reader),
        };
        // Unprivileged subscriptions are accepted but deliver nothing: prove one event arrives.
        let mut probe = std::process::Command::new("true").spawn().ok()?;
        let _ = probe.wait();
        watch.wait_for_exit(probe.id()).then_some(watch)
    }

    /// Waits (up to a second) until the exit of `pid` has been read, so every event before it
    /// has been too.
    fn wait_for_exit(&self, pid: u32) -> bool {
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            let seen = self
                .events
                .lock()
                .map(|e| {
                    e.iter()
                        .any(|ev| matches!(ev, Event::Exit { pid: p, .. } if *p == pid))
                })
                .unwrap_or(false);
            if seen {
                return true;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        false
    }

    /// Forgets the events so far.
    pub fn clear(&self) {
        if let Ok(mut e) = self.events.lock() {
            e.clear();
        }
    }

    /// Total time during which at least one child of process `parent` was alive, since the
    /// last [`ChildWatch::clear`]; call after `parent` ended. `None` when a child's exit was
    /// never seen (events lost).
    pub fn children_time(&self, parent: u32) -> Option<Duration> {
        // A process of our own, started now, exits after every child of `parent` did: once its
        // exit is read, theirs are too.
        let mut marker = std::process::Command::new("true").spawn().ok()?;
        let _ = marker.wait();
        if !self.wait_for_exit(marker.id()) {
            return None;
        }
        let events = self.events.lock().ok()?.clone();
        let mut spans: Vec<(u64, u64)> = Vec::new();
        for ev in &events {
            if let Event::Fork {
                parent: p,
                child,
                at,
            } = *ev
                && p == parent
            {
                let end = events.iter().find_map(|e| match *e {
                    Event::Exit { pid, at: end } if pid == child && end >= at => Some(end),
                    _ => None,
                })?;
                spans.push((at, end));
            }
        }
        spans.sort_unstable();
        let mut total = 0u64;
        let mut reach = 0u64;
        for (start, end) in spans {
            let start = start.max(reach);
            if end > start {
                total += end - start;
                reach = end;
            }
        }
        Some(Duration::from_nanos(total))
    }
}

fn read_events(fd: &OwnedFd, events: &Mutex<Vec<Event>>, stop: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: reads into a live buffer of the given length.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        let Ok(n) = usize::try_from(n) else {
            continue; // timeout (to check `stop`) or a full buffer; keep reading
        };
        let msg = &buf[..n];
        let (Some(what), Some(at)) = (u32_at(msg, HEADERS), u64_at(msg, HEADERS + 8)) else {
            continue;
        };
        let data = HEADERS + 16;
        let event = match what {
            PROC_EVENT_FORK => {
                let (Some(parent), Some(child), Some(child_tgid)) = (
                    u32_at(msg, data + 4),
                    u32_at(msg, data + 8),
                    u32_at(msg, data + 12),
                ) else {
                    continue;
                };
                if child != child_tgid {
                    continue; // a thread
                }
                Event::Fork { parent, child, at }
            }
            PROC_EVENT_EXIT => {
                let (Some(pid), Some(tgid)) = (u32_at(msg, data), u32_at(msg, data + 4)) else {
                    continue;
                };
                if pid != tgid {
                    continue; // a thread
                }
                Event::Exit { pid, at }
            }
            _ => continue,
        };
        if let Ok(mut e) = events.lock() {
            e.push(event);
        }
    }
}

impl Drop for ChildWatch {
    fn drop(&mut self) {
        let _ = control(&self.fd, PROC_CN_MCAST_IGNORE);
        self.stop.store(true, Ordering::Relaxed);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

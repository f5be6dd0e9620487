//! Driving a program in a pseudo-terminal, as a person at a terminal would: spawn it with a
//! given window size, type keys, wait for text to appear (escape sequences stripped), read
//! everything it printed, and wait for it to exit. Built on libc's pty calls so it needs no
//! extra crate. Also builds example binaries (`build_example`) so tests can drive them.
//!
//! Keys: Enter is `"\r"`, Alt+Enter `"\x1b\r"`, Ctrl+C `"\x03"`, Ctrl+D `"\x04"`, Up
//! `"\x1b[A"`, Down `"\x1b[B"`.
#![allow(dead_code)]

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Enter.
pub const ENTER: &str = "\r";
/// Alt+Enter as terminals send it.
pub const ALT_ENTER: &str = "\x1b\r";
/// Ctrl+C.
pub const CTRL_C: &str = "\x03";
/// Ctrl+D.
pub const CTRL_D: &str = "\x04";
/// Up arrow.
pub const UP: &str = "\x1b[A";

/// How long the end of the terminal must last before the output is taken as complete.
const END_GRACE: Duration = Duration::from_millis(150);

type Shared = Arc<(Mutex<Output>, Condvar)>;

#[derive(Default)]
struct Output {
    bytes: Vec<u8>,
    closed: bool,
}

/// A program running in a pseudo-terminal.
pub struct Pty {
    master: File,
    child: Child,
    out: Shared,
    reader: Option<JoinHandle<()>>,
    /// Position in the stripped text up to which `expect` has matched.
    cursor: usize,
    status: Option<ExitStatus>,
}

fn check(rc: libc::c_int, what: &str) -> std::io::Result<libc::c_int> {
    if rc < 0 {
        let err = std::io::Error::last_os_error();
        Err(std::io::Error::new(err.kind(), format!("{what}: {err}")))
    } else {
        Ok(rc)
    }
}

impl Pty {
    /// Start `cmd` in a new pseudo-terminal of `cols` x `rows`, as the leader of a new session
    /// with the terminal as its controlling terminal (so Ctrl+C sends it SIGINT).
    pub fn spawn(mut cmd: Command, cols: u16, rows: u16) -> std::io::Result<Pty> {
        // SAFETY: plain libc calls on a descriptor this function owns; results are checked.
        let master_fd = unsafe {
            check(
                libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC),
                "posix_openpt",
            )?
        };
        // SAFETY: master_fd was just opened and is owned by nothing else.
        let master = unsafe { File::from_raw_fd(master_fd) };
        let mut name = [0 as libc::c_char; 128];
        // SAFETY: valid descriptor and buffer of the given length.
        unsafe {
            check(libc::grantpt(master_fd), "grantpt")?;
            check(libc::unlockpt(master_fd), "unlockpt")?;
            check(
                libc::ptsname_r(master_fd, name.as_mut_ptr(), name.len()),
                "ptsname_r",
            )?;
        }
        // SAFETY: ptsname_r wrote a NUL-terminated string into `name`.
        let path = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let slave = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open(&path)?;
        set_size(&master, cols, rows)?;

        cmd.stdin(Stdio::from(slave.try_clone()?))
            .stdout(Stdio::from(slave.try_clone()?))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        // Close the parent's copies of the terminal's slave side, so reads on the master end
        // when the child exits.
        drop(cmd);

        let out: Shared = Arc::new((Mutex::new(Output::default()), Condvar::new()));
        let mut reader_file = master.try_clone()?;
        let sink = Arc::clone(&out);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Once the program has closed its side, the kernel may still be moving its last
            // writes into the master's buffer (on a loaded machine the end of the output was
            // seen to be lost): keep reading until the end has been reported for a while
            // with nothing more arriving.
            let mut ended_since: Option<Instant> = None;
            loop {
                match reader_file.read(&mut buf) {
                    Ok(n) if n > 0 => {
                        ended_since = None;
                        let (lock, cv) = &*sink;
                        lock.lock().unwrap().bytes.extend_from_slice(&buf[..n]);
                        cv.notify_all();
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Ok(_) | Err(_) => {
                        let since = *ended_since.get_or_insert_with(Instant::now);
                        if since.elapsed() >= END_GRACE {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
            }
            let (lock, cv) = &*sink;
            lock.lock().unwrap().closed = true;
            cv.notify_all();
        });
        Ok(Pty {
            master,
            child,
            out,
            reader: Some(reader),
            cursor: 0,
            status: None,
        })
    }

    /// Type text (keys as bytes; see the constants).
    /// The child's process id (to signal it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    /// Type a line and press Enter.
    pub fn send_line(&mut self, line: &str) {
        self.send(line);
        self.send(ENTER);
    }

    /// Change the window size (the program gets SIGWINCH).
    pub fn resize(&self, cols: u16, rows: u16) {
        set_size(&self.master, cols, rows).unwrap();
    }

    /// Everything printed so far, as bytes.
    pub fn raw(&self) -> Vec<u8> {
        self.out.0.lock().unwrap().bytes.clone()
    }

    /// Everything printed so far, escape sequences removed.
    pub fn text(&self) -> String {
        strip_ansi(&String::from_utf8_lossy(&self.raw()))
    }

    /// The text printed after the last match.
    pub fn pending(&self) -> String {
        self.text()
            .get(self.cursor..)
            .unwrap_or_default()
            .to_string()
    }

    /// Wait until `needle` appears after the last match; returns how long it took.
    pub fn try_expect(&mut self, needle: &str, timeout: Duration) -> Result<Duration, String> {
        let start = Instant::now();
        let (lock, cv) = &*self.out;
        let mut guard = lock.lock().unwrap();
        loop {
            let text = strip_ansi(&String::from_utf8_lossy(&guard.bytes));
            if let Some(pos) = text.get(self.cursor..).and_then(|t| t.find(needle)) {
                self.cursor += pos + needle.len();
                return Ok(start.elapsed());
            }
            let elapsed = start.elapsed();
            if elapsed >= timeout || guard.closed {
                let tail: String = text.get(self.cursor..).unwrap_or_default().to_string();
                return Err(format!(
                    "`{needle}` did not appear within {timeout:?}{}; output since the last match:\n{tail}",
                    if guard.closed {
                        " (the program closed the terminal)"
                    } else {
                        ""
                    }
                ));
            }
            guard = cv.wait_timeout(guard, timeout - elapsed).unwrap().0;
        }
    }

    /// Like [`Pty::try_expect`], panicking with the output when the text does not appear.
    pub fn expect(&mut self, needle: &str) -> Duration {
        self.expect_within(needle, Duration::from_secs(20))
    }

    /// [`Pty::expect`] with a timeout.
    pub fn expect_within(&mut self, needle: &str, timeout: Duration) -> Duration {
        match self.try_expect(needle, timeout) {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        }
    }

    /// Wait for the program to exit.
    pub fn wait(&mut self, timeout: Duration) -> Option<ExitStatus> {
        if self.status.is_some() {
            return self.status;
        }
        let start = Instant::now();
        while start.elapsed() < timeout {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.status = Some(status);
                // Let the reader drain what the program printed last.
                if let Some(reader) = self.reader.take() {
                    let _ = reader.join();
                }
                return self.status;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// Wait until the program has switched the terminal's local modes in `mask` off (`ECHO`
    /// for a hidden prompt, `ECHO | ICANON` for a line editor's raw mode): keys typed before
    /// the switch may be discarded with it, or read as a cooked line.
    pub fn wait_for_modes_off(&self, mask: libc::tcflag_t, timeout: Duration) {
        let start = Instant::now();
        while self.local_modes() & mask != 0 {
            assert!(
                start.elapsed() < timeout,
                "the terminal's modes {mask:#o} were not switched off within {timeout:?}; output:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The terminal's current local-mode flags (ICANON, ECHO, ISIG...), to check a program
    /// left the terminal as it found it.
    pub fn local_modes(&self) -> libc::tcflag_t {
        let mut modes = std::mem::MaybeUninit::<libc::termios>::uninit();
        // SAFETY: valid descriptor; the struct is read only when tcgetattr succeeded.
        unsafe {
            check(
                libc::tcgetattr(self.master.as_raw_fd(), modes.as_mut_ptr()),
                "tcgetattr",
            )
            .unwrap();
            modes.assume_init().c_lflag
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn set_size(master: &File, cols: u16, rows: u16) -> std::io::Result<()> {
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: valid descriptor and a winsize struct that outlives the call.
    unsafe {
        check(
            libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &size),
            "TIOCSWINSZ",
        )?;
    }
    Ok(())
}

/// Remove escape sequences (CSI, OSC, two-byte ESC sequences) and the bell.
pub fn strip_ansi(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                Some('(' | ')') => {
                    chars.next();
                }
                _ => {}
            },
            '\u{7}' => {}
            c => out.push(c),
        }
    }
    out
}

/// The lines a terminal would show for this output, roughly: escape sequences stripped and
/// split at both newlines and carriage returns (which start a line over).
pub fn screen_lines(raw: &str) -> Vec<String> {
    strip_ansi(raw)
        .split(['\n', '\r'])
        .map(str::to_string)
        .collect()
}

/// Build an example of this package (once per test binary) and return its path. Uses the
/// cargo that runs the tests, the same target directory and profile, so it is quick when the
/// library is already built and works on a clean clone.
pub fn build_example(name: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| Mutex::new(HashMap::new()));
    let mut built = built.lock().unwrap();
    if let Some(path) = built.get(name) {
        return path.clone();
    }
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR")).args([
        "build",
        "--example",
        name,
        "--message-format=json",
    ]);
    if !cfg!(debug_assertions) {
        cmd.arg("--release");
    }
    let output = cmd.stderr(Stdio::inherit()).output().unwrap();
    assert!(
        output.status.success(),
        "building the {name} example failed"
    );
    let mut path = None;
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] == "compiler-artifact"
            && msg["target"]["name"] == name
            && let Some(exe) = msg["executable"].as_str()
        {
            path = Some(PathBuf::from(exe));
        }
    }
    let path = path.unwrap_or_else(|| panic!("cargo did not report the {name} executable"));
    built.insert(name.to_string(), path.clone());
    path
}

//! The one place pai writes to its standard streams. A write that fails never panics (the
//! standard `print!` family does, and exits 101): a closed pipe (`pai log | head`) ends the
//! output quietly, and any other failure (disk full on a redirected stream) is remembered, so
//! the command still finishes as it would and [`finish`] reports the failure once, on stderr
//! when stdout was the one that failed, and turns a success into exit code 1. After a
//! stream's first failure nothing more is written to it: what follows would fail the same way.
//!
//! `tests/it/output_streams.rs` checks that nothing else in `src/` prints.

use std::io::{self, Write};
use std::sync::OnceLock;

/// One of the two standard output streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output: results.
    Out,
    /// Standard error: warnings, errors, progress.
    Err,
}

/// How a stream failed, kept from its first failure on.
#[derive(Debug)]
struct Failure {
    /// Its reader went away: not worth a word.
    closed: bool,
    /// What the system said, for the one report.
    message: String,
}

static OUT_FAILED: OnceLock<Failure> = OnceLock::new();
static ERR_FAILED: OnceLock<Failure> = OnceLock::new();

fn slot(stream: Stream) -> &'static OnceLock<Failure> {
    match stream {
        Stream::Out => &OUT_FAILED,
        Stream::Err => &ERR_FAILED,
    }
}

/// Write `bytes` to `stream` and flush; whether they were written. A failure is remembered
/// (see [`finish`]) and later writes to the same stream are skipped.
pub fn write(stream: Stream, bytes: &[u8]) -> bool {
    if bytes.is_empty() {
        return true;
    }
    if slot(stream).get().is_some() {
        return false;
    }
    let result = match stream {
        Stream::Out => {
            let mut out = io::stdout().lock();
            out.write_all(bytes).and_then(|()| out.flush())
        }
        Stream::Err => {
            let mut err = io::stderr().lock();
            err.write_all(bytes).and_then(|()| err.flush())
        }
    };
    match result {
        Ok(()) => true,
        Err(e) => {
            failed(stream, &e);
            false
        }
    }
}

/// Text on stdout.
pub fn out(text: &str) -> bool {
    write(Stream::Out, text.as_bytes())
}

/// Text on stderr.
pub fn err(text: &str) -> bool {
    write(Stream::Err, text.as_bytes())
}

/// Remember that `stream` failed with `e` (a write pai could not route through [`write`],
/// clap's help text, say); only the first failure counts.
pub fn failed(stream: Stream, e: &io::Error) {
    let _ = slot(stream).set(Failure {
        closed: e.kind() == io::ErrorKind::BrokenPipe,
        message: e.to_string(),
    });
}

/// The exit code a command that would exit with `code` exits with, once its streams are
/// accounted for: when stdout failed other than by a closed pipe, say so once on stderr (if
/// stderr still takes it) and make a success exit 1, so a script learns its output is
/// incomplete; a failure code stays as it was.
pub fn finish(code: i32) -> i32 {
    // What stderr lost (warnings, notes, an error) cannot be reported anywhere else; the
    // code says whether the command did its work.
    let Some(failure) = OUT_FAILED.get().filter(|f| !f.closed) else {
        return code;
    };
    let _ = err(&format!(
        "error: cannot write the output (stdout): {}\n",
        failure.message
    ));
    if code == 0 { 1 } else { code }
}

/// Stdout as a [`Write`] for the frontends that render into a writer; every write goes
/// through [`write`], so it never panics and a closed pipe is remembered like any other.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if write(Stream::Out, buf) {
            Ok(buf.len())
        } else {
            Err(io::Error::other("stdout cannot be written"))
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

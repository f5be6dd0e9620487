//! Running one command: spawn it confined in its own session, collect its output, enforce the
//! timeout, and leave nothing of it running afterwards.
//!
//! The run ends when the shell exits. Whatever it left behind in its process group (background
//! jobs) is then terminated too: a RUN is a step of a plan, not a way to start daemons, and the
//! captured output can only end once every writer is gone. Cancellation is dropping the future:
//! a guard then kills the whole group.

use std::future::Future;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::time::Instant;

use super::group::{self, GroupGuard, Orphans};
use super::output::OutputCap;
use super::reach::ChildGuard;
use super::sandbox::{self, SandboxMode, SandboxSupport};
use super::{ExecError, display_command, env};

/// How long a command may run unless configured otherwise (SPEC section 7).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Output bytes kept by default: about 4k tokens, enough for a compiler error or a traceback.
pub(crate) const DEFAULT_OUTPUT_CAP: usize = 16 * 1024;
/// Between SIGTERM and SIGKILL: time for test runners and servers to clean up.
const TERM_GRACE: Duration = Duration::from_secs(2);
/// How often to look whether a terminated group is gone.
const GROUP_POLL: Duration = Duration::from_millis(25);
/// How long SIGKILL may take to be reported.
const KILL_WAIT: Duration = Duration::from_secs(10);
/// How long to keep reading output once the group is gone. Only a process that left the group
/// (a new session) can still hold the pipe open; its output is not waited for.
const DRAIN_LIMIT: Duration = Duration::from_millis(500);
/// Read buffer size.
const CHUNK: usize = 16 * 1024;

/// How to run a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// Kill the command (and its process group) after this long. Default 120 s.
    pub timeout: Duration,
    /// Output bytes kept: half from the start, half from the end. Default 16 KiB.
    pub output_cap: usize,
    /// Whether to confine the command with Landlock. Default [`SandboxMode::Prefer`].
    pub sandbox: SandboxMode,
    /// Secret values (API keys) that must not reach the command: any environment variable whose
    /// value is, or contains, one of them is removed.
    pub secrets: Vec<String>,
    /// Paths the command may also write to when confined, besides the project and temp dirs
    /// (e.g. a tool cache such as `~/.cargo`). Paths that do not exist are ignored.
    pub extra_writable: Vec<PathBuf>,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            output_cap: DEFAULT_OUTPUT_CAP,
            sandbox: SandboxMode::default(),
            secrets: Vec::new(),
            extra_writable: Vec::new(),
        }
    }
}

/// How a command ended and what it printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// The shell's exit code, if it exited normally.
    pub exit_code: Option<i32>,
    /// The signal that ended the shell, if one did (after a timeout: SIGTERM or SIGKILL).
    pub signal: Option<i32>,
    /// Whether the timeout ended the command.
    pub timed_out: bool,
    /// Stdout and stderr interleaved as they arrived, capped (see [`RunOptions::output_cap`]).
    pub output: String,
    /// Output bytes left out of `output`.
    pub dropped_bytes: usize,
    /// Whether the command ran under Landlock.
    pub confined: bool,
    /// Wall-clock time from start to the end of clean-up.
    pub duration: Duration,
}

impl RunOutcome {
    /// Exit code 0 within the time limit.
    pub fn success(&self) -> bool {
        !self.timed_out && self.exit_code == Some(0)
    }

    /// One line: how the command ended and how long it took.
    pub fn status_line(&self) -> String {
        let secs = self.duration.as_secs_f64();
        if self.timed_out {
            return format!(
                "timed out after {secs:.1} s; the command and every process it started were killed"
            );
        }
        match (self.exit_code, self.signal) {
            (Some(code), _) => format!("exit code {code} after {secs:.1} s"),
            (None, Some(sig)) => format!(
                "killed by signal {sig}{} after {secs:.1} s",
                signal_name(sig)
            ),
            (None, None) => format!("ended without an exit status after {secs:.1} s"),
        }
    }

    /// What the model reads about this run: the status line, a sandbox note when a confined
    /// command failed, and the capped output.
    pub fn summary_for_model(&self) -> String {
        let mut text = self.status_line();
        if self.confined && !self.success() && looks_denied(&self.output) {
            text.push_str(
                "\n(sandboxed: writing outside the project and temporary directories is denied)",
            );
        }
        let output = self.output.trim_end();
        if output.is_empty() {
            text.push_str("\nno output");
        } else {
            text.push_str("\noutput:\n");
            text.push_str(output);
        }
        text
    }
}

/// Whether a failed command's output shows an access the sandbox may have denied: only then
/// is the sandbox worth mentioning (a plain `NameError` has nothing to do with it).
fn looks_denied(output: &str) -> bool {
    const SIGNS: &[&str] = &[
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
        "EACCES",
        "EPERM",
        "EROFS",
        "PermissionError",
        "AccessDeniedException",
    ];
    SIGNS.iter().any(|s| output.contains(s))
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => " (SIGHUP)",
        libc::SIGINT => " (SIGINT)",
        libc::SIGQUIT => " (SIGQUIT)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGPIPE => " (SIGPIPE)",
        libc::SIGTERM => " (SIGTERM)",
        _ => "",
    }
}

/// Run `command` with `/bin/sh -c` in `root` (see the module docs for everything that implies)
/// and report how it ended. Dropping the returned future kills the command's whole process group.
///
/// With [`SandboxMode::Prefer`] and no Landlock the command runs unconfined: the caller must have
/// had that approved ([`super::unconfined_reason`]). With [`SandboxMode::Require`] and no Landlock
/// this fails with [`ExecError::SandboxRequired`] and nothing runs.
///
/// Needs a tokio runtime with the IO and time drivers enabled.
pub async fn run_command(
    root: &Path,
    command: &str,
    opts: &RunOptions,
) -> Result<RunOutcome, ExecError> {
    run_command_streaming(root, command, opts, &|_| {}).await
}

/// [`run_command`], also handing every piece of output to `on_output` as it arrives (before
/// the cap applies), so a frontend can show it live and a log can keep all of it. Pieces are
/// raw bytes as read: they may split lines and UTF-8 sequences.
pub async fn run_command_streaming(
    root: &Path,
    command: &str,
    opts: &RunOptions,
    on_output: &(dyn Fn(&[u8]) + Send + Sync),
) -> Result<RunOutcome, ExecError> {
    let shown = display_command(command);
    let root_error = |source| ExecError::Root {
        path: root.to_path_buf(),
        source,
    };
    let root = std::fs::canonicalize(root).map_err(root_error)?;
    if !root.is_dir() {
        return Err(root_error(io::Error::new(
            io::ErrorKind::NotADirectory,
            "not a directory",
        )));
    }
    let Confinement { guard, confined } = prepare_sandbox(opts, &root, &shown)?;
    let refusable = guard.needs_namespace();
    let started = Instant::now();
    let orphans = Orphans::watch();
    let (mut child, output) = spawn(
        &root,
        command,
        &opts.secrets,
        guard,
        confined,
        orphans.marker(),
    )
    .map_err(|source| ExecError::Spawn {
        command: shown.clone(),
        confined,
        source: if refusable {
            super::reach::refusal(source)
        } else {
            source
        },
    })?;
    let pgid = child
        .id()
        .and_then(|id| libc::pid_t::try_from(id).ok())
        .unwrap_or(0);
    // Armed until the group has been dealt with: an early return or a dropped future kills it.
    let mut guard = GroupGuard::new(pgid);
    let mut pump = Pump::new(output, opts.output_cap, on_output);
    let io_error = |source| ExecError::Io {
        command: shown.clone(),
        source,
    };

    // A timeout too large to represent means no timeout in practice: a century.
    let deadline = started
        .checked_add(opts.timeout)
        .unwrap_or_else(|| started + Duration::from_secs(100 * 365 * 24 * 3600));
    let exited = pump
        .until(child.wait(), deadline)
        .await
        .map_err(io_error)?
        .transpose()
        .map_err(io_error)?;
    let timed_out = exited.is_none();
    let status = finish_group(&mut child, pgid, &mut pump, exited)
        .await
        .map_err(io_error)?;
    guard.disarm();
    // Descendants that left the group (setsid) do not outlive the step.
    orphans.kill();
    pump.drain().await.map_err(io_error)?;

    let (output, dropped_bytes) = pump.cap.finish();
    Ok(RunOutcome {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        output,
        dropped_bytes,
        confined,
        duration: started.elapsed(),
    })
}

/// What keeps the command in: the Landlock sandbox when it is confined, and for every command
/// pai's own directories out of its reach (see `reach.rs`); or the refusal.
fn prepare_sandbox(opts: &RunOptions, root: &Path, shown: &str) -> Result<Confinement, ExecError> {
    let confine = should_confine(opts.sandbox, sandbox::sandbox_support()).map_err(|reason| {
        ExecError::SandboxRequired {
            command: shown.to_string(),
            reason,
        }
    })?;
    if !confine {
        return Ok(Confinement {
            guard: ChildGuard::unconfined(root),
            confined: false,
        });
    }
    ChildGuard::confined(root, &opts.extra_writable)
        .map(|guard| Confinement {
            guard,
            confined: true,
        })
        .map_err(|reason| ExecError::SandboxSetup {
            command: shown.to_string(),
            reason,
        })
}

/// A command's guard and whether it confines the command's writes.
struct Confinement {
    guard: ChildGuard,
    confined: bool,
}

/// Whether to confine under `mode` given what the kernel offers, or why running is refused.
/// A partial sandbox still confines writes, so it satisfies [`SandboxMode::Require`].
fn should_confine(mode: SandboxMode, support: SandboxSupport) -> Result<bool, String> {
    match (mode, support) {
        (SandboxMode::Off, _) => Ok(false),
        (SandboxMode::Prefer, SandboxSupport::Unavailable(_)) => Ok(false),
        (SandboxMode::Require, SandboxSupport::Unavailable(reason)) => Err(reason),
        (SandboxMode::Require | SandboxMode::Prefer, SandboxSupport::Full) => Ok(true),
        (SandboxMode::Require | SandboxMode::Prefer, SandboxSupport::Partial(_)) => Ok(true),
    }
}

/// Start the shell: new session (so it leads its own process group and has no controlling
/// terminal to prompt on), stdin from /dev/null, stdout and stderr into one pipe (so they stay
/// interleaved in arrival order), scrubbed environment, pai's directories out of reach and,
/// when `confined`, the Landlock sandbox (both in `guard`).
fn spawn(
    root: &Path,
    command: &str,
    secrets: &[String],
    guard: ChildGuard,
    confined: bool,
    marker: (&str, &str),
) -> io::Result<(Child, pipe::Receiver)> {
    let (reader, writer) = io::pipe()?;
    let output = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    let writer_for_stderr = writer.try_clone()?;
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(root)
        .env_clear()
        .envs(
            env::child_environment(secrets)
                .into_iter()
                // A confined command gets no channel to a process outside its confinement.
                .filter(|(name, _)| !confined || !env::is_channel_variable(name)),
        )
        .env(marker.0, marker.1)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer_for_stderr)
        .kill_on_drop(true);
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // calls are sound: setsid, then the guard's unshare/open/write/mount (on memory prepared
    // before the fork, paths passed as C strings so rustix copies nothing), capget/capset on
    // stack memory, prctl and landlock_restrict_self, all plain system calls (rustix's
    // wrappers are raw system calls without allocation); an io::Error made from an errno does
    // not allocate. The rulesets were built before the fork (see sandbox.rs for why); their
    // descriptors stay open in the parent until the command is dropped below.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::setsid()?;
            guard.apply()
        });
    }
    let child = cmd.spawn()?;
    // The command holds the parent's copies of the pipe's write end (and the guard's
    // descriptors); the output only reaches end-of-file once they are closed.
    drop(cmd);
    Ok((child, output))
}

/// After the shell exited (`status` given) or timed out (`None`): terminate what remains of its
/// group, SIGTERM first and SIGKILL after a grace period, and return the shell's status.
async fn finish_group(
    child: &mut Child,
    pgid: libc::pid_t,
    pump: &mut Pump<'_>,
    mut status: Option<ExitStatus>,
) -> io::Result<ExitStatus> {
    if status.is_none() || group::has_live_members(pgid) {
        group::signal_group(pgid, rustix::process::Signal::TERM);
        let grace_end = Instant::now() + TERM_GRACE;
        if status.is_none() {
            status = pump.until(child.wait(), grace_end).await?.transpose()?;
        }
        if status.is_some() {
            pump.until(group_gone(pgid), grace_end).await?;
        }
        if status.is_none() || group::has_live_members(pgid) {
            group::signal_group(pgid, rustix::process::Signal::KILL);
        }
        if status.is_none() {
            status = pump
                .until(child.wait(), Instant::now() + KILL_WAIT)
                .await?
                .transpose()?;
        }
    }
    status.ok_or_else(|| io::Error::other("the shell did not exit even after SIGKILL"))
}

/// Resolves once group `pgid` has no live member.
async fn group_gone(pgid: libc::pid_t) {
    while group::has_live_members(pgid) {
        tokio::time::sleep(GROUP_POLL).await;
    }
}

/// Moves output from the pipe into the cap (and to the live listener) while the runner waits
/// for something else.
struct Pump<'a> {
    pipe: Option<pipe::Receiver>,
    buf: Vec<u8>,
    cap: OutputCap,
    on_output: &'a (dyn Fn(&[u8]) + Send + Sync),
}

impl<'a> Pump<'a> {
    fn new(pipe: pipe::Receiver, cap: usize, on_output: &'a (dyn Fn(&[u8]) + Send + Sync)) -> Self {
        Self {
            pipe: Some(pipe),
            buf: vec![0; CHUNK],
            cap: OutputCap::new(cap),
            on_output,
        }
    }

    /// Keep reading output until `fut` resolves (its output) or `deadline` passes (`None`).
    async fn until<F: Future>(
        &mut self,
        fut: F,
        deadline: Instant,
    ) -> io::Result<Option<F::Output>> {
        tokio::pin!(fut);
        let sleep = tokio::time::sleep_until(deadline);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                biased;
                out = &mut fut => return Ok(Some(out)),
                () = &mut sleep => return Ok(None),
                read = self.read_once(), if self.pipe.is_some() => read?,
            }
        }
    }

    /// Read what is left, until end-of-file or [`DRAIN_LIMIT`] (whatever arrives in time is
    /// kept; a process still holding the pipe after that is not waited for).
    async fn drain(&mut self) -> io::Result<()> {
        let deadline = Instant::now() + DRAIN_LIMIT;
        let drained = tokio::time::timeout_at(deadline, async {
            while self.pipe.is_some() {
                self.read_once().await?;
            }
            Ok::<(), io::Error>(())
        })
        .await;
        self.pipe = None;
        drained.unwrap_or(Ok(()))
    }

    /// One read: appends to the cap, or closes the pipe at end-of-file. Cancel-safe.
    async fn read_once(&mut self) -> io::Result<()> {
        let Some(pipe) = self.pipe.as_mut() else {
            return std::future::pending().await;
        };
        match pipe.read(&mut self.buf).await {
            Ok(0) => self.pipe = None,
            Ok(n) => {
                (self.on_output)(&self.buf[..n]);
                self.cap.push(&self.buf[..n]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome() -> RunOutcome {
        RunOutcome {
            exit_code: Some(0),
            signal: None,
            timed_out: false,
            output: "hello\n".into(),
            dropped_bytes: 0,
            confined: true,
            duration: Duration::from_millis(1234),
        }
    }

    #[test]
    fn summaries_say_how_the_command_ended() {
        let ok = outcome();
        assert!(ok.success());
        assert_eq!(
            ok.summary_for_model(),
            "exit code 0 after 1.2 s\noutput:\nhello"
        );

        let denied = RunOutcome {
            exit_code: Some(1),
            output: "touch: cannot touch '/etc/x': Permission denied\n".into(),
            ..outcome()
        };
        assert!(!denied.success());
        let s = denied.summary_for_model();
        assert!(s.starts_with("exit code 1 after 1.2 s\n(sandboxed:"), "{s}");

        // A plain failure says nothing of the sandbox.
        let failed = RunOutcome {
            exit_code: Some(1),
            output: "NameError: name 'x' is not defined\n".into(),
            ..outcome()
        };
        let s = failed.summary_for_model();
        assert!(!s.contains("sandbox"), "{s}");
        let silent = RunOutcome {
            exit_code: Some(2),
            output: String::new(),
            ..outcome()
        };
        let s = silent.summary_for_model();
        assert!(s.starts_with("exit code 2 after 1.2 s\nno output"), "{s}");

        let killed = RunOutcome {
            exit_code: None,
            signal: Some(9),
            confined: false,
            ..outcome()
        };
        assert!(!killed.success());
        assert!(
            killed
                .summary_for_model()
                .starts_with("killed by signal 9 (SIGKILL)")
        );

        let timed_out = RunOutcome {
            exit_code: None,
            signal: Some(15),
            timed_out: true,
            ..outcome()
        };
        assert!(!timed_out.success());
        assert!(
            timed_out
                .summary_for_model()
                .starts_with("timed out after 1.2 s")
        );
    }

    #[test]
    fn sandbox_decision_per_mode_and_kernel() {
        let none = || SandboxSupport::Unavailable("no Landlock here".into());
        let partial = || SandboxSupport::Partial("ABI 1".into());
        assert_eq!(
            should_confine(SandboxMode::Require, SandboxSupport::Full),
            Ok(true)
        );
        assert_eq!(should_confine(SandboxMode::Require, partial()), Ok(true));
        assert_eq!(
            should_confine(SandboxMode::Require, none()),
            Err("no Landlock here".to_string())
        );
        assert_eq!(
            should_confine(SandboxMode::Prefer, SandboxSupport::Full),
            Ok(true)
        );
        assert_eq!(should_confine(SandboxMode::Prefer, partial()), Ok(true));
        assert_eq!(should_confine(SandboxMode::Prefer, none()), Ok(false));
        assert_eq!(
            should_confine(SandboxMode::Off, SandboxSupport::Full),
            Ok(false)
        );
        assert_eq!(should_confine(SandboxMode::Off, none()), Ok(false));
    }

    #[test]
    fn defaults_follow_the_spec() {
        let o = RunOptions::default();
        assert_eq!(o.timeout, Duration::from_secs(120));
        assert_eq!(o.sandbox, SandboxMode::Prefer);
        assert!(o.output_cap > 0);
    }
}

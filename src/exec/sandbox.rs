//! Landlock confinement of RUN commands: read and execute anywhere, write only inside the project
//! root, the temporary directories, a few harmless devices, and caller-named extra paths.
//!
//! How the ruleset reaches the child: it is built here, in the parent, with the `landlock` crate
//! (opening the allowed paths, adapting the access rights to the kernel's ABI best-effort), and
//! only the ruleset's file descriptor crosses `fork`. In the child, between `fork` and `exec`,
//! [`confine_current_process`] makes exactly two raw system calls (`prctl(PR_SET_NO_NEW_PRIVS)`
//! and `landlock_restrict_self`). After `fork` in a multithreaded program (pai runs a tokio
//! runtime) only async-signal-safe work is sound: no allocation, no locks. The crate's own
//! `restrict_self` is nearly that but builds status values and error types we would then have to
//! convert (and box); a re-exec helper would cost a second process start per command. Two
//! syscalls that report failure through `errno` are the smallest safe thing to do there.

use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};

/// The Landlock ABI whose filesystem rights pai asks for (and was tested with): V5 controls file
/// writes, renames across directories, truncation and device ioctls. Newer kernels enforce these
/// too; older ones enforce the subset they know (see [`SandboxSupport::Partial`]).
pub(crate) const TARGET_ABI: ABI = ABI::V5;

/// Devices a command may open for writing: sinks, sources and the (absent, after `setsid`)
/// controlling terminal. Deliberately not `/dev/pts/*`: writing to the user's terminal is out.
const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Whether RUN confines commands, from configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Refuse to run a command unconfined: without Landlock, [`crate::exec::run_command`] fails
    /// with [`crate::exec::ExecError::SandboxRequired`] and nothing runs. A partial sandbox (an
    /// older Landlock ABI) still confines writes and is accepted.
    Require,
    /// Confine when the kernel can; otherwise the command runs unconfined, and the caller must
    /// have obtained an explicit approval saying so first (see [`unconfined_reason`]).
    #[default]
    Prefer,
    /// Never confine.
    Off,
}

/// What confinement this kernel offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxSupport {
    /// Landlock enforces every restriction pai asks for.
    Full,
    /// Landlock confines writes, with the gaps described (an older ABI).
    Partial(String),
    /// No Landlock: commands would run unconfined, for the reason given.
    Unavailable(String),
}

/// What this kernel offers, detected once per process (one cheap system call) and cached.
pub fn sandbox_support() -> SandboxSupport {
    static SUPPORT: OnceLock<SandboxSupport> = OnceLock::new();
    SUPPORT.get_or_init(|| classify(kernel_abi())).clone()
}

/// The Landlock ABI version the running kernel reports, or `None` without Landlock (for logs and
/// diagnostics; decisions go through [`sandbox_support`]).
pub fn landlock_abi() -> Option<u32> {
    kernel_abi().ok()
}

/// Why a command run with `mode` would run without Landlock, or `None` when it would be confined
/// (or, for [`SandboxMode::Require`], refused instead). The caller shows this in the approval
/// prompt: an unconfined run needs an approval that says so.
pub fn unconfined_reason(mode: SandboxMode) -> Option<String> {
    match (mode, sandbox_support()) {
        (SandboxMode::Off, _) => Some("the sandbox is turned off in the configuration".into()),
        (SandboxMode::Prefer, SandboxSupport::Unavailable(reason)) => Some(reason),
        _ => None,
    }
}

/// The paths a confined command may write to (besides the devices): the project root, the
/// temporary directories and `extra`, in that order, without duplicates.
pub fn writable_paths(root: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths = vec![
        root.to_path_buf(),
        PathBuf::from("/tmp"),
        std::env::temp_dir(),
    ];
    // POSIX shared memory and semaphores (Python multiprocessing) live here; it is a tmpfs.
    paths.push(PathBuf::from("/dev/shm"));
    paths.extend(extra.iter().cloned());
    let mut unique: Vec<PathBuf> = Vec::with_capacity(paths.len());
    for p in paths {
        if !unique.contains(&p) {
            unique.push(p);
        }
    }
    unique
}

/// A ruleset ready to be applied in the child: read/execute everywhere, write to
/// [`writable_paths`] and the harmless devices. Paths that do not exist are skipped, except the
/// root, which must open. With `hidden`, nothing beneath those paths is granted at all (see
/// [`super::hidden::add_rules_except`]): the ruleset for when the mount namespace that covers
/// them could not be made.
pub(crate) fn build_ruleset(
    root: &Path,
    extra: &[PathBuf],
    hidden: Option<&[PathBuf]>,
) -> Result<OwnedFd, String> {
    let read = AccessFs::from_read(TARGET_ABI);
    let all = AccessFs::from_all(TARGET_ABI);
    let root_fd = PathFd::new(root).map_err(|e| format!("cannot open the project root: {e}"))?;
    let others: Vec<PathBuf> = writable_paths(root, extra).into_iter().skip(1).collect();
    let created = Ruleset::default()
        // Best effort: on an older kernel, handle (and deny) the rights it knows.
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        // Landlock ABI 6 (Linux 6.12): no connecting to abstract sockets (X11, a session bus)
        // or signalling processes outside the command's own domain.
        .and_then(|r| r.scope(Scope::AbstractUnixSocket | Scope::Signal))
        .and_then(|r| r.create());
    let created = match hidden {
        None => {
            let everything = PathFd::new("/").map_err(|e| format!("cannot open `/`: {e}"))?;
            created
                .and_then(|r| r.add_rule(PathBeneath::new(everything, read)))
                .and_then(|r| r.add_rule(PathBeneath::new(root_fd, all)))
                .and_then(|r| r.add_rules(path_beneath_rules(&others, all)))
        }
        Some(hidden) => {
            drop(root_fd);
            created
                .and_then(|r| super::hidden::add_rules_except(r, Path::new("/"), read, hidden))
                .and_then(|r| super::hidden::add_rules_except(r, root, all, hidden))
                .and_then(|r| {
                    others
                        .iter()
                        .try_fold(r, |r, p| super::hidden::add_rules_except(r, p, all, hidden))
                })
        }
    }
    .and_then(|r| r.add_rules(path_beneath_rules(WRITABLE_DEVICES, all)))
    .map_err(|e| e.to_string())?;
    Option::<OwnedFd>::from(created)
        .ok_or_else(|| "the kernel did not create a Landlock ruleset".to_string())
}

/// Confine the calling process with `ruleset` for good: no new privileges (required for an
/// unprivileged `landlock_restrict_self`, and it stops setuid programs such as `sudo`), then the
/// Landlock domain, inherited by everything it executes.
///
/// # Safety
/// Meant for the child between `fork` and `exec`: it only makes raw system calls and reads
/// `errno`, which is async-signal-safe. `ruleset` must be a Landlock ruleset descriptor.
pub(crate) unsafe fn confine_current_process(ruleset: RawFd) -> io::Result<()> {
    rustix::thread::set_no_new_privs(true)?;
    // rustix has no wrapper for the Landlock system calls, so this one stays a raw libc call.
    // SAFETY: a plain system call with integer arguments; no memory is shared or allocated.
    if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0 as libc::c_uint) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Take `capability` from the calling process for good (effective, permitted, inheritable,
/// ambient and the bounding set, so no program it executes gets it back). `CAP_SYS_PTRACE`
/// from every child: a command running as root could otherwise read pai's environment and
/// memory through `/proc/<pid>/environ` and `/proc/<pid>/mem`, which pai's non-dumpable flag
/// closes only to processes without it. `CAP_DAC_OVERRIDE` stays: a root build writing files
/// another user owns in the project needs it. Best effort (a process without the capability
/// has nothing to drop).
///
/// Meant for the child between `fork` and `exec`: raw system calls on stack memory only.
pub(crate) fn drop_capability(capability: rustix::thread::CapabilitySet) {
    let _ = rustix::thread::remove_capability_from_bounding_set(capability);
    let _ = rustix::thread::configure_capability_in_ambient_set(capability, false);
    if let Ok(mut sets) = rustix::thread::capabilities(None) {
        sets.effective.remove(capability);
        sets.permitted.remove(capability);
        sets.inheritable.remove(capability);
        let _ = rustix::thread::set_capabilities(None, sets);
    }
}

/// The kernel's Landlock ABI version, or the `errno` saying why there is none.
fn kernel_abi() -> io::Result<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // rustix has no wrapper for the Landlock system calls.
    // SAFETY: with a null attribute pointer and size 0, the VERSION flag only queries the ABI.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0 as libc::size_t,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v < 0 {
        return Err(io::Error::last_os_error());
    }
    u32::try_from(v).map_err(|_| io::Error::other("the kernel reported an invalid Landlock ABI"))
}

/// Turn the ABI query's answer into what pai can promise.
fn classify(abi: io::Result<u32>) -> SandboxSupport {
    let abi = match abi {
        Ok(abi) => abi,
        Err(e) => {
            return SandboxSupport::Unavailable(match e.raw_os_error() {
                Some(libc::ENOSYS) => "this kernel has no Landlock support (it is not built \
                    in, or a seccomp filter hides it)"
                    .to_string(),
                Some(libc::EOPNOTSUPP) => "Landlock is not enabled in this kernel (add \
                    `landlock` to the `lsm=` boot parameter)"
                    .to_string(),
                _ => format!("Landlock support cannot be queried: {e}"),
            });
        }
    };
    let gap = match abi {
        0 => return SandboxSupport::Unavailable("the kernel reports Landlock ABI 0".into()),
        1 => {
            "moving or linking files between directories is always refused, and files outside \
             the project can still be truncated"
        }
        2 => "files outside the project can still be truncated",
        3 | 4 => "device ioctls are not restricted",
        _ => return SandboxSupport::Full,
    };
    SandboxSupport::Partial(format!(
        "Landlock ABI {abi} (Linux older than 6.10): writes are confined, but {gap}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_by_abi() {
        assert_eq!(classify(Ok(5)), SandboxSupport::Full);
        assert_eq!(classify(Ok(9)), SandboxSupport::Full);
        assert!(matches!(classify(Ok(3)), SandboxSupport::Partial(r) if r.contains("ioctl")));
        assert!(matches!(classify(Ok(1)), SandboxSupport::Partial(r) if r.contains("ABI 1")));
        let off = classify(Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP)));
        assert!(matches!(off, SandboxSupport::Unavailable(r) if r.contains("lsm=")));
        let none = classify(Err(io::Error::from_raw_os_error(libc::ENOSYS)));
        assert!(matches!(none, SandboxSupport::Unavailable(r) if r.contains("no Landlock")));
    }

    #[test]
    fn writable_paths_start_with_the_root_and_have_no_duplicates() {
        let root = Path::new("/work/project");
        let paths = writable_paths(root, &[PathBuf::from("/tmp"), PathBuf::from("/opt/cache")]);
        assert_eq!(paths[0], root);
        assert!(paths.contains(&PathBuf::from("/tmp")));
        assert!(paths.contains(&std::env::temp_dir()));
        assert!(paths.contains(&PathBuf::from("/opt/cache")));
        let mut dedup = paths.clone();
        dedup.dedup();
        dedup.sort();
        dedup.dedup();
        assert_eq!(dedup.len(), paths.len());
    }

    #[test]
    fn cached_support_matches_a_fresh_query() {
        assert_eq!(sandbox_support(), classify(kernel_abi()));
        assert_eq!(landlock_abi().is_some(), kernel_abi().is_ok());
    }
}

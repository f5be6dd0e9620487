//! pai's own files out of reach of every process it starts: the key that marks pai's history
//! (`$XDG_CONFIG_HOME/pai-code/secret`), the provider credentials beside it, and pai's state and
//! cache directories. A RUN command (confined or not) and an MCP server run as the same user as
//! pai, so file permissions cannot keep them out; the kernel has to.
//!
//! Two layers, prepared here in the parent and applied in the child between `fork` and `exec`:
//!
//! - **A mount namespace** in which each of pai's directories is covered by an empty read-only
//!   tmpfs (a file by `/dev/null`), whatever path names it: `~/.config//pai-code`,
//!   `pai?code`, a symlinked parent, `XDG_CONFIG_HOME` inside the project all reach the same
//!   covered directory. See [`super::shield`].
//! - **A Landlock domain**, for the paths the namespace cannot cover: another process's
//!   `/proc/<pid>/root` (any same-user process outside the namespace, pai's own shell among
//!   them) leads to the uncovered tree, and `/proc/<pai>/{mem,maps,fd,...}` to pai itself. A
//!   process in a Landlock domain may not read those of a process outside its domain, nor mount
//!   or unmount anything. A confined RUN already has its domain; an unconfined RUN and an MCP
//!   server get one that grants every file right beneath `/`.
//!
//! When the namespace cannot be made (user namespaces refused), the Landlock ruleset itself
//! keeps pai's directories out ([`add_rules_except`]): rights are granted beneath each entry of
//! the directories leading to them, never beneath a directory holding one of them, so a walk up
//! from pai's files meets no rule whatever path reached them. The price, only then: nothing can
//! be created or removed directly in those directories (`/`, `/home`, `~`, `~/.config`, ...).
//! With neither a namespace nor Landlock, the child is not started.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr,
};

use super::hidden::{add_rules_except, private_dirs};
use super::sandbox::{
    SandboxSupport, TARGET_ABI, build_ruleset, confine_current_process, drop_capability,
    sandbox_support,
};
use super::shield::Shield;

/// A Landlock ruleset for a command that is otherwise unconfined: every file right, beneath
/// `/` when pai's directories are covered by the mount namespace (the domain is what matters
/// then), or beneath everything but `hidden` when they are not.
pub(crate) fn open_ruleset(hidden: Option<&[PathBuf]>) -> Result<OwnedFd, String> {
    let all = AccessFs::from_all(TARGET_ABI);
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .and_then(|r| r.create())
        .map_err(|e| e.to_string())?;
    let created = match hidden {
        None => {
            let everything =
                landlock::PathFd::new("/").map_err(|e| format!("cannot open `/`: {e}"))?;
            created.add_rule(PathBeneath::new(everything, all))
        }
        Some(hidden) => add_rules_except(created, Path::new("/"), all, hidden),
    }
    .map_err(|e| e.to_string())?;
    Option::<OwnedFd>::from(created)
        .ok_or_else(|| "the kernel did not create a Landlock ruleset".to_string())
}

/// Everything a child of pai needs, prepared in the parent, to keep pai's directories out of
/// its reach (see the module comment): the mount namespace's shield, the Landlock ruleset for
/// when the namespace covers them, and the one that keeps them out by itself for when it
/// cannot.
pub struct ChildGuard {
    shield: Shield,
    covered: Option<OwnedFd>,
    uncovered: Option<OwnedFd>,
}

impl ChildGuard {
    /// For a confined RUN in `root`: the confining ruleset, in both forms.
    pub(crate) fn confined(root: &Path, extra: &[PathBuf]) -> Result<ChildGuard, String> {
        let hidden = private_dirs();
        let covered = build_ruleset(root, extra, None)?;
        Ok(ChildGuard {
            shield: Shield::prepare(root, &hidden),
            covered: Some(covered),
            uncovered: build_ruleset(root, extra, Some(&hidden)).ok(),
        })
    }

    /// For an unconfined RUN or an MCP server started in `root`: a Landlock domain that
    /// restricts nothing else, where the kernel has Landlock.
    pub fn unconfined(root: &Path) -> ChildGuard {
        let hidden = private_dirs();
        let landlock = !matches!(sandbox_support(), SandboxSupport::Unavailable(_));
        ChildGuard {
            shield: Shield::covering(&hidden, root),
            covered: landlock.then(|| open_ruleset(None).ok()).flatten(),
            uncovered: landlock.then(|| open_ruleset(Some(&hidden)).ok()).flatten(),
        }
    }

    /// Whether a refusal from [`ChildGuard::apply`] is possible: neither Landlock ruleset could
    /// be made, so only the namespace can keep pai's directories out.
    pub fn needs_namespace(&self) -> bool {
        self.uncovered.is_none()
    }

    /// Keep pai's directories out of the calling process's reach for good: cover them in a
    /// private mount namespace, take `CAP_SYS_PTRACE`, and enter the Landlock domain. Fails
    /// (`EPERM`), so the child is never started, when nothing could keep them out.
    ///
    /// # Safety
    /// Meant for the child between `fork` and `exec` (`pre_exec`): only raw system calls on
    /// memory prepared before the fork; nothing is allocated.
    pub unsafe fn apply(&self) -> std::io::Result<()> {
        let covered = self.shield.apply();
        // After the mounts (which need CAP_SYS_ADMIN as root), before Landlock.
        drop_capability(rustix::thread::CapabilitySet::SYS_PTRACE);
        let ruleset = match (covered, &self.covered, &self.uncovered) {
            (true, Some(r), _) | (false, _, Some(r)) => r,
            (true, None, _) => {
                // Without Landlock nothing else stops a root child from unmounting the covers.
                drop_capability(rustix::thread::CapabilitySet::SYS_ADMIN);
                return Ok(());
            }
            (false, _, None) => return Err(std::io::Error::from_raw_os_error(libc::EPERM)),
        };
        // SAFETY: in the child before exec (the caller's contract); `ruleset` is a Landlock
        // ruleset descriptor built before the fork.
        unsafe { confine_current_process(ruleset.as_raw_fd()) }
    }
}

/// The error a child's start fails with when [`ChildGuard::apply`] refused it, saying why.
pub fn refusal(source: std::io::Error) -> std::io::Error {
    if source.raw_os_error() != Some(libc::EPERM) {
        return source;
    }
    std::io::Error::new(
        source.kind(),
        "pai keeps its key and state out of every process it starts, and here neither Landlock \
         nor a private mount namespace (user namespaces) is available to do so; nothing was \
         started",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cat` of `path` in a child confined by `ruleset`: what it printed, or `None` when refused.
    fn cat_confined(ruleset: &OwnedFd, path: &Path) -> Option<String> {
        use std::os::unix::process::CommandExt;
        let fd = ruleset.as_raw_fd();
        let mut cmd = std::process::Command::new("cat");
        cmd.arg(path);
        // SAFETY: two raw system calls in the child before exec.
        unsafe {
            cmd.pre_exec(move || confine_current_process(fd));
        }
        let out = cmd.output().unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    #[test]
    fn without_the_namespace_the_ruleset_alone_keeps_the_hidden_tree_out() {
        if matches!(sandbox_support(), SandboxSupport::Unavailable(_)) {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let hidden = base.join("config/pai-code");
        std::fs::create_dir_all(&hidden).unwrap();
        std::fs::write(hidden.join("secret"), "KEY\n").unwrap();
        std::fs::write(base.join("config/other"), "OTHER\n").unwrap();
        // Another name for the hidden folder's parent: the rule is on what the file is.
        std::os::unix::fs::symlink(base.join("config"), base.join("alias")).unwrap();
        let ruleset = open_ruleset(Some(std::slice::from_ref(&hidden))).unwrap();
        assert_eq!(cat_confined(&ruleset, &hidden.join("secret")), None);
        assert_eq!(
            cat_confined(&ruleset, &base.join("alias/pai-code/secret")),
            None
        );
        assert_eq!(
            cat_confined(&ruleset, &base.join("alias/other")).as_deref(),
            Some("OTHER\n")
        );
        let open = open_ruleset(None).unwrap();
        assert_eq!(
            cat_confined(&open, &hidden.join("secret")).as_deref(),
            Some("KEY\n")
        );
    }
}

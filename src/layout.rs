//! Paths with a fixed meaning inside a project, named once: pai's state directory, and the
//! paths whose change makes code run later, unconfined and unasked. The workspace protects
//! and restores them, the sandbox binds them read-only, history keeps its store in the state
//! directory; all read the names from here.

/// pai's state directory at the project root (session logs, the lock, trash copies, the
/// private repository of a project outside git).
pub const STATE_DIR: &str = ".pai_history";

/// A path at the project root whose change makes code run later.
#[derive(Debug, Clone, Copy)]
pub struct RunsLater {
    /// `/`-separated, relative to the project root.
    pub path: &'static str,
    /// A single file, or a directory looked into this many levels deep (0: the directory
    /// entry itself).
    pub kind: LaterKind,
    /// It runs when the user starts a shell or logs in: protected from writes only when the
    /// project is the home directory (elsewhere a `.bashrc` is a file in a dotfiles
    /// repository).
    pub startup: bool,
}

/// What stands at a [`RunsLater`] path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaterKind {
    /// A single file.
    File,
    /// A directory, looked into this many levels deep.
    Dir(usize),
}

const fn dir(path: &'static str, depth: usize, startup: bool) -> RunsLater {
    RunsLater {
        path,
        kind: LaterKind::Dir(depth),
        startup,
    }
}

const fn file(path: &'static str, startup: bool) -> RunsLater {
    RunsLater {
        path,
        kind: LaterKind::File,
        startup,
    }
}

/// Everything that makes code run later: git's hooks and configuration (`core.hooksPath`,
/// `core.fsmonitor`), pai's own state and configuration, ssh, and the shell, login and
/// session startup files of a home directory.
pub const RUNS_LATER: &[RunsLater] = &[
    dir(".git/hooks", 3, false),
    dir(".git/info", 2, false),
    file(".git/config", false),
    dir(".pai_history", 0, false),
    dir(".pai_history/git/hooks", 2, false),
    file(".pai_history/git/config", false),
    dir(".ssh", 2, false),
    dir(".config/pai-code", 2, false),
    dir(".config/git", 2, true),
    dir(".config/systemd", 3, true),
    dir(".config/autostart", 1, true),
    dir(".config/fish", 2, true),
    dir(".local/bin", 1, true),
    file(".bashrc", true),
    file(".bash_profile", true),
    file(".bash_login", true),
    file(".bash_logout", true),
    file(".profile", true),
    file(".zshrc", true),
    file(".zprofile", true),
    file(".zshenv", true),
    file(".zlogin", true),
    file(".gitconfig", true),
    file(".pam_environment", true),
    file(".xprofile", true),
    file(".xinitrc", true),
];

/// The [`RUNS_LATER`] paths not inside another one: what a sandbox binds read-only.
pub fn runs_later_tops() -> impl Iterator<Item = &'static str> {
    RUNS_LATER.iter().map(|r| r.path).filter(|p| {
        !RUNS_LATER.iter().any(|other| {
            other.path != *p
                && p.strip_prefix(other.path)
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_dir_is_among_what_runs_later() {
        assert!(RUNS_LATER.iter().any(|r| r.path == STATE_DIR));
        assert!(
            RUNS_LATER
                .iter()
                .all(|r| !r.path.starts_with(".pai_history") || r.path.starts_with(STATE_DIR))
        );
    }

    #[test]
    fn tops_leave_out_nested_paths() {
        let tops: Vec<&str> = runs_later_tops().collect();
        assert!(tops.contains(&".pai_history"));
        assert!(!tops.contains(&".pai_history/git/hooks"));
        assert!(tops.contains(&".git/hooks") && tops.contains(&".git/config"));
        assert_eq!(tops.len(), RUNS_LATER.len() - 2);
    }
}

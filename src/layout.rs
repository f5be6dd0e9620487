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
    // Trash copies nest as deep as the project: `trash/<session>/<plan>/<path>`.
    dir(".pai_history/trash", 32, false),
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

/// The paths inside the project at `root` that its own configuration makes run later, read at
/// start (computed, not listed): the effective `core.hooksPath` of `.git/config` (a directory,
/// husky's `.husky/_` or `.githooks`), the files its `include.path` and `includeIf.*.path`
/// name (an included file can set `core.fsmonitor`), and the files and directories the
/// commands and arguments of `.mcp.json`'s servers name (`python3 tools/mcp_server.py` runs
/// that script at the next start). Root-relative, `/`-separated, each with what stands there.
pub fn configured_runs_later(root: &std::path::Path) -> Vec<(String, LaterKind)> {
    let mut out: Vec<(String, LaterKind)> = Vec::new();
    let git_dir = config_dir(root);
    if std::fs::symlink_metadata(&git_dir).is_ok_and(|m| m.is_dir()) {
        let entries = git_config_entries(&git_dir.join("config"));
        let values = |wanted: fn(&str) -> bool| {
            entries
                .iter()
                .filter(move |(name, _)| wanted(name))
                .map(|(_, value)| value)
        };
        if let Some(hooks) = values(|n| n == "core.hookspath").next_back() {
            // git resolves a relative hooks path from the top of the work tree.
            out.extend(inside(root, hooks).map(|p| (p, LaterKind::Dir(3))));
        }
        let includes = values(|n| n == "include.path").chain(values(|n| {
            n.starts_with("includeif.") && n.ends_with(".path")
        }));
        for include in includes {
            if include.starts_with('~') {
                continue;
            }
            // Relative include paths are relative to the including file (`.git/`).
            let target = git_dir.join(include);
            if let Ok(rel) = target.strip_prefix(root) {
                out.extend(inside(root, &rel.to_string_lossy()).map(|p| (p, LaterKind::File)));
            }
        }
    }
    out.extend(mcp_files(root));
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

/// The directory holding the repository's `config` for the work tree at `root`: `.git`, or in
/// a linked worktree (a `.git` file `gitdir: <admin dir>`) the common directory its admin
/// directory names, where git reads `core.hooksPath` and the includes for that worktree too.
fn config_dir(root: &std::path::Path) -> std::path::PathBuf {
    let dot_git = root.join(".git");
    if !std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_file()) {
        return dot_git;
    }
    let Some(admin) = std::fs::read_to_string(&dot_git).ok().and_then(|text| {
        text.lines()
            .next()
            .and_then(|l| l.strip_prefix("gitdir: "))
            .map(|p| root.join(p.trim()))
    }) else {
        return dot_git;
    };
    match std::fs::read_to_string(admin.join("commondir")) {
        Ok(common) => admin.join(common.trim()),
        Err(_) => admin,
    }
}

/// Every variable in the one config file at `path`, in order: its name as libgit2 spells it
/// (section and key in lower case, a subsection as written) and its value. Read once and
/// filtered by name here: a pattern given to libgit2 is a regular expression it compiles
/// (with PCRE) on every call, and would match inside names too.
fn git_config_entries(path: &std::path::Path) -> Vec<(String, String)> {
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return Vec::new();
    }
    let Ok(config) = git2::Config::open(path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Ok(mut entries) = config.entries(None) {
        while let Some(Ok(entry)) = entries.next() {
            // A variable without a value (`[core] bare`, short for true) has no path to give,
            // and git2 panics when asked for one.
            if !entry.has_value() {
                continue;
            }
            if let (Ok(name), Ok(value)) = (entry.name(), entry.value()) {
                out.push((name.to_string(), value.to_string()));
            }
        }
    }
    out
}

/// The project files `.mcp.json`'s servers name in their command and arguments (what a
/// trusted server runs; its trust is pinned to their bytes too).
pub fn mcp_files(root: &std::path::Path) -> Vec<(String, LaterKind)> {
    let path = root.join(".mcp.json");
    if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
        return Vec::new();
    }
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Vec::new();
    };
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    let servers = json
        .get("mcpServers")
        .and_then(serde_json::Value::as_object);
    let words = servers
        .into_iter()
        .flat_map(|m| m.values())
        .flat_map(|server| {
            let command = server.get("command").and_then(serde_json::Value::as_str);
            let args = server.get("args").and_then(serde_json::Value::as_array);
            command.into_iter().chain(
                args.into_iter()
                    .flatten()
                    .filter_map(serde_json::Value::as_str),
            )
        });
    let mut out = Vec::new();
    for word in words {
        // `--script=tools/x.py` names a file too.
        let word = word.rsplit('=').next().unwrap_or(word);
        let Some(rel) = inside(root, word) else {
            continue;
        };
        match std::fs::symlink_metadata(root.join(&rel)) {
            Ok(m) if m.is_file() => out.push((rel, LaterKind::File)),
            Ok(m) if m.is_dir() => out.push((rel, LaterKind::Dir(3))),
            _ => {}
        }
    }
    out
}

/// `path` (relative to `root`, or absolute) as a root-relative path inside the project, or
/// `None` when it is outside, the root itself, or not a plain path.
fn inside(root: &std::path::Path, path: &str) -> Option<String> {
    use std::path::Component;
    let path = std::path::Path::new(path);
    let rel = if path.is_absolute() {
        path.strip_prefix(root).ok()?
    } else {
        path
    };
    let mut parts: Vec<String> = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => parts.push(p.to_str()?.to_string()),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A linked worktree (pai's worktree sessions) reads the configuration of git's common
    /// directory, as git does: its hooks path is protected inside the worktree too.
    #[test]
    fn a_linked_worktree_protects_the_hooks_path_its_repository_configures() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let admin = base.join("main/.git/worktrees/w");
        std::fs::create_dir_all(&admin).unwrap();
        std::fs::write(admin.join("commondir"), "../..\n").unwrap();
        std::fs::write(
            base.join("main/.git/config"),
            "[core]\n\thooksPath = .githooks\n",
        )
        .unwrap();
        let wt = base.join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", admin.display())).unwrap();
        let found = configured_runs_later(&wt);
        assert!(found.iter().any(|(p, _)| p == ".githooks"), "{found:?}");
    }

    #[test]
    fn what_the_repository_configures_to_run_later_is_computed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("tools")).unwrap();
        std::fs::write(root.join("tools/mcp_server.py"), "").unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\tbare\n\thooksPath = .githooks\n\thooksPath = .husky/_\n\
             [include]\n\tpath = ../gitconfig.inc\n\
             [includeIf \"gitdir:/x/\"]\n\tpath = ../../outside.inc\n\
             [alias \"core\"]\n\thookspath = not-hooks\n[my \"include\"]\n\tpath = not-included\n",
        )
        .unwrap();
        std::fs::write(
            root.join(".mcp.json"),
            r#"{"mcpServers": {"t": {"command": "python3", "args": ["tools/mcp_server.py", "--x=1"]}}}"#,
        )
        .unwrap();
        let found = configured_runs_later(&root);
        let names: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(names, [".husky/_", "gitconfig.inc", "tools/mcp_server.py"]);
        assert_eq!(inside(&root, "../x"), None);
        assert_eq!(inside(&root, "a/../b").as_deref(), Some("b"));
    }

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
        assert!(!tops.contains(&".pai_history/trash"));
        assert!(tops.contains(&".git/hooks") && tops.contains(&".git/config"));
        // `.pai_history/git/hooks`, `.pai_history/git/config` and `.pai_history/trash`.
        assert_eq!(tops.len(), RUNS_LATER.len() - 3);
    }
}

//! TREE, LIST_PATH and the project file list: `.gitignore`- and deny-aware, directories first,
//! capped on huge trees with a count of what was left out (the whole tree is still walked so
//! the count is exact).

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};

use super::Workspace;
use super::beneath::diagnose;
use super::error::WorkspaceError;
use super::gate::RelPath;
use super::sys::{self, Kind};
use super::text::thousands;
use super::walk::{MAX_DEPTH, Walker, join, open_child};

/// Where a walk starts.
pub(crate) enum Start {
    /// A directory, opened for reading.
    Dir(OwnedFd),
    /// Not a directory: its parent and name.
    File {
        dir: OwnedFd,
        name: CString,
        kind: Kind,
    },
}

/// Files and directories left out of a listing.
#[derive(Debug, Default, Clone, Copy)]
struct Omitted {
    files: usize,
    dirs: usize,
}

impl Omitted {
    fn total(self) -> usize {
        self.files + self.dirs
    }

    fn describe(self) -> String {
        format!(
            "{} more entries not shown ({} files, {} directories)",
            thousands(self.total()),
            thousands(self.files),
            thousands(self.dirs)
        )
    }
}

impl Workspace {
    /// Open the start of a walk through the gate-approved `rel`, loading the ignore rules of
    /// every directory above it.
    pub(crate) fn start_walk(
        &self,
        rel: &RelPath,
        op: &'static str,
    ) -> Result<(Walker<'_>, Start), WorkspaceError> {
        let shown = rel.display();
        let mut w = Walker::new(&self.gate.deny, &self.ignores);
        let mut cur = sys::reopen_dir(self.gate.root_fd.as_fd())
            .map_err(|e| WorkspaceError::io(op, shown, e))?;
        let comps: Vec<&str> = rel.components().collect();
        let Some((last, parents)) = comps.split_last() else {
            return Ok((w, Start::Dir(cur)));
        };
        let mut prefix = String::new();
        w.push_ancestor(&cur, "");
        for c in parents {
            prefix = join(&prefix, c);
            let name = sys::cstr(c).map_err(|e| WorkspaceError::io(op, shown, e))?;
            cur = sys::openat(cur.as_fd(), &name, sys::DIR_READ, 0)
                .map_err(|e| diagnose(cur.as_fd(), &name, &prefix, e, op, shown))?;
            w.push_ancestor(&cur, &prefix);
        }
        let name = sys::cstr(last).map_err(|e| WorkspaceError::io(op, shown, e))?;
        let st = sys::lstatat(cur.as_fd(), &name).map_err(|e| WorkspaceError::io(op, shown, e))?;
        if st.kind == Kind::Dir {
            let full = join(&prefix, last);
            let fd = sys::openat(cur.as_fd(), &name, sys::DIR_READ, 0)
                .map_err(|e| diagnose(cur.as_fd(), &name, &full, e, op, shown))?;
            Ok((w, Start::Dir(fd)))
        } else {
            Ok((
                w,
                Start::File {
                    dir: cur,
                    name,
                    kind: st.kind,
                },
            ))
        }
    }

    /// LIST_PATH: every visible file and directory below `path`, one project-relative path per
    /// line (directories end in `/`, symlinks in `@`), directories first at each level.
    pub fn list_path(&self, path: &str) -> Result<String, WorkspaceError> {
        let rel = self.gate_op(path, true)?;
        let (mut w, start) = self.start_walk(&rel, "list")?;
        let dir = match start {
            Start::Dir(fd) => fd,
            Start::File { kind, .. } => {
                let marker = if kind == Kind::Symlink { "@" } else { "" };
                return Ok(format!("{}{marker}\n", rel.as_str()));
            }
        };
        let mut st = ListState {
            out: String::new(),
            cap: self.cfg.max_list_entries,
            shown: 0,
            omitted: Omitted::default(),
            unreadable: 0,
        };
        list_rec(&mut w, &dir, rel.resolved(), &mut st);
        if st.shown == 0 && st.omitted.total() == 0 {
            st.out.push_str("(empty directory)\n");
        }
        if st.omitted.total() > 0 {
            st.out.push_str(&format!(
                "… {}; LIST_PATH a subdirectory to see them\n",
                st.omitted.describe()
            ));
        }
        note_unreadable(&mut st.out, st.unreadable);
        Ok(st.out)
    }

    /// TREE: the visible tree below `path`, drawn with connectors, directories first; at most
    /// `max_tree_dir_entries` per directory and `max_tree_entries` in all, with counts of the
    /// rest.
    pub fn tree(&self, path: &str) -> Result<String, WorkspaceError> {
        let rel = self.gate_op(path, true)?;
        let (mut w, start) = self.start_walk(&rel, "tree")?;
        let dir = match start {
            Start::Dir(fd) => fd,
            Start::File { kind, .. } => {
                let marker = if kind == Kind::Symlink { "@" } else { "" };
                return Ok(format!("{}{marker}\n", rel.as_str()));
            }
        };
        let mut st = TreeState {
            out: format!(
                "{}\n",
                if rel.is_root() {
                    "./".to_string()
                } else {
                    format!("{}/", rel.as_str())
                }
            ),
            cap: self.cfg.max_tree_entries,
            per_dir: self.cfg.max_tree_dir_entries.max(1),
            shown: 0,
            omitted: Omitted::default(),
            unreadable: 0,
        };
        tree_rec(&mut w, &dir, rel.resolved(), "", &mut st);
        if st.shown == 0 && st.omitted.total() == 0 {
            st.out.push_str("(empty directory)\n");
        }
        if st.omitted.total() > 0 {
            st.out.push_str(&format!(
                "… {}; TREE a subdirectory to see more\n",
                st.omitted.describe()
            ));
        }
        note_unreadable(&mut st.out, st.unreadable);
        Ok(st.out)
    }

    /// Up to `max` project-relative paths of the project's visible files (ignore rules and the
    /// deny-list applied, directories first at each level), and how many more there are. For
    /// the model's context.
    pub fn project_files(&self, max: usize) -> (Vec<String>, usize) {
        let mut w = Walker::new(&self.gate.deny, &self.ignores);
        let Ok(root) = sys::reopen_dir(self.gate.root_fd.as_fd()) else {
            return (Vec::new(), 0);
        };
        let mut files = Vec::new();
        let mut omitted = 0usize;
        files_rec(&mut w, &root, "", max, &mut files, &mut omitted);
        (files, omitted)
    }
}

fn note_unreadable(out: &mut String, n: usize) {
    if n > 0 {
        out.push_str(&format!(
            "({} directories could not be read)\n",
            thousands(n)
        ));
    }
}

struct ListState {
    out: String,
    cap: usize,
    shown: usize,
    omitted: Omitted,
    unreadable: usize,
}

fn list_rec(w: &mut Walker<'_>, dir: &OwnedFd, rel: &str, st: &mut ListState) {
    let entries = match w.enter(dir, rel) {
        Ok(e) => e,
        Err(_) => {
            st.unreadable += 1;
            w.leave();
            return;
        }
    };
    for e in &entries {
        let is_dir = e.kind == Kind::Dir;
        if st.shown < st.cap {
            if !rel.is_empty() {
                st.out.push_str(rel);
                st.out.push('/');
            }
            st.out.push_str(&e.name());
            st.out.push_str(e.marker());
            st.out.push('\n');
            st.shown += 1;
        } else if is_dir {
            st.omitted.dirs += 1;
        } else {
            st.omitted.files += 1;
        }
        if is_dir && w.depth() < MAX_DEPTH {
            match open_child(dir, e) {
                Ok(sub) => list_rec(w, &sub, &join(rel, &e.name()), st),
                Err(_) => st.unreadable += 1,
            }
        }
    }
    w.leave();
}

struct TreeState {
    out: String,
    cap: usize,
    per_dir: usize,
    shown: usize,
    omitted: Omitted,
    unreadable: usize,
}

fn tree_rec(w: &mut Walker<'_>, dir: &OwnedFd, rel: &str, prefix: &str, st: &mut TreeState) {
    let entries = match w.enter(dir, rel) {
        Ok(e) => e,
        Err(_) => {
            st.unreadable += 1;
            w.leave();
            return;
        }
    };
    let n = entries.len();
    let truncated_here = n > st.per_dir;
    let mut local = Omitted::default();
    for (i, e) in entries.iter().enumerate() {
        let is_dir = e.kind == Kind::Dir;
        if st.shown >= st.cap || i >= st.per_dir {
            // Not drawn: count the entry and everything below it, either into this directory's
            // "… more" line or, once the global cap is reached, into the final summary.
            let mut c = Omitted::default();
            if is_dir {
                c.dirs += 1;
                if w.depth() < MAX_DEPTH
                    && let Ok(sub) = open_child(dir, e)
                {
                    let below = count_rec(w, &sub, &join(rel, &e.name()));
                    c.files += below.files;
                    c.dirs += below.dirs;
                }
            } else {
                c.files += 1;
            }
            let bucket = if st.shown >= st.cap {
                &mut st.omitted
            } else {
                &mut local
            };
            bucket.files += c.files;
            bucket.dirs += c.dirs;
            continue;
        }
        let last = i + 1 == n && !truncated_here;
        st.out.push_str(prefix);
        st.out.push_str(if last { "└── " } else { "├── " });
        st.out.push_str(&e.name());
        st.out.push_str(e.marker());
        st.out.push('\n');
        st.shown += 1;
        if is_dir && w.depth() < MAX_DEPTH {
            match open_child(dir, e) {
                Ok(sub) => {
                    let child_prefix = format!("{prefix}{}", if last { "    " } else { "│   " });
                    tree_rec(w, &sub, &join(rel, &e.name()), &child_prefix, st);
                }
                Err(_) => st.unreadable += 1,
            }
        }
    }
    if local.total() > 0 {
        st.out.push_str(prefix);
        st.out.push_str("└── … ");
        st.out.push_str(&local.describe());
        st.out.push('\n');
    }
    w.leave();
}

/// Count what is visible below a directory without printing it.
fn count_rec(w: &mut Walker<'_>, dir: &OwnedFd, rel: &str) -> Omitted {
    let mut c = Omitted::default();
    let Ok(entries) = w.enter(dir, rel) else {
        w.leave();
        return c;
    };
    for e in &entries {
        if e.kind == Kind::Dir {
            c.dirs += 1;
            if w.depth() < MAX_DEPTH
                && let Ok(sub) = open_child(dir, e)
            {
                let s = count_rec(w, &sub, &join(rel, &e.name()));
                c.files += s.files;
                c.dirs += s.dirs;
            }
        } else {
            c.files += 1;
        }
    }
    w.leave();
    c
}

fn files_rec(
    w: &mut Walker<'_>,
    dir: &OwnedFd,
    rel: &str,
    max: usize,
    files: &mut Vec<String>,
    omitted: &mut usize,
) {
    let Ok(entries) = w.enter(dir, rel) else {
        w.leave();
        return;
    };
    for e in &entries {
        match e.kind {
            Kind::Dir => {
                if w.depth() < MAX_DEPTH
                    && let Ok(sub) = open_child(dir, e)
                {
                    files_rec(w, &sub, &join(rel, &e.name()), max, files, omitted);
                }
            }
            Kind::File => {
                if files.len() < max {
                    files.push(join(rel, &e.name()));
                } else {
                    *omitted += 1;
                }
            }
            Kind::Symlink | Kind::Other => {}
        }
    }
    w.leave();
}

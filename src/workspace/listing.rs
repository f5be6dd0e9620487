//! TREE, LIST_PATH and the project file list: `.gitignore`- and deny-aware, directories first,
//! capped on huge trees with a count of what was left out (the whole tree is still walked so
//! the count is exact).

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};

use super::Workspace;
use super::beneath::diagnose;
use super::error::WorkspaceError;
use super::gate::RelPath;
use super::scan::{Scan, ScanDir, scan};
use super::sys::{self, Kind};
use super::text::thousands;
use super::walk::{Walker, join};

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
        let (w, start) = self.start_walk(&rel, "list")?;
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
        let scan = scan(w, dir, rel.resolved());
        list_rec(&scan, scan.root(), &mut st);
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
        let (w, start) = self.start_walk(&rel, "tree")?;
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
        let scan = scan(w, dir, rel.resolved());
        tree_rec(&scan, scan.root(), "", &mut st);
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
        let start = Walker::new(&self.gate.deny, &self.ignores);
        let Ok(root) = sys::reopen_dir(self.gate.root_fd.as_fd()) else {
            return (Vec::new(), 0);
        };
        let scan = scan(start, root, "");
        let mut files = Vec::new();
        let mut omitted = 0usize;
        files_rec(&scan, scan.root(), max, &mut files, &mut omitted);
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

fn list_rec(scan: &Scan, d: &ScanDir, st: &mut ListState) {
    if d.unreadable {
        st.unreadable += 1;
    }
    let rel = d.rel.as_str();
    for (i, e) in d.entries.iter().enumerate() {
        if st.shown < st.cap {
            if !rel.is_empty() {
                st.out.push_str(rel);
                st.out.push('/');
            }
            st.out.push_str(&e.name());
            st.out.push_str(e.marker());
            st.out.push('\n');
            st.shown += 1;
        } else if e.kind == Kind::Dir {
            st.omitted.dirs += 1;
        } else {
            st.omitted.files += 1;
        }
        if let Some(id) = d.sub(i) {
            list_rec(scan, scan.dir(id), st);
        }
    }
}

struct TreeState {
    out: String,
    cap: usize,
    per_dir: usize,
    shown: usize,
    omitted: Omitted,
    unreadable: usize,
}

fn tree_rec(scan: &Scan, d: &ScanDir, prefix: &str, st: &mut TreeState) {
    if d.unreadable {
        st.unreadable += 1;
    }
    let n = d.entries.len();
    let truncated_here = n > st.per_dir;
    let mut local = Omitted::default();
    for (i, e) in d.entries.iter().enumerate() {
        let is_dir = e.kind == Kind::Dir;
        let sub = d.sub(i);
        if st.shown >= st.cap || i >= st.per_dir {
            // Not drawn: count the entry and everything below it, either into this directory's
            // "… more" line or, once the global cap is reached, into the final summary.
            let mut c = Omitted::default();
            if is_dir {
                c.dirs += 1;
                if let Some(id) = sub {
                    let below = count_rec(scan, scan.dir(id), &mut st.unreadable);
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
        if let Some(id) = sub {
            let child_prefix = format!("{prefix}{}", if last { "    " } else { "│   " });
            tree_rec(scan, scan.dir(id), &child_prefix, st);
        }
    }
    if local.total() > 0 {
        st.out.push_str(prefix);
        st.out.push_str("└── … ");
        st.out.push_str(&local.describe());
        st.out.push('\n');
    }
}

/// Count what is visible below a directory without printing it.
fn count_rec(scan: &Scan, d: &ScanDir, unreadable: &mut usize) -> Omitted {
    let mut c = Omitted::default();
    if d.unreadable {
        *unreadable += 1;
    }
    for (i, e) in d.entries.iter().enumerate() {
        if e.kind == Kind::Dir {
            c.dirs += 1;
            if let Some(id) = d.sub(i) {
                let s = count_rec(scan, scan.dir(id), unreadable);
                c.files += s.files;
                c.dirs += s.dirs;
            }
        } else {
            c.files += 1;
        }
    }
    c
}

fn files_rec(scan: &Scan, d: &ScanDir, max: usize, files: &mut Vec<String>, omitted: &mut usize) {
    for (i, e) in d.entries.iter().enumerate() {
        match e.kind {
            Kind::Dir => {
                if let Some(id) = d.sub(i) {
                    files_rec(scan, scan.dir(id), max, files, omitted);
                }
            }
            Kind::File => {
                if files.len() < max {
                    files.push(join(&d.rel, &e.name()));
                } else {
                    *omitted += 1;
                }
            }
            Kind::Symlink | Kind::Other => {}
        }
    }
}

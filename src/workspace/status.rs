//! The status pass: what `git status` does to find changed files, in one walk of the tree.
//!
//! Each directory is listed once. A tracked file is `lstat`ed relative to its directory's
//! descriptor and its stat data handed to the caller's [`Tracked`] (git's index, for
//! history), which says whether it is certainly unchanged; only files whose stat changed are
//! reported, for the caller to read. An untracked file is reported when no ignore rule or
//! deny-list entry hides it; ignored and denied directories are not entered. Tracked files the
//! walk did not meet (deleted, or inside an ignored directory) are looked at one by one
//! through the gate. The files that make code run later are recorded, or compared and put
//! back, in the same pass, using the root's listing to look only at those that are there.
//!
//! Memory grows with what changed, not with the tree: the walk keeps one bit per tracked file
//! and the paths it reports.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use super::Workspace;
use super::beneath::open_parent;
use super::later::LaterState;
use super::sys::{self, DirEntry, FileStat, Kind};
use super::walk::{Level, MAX_DEPTH, Rules, Walker};

/// The files the caller already knows (git's index): sorted by path bytes, as git sorts them.
pub trait Tracked: Sync {
    /// How many there are; positions run from 0 to this, exclusive.
    fn count(&self) -> usize;
    /// The path at position `i` (raw bytes, `/`-separated, relative to the root).
    fn path(&self, i: usize) -> &[u8];
    /// The position of `path`, when it is tracked.
    fn find(&self, path: &[u8]) -> Option<usize>;
    /// Whether anything tracked lies below the directory `dir`.
    fn has_under(&self, dir: &[u8]) -> bool;
    /// Whether position `i` is a submodule (its directory belongs to another repository).
    fn is_submodule(&self, i: usize) -> bool;
    /// Whether the file at position `i`, which now has the stat data `st`, is certainly what
    /// the caller recorded (`false` when in doubt: the caller then reads it).
    fn unchanged(&self, i: usize, st: &FileStat) -> bool;
}

/// What the pass does with the files that make code run later.
pub enum Later<'a> {
    /// Record them (before an action).
    Record,
    /// Compare with what was recorded before, and put back what changed (after it).
    Restore(&'a LaterState),
}

/// What one status pass found.
pub struct StatusPass {
    /// Positions of tracked files that may differ from what the caller recorded: their stat
    /// data changed, they are gone, or they are not a regular file or link any more.
    pub changed: Vec<usize>,
    /// Visible untracked files (ignore rules and deny-list applied), sorted.
    pub untracked: Vec<String>,
    /// The files that run later, as they are now ([`Later::Record`]).
    pub later: LaterState,
    /// The files that run later that differed and were put back ([`Later::Restore`]).
    pub tampered: Vec<String>,
    /// Ignored files and folders (a folder with a trailing `/`) where the walk stopped: not
    /// entered, not reported as untracked. History compares them around a RUN to find the
    /// ignored files it created.
    pub ignored: Vec<String>,
    /// Folders the walk found empty.
    pub empty_dirs: Vec<String>,
}

impl Workspace {
    /// One status pass over the project against `tracked` (see the module comment). Fails
    /// only when the root itself cannot be listed.
    pub fn status_pass(
        &self,
        tracked: &dyn Tracked,
        later: Later<'_>,
    ) -> std::io::Result<StatusPass> {
        let (rules, _) = Walker::new(&self.gate.deny, &self.ignores).into_parts();
        let mut walk = Walk {
            rules,
            tracked,
            visited: vec![false; tracked.count()],
            changed: Vec::new(),
            untracked: Vec::new(),
            ignored: Vec::new(),
            empty_dirs: Vec::new(),
            dirents: Vec::new(),
            path: Vec::new(),
        };
        let root = sys::reopen_dir(self.gate.root_fd.as_fd())?;
        let (level, raw) = rules.read_raw(&root, "", None, &mut walk.dirents);
        let mut raw = raw?;
        let (recorded, tampered) = {
            let present = |name: &str| raw.iter().any(|e| e.name.to_bytes() == name.as_bytes());
            match later {
                Later::Record => (
                    LaterState::record_present(self.root(), &present),
                    Vec::new(),
                ),
                Later::Restore(before) => (
                    LaterState::default(),
                    before.restore_present(self.root(), &present),
                ),
            }
        };
        if !tampered.is_empty() {
            // Putting back removed or added entries at the root: list it as it is now.
            raw = rules.read_raw(&root, "", None, &mut walk.dirents).1?;
        }
        walk.dir(&root, &level, raw);
        walk.unvisited(self);
        let Walk {
            mut changed,
            mut untracked,
            ignored,
            empty_dirs,
            ..
        } = walk;
        changed.sort_unstable();
        untracked.sort_unstable();
        Ok(StatusPass {
            changed,
            untracked,
            later: recorded,
            tampered,
            ignored,
            empty_dirs,
        })
    }

    /// The full stat data of the file at `path`, through the gate; `None` when nothing is
    /// there or the gate refuses it.
    fn lstat_full(&self, path: &str) -> Option<FileStat> {
        let rel = self.gate.check(path, true).ok()?;
        if rel.is_root() {
            return None;
        }
        let (dir, name) = open_parent(&self.gate, &rel, false, "inspect").ok()?;
        sys::lstatat_full(dir.as_fd(), &name).ok()
    }
}

/// The walk's state.
struct Walk<'w, 't> {
    rules: Rules<'w>,
    tracked: &'t dyn Tracked,
    /// One flag per tracked position: met by the walk.
    visited: Vec<bool>,
    changed: Vec<usize>,
    untracked: Vec<String>,
    ignored: Vec<String>,
    empty_dirs: Vec<String>,
    dirents: Vec<u8>,
    /// The raw path of the entry being looked at.
    path: Vec<u8>,
}

impl Walk<'_, '_> {
    /// Look at the entries `raw` of the directory open as `fd`, whose path is `self.path`
    /// and whose rules are `level`.
    fn dir(&mut self, fd: &OwnedFd, level: &Arc<Level>, raw: Vec<DirEntry>) {
        let base = self.path.len();
        let any_rules = self.rules.any_rules(level);
        if raw.is_empty() && base > 0 {
            self.empty_dirs
                .push(crate::rawname::encode(&self.path).into_owned());
        }
        for e in raw {
            self.path.truncate(base);
            if base > 0 {
                self.path.push(b'/');
            }
            self.path.extend_from_slice(e.name.to_bytes());
            let found = self.tracked.find(&self.path);
            if let Some(i) = found {
                self.visited[i] = true;
            }
            match (e.kind, found) {
                (Kind::Dir, Some(i)) if self.tracked.is_submodule(i) => {}
                (Kind::Dir, _) => {
                    // A tracked file replaced by a directory.
                    self.changed.extend(found);
                    self.subdir(fd, &e, level, any_rules);
                }
                (_, Some(i)) => {
                    let same = sys::lstatat_full(fd.as_fd(), &e.name)
                        .is_ok_and(|st| self.tracked.unchanged(i, &st));
                    if !same {
                        self.changed.push(i);
                    }
                }
                (_, None) => self.untracked_file(&e, level, any_rules),
            }
        }
        self.path.truncate(base);
    }

    /// An untracked file: reported unless hidden.
    fn untracked_file(&mut self, e: &DirEntry, level: &Level, any_rules: bool) {
        let name = e.name.to_string_lossy();
        if self.rules.denied_name(&name) {
            return;
        }
        let full = String::from_utf8_lossy(&self.path);
        if self.rules.denied_path(&full) {
            return;
        }
        if any_rules && self.rules.ignored(level, &full, false) {
            self.ignored
                .push(crate::rawname::encode(&self.path).into_owned());
            return;
        }
        self.untracked
            .push(crate::rawname::encode(&self.path).into_owned());
    }

    /// Go into the directory `e` of `parent` (at `self.path`) unless it is hidden, ignored,
    /// too deep, or another repository nothing here tracks.
    fn subdir(&mut self, parent: &OwnedFd, e: &DirEntry, level: &Arc<Level>, any_rules: bool) {
        let name = e.name.to_string_lossy();
        if self.rules.denied_name(&name) || level.depth() >= MAX_DEPTH {
            return;
        }
        let full = String::from_utf8_lossy(&self.path).into_owned();
        if self.rules.denied_path(&full) {
            return;
        }
        if any_rules && self.rules.ignored(level, &full, true) {
            self.ignored
                .push(format!("{}/", crate::rawname::encode(&self.path)));
            return;
        }
        let Ok(fd) = sys::openat(parent.as_fd(), &e.name, sys::DIR_READ, 0) else {
            return;
        };
        let (sub_level, raw) = self
            .rules
            .read_raw(&fd, &full, Some(level), &mut self.dirents);
        let Ok(raw) = raw else {
            return;
        };
        let nested_repo = raw.iter().any(|e| e.name.to_bytes() == b".git");
        if nested_repo && !self.tracked.has_under(&self.path) {
            // An embedded repository: git status shows it as one untracked directory and
            // does not look inside; nothing in it can be recorded here.
            return;
        }
        self.dir(&fd, &sub_level, raw);
    }

    /// Tracked files the walk did not meet: gone, or in a directory it did not enter.
    fn unvisited(&mut self, ws: &Workspace) {
        for (i, seen) in self.visited.iter().enumerate() {
            if *seen || self.tracked.is_submodule(i) {
                continue;
            }
            let path = crate::rawname::encode(self.tracked.path(i));
            // Denied files are never recorded: no need to look.
            if ws.is_denied(&path) {
                continue;
            }
            let same = ws
                .lstat_full(&path)
                .is_some_and(|st| self.tracked.unchanged(i, &st));
            if !same {
                self.changed.push(i);
            }
        }
    }
}

//! The status pass: what `git status` does to find changed files, in one walk of the tree.
//!
//! Each directory is listed once (on every core: [`super::status_walk`]). A tracked file is
//! `lstat`ed relative to its directory's descriptor and its stat data handed to the caller's
//! [`Tracked`] (git's index, for history), which says whether it is certainly unchanged; only
//! files whose stat changed are reported, for the caller to read. An untracked file is
//! reported when no ignore rule or deny-list entry hides it; ignored and denied directories
//! are not entered. Tracked files the walk did not meet (deleted, or inside an ignored
//! directory) are looked at one by one through the gate. The files that make code run later
//! are recorded, or compared and put back, in the same pass, using the root's listing to look
//! only at those that are there.
//!
//! Memory grows with what changed, not with the tree: the walk keeps one bit per tracked file
//! and the paths it reports.

use std::os::fd::AsFd;

use super::Workspace;
use super::beneath::open_parent;
use super::later::LaterState;
use super::status_walk::{self, Found, Tracked, Visited};
use super::sys::{self, FileStat};
use super::walk::Walker;

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
    /// only when the root itself cannot be listed, or the walk stopped short (a helper thread
    /// panicked).
    pub fn status_pass(
        &self,
        tracked: &dyn Tracked,
        later: Later<'_>,
    ) -> std::io::Result<StatusPass> {
        let (rules, _) = Walker::new(&self.gate.deny, &self.ignores).into_parts();
        let mut dirents = Vec::new();
        let root = sys::reopen_dir(self.gate.root_fd.as_fd())?;
        let (level, raw) = rules.read_raw(&root, "", None, &mut dirents);
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
            raw = rules.read_raw(&root, "", None, &mut dirents).1?;
        }
        let (found, visited) = status_walk::walk(rules, tracked, root, &level, raw)?;
        let Found {
            mut changed,
            mut untracked,
            mut ignored,
            mut empty_dirs,
        } = found;
        changed.extend(self.unvisited(tracked, &visited));
        drop(visited);
        // What the walk's threads read of each folder is freed, and would stay resident in
        // their allocator arenas through the RUN and the commit that follow.
        crate::heap::release_freed();
        changed.sort_unstable();
        untracked.sort_unstable();
        ignored.sort_unstable();
        empty_dirs.sort_unstable();
        Ok(StatusPass {
            changed,
            untracked,
            later: recorded,
            tampered,
            ignored,
            empty_dirs,
        })
    }

    /// Tracked files the walk did not meet (gone, or in a directory it did not enter) that
    /// may differ from what `tracked` recorded, looked at one by one through the gate.
    fn unvisited(&self, tracked: &dyn Tracked, visited: &Visited) -> Vec<usize> {
        let mut changed = Vec::new();
        for i in 0..tracked.count() {
            if visited.get(i) || tracked.is_submodule(i) {
                continue;
            }
            let path = crate::rawname::encode(tracked.path(i));
            // Denied files are never recorded: no need to look.
            if self.is_denied(&path) {
                continue;
            }
            let same = self
                .lstat_full(&path)
                .is_some_and(|st| tracked.unchanged(i, &st));
            if !same {
                changed.push(i);
            }
        }
        changed
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

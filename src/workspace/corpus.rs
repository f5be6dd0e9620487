//! The project's files for the repository map: one scan (the same ignore rules and deny-list
//! as the file list), no `stat` per file (the listing's file types say which entries are
//! regular files; the map takes tracked files' versions from git's index and stamps only the
//! files it must). Reads for the map go through the gate like every other read.

use std::os::fd::AsFd;

use super::Workspace;
use super::beneath::open_parent;
use super::scan::{Scan, scan};
use super::sys::{self, Kind, Stamp};
use super::walk::{Walker, join};

/// One project file as the map sees it.
#[derive(Debug, Clone)]
pub struct CorpusFile {
    /// Project-relative path.
    pub path: String,
}

impl Workspace {
    /// Every visible regular file of the project (`.gitignore`-aware, deny-list filtered, no
    /// symlinks), in the file list's order. Unreadable directories are left out.
    pub fn corpus(&self) -> Vec<CorpusFile> {
        let start = Walker::new(&self.gate.deny, &self.ignores);
        let Ok(root) = sys::reopen_dir(self.gate.root_fd.as_fd()) else {
            return Vec::new();
        };
        let mut tree = scan(start, root, "");
        let mut out = Vec::new();
        flatten(&mut tree, 0, &mut out);
        out
    }

    /// A project file's text (at most `limit` bytes; `None` for binary, longer, missing or
    /// refused files) with the stamp of the very descriptor it was read from, so a cache keyed
    /// by the stamp never pairs one version's stamp with another version's text.
    pub fn read_stamped(&self, path: &str, limit: usize) -> Option<(String, Stamp)> {
        let rel = self.gate_op(path, true).ok()?;
        if rel.is_root() {
            return None;
        }
        let (dir, name) = open_parent(&self.gate, &rel, false, "read").ok()?;
        let (fd, st) = Self::open_file(&dir, &name, &rel, "read", "").ok()?;
        if st.size > limit as u64 {
            return None;
        }
        let bytes = sys::read_up_to(&fd, limit.saturating_add(1)).ok()?;
        if bytes.len() > limit || bytes.contains(&0) {
            return None;
        }
        let text = String::from_utf8(bytes).ok()?;
        Some((text, st.stamp()))
    }

    /// The stamp of a project file (no symlink followed), for files the map cannot read as
    /// text: it then knows not to try again until the file changes.
    pub fn stamp_of(&self, path: &str) -> Option<Stamp> {
        let rel = self.gate_op(path, false).ok()?;
        let (dir, name) = open_parent(&self.gate, &rel, false, "stat").ok()?;
        let st = sys::lstatat(dir.as_fd(), &name).ok()?;
        (st.kind == Kind::File).then(|| st.stamp())
    }
}

/// The files of directory `id` and its scanned subdirectories, in the file list's
/// order (a directory's subdirectories, then its files). Each directory is taken out of the
/// scan as it is turned into paths, so the two are not both held whole.
fn flatten(tree: &mut Scan, id: usize, out: &mut Vec<CorpusFile>) {
    let d = tree.take(id);
    for (i, e) in d.entries.iter().enumerate() {
        match (e.kind, d.sub.get(i).copied().flatten()) {
            (Kind::Dir, Some(sub)) => flatten(tree, sub, out),
            (Kind::File, _) => out.push(CorpusFile {
                path: join(&d.rel, &e.name()),
            }),
            _ => {}
        }
    }
}

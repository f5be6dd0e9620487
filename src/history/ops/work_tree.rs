//! The narrow door through which history touches project files. History never writes the
//! project itself: restoring files on undo/redo goes through the workspace gate (root
//! confinement, deny-list, atomic writes), which implements [`WorkTree`].

use std::io;

/// What is at a project path right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkEntry {
    /// Nothing there.
    Absent,
    /// A regular file (a symlink to a file inside the project reads as its target's contents).
    File {
        /// The exact bytes, line endings untouched.
        bytes: Vec<u8>,
        /// Whether any execute bit is set.
        executable: bool,
    },
    /// A directory; its entry names (not paths), in any order.
    Dir(Vec<String>),
    /// Something history does not record (socket, device, dangling link, ...).
    Other,
}

/// Access to the project's files, implemented by the workspace gate.
///
/// Paths are project-relative, `/`-separated, without `.` or `..` segments.
pub trait WorkTree {
    /// What is at `rel`. `Ok(WorkEntry::Absent)` when nothing is there.
    fn read(&self, rel: &str) -> io::Result<WorkEntry>;
    /// Replace `rel` atomically with `bytes`, creating missing parent directories, with the
    /// execute bits set or cleared as asked.
    fn write(&self, rel: &str, bytes: &[u8], executable: bool) -> io::Result<()>;
    /// Like [`WorkTree::write`], with the exact permission bits `mode` (a private `0600` file
    /// stays private). The default keeps only the execute bits' meaning.
    fn write_with_mode(&self, rel: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
        self.write(rel, bytes, mode & 0o111 != 0)
    }
    /// The permission bits of the regular file at `rel`, when known.
    fn permissions(&self, _rel: &str) -> Option<u32> {
        None
    }
    /// Remove the file at `rel`, then the parent directories it leaves empty (never the
    /// project root), as git does; an absent file is not an error.
    fn remove(&self, rel: &str) -> io::Result<()>;
    /// Like [`WorkTree::remove`], but the walk up the parent directories stops below the
    /// first one `keep` names (a folder the user had before a plan wrote into it), which
    /// stays even when left empty. The default removes as [`WorkTree::remove`] does.
    fn remove_up_to(&self, rel: &str, keep: &dyn Fn(&str) -> bool) -> io::Result<()> {
        let _ = keep;
        self.remove(rel)
    }
    /// Whether `rel` is on the deny-list (`.env`, `.git`, key material, ...): never committed.
    fn is_denied(&self, rel: &str) -> bool;
}

//! The user's git index as the status pass before and after a RUN compares the work tree
//! with it: git's own rule for trusting stat data (a file whose recorded stat still matches is
//! unchanged, unless it was staged in the same instant the index was written: "racily clean",
//! then it is read), so only files whose stat changed are read, as `git status` reads them.

use std::path::Path;

use crate::workspace::{FileStat, Tracked};

use crate::history::error::HistoryError;
use crate::history::index::{self, Entry, IndexFile};

/// Git mode of a submodule (a commit in another repository).
const MODE_GITLINK: u32 = 0o160000;
/// Git mode of a symbolic link.
const MODE_LINK: u32 = 0o120000;
/// The file-type bits of `st_mode`.
const TYPE_MASK: u32 = 0o170000;

/// The user's index, read once before a RUN and compared with after it.
pub struct RunIndex {
    /// Shared with the plan's other readers while the file holds the same content: a second
    /// copy would be 10 MB more at 100,000 files.
    index: std::sync::Arc<IndexFile>,
    /// When the index file was written (seconds, nanoseconds): entries recorded at or after
    /// it are racily clean.
    written: (u32, u32),
}

impl RunIndex {
    /// Read the index of the repository whose git directory is `git_dir`; a missing index is
    /// an empty one.
    pub(crate) fn read(git_dir: &Path) -> Result<RunIndex, HistoryError> {
        use std::os::unix::fs::MetadataExt;
        let path = index::index_path(git_dir);
        let written = std::fs::metadata(&path).map_or((0, 0), |m| {
            (
                u32::try_from(m.mtime()).unwrap_or(u32::MAX),
                u32::try_from(m.mtime_nsec()).unwrap_or(0),
            )
        });
        Ok(RunIndex {
            index: index::load_shared_at(path)?,
            written,
        })
    }

    /// The blob id and mode the index holds for entry `i` (stage 0 only).
    pub(crate) fn entry(&self, i: usize) -> Option<Entry> {
        self.index.entry_at(i)
    }

    /// The blob id and mode the index holds at `path` (stage 0).
    pub(crate) fn get(&self, path: &str) -> Option<Entry> {
        self.index.get(path)
    }
}

impl Tracked for RunIndex {
    fn count(&self) -> usize {
        self.index.len()
    }

    fn path(&self, i: usize) -> &[u8] {
        self.index.path_at(i)
    }

    fn find(&self, path: &[u8]) -> Option<usize> {
        self.index.position(path)
    }

    fn has_under(&self, dir: &[u8]) -> bool {
        self.index.has_under(dir)
    }

    fn is_submodule(&self, i: usize) -> bool {
        self.index
            .entry_at(i)
            .is_some_and(|(_, mode)| mode.cast_unsigned() == MODE_GITLINK)
    }

    fn done_with(&self, positions: std::ops::Range<usize>) {
        self.index.release(positions);
    }

    fn unchanged(&self, i: usize, st: &FileStat) -> bool {
        let (Some((_, mode)), Some(rec)) = (self.index.entry_at(i), self.index.stat_at(i)) else {
            return false;
        };
        let [c_s, c_ns, m_s, m_ns, _dev, ino, _mode, uid, gid, size] = rec;
        // Zeroed stat data (pai's own updates write it) or an entry staged in the same instant
        // the index was written: only the content can tell.
        if (m_s, m_ns) == (0, 0) || (m_s, m_ns) >= self.written {
            return false;
        }
        let mode = mode.cast_unsigned();
        let kind_ok = match mode & TYPE_MASK {
            MODE_LINK => st.mode & TYPE_MASK == MODE_LINK,
            0o100000 => {
                st.mode & TYPE_MASK == 0o100000 && (st.mode & 0o100 != 0) == (mode & 0o100 != 0)
            }
            _ => false,
        };
        // Git keeps the low 32 bits of each field.
        kind_ok
            && st.mtime.0 as u32 == m_s
            && st.mtime.1 == m_ns
            && st.ctime.0 as u32 == c_s
            && st.ctime.1 == c_ns
            && st.ino as u32 == ino
            && st.uid == uid
            && st.gid == gid
            && st.size as u32 == size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::index::test_git::git;

    #[test]
    fn a_run_compares_with_the_index_the_plan_read_not_a_second_copy() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
        git(dir.path(), &["add", "a.txt"]);
        let repo = git2::Repository::open(dir.path()).unwrap();
        // The process keeps one index at a time, and tests on other threads read theirs: a
        // few tries, one of which must find the plan's copy shared.
        let mut shared = index::load_shared(&repo).unwrap();
        let mut run = RunIndex::read(repo.path()).unwrap();
        for _ in 0..50 {
            if std::sync::Arc::ptr_eq(&run.index, &shared) {
                break;
            }
            shared = index::load_shared(&repo).unwrap();
            run = RunIndex::read(repo.path()).unwrap();
        }
        assert!(std::sync::Arc::ptr_eq(&run.index, &shared));
        assert_eq!(run.count(), 1);
        // Once the index changes, the run reads the new one.
        std::fs::write(dir.path().join("b.txt"), "b\n").unwrap();
        git(dir.path(), &["add", "b.txt"]);
        let run = RunIndex::read(repo.path()).unwrap();
        assert!(!std::sync::Arc::ptr_eq(&run.index, &shared));
        assert_eq!(run.count(), 2);
    }
}

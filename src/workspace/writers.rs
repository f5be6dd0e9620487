//! Which pai processes may have left temporaries of atomic writes in the project. A process
//! registers itself (a record named for its pid and start time, in `writers/` of pai's
//! per-project state directory, outside the project) before its first atomic write, and
//! removes the record when its workspace is dropped. A record whose process is gone means a
//! crash may have left temporaries behind: only then does the next pai walk the whole tree to
//! sweep them. Without this, every command would walk every folder of the project (ignored
//! ones included) on a thread of its own: at 100,000 files a tenth of a `pai run`'s CPU.

use std::io;
use std::path::{Path, PathBuf};

use super::sys;

/// Name of the registry's folder in the state directory.
const FOLDER: &str = "writers";

/// The registry of one project.
#[derive(Debug, Clone)]
pub(crate) struct Registry {
    dir: PathBuf,
}

/// What the registry says about temporaries left in the project.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Left {
    /// No process that wrote is gone without removing its record: nothing to sweep.
    Nothing,
    /// These records' processes are gone.
    Crashed(Vec<String>),
    /// The registry could not be read, or has just been made (pai versions before it kept
    /// none): sweep to be sure.
    Unknown,
}

/// This process's record, removed when dropped.
#[derive(Debug)]
pub(crate) struct Record {
    path: PathBuf,
}

impl Drop for Record {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Registry {
    /// The registry in pai's per-project state directory `state`.
    pub(crate) fn new(state: &Path) -> Registry {
        Registry {
            dir: state.join(FOLDER),
        }
    }

    /// Whether a process that wrote in the project ended without removing its record.
    pub(crate) fn left(&self) -> Left {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // First run with a registry: earlier pai versions kept none.
                let _ = make_private(&self.dir);
                return Left::Unknown;
            }
            Err(_) => return Left::Unknown,
        };
        let mut gone = Vec::new();
        for entry in entries {
            let Ok(entry) = entry else {
                return Left::Unknown;
            };
            let name = entry.file_name().to_string_lossy().into_owned();
            if !alive(&name) {
                gone.push(name);
            }
        }
        if gone.is_empty() {
            Left::Nothing
        } else {
            Left::Crashed(gone)
        }
    }

    /// Forget the records of processes found gone, once their temporaries are swept.
    pub(crate) fn forget(&self, gone: &[String]) {
        for name in gone {
            let _ = std::fs::remove_file(self.dir.join(name));
        }
    }

    /// Register this process as one that writes in the project. The record reaches the disk
    /// before any temporary does (its folder is synced), so a crash never leaves temporaries
    /// no record points at.
    pub(crate) fn register(&self) -> io::Result<Record> {
        make_private(&self.dir)?;
        let path = self.dir.join(own_name()?);
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        std::fs::File::open(&self.dir)?.sync_all()?;
        Ok(Record { path })
    }
}

/// This process's record name: its pid and start time (so a reused pid is not taken for it).
fn own_name() -> io::Result<String> {
    let pid = std::process::id();
    let start = start_time(pid).ok_or_else(|| io::Error::other("cannot read /proc/self/stat"))?;
    Ok(format!("{pid}-{start}"))
}

/// Whether the process a record names still runs (a name that is not a record counts as gone).
fn alive(name: &str) -> bool {
    let Some((pid, start)) = name.split_once('-') else {
        return false;
    };
    let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
        return false;
    };
    i32::try_from(pid).is_ok_and(sys::process_alive) && start_time(pid) == Some(start)
}

/// A process's start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Create `dir` readable by the user alone (its parent, the state directory, exists).
fn make_private(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if std::fs::symlink_metadata(dir)?.is_dir() {
                Ok(())
            } else {
                Err(io::Error::other(format!(
                    "{} is not a folder",
                    dir.display()
                )))
            }
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_registry_asks_for_a_sweep_then_none_until_a_writer_dies() {
        let state = tempfile::tempdir().unwrap();
        let reg = Registry::new(state.path());
        assert_eq!(
            reg.left(),
            Left::Unknown,
            "no registry yet: older pai kept none"
        );
        assert_eq!(reg.left(), Left::Nothing);
        let record = reg.register().unwrap();
        assert_eq!(reg.left(), Left::Nothing, "this process runs");
        drop(record);
        assert_eq!(reg.left(), Left::Nothing, "a record is removed when done");
        // A writer that died: a pid that runs with another start time, and one that is free.
        let me = std::process::id();
        let dead = [
            format!("{me}-1"),
            "999999999-5".to_string(),
            "junk".to_string(),
        ];
        for name in &dead {
            std::fs::write(state.path().join(FOLDER).join(name), "").unwrap();
        }
        let Left::Crashed(mut gone) = reg.left() else {
            panic!("dead writers not found");
        };
        gone.sort();
        let mut expected = dead.to_vec();
        expected.sort();
        assert_eq!(gone, expected);
        reg.forget(&gone);
        assert_eq!(reg.left(), Left::Nothing);
    }

    #[test]
    fn start_time_is_read_past_a_command_name_with_spaces_and_parentheses() {
        let me = std::process::id();
        let start = start_time(me).unwrap();
        assert!(alive(&format!("{me}-{start}")));
        assert!(!alive(&format!("{me}-{}", start + 1)));
    }
}

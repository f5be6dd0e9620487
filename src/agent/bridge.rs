//! The workspace seen by history: history never touches project files itself, it goes through
//! this implementation of [`WorkTree`] over the workspace gate.

use std::io;

use crate::history::{WorkEntry, WorkTree};
use crate::workspace::{Probe, Workspace, WorkspaceError};

fn io_error(e: WorkspaceError) -> io::Error {
    let kind = if e.is_refusal() {
        io::ErrorKind::PermissionDenied
    } else {
        io::ErrorKind::Other
    };
    io::Error::new(kind, e.to_string())
}

/// Remove the directories above `rel` that are left empty, deepest first, never the root, as
/// git does when it removes a file: an undone plan that created `pkg/util/x.py` leaves no
/// `pkg/util/` behind. Each directory passes the gate, and removing one that is not empty
/// fails, so nothing but empty directories can go; the first one that stays (or that `keep`
/// names: the user's own) ends the walk. A failure of the system (an I/O error) is an error:
/// the operation is then not done, and its journal has the next command finish it.
fn remove_empty_parents(
    ws: &Workspace,
    rel: &str,
    keep: &dyn Fn(&str) -> bool,
) -> Result<(), WorkspaceError> {
    let mut dir = rel;
    while let Some((parent, _)) = dir.rsplit_once('/') {
        if keep(parent) || !ws.remove_empty_dir(parent)? {
            return Ok(());
        }
        dir = parent;
    }
    Ok(())
}

impl WorkTree for Workspace {
    fn read(&self, rel: &str) -> io::Result<WorkEntry> {
        // Directories are only listed (names), never read; everything goes through the gate's
        // no-follow opening.
        match self.probe(rel).map_err(io_error)? {
            Probe::Absent => Ok(WorkEntry::Absent),
            Probe::Dir(names) => Ok(WorkEntry::Dir(names)),
            Probe::File { bytes, perm } => Ok(WorkEntry::File {
                bytes,
                executable: perm & 0o111 != 0,
            }),
            Probe::Other => Ok(WorkEntry::Other),
        }
    }

    fn write(&self, rel: &str, bytes: &[u8], executable: bool) -> io::Result<()> {
        let mode = match self.file_mode(rel) {
            Some(m) => {
                let m = m & 0o777;
                if executable {
                    m | ((m & 0o444) >> 2)
                } else {
                    m & !0o111
                }
            }
            None => {
                if executable {
                    0o755
                } else {
                    0o644
                }
            }
        };
        self.write_bytes(rel, bytes, Some(mode)).map_err(io_error)
    }

    fn write_with_mode(&self, rel: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
        self.write_bytes(rel, bytes, Some(mode & 0o7777))
            .map_err(io_error)
    }

    fn permissions(&self, rel: &str) -> Option<u32> {
        self.file_mode(rel).map(|m| m & 0o7777)
    }

    fn remove(&self, rel: &str) -> io::Result<()> {
        self.remove_up_to(rel, &|_| false)
    }

    fn remove_up_to(&self, rel: &str, keep: &dyn Fn(&str) -> bool) -> io::Result<()> {
        match self.remove_file(rel) {
            Ok(()) | Err(WorkspaceError::NotFound { .. }) => {}
            Err(e) => return Err(io_error(e)),
        }
        remove_empty_parents(self, rel, keep).map_err(io_error)
    }

    fn is_denied(&self, rel: &str) -> bool {
        Workspace::is_denied(self, rel)
    }
}

//! Which files of a fresh checkout libgit2 writes rather than pai: those git converts on the
//! way out (line endings under `core.autocrlf=true` or a `text`, `eol` or `crlf` attribute;
//! `ident`), and links where the repository says the file system has none
//! (`core.symlinks=false`: libgit2 writes the link's target as a file). Every other file is
//! its blob's bytes, which pai writes itself.
//!
//! Attributes are asked of libgit2 (the rules of every `.gitattributes` in the tree, the
//! repository's `info/attributes`, the user's and the system's files), but only when one of
//! those files exists where libgit2 looks by default; otherwise no attribute can be set and
//! no file needs asking.

use std::path::{Path, PathBuf};

use git2::Repository;

use super::listing::{Entry, MODE_EXEC, MODE_FILE, MODE_LINK};
use crate::history::error::{Context, HistoryError};

/// The attributes under which libgit2's checkout converts a file.
const CONVERTING: [&str; 4] = ["text", "eol", "crlf", "ident"];

/// What decides which files libgit2 writes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Conversion {
    /// `core.autocrlf=true`: every file may be converted.
    autocrlf: bool,
    /// Some attributes file exists: each file's attributes are asked.
    attributes: bool,
    /// `core.symlinks=false`: links are written as files.
    links_as_files: bool,
}

impl Conversion {
    /// Read from the repository's configuration and the attributes files that exist;
    /// `has_attributes_file` says whether the tree holds a `.gitattributes`.
    pub fn read(repo: &Repository, has_attributes_file: bool) -> Result<Self, HistoryError> {
        let config = repo
            .config()
            .and_then(|mut c| c.snapshot())
            .ctx(|| "cannot read the repository's configuration".into())?;
        let autocrlf = config.get_bool("core.autocrlf").unwrap_or(false);
        let links_as_files = !config.get_bool("core.symlinks").unwrap_or(true);
        let user_file = config.get_path("core.attributesFile").ok();
        let attributes = has_attributes_file
            || repo.commondir().join("info/attributes").exists()
            || user_file.is_some()
            || default_files().iter().any(|p| p.exists());
        Ok(Conversion {
            autocrlf,
            attributes,
            links_as_files,
        })
    }

    /// Whether files' attributes are asked (some attributes file exists).
    pub fn asks_attributes(&self) -> bool {
        self.attributes
    }

    /// Whether libgit2 writes `entry` (its `repo` is the worktree's, whose `.gitattributes`
    /// files are already written).
    pub fn by_libgit2(&self, repo: &Repository, entry: &Entry) -> bool {
        match entry.mode {
            MODE_LINK => self.links_as_files,
            MODE_FILE | MODE_EXEC => {
                self.autocrlf
                    || (self.attributes
                        && CONVERTING.iter().any(|name| {
                            // An attribute libgit2 cannot read is taken as set: libgit2 writes
                            // the file and says what is wrong, if anything.
                            repo.get_attr_bytes(
                                entry.rel(),
                                name,
                                git2::AttrCheckFlags::FILE_THEN_INDEX,
                            )
                            .map_or(true, |v| v.is_some())
                        }))
            }
            _ => false,
        }
    }
}

/// The attributes files libgit2 reads by default besides the repository's own: the user's
/// (`$XDG_CONFIG_HOME/git/attributes`, else `~/.config/git/attributes`) and the system's
/// (`/etc/gitattributes`).
fn default_files() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("/etc/gitattributes")];
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        files.push(Path::new(&xdg).join("git/attributes"));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        files.push(Path::new(&home).join(".config/git/attributes"));
    }
    files
}

//! Directory walking for TREE, LIST_PATH, SEARCH and the project file list: descriptor-based
//! (every directory is opened relative to its parent with `O_NOFOLLOW`, symlinks are listed but
//! never followed), `.gitignore`-aware and deny-list-aware.
//!
//! Ignore rules come from the `ignore` crate's gitignore matcher, fed with the `.gitignore` of
//! every directory on the way (read through the same descriptors), `.git/info/exclude` and the
//! user's global excludes file. As in git, the nearest `.gitignore` decides, and an ignored
//! directory is not entered. They apply whether or not the project is a git repository.

use std::borrow::Cow;
use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::deny::{DenyList, TEMP_PREFIX};
use super::sys::{self, Kind};

/// How deep walks descend; deeper levels are left out (and the descriptors per level bounded).
pub(crate) const MAX_DEPTH: usize = 128;
/// Ignore files larger than this are not read.
const MAX_IGNORE_FILE: usize = 1 << 20;

/// A visible directory entry.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The raw name for `*at` calls.
    pub cname: CString,
    /// Its kind (symlinks are not followed).
    pub kind: Kind,
}

impl Entry {
    /// The name for display and matching (lossily decoded when not UTF-8).
    pub(crate) fn name(&self) -> Cow<'_, str> {
        self.cname.to_string_lossy()
    }

    /// The marker appended in listings: `/` for directories, `@` for symlinks.
    pub(crate) fn marker(&self) -> &'static str {
        match self.kind {
            Kind::Dir => "/",
            Kind::Symlink => "@",
            _ => "",
        }
    }
}

struct Level {
    /// Length of the directory's relative path (its rules match paths below it).
    base_len: usize,
    ignore: Option<Gitignore>,
}

/// Ignore rules that apply everywhere: `.git/info/exclude` and the global excludes file.
#[derive(Debug, Default)]
pub(crate) struct GlobalIgnores {
    matchers: Vec<Gitignore>,
}

impl GlobalIgnores {
    /// Load the repository's exclude file (relative to the root descriptor) and the user's
    /// global excludes. Unreadable or missing files just contribute nothing.
    pub(crate) fn load(root: &OwnedFd) -> GlobalIgnores {
        let mut matchers = Vec::new();
        if let Ok(name) = sys::cstr(".git/info/exclude")
            && let Ok(fd) = sys::openat(root.as_fd(), &name, libc::O_RDONLY | libc::O_NOFOLLOW, 0)
            && let Some(m) = matcher_from_fd(&fd)
        {
            matchers.push(m);
        }
        if let Some(path) = ignore::gitignore::gitconfig_excludes_path()
            && let Ok(bytes) = std::fs::read(&path)
            && let Some(m) = matcher_from_bytes(&bytes)
        {
            matchers.push(m);
        }
        GlobalIgnores { matchers }
    }
}

fn matcher_from_fd(fd: &OwnedFd) -> Option<Gitignore> {
    let st = sys::fstat(fd.as_fd()).ok()?;
    if st.kind != Kind::File {
        return None;
    }
    let bytes = sys::read_up_to(fd, MAX_IGNORE_FILE).ok()?;
    matcher_from_bytes(&bytes)
}

fn matcher_from_bytes(bytes: &[u8]) -> Option<Gitignore> {
    let text = String::from_utf8_lossy(bytes);
    let mut b = GitignoreBuilder::new(".");
    for line in text.lines() {
        // A malformed pattern is skipped, as git does.
        let _ = b.add_line(None, line);
    }
    let m = b.build().ok()?;
    (!m.is_empty()).then_some(m)
}

/// A walk in progress: the stack of ignore rules along the current directory path.
pub(crate) struct Walker<'w> {
    deny: &'w DenyList,
    global: &'w GlobalIgnores,
    levels: Vec<Level>,
    scratch: String,
}

impl<'w> Walker<'w> {
    pub(crate) fn new(deny: &'w DenyList, global: &'w GlobalIgnores) -> Walker<'w> {
        Walker {
            deny,
            global,
            levels: Vec::new(),
            scratch: String::new(),
        }
    }

    /// Load the `.gitignore` of a directory above the walk's start (so the start directory's
    /// entries obey its ancestors' rules).
    pub(crate) fn push_ancestor(&mut self, dir: &OwnedFd, rel: &str) {
        let ignore = read_gitignore(dir);
        self.levels.push(Level {
            base_len: rel.len(),
            ignore,
        });
    }

    /// Enter directory `rel` (open as `dir`): load its `.gitignore` and return its visible
    /// entries, directories first, each group sorted by name. Pair with [`Walker::leave`].
    pub(crate) fn enter(&mut self, dir: &OwnedFd, rel: &str) -> std::io::Result<Vec<Entry>> {
        let raw = match sys::read_dir(dir.as_fd()) {
            Ok(r) => r,
            Err(e) => {
                self.levels.push(Level {
                    base_len: rel.len(),
                    ignore: None,
                });
                return Err(e);
            }
        };
        let has_gitignore = raw
            .iter()
            .any(|e| e.kind == Kind::File && e.name.to_bytes() == b".gitignore");
        self.levels.push(Level {
            base_len: rel.len(),
            ignore: if has_gitignore {
                read_gitignore(dir)
            } else {
                None
            },
        });
        let any_rules =
            self.levels.iter().any(|l| l.ignore.is_some()) || !self.global.matchers.is_empty();
        let path_patterns = self.deny.has_path_patterns();
        let mut out = Vec::with_capacity(raw.len());
        for e in raw {
            let name = e.name.to_string_lossy();
            if name.starts_with(TEMP_PREFIX) || self.deny.segment(&name).is_some() {
                continue;
            }
            if path_patterns || any_rules {
                self.scratch.clear();
                self.scratch.push_str(rel);
                if !rel.is_empty() {
                    self.scratch.push('/');
                }
                self.scratch.push_str(&name);
                if path_patterns && self.deny.path(&self.scratch).is_some() {
                    continue;
                }
                if any_rules && self.ignored(e.kind == Kind::Dir) {
                    continue;
                }
            }
            drop(name);
            out.push(Entry {
                cname: e.name,
                kind: e.kind,
            });
        }
        out.sort_unstable_by(|a, b| {
            (a.kind != Kind::Dir)
                .cmp(&(b.kind != Kind::Dir))
                .then_with(|| a.cname.as_bytes().cmp(b.cname.as_bytes()))
        });
        Ok(out)
    }

    /// Leave the directory entered last.
    pub(crate) fn leave(&mut self) {
        self.levels.pop();
    }

    /// Whether the path in `scratch` is ignored: the nearest rule wins.
    fn ignored(&self, is_dir: bool) -> bool {
        let full = self.scratch.as_str();
        for level in self.levels.iter().rev() {
            let Some(m) = &level.ignore else { continue };
            let rel = if level.base_len == 0 {
                full
            } else {
                &full[level.base_len + 1..]
            };
            match m.matched(Path::new(rel), is_dir) {
                Match::None => {}
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
            }
        }
        for m in self.global.matchers.iter().rev() {
            match m.matched(Path::new(full), is_dir) {
                Match::None => {}
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
            }
        }
        false
    }

    /// Current depth (number of directories entered, ancestors included).
    pub(crate) fn depth(&self) -> usize {
        self.levels.len()
    }
}

fn read_gitignore(dir: &OwnedFd) -> Option<Gitignore> {
    let name = sys::cstr(".gitignore").ok()?;
    let fd = sys::openat(
        dir.as_fd(),
        &name,
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
        0,
    )
    .ok()?;
    matcher_from_fd(&fd)
}

/// Open a listed subdirectory without following a symlink swapped in since the listing.
pub(crate) fn open_child(dir: &OwnedFd, e: &Entry) -> std::io::Result<OwnedFd> {
    sys::openat(dir.as_fd(), &e.cname, sys::DIR_READ, 0)
}

/// Join a relative directory and a name.
pub(crate) fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_string()
    } else {
        format!("{rel}/{name}")
    }
}

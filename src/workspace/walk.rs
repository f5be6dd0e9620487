//! What directory walks show, for TREE, LIST_PATH, SEARCH and the project file list: the
//! entries of a directory read through its descriptor, `.gitignore`-aware and deny-list-aware,
//! directories first. The walk itself is [`super::scan`]: every directory is opened relative to
//! its parent with `O_NOFOLLOW`, and symlinks are listed but never followed.
//!
//! Ignore rules come from the `ignore` crate's gitignore matcher, fed with the `.gitignore` of
//! every directory on the way (read through the same descriptors), `.git/info/exclude` and the
//! user's global excludes file. As in git, the nearest `.gitignore` decides, and an ignored
//! directory is not entered. They apply whether or not the project is a git repository.

use std::borrow::Cow;
use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

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

/// One directory's ignore rules, linked to its parent directory's. The chain is shared: the
/// parallel scan hands it to other threads, and a sequential walk pops back to the parent.
pub(crate) struct Level {
    /// Length of the directory's relative path (its rules match paths below it).
    base_len: usize,
    ignore: Option<Gitignore>,
    parent: Option<Arc<Level>>,
    /// Directories from the walk's root down to this one, this one included.
    depth: usize,
}

impl Level {
    /// Directories from the walk's root down to this one, this one included.
    pub(crate) fn depth(&self) -> usize {
        self.depth
    }
}

/// Ignore rules that apply everywhere: `.git/info/exclude` and the global excludes file.
#[derive(Debug, Default)]
pub(crate) struct GlobalIgnores {
    matchers: Vec<Gitignore>,
    /// A hash of what the rules were read from, so a kept listing knows they changed.
    fingerprint: u64,
}

impl GlobalIgnores {
    /// Load the repository's exclude file (relative to the root descriptor) and the user's
    /// global excludes. Unreadable or missing files just contribute nothing.
    pub(crate) fn load(root: &OwnedFd) -> GlobalIgnores {
        use std::hash::{Hash as _, Hasher as _};
        let mut matchers = Vec::new();
        let mut hash = std::collections::hash_map::DefaultHasher::new();
        let exclude = sys::cstr(".git/info/exclude").ok().and_then(|name| {
            sys::openat(
                root.as_fd(),
                &name,
                // Never blocking: a FIFO planted there must not hang pai.
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
                0,
            )
            .ok()
        });
        let exclude = exclude.and_then(|fd| bytes_from_fd(&fd));
        exclude.hash(&mut hash);
        if let Some(m) = exclude.as_deref().and_then(matcher_from_bytes) {
            matchers.push(m);
        }
        let global = global_excludes_file().and_then(|path| std::fs::read(path).ok());
        global.hash(&mut hash);
        if let Some(m) = global.as_deref().and_then(matcher_from_bytes) {
            matchers.push(m);
        }
        GlobalIgnores {
            matchers,
            fingerprint: hash.finish(),
        }
    }

    /// A hash of the rules' sources: equal for equal rules.
    pub(crate) fn fingerprint(&self) -> u64 {
        self.fingerprint
    }
}

/// The user's global ignore file, where git finds it: `core.excludesFile` in the global
/// configuration (`GIT_CONFIG_GLOBAL`, else `~/.gitconfig` over `$XDG_CONFIG_HOME/git/config`),
/// then in the system's (`GIT_CONFIG_SYSTEM`, else `/etc/gitconfig`; not with
/// `GIT_CONFIG_NOSYSTEM`), else `$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`).
///
/// The files are read with libgit2's parser, which pai has loaded anyway: the `ignore` crate's
/// helper finds the variable with a regular expression over the lines (in any section), and
/// compiling it would page the regex compiler's code in at every start (with libgit2's PCRE
/// patterns, about 1.2 MB of a `pai run`'s resident code).
fn global_excludes_file() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let xdg = var("XDG_CONFIG_HOME").or_else(|| dirs::home_dir().map(|h| h.join(".config")));
    let mut configs: Vec<PathBuf> = match var("GIT_CONFIG_GLOBAL") {
        Some(global) => vec![global],
        None => dirs::home_dir()
            .map(|h| h.join(".gitconfig"))
            .into_iter()
            .chain(xdg.as_ref().map(|x| x.join("git/config")))
            .collect(),
    };
    if std::env::var_os("GIT_CONFIG_NOSYSTEM").is_none() {
        configs.push(var("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig")));
    }
    configs
        .iter()
        // Only regular files (a FIFO would block the read; /dev/null holds nothing).
        .filter(|path| std::fs::metadata(path).is_ok_and(|m| m.is_file()))
        .find_map(|path| {
            let config = git2::Config::open(path).ok()?;
            config
                .get_path("core.excludesfile")
                .ok()
                .filter(|p| !p.as_os_str().is_empty())
        })
        .or_else(|| xdg.map(|x| x.join("git/ignore")))
}

/// The bytes of an ignore file open as `fd` (`None` unless it is a regular file).
fn bytes_from_fd(fd: &OwnedFd) -> Option<Vec<u8>> {
    let st = sys::fstat(fd.as_fd()).ok()?;
    if st.kind != Kind::File {
        return None;
    }
    sys::read_up_to(fd, MAX_IGNORE_FILE).ok()
}

fn matcher_from_fd(fd: &OwnedFd) -> Option<Gitignore> {
    matcher_from_bytes(&bytes_from_fd(fd)?)
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

/// What decides which entries a walk shows: the deny-list and the ignore rules that apply
/// everywhere. Cheap to copy into the scan's threads.
#[derive(Clone, Copy)]
pub(crate) struct Rules<'w> {
    deny: &'w DenyList,
    global: &'w GlobalIgnores,
}

/// Per-thread buffers for reading directories.
#[derive(Default)]
pub(crate) struct Scratch {
    dirents: Vec<u8>,
    path: String,
}

impl<'w> Rules<'w> {
    /// Read the directory `rel` (open as `dir`), below the directory whose rules are `parent`:
    /// load its `.gitignore` and return its rules and its visible entries, directories first,
    /// each group sorted by name. The rules come back even when reading fails, so a walk can
    /// pair every directory it enters with a leave.
    pub(crate) fn read(
        self,
        dir: &OwnedFd,
        rel: &str,
        parent: Option<&Arc<Level>>,
        scratch: &mut Scratch,
    ) -> (Arc<Level>, std::io::Result<Vec<Entry>>) {
        let (level, raw) = self.read_raw(dir, rel, parent, &mut scratch.dirents);
        let raw = match raw {
            Ok(r) => r,
            Err(e) => return (level, Err(e)),
        };
        let any_rules = self.any_rules(&level);
        let path_patterns = self.deny.has_path_patterns();
        let mut out = Vec::with_capacity(raw.len());
        for e in raw {
            let name = e.name.to_string_lossy();
            if name.starts_with(TEMP_PREFIX) || self.deny.segment(&name).is_some() {
                continue;
            }
            if path_patterns || any_rules {
                let full = &mut scratch.path;
                full.clear();
                full.push_str(rel);
                if !rel.is_empty() {
                    full.push('/');
                }
                full.push_str(&name);
                if path_patterns && self.deny.path(full).is_some() {
                    continue;
                }
                if any_rules && self.ignored(&level, full, e.kind == Kind::Dir) {
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
        (level, Ok(out))
    }

    /// Read the directory `rel` (open as `dir`) below the directory whose rules are `parent`,
    /// as [`Rules::read`] does, but hand back every entry as listed (nothing hidden, unsorted):
    /// for a walk that decides per entry, such as the status pass, where a tracked file counts
    /// whether or not an ignore rule matches it.
    pub(crate) fn read_raw(
        self,
        dir: &OwnedFd,
        rel: &str,
        parent: Option<&Arc<Level>>,
        dirents: &mut Vec<u8>,
    ) -> (Arc<Level>, std::io::Result<Vec<sys::DirEntry>>) {
        let raw = match sys::read_dir_with(dir.as_fd(), dirents) {
            Ok(r) => r,
            Err(e) => return (self.level(dir, rel, parent, false), Err(e)),
        };
        let has_gitignore = raw
            .iter()
            .any(|e| e.kind == Kind::File && e.name.to_bytes() == b".gitignore");
        (self.level(dir, rel, parent, has_gitignore), Ok(raw))
    }

    /// The rules of the directory `rel` (open as `dir`) below the directory whose rules are
    /// `parent`, its `.gitignore` read when `has_gitignore`: for a directory whose entries are
    /// known without reading it (see [`super::kept_listing`]).
    pub(crate) fn level(
        self,
        dir: &OwnedFd,
        rel: &str,
        parent: Option<&Arc<Level>>,
        has_gitignore: bool,
    ) -> Arc<Level> {
        Arc::new(Level {
            base_len: rel.len(),
            ignore: if has_gitignore {
                read_gitignore(dir)
            } else {
                None
            },
            parent: parent.cloned(),
            depth: parent.map_or(0, |p| p.depth) + 1,
        })
    }

    /// Whether any ignore rule applies in the directory whose rules are `level`.
    pub(crate) fn any_rules(self, level: &Level) -> bool {
        level.chain().any(|l| l.ignore.is_some()) || !self.global.matchers.is_empty()
    }

    /// Whether the entry `name` of a listed directory is hidden whatever the ignore rules
    /// say: pai's temporary files and deny-listed names.
    pub(crate) fn denied_name(self, name: &str) -> bool {
        name.starts_with(TEMP_PREFIX) || self.deny.segment(name).is_some()
    }

    /// Whether the path `full` is deny-listed by a pattern spanning several segments.
    pub(crate) fn denied_path(self, full: &str) -> bool {
        self.deny.has_path_patterns() && self.deny.path(full).is_some()
    }

    /// Whether `full` (a path in the directory whose rules are `level`) is ignored: the
    /// nearest rule wins.
    pub(crate) fn ignored(self, level: &Level, full: &str, is_dir: bool) -> bool {
        for level in level.chain() {
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
}

impl Level {
    /// This level and its ancestors, nearest first.
    fn chain(&self) -> impl Iterator<Item = &Level> {
        std::iter::successors(Some(self), |l| l.parent.as_deref())
    }
}

/// The start of a walk: the rules, and the ignore rules of the directories above the start
/// (so its entries obey its ancestors' `.gitignore`s). [`super::scan::scan`] goes on from here.
pub(crate) struct Walker<'w> {
    rules: Rules<'w>,
    top: Option<Arc<Level>>,
}

impl<'w> Walker<'w> {
    pub(crate) fn new(deny: &'w DenyList, global: &'w GlobalIgnores) -> Walker<'w> {
        Walker {
            rules: Rules { deny, global },
            top: None,
        }
    }

    /// Load the `.gitignore` of a directory above the walk's start.
    pub(crate) fn push_ancestor(&mut self, dir: &OwnedFd, rel: &str) {
        let parent = self.top.take();
        self.top = Some(Arc::new(Level {
            base_len: rel.len(),
            ignore: read_gitignore(dir),
            depth: parent.as_ref().map_or(0, |p| p.depth) + 1,
            parent,
        }));
    }

    /// The rules, and the ignore rules of the last ancestor pushed.
    pub(crate) fn into_parts(self) -> (Rules<'w>, Option<Arc<Level>>) {
        (self.rules, self.top)
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

/// Join a relative directory and a name.
pub(crate) fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_string()
    } else {
        format!("{rel}/{name}")
    }
}

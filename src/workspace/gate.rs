//! The path gate (SPEC section 5): the one check every path passes before pai touches it.
//!
//! 1. Lexical rules on the text: not empty, not absolute, no NUL, control or invisible
//!    characters, no backslashes or drive letters, no `~`, bounded length; `.` and empty
//!    segments dropped and `..` folded, refusing any that climbs above the root.
//! 2. The deny-list on every segment as written (so `.git/../x` is refused too).
//! 3. Resolution of every existing prefix, symlinks included, like `realpath` but confined: a
//!    symlink whose target leaves the root is refused, and the deny-list is applied again to the
//!    resolved path (a link `cfg -> .git` does not open `.git/config`).
//!
//! The result, [`RelPath`], carries the resolved, symlink-free relative path that the operations
//! then open component by component with `O_NOFOLLOW` (see `beneath.rs`), so a symlink swapped
//! in after this check is refused at use instead of followed.
//!
//! Resolution has a fast path: one `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` tells us
//! the kernel could walk the whole path beneath the root without meeting a symlink, in which
//! case the lexical path is already resolved. It stops at the first missing component
//! (`ENOENT`), and everything before it was walked symlink-free, so that counts as resolved too.
//! Only paths that meet a symlink (`ELOOP`), or systems without `openat2`, take the slow path,
//! which resolves prefix by prefix with `fstatat`/`readlinkat` relative to the root descriptor.

use std::collections::VecDeque;
use std::os::fd::{AsFd, OwnedFd};

use super::deny::{DenyClass, DenyList, is_invisible};
use super::error::WorkspaceError;
use super::sys;

/// Longest path accepted, in bytes (Linux `PATH_MAX`).
const MAX_PATH_BYTES: usize = 4096;
/// Longest single name accepted, in bytes (Linux `NAME_MAX`).
const MAX_NAME_BYTES: usize = 255;
/// Symlink hops before giving up, as the kernel does.
const MAX_SYMLINK_HOPS: usize = 40;

/// A path that passed the gate: relative to the project root, normalised, `/`-separated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelPath {
    lexical: String,
    resolved: String,
    dir_hint: bool,
}

impl RelPath {
    /// The normalised path as the user or model wrote it (`""` for the root itself).
    pub fn as_str(&self) -> &str {
        &self.lexical
    }

    /// The path with every existing symlink resolved; this is what operations open.
    pub fn resolved(&self) -> &str {
        &self.resolved
    }

    /// Whether the path names the project root itself.
    pub fn is_root(&self) -> bool {
        self.resolved.is_empty()
    }

    /// Whether the path was written with a trailing `/` (so it can only name a directory).
    pub fn dir_hint(&self) -> bool {
        self.dir_hint
    }

    /// How to show the path to a user: the normalised text, `.` for the root.
    pub fn display(&self) -> &str {
        if self.lexical.is_empty() {
            "."
        } else {
            &self.lexical
        }
    }

    /// The resolved components.
    pub(crate) fn components(&self) -> impl Iterator<Item = &str> {
        self.resolved.split('/').filter(|s| !s.is_empty())
    }

    /// The final resolved component (`""` for the root).
    pub(crate) fn file_name(&self) -> &str {
        self.resolved.rsplit('/').next().unwrap_or("")
    }

    /// The resolved parent (`""` when the parent is the root).
    pub(crate) fn parent(&self) -> &str {
        match self.resolved.rfind('/') {
            Some(i) => &self.resolved[..i],
            None => "",
        }
    }

    /// A path known to be inside the root and free of symlinks (from a walk or a join of a
    /// checked directory and a listed name).
    pub(crate) fn trusted(rel: String) -> RelPath {
        RelPath {
            lexical: rel.clone(),
            resolved: rel,
            dir_hint: false,
        }
    }
}

/// The gate: the canonical root, a descriptor on it, and the deny-list.
#[derive(Debug)]
pub(crate) struct Gate {
    pub(crate) root_fd: OwnedFd,
    root_str: String,
    pub(crate) deny: DenyList,
    /// Skip the `openat2` fast path (tests exercise the portable path with it).
    pub(crate) slow_only: bool,
    /// pai's own directories (configuration, state, cache) where they lie inside the
    /// project, relative to the root (`XDG_CONFIG_HOME` set to a folder of the project).
    private: Vec<String>,
}

/// pai's own directories that lie inside `root`, relative to it: its configuration
/// (`pai-code`: the key and the credentials), state and cache, each at its real path. The
/// deny-list's names catch `.config/pai-code`; these catch any other place the environment
/// puts them.
fn private_inside(root: &str) -> Vec<String> {
    let root = std::path::Path::new(root);
    [
        dirs::config_dir().map(|d| d.join("pai-code")),
        dirs::state_dir().map(|d| d.join("pai")),
        dirs::cache_dir().map(|d| d.join("pai")),
    ]
    .into_iter()
    .flatten()
    .filter_map(|d| {
        let real = std::fs::canonicalize(&d).unwrap_or(d);
        let rel = real.strip_prefix(root).ok()?.to_str()?.to_string();
        (!rel.is_empty()).then_some(rel)
    })
    .collect()
}

fn refused_deny(input: &str, class: DenyClass, resolved: Option<&str>) -> WorkspaceError {
    let reason = match resolved {
        Some(r) => format!("is a protected path (it resolves to {r}; {})", {
            let w = class.reason();
            w.trim_start_matches('(').trim_end_matches(')')
        }),
        None => format!("is a protected path {}", class.reason()),
    };
    WorkspaceError::refused(input, reason)
}

/// The path's text, before it is split: not empty, within `PATH_MAX`, no NUL, backslash,
/// control or invisible character (they make a path read differently from what it opens),
/// and non-UTF-8 bytes spelled only in their one canonical escape, so no two spellings name
/// the same file. `Err` is the reason, ready to follow the path.
/// Refuse to send the text of a file with more than one hard link (`links`, from the stat
/// the read already made). Its other names may lie outside the project or be denied (`.env`
/// linked as `envcopy.txt` or `AGENTS.md`): the deny-list judges names, and which names an
/// inode has elsewhere cannot be known without searching the whole file system, so the file
/// itself is judged. A git checkout never makes hard links; the user breaks one with a copy.
pub(crate) fn refuse_linked(rel: &RelPath, links: u64) -> Result<(), WorkspaceError> {
    if links <= 1 {
        return Ok(());
    }
    let shown = rel.display();
    Err(WorkspaceError::refused(
        shown,
        format!(
            "it has {links} hard links, and another of its names may be a secret or lie outside \
             the project; pai reads no multiply-linked file (`cp {q} {q}.copy && mv {q}.copy {q}` \
             makes it a file of its own)",
            q = crate::shell::quote_path(std::path::Path::new(shown))
        ),
    ))
}

fn check_characters(input: &str) -> Result<(), String> {
    if input.is_empty() {
        return Err("is empty; give a path relative to the project root".to_string());
    }
    if input.len() > MAX_PATH_BYTES {
        return Err(format!(
            "is too long ({} bytes; the limit is {MAX_PATH_BYTES})",
            input.len()
        ));
    }
    let mut ascii = true;
    for &b in input.as_bytes() {
        match b {
            0 => return Err("contains a NUL byte".to_string()),
            b'\\' => {
                return Err("uses a backslash; use '/' to separate directories".to_string());
            }
            0x01..=0x1f | 0x7f => {
                return Err(format!("contains a control character (U+{b:04X})"));
            }
            0x80.. => ascii = false,
            _ => {}
        }
    }
    if !ascii {
        for c in input.chars() {
            if c.is_control() {
                return Err(format!("contains a control character (U+{:04X})", c as u32));
            }
            if is_invisible(c) {
                return Err(format!(
                    "contains an invisible character (U+{:04X})",
                    c as u32
                ));
            }
        }
    }
    if !ascii && !crate::rawname::is_canonical(input) {
        return Err(
            "spells a name through pai's escapes for bytes that are not UTF-8 in a way no \
             file name is spelled"
                .to_string(),
        );
    }
    Ok(())
}

/// Refuse the forms that name something outside the project or depend on a shell: an
/// absolute path, a Windows drive, a `~` pai would not expand. `Err` is the reason.
fn check_relative(input: &str) -> Result<(), String> {
    if input.starts_with('/') {
        return Err(
            "is an absolute path, which is outside the project; use a path relative to \
             the project root"
                .to_string(),
        );
    }
    let b = input.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return Err(
            "looks like a Windows drive path; use a path relative to the project root".to_string(),
        );
    }
    if input.starts_with('~') {
        return Err(
            "starts with '~', which pai does not expand; use a path relative to the project root"
                .to_string(),
        );
    }
    Ok(())
}

impl Gate {
    pub(crate) fn new(root_fd: OwnedFd, root_str: String, deny: DenyList) -> Gate {
        Gate {
            root_fd,
            private: private_inside(&root_str),
            root_str,
            deny,
            slow_only: false,
        }
    }

    /// Run the whole gate. `follow_last` resolves a final symlink (READ, WRITE, MODIFY); without
    /// it the final component is taken as is (RM and MV act on a link, not on its target).
    pub(crate) fn check(&self, input: &str, follow_last: bool) -> Result<RelPath, WorkspaceError> {
        let (comps, dir_hint) = self.lexical(input)?;
        let lexical = comps.join("/");
        if lexical.is_empty() {
            return Ok(RelPath {
                lexical,
                resolved: String::new(),
                dir_hint: true,
            });
        }
        if self.deny.has_path_patterns()
            && let Some(class) = self.deny.path(&lexical)
        {
            return Err(refused_deny(input, class, None));
        }
        let c = sys::cstr(&lexical)
            .map_err(|_| WorkspaceError::refused(input, "contains a NUL byte"))?;
        let probe = if self.slow_only {
            sys::Probe::NeedsSlowPath
        } else {
            sys::probe_beneath(self.root_fd.as_fd(), &c)
        };
        let resolved = match probe {
            sys::Probe::Plain => lexical.clone(),
            sys::Probe::TooLong => {
                return Err(WorkspaceError::refused(
                    input,
                    "is too long for the file system",
                ));
            }
            sys::Probe::NeedsSlowPath => {
                let resolved = self.resolve_slow(input, &comps, follow_last)?;
                if resolved != lexical
                    && let Some(class) = self.deny.path(&resolved)
                {
                    return Err(refused_deny(input, class, Some(&resolved)));
                }
                resolved
            }
        };
        if let Some(own) = [&lexical, &resolved]
            .into_iter()
            .find(|p| self.is_private(p))
        {
            let class = DenyClass::Protected("(pai's own configuration and state)");
            return Err(refused_deny(input, class, (*own != lexical).then_some(own)));
        }
        Ok(RelPath {
            lexical,
            resolved,
            dir_hint,
        })
    }

    /// Whether `rel` is one of pai's own directories inside the project, or lies in one.
    fn is_private(&self, rel: &str) -> bool {
        self.private.iter().any(|p| {
            rel == p
                || rel
                    .strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }

    /// Step 1 and 2: lexical rules and the deny-list on the written segments. Returns the
    /// normalised components and whether the path ended in `/`.
    fn lexical<'a>(&self, input: &'a str) -> Result<(Vec<&'a str>, bool), WorkspaceError> {
        check_characters(input).map_err(|reason| WorkspaceError::refused(input, reason))?;
        check_relative(input).map_err(|reason| WorkspaceError::refused(input, reason))?;
        let dir_hint = input.ends_with('/') || input.ends_with("/.") || input == ".";
        let comps = self.fold_segments(input)?;
        Ok((comps, dir_hint))
    }

    /// Drop `.` and empty segments and fold `..`, refusing one that climbs above the root,
    /// an overlong name, and any segment the deny-list names. Every segment as written is
    /// checked, including those a later `..` removes, so `.git/../x` is refused.
    fn fold_segments<'a>(&self, input: &'a str) -> Result<Vec<&'a str>, WorkspaceError> {
        let refuse = |reason: &str| Err(WorkspaceError::refused(input, reason.to_string()));
        let mut comps: Vec<&str> = Vec::with_capacity(8);
        for seg in input.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    if comps.pop().is_none() {
                        return refuse("is outside the project");
                    }
                }
                _ => {
                    if seg.len() > MAX_NAME_BYTES {
                        return refuse(&format!("has a name longer than {MAX_NAME_BYTES} bytes"));
                    }
                    if let Some(class) = self.deny.segment(seg) {
                        return Err(refused_deny(input, class, None));
                    }
                    comps.push(seg);
                }
            }
        }
        Ok(comps)
    }

    /// Step 3, slow path: resolve prefix by prefix relative to the root descriptor.
    ///
    /// Components wait in `pending`; a symlink met on the way is replaced by its target's
    /// components (an absolute target inside the root restarts from the root), so `..` in a
    /// target folds against what is resolved so far, and one that would climb above the root
    /// is refused.
    /// Once a prefix does not exist, the rest is taken lexically: nothing below it can be a
    /// symlink.
    fn resolve_slow(
        &self,
        input: &str,
        comps: &[&str],
        follow_last: bool,
    ) -> Result<String, WorkspaceError> {
        let mut pending: VecDeque<String> = comps.iter().map(|s| s.to_string()).collect();
        let mut resolved: Vec<String> = Vec::with_capacity(comps.len());
        let mut hops = 0usize;
        let mut exists = true;
        while let Some(comp) = pending.pop_front() {
            match comp.as_str() {
                "" | "." => continue,
                ".." => {
                    if resolved.pop().is_none() {
                        return Err(outside(
                            input,
                            "a symbolic link on the path climbs above the root",
                        ));
                    }
                    continue;
                }
                _ => {}
            }
            resolved.push(comp);
            if !exists {
                continue;
            }
            let is_last = pending.is_empty();
            let prefix = resolved.join("/");
            let c = sys::cstr(&prefix)
                .map_err(|_| WorkspaceError::refused(input, "contains a NUL byte"))?;
            match sys::lstatat(self.root_fd.as_fd(), &c) {
                Ok(st) if st.kind == sys::Kind::Symlink && (!is_last || follow_last) => {}
                Ok(_) => continue,
                Err(_) => {
                    // Missing, not a directory, or unreadable: nothing below exists for us.
                    exists = false;
                    continue;
                }
            }
            hops += 1;
            if hops > MAX_SYMLINK_HOPS {
                return Err(WorkspaceError::refused(
                    input,
                    "has too many levels of symbolic links",
                ));
            }
            let target = self.read_link(input, &prefix, &c)?;
            resolved.pop();
            let (from_root, rest) = self.target_components(input, &prefix, &target)?;
            if from_root {
                resolved.clear();
            }
            for r in rest.into_iter().rev() {
                pending.push_front(r);
            }
        }
        Ok(resolved.join("/"))
    }

    /// The target of the symlink at `prefix` (`c`, relative to the root descriptor). A target
    /// that is not UTF-8 is refused: resolution and the deny-list work on text.
    fn read_link(
        &self,
        input: &str,
        prefix: &str,
        c: &std::ffi::CStr,
    ) -> Result<String, WorkspaceError> {
        let target = sys::readlinkat(self.root_fd.as_fd(), c)
            .map_err(|e| WorkspaceError::io("resolve", input, e))?;
        String::from_utf8(target).map_err(|_| {
            WorkspaceError::refused(
                input,
                format!("goes through {prefix}, a symbolic link whose target is not UTF-8"),
            )
        })
    }

    /// The components a symlink's target puts in place of the link, and whether they start
    /// from the root (an absolute target inside the root) rather than from the link's parent.
    /// An absolute target outside the root and an empty target are refused.
    fn target_components(
        &self,
        input: &str,
        prefix: &str,
        target: &str,
    ) -> Result<(bool, Vec<String>), WorkspaceError> {
        if let Some(abs) = target.strip_prefix('/') {
            let Some(r) = self.inside_root(abs) else {
                return Err(outside(
                    input,
                    &format!(
                        "{prefix} is a symbolic link to {}",
                        super::error::display_path(target)
                    ),
                ));
            };
            Ok((true, r.split('/').map(str::to_string).collect()))
        } else {
            if target.is_empty() {
                return Err(WorkspaceError::refused(
                    input,
                    format!("goes through {prefix}, an empty symbolic link"),
                ));
            }
            Ok((false, target.split('/').map(str::to_string).collect()))
        }
    }

    /// An absolute symlink target (without its leading `/`) as a path relative to the root,
    /// or `None` when it leads outside the root. The root itself is `Some("")`; a sibling
    /// that merely starts with the root's name (`/proj-other` for `/proj`) is outside.
    fn inside_root<'t>(&self, abs: &'t str) -> Option<&'t str> {
        let root = self.root_str.trim_start_matches('/');
        if root.is_empty() {
            Some(abs)
        } else if abs == root {
            Some("")
        } else {
            abs.strip_prefix(root).and_then(|r| r.strip_prefix('/'))
        }
    }
}

/// The refusal for a path that resolves outside the project, with what took it there.
fn outside(input: &str, detail: &str) -> WorkspaceError {
    WorkspaceError::refused(input, format!("is outside the project ({detail})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn gate(dir: &std::path::Path) -> Gate {
        let root = std::fs::canonicalize(dir).unwrap();
        let fd = std::fs::File::open(&root).unwrap();
        Gate::new(
            fd.into(),
            root.to_str().unwrap().to_string(),
            DenyList::default(),
        )
    }

    #[test]
    fn lexical_normalisation() {
        let t = tempfile::tempdir().unwrap();
        let g = gate(t.path());
        assert_eq!(g.check("a/./b//c/../d", true).unwrap().as_str(), "a/b/d");
        assert_eq!(g.check("./", true).unwrap().as_str(), "");
        assert!(g.check("src/", true).unwrap().dir_hint());
        assert!(!g.check("src", true).unwrap().dir_hint());
        assert!(g.check("a/../..", true).is_err());
        assert!(g.check(".git/../x", true).is_err());
    }

    #[test]
    fn names_that_are_not_utf8_pass_in_their_one_spelling_only() {
        use std::os::unix::ffi::OsStrExt as _;
        let t = tempfile::tempdir().unwrap();
        let raw = b"caf\xe9.txt";
        std::fs::write(t.path().join(std::ffi::OsStr::from_bytes(raw)), "x").unwrap();
        let g = gate(t.path());
        let spelled = crate::rawname::encode(raw);
        assert_eq!(g.check(&spelled, true).unwrap().as_str(), spelled);
        // "é" spelled through escapes would be a second name for "café.txt".
        assert!(g.check("caf\u{10FFC3}\u{10FFA9}.txt", true).is_err());
    }

    #[test]
    fn slow_path_resolves_inside_links() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("real/deep")).unwrap();
        symlink("real", t.path().join("rel")).unwrap();
        symlink("real/deep/../deep", t.path().join("twisty")).unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        symlink(root.join("real"), t.path().join("abs")).unwrap();
        symlink("/tmp", t.path().join("out")).unwrap();
        symlink(".git", t.path().join("sneaky")).unwrap();
        let mut g = gate(t.path());
        assert_eq!(g.check("rel/x", true).unwrap().resolved(), "real/x");
        assert_eq!(g.check("twisty/x", true).unwrap().resolved(), "real/deep/x");
        assert_eq!(g.check("abs/x", true).unwrap().resolved(), "real/x");
        assert_eq!(g.check("rel", false).unwrap().resolved(), "rel");
        assert!(g.check("out/x", true).is_err());
        // A final symlink out is refused on the fast path too (O_PATH|O_NOFOLLOW would have
        // returned the link itself).
        assert!(g.check("out", true).is_err());
        assert_eq!(g.check("out", false).unwrap().resolved(), "out");
        assert!(g.check("sneaky/config", true).is_err());
        g.slow_only = true;
        assert_eq!(g.check("real/x", true).unwrap().resolved(), "real/x");
        assert_eq!(g.check("rel/x", true).unwrap().resolved(), "real/x");
        assert!(g.check("out/x", true).is_err());
    }
}

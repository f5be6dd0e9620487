//! The file commands of SPEC section 4 (READ, WRITE, MODIFY, MKDIR, TOUCH, RM, MV) and the two
//! primitives the history layer uses for undo/redo. Each one passes the gate, then works on
//! descriptors opened beneath the root (`beneath.rs`), and reports what changed.

use std::ffi::CStr;
use std::os::fd::{AsFd, OwnedFd};

use super::Workspace;
use super::atomic::{self, Mode};
use super::beneath::{self, open_parent};
use super::change::{
    ChangeKind, EditPreview, FileChange, LinesShown, Probe, ReadContent, ReadOutput,
};
use super::deny::DenyClass;
use super::diff::LineDiff;
use super::edits::{self, Modification};
use super::error::WorkspaceError;
use super::gate::RelPath;
use super::guard;
use super::ledger::Origin;
use super::sys::{self, Kind};
use super::text::{self, hash, looks_binary, normalise, thousands};
use super::walk::{MAX_DEPTH, join};

/// Flags for opening a file to read: never through a symlink, never blocking on a FIFO.
const READ_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;

/// One entry found below a directory that RM or MV is about to act on.
struct Found {
    rel: String,
    kind: Kind,
}

/// What one MV moves: the source's and the destination's resolved paths, what the source
/// is, and for a directory everything below it, listed before the move so each file can be
/// reported (and its ledger origin carried) under its new name.
struct MovePlan<'a> {
    from_root: &'a str,
    to_root: &'a str,
    kind: Kind,
    found: Vec<Found>,
}

impl MovePlan<'_> {
    /// Where a path at or below the source ends up.
    fn moved(&self, old: &str) -> String {
        format!("{}{}", self.to_root, &old[self.from_root.len()..])
    }

    /// The files (everything but directories) below a moving directory.
    fn files(&self) -> impl Iterator<Item = &Found> {
        self.found.iter().filter(|f| f.kind != Kind::Dir)
    }

    /// Each moving file, not directory, as `(old, new)`: the files below a directory, or the
    /// source itself.
    fn pairs(&self) -> Vec<(String, String)> {
        if self.kind == Kind::Dir {
            self.files()
                .map(|f| (f.rel.clone(), self.moved(&f.rel)))
                .collect()
        } else {
            vec![(self.from_root.to_string(), self.to_root.to_string())]
        }
    }
}

/// Rename without replacing (see [`sys::renameat`]): an existing destination is an error,
/// never overwritten, and a move to another file system is refused, not copied.
fn rename_no_replace(
    sdir: &OwnedFd,
    sname: &CStr,
    ddir: &OwnedFd,
    dname: &CStr,
    src_shown: &str,
    dst_shown: &str,
) -> Result<(), WorkspaceError> {
    sys::renameat(sdir.as_fd(), sname, ddir.as_fd(), dname, true).map_err(|e| {
        match e.raw_os_error() {
            Some(libc::EEXIST) | Some(libc::ENOTEMPTY) => {
                WorkspaceError::exists("mv to", dst_shown, "remove it first or choose another name")
            }
            Some(libc::EXDEV) => {
                WorkspaceError::failed("mv", src_shown, "the destination is on another file system")
            }
            _ => WorkspaceError::io("mv", src_shown, e),
        }
    })
}

/// A moved entry's change, named `new_rel`. A regular file's content did not change, so its
/// hash, read at the new place without following a link, is both `before` and `after`.
fn renamed_change(
    new_rel: String,
    old: &str,
    kind: Kind,
    dir: &OwnedFd,
    name: &CStr,
) -> FileChange {
    let mut c = FileChange::new(
        new_rel,
        ChangeKind::Renamed {
            from: old.to_string(),
        },
    );
    if kind == Kind::File
        && let Ok(fd) = sys::openat(dir.as_fd(), name, READ_FLAGS, 0)
        && let Ok(bytes) = sys::read_up_to(&fd, usize::MAX)
    {
        let h = hash(&bytes);
        c.before = Some(h.clone());
        c.after = Some(h);
    }
    c
}

impl Workspace {
    /// Refuse the root and paths written with a trailing `/` for operations on files.
    fn require_file_target(rel: &RelPath, op: &'static str) -> Result<(), WorkspaceError> {
        if rel.is_root() {
            return Err(WorkspaceError::failed(
                op,
                rel.display(),
                "it is the project directory itself, not a file",
            ));
        }
        if rel.dir_hint() {
            return Err(WorkspaceError::failed(
                op,
                rel.display(),
                "the path ends with '/', which names a directory; drop the trailing '/' to name a file",
            ));
        }
        Ok(())
    }

    /// Open an existing regular file for reading, explaining anything else found there.
    pub(super) fn open_file(
        dir: &OwnedFd,
        name: &CStr,
        rel: &RelPath,
        op: &'static str,
        missing_hint: &str,
    ) -> Result<(OwnedFd, sys::Stat), WorkspaceError> {
        let shown = rel.display();
        let fd = sys::openat(dir.as_fd(), name, READ_FLAGS, 0).map_err(|e| match e.raw_os_error() {
            Some(libc::ENOENT) => WorkspaceError::not_found(op, shown, missing_hint),
            Some(libc::ELOOP) => WorkspaceError::refused(
                shown,
                "changed after it was checked: it is now a symbolic link, which pai does not follow",
            ),
            _ => WorkspaceError::io(op, shown, e),
        })?;
        let st = sys::fstat(fd.as_fd()).map_err(|e| WorkspaceError::io(op, shown, e))?;
        match st.kind {
            Kind::File => Ok((fd, st)),
            Kind::Dir => Err(WorkspaceError::failed(
                op,
                shown,
                "it is a directory; use TREE or LIST_PATH to see what it holds",
            )),
            _ => Err(WorkspaceError::failed(
                op,
                shown,
                "it is not a regular file (a FIFO, socket or device)",
            )),
        }
    }

    /// READ: the text of a file (normalised to `\n`, cut at `max_read_bytes` and marked), or a
    /// note that it is binary.
    pub fn read(&self, path: &str) -> Result<ReadOutput, WorkspaceError> {
        let (rel, size, bytes) = self.read_for_model(path, self.cfg.max_read_bytes)?;
        let limit = self.cfg.max_read_bytes;
        let truncated = bytes.len() > limit;
        let content = match text_of(&bytes[..bytes.len().min(limit)], truncated) {
            None => ReadContent::Binary,
            Some(s) => {
                let s = if truncated {
                    match s.rfind('\n') {
                        Some(i) if i > 0 => &s[..=i],
                        _ => s,
                    }
                } else {
                    s
                };
                ReadContent::Text {
                    text: normalise(s).body.into_owned(),
                    truncated,
                }
            }
        };
        Ok(ReadOutput {
            path: rel,
            size,
            content,
            lines: None,
        })
    }

    /// READ of lines `first..=last` of a file (numbered from 1; `last: None` reads to its
    /// end), for files too long to read whole: any file MODIFY may edit can be read this
    /// way. The text returned is cut at `max_read_bytes`, at a line's end, and marked.
    pub fn read_lines(
        &self,
        path: &str,
        first: usize,
        last: Option<usize>,
    ) -> Result<ReadOutput, WorkspaceError> {
        let (rel, size, bytes) = self.read_for_model(path, self.cfg.max_edit_bytes)?;
        if bytes.len() > self.cfg.max_edit_bytes {
            return Err(WorkspaceError::failed(
                "read",
                &rel,
                format!(
                    "it is larger than {} MB, too large to read in parts; SEARCH it instead",
                    self.cfg.max_edit_bytes >> 20
                ),
            ));
        }
        let Some(text) = text_of(&bytes, false) else {
            return Ok(ReadOutput {
                path: rel,
                size,
                content: ReadContent::Binary,
                lines: None,
            });
        };
        let text = normalise(text).body;
        let total = text.lines().count();
        if first == 0 || first > total.max(1) {
            return Err(WorkspaceError::failed(
                "read",
                &rel,
                format!(
                    "it has {total} lines; ask for lines between 1 and {}",
                    total.max(1)
                ),
            ));
        }
        let last = last.unwrap_or(total).clamp(first, total.max(first));
        let mut out = String::new();
        let mut truncated = false;
        let mut shown_last = first.saturating_sub(1);
        for line in text.lines().skip(first - 1).take(last + 1 - first) {
            if out.len() + line.len() + 1 > self.cfg.max_read_bytes && shown_last >= first {
                truncated = true;
                break;
            }
            out.push_str(line);
            out.push('\n');
            shown_last += 1;
        }
        Ok(ReadOutput {
            path: rel,
            size,
            content: ReadContent::Text {
                text: out,
                truncated,
            },
            lines: Some(LinesShown {
                first,
                last: shown_last.max(first),
                total,
            }),
        })
    }

    /// Open `path` for a READ (through the gate, no link followed, never a linked file) and
    /// read up to `limit + 1` bytes: (its shown path, its size, the bytes).
    fn read_for_model(
        &self,
        path: &str,
        limit: usize,
    ) -> Result<(String, u64, Vec<u8>), WorkspaceError> {
        let rel = self.gate_op(path, true)?;
        if rel.is_root() {
            return Err(WorkspaceError::failed(
                "read",
                ".",
                "it is the project directory; use TREE or LIST_PATH to see what it holds",
            ));
        }
        let (dir, name) = open_parent(&self.gate, &rel, false, "read")?;
        let (fd, st) = Self::open_file(&dir, &name, &rel, "read", "")?;
        super::gate::refuse_linked(&rel, st.links)?;
        let bytes = sys::read_up_to(&fd, limit.saturating_add(1))
            .map_err(|e| WorkspaceError::io("read", rel.display(), e))?;
        Ok((rel.as_str().to_string(), st.size, bytes))
    }

    /// For history: a file's exact bytes and permission bits, opened through the gate like
    /// every other operation (so a symlink swapped in after the check is not followed).
    /// `Ok(None)` when nothing is there.
    pub fn read_bytes(&self, path: &str) -> Result<Option<(Vec<u8>, u32)>, WorkspaceError> {
        let rel = self.gate_op(path, false)?;
        let (dir, name) = match open_parent(&self.gate, &rel, false, "read") {
            Ok(found) => found,
            Err(WorkspaceError::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        match Self::open_file(&dir, &name, &rel, "read", "") {
            Ok((fd, st)) => {
                let bytes = sys::read_up_to(&fd, usize::MAX)
                    .map_err(|e| WorkspaceError::io("read", rel.display(), e))?;
                Ok(Some((bytes, st.perm)))
            }
            Err(WorkspaceError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// For history: what stands at `path`, opened beneath the root without following a link
    /// (a link, FIFO or device is [`Probe::Other`]; a directory gives its entries' names).
    pub fn probe(&self, path: &str) -> Result<Probe, WorkspaceError> {
        let rel = self.gate_op(path, false)?;
        let listing = |fd: &OwnedFd| -> Result<Probe, WorkspaceError> {
            let names = sys::read_dir(fd.as_fd())
                .map_err(|e| WorkspaceError::io("list", rel.display(), e))?
                .into_iter()
                .map(|e| crate::rawname::encode(e.name.to_bytes()).into_owned())
                .collect();
            Ok(Probe::Dir(names))
        };
        if rel.is_root() {
            let (fd, _) = beneath::open_dir(&self.gate, std::iter::empty(), false, "list", ".")?;
            return listing(&fd);
        }
        let (dir, name) = match open_parent(&self.gate, &rel, false, "read") {
            Ok(found) => found,
            // Nothing can be below a missing directory or a file (a plan turning a file into a
            // directory asks about paths under it).
            Err(WorkspaceError::NotFound { .. }) => return Ok(Probe::Absent),
            Err(WorkspaceError::Failed { reason, .. })
                if reason.ends_with("is not a directory") =>
            {
                return Ok(Probe::Absent);
            }
            Err(e) => return Err(e),
        };
        let st = match sys::lstatat(dir.as_fd(), &name) {
            Ok(st) => st,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(Probe::Absent),
            Err(e) => return Err(WorkspaceError::io("read", rel.display(), e)),
        };
        match st.kind {
            Kind::Dir => {
                let fd = sys::openat(dir.as_fd(), &name, sys::DIR_READ, 0)
                    .map_err(|e| WorkspaceError::io("list", rel.display(), e))?;
                listing(&fd)
            }
            Kind::File => match Self::open_file(&dir, &name, &rel, "read", "") {
                Ok((fd, st)) => {
                    let bytes = sys::read_up_to(&fd, usize::MAX)
                        .map_err(|e| WorkspaceError::io("read", rel.display(), e))?;
                    Ok(Probe::File {
                        bytes,
                        perm: st.perm,
                    })
                }
                Err(WorkspaceError::NotFound { .. }) => Ok(Probe::Absent),
                Err(WorkspaceError::Failed { .. } | WorkspaceError::Refused { .. }) => {
                    Ok(Probe::Other)
                }
                Err(e) => Err(e),
            },
            Kind::Symlink | Kind::Other => Ok(Probe::Other),
        }
    }

    /// The permission bits of the regular file at `path`, if one is there (opened like
    /// [`Workspace::probe`]).
    pub fn file_mode(&self, path: &str) -> Option<u32> {
        let rel = self.gate_op(path, false).ok()?;
        let (dir, name) = open_parent(&self.gate, &rel, false, "read").ok()?;
        let st = sys::lstatat(dir.as_fd(), &name).ok()?;
        (st.kind == Kind::File).then_some(st.perm)
    }

    /// WRITE: create a new file (parents included). Fails if anything exists at the path.
    pub fn write_new(&self, path: &str, content: &str) -> Result<FileChange, WorkspaceError> {
        let rel = self.gate_write(path, true)?;
        Self::require_file_target(&rel, "write")?;
        let shown = rel.display();
        let hint = "use MODIFY to change an existing file";
        let (dir, name) = open_parent(&self.gate, &rel, true, "write")?;
        match sys::lstatat(dir.as_fd(), &name) {
            Ok(st) if st.kind == Kind::Dir => {
                return Err(WorkspaceError::exists("write", shown, "it is a directory"));
            }
            Ok(_) => return Err(WorkspaceError::exists("write", shown, hint)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return Err(WorkspaceError::io("write", shown, e)),
        }
        // A file this plan removed or moved away is not new: WRITE there is judged against
        // what the plan started from, like a MODIFY.
        if let Some(Origin::Text(base)) = self.ledger.get(rel.resolved()) {
            guard::guard(&self.cfg, &base, &text::to_lf(content), rel.resolved())
                .map_err(|r| guard::plan_refusal_error(&self.cfg, shown, r))?;
        }
        self.register_writer();
        atomic::write(&dir, &name, content.as_bytes(), Mode::Keep, true, None).map_err(|e| {
            if e.raw_os_error() == Some(libc::EEXIST) {
                WorkspaceError::exists("write", shown, hint)
            } else {
                WorkspaceError::io("write", shown, e)
            }
        })?;
        self.ledger.note(rel.resolved(), Origin::Absent);
        let d = LineDiff::whole("", content);
        Ok(FileChange {
            after: Some(hash(content.as_bytes())),
            added: d.added,
            diff: d.unified(rel.resolved(), self.cfg.max_diff_lines),
            ..FileChange::new(rel.resolved(), ChangeKind::Created)
        })
    }

    /// MODIFY: change an existing text file by ordered search/replace edits or a whole new
    /// content, under the diff guard. Permission bits, line endings and a byte-order mark are
    /// kept. Identical text leaves the file untouched and reports [`ChangeKind::Unchanged`].
    pub fn modify(&self, path: &str, m: &Modification) -> Result<FileChange, WorkspaceError> {
        let rel = self.gate_write(path, true)?;
        Self::require_file_target(&rel, "modify")?;
        let shown = rel.display();
        let missing = "use WRITE to create a new file";
        let (dir, name) = open_parent(&self.gate, &rel, false, "modify").map_err(|e| match e {
            WorkspaceError::NotFound { .. } => WorkspaceError::not_found("modify", shown, missing),
            other => other,
        })?;
        let (fd, st) = Self::open_file(&dir, &name, &rel, "modify", missing)?;
        let old = self.read_text_for_edit(fd, &st, shown)?;
        let bytes = old.as_bytes();
        let styled = normalise(&old);
        let new_body = match m {
            Modification::Edits(list) => edits::apply(&styled.body, list)
                .map_err(|reason| WorkspaceError::failed("modify", shown, reason))?,
            Modification::Content(c) => text::to_lf(c).into_owned(),
        };
        let before = hash(bytes);
        if new_body == styled.body {
            return Ok(FileChange {
                before: Some(before.clone()),
                after: Some(before),
                ..FileChange::new(rel.resolved(), ChangeKind::Unchanged)
            });
        }
        let d = self.guard_modify(&rel, bytes, &styled.body, &new_body)?;
        let new_bytes = text::restore(&new_body, styled.eol, styled.bom);
        if let Some(h) = &self.before_replace {
            h(&rel);
        }
        self.register_writer();
        Self::replace_if_unchanged(&dir, &name, &st, bytes, new_bytes.as_bytes(), shown)?;
        Ok(FileChange {
            before: Some(before),
            after: Some(hash(new_bytes.as_bytes())),
            added: d.added,
            removed: d.removed,
            diff: d.unified(rel.resolved(), self.cfg.max_diff_lines),
            ..FileChange::new(rel.resolved(), ChangeKind::Modified)
        })
    }

    /// What MODIFY would do, computed in memory with the same matcher and nothing written:
    /// the unified diff, its line counts and the new text (line endings normalised). `earlier`
    /// is the file's text as earlier steps of the same plan would leave it (`None`: as it is
    /// on disk). `Err` is why the step would fail, as the step itself would say it.
    pub fn preview_modify(
        &self,
        path: &str,
        m: &Modification,
        earlier: Option<&str>,
    ) -> Result<EditPreview, String> {
        let rel = self.gate_write(path, true).map_err(|e| e.to_string())?;
        Self::require_file_target(&rel, "modify").map_err(|e| e.to_string())?;
        let shown = rel.display();
        let body = match earlier {
            Some(text) => text.to_string(),
            None => {
                let missing = "use WRITE to create a new file";
                let (dir, name) = open_parent(&self.gate, &rel, false, "modify")
                    .map_err(|e| match e {
                        WorkspaceError::NotFound { .. } => {
                            WorkspaceError::not_found("modify", shown, missing)
                        }
                        other => other,
                    })
                    .map_err(|e| e.to_string())?;
                let (fd, st) = Self::open_file(&dir, &name, &rel, "modify", missing)
                    .map_err(|e| e.to_string())?;
                let old = self
                    .read_text_for_edit(fd, &st, shown)
                    .map_err(|e| e.to_string())?;
                normalise(&old).body.into_owned()
            }
        };
        let new_body = match m {
            Modification::Edits(list) => edits::apply(&body, list)
                .map_err(|reason| WorkspaceError::failed("modify", shown, reason).to_string())?,
            Modification::Content(c) => text::to_lf(c).into_owned(),
        };
        let d = guard::guard(&self.cfg, &body, &new_body, rel.resolved())
            .map_err(|r| guard::refusal_error(&self.cfg, shown, r).to_string())?;
        Ok(EditPreview {
            diff: d.unified(rel.resolved(), self.cfg.max_diff_lines),
            added: d.added,
            removed: d.removed,
            text: new_body.clone(),
        })
    }

    /// What WRITE would create, in memory: the whole content as added lines. `Err` when the
    /// path is refused or something is there already.
    pub fn preview_write(&self, path: &str, content: &str) -> Result<EditPreview, String> {
        let rel = self.gate_write(path, true).map_err(|e| e.to_string())?;
        Self::require_file_target(&rel, "write").map_err(|e| e.to_string())?;
        let body = text::to_lf(content).into_owned();
        let d = LineDiff::whole("", &body);
        Ok(EditPreview {
            diff: d.unified(rel.resolved(), self.cfg.max_diff_lines),
            added: d.added,
            removed: 0,
            text: body.clone(),
        })
    }

    /// MODIFY's read: the whole file as UTF-8 text, refused before reading when its size is
    /// over `max_edit_bytes` and after reading when it is binary, not UTF-8, or grew past the
    /// limit meanwhile (so an edit never works on a cut copy). The descriptor is closed once
    /// read.
    fn read_text_for_edit(
        &self,
        fd: OwnedFd,
        st: &sys::Stat,
        shown: &str,
    ) -> Result<String, WorkspaceError> {
        let limit = self.cfg.max_edit_bytes;
        if st.size > limit as u64 {
            return Err(WorkspaceError::failed(
                "modify",
                shown,
                format!(
                    "it is {} bytes, over the {}-byte limit for edits",
                    thousands(st.size as usize),
                    thousands(limit)
                ),
            ));
        }
        let bytes = sys::read_up_to(&fd, limit.saturating_add(1))
            .map_err(|e| WorkspaceError::io("modify", shown, e))?;
        drop(fd);
        let not_text = || {
            WorkspaceError::failed(
                "modify",
                shown,
                "it is a binary or non-UTF-8 file; text edits cannot change it",
            )
        };
        if looks_binary(&bytes) || bytes.len() > limit {
            return Err(not_text());
        }
        String::from_utf8(bytes).map_err(|_| not_text())
    }

    /// MODIFY's diff guard, run before anything is written: the file's origin is recorded in
    /// the plan's ledger, then the step itself is judged, then the file's net change since the
    /// plan began. Each step passing is not enough, so a rewrite split into small steps is
    /// still a rewrite. Returns the step's diff for the report.
    fn guard_modify<'a>(
        &self,
        rel: &RelPath,
        bytes: &[u8],
        body: &'a str,
        new_body: &'a str,
    ) -> Result<LineDiff<'a>, WorkspaceError> {
        let shown = rel.display();
        let origin = self
            .ledger
            .note_bytes(rel.resolved(), bytes, self.cfg.max_edit_bytes);
        let d = guard::guard(&self.cfg, body, new_body, rel.resolved())
            .map_err(|r| guard::refusal_error(&self.cfg, shown, r))?;
        if let Origin::Text(base) = &origin
            && **base != *body
        {
            guard::guard(&self.cfg, base, new_body, rel.resolved())
                .map_err(|r| guard::plan_refusal_error(&self.cfg, shown, r))?;
        }
        Ok(d)
    }

    /// Atomically replace the file MODIFY read (`st`, `bytes`) with `new_bytes`, keeping its
    /// permission bits exactly, and only if it is still the version that was read: another
    /// program's save in the meantime is kept and reported, never overwritten.
    fn replace_if_unchanged(
        dir: &OwnedFd,
        name: &CStr,
        st: &sys::Stat,
        bytes: &[u8],
        new_bytes: &[u8],
        shown: &str,
    ) -> Result<(), WorkspaceError> {
        atomic::write(
            dir,
            name,
            new_bytes,
            Mode::Exact(st.perm),
            false,
            Some(atomic::ReadVersion { stat: st, bytes }),
        )
        .map_err(|e| {
            if atomic::is_changed_on_disk(&e) {
                WorkspaceError::failed(
                    "modify",
                    shown,
                    "another program changed it while pai was editing it; nothing was written, and the other program's version is kept (read it again and redo the edit)",
                )
            } else {
                WorkspaceError::io("modify", shown, e)
            }
        })
    }

    /// MKDIR: create a directory and any missing parents. An existing directory is
    /// [`ChangeKind::Unchanged`].
    pub fn mkdir(&self, path: &str) -> Result<FileChange, WorkspaceError> {
        let rel = self.gate_write(path, true)?;
        if rel.is_root() {
            return Ok(FileChange::new("", ChangeKind::Unchanged));
        }
        let (_, created) =
            beneath::open_dir(&self.gate, rel.components(), true, "mkdir", rel.display())?;
        let kind = if created {
            ChangeKind::DirCreated
        } else {
            ChangeKind::Unchanged
        };
        Ok(FileChange::new(rel.resolved(), kind))
    }

    /// TOUCH: create an empty file (parents included), or update the times of an existing one.
    pub fn touch(&self, path: &str) -> Result<FileChange, WorkspaceError> {
        let rel = self.gate_write(path, true)?;
        Self::require_file_target(&rel, "touch")?;
        let shown = rel.display();
        let (dir, name) = open_parent(&self.gate, &rel, true, "touch")?;
        match sys::lstatat(dir.as_fd(), &name) {
            Ok(st) => match st.kind {
                Kind::File => {
                    sys::touch_at(dir.as_fd(), &name)
                        .map_err(|e| WorkspaceError::io("touch", shown, e))?;
                    Ok(FileChange::new(rel.resolved(), ChangeKind::Unchanged))
                }
                Kind::Dir => Err(WorkspaceError::failed("touch", shown, "it is a directory")),
                Kind::Symlink => Err(WorkspaceError::refused(
                    shown,
                    "changed after it was checked: it is now a symbolic link, which pai does not follow",
                )),
                Kind::Other => Err(WorkspaceError::failed(
                    "touch",
                    shown,
                    "it is not a regular file",
                )),
            },
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
                let fd = sys::openat(dir.as_fd(), &name, flags, 0o666)
                    .map_err(|e| WorkspaceError::io("touch", shown, e))?;
                sys::fsync(fd.as_fd()).map_err(|e| WorkspaceError::io("touch", shown, e))?;
                let _ = sys::fsync(dir.as_fd());
                Ok(FileChange {
                    after: Some(hash(b"")),
                    ..FileChange::new(rel.resolved(), ChangeKind::Created)
                })
            }
            Err(e) => Err(WorkspaceError::io("touch", shown, e)),
        }
    }

    /// RM: remove a file, a symlink (not its target) or a directory. A non-empty directory
    /// needs `allow_recursive` (the caller asks the user first); a directory holding a
    /// protected path (`.git`, `.env`, keys, ...) is never removed.
    pub fn rm(&self, path: &str, allow_recursive: bool) -> Result<Vec<FileChange>, WorkspaceError> {
        let rel = self.gate_write(path, false)?;
        let shown = rel.display();
        if rel.is_root() {
            return Err(WorkspaceError::refused(
                shown,
                "is the project directory itself; pai never removes it",
            ));
        }
        let (dir, name) = open_parent(&self.gate, &rel, false, "rm")?;
        let st =
            sys::lstatat(dir.as_fd(), &name).map_err(|e| WorkspaceError::io("rm", shown, e))?;
        if rel.dir_hint() && st.kind != Kind::Dir {
            return Err(WorkspaceError::failed("rm", shown, "it is not a directory"));
        }
        let mut changes = Vec::new();
        if st.kind == Kind::Dir {
            let sub = sys::openat(dir.as_fd(), &name, sys::DIR_READ, 0)
                .map_err(|e| WorkspaceError::io("rm", shown, e))?;
            let found = self.scan(&sub, rel.resolved(), "rm", shown)?;
            if !found.is_empty() && !allow_recursive {
                let dirs = found.iter().filter(|f| f.kind == Kind::Dir).count();
                return Err(WorkspaceError::NeedsConfirmation {
                    path: shown.to_string(),
                    files: found.len() - dirs,
                    dirs,
                });
            }
            self.delete_tree(&sub, rel.resolved(), &mut changes, shown)?;
            drop(sub);
            sys::unlinkat(dir.as_fd(), &name, true)
                .map_err(|e| WorkspaceError::io("rm", shown, e))?;
            changes.push(FileChange::new(rel.resolved(), ChangeKind::DirRemoved));
        } else {
            changes.push(self.delete_entry(&dir, &name, st.kind, rel.resolved(), shown)?);
        }
        let _ = sys::fsync(dir.as_fd());
        Ok(changes)
    }

    /// Remove one non-directory entry and describe it.
    fn delete_entry(
        &self,
        dir: &OwnedFd,
        name: &CStr,
        kind: Kind,
        rel: &str,
        shown: &str,
    ) -> Result<FileChange, WorkspaceError> {
        let mut change = FileChange::new(rel, ChangeKind::Deleted);
        if kind != Kind::File {
            self.ledger.note(rel, Origin::Opaque);
        }
        if kind == Kind::File
            && let Ok(fd) = sys::openat(dir.as_fd(), name, READ_FLAGS, 0)
            && let Ok(bytes) = sys::read_up_to(&fd, usize::MAX)
        {
            change.before = Some(hash(&bytes));
            self.ledger.note_bytes(rel, &bytes, self.cfg.max_edit_bytes);
            if bytes.len() <= self.cfg.max_edit_bytes
                && !looks_binary(&bytes)
                && let Ok(s) = std::str::from_utf8(&bytes)
            {
                let body = normalise(s).body;
                let d = LineDiff::whole(&body, "");
                change.removed = d.removed;
                change.diff = d.unified(rel, self.cfg.max_diff_lines);
            }
        }
        sys::unlinkat(dir.as_fd(), name, false).map_err(|e| WorkspaceError::io("rm", shown, e))?;
        Ok(change)
    }

    /// List everything below a directory (no ignore rules: RM and MV act on all of it), and
    /// refuse if a protected path is among it.
    fn scan(
        &self,
        dir: &OwnedFd,
        rel: &str,
        op: &'static str,
        shown: &str,
    ) -> Result<Vec<Found>, WorkspaceError> {
        let mut out = Vec::new();
        self.scan_rec(dir, rel, 0, &mut out, op, shown)?;
        Ok(out)
    }

    fn scan_rec(
        &self,
        dir: &OwnedFd,
        rel: &str,
        depth: usize,
        out: &mut Vec<Found>,
        op: &'static str,
        shown: &str,
    ) -> Result<(), WorkspaceError> {
        if depth > MAX_DEPTH {
            return Err(WorkspaceError::failed(op, shown, "it is nested too deeply"));
        }
        let entries = sys::read_dir(dir.as_fd()).map_err(|e| WorkspaceError::io(op, shown, e))?;
        for e in entries {
            let name = crate::rawname::encode(e.name.to_bytes()).into_owned();
            let path = join(rel, &name);
            if let Some(DenyClass::Protected(why)) = self.gate.deny.path(&path) {
                return Err(WorkspaceError::refused(
                    shown,
                    format!(
                        "holds {path}, a protected path {why}; pai does not {} it",
                        if op == "rm" { "remove" } else { "move" }
                    ),
                ));
            }
            if e.kind == Kind::Dir {
                let sub = sys::openat(dir.as_fd(), &e.name, sys::DIR_READ, 0)
                    .map_err(|err| WorkspaceError::io(op, &path, err))?;
                out.push(Found {
                    rel: path.clone(),
                    kind: Kind::Dir,
                });
                self.scan_rec(&sub, &path, depth + 1, out, op, shown)?;
            } else {
                out.push(Found {
                    rel: path,
                    kind: e.kind,
                });
            }
        }
        Ok(())
    }

    /// Remove everything below a directory, deepest first, never following a symlink.
    fn delete_tree(
        &self,
        dir: &OwnedFd,
        rel: &str,
        changes: &mut Vec<FileChange>,
        shown: &str,
    ) -> Result<(), WorkspaceError> {
        let entries = sys::read_dir(dir.as_fd()).map_err(|e| WorkspaceError::io("rm", shown, e))?;
        for e in entries {
            let name = crate::rawname::encode(e.name.to_bytes()).into_owned();
            let path = join(rel, &name);
            // Checked again at deletion: something protected may have appeared since the scan.
            if let Some(DenyClass::Protected(why)) = self.gate.deny.path(&path) {
                return Err(WorkspaceError::refused(
                    shown,
                    format!("holds {path}, a protected path {why}; pai does not remove it"),
                ));
            }
            if e.kind == Kind::Dir {
                let sub = sys::openat(dir.as_fd(), &e.name, sys::DIR_READ, 0)
                    .map_err(|err| WorkspaceError::io("rm", &path, err))?;
                self.delete_tree(&sub, &path, changes, shown)?;
                drop(sub);
                sys::unlinkat(dir.as_fd(), &e.name, true)
                    .map_err(|err| WorkspaceError::io("rm", &path, err))?;
                changes.push(FileChange::new(path, ChangeKind::DirRemoved));
            } else {
                changes.push(self.delete_entry(dir, &e.name, e.kind, &path, shown)?);
            }
        }
        Ok(())
    }

    /// MV: move a file, symlink or directory. When `to` is an existing directory, the source
    /// moves into it. Never replaces an existing destination.
    pub fn mv(&self, from: &str, to: &str) -> Result<Vec<FileChange>, WorkspaceError> {
        let src = self.gate_write(from, false)?;
        let src_shown = src.display();
        if src.is_root() {
            return Err(WorkspaceError::refused(
                src_shown,
                "is the project directory itself; pai never moves it",
            ));
        }
        let dst = self.gate_write(to, false)?;
        let (sdir, sname) = open_parent(&self.gate, &src, false, "mv")?;
        let st = sys::lstatat(sdir.as_fd(), &sname)
            .map_err(|e| WorkspaceError::io("mv", src_shown, e))?;
        if src.dir_hint() && st.kind != Kind::Dir {
            return Err(WorkspaceError::failed(
                "mv",
                src_shown,
                "it is not a directory",
            ));
        }
        let dst = self.move_destination(to, dst, &src)?;
        let dst_shown = dst.display().to_string();
        if dst.resolved() == src.resolved() {
            return Err(WorkspaceError::failed(
                "mv",
                src_shown,
                "the source and the destination are the same",
            ));
        }
        let found = self.scan_moving_dir(&src, &dst, st.kind, &sdir, &sname)?;
        let plan = MovePlan {
            from_root: src.resolved(),
            to_root: dst.resolved(),
            kind: st.kind,
            found,
        };
        let pairs = plan.pairs();
        self.vet_move(&pairs, &dst_shown)?;
        let (ddir, dname) = open_parent(&self.gate, &dst, true, "mv")?;
        rename_no_replace(&sdir, &sname, &ddir, &dname, src_shown, &dst_shown)?;
        let _ = sys::fsync(ddir.as_fd());
        let _ = sys::fsync(sdir.as_fd());
        for (old, new) in &pairs {
            self.ledger.carry(old, new);
        }
        Ok(self.move_changes(&plan, &ddir, &dname))
    }

    /// Where MV puts the source: inside `to` when `to` names an existing directory (a symlink
    /// to a directory inside the project counts, so `to` is checked again following its last
    /// component), else `to` itself as gated (`dst`). The joined path passes the gate too.
    fn move_destination(
        &self,
        to: &str,
        mut dst: RelPath,
        src: &RelPath,
    ) -> Result<RelPath, WorkspaceError> {
        let into = dst.is_root()
            || match self.gate.check(to, true) {
                Ok(d) if d.is_root() => {
                    dst = d;
                    true
                }
                Ok(d) => {
                    let is_dir =
                        beneath::open_dir(&self.gate, d.components(), false, "mv", d.display())
                            .is_ok();
                    if is_dir {
                        dst = d;
                    }
                    is_dir
                }
                Err(_) => false,
            };
        if into {
            let joined = join(dst.resolved(), src.file_name());
            dst = self.gate_write(&joined, false)?;
        }
        Ok(dst)
    }

    /// For a directory source: refuse a move into itself, then list everything it holds,
    /// refusing if a protected path is among it (before anything moves). Empty for a file or
    /// link.
    fn scan_moving_dir(
        &self,
        src: &RelPath,
        dst: &RelPath,
        kind: Kind,
        sdir: &OwnedFd,
        sname: &CStr,
    ) -> Result<Vec<Found>, WorkspaceError> {
        if kind != Kind::Dir {
            return Ok(Vec::new());
        }
        let src_shown = src.display();
        if dst.resolved().starts_with(&format!("{}/", src.resolved())) {
            return Err(WorkspaceError::failed(
                "mv",
                src_shown,
                format!("a directory cannot move into itself ({})", dst.display()),
            ));
        }
        let sub = sys::openat(sdir.as_fd(), sname, sys::DIR_READ, 0)
            .map_err(|e| WorkspaceError::io("mv", src_shown, e))?;
        self.scan(&sub, src.resolved(), "mv", src_shown)
    }

    /// The changes MV reports, after the move: the directory (if it was one) then each file
    /// under its new name, or the one file or link moved. A file's hash is read at its new
    /// place; one that cannot be read there is reported without hashes.
    fn move_changes(&self, plan: &MovePlan<'_>, ddir: &OwnedFd, dname: &CStr) -> Vec<FileChange> {
        let mut changes = Vec::new();
        if plan.kind == Kind::Dir {
            changes.push(FileChange::new(
                plan.to_root,
                ChangeKind::DirRenamed {
                    from: plan.from_root.to_string(),
                },
            ));
            for f in plan.files() {
                let new_rel = plan.moved(&f.rel);
                let checked = RelPath::trusted(new_rel);
                let hashed = open_parent(&self.gate, &checked, false, "mv")
                    .ok()
                    .map(|(d, n)| renamed_change(plan.moved(&f.rel), &f.rel, f.kind, &d, &n));
                changes.push(hashed.unwrap_or_else(|| {
                    FileChange::new(
                        plan.moved(&f.rel),
                        ChangeKind::Renamed {
                            from: f.rel.clone(),
                        },
                    )
                }));
            }
        } else {
            changes.push(renamed_change(
                plan.moved(plan.from_root),
                plan.from_root,
                plan.kind,
                ddir,
                dname,
            ));
        }
        changes
    }

    /// Before a move: record where each moving file started (the plan's ledger), and judge a
    /// destination the plan emptied earlier against what it started from, so "move the file
    /// away, move another over it" is the rewrite it is.
    fn vet_move(&self, pairs: &[(String, String)], dst_shown: &str) -> Result<(), WorkspaceError> {
        let max = self.cfg.max_edit_bytes;
        for (old, new) in pairs {
            let now = self.current_text_bytes(old, max);
            match &now {
                Some(bytes) => self.ledger.note_bytes(old, bytes, max),
                None => self.ledger.note(old, Origin::Opaque),
            };
            if let Some(Origin::Text(base)) = self.ledger.get(new) {
                let Some(text) = now
                    .as_deref()
                    .filter(|b| !looks_binary(b))
                    .and_then(|b| std::str::from_utf8(b).ok())
                else {
                    continue;
                };
                guard::guard(&self.cfg, &base, &normalise(text).body, new)
                    .map_err(|r| guard::plan_refusal_error(&self.cfg, dst_shown, r))?;
            }
        }
        Ok(())
    }

    /// A regular file's bytes when it has at most `max` of them, opened without following
    /// links; `None` for anything else.
    fn current_text_bytes(&self, rel: &str, max: usize) -> Option<Vec<u8>> {
        let checked = RelPath::trusted(rel.to_string());
        let (dir, name) = open_parent(&self.gate, &checked, false, "mv").ok()?;
        let fd = sys::openat(dir.as_fd(), &name, READ_FLAGS, 0).ok()?;
        let st = sys::fstat(fd.as_fd()).ok()?;
        if st.kind != Kind::File || st.size > max as u64 {
            return None;
        }
        sys::read_up_to(&fd, max.saturating_add(1)).ok()
    }

    /// For undo/redo: make `path` hold exactly `bytes` (parents created), atomically, through
    /// the gate. `mode` sets the permission bits; `None` keeps the existing file's.
    pub fn write_bytes(
        &self,
        path: &str,
        bytes: &[u8],
        mode: Option<u32>,
    ) -> Result<(), WorkspaceError> {
        let rel = self.gate_op(path, true)?;
        Self::require_file_target(&rel, "write")?;
        let (dir, name) = open_parent(&self.gate, &rel, true, "write")?;
        let mode = mode.map_or(Mode::Keep, Mode::Exact);
        self.register_writer();
        atomic::write(&dir, &name, bytes, mode, false, None)
            .map_err(|e| WorkspaceError::io("write", rel.display(), e))
    }

    /// For undo/redo: remove one file or symlink (never a directory) through the gate. A
    /// missing file is [`WorkspaceError::NotFound`].
    pub fn remove_file(&self, path: &str) -> Result<(), WorkspaceError> {
        let rel = self.gate_op(path, false)?;
        Self::require_file_target(&rel, "remove")?;
        let shown = rel.display();
        let (dir, name) = open_parent(&self.gate, &rel, false, "remove")?;
        let st =
            sys::lstatat(dir.as_fd(), &name).map_err(|e| WorkspaceError::io("remove", shown, e))?;
        if st.kind == Kind::Dir {
            return Err(WorkspaceError::failed("remove", shown, "it is a directory"));
        }
        sys::unlinkat(dir.as_fd(), &name, false)
            .map_err(|e| WorkspaceError::io("remove", shown, e))?;
        let _ = sys::fsync(dir.as_fd());
        Ok(())
    }
}

/// `bytes` as text, or `None` when they are binary or not UTF-8. A multi-byte character cut
/// at the end is fine when the bytes were `truncated`.
fn text_of(bytes: &[u8], truncated: bool) -> Option<&str> {
    if looks_binary(bytes) {
        return None;
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => Some(s),
        Err(e) if truncated && e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()
        }
        Err(_) => None,
    }
}

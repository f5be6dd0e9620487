//! What the workspace operations return: the typed account of a change that the history layer
//! commits and the interface shows, and the result of READ.

use std::fmt;

use super::text::thousands;

/// What happened to a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeKind {
    /// A new file.
    Created,
    /// An existing file got new content.
    Modified,
    /// A file (or symlink) was removed.
    Deleted,
    /// A file (or symlink) was moved here from `from`.
    Renamed {
        /// The old relative path.
        from: String,
    },
    /// A directory was created.
    DirCreated,
    /// A directory was removed.
    DirRemoved,
    /// A directory was moved here from `from` (its files are reported as [`ChangeKind::Renamed`]
    /// too).
    DirRenamed {
        /// The old relative path.
        from: String,
    },
    /// Nothing changed (MODIFY with identical text, TOUCH or MKDIR of something that exists).
    Unchanged,
}

/// One changed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Relative, `/`-separated path (where the content now is, symlinks resolved).
    pub path: String,
    /// What happened.
    pub kind: ChangeKind,
    /// SHA-256 (hex) of the content before, for files that existed.
    pub before: Option<String>,
    /// SHA-256 (hex) of the content after, for files that exist afterwards.
    pub after: Option<String>,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// Unified diff for display (capped; empty when there is nothing to show).
    pub diff: String,
}

impl FileChange {
    pub(crate) fn new(path: impl Into<String>, kind: ChangeKind) -> FileChange {
        FileChange {
            path: path.into(),
            kind,
            before: None,
            after: None,
            added: 0,
            removed: 0,
            diff: String::new(),
        }
    }

    /// Whether the change alters anything on disk.
    pub fn is_change(&self) -> bool {
        self.kind != ChangeKind::Unchanged
    }
}

impl fmt::Display for FileChange {
    /// One line, e.g. `modified src/x.py (+3 -1)` or `renamed a.txt -> b.txt`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.path;
        match &self.kind {
            ChangeKind::Created => write!(f, "created {p}")?,
            ChangeKind::Modified => write!(f, "modified {p}")?,
            ChangeKind::Deleted => write!(f, "deleted {p}")?,
            ChangeKind::Renamed { from } => write!(f, "renamed {from} -> {p}")?,
            ChangeKind::DirCreated => write!(f, "created directory {p}/")?,
            ChangeKind::DirRemoved => write!(f, "removed directory {p}/")?,
            ChangeKind::DirRenamed { from } => write!(f, "renamed directory {from}/ -> {p}/")?,
            ChangeKind::Unchanged => write!(f, "unchanged {p}")?,
        }
        if self.added + self.removed > 0 {
            write!(f, " (+{} -{})", self.added, self.removed)?;
        }
        Ok(())
    }
}

/// The body of a READ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadContent {
    /// UTF-8 text, line endings normalised to `\n`.
    Text {
        /// The text (possibly only the start of the file).
        text: String,
        /// Whether the file was longer than the read limit.
        truncated: bool,
    },
    /// Binary or non-UTF-8 content, which is never returned.
    Binary,
}

/// The result of READ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOutput {
    /// The relative path read.
    pub path: String,
    /// The file's size in bytes.
    pub size: u64,
    /// What was read.
    pub content: ReadContent,
    /// For a READ of a line range: which lines the text holds (`None`: the file from its
    /// start).
    pub lines: Option<LinesShown>,
}

/// The lines of a file a ranged READ returned, numbered from 1, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinesShown {
    /// The first line of the text.
    pub first: usize,
    /// The last line of the text.
    pub last: usize,
    /// How many lines the file has.
    pub total: usize,
}

impl ReadOutput {
    /// The text, if the file is text.
    pub fn text(&self) -> Option<&str> {
        match &self.content {
            ReadContent::Text { text, .. } => Some(text),
            ReadContent::Binary => None,
        }
    }
}

impl fmt::Display for ReadOutput {
    /// What the model is shown: the text, with a marker when truncated, or a note for binary
    /// files.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.content {
            ReadContent::Text { text, truncated } => {
                f.write_str(text)?;
                if *truncated {
                    if !text.ends_with('\n') && !text.is_empty() {
                        f.write_str("\n")?;
                    }
                    match self.lines {
                        Some(l) => write!(
                            f,
                            "[truncated by pai: showing {} bytes from line {} of {}; READ it with \"lines\" from line {} for more]",
                            thousands(text.len()),
                            thousands(l.first),
                            self.path,
                            l.first + text.lines().count(),
                        )?,
                        None => write!(
                            f,
                            "[truncated by pai: showing the first {} of {} bytes of {} (lines 1-{}); READ it with \"lines\" from line {} for more]",
                            thousands(text.len()),
                            thousands(self.size as usize),
                            self.path,
                            text.lines().count(),
                            text.lines().count() + 1,
                        )?,
                    }
                }
                Ok(())
            }
            ReadContent::Binary => write!(
                f,
                "[binary file, not shown: {} ({} bytes)]",
                self.path,
                thousands(self.size as usize)
            ),
        }
    }
}

/// What stands at a path, for the history layer ([`crate::workspace::Workspace::probe`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// Nothing.
    Absent,
    /// A directory, with its entries' names.
    Dir(Vec<String>),
    /// A regular file: its bytes and permission bits.
    File {
        /// The content.
        bytes: Vec<u8>,
        /// Permission bits.
        perm: u32,
    },
    /// A symbolic link, FIFO, socket or device (never followed or opened).
    Other,
}

/// A WRITE's or MODIFY's change computed before it runs (see `Workspace::preview_modify`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditPreview {
    /// The unified diff.
    pub diff: String,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// The file's text after the step (line endings normalised).
    pub text: String,
}

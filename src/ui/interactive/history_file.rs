//! The input history file, `input/history` in pai's per-project state directory in the
//! user's state directory (`history::project_dir`), never inside the project: a repository
//! can ship `.pai_history/input_history`, and Up-arrow recall must only bring back what the
//! user typed. It is read and appended through the state directory's opener (no link is
//! followed, no FIFO opened blocking), as the line editor's own file functions would not. The format is the line editor's (`#V2`, one entry per line, `\` and newline escaped), so
//! files written before stay readable.

use std::io::Write;
use std::path::PathBuf;

use crate::workspace::StateDir;

/// The folder, inside the per-project state directory, and the file's name in it.
const FOLDER: &str = "input";
const NAME: &str = "history";
/// The format marker on the first line.
const HEADER: &str = "#V2";

/// The input history of one project.
#[derive(Debug, Clone)]
pub(crate) struct HistoryFile {
    /// The project's directory in the user's state directory.
    dir: PathBuf,
}

impl HistoryFile {
    /// The history kept in `dir`, the project's directory in the user's state directory.
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The last `max` entries, oldest first. Nothing (no file, a link or special file refused,
    /// unreadable) is an empty history: the session works without one.
    pub(crate) fn load(&self, max: usize) -> Vec<String> {
        let Ok(state) = StateDir::open_named(&self.dir, FOLDER, false) else {
            return Vec::new();
        };
        let Ok(Some(bytes)) = state.read(&[NAME]) else {
            return Vec::new();
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut lines = text.lines().peekable();
        let escaped = lines.peek() == Some(&HEADER);
        if escaped {
            lines.next();
        }
        let entries: Vec<String> = lines
            .filter(|l| !l.is_empty())
            .map(|l| if escaped { unescape(l) } else { l.to_string() })
            .collect();
        let skip = entries.len().saturating_sub(max);
        entries.into_iter().skip(skip).collect()
    }

    /// Append one entry (creating the file, with its header, when missing). Failures are
    /// ignored: losing a history line must never stop the session.
    pub(crate) fn append(&self, entry: &str) {
        let Ok(state) = StateDir::open_named(&self.dir, FOLDER, true) else {
            return;
        };
        let _ = state.write_new(&[NAME], format!("{HEADER}\n").as_bytes(), 0o600);
        if let Ok(mut f) = state.open_append(&[NAME]) {
            let _ = writeln!(f, "{}", escape(entry));
        }
    }
}

fn escape(entry: &str) -> String {
    entry.replace('\\', "\\\\").replace('\n', "\\n")
}

fn unescape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_a_planted_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let h = HistoryFile::new(dir.path().to_path_buf());
        assert!(h.load(10).is_empty());
        h.append("first");
        h.append("two\nlines with a \\ backslash");
        assert_eq!(
            h.load(10),
            vec!["first".to_string(), "two\nlines with a \\ backslash".into()]
        );
        assert_eq!(h.load(1).len(), 1);

        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "secret\n").unwrap();
        let file = dir.path().join(FOLDER).join(NAME);
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink(&outside, &file).unwrap();
        assert!(h.load(10).is_empty(), "read through a link");
        h.append("after");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret\n");
    }
}

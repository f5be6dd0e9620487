//! Shell words for the commands pai suggests (`git revert <sha>`, `rm <lock>`, `git switch
//! <branch>`, ...): the one place a name or path is quoted before it is printed inside one.
//!
//! A name can come from the repository (a branch, a file, a planted entry under `.pai_history`)
//! or from the user's file system (the project's path), so it may hold spaces, quotes, `$(...)`,
//! newlines, control characters or bytes that are not UTF-8. [`quote`] turns it into one word
//! that POSIX `sh` (dash included, which has no `$'...'`) reads back as exactly those bytes, and
//! that survives the output layer unchanged ([`crate::ui`] neutralises control characters and
//! bidirectional overrides, keeps newlines, and treats backticks as the edges of a command):
//!
//! - the shell's literal characters as they are (`pai/20250101_101010`, `.git/index.lock`);
//! - other printable text in single quotes, a `'` as `\'` between them;
//! - a newline inside single quotes, as itself (the terminal keeps it, and a command
//!   substitution would drop it at the end of a word);
//! - anything the terminal must not see (control characters, tabs, bidirectional overrides, a
//!   backtick) and every byte that is not UTF-8 as `"$(printf '\ooo')"`, octal escapes that
//!   `printf` turns back into those bytes.
//!
//! The output layer's `ui/safe.rs` recognises words in exactly these shapes ([`is_quoted`]) and
//! quotes any other word of a suggested command that the shell would not take literally, so a
//! call site that forgot to quote still prints data, not code.
//!
//! This is layer 0 (next to `rawname`), so history, the workspace and the CLI, which build the
//! messages, and the output layer, which prints them, share it.

use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

/// `name` as one shell word meaning exactly its UTF-8 bytes. A file name in pai's spelling
/// (bytes that are not UTF-8 as `rawname` escapes) is decoded first by the caller, who
/// passes the bytes to [`quote_bytes`].
pub fn quote(name: &str) -> String {
    quote_bytes(name.as_bytes())
}

/// `path` as one shell word meaning exactly its bytes.
pub fn quote_path(path: &Path) -> String {
    quote_bytes(path.as_os_str().as_bytes())
}

/// `bytes` as one shell word that `sh` reads back as exactly these bytes (see the module
/// comment for the shapes).
pub fn quote_bytes(bytes: &[u8]) -> String {
    if is_plain(bytes) {
        // Checked as ASCII, so this is the text itself.
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let mut word = Word::default();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\'' {
                word.close();
                word.out.push_str("\\'");
            } else if c == '\n' || is_shown(c) {
                word.open();
                word.out.push(c);
            } else {
                let mut utf8 = [0; 4];
                word.bytes(c.encode_utf8(&mut utf8).as_bytes());
            }
        }
        word.bytes(chunk.invalid());
    }
    word.finish()
}

/// Whether the shell reads `bytes` as themselves: characters no shell treats specially, not
/// empty, and no `~` (tilde expansion) or `=` (an assignment, in a command's first word) first.
fn is_plain(bytes: &[u8]) -> bool {
    !bytes.is_empty()
        && !matches!(bytes[0], b'~' | b'=')
        && bytes.iter().all(|&b| is_literal_byte(b))
}

/// A byte the shell never treats specially, anywhere in a word.
pub(crate) fn is_literal_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'_' | b'-' | b'.' | b'/' | b':' | b'@' | b'%' | b'+' | b'=' | b',' | b'^' | b'~'
        )
}

/// A character the terminal shows as itself after the output layer's cleaning, and that needs
/// no escape inside single quotes (a `'` and a backtick excepted).
fn is_shown(c: char) -> bool {
    !c.is_control()
        && c != '`'
        && !matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}')
}

/// A word being built: whether a single-quoted part is open.
#[derive(Default)]
struct Word {
    out: String,
    open: bool,
}

impl Word {
    fn open(&mut self) {
        if !self.open {
            self.out.push('\'');
            self.open = true;
        }
    }

    fn close(&mut self) {
        if self.open {
            self.out.push('\'');
            self.open = false;
        }
    }

    /// `bytes` through `printf`'s octal escapes, inside a quoted command substitution (no
    /// newline among them, which the substitution would drop at the end).
    fn bytes(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.close();
        self.out.push_str("\"$(printf '");
        for b in bytes {
            self.out.push_str(&format!("\\{b:03o}"));
        }
        self.out.push_str("')\"");
    }

    fn finish(mut self) -> String {
        self.close();
        if self.out.is_empty() {
            self.out.push_str("''");
        }
        self.out
    }
}

/// Whether `word` (as printed, after the output layer's cleaning) is one shell word in a shape
/// [`quote_bytes`] writes, or plain text in double quotes without `$`, `` ` `` or `\`
/// (`"Your Name"`): text the shell reads as data, with nothing run. (A leading `~` is
/// accepted: the shell expands it to a home directory, which runs nothing; `~` and
/// `~/.config` are written that way for a reader.)
pub fn is_quoted(word: &str) -> bool {
    let mut rest = word;
    while !rest.is_empty() {
        rest = if let Some(inner) = rest.strip_prefix('\'') {
            match inner.find('\'') {
                Some(end) => &inner[end + 1..],
                None => return false,
            }
        } else if let Some(after) = rest.strip_prefix("\\'") {
            after
        } else if let Some(after) = printf_part(rest) {
            after
        } else if let Some(inner) = rest.strip_prefix('"') {
            match inner.find('"') {
                Some(end) if !inner[..end].contains(['$', '`', '\\']) => &inner[end + 1..],
                _ => return false,
            }
        } else {
            let end = rest
                .find(|c: char| !c.is_ascii() || !is_literal_byte(c as u8))
                .unwrap_or(rest.len());
            if end == 0 {
                return false;
            }
            &rest[end..]
        };
    }
    !word.is_empty()
}

/// After a `"$(printf '\ooo...')"` part at the start of `text`, or `None`.
fn printf_part(text: &str) -> Option<&str> {
    let inner = text.strip_prefix("\"$(printf '")?;
    let end = inner.find("')\"")?;
    let escapes = &inner[..end];
    let well_formed = !escapes.is_empty()
        && escapes.len() % 4 == 0
        && escapes
            .as_bytes()
            .chunks(4)
            .all(|e| e[0] == b'\\' && e[1..].iter().all(|d| (b'0'..=b'7').contains(d)));
    well_formed.then(|| &inner[end + 3..])
}

/// Names a repository or a file system can hold that a shell would misread unquoted (for
/// the tests here and in `ui/safe.rs`).
#[cfg(test)]
pub(crate) fn hostile_names() -> Vec<Vec<u8>> {
    vec![
        b"plain-name_1.txt".to_vec(),
        b"with space".to_vec(),
        b"it's \"quoted\"".to_vec(),
        b"x$(touch PWNED)".to_vec(),
        b"x`touch PWNED`".to_vec(),
        b"$(touch${IFS}PWNED)".to_vec(),
        b"new\nline\n".to_vec(),
        b"\n".to_vec(),
        b"tab\there\r\x1b]52;c;eA==\x07".to_vec(),
        b"caf\xe9 \xff\xfe".to_vec(),
        "bidi \u{202E}txt.exe".as_bytes().to_vec(),
        b"~root".to_vec(),
        b"=x".to_vec(),
        b"-n".to_vec(),
        b"a;touch PWNED;b".to_vec(),
        b"*".to_vec(),
        b"\\".to_vec(),
        b"'".to_vec(),
        b"''".to_vec(),
        Vec::new(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// What `sh` makes of `word` as the one argument of `printf '%s'`.
    fn through_sh(word: &str, dir: &Path) -> Vec<u8> {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s' {word}"))
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{word}: {out:?}");
        out.stdout
    }

    #[test]
    fn sh_reads_every_quoted_name_back_as_its_bytes_and_runs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        for name in hostile_names() {
            let word = quote_bytes(&name);
            assert_eq!(through_sh(&word, dir.path()), name, "{word}");
            assert!(is_quoted(&word), "not recognised: {word}");
            assert!(
                !word.chars().any(|c| c != '\n' && !is_shown(c)),
                "the terminal would alter {word:?}"
            );
        }
        assert!(!dir.path().join("PWNED").exists());
    }

    #[test]
    fn plain_names_stay_as_they_are() {
        assert_eq!(quote("pai/20250101_101010"), "pai/20250101_101010");
        assert_eq!(quote("1a2b3c4"), "1a2b3c4");
        assert_eq!(quote("with space"), "'with space'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote_bytes(b"caf\xe9"), "'caf'\"$(printf '\\351')\"");
        assert_eq!(quote("~root"), "'~root'");
    }

    #[test]
    fn only_data_shapes_count_as_quoted() {
        for word in [
            "abc",
            "'a b'",
            "\"Your Name\"",
            "'it'\\''s'",
            "\"$(printf '\\351')\"",
        ] {
            assert!(is_quoted(word), "{word}");
        }
        for word in [
            "$(touch x)",
            "\"$(touch x)\"",
            "\"$(printf '\\351'; touch x)\"",
            "'open",
            "a;b",
            "`x`",
            "\"a\\\"\"",
            "",
        ] {
            assert!(!is_quoted(word), "{word}");
        }
    }
}

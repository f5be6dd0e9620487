//! The one place text from the repository or the model is made safe for the terminal before
//! plain output prints it: control characters (C0 and C1, ESC included, so no OSC 52 clipboard
//! write or screen clear survives) and bidirectional overrides are neutralised
//! ([`super::layout::clean`]), and every word of a suggested command (a span in backticks)
//! that the shell would not read as data is quoted whole with [`crate::shell::quote`]. Call
//! sites quote the names they put into a command with that same helper ([`crate::shell`]);
//! the words it writes are recognised here and left alone, so this is the net for a site that
//! forgot: a ref name, session id or branch name such as
//! `refs/pai/pending/x$(touch${IFS}pwned)` is pasted as data either way.

use super::layout::clean;
use crate::shell;

/// Shell operators a suggested command joins its parts with (and the input redirection of
/// `pai config set ... < keyfile`); kept as they are.
const OPERATORS: &[&str] = &["&&", "||", "|", ";", "<"];

/// `text` ready for the terminal: cleaned, and the words of its backticked commands quoted
/// where needed.
pub fn terminal_text(text: &str) -> String {
    let cleaned = clean(text);
    let mut out = String::with_capacity(cleaned.len() + 8);
    for (i, part) in cleaned.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        // Odd parts lie between a pair of backticks: a command the user may paste.
        if i % 2 == 1 {
            out.push_str(&quote_command(part));
        } else {
            out.push_str(part);
        }
    }
    out
}

/// Each word of `command` as it is when the shell reads it as data (literal, a placeholder, or
/// already quoted by [`shell::quote`]), else quoted whole.
fn quote_command(command: &str) -> String {
    words(command)
        .into_iter()
        .map(|word| {
            if OPERATORS.contains(&word) || is_placeholder(word) || shell::is_quoted(word) {
                word.to_string()
            } else {
                shell::quote(word)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `command` split at the spaces the shell would split it at: not inside single or double
/// quotes, so a quoted name with a space in it stays one word.
fn words(command: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut start = 0;
    for (i, c) in command.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (None, ' ') => {
                words.push(&command[start..i]);
                start = i + 1;
            }
            (None, '\\') => escaped = true,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    words.push(&command[start..]);
    words
}

/// `<...>` placeholders (`pai resume <SESSION>`) are written for a reader, not pasted.
fn is_placeholder(word: &str) -> bool {
    word.len() > 2
        && word.starts_with('<')
        && word.ends_with('>')
        && word[1..word.len() - 1]
            .bytes()
            .all(crate::shell::is_literal_byte)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt as _;

    #[test]
    fn names_in_suggested_commands_are_quoted() {
        assert_eq!(
            terminal_text("see `git show refs/pai/pending/x$(touch${IFS}pwned)` now"),
            "see `git show 'refs/pai/pending/x$(touch${IFS}pwned)'` now"
        );
        assert_eq!(
            terminal_text("`git switch main && git merge pai/20250101_101010`"),
            "`git switch main && git merge pai/20250101_101010`"
        );
        assert_eq!(
            terminal_text("`git log -p a'b;c`"),
            "`git log -p 'a'\\''b;c'`"
        );
        assert_eq!(
            terminal_text("`pai resume <SESSION>`"),
            "`pai resume <SESSION>`"
        );
        assert_eq!(
            terminal_text("plain $(text) outside"),
            "plain $(text) outside"
        );
    }

    /// The argument vectors `git` is run with when `sh` runs `command` in `dir`, with a `git`
    /// on `PATH` that only records them (NUL-separated, one file per call).
    fn git_calls(command: &str, dir: &std::path::Path) -> Vec<Vec<Vec<u8>>> {
        use std::os::unix::fs::PermissionsExt as _;
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let git = bin.join("git");
        std::fs::write(
            &git,
            "#!/bin/sh\nn=$(ls \"$CALLS\" | wc -l)\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$CALLS/$n\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
        let calls = dir.join("calls");
        std::fs::create_dir_all(&calls).unwrap();
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("CALLS", &calls)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(status.success(), "{command}");
        let mut out = Vec::new();
        for n in 0..std::fs::read_dir(&calls).unwrap().count() {
            let bytes = std::fs::read(calls.join(n.to_string())).unwrap();
            let mut args: Vec<Vec<u8>> = bytes.split(|b| *b == 0).map(<[u8]>::to_vec).collect();
            args.pop();
            out.push(args);
        }
        out
    }

    /// The one backticked command in `shown`.
    fn command_in(shown: &str) -> &str {
        let parts: Vec<&str> = shown.split('`').collect();
        assert_eq!(parts.len(), 3, "one command expected in {shown:?}");
        parts[1]
    }

    #[test]
    fn a_printed_command_runs_exactly_as_meant_whatever_the_names() {
        for name in crate::shell::hostile_names() {
            let dir = tempfile::tempdir().unwrap();
            let (branch, base) = (
                crate::shell::quote_bytes(&name),
                crate::shell::quote("main"),
            );
            let message = format!("merge it: `git switch {base} && git merge {branch}` (or not)");
            let shown = terminal_text(&message);
            let calls = git_calls(command_in(&shown), dir.path());
            assert_eq!(
                calls,
                vec![
                    vec![b"switch".to_vec(), b"main".to_vec()],
                    vec![b"merge".to_vec(), name.clone()]
                ],
                "{shown}"
            );
            assert!(!dir.path().join("PWNED").exists(), "{shown}");
        }
    }

    #[test]
    fn an_rm_printed_for_a_hostile_path_removes_that_file_and_nothing_else() {
        for name in crate::shell::hostile_names() {
            if name.is_empty() || name.contains(&b'/') || name == b"." || name == b".." {
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let target = dir.path().join(std::ffi::OsStr::from_bytes(&name));
            std::fs::write(&target, "lock").unwrap();
            std::fs::write(dir.path().join("keep"), "keep").unwrap();
            let message = format!("remove it: `rm {}`", crate::shell::quote_path(&target));
            let shown = terminal_text(&message);
            let status = std::process::Command::new("sh")
                .arg("-c")
                .arg(command_in(&shown))
                .current_dir(dir.path())
                .status()
                .unwrap();
            assert!(status.success(), "{shown}");
            assert!(!target.exists(), "{shown}");
            assert!(dir.path().join("keep").exists(), "{shown}");
            assert!(!dir.path().join("PWNED").exists(), "{shown}");
        }
    }

    #[test]
    fn an_unquoted_name_is_still_printed_as_data() {
        // A call site that forgot `shell::quote`: the output layer quotes the word whole.
        for name in [
            "x$(touch PWNED)",
            "a;touch PWNED",
            "$(touch${IFS}PWNED)",
            "a|touch PWNED",
        ] {
            let dir = tempfile::tempdir().unwrap();
            let shown = terminal_text(&format!("see `git show {name}`"));
            let calls = git_calls(command_in(&shown), dir.path());
            assert!(!dir.path().join("PWNED").exists(), "{shown}");
            assert_eq!(calls.len(), 1, "{shown}");
            assert_eq!(calls[0][0], b"show", "{shown}");
        }
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        let osc52 = "subject \u{1b}]52;c;cm0gLXJmIH4K\u{7} \u{1b}[2J \u{9b}31m";
        let shown = terminal_text(osc52);
        assert!(
            !shown.chars().any(|c| c.is_control() && c != '\n'),
            "{shown:?}"
        );
    }
}

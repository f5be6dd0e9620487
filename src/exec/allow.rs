//! The pre-approval allow-list: configured command prefixes (`cargo test`, `python3 -m
//! py_compile`) that RUN may execute without asking.
//!
//! Matching errs on the side of asking. A command is pre-approved only if its leading words equal
//! the prefix's words and it contains nothing that lets the shell run a second command or touch
//! files through redirection: `cargo test; rm -rf ~` must never ride on a `cargo test` entry.
//! Anything unusual (quotes around the command word, variable assignments in front) simply does
//! not match, and the user is asked.

/// Characters and sequences that chain, substitute or redirect commands in `sh`.
const SHELL_METACHARACTERS: &[&str] = &[";", "&", "|", "`", "$(", ">", "<", "(", ")", "\n", "\r"];

/// Whether `command` is covered by one of `allow_prefixes`: its words start with all the words of
/// a prefix (whole words: `cargo test` covers `cargo test --lib` but not `cargo testx`), and it
/// holds no shell metacharacter that could chain another command (`;`, `&`, `|`, `` ` ``, `$(`,
/// `>`, `<`, parentheses, newlines). Blank prefixes cover nothing.
pub fn is_preapproved(command: &str, allow_prefixes: &[String]) -> bool {
    if SHELL_METACHARACTERS.iter().any(|m| command.contains(m)) {
        return false;
    }
    let words: Vec<&str> = shell_words(command).collect();
    allow_prefixes.iter().any(|prefix| {
        let wanted: Vec<&str> = shell_words(prefix).collect();
        !wanted.is_empty() && words.len() >= wanted.len() && words[..wanted.len()] == wanted[..]
    })
}

/// The allow-list rule an "always" answer to `command` adds: its words, normalised to single
/// spaces. As a prefix it covers the same command and the same command with more arguments
/// (`pytest tests` also covers `pytest tests -x`), never another program or subcommand. `None`
/// when no rule could ever match the command (it chains, substitutes or redirects), so
/// "always" cannot be offered for it.
pub fn rule_for(command: &str) -> Option<String> {
    if SHELL_METACHARACTERS.iter().any(|m| command.contains(m)) {
        return None;
    }
    let words: Vec<&str> = shell_words(command).collect();
    if words.is_empty() {
        return None;
    }
    let rule = words.join(" ");
    is_preapproved(command, std::slice::from_ref(&rule)).then_some(rule)
}

/// Words as `sh` separates them without quoting: on spaces and tabs only (other Unicode spaces
/// are part of a word to `sh`, so they must be to us too).
fn shell_words(s: &str) -> impl Iterator<Item = &str> {
    s.split([' ', '\t']).filter(|w| !w.is_empty())
}

//! The one place text from the repository or the model is made safe for the terminal before
//! plain output prints it: control characters (C0 and C1, ESC included, so no OSC 52 clipboard
//! write or screen clear survives) and bidirectional overrides are neutralised
//! ([`super::layout::clean`]), and every word of a suggested command (a span in backticks)
//! that the shell would not take literally is single-quoted, so a ref name, session id or
//! branch name such as `refs/pai/pending/x$(touch${IFS}pwned)` is pasted as data.

use super::layout::clean;

/// Shell operators a suggested command joins its parts with; kept as they are.
const OPERATORS: &[&str] = &["&&", "||", "|", ";"];

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

/// Each space-separated word of `command` quoted when the shell would not take it literally.
fn quote_command(command: &str) -> String {
    command
        .split(' ')
        .map(|word| {
            if OPERATORS.contains(&word) || is_literal(word) {
                word.to_string()
            } else {
                quote(word)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether the shell reads `word` as itself (no expansion, substitution or operator).
/// `<...>` placeholders (`pai resume <SESSION>`) are written for a reader, not pasted.
fn is_literal(word: &str) -> bool {
    let placeholder = word.len() > 2 && word.starts_with('<') && word.ends_with('>');
    placeholder
        || word.chars().all(|c| {
            c.is_alphanumeric()
                || matches!(
                    c,
                    '_' | '-' | '.' | '/' | ':' | '@' | '%' | '+' | '=' | ',' | '^' | '~'
                )
        })
}

/// `word` in single quotes (a quote inside written as `'\''`).
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

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

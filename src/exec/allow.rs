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
    if chains(command) {
        return false;
    }
    let words: Vec<&str> = shell_words(command).collect();
    allow_prefixes.iter().any(|prefix| {
        let wanted: Vec<&str> = shell_words(prefix).collect();
        if wanted.is_empty() || words.len() < wanted.len() || words[..wanted.len()] != wanted[..] {
            return false;
        }
        // A program that runs its arguments as code is covered only by the exact command:
        // `python3 -c 'print(1)'` must not cover `python3 -c 'print(1)' ...` with more.
        !runs_its_arguments(&wanted) || words.len() == wanted.len()
    })
}

/// Programs that run their arguments as another command, whatever the flags.
const RUNS_ARGUMENTS: &[&str] = &[
    "env", "xargs", "eval", "exec", "nohup", "timeout", "nice", "sudo", "su",
];

/// Interpreters and the flags that make them run their next argument as code.
const CODE_FLAGS: &[(&str, &[&str])] = &[
    ("sh", &["-c"]),
    ("bash", &["-c"]),
    ("zsh", &["-c"]),
    ("dash", &["-c"]),
    ("python", &["-c"]),
    ("node", &["-e", "-p", "--eval", "--print"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("php", &["-r"]),
    ("find", &["-exec", "-execdir", "-ok", "-okdir"]),
];

/// Whether the words run their arguments as code or as another command (`python3 -c ...`,
/// `sh -c ...`, `find -exec`, `env ...`): then a rule covers only the exact command.
fn runs_its_arguments(words: &[&str]) -> bool {
    let Some(first) = words.first() else {
        return false;
    };
    let program = first.rsplit('/').next().unwrap_or(first);
    // `python3`, `python3.12`: the interpreter's name without its version.
    let family = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    RUNS_ARGUMENTS.contains(&program)
        || CODE_FLAGS
            .iter()
            .any(|(p, flags)| *p == family && words[1..].iter().any(|w| flags.contains(w)))
}

/// Whether `command` could chain, substitute or redirect: one of [`SHELL_METACHARACTERS`]
/// outside quotes. Inside single quotes nothing is special; inside double quotes `$(` and
/// `` ` `` still are. A backslash outside single quotes, an unterminated quote or a
/// line break anywhere counts as chaining: unusual means ask.
fn chains(command: &str) -> bool {
    if command.contains(['\n', '\r', '\\']) {
        return true;
    }
    let mut quote: Option<char> = None;
    let mut rest = command;
    while let Some(c) = rest.chars().next() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (Some('"'), '`') => return true,
            (Some('"'), '$') if rest.starts_with("$(") => return true,
            (Some(_), _) => {}
            (None, _) => {
                if SHELL_METACHARACTERS.iter().any(|m| rest.starts_with(m)) {
                    return true;
                }
            }
        }
        rest = &rest[c.len_utf8()..];
    }
    quote.is_some()
}

/// The allow-list rule an "always" answer to `command` adds: its words, normalised to single
/// spaces. As a prefix it covers the same command and the same command with more arguments
/// (`pytest tests` also covers `pytest tests -x`), never another program or subcommand. `None`
/// when no rule could ever match the command (it chains, substitutes or redirects), so
/// "always" cannot be offered for it.
pub fn rule_for(command: &str) -> Option<String> {
    if chains(command) {
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

/// Programs that only show something (files, counts, text) and so check nothing.
const LOOKERS: &[&str] = &[
    "ls", "wc", "cat", "echo", "printf", "pwd", "head", "tail", "tree", "du", "df", "date",
    "whoami", "which", "file", "stat", "grep", "rg", "find", "sort", "uniq", "true", "env",
    "printenv", "uname", "id",
];

/// Whether every command of `command` (a pipeline or list) only looks at things
/// (`ls | wc -l`), so its success verifies nothing about the work.
pub fn only_looks(command: &str) -> bool {
    let parts: Vec<&str> = command
        .split(['|', ';', '&', '\n'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect();
    !parts.is_empty()
        && parts.iter().all(|part| {
            shell_words(part).next().is_some_and(|w| {
                let program = w.rsplit('/').next().unwrap_or(w);
                LOOKERS.contains(&program)
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_semicolon_is_not_chaining_and_the_rule_is_the_exact_command() {
        let cmd = "python3 -c 'import sys; print(sys.version)'";
        let rule = rule_for(cmd).unwrap();
        assert!(is_preapproved(cmd, std::slice::from_ref(&rule)));
        // A program that runs its arguments: nothing more rides on the rule.
        assert!(!is_preapproved(
            &format!("{cmd} extra"),
            std::slice::from_ref(&rule)
        ));
        for chained in [
            "python3 -c 'x'; rm -rf ~",
            "echo \"$(id)\"",
            "echo \"`id`\"",
            "echo 'unterminated",
            "cat a > b",
        ] {
            assert_eq!(rule_for(chained), None, "{chained}");
        }
        assert!(rule_for("echo \"a; b\"").is_some());
    }

    #[test]
    fn listing_and_counting_check_nothing() {
        assert!(only_looks("ls | wc -l"));
        assert!(only_looks("cat notes.txt"));
        assert!(!only_looks("python3 -m py_compile calc.py"));
        assert!(!only_looks("ls && cargo test"));
        assert!(!only_looks(""));
    }
}

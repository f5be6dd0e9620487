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

/// Programs that run another program, or code, named in their arguments (`find -exec`,
/// `xargs sh`, `env cmd`, `timeout 5 cmd`, `sh -c`, `awk 'BEGIN{system(...)}'`). A prefix rule
/// for one of them would cover any command at all, so a rule for them is exact (see
/// [`EXACT`]), and a configured prefix naming one covers only itself.
const EXECUTES_ARGUMENTS: &[&str] = &[
    "find",
    "xargs",
    "env",
    "nice",
    "nohup",
    "timeout",
    "time",
    "stdbuf",
    "setsid",
    "ionice",
    "taskset",
    "chroot",
    "unshare",
    "nsenter",
    "flock",
    "watch",
    "parallel",
    "strace",
    "ltrace",
    "sudo",
    "doas",
    "su",
    "runuser",
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "eval",
    "exec",
    "command",
    "builtin",
    "busybox",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "perl",
    "ruby",
    "node",
    "deno",
    "bun",
    "php",
    "lua",
    "tclsh",
    "script",
    "ssh",
    "docker",
    "podman",
    "kubectl",
    "npx",
    "systemd-run",
    "tmux",
    "screen",
    "vim",
    "vi",
    "nvim",
    "emacs",
    "less",
    "man",
    "tar",
    "rsync",
    "zip",
];

/// Options that make an otherwise harmless program run code or write where it is told
/// (`git -c core.fsmonitor=...`, `python3 -c`, `--output`, `--exec`): a command carrying one
/// beyond its rule is not covered, and a rule saved for it is exact.
const EXECUTING_OPTIONS: &[&str] = &[
    "-exec",
    "-execdir",
    "-ok",
    "-okdir",
    "--exec",
    "--eval",
    "--output",
    "--to-command",
    "--use-compress-program",
    "--checkpoint-action",
    "--rsh",
    "--upload-pack",
    "--receive-pack",
    "--config-env",
    "--exec-path",
    "--init-file",
    "--rcfile",
];

/// Programs for which `-c` (and `-e`) means "run this code".
const CODE_OPTION_PROGRAMS: &[&str] = &["git", "python", "python2", "python3", "pypy", "pypy3"];

/// The prefix of an exact rule: `=find . -type f` covers that command and nothing else.
pub const EXACT: &str = "=";

/// Whether any word of `words` turns the command into one that runs code its arguments name.
fn executes_arguments(program: &str, words: &[&str]) -> bool {
    let base = program.rsplit('/').next().unwrap_or(program);
    let code_option = CODE_OPTION_PROGRAMS.contains(&base)
        || base.starts_with("python3.")
        || base.starts_with("python2.");
    words.iter().any(|w| {
        let name = w.split('=').next().unwrap_or(w);
        EXECUTING_OPTIONS.contains(&name)
            || (code_option && (name == "-c" || name == "-e" || w.starts_with("-c")))
    })
}

/// Whether `program` runs what its arguments name ([`EXECUTES_ARGUMENTS`]).
fn runs_its_arguments(program: &str) -> bool {
    let base = program.rsplit('/').next().unwrap_or(program);
    EXECUTES_ARGUMENTS.contains(&base)
}

/// Whether `command` is covered by one of `allow_prefixes`: its words start with all the words of
/// a prefix (whole words: `cargo test` covers `cargo test --lib` but not `cargo testx`), and it
/// holds no shell metacharacter that could chain another command (`;`, `&`, `|`, `` ` ``, `$(`,
/// `>`, `<`, parentheses, newlines). Blank prefixes cover nothing. An exact rule (`=...`), or a
/// prefix whose program runs its arguments (`find`, `xargs`, `sh`, ...), covers only the same
/// words; words beyond a prefix that make the program run code (`-exec`, `--output`,
/// `git -c`) are never covered.
pub fn is_preapproved(command: &str, allow_prefixes: &[String]) -> bool {
    if chains(command) {
        return false;
    }
    let words: Vec<&str> = shell_words(command).collect();
    allow_prefixes.iter().any(|prefix| {
        let (exact, prefix) = match prefix.trim_start().strip_prefix(EXACT) {
            Some(rest) => (true, rest),
            None => (false, prefix.as_str()),
        };
        let wanted: Vec<&str> = shell_words(prefix).collect();
        if wanted.is_empty() || words.len() < wanted.len() || words[..wanted.len()] != wanted[..] {
            return false;
        }
        let extra = &words[wanted.len()..];
        if extra.is_empty() {
            return true;
        }
        !exact && !runs_its_arguments(wanted[0]) && !executes_arguments(wanted[0], extra)
    })
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
/// (`pytest tests` also covers `pytest tests -x`), never another program or subcommand. For a
/// program that runs its arguments (`find . -type f`, `xargs`, `env`, `timeout`, `sh`) or a
/// command with an option that runs code (`python3 -c`, `git -c`, `-exec`, `--output`), the
/// rule is exact (`=find . -type f`): `-exec sh -c ...` appended is another command. `None`
/// when no rule could ever match the command (it chains, substitutes or redirects), so
/// "always" cannot be offered for it.
pub fn rule_for(command: &str) -> Option<String> {
    if chains(command) {
        return None;
    }
    let words: Vec<&str> = shell_words(command).collect();
    let program = *words.first()?;
    let mut rule = words.join(" ");
    if runs_its_arguments(program) || executes_arguments(program, &words[1..]) {
        rule.insert_str(0, EXACT);
    }
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
    fn rules_for_programs_that_run_their_arguments_are_exact() {
        for (command, rule) in [
            ("find . -type f", "=find . -type f"),
            ("xargs -n1 echo", "=xargs -n1 echo"),
            ("env FOO=1 make", "=env FOO=1 make"),
            ("timeout 5 cargo test", "=timeout 5 cargo test"),
            ("python3 -c pass", "=python3 -c pass"),
            ("git -c core.pager=cat log", "=git -c core.pager=cat log"),
            ("git log --output=x", "=git log --output=x"),
            ("cargo test", "cargo test"),
            (
                "python3 -m py_compile app.py",
                "python3 -m py_compile app.py",
            ),
        ] {
            assert_eq!(rule_for(command).as_deref(), Some(rule), "{command}");
        }
        let find = [rule_for("find . -type f").unwrap()];
        assert!(is_preapproved("find . -type f", &find));
        assert!(!is_preapproved("find . -type f -exec sh -c id {} +", &find));
        assert!(!is_preapproved("find . -type f -delete", &find));
    }

    #[test]
    fn configured_prefixes_do_not_stretch_to_running_code() {
        let allow = [
            "find .".to_string(),
            "git status".to_string(),
            "cargo".to_string(),
        ];
        assert!(is_preapproved("find .", &allow));
        assert!(!is_preapproved("find . -name x", &allow));
        assert!(!is_preapproved(
            "git status --output=.git/hooks/pre-commit",
            &allow
        ));
        assert!(is_preapproved("git status --short", &allow));
        assert!(is_preapproved("cargo test --lib", &allow));
        assert!(!is_preapproved("cargo test --config-env x", &allow));
    }

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

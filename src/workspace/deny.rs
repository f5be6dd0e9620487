//! The deny-list (SPEC section 5): path segments pai never reads, writes, lists or commits.
//!
//! A segment is compared through a *skeleton*: ASCII case folded, fullwidth and mathematical
//! letter forms and the common Cyrillic/Greek lookalikes mapped to Latin, combining marks
//! dropped, and trailing dots and spaces removed (Windows ignores them). So `.GIT`, `.gіt`
//! (Cyrillic і), `．git` and `.git.` are all treated as `.git`. Invisible characters never get
//! this far: the gate refuses any path containing one.

use std::borrow::Cow;

/// Why a segment is denied; decides the wording of the refusal and whether a directory holding
/// it may still be removed or moved as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DenyClass {
    /// Secrets, key material, git internals, pai's own files: never touched, not even as part
    /// of removing or moving a parent directory.
    Protected(&'static str),
    /// Environments, caches and editor folders: never read, written or listed, but removed or
    /// moved along with a parent directory the user chose to remove or move.
    Noise(&'static str),
}

impl DenyClass {
    /// The words shown after "is a protected path".
    pub(crate) fn reason(self) -> &'static str {
        match self {
            DenyClass::Protected(r) | DenyClass::Noise(r) => r,
        }
    }
}

/// Prefix of pai's temporary files (see `atomic.rs`); reserved, so nobody else may use it.
pub(crate) const TEMP_PREFIX: &str = ".pai-tmp-";

/// Whether `c` is invisible or reorders text (zero-width, bidi controls, soft hyphen, ...).
/// Paths containing one are refused outright: they exist to deceive a reader.
pub(crate) fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFFB}' | '\u{E0000}'..='\u{E0FFF}'
        | '\u{1D173}'..='\u{1D17A}')
}

/// Map one character to the ASCII character it imitates, `None` to drop it (combining marks),
/// or itself when it imitates nothing we know of.
fn fold(c: char) -> Option<char> {
    let u = c as u32;
    let mapped = match c {
        'A'..='Z' => c.to_ascii_lowercase(),
        '\u{FF01}'..='\u{FF5E}' => {
            // Fullwidth ASCII block, a fixed offset from ASCII.
            return char::from_u32(u - 0xFEE0).map(|a| a.to_ascii_lowercase());
        }
        '\u{0300}'..='\u{036F}'
        | '\u{1AB0}'..='\u{1AFF}'
        | '\u{1DC0}'..='\u{1DFF}'
        | '\u{20D0}'..='\u{20FF}'
        | '\u{FE20}'..='\u{FE2F}' => return None,
        // A byte that is not UTF-8 (spelled by `rawname`): `.env\xE9` must stay `.env`.
        c if crate::rawname::is_escape(c) => return None,
        '\u{24B6}'..='\u{24CF}' => return char::from_u32(u - 0x24B6 + 'a' as u32),
        '\u{24D0}'..='\u{24E9}' => return char::from_u32(u - 0x24D0 + 'a' as u32),
        '\u{1D400}'..='\u{1D6A3}' => {
            // Mathematical alphanumeric letters: 13 styles of A-Z then a-z.
            return char::from_u32('a' as u32 + (u - 0x1D400) % 52 % 26);
        }
        '\u{1D7CE}'..='\u{1D7FF}' => return char::from_u32('0' as u32 + (u - 0x1D7CE) % 10),
        // Dots.
        '\u{2024}' | '\u{FE52}' | '\u{0701}' | '\u{0702}' | '\u{A60E}' | '\u{10A50}'
        | '\u{2E31}' | '\u{00B7}' | '\u{02D9}' => '.',
        // Underscores and hyphens that could stand in for '_' in __pycache__ or node_modules.
        '\u{FE4D}'..='\u{FE4F}' | '\u{2017}' | '\u{02CD}' => '_',
        // Cyrillic.
        'а' | 'А' => 'a',
        'в' | 'В' => 'b',
        'с' | 'С' | 'ϲ' | 'Ϲ' => 'c',
        'ԁ' => 'd',
        'е' | 'Е' | 'ё' | 'Ё' => 'e',
        'һ' | 'Һ' | 'н' | 'Н' => 'h',
        'і' | 'І' | 'ї' | 'Ї' | 'ı' | 'ɪ' | 'Ӏ' | 'ӏ' | 'ι' | 'Ι' | 'ɩ' => 'i',
        'ј' | 'Ј' => 'j',
        'к' | 'К' | 'κ' | 'Κ' => 'k',
        'м' | 'М' | 'Μ' => 'm',
        'п' | 'η' | 'ո' | 'Ν' => 'n',
        'о' | 'О' | 'ο' | 'Ο' | 'σ' | 'օ' => 'o',
        'р' | 'Р' | 'ρ' | 'Ρ' => 'p',
        'ԛ' => 'q',
        'г' | 'ɼ' => 'r',
        'ѕ' | 'Ѕ' => 's',
        'т' | 'Т' | 'τ' | 'Τ' | 'ᴛ' => 't',
        'υ' | 'ս' | 'ц' => 'u',
        'ν' | 'ѵ' | 'Ѵ' => 'v',
        'ԝ' | 'ѡ' | 'ω' => 'w',
        'х' | 'Х' | 'χ' | 'Χ' => 'x',
        'у' | 'У' | 'γ' | 'Υ' => 'y',
        'Ζ' => 'z',
        'ɡ' | 'ɢ' | 'ց' | 'ǥ' => 'g',
        'ℓ' | 'ǀ' | '│' => 'l',
        'α' | 'Α' => 'a',
        'Β' | 'β' => 'b',
        'ε' | 'Ε' => 'e',
        'Η' => 'h',
        _ => c,
    };
    Some(mapped)
}

/// The skeleton of a segment (see the module comment). Borrowed when the segment is already
/// lower-case ASCII without trailing dots or spaces, which keeps the gate allocation-free for
/// ordinary names.
pub(crate) fn skeleton(seg: &str) -> Cow<'_, str> {
    let plain =
        seg.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) && !seg.ends_with(['.', ' ']);
    if plain {
        return Cow::Borrowed(seg);
    }
    let mut out: String = seg.chars().filter_map(fold).collect();
    let trimmed = out.trim_end_matches(['.', ' ']).len();
    // "." and ".." keep their meaning; everything else loses trailing dots and spaces.
    if trimmed > 0 {
        out.truncate(trimmed);
    }
    Cow::Owned(out)
}

/// The built-in deny rules of SPEC section 5, on a skeleton, extended to the backups editors
/// and tools leave of a protected file (`.env~`, `id_rsa.bak`, vim's `..env.swp`, emacs's
/// `#.env#`): a backup holds the same secret.
fn builtin(skel: &str) -> Option<DenyClass> {
    if let Some(class) = builtin_exact(skel) {
        return Some(class);
    }
    let original = backup_of(skel)?;
    match builtin_exact(original) {
        Some(class @ DenyClass::Protected(_)) => Some(class),
        _ => None,
    }
}

/// The name a backup or swap file named `skel` keeps a copy of, if it looks like one.
fn backup_of(skel: &str) -> Option<&str> {
    if let Some(inner) = skel.strip_prefix('#').and_then(|s| s.strip_suffix('#')) {
        return Some(inner);
    }
    if let Some(name) = skel.strip_suffix('~') {
        return Some(name.trim_end_matches('~'));
    }
    for suffix in [".bak", ".orig", ".old", ".save", ".tmp"] {
        if let Some(name) = skel.strip_suffix(suffix) {
            return Some(name);
        }
    }
    // vim: `.name.swp` (then `.swo`, `.swn`, ...).
    let swap = [".swp", ".swo", ".swn", ".swx"];
    let name = swap.iter().find_map(|s| skel.strip_suffix(s))?;
    Some(name.strip_prefix('.').unwrap_or(name))
}

/// The built-in rules on the name itself.
fn builtin_exact(skel: &str) -> Option<DenyClass> {
    const GIT: DenyClass = DenyClass::Protected("(git internals)");
    const SECRETS: DenyClass = DenyClass::Protected("(secrets)");
    const KEYS: DenyClass = DenyClass::Protected("(key material or credentials)");
    match skel {
        ".git" => return Some(GIT),
        crate::layout::STATE_DIR => {
            return Some(DenyClass::Protected("(pai's session history)"));
        }
        "venv" | ".venv" => return Some(DenyClass::Noise("(virtual environment)")),
        "__pycache__" => return Some(DenyClass::Noise("(bytecode cache)")),
        "node_modules" => return Some(DenyClass::Noise("(installed dependencies)")),
        ".idea" | ".vscode" => return Some(DenyClass::Noise("(editor settings)")),
        ".netrc" | ".npmrc" | ".pypirc" | ".git-credentials" | ".pgpass" | "credentials.json"
        | ".aws" | ".ssh" | ".gnupg" | ".kube" | ".docker" => return Some(KEYS),
        _ => {}
    }
    // Every `.env*` name: `.env`, `.envrc`, `.env.production`, cookiecutter-django's `.envs/`.
    if skel.starts_with(".env") {
        return Some(SECRETS);
    }
    let key_suffix = [".pem", ".key", ".p12", ".pfx", ".jks", ".keystore"]
        .iter()
        .any(|s| skel.ends_with(s));
    let key_prefix = ["id_rsa", "id_ed25519", "id_ecdsa", "id_dsa"]
        .iter()
        .any(|p| skel.starts_with(p));
    if key_suffix || key_prefix {
        return Some(KEYS);
    }
    if skel.starts_with(TEMP_PREFIX) {
        return Some(DenyClass::Protected("(reserved for pai's temporary files)"));
    }
    None
}

/// One extra deny pattern from the configuration.
#[derive(Debug, Clone)]
enum Extra {
    /// No `/`: matched against every segment.
    Segment(String),
    /// Contains `/`: matched against the relative path and each of its ancestors.
    Path(String),
}

/// The deny-list: the built-in rules plus configured extras (which can only add).
#[derive(Debug, Clone, Default)]
pub(crate) struct DenyList {
    extra: Vec<Extra>,
    /// The project is the user's home directory: the files that run when a shell starts or
    /// the user logs in are protected too (the startup paths of [`crate::layout::RUNS_LATER`]).
    home: bool,
    /// Paths the repository's own configuration makes run later (folded, `/`-separated):
    /// `core.hooksPath`, included git config files, files an MCP server's command names.
    later: Vec<String>,
}

impl DenyList {
    /// Build the list; `Err` names an entry that tries to remove a rule or is unusable.
    pub(crate) fn new(extra: &[String]) -> Result<DenyList, String> {
        let mut out = Vec::new();
        for raw in extra {
            let p = raw.trim();
            if p.is_empty() {
                continue;
            }
            if p.starts_with('!') {
                return Err(format!(
                    "`{p}`: the deny-list can only be extended; '!' exceptions are not allowed"
                ));
            }
            let p = p.trim_start_matches("./").trim_end_matches('/');
            let folded: String = p
                .split('/')
                .map(|s| skeleton(s).into_owned())
                .collect::<Vec<_>>()
                .join("/");
            if folded.is_empty() {
                return Err(format!("`{raw}` does not name anything"));
            }
            out.push(if folded.contains('/') {
                Extra::Path(folded.trim_start_matches('/').to_string())
            } else {
                Extra::Segment(folded)
            });
        }
        Ok(DenyList {
            extra: out,
            home: false,
            later: Vec::new(),
        })
    }

    /// The same list for a project that is the user's home directory.
    pub(crate) fn at_home(mut self) -> Self {
        self.home = true;
        self
    }

    /// The same list protecting `paths` too: what the repository's configuration makes run
    /// later ([`crate::layout::configured_runs_later`]).
    pub(crate) fn with_later(mut self, paths: impl IntoIterator<Item = String>) -> Self {
        self.later = paths
            .into_iter()
            .map(|p| {
                p.split('/')
                    .map(|s| skeleton(s).into_owned())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .collect();
        self
    }

    /// A configured runs-later path that `rel` (folded) is or lies under.
    fn configured_later(&self, folded: &str) -> Option<DenyClass> {
        let hit = self.later.iter().any(|p| {
            folded == p
                || folded
                    .strip_prefix(p.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        });
        hit.then_some(DenyClass::Protected(
            "(the repository's configuration runs it later: core.hooksPath, an included git config or an MCP server)",
        ))
    }

    /// A home-directory startup path that `rel` is or lies under.
    fn home_startup(&self, rel: &str) -> Option<DenyClass> {
        if !self.home {
            return None;
        }
        let folded: Vec<String> = rel
            .split('/')
            .take(2)
            .map(|s| skeleton(s).into_owned())
            .collect();
        // Shell and login startup files, git's user configuration, programs on the user's
        // `PATH`, session autostart: what runs when the user logs in.
        let startup = crate::layout::RUNS_LATER.iter().filter(|r| r.startup);
        let hit = startup.map(|r| r.path).any(|p| {
            let want: Vec<&str> = p.split('/').collect();
            want.len() <= folded.len() && want.iter().zip(&folded).all(|(w, f)| w == f)
        });
        hit.then_some(DenyClass::Protected(
            "(it runs when you start a shell or log in, and the project is your home directory)",
        ))
    }

    /// The class of a single segment, if denied.
    pub(crate) fn segment(&self, seg: &str) -> Option<DenyClass> {
        let skel = skeleton(seg);
        if let Some(c) = builtin(&skel) {
            return Some(c);
        }
        for e in &self.extra {
            if let Extra::Segment(p) = e
                && glob_match(p.as_bytes(), skel.as_bytes())
            {
                return Some(DenyClass::Protected("(denied by configuration)"));
            }
        }
        None
    }

    /// Whether any configured pattern spans several segments (only then is the whole-path
    /// check needed).
    pub(crate) fn has_path_patterns(&self) -> bool {
        self.home
            || !self.later.is_empty()
            || self.extra.iter().any(|e| matches!(e, Extra::Path(_)))
    }

    /// The class of a relative `/`-separated path: the first denied segment, pai's own
    /// configuration directory (`.config/pai-code`, for a project at `$HOME`), or a
    /// configured multi-segment pattern matching the path or one of its ancestors.
    pub(crate) fn path(&self, rel: &str) -> Option<DenyClass> {
        if let Some(c) = self.home_startup(rel) {
            return Some(c);
        }
        let mut previous = Cow::Borrowed("");
        for seg in rel.split('/') {
            if let Some(c) = self.segment(seg) {
                return Some(c);
            }
            let skel = skeleton(seg);
            if previous == ".config" && skel == "pai-code" {
                return Some(DenyClass::Protected("(pai's own configuration)"));
            }
            previous = skel;
        }
        if self.has_path_patterns() {
            let folded: String = rel
                .split('/')
                .map(|s| skeleton(s).into_owned())
                .collect::<Vec<_>>()
                .join("/");
            if let Some(c) = self.configured_later(&folded) {
                return Some(c);
            }
            return self.path_patterns(&folded);
        }
        None
    }

    /// Multi-segment patterns only, on an already folded path.
    fn path_patterns(&self, folded: &str) -> Option<DenyClass> {
        let mut ends: Vec<usize> = folded.match_indices('/').map(|(i, _)| i).collect();
        ends.push(folded.len());
        for e in &self.extra {
            if let Extra::Path(p) = e {
                // `dir/**` denies the directory itself too, not only what is inside it.
                let dir = p.strip_suffix("/**");
                for &end in &ends {
                    let prefix = &folded.as_bytes()[..end];
                    if glob_match(p.as_bytes(), prefix)
                        || dir.is_some_and(|d| glob_match(d.as_bytes(), prefix))
                    {
                        return Some(DenyClass::Protected("(denied by configuration)"));
                    }
                }
            }
        }
        None
    }
}

impl DenyList {
    /// The first word of a shell command that names a protected path (`cat .env`,
    /// `cp .git/config x`, `cat ~/.config/pai-code/credentials.json`), with why. A best-effort
    /// screen of what a RUN command mentions, so a secret is not sent to the model as command
    /// output; confinement is the guarantee. Environments and caches (`.venv`,
    /// `node_modules`) are not refused: commands legitimately build them.
    pub(crate) fn protected_in_command(&self, command: &str) -> Option<(String, &'static str)> {
        let words = command.split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    ';' | '|' | '&' | '<' | '>' | '(' | ')' | '\'' | '"' | '=' | '`' | ','
                )
        });
        for word in words.filter(|w| !w.is_empty()) {
            let path = word.trim_start_matches("~/").trim_start_matches('/');
            if let Some(DenyClass::Protected(why)) = self.path(path) {
                return Some((word.to_string(), why));
            }
        }
        None
    }
}

/// Glob match: `*` matches within a segment, `**` across segments, `?` one character.
fn glob_match(pat: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0usize, 0usize);
    // Backtracking points for the last `*` / `**` seen.
    let mut star: Option<(usize, usize, bool)> = None;
    while t < text.len() {
        if p < pat.len() && pat[p] == b'*' {
            let double = pat.get(p + 1) == Some(&b'*');
            p += if double { 2 } else { 1 };
            if double && pat.get(p) == Some(&b'/') {
                // `**/` also matches zero segments.
                if glob_match(&pat[p + 1..], &text[t..]) {
                    return true;
                }
            }
            star = Some((p, t, double));
            continue;
        }
        if p < pat.len() && (pat[p] == b'?' && text[t] != b'/' || pat[p] == text[t]) {
            p += 1;
            t += 1;
            continue;
        }
        match star {
            Some((sp, st, double)) if double || text[st] != b'/' => {
                star = Some((sp, st + 1, double));
                p = sp;
                t = st + 1;
            }
            _ => return false,
        }
    }
    while p < pat.len() && pat[p] == b'*' {
        p += 1;
    }
    p == pat.len()
}

#[cfg(test)]
mod tests {

    #[test]
    fn startup_files_are_protected_only_when_the_project_is_home() {
        let plain = DenyList::new(&[]).unwrap();
        let home = DenyList::new(&[]).unwrap().at_home();
        for p in [
            ".bashrc",
            ".profile",
            ".config/git/config",
            ".local/bin/ls",
            ".gitconfig",
        ] {
            assert!(plain.path(p).is_none(), "{p} outside home");
            assert!(
                matches!(home.path(p), Some(DenyClass::Protected(_))),
                "{p} at home"
            );
        }
        assert!(home.path("src/.bashrc").is_none());
        assert!(home.path(".config/other/x").is_none());
        assert!(home.protected_in_command("echo x >> ~/.bashrc").is_some());
    }

    use super::*;

    #[test]
    fn lookalikes_fold_to_ascii() {
        for s in [
            ".GIT",
            ".gіt",
            ".git.",
            ".git ",
            "．git",
            ".ɡit",
            ".g\u{0301}it",
            ".𝐠𝐢𝐭",
            ".ⓖⓘⓣ",
        ] {
            assert_eq!(skeleton(s), ".git", "{s:?}");
        }
        assert_eq!(skeleton("src"), "src");
        assert!(matches!(skeleton("src"), Cow::Borrowed(_)));
        assert_eq!(skeleton("."), ".");
        assert_eq!(skeleton(".."), "..");
    }

    #[test]
    fn builtin_rules() {
        let d = DenyList::default();
        for s in [
            ".git",
            ".env",
            ".env.local",
            "venv",
            ".venv",
            "__pycache__",
            ".pai_history",
            ".idea",
            ".vscode",
            "node_modules",
            "server.pem",
            "id_rsa",
            "id_rsa.pub",
            "id_ed25519",
            ".netrc",
            ".npmrc",
            ".pypirc",
            ".pai-tmp-1-2",
        ] {
            assert!(d.segment(s).is_some(), "{s}");
        }
        for s in [
            ".gitignore",
            ".github",
            "env",
            "environment.py",
            "src",
            "venvs",
            "pem",
        ] {
            assert!(d.segment(s).is_none(), "{s}");
        }
    }

    #[test]
    fn extra_patterns_extend_only() {
        let d =
            DenyList::new(&["secrets".into(), "*.key".into(), "config/prod/**".into()]).unwrap();
        assert!(d.segment("secrets").is_some());
        assert!(d.segment("server.KEY").is_some());
        assert!(d.path("a/secrets/b").is_some());
        assert!(d.path("config/prod/db.yml").is_some());
        assert!(d.path("config/prod").is_some());
        assert!(d.path("config/dev/db.yml").is_none());
        assert!(d.path("src/.git/x").is_some());
        assert!(DenyList::new(&["!.env".into()]).is_err());
    }

    #[test]
    fn globs() {
        assert!(glob_match(b"*.key", b"a.key"));
        assert!(!glob_match(b"*.key", b"a/b.key"));
        assert!(glob_match(b"**/b.key", b"a/b.key"));
        assert!(glob_match(b"**/b.key", b"b.key"));
        assert!(glob_match(b"a/**", b"a/x/y"));
        assert!(glob_match(b"a?c", b"abc"));
        assert!(!glob_match(b"a?c", b"a/c"));
    }
}

#[cfg(test)]
mod command_tests {
    use super::*;

    #[test]
    fn commands_naming_secrets_are_caught_and_ordinary_ones_are_not() {
        let d = DenyList::default();
        for bad in [
            "cat .env",
            "cp .git/config /tmp/x",
            "cat ~/.config/pai-code/credentials.json",
            "grep -r token .aws/credentials",
            "cat .envrc",
            "cat server.key",
            "tar czf x.tgz .ssh",
            "echo x >.git/hooks/pre-commit",
            "python3 -c 'open(\".env.production\").read()'",
            "cat .pai_history/session.lock",
        ] {
            assert!(d.protected_in_command(bad).is_some(), "{bad}");
        }
        for ok in [
            "python3 -m venv .venv",
            "cat .gitignore",
            "git status",
            "npm install",
            "python3 -m py_compile app.py",
            "ls -la",
            "cargo test",
        ] {
            assert_eq!(d.protected_in_command(ok), None, "{ok}");
        }
    }

    #[test]
    fn every_env_name_backups_and_non_utf8_spellings_are_denied() {
        let d = DenyList::default();
        let e9 = crate::rawname::encode(b".env\xE9").into_owned();
        let git_ff = crate::rawname::encode(b".git\xFF").into_owned();
        for p in [
            ".env~",
            ".env~~",
            ".env.bak",
            ".envs/.production/.django",
            ".environment",
            e9.as_str(),
            git_ff.as_str(),
            "..env.swp",
            ".id_rsa.swo",
            "#.env#",
            "server.key~",
            "credentials.json.bak",
            ".netrc.orig",
            ".pgpass~",
        ] {
            assert!(d.path(p).is_some(), "{p:?}");
        }
        assert!(d.protected_in_command("cat .env~").is_some());
        assert!(
            d.protected_in_command("cat .envs/.production/.django")
                .is_some()
        );
        for p in [
            "app.py~",
            "notes.txt.bak",
            ".main.rs.swp",
            "env.bak",
            "environment.py",
            "config.old",
            ".gitignore~",
        ] {
            assert!(d.path(p).is_none(), "{p:?}");
        }
    }

    #[test]
    fn new_secret_names_are_denied() {
        let d = DenyList::default();
        for p in [
            ".envrc",
            ".env_local",
            ".env-production",
            "id_ecdsa",
            "id_dsa.pub",
            "tls.key",
            "cert.p12",
            "cert.pfx",
            "credentials.json",
            ".aws/credentials",
            ".git-credentials",
            ".pgpass",
            ".docker/config.json",
            ".kube/config",
            ".config/pai-code/config.toml",
        ] {
            assert!(d.path(p).is_some(), "{p}");
        }
        for p in [
            "docker/config.json",
            "src/keyboard.rs",
            "config/app.json",
            "environment.py",
        ] {
            assert!(d.path(p).is_none(), "{p}");
        }
    }
}

//! The layering of `src/`, checked from the source: every module imports only modules of a
//! lower layer, the files of a module import each other without a circle, the frontends reach
//! the agent only through its protocol, and the agent reaches files only through the
//! workspace. docs/ARCHITECTURE.md explains the layers; this test keeps them true.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Top-level modules and their layers, lowest first. A module may import any module of a
/// lower layer, never one of its own layer or above.
const LAYERS: &[(&str, u32)] = &[
    ("error", 0),
    ("fence", 0),
    ("hard_stop", 1),
    ("heap", 0),
    ("layout", 0),
    ("private_file", 0),
    ("procfs", 0),
    ("rawname", 0),
    ("shell", 0),
    ("llm", 1),
    ("workspace", 1),
    ("exec", 1),
    ("config", 2),
    ("history", 2),
    ("map", 2),
    ("mcp", 3),
    ("agent", 4),
    ("ui", 5),
    ("cli", 6),
];

fn layer(module: &str) -> Option<u32> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// Every `.rs` file under `src/`, with its text up to its unit tests (tests may reach
/// anywhere).
fn sources() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for e in fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = fs::read_to_string(&p).unwrap();
                let code = match text.find("#[cfg(test)]\nmod tests") {
                    Some(i) => text[..i].to_string(),
                    None => text,
                };
                out.push((p, code));
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    walk(&src, &mut out);
    out.sort();
    out
}

/// The path of a source file below `src/`, as module segments (`["history", "scope"]`).
fn module_of(path: &Path) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let rel = path.strip_prefix(&src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts
}

/// Code without comments, so a path named in a doc comment is not taken for an import.
fn code_only(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::a::b` path the code names, as segments.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        if i > 0 {
            let before = code.as_bytes()[i - 1];
            if before.is_ascii_alphanumeric() || before == b'_' || before == b'$' {
                continue;
            }
        }
        let rest = &code[i + "crate::".len()..];
        // Segments up to the first that is not a plain identifier followed by `::`.
        let mut segs: Vec<String> = Vec::new();
        for piece in rest.split("::") {
            let ident: String = piece
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if ident.is_empty() {
                break;
            }
            let whole = ident.len() == piece.len();
            segs.push(ident);
            if !whole {
                break;
            }
        }
        if !segs.is_empty() {
            out.push(segs);
        }
    }
    out
}

#[test]
fn modules_import_only_lower_layers() {
    let mut bad = Vec::new();
    for (path, text) in sources() {
        let module = module_of(&path);
        let Some(top) = module.first() else { continue };
        // The crate's roots, and its build script (not a module).
        if matches!(top.as_str(), "lib" | "main" | "build") {
            continue;
        }
        let Some(own) = layer(top) else {
            bad.push(format!("{top} is not in LAYERS: give it a layer"));
            continue;
        };
        for target in crate_paths(&code_only(&text)) {
            let to = &target[0];
            if to == top {
                continue;
            }
            match layer(to) {
                Some(l) if l < own => {}
                Some(_) => bad.push(format!(
                    "{}: {top} imports {to}, which is not below it",
                    path.display()
                )),
                // `crate::Result` and other items of lib.rs.
                None => {}
            }
        }
    }
    assert!(
        bad.is_empty(),
        "upward or sideways imports:\n{}",
        bad.join("\n")
    );
}

#[test]
fn frontends_reach_the_agent_only_through_its_protocol() {
    let mut bad = Vec::new();
    for (path, text) in sources() {
        let module = module_of(&path);
        if module.first().map(String::as_str) != Some("ui") {
            continue;
        }
        for target in crate_paths(&code_only(&text)) {
            if target[0] == "agent" && target.get(1).map(String::as_str) != Some("protocol") {
                bad.push(format!("{}: crate::{}", path.display(), target.join("::")));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "ui reaches into the agent instead of agent::protocol:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_agent_touches_files_only_through_the_workspace() {
    let mut bad = Vec::new();
    for (path, text) in sources() {
        if module_of(&path).first().map(String::as_str) != Some("agent") {
            continue;
        }
        let code = code_only(&text);
        for needle in ["std::fs", "File::open", "File::create", "OpenOptions"] {
            if code.contains(needle) {
                bad.push(format!("{}: {needle}", path.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "the agent reaches the file system itself:\n{}",
        bad.join("\n")
    );
}

/// The paths a use tree starting at `text` names, its groups expanded (`{a, b::{c, self}}`
/// gives `a`, `b::c` and `b`), as segments; a glob or rename ends its path.
fn use_tree(text: &str) -> Vec<Vec<String>> {
    fn skip_ws(b: &[u8], pos: &mut usize) {
        while *pos < b.len() && b[*pos].is_ascii_whitespace() {
            *pos += 1;
        }
    }
    fn tree(b: &[u8], pos: &mut usize, prefix: Vec<String>) -> Vec<Vec<String>> {
        let mut segs = prefix;
        loop {
            skip_ws(b, pos);
            if *pos < b.len() && b[*pos] == b'{' {
                *pos += 1;
                let mut out = Vec::new();
                loop {
                    skip_ws(b, pos);
                    if *pos >= b.len() {
                        break;
                    }
                    if b[*pos] == b'}' {
                        *pos += 1;
                        break;
                    }
                    let before = *pos;
                    out.extend(tree(b, pos, segs.clone()));
                    skip_ws(b, pos);
                    // Whatever ends the subtree (`as x`, `*`) up to the next `,` or `}`.
                    let mut depth = 0;
                    while *pos < b.len() {
                        match b[*pos] {
                            b'{' => depth += 1,
                            b'}' if depth == 0 => break,
                            b'}' => depth -= 1,
                            b',' if depth == 0 => {
                                *pos += 1;
                                break;
                            }
                            _ => {}
                        }
                        *pos += 1;
                    }
                    if *pos == before {
                        *pos += 1;
                    }
                }
                if out.is_empty() {
                    out.push(segs);
                }
                return out;
            }
            let start = *pos;
            while *pos < b.len() && (b[*pos].is_ascii_alphanumeric() || b[*pos] == b'_') {
                *pos += 1;
            }
            let ident = String::from_utf8_lossy(&b[start..*pos]).to_string();
            if ident.is_empty() {
                return vec![segs];
            }
            if ident != "self" {
                segs.push(ident);
            }
            skip_ws(b, pos);
            if b[*pos..].starts_with(b"::") {
                *pos += 2;
            } else {
                return vec![segs];
            }
        }
    }
    let mut pos = 0;
    tree(text.as_bytes(), &mut pos, Vec::new())
}

/// Every module path a file's code names, made absolute: `crate::a::b`, `super::x` (any
/// number of `super::`), `self::x`, groups and nested groups included.
fn named_paths(module: &[String], code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        for (i, _) in code.match_indices(start) {
            if i > 0 {
                let before = bytes[i - 1];
                if before.is_ascii_alphanumeric() || before == b'_' || before == b'$' {
                    continue;
                }
                // The second `super::` of `super::super::` is counted with the first.
                if start == "super::" && code[..i].ends_with("super::") {
                    continue;
                }
            }
            let mut rest = &code[i + start.len()..];
            let base: Vec<String> = match start {
                "crate::" => Vec::new(),
                "self::" => module.to_vec(),
                _ => {
                    let mut up = 1;
                    while let Some(r) = rest.strip_prefix("super::") {
                        up += 1;
                        rest = r;
                    }
                    module[..module.len().saturating_sub(up)].to_vec()
                }
            };
            for path in use_tree(rest) {
                let mut whole = base.clone();
                whole.extend(path);
                out.push(whole);
            }
        }
    }
    out
}

#[test]
fn use_trees_are_read_whole() {
    let paths = use_tree("{a, b::{c, self}, d as e, f::*}, g;");
    let names: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(names, ["a", "b::c", "b", "d", "f"]);
    let module: Vec<String> = ["history", "ops", "apply"].map(String::from).to_vec();
    let code = "use super::super::{undo::one, session};\nuse self::inner::X;\ncrate::cli::run();";
    let named: Vec<String> = named_paths(&module, code)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert!(
        named.contains(&"history::undo::one".to_string()),
        "{named:?}"
    );
    assert!(named.contains(&"history::session".to_string()), "{named:?}");
    assert!(
        named.contains(&"history::ops::apply::inner::X".to_string()),
        "{named:?}"
    );
    assert!(named.contains(&"cli::run".to_string()), "{named:?}");
}

/// Edges between source files: from each file to every other file whose items it names (the
/// longest module path of a file that prefixes the named path), at any level of the tree;
/// a file's own ancestors (whose items and declarations it lives in) are not edges.
fn file_edges() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let files: Vec<(Vec<String>, String)> = sources()
        .into_iter()
        .map(|(path, text)| (module_of(&path), code_only(&text)))
        .filter(|(module, _)| {
            !module.is_empty() && !matches!(module[0].as_str(), "lib" | "main" | "build")
        })
        .collect();
    let nodes: BTreeSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, code) in &files {
        let targets = edges.entry(module.clone()).or_default();
        for path in named_paths(module, code) {
            let Some(target) = (1..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| nodes.contains(p))
            else {
                continue;
            };
            if target != *module && !module.starts_with(&target) {
                targets.insert(target);
            }
        }
    }
    edges
}

/// The circles in `edges`, each as `a -> b -> ... -> a`.
fn circles(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<String> {
    // Depth-first search for a back edge.
    fn visit(
        n: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
        found: &mut Vec<String>,
    ) {
        state.insert(n.clone(), 1);
        stack.push(n.clone());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m) {
                Some(1) => {
                    let at = stack.iter().position(|s| s == m).unwrap_or(0);
                    let circle: Vec<String> = stack[at..].iter().map(|s| s.join("::")).collect();
                    found.push(format!("{} -> {}", circle.join(" -> "), m.join("::")));
                }
                Some(_) => {}
                None => visit(m, edges, state, stack, found),
            }
        }
        stack.pop();
        state.insert(n.clone(), 2);
    }
    let mut state = BTreeMap::new();
    let mut found = Vec::new();
    for n in edges.keys() {
        if !state.contains_key(n) {
            visit(n, edges, &mut state, &mut Vec::new(), &mut found);
        }
    }
    found
}

#[test]
fn files_import_each_other_without_a_circle() {
    let found = circles(&file_edges());
    assert!(
        found.is_empty(),
        "circles between files:\n{}",
        found.join("\n")
    );
}

/// History's folders (`git`, `index`, `ops`, `record`, `plan`, `session`, ...) stand in
/// layers too: a folder that imports one which imports it back has no floor of its own.
#[test]
fn history_folders_import_each_other_without_a_circle() {
    let folder = |m: &Vec<String>| m.iter().take(2).cloned().collect::<Vec<String>>();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (from, targets) in file_edges() {
        if from.first().map(String::as_str) != Some("history") {
            continue;
        }
        let from = folder(&from);
        for to in targets {
            let to = folder(&to);
            if to.first().map(String::as_str) == Some("history") && to != from {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    assert!(
        edges.len() >= 8,
        "history's folders were not found: {:?}",
        edges.keys().collect::<Vec<_>>()
    );
    let found = circles(&edges);
    assert!(
        found.is_empty(),
        "circles between history's folders:\n{}",
        found.join("\n")
    );
}

/// The command line's support modules (assembling the agent, worktree sessions) serve the
/// commands; a command may use them, never the other way round.
#[test]
fn cli_support_never_imports_a_command() {
    let mut bad = Vec::new();
    for (from, targets) in file_edges() {
        if from.first().map(String::as_str) != Some("cli")
            || from.get(1).map(String::as_str) == Some("commands")
        {
            continue;
        }
        for to in targets {
            if to.get(1).map(String::as_str) == Some("commands") && from.len() > 1 {
                bad.push(format!("{} -> {}", from.join("::"), to.join("::")));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "cli support imports a command:\n{}",
        bad.join("\n")
    );
}

/// Files of `src/history` that still spell a `refs/pai/` name themselves instead of asking
/// `git/names.rs`; the list only shrinks.
const REF_NAMES_SPELLED_ELSEWHERE: &[&str] = &[];

/// pai's ref names (`refs/pai/...`, `refs/heads/pai/...`, the short `pai/<id>`) are built and parsed in one
/// place, `history/git/names.rs`, so the grammar a name read back must match is checked in
/// one place too.
#[test]
fn ref_names_are_spelled_only_in_names_rs() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut bad = Vec::new();
    for (path, text) in sources() {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .to_string();
        if !rel.starts_with("history/")
            || rel == "history/git/names.rs"
            || REF_NAMES_SPELLED_ELSEWHERE.contains(&rel.as_str())
        {
            continue;
        }
        let code = code_only(&text);
        for needle in ["\"refs/pai", "\"refs/heads/pai", "\"pai/{"] {
            if code.contains(needle) {
                bad.push(format!("{rel}: {needle}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "ref names spelled outside history/git/names.rs:\n{}",
        bad.join("\n")
    );
}

/// What moves a ref, HEAD, git's index, a work tree's files or pai's state directory in the
/// project. Writing an object into git's object store (a blob, tree or commit) is not a move:
/// objects are immutable and nothing reaches one until a ref moves to it. Lock files taken
/// and released (the session lock, `index.lock` through `history/index/`) are not moves
/// either.
const MOVES: &[&str] = &[
    // Refs and HEAD.
    ".reference(",
    ".reference_symbolic(",
    ".set_target(",
    ".set_head(",
    ".set_head_detached(",
    ".branch(",
    ".delete()",
    ".worktree(",
    ".prune(",
    // Git's index.
    "Index::open",
    ".stage(",
    ".checkout_index(",
    ".checkout_tree(",
    ".checkout_head(",
    // Files: the work tree's (through `WorkTree`), pai's state directory's, any other.
    "wt.write(",
    "wt.remove(",
    ".write_with_mode(",
    ".remove_up_to(",
    ".write_new(",
    ".replace(&[",
    ".remove(&[",
    "remove_tree(",
    "fs::write",
    "fs::rename",
    "fs::copy",
    "remove_file",
    "remove_dir",
    "create_dir",
    "DirBuilder",
    "File::create",
    ".create_new(",
    ".create(true)",
    "symlink(",
    "symlinkat",
    "unlinkat",
    "renameat",
    "mkdirat",
    "set_permissions",
];

/// Moves made outside `history/ops/` on purpose: (file below `src/history/`, move, how many
/// times, why). None moves a ref, HEAD, git's index or a file of a project or a worktree.
const MOVES_OUTSIDE_THE_EXECUTOR: &[(&str, &str, usize, &str)] = &[
    (
        "index/locked.rs",
        "fs::rename",
        1,
        "git's index lock renamed into place: the primitive the executor's index moves commit \
         through (`.stage(` is called only in ops/)",
    ),
    (
        "index/locked.rs",
        "remove_file",
        1,
        "an index.lock given up",
    ),
    ("index/locked.rs", ".create_new(", 1, "index.lock taken"),
    (
        "index/locked.rs",
        "set_permissions",
        1,
        "index.lock given the index's bits",
    ),
    (
        "worktrees/linked.rs",
        "create_dir",
        1,
        "the folder of worktree-session records in the user's state directory",
    ),
    (
        "worktrees/linked.rs",
        "fs::write",
        2,
        "a session's record and its `making` mark in the user's state directory: pai's \
         bookkeeping, outside git and every project",
    ),
    (
        "worktrees/linked.rs",
        "remove_file",
        3,
        "the same record and mark removed",
    ),
    (
        "worktrees/linked.rs",
        ".create_new(",
        1,
        "a session id reserved by creating its record",
    ),
    (
        "worktrees/removal.rs",
        "remove_file",
        2,
        "a removed session's record",
    ),
    (
        "record/kept.rs",
        "create_dir",
        1,
        "undo's kept-for-redo records in the user's state directory (see ops/mod.rs)",
    ),
    ("record/kept.rs", "fs::write", 1, "a kept record, by temp"),
    ("record/kept.rs", "fs::rename", 1, "and rename"),
    (
        "record/kept.rs",
        "remove_file",
        4,
        "kept records no longer needed",
    ),
    (
        "gc/kept.rs",
        "remove_file",
        1,
        "kept records `pai gc` prunes",
    ),
    (
        "git/auth.rs",
        "DirBuilder",
        2,
        "pai's key in its configuration directory",
    ),
    ("git/auth.rs", ".create_new(", 1, "the key written new"),
    ("git/auth.rs", "remove_file", 2, "the key's temporary file"),
    (
        "git/user_state.rs",
        "DirBuilder",
        2,
        "the user's state directory, private",
    ),
    (
        "git/user_state.rs",
        "set_permissions",
        1,
        "made private when found open",
    ),
    (
        "git/repo.rs",
        "create_dir",
        1,
        "the record of a private history's creation, in the user's state directory",
    ),
    ("git/repo.rs", "fs::write", 1, "that record"),
];

/// Whether `needle` occurs in `code` as written, not inside a longer name (`is_symlink(` is
/// not `symlink(`).
fn occurrences(code: &str, needle: &str) -> usize {
    let starts_with_name = needle
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    code.match_indices(needle)
        .filter(|(i, _)| {
            !starts_with_name
                || *i == 0
                || !code.as_bytes()[i - 1].is_ascii_alphanumeric() && code.as_bytes()[i - 1] != b'_'
        })
        .count()
}

/// History is one path: an operation builds a record and the executor (`history/ops/`)
/// makes every move, so no ref, HEAD, index entry or file of a project or worktree moves
/// anywhere else in `src/history`. The few moves of pai's own bookkeeping outside git and
/// every project are listed, each with its count and why.
#[test]
fn history_moves_only_through_the_executor() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/history");
    let mut found: BTreeMap<(String, &str), usize> = BTreeMap::new();
    for (path, text) in sources() {
        let Ok(rel) = path.strip_prefix(&src) else {
            continue;
        };
        let rel = rel.to_string_lossy().to_string();
        if rel.starts_with("ops/") {
            continue;
        }
        let code = code_only(&text);
        for needle in MOVES {
            let n = occurrences(&code, needle);
            if n > 0 {
                found.insert((rel.clone(), needle), n);
            }
        }
    }
    let mut bad = Vec::new();
    for ((file, needle), n) in &found {
        let allowed = MOVES_OUTSIDE_THE_EXECUTOR
            .iter()
            .find(|(f, m, _, _)| f == file && m == needle)
            .map_or(0, |(_, _, count, _)| *count);
        if *n > allowed {
            bad.push(format!("{file}: `{needle}` {n} times (allowed {allowed})"));
        }
    }
    assert!(
        bad.is_empty(),
        "moves in src/history outside the executor (history/ops/):\n{}",
        bad.join("\n")
    );
    // The allowances are all still needed: a move gone from its file takes its line with it.
    for (file, needle, count, _) in MOVES_OUTSIDE_THE_EXECUTOR {
        let n = found
            .get(&(file.to_string(), *needle))
            .copied()
            .unwrap_or(0);
        assert_eq!(
            n, *count,
            "{file}: `{needle}` is allowed {count} times, found {n}"
        );
    }
}

#[test]
fn the_move_scan_reads_names_whole() {
    assert_eq!(occurrences("x.is_symlink() symlink(a, b)", "symlink("), 1);
    assert_eq!(occurrences("std::fs::write(p, b)", "fs::write"), 1);
    assert_eq!(
        occurrences("repo.reference(n, id, true, m)", ".reference("),
        1
    );
}

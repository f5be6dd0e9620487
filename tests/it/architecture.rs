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
    ("hard_stop", 0),
    ("heap", 0),
    ("layout", 0),
    ("private_file", 0),
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

#[test]
fn files_of_a_module_import_each_other_without_a_circle() {
    // Edges between sibling files: `super::x` and `crate::top::x` from a file of `top`.
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (path, text) in sources() {
        let module = module_of(&path);
        if module.len() < 2 {
            continue;
        }
        let parent = &module[..module.len() - 1];
        let code = code_only(&text);
        let mut targets = BTreeSet::new();
        for (i, _) in code.match_indices("super::") {
            if i >= 7 && &code[i - 7..i] == "super::" {
                continue;
            }
            let name: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let mut t = parent.to_vec();
            t.push(name);
            targets.insert(t);
        }
        for p in crate_paths(&code) {
            if p.len() > parent.len() && p[..parent.len()] == *parent {
                targets.insert(p[..=parent.len()].to_vec());
            }
        }
        targets.remove(&module);
        edges.entry(module).or_default().extend(targets);
    }
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
            if !edges.contains_key(m) {
                continue;
            }
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
            visit(n, &edges, &mut state, &mut Vec::new(), &mut found);
        }
    }
    assert!(
        found.is_empty(),
        "circles between files:\n{}",
        found.join("\n")
    );
}

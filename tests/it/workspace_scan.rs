//! The parallel tree scan behind LIST_PATH, TREE, SEARCH and the project file list: checked
//! against git's own idea of the visible files, under a descriptor limit far below the number
//! of directories (a binary of its own: it lowers the process's limit, which the SEARCH test
//! in it runs under too), and SEARCH's order and totals over many files.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use pai::workspace::{Workspace, WorkspaceConfig};

fn put(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, content).unwrap();
}

/// A tree of about 2,700 directories: deep and wide parts, nested ignore files with a
/// negation, denied names, and symlinks to directories (listed, never followed).
fn build_tree(root: &Path) {
    put(root, ".gitignore", "*.log\nbuild/\n");
    put(root, "a/.gitignore", "!keep.log\n*.tmp\n");
    put(root, "a/keep.log", "kept by the negation\n");
    put(root, "a/drop.log", "ignored\n");
    put(root, "a/x.tmp", "ignored\n");
    put(root, "a/b/y.tmp", "ignored below a/\n");
    put(root, "a/b/c.txt", "visible\n");
    put(root, "build/out.o", "ignored\n");
    put(root, "debug.log", "ignored\n");
    put(root, ".env", "SECRET=1\n");
    put(root, "svc/.env.local", "SECRET=2\n");
    put(root, "node_modules/pkg/index.js", "denied\n");
    put(root, "sub/.venv/bin/activate", "denied\n");
    // Deep: 7 x 13 x n directories below d*/s*/.
    for i in 0..600 {
        put(
            root,
            &format!("d{}/s{}/t{i}/f{}.txt", i % 7, i % 13, i % 3),
            "x\n",
        );
    }
    // Wide: 2,000 siblings, each with a file and every tenth with a subdirectory.
    for i in 0..2_000 {
        put(root, &format!("wide/w{i:04}/file.py"), "pass\n");
        if i % 10 == 0 {
            put(root, &format!("wide/w{i:04}/inner/deeper/z.md"), "z\n");
        }
    }
    symlink(root.join("d0"), root.join("link_to_d0")).unwrap();
    symlink("/tmp", root.join("wide/w0001/link_out")).unwrap();
}

/// Files git shows as untracked and not ignored (the tree is never committed).
fn git_visible_files(root: &Path) -> BTreeSet<String> {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(root)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
        out.stdout
    };
    git(&["init", "-q", "."]);
    let out = git(&["ls-files", "-z", "--others", "--exclude-standard"]);
    out.split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8(p.to_vec()).unwrap())
        .collect()
}

fn lower_descriptor_limit(to: libc::rlim_t) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain system calls on a local struct.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = to.min(lim.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
}

#[test]
fn scan_agrees_with_git_is_ordered_and_deterministic_within_few_descriptors() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    build_tree(root);
    let mut expected = git_visible_files(root);
    // git knows nothing of pai's deny-list; git lists a symlink as a file.
    expected.retain(|p| {
        !p.split('/')
            .any(|s| [".env", ".env.local", "node_modules", ".venv"].contains(&s))
            && !p.starts_with("link_to_d0")
            && !p.ends_with("link_out")
    });
    assert!(expected.contains("a/keep.log") && !expected.contains("a/drop.log"));
    assert!(expected.len() > 2_500, "{}", expected.len());

    // Far fewer descriptors than directories: the scan must not hold one per directory.
    lower_descriptor_limit(64);

    let ws = Workspace::open(
        root,
        WorkspaceConfig {
            max_list_entries: usize::MAX,
            ..WorkspaceConfig::default()
        },
    )
    .unwrap();
    let listing = ws.list_path(".").unwrap();
    assert!(
        !listing.contains("could not be read"),
        "{}",
        &listing[listing.len().saturating_sub(300)..]
    );
    let lines: Vec<&str> = listing.lines().collect();
    let files: BTreeSet<String> = lines
        .iter()
        .filter(|l| !l.ends_with('/') && !l.ends_with('@'))
        .map(|l| l.to_string())
        .collect();
    assert_eq!(files, expected);
    assert!(lines.contains(&"link_to_d0@") && lines.contains(&"wide/w0001/link_out@"));
    assert!(!lines.iter().any(|l| l.starts_with("link_to_d0/")));

    // Pre-order, directories first, each group sorted by name: every entry's parent comes
    // before it, and the children of one directory appear in that order.
    let mut children: BTreeMap<&str, Vec<(bool, &str)>> = BTreeMap::new();
    let mut seen_dirs: BTreeSet<&str> = BTreeSet::from([""]);
    for l in &lines {
        let is_dir = l.ends_with('/');
        let path = l.trim_end_matches(['/', '@']);
        let (parent, name) = path.rsplit_once('/').unwrap_or(("", path));
        assert!(
            seen_dirs.contains(parent),
            "{l} listed before its directory"
        );
        if is_dir {
            seen_dirs.insert(path);
        }
        children.entry(parent).or_default().push((!is_dir, name));
    }
    for (dir, kids) in &children {
        let mut sorted = kids.clone();
        sorted.sort();
        assert_eq!(kids, &sorted, "entries of {dir:?} out of order");
    }

    // The same output every time, whatever order the threads read the directories in.
    for _ in 0..5 {
        assert_eq!(ws.list_path(".").unwrap(), listing);
    }

    let (project, omitted) = ws.project_files(usize::MAX);
    assert_eq!(omitted, 0);
    assert_eq!(
        project.iter().cloned().collect::<BTreeSet<_>>(),
        expected,
        "the project file list"
    );
    let (first, rest) = ws.project_files(100);
    assert_eq!((first.len(), rest), (100, expected.len() - 100));
    assert_eq!(first[..], project[..100]);

    corpus_is_the_file_list(&ws, root, &project);

    // TREE counts what it does not draw: drawn files plus the counted rest cover them all.
    let tree = ws.tree(".").unwrap();
    assert!(tree.contains("more entries not shown"), "{tree}");
    let sub = ws.list_path("wide/w0010").unwrap();
    assert_eq!(
        sub,
        "wide/w0010/inner/\nwide/w0010/inner/deeper/\nwide/w0010/inner/deeper/z.md\nwide/w0010/file.py\n"
    );
}

/// The map's corpus: the same files as the project file list, in the same order, each a
/// regular file as `lstat` says (the listing's file types, no `stat` of its own); no link, no
/// directory.
fn corpus_is_the_file_list(ws: &Workspace, root: &Path, project: &[String]) {
    let corpus = ws.corpus();
    let paths: Vec<&str> = corpus.iter().collect();
    assert_eq!(
        paths,
        project.iter().map(String::as_str).collect::<Vec<_>>()
    );
    for f in corpus.iter() {
        let m = fs::symlink_metadata(root.join(f)).unwrap();
        assert!(m.is_file(), "{f}");
    }
}

/// SEARCH counts in parallel and reports in walk order: the shown lines are the first ones in
/// that order, and the totals count every file, whichever thread read it.
#[test]
fn search_is_ordered_exact_and_deterministic_over_many_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let mut expected_lines = Vec::new();
    let mut files_with_hits = 0;
    for g in 0..40 {
        for f in 0..10 {
            let k = g * 10 + f;
            let rel = format!("g{g:02}/f{f:02}.txt");
            if k % 3 == 0 {
                put(root, &rel, "nothing here\n");
                continue;
            }
            put(
                root,
                &rel,
                &format!("line a\nneedle {k}\nline b\nline c\nneedle {k} needle again\n"),
            );
            expected_lines.push(format!("{rel}:2: needle {k}"));
            expected_lines.push(format!("{rel}:5: needle {k} needle again"));
            files_with_hits += 1;
        }
    }
    for i in 0..5 {
        put(root, &format!("g00/z_bin{i}.dat"), "needle\0binary\n");
    }
    for i in 0..2 {
        put(root, &format!("g01/y_big{i}.txt"), &"needle\n".repeat(300));
    }
    let ws = |cap: usize| {
        Workspace::open(
            root,
            WorkspaceConfig {
                max_search_matches: cap,
                max_search_file_bytes: 1_000,
                ..WorkspaceConfig::default()
            },
        )
        .unwrap()
    };
    let summary = format!("matching lines (in {files_with_hits} files)",);
    let skipped = "(skipped 5 binary and 2 oversized files)\n";

    let all = ws(usize::MAX).search("needle", None).unwrap();
    let shown: Vec<&str> = all.lines().take(expected_lines.len()).collect();
    assert_eq!(shown, expected_lines);
    assert!(
        all.ends_with(&format!(
            "{} matching lines in {files_with_hits} files\n{skipped}",
            expected_lines.len()
        )),
        "{}",
        &all[all.len().saturating_sub(200)..]
    );

    let capped = ws(50);
    let first = capped.search("needle", None).unwrap();
    let shown: Vec<&str> = first.lines().take(50).collect();
    assert_eq!(shown, expected_lines[..50]);
    assert!(
        first.contains(&format!(
            "… showing the first 50 of {} {summary}",
            expected_lines.len()
        )),
        "{first}"
    );
    assert!(first.ends_with(skipped), "{first}");
    for _ in 0..5 {
        assert_eq!(capped.search("needle", None).unwrap(), first);
    }
    // Below a directory, the same order and counts restricted to it.
    let sub = capped.search("needle", Some("g02")).unwrap();
    assert!(sub.starts_with("g02/f00.txt:2: needle 20\n"), "{sub}");
    // g02 holds k = 20..29, of which 21, 24 and 27 have no match.
    assert!(sub.ends_with("14 matching lines in 7 files\n"), "{sub}");
}

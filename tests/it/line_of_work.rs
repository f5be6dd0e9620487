//! One history per line of work, end to end with the real binary: repeated `pai run`s make
//! one branch, created at the first plan commit; `pai undo` walks back across them to the
//! base (HEAD back on `main`, the branch gone) and `pai redo` forward again; a session that
//! carries out nothing leaves git and `pai resume` exactly as they were; a dry run leaves
//! `.git` byte for byte unchanged.

use std::collections::BTreeMap;
use std::path::Path;

use crate::support;

use pai::llm::ProviderKind;
use serde_json::json;
use support::mock_llm::{MockLlm, Reply, Script};
use support::project::{Project, TEST_KEY, git};
use support::session::{exit_session, start_session, task_plan};

fn write_file(n: usize) -> Reply {
    Reply::plan(task_plan(
        "Writing it.",
        json!([{"action": "WRITE", "path": format!("f{n}.txt"), "content": format!("{n}\n"),
                "purpose": "a file"}]),
    ))
}

/// `pai ARGS` in the project; (exit code, stdout and stderr).
fn pai(p: &Project, args: &[&str]) -> (Option<i32>, String) {
    let out = p
        .pai()
        .env(ProviderKind::Gemini.key_env_var(), TEST_KEY)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

fn pai_branches(p: &Project) -> Vec<String> {
    git(
        &p.root,
        &["branch", "--list", "pai/*", "--format=%(refname:short)"],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

fn head(p: &Project) -> String {
    git(&p.root, &["symbolic-ref", "--short", "HEAD"])
        .trim()
        .to_string()
}

/// Every file under `.git` with its bytes (the logs of refs included).
fn git_dir_bytes(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                walk(&path, base, out);
            } else {
                let rel = path.strip_prefix(base).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&root.join(".git"), root, &mut out);
    out
}

#[test]
fn five_runs_are_one_line_that_undo_walks_back_to_the_base_and_redo_forward() {
    let p = Project::repo(None);
    let base = git(&p.root, &["rev-parse", "HEAD"]);
    let mock = MockLlm::start(Script::with_replies((1..=5).map(write_file)).require_key(TEST_KEY));
    for n in 1..=5 {
        let run = p.run(
            &mock,
            ProviderKind::Gemini,
            &format!("write f{n}"),
            &["--yes"],
        );
        assert_eq!(run.output.status.code(), Some(0), "{}", run.text());
    }
    // One branch holds the five plans, HEAD on it; main did not move.
    let branches = pai_branches(&p);
    assert_eq!(branches.len(), 1, "{branches:?}");
    let branch = branches[0].clone();
    assert_eq!(head(&p), branch);
    assert_eq!(git(&p.root, &["rev-parse", "main"]), base);
    let subjects = git(&p.root, &["log", "--format=%s", &format!("main..{branch}")]);
    assert_eq!(subjects.lines().count(), 5, "{subjects}");

    // `pai log` shows the line, each session's plan, and merges into main only.
    let (code, log) = pai(&p, &["log"]);
    assert_eq!(code, Some(0), "{log}");
    for n in 1..=5 {
        assert!(log.contains(&format!("write f{n}")), "{log}");
    }
    assert!(
        log.contains(&format!("git switch main && git merge {branch}")),
        "{log}"
    );
    assert!(!log.contains("git switch pai/"), "{log}");

    for n in (1..=5).rev() {
        let (code, text) = pai(&p, &["undo"]);
        assert_eq!(code, Some(0), "{text}");
        assert!(text.contains(&format!("write f{n}")), "{text}");
        // Undo's and redo's file lists line up in one column.
        assert!(
            text.contains(&format!("\n  removed   f{n}.txt\n")),
            "{text}"
        );
        assert!(!p.root.join(format!("f{n}.txt")).exists());
    }
    // Back at the base: HEAD on main, no pai branch, nothing to commit.
    assert_eq!(head(&p), "main");
    assert!(pai_branches(&p).is_empty());
    assert_eq!(git(&p.root, &["status", "--porcelain"]), "");
    let (code, text) = pai(&p, &["undo"]);
    assert_eq!(code, Some(2), "{text}");

    for n in 1..=5 {
        let (code, text) = pai(&p, &["redo"]);
        assert_eq!(code, Some(0), "{text}");
        assert!(text.contains(&format!("write f{n}")), "{text}");
        assert!(text.contains(&format!("\n  wrote     f{n}.txt")), "{text}");
        assert_eq!(p.read(&format!("f{n}.txt")), format!("{n}\n"));
    }
    assert_eq!(head(&p), branch);
    assert_eq!(pai_branches(&p), vec![branch]);
    assert_eq!(git(&p.root, &["status", "--porcelain"]), "");
    assert_eq!(mock.calls(), 5);
}

#[test]
fn quitting_at_the_first_prompt_leaves_git_and_resume_as_they_were() {
    let p = Project::repo(None);
    let mock = MockLlm::start(Script::with_replies([write_file(1)]).require_key(TEST_KEY));
    let before_git = git_dir_bytes(&p.root);
    let (_, before_resume) = pai(&p, &["resume"]);
    let mut pty = start_session(&p, &mock, false, &[]);
    exit_session(&mut pty);
    let shown = pty.text();
    assert!(shown.contains("nothing changed in git"), "{shown}");
    assert_eq!(git_dir_bytes(&p.root), before_git);
    assert_eq!(head(&p), "main");
    assert_eq!(git(&p.root, &["status", "--porcelain"]), "");
    assert_eq!(pai(&p, &["resume"]).1, before_resume);
    assert_eq!(mock.calls(), 0);
}

#[test]
fn a_dry_run_leaves_git_byte_for_byte_unchanged_and_is_not_offered_for_resume() {
    let p = Project::repo(None);
    let mock = MockLlm::start(
        Script::with_replies([write_file(1), Reply::chat("Just an answer.")]).require_key(TEST_KEY),
    );
    let before = git_dir_bytes(&p.root);
    let (_, before_resume) = pai(&p, &["resume"]);
    let run = p.run(&mock, ProviderKind::Gemini, "write f1", &["--plan"]);
    assert_eq!(run.output.status.code(), Some(0), "{}", run.text());
    assert_eq!(run.finished()["status"], "planned");
    // A chat-only run touches nothing in .git either.
    let run = p.run(&mock, ProviderKind::Gemini, "what is this?", &["--yes"]);
    assert_eq!(run.finished()["status"], "answered", "{}", run.text());
    assert_eq!(git_dir_bytes(&p.root), before);
    assert!(!p.root.join("f1.txt").exists());
    // The dry run is not offered for resuming; the conversation is.
    let (_, after_resume) = pai(&p, &["resume"]);
    assert_ne!(after_resume, before_resume);
    assert!(after_resume.contains("\"what is this?\""), "{after_resume}");
    assert!(!after_resume.contains("write f1"), "{after_resume}");
}

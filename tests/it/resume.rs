//! Sessions that resume: `pai --continue` picks up the latest session of the project (same
//! branch, the memory of its last turns restored from the session log, a line saying which
//! session continues); `pai resume` lists sessions and continues a named one; the end of a
//! session says where HEAD is left and what the next `pai` does.

use crate::support;

use serde_json::json;
use support::mock_llm::{MockLlm, Reply, Script};
use support::project::{Project, TEST_KEY, git};
use support::session::{PROMPT, exit_session, start_session, task_plan};

fn write_notes() -> serde_json::Value {
    task_plan(
        "Writing the notes.",
        json!([{"action": "WRITE", "path": "notes.txt", "content": "first\n", "purpose": "notes"}]),
    )
}

fn second_line() -> serde_json::Value {
    task_plan(
        "Adding a line.",
        json!([{"action": "MODIFY", "path": "notes.txt",
                "edits": [{"search": "first\n", "replace": "first\nsecond\n"}],
                "purpose": "second line"}]),
    )
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

/// A first session that writes notes.txt and exits; returns its branch.
fn first_session(p: &Project, mock: &MockLlm) -> String {
    let mut pty = start_session(p, mock, true, &[]);
    pty.send_line("write the notes file");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect("Committed");
    pty.expect(PROMPT);
    exit_session(&mut pty);
    let text = pty.text();
    let branch = git(&p.root, &["branch", "--show-current"])
        .trim()
        .to_string();
    assert!(branch.starts_with("pai/"), "{branch}");
    // Where HEAD is left, and what the next `pai` does, are said at the end.
    assert!(text.contains(&format!("HEAD stays on {branch}")), "{text}");
    assert!(text.contains("continues this line of work"), "{text}");
    branch
}

#[test]
fn continue_restores_the_branch_and_the_memory_of_the_last_session() {
    let p = Project::repo(None);
    let mock = MockLlm::start(
        Script::with_replies([Reply::plan(write_notes()), Reply::plan(second_line())])
            .require_key(TEST_KEY),
    );
    let branch = first_session(&p, &mock);
    let id = branch.trim_start_matches("pai/").to_string();

    let mut pty = start_session(&p, &mock, true, &["--continue"]);
    let shown = pty.text();
    assert!(
        shown.contains(&format!("Continuing session {id} on {branch}")),
        "{shown}"
    );
    assert!(shown.contains("1 turn remembered"), "{shown}");
    pty.send_line("now add a second line to that file");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect("Committed");
    pty.expect(PROMPT);
    exit_session(&mut pty);

    // The second request carried the memory of the first turn.
    let requests = mock.generation_requests();
    assert_eq!(requests.len(), 2);
    let sent = requests[1].last_user_text().unwrap();
    assert!(sent.contains("Earlier in this session:"), "{sent}");
    assert!(sent.contains("\"write the notes file\""), "{sent}");
    assert!(sent.contains("notes.txt"), "{sent}");

    // One branch holding both plans, numbered on; HEAD still on it.
    assert_eq!(pai_branches(&p), vec![branch.clone()]);
    assert_eq!(
        git(&p.root, &["branch", "--show-current"]).trim(),
        branch.as_str()
    );
    let log = git(
        &p.root,
        &[
            "log",
            "--format=%s|%(trailers:key=Pai-Plan,valueonly,separator=)",
            &branch,
        ],
    );
    let plans: Vec<&str> = log.lines().filter(|l| l.starts_with("pai: ")).collect();
    assert_eq!(
        plans,
        vec![
            "pai: now add a second line to that file|2",
            "pai: write the notes file|1"
        ],
        "{log}"
    );
    assert_eq!(p.read("notes.txt"), "first\nsecond\n");
}

#[test]
fn resume_lists_the_sessions_and_continues_a_named_one() {
    let p = Project::repo(None);
    let mock = MockLlm::start(
        Script::with_replies([
            Reply::plan(write_notes()),
            Reply::chat("It holds one line."),
        ])
        .require_key(TEST_KEY),
    );
    let branch = first_session(&p, &mock);
    let id = branch.trim_start_matches("pai/").to_string();

    let out = p.pai().arg("resume").output().unwrap();
    assert!(out.status.success());
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains(&format!("{id}  1 request  \"write the notes file\"")),
        "{listing}"
    );
    assert!(listing.contains("pai resume <SESSION>"), "{listing}");

    let mut pty = start_session(&p, &mock, false, &["resume", &id]);
    assert!(pty.text().contains(&format!("Continuing session {id}")));
    pty.send_line("what is in the file?");
    pty.expect("It holds one line.");
    pty.expect(PROMPT);
    exit_session(&mut pty);
    let sent = mock.generation_requests()[1]
        .last_user_text()
        .unwrap()
        .to_string();
    assert!(sent.contains("\"write the notes file\""), "{sent}");

    let out = p
        .pai()
        .env(pai::llm::ProviderKind::Gemini.key_env_var(), TEST_KEY)
        .args(["resume", "19990101_000000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pai resume` lists"));
}

#[test]
fn a_new_session_after_one_with_plans_says_it_continues_that_line() {
    let p = Project::repo(None);
    let mock = MockLlm::start(
        Script::with_replies([Reply::plan(write_notes()), Reply::plan(second_line())])
            .require_key(TEST_KEY),
    );
    let branch = first_session(&p, &mock);
    let mut pty = start_session(&p, &mock, false, &[]);
    let shown = pty.text();
    assert!(
        shown.contains(&format!(
            "HEAD is on {branch}: this session's plans go on it too"
        )),
        "{shown}"
    );
    assert!(
        shown.contains("`pai --continue` also brings back"),
        "{shown}"
    );
    pty.send_line("add a second line");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect("Committed");
    pty.expect(PROMPT);
    exit_session(&mut pty);
    // Both sessions' plans are on the one branch.
    assert_eq!(pai_branches(&p), vec![branch.clone()]);
    let subjects = git(&p.root, &["log", "--format=%s", &format!("main..{branch}")]);
    assert_eq!(subjects.lines().count(), 2, "{subjects}");
}

#[test]
fn continue_refuses_when_head_moved_off_the_session_branch() {
    let p = Project::repo(None);
    let mock =
        MockLlm::start(Script::with_replies([Reply::plan(write_notes())]).require_key(TEST_KEY));
    let branch = first_session(&p, &mock);
    git(&p.root, &["switch", "-q", "main"]);
    let out = p
        .pai()
        .env(pai::llm::ProviderKind::Gemini.key_env_var(), TEST_KEY)
        .args(["--continue"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("HEAD is on main, not on its branch"), "{err}");
    assert!(err.contains(&format!("git switch {branch}")), "{err}");
    // Nothing moved.
    assert_eq!(git(&p.root, &["branch", "--show-current"]).trim(), "main");
}

#[test]
fn continue_prefers_the_session_head_is_on_over_a_later_empty_one() {
    let p = Project::repo(None);
    let mock = MockLlm::start(
        Script::with_replies([
            Reply::plan(write_notes()),
            Reply::chat("Hello."),
            Reply::chat("Still the notes session."),
        ])
        .require_key(TEST_KEY),
    );
    let branch = first_session(&p, &mock);
    let id = branch.trim_start_matches("pai/").to_string();
    // A later session that only chats ends without a branch and puts HEAD back.
    let kind = pai::llm::ProviderKind::Gemini;
    let out = p
        .pai()
        .env(kind.key_env_var(), TEST_KEY)
        .args(["run", "hi", "--plan", "--base-url", &mock.base_url(kind)])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(git(&p.root, &["branch", "--show-current"]).trim(), branch);

    let mut pty = start_session(&p, &mock, false, &["--continue"]);
    assert!(
        pty.text()
            .contains(&format!("Continuing session {id} on {branch}")),
        "{}",
        pty.text()
    );
    pty.send_line("which session is this?");
    pty.expect("Still the notes session.");
    pty.expect(PROMPT);
    exit_session(&mut pty);
    assert_eq!(pai_branches(&p), vec![branch]);
}

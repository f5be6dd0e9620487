//! The rough edges of daily use, each pinned: a READ is not wrapped when stdout is
//! not a terminal, `--help` says what `pai run` and `pai resume SESSION` really do, `pai config
//! show` says "no command" plainly, `pai log` answers alike outside git and in a repository
//! without plans, resuming a discarded session says it was discarded, and a listing command is
//! not called a passed check.

use crate::support;

use pai::llm::ProviderKind;
use serde_json::json;
use support::mock_llm::{MockLlm, Reply, Script};
use support::project::{Project, TEST_KEY, git};
use support::session::{PROMPT, exit_session, start_session, task_plan};

fn output(p: &Project, args: &[&str]) -> (Option<i32>, String) {
    let out = p
        .pai()
        .env(ProviderKind::Gemini.key_env_var(), TEST_KEY)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn a_read_is_printed_whole_when_stdout_is_not_a_terminal() {
    let p = Project::repo(None);
    let long = format!("value = \"{}\"", "y".repeat(150));
    std::fs::write(p.root.join("long.py"), format!("{long}\n")).unwrap();
    let plan = task_plan("Reading.", json!([{"action": "READ", "path": "long.py"}]));
    let mock = MockLlm::start(Script::with_replies([Reply::plan(plan)]).require_key(TEST_KEY));
    let base = mock.base_url(ProviderKind::Gemini);
    let (code, text) = output(&p, &["run", "show long.py", "--yes", "--base-url", &base]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.lines().any(|l| l.ends_with(&long)),
        "the line was cut: {text}"
    );
}

#[test]
fn help_says_what_run_and_resume_do() {
    let p = Project::repo(None);
    let (_, run_help) = output(&p, &["run", "--help"]);
    assert!(
        !run_help.contains("without a terminal, then exit"),
        "{run_help}"
    );
    assert!(
        run_help.contains("asks for approval at a terminal"),
        "{run_help}"
    );
    let (_, resume_help) = output(&p, &["resume", "--help"]);
    assert!(!resume_help.contains("--continue"), "{resume_help}");
    assert!(resume_help.contains("--yes"), "{resume_help}");
}

#[test]
fn config_show_says_plainly_that_no_command_runs_without_asking() {
    let p = Project::repo(None);
    let (code, text) = output(&p, &["config", "show"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("nothing in every project"), "{text}");
    assert!(text.contains("RUN without asking no command"), "{text}");
}

#[test]
fn log_answers_alike_outside_git_and_in_a_repository_without_plans() {
    let plain = Project::plain();
    let repo = Project::repo(None);
    let (a, outside) = output(&plain, &["log"]);
    let (b, inside) = output(&repo, &["log"]);
    assert_eq!((a, b), (Some(0), Some(0)), "{outside}\n{inside}");
    assert!(
        outside.contains("No pai plans recorded here yet."),
        "{outside}"
    );
    assert_eq!(outside, inside);
}

#[test]
fn resuming_a_discarded_session_says_it_was_discarded() {
    let p = Project::repo(None);
    let write = |n: usize| {
        Reply::plan(task_plan(
            "Writing.",
            json!([{"action": "WRITE", "path": format!("f{n}.txt"), "content": "x\n"}]),
        ))
    };
    let mock = MockLlm::start(
        Script::with_replies([write(1), write(2), write(3), Reply::chat("Still here.")])
            .require_key(TEST_KEY),
    );
    for n in 1..=3 {
        let run = p.run(
            &mock,
            ProviderKind::Gemini,
            &format!("write f{n}"),
            &["--yes"],
        );
        assert_eq!(run.output.status.code(), Some(0), "{}", run.text());
    }
    // The line's branch is named after its first session.
    let first = git(&p.root, &["branch", "--show-current"])
        .trim()
        .trim_start_matches("pai/")
        .to_string();
    let (code, text) = output(&p, &["discard"]);
    assert_eq!(code, Some(0), "{text}");
    let mut pty = start_session(&p, &mock, false, &["resume", &first]);
    let shown = pty.text();
    assert!(shown.contains("was discarded"), "{shown}");
    assert!(!shown.contains("recorded no plans"), "{shown}");
    pty.send_line("are you there?");
    pty.expect("Still here.");
    pty.expect(PROMPT);
    exit_session(&mut pty);
}

#[test]
fn a_listing_command_is_not_called_a_passed_check() {
    let p = Project::repo(None);
    let plan = task_plan(
        "Counting.",
        json!([{"action": "RUN", "command": "ls | wc -l", "purpose": "count files"}]),
    );
    let mock = MockLlm::start(Script::with_replies([Reply::plan(plan)]).require_key(TEST_KEY));
    let run = p.run(
        &mock,
        ProviderKind::Gemini,
        "how many files?",
        &["--yes", "--allow-run"],
    );
    let finished = run.finished();
    assert_eq!(finished["status"], "success", "{}", run.text());
    assert!(finished["verified"].is_null(), "{finished}");
}

//! RUN approvals that remember: `a` covers the rest of the session's identical commands, `p`
//! and `u` save the rule to the user's config.toml, `e` edits the command; and a remembered
//! rule never runs a command after the model wrote files under `--yes`.

use crate::support;

use serde_json::json;
use support::mock_llm::{MockLlm, Reply, Script};
use support::project::{Project, TEST_KEY};
use support::session::{PROMPT, exit_session, run_plan, start_session, task_plan};

/// The counting command. Run directly, not as `sh count.sh`: a rule for a program that runs
/// what its arguments name (`sh`, `find`, `xargs`, ...) is exact, and these tests are about
/// the prefix rule an answer saves.
const COUNT: &str = "./count.sh";

/// A project whose `count.sh` appends a line to `runs.log` each time it runs.
fn project() -> Project {
    let p = Project::repo(None);
    std::fs::write(
        p.root.join("count.sh"),
        "#!/bin/sh\necho \"run $1\" >> runs.log\n",
    )
    .unwrap();
    std::fs::set_permissions(
        p.root.join("count.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    support::project::git(&p.root, &["add", "count.sh"]);
    support::project::git(&p.root, &["commit", "-qm", "count"]);
    p
}

fn runs(p: &Project) -> usize {
    std::fs::read_to_string(p.root.join("runs.log"))
        .unwrap_or_default()
        .lines()
        .count()
}

fn twice(command: &str) -> serde_json::Value {
    task_plan(
        "Running it twice.",
        json!([
            {"action": "RUN", "command": command, "purpose": "first"},
            {"action": "RUN", "command": command, "purpose": "second"}
        ]),
    )
}

#[test]
fn one_always_answer_covers_the_rest_of_the_sessions_identical_commands() {
    let p = project();
    let mock = MockLlm::start(
        Script::with_replies([
            Reply::plan(twice(COUNT)),
            Reply::plan(run_plan(COUNT)),
            Reply::plan(run_plan("./count.sh other")),
        ])
        .require_key(TEST_KEY),
    );
    let mut pty = start_session(&p, &mock, true, &[]);
    pty.send_line("count twice");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect("a: run `./count.sh`");
    pty.expect("Run it? [y]es [n]o [a]lways [p]roject [u]ser [e]dit");
    pty.send_line("a");
    pty.expect("now runs without asking for the rest of this session");
    pty.expect(PROMPT);
    assert_eq!(runs(&p), 2, "both commands ran:\n{}", pty.text());

    pty.send_line("count again");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect(PROMPT);
    assert_eq!(runs(&p), 3);
    assert_eq!(
        pty.text().matches("Run this command?").count(),
        1,
        "one answer covered three commands:\n{}",
        pty.text()
    );

    // With more arguments the rule still covers it; another command is asked about.
    pty.send_line("count with an argument");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect(PROMPT);
    assert_eq!(runs(&p), 4);
    assert_eq!(pty.text().matches("Run this command?").count(), 1);
    exit_session(&mut pty);
}

#[test]
fn under_yes_a_remembered_rule_asks_again_after_the_model_wrote_files() {
    let p = project();
    let write_then_run = task_plan(
        "Writing, then counting.",
        json!([
            {"action": "WRITE", "path": "new.txt", "content": "hi\n", "purpose": "a file"},
            {"action": "RUN", "command": COUNT, "purpose": "count"}
        ]),
    );
    let mock = MockLlm::start(
        Script::with_replies([Reply::plan(run_plan(COUNT)), Reply::plan(write_then_run)])
            .require_key(TEST_KEY),
    );
    let mut pty = start_session(&p, &mock, true, &["--yes"]);
    pty.send_line("count");
    pty.expect("Run it?");
    pty.send_line("a");
    pty.expect(PROMPT);
    assert_eq!(runs(&p), 1);
    pty.send_line("write and count");
    // --yes approved the plan unseen and the model wrote a file: the rule does not cover it.
    pty.expect("Run it?");
    pty.send_line("n");
    pty.expect(PROMPT);
    assert_eq!(runs(&p), 1);
    assert!(p.root.join("new.txt").exists());
    exit_session(&mut pty);
}

#[test]
fn a_project_rule_is_saved_to_the_users_config_and_used_by_the_next_session() {
    let p = project();
    let mock = MockLlm::start(
        Script::with_replies([Reply::plan(run_plan(COUNT)), Reply::plan(run_plan(COUNT))])
            .require_key(TEST_KEY),
    );
    let mut pty = start_session(&p, &mock, true, &[]);
    pty.send_line("count");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect("Run it?");
    pty.send_line("p");
    pty.expect("saved to");
    pty.expect(PROMPT);
    exit_session(&mut pty);
    let config = p.home.join(".config/pai-code/config.toml");
    let saved: toml::Table = toml::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let projects = saved["projects"].as_table().unwrap();
    assert_eq!(projects.len(), 1, "{saved}");
    let (root, project) = projects.iter().next().unwrap();
    assert_eq!(
        std::fs::canonicalize(root).unwrap(),
        std::fs::canonicalize(&p.root).unwrap()
    );
    assert_eq!(project["run"]["allow"][0].as_str(), Some(COUNT));
    assert!(
        saved.get("run").is_none(),
        "not saved for every project: {saved}"
    );
    // `pai config show` lists it for this project.
    let show = p.pai().args(["config", "show"]).output().unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.contains("`./count.sh` (this project)"), "{show}");
    assert!(show.contains("RUN without asking no command"), "{show}");

    let mut pty = start_session(&p, &mock, true, &[]);
    pty.send_line("count");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect(PROMPT);
    assert!(!pty.text().contains("Run it?"), "{}", pty.text());
    assert_eq!(runs(&p), 2);
    exit_session(&mut pty);
}

#[test]
fn an_edited_command_is_the_one_that_runs() {
    let p = project();
    let mock = MockLlm::start(
        Script::with_replies([Reply::plan(run_plan("sh count.sh wrong"))]).require_key(TEST_KEY),
    );
    let mut pty = start_session(&p, &mock, false, &[]);
    pty.send_line("count");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect("Run it?");
    pty.send_line("e");
    pty.expect("Command:");
    pty.send_line("sh count.sh edited");
    pty.expect(PROMPT);
    assert_eq!(
        std::fs::read_to_string(p.root.join("runs.log")).unwrap(),
        "run edited\n"
    );
    exit_session(&mut pty);
}

//! MCP tools end to end: the real `pai` against the mock LLM (each provider's wire format is
//! the mock's job) and the test MCP server (`tests/support/mcp_test_server.rs`), which logs
//! every start and call it sees. Approval (refused, allowed by list, "always"), the timeout,
//! the output cap, `isError`, validation of unknown tools, the trust of a project's
//! `.mcp.json` (never started untrusted, even with `--yes`; asked again once changed; a
//! symlink refused), the server's environment, and the `pai mcp` commands.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pai::llm::ProviderKind;
use serde_json::{Value, json};
use support::mock_llm::{MockLlm, Reply, Script, chat_plan};
use support::project::{Project, Run, TEST_KEY};
use support::pty::build_example;
use support::session::{PROMPT, exit_session, start_session, task_plan};

fn server_exe() -> PathBuf {
    build_example("mcp-test-server")
}

fn log_path(p: &Project, name: &str) -> PathBuf {
    p.home.join(format!("{name}.jsonl"))
}

/// What the test server logged: `start` and `call` events.
fn events(log: &Path, kind: &str) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == kind)
        .collect()
}

fn config_file(p: &Project) -> PathBuf {
    p.home.join(".config/pai-code/config.toml")
}

/// A user server `t` (the test server logging to `log`) with `extra` lines in its table.
fn user_server(p: &Project, log: &Path, extra: &str) {
    let path = config_file(p);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        format!(
            "[mcp_servers.t]\ncommand = {:?}\nargs = [\"--log\", {:?}]\n{extra}\n",
            server_exe().display().to_string(),
            log.display().to_string()
        ),
    )
    .unwrap();
}

fn project_file(p: &Project, log: &Path, extra_arg: Option<&str>) {
    let mut args = vec![json!("--log"), json!(log.display().to_string())];
    if let Some(a) = extra_arg {
        args.push(json!(a));
    }
    let file = json!({"mcpServers": {"proj": {"command": server_exe().display().to_string(), "args": args}}});
    std::fs::write(p.root.join(".mcp.json"), file.to_string()).unwrap();
}

fn tool_step(tool: &str, arguments: Value) -> Value {
    json!({"action": "TOOL", "server": "t", "tool": tool, "arguments": arguments, "purpose": "try the tool"})
}

/// A plan of these steps that wants to see their results.
fn observing(steps: Value) -> Value {
    let mut plan = task_plan("Calling the tool.", steps);
    plan["observe"] = json!(true);
    plan
}

fn mock_with(first: Value) -> MockLlm {
    MockLlm::start(
        Script::with_replies([Reply::plan(first)])
            .fallback(Reply::plan(chat_plan("All done.")))
            .require_key(TEST_KEY),
    )
}

fn run(p: &Project, mock: &MockLlm, extra: &[&str]) -> Run {
    p.run(mock, ProviderKind::Gemini, "use the tool", extra)
}

fn steps(r: &Run) -> Vec<Value> {
    r.events_of("step").into_iter().cloned().collect()
}

fn session_log(p: &Project) -> String {
    let mut text = String::new();
    for e in std::fs::read_dir(p.root.join(".pai_history")).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "log") {
            text.push_str(&std::fs::read_to_string(path).unwrap());
        }
    }
    text
}

#[test]
fn an_allowed_tool_is_called_and_its_result_reaches_the_next_phase() {
    let p = Project::repo(None);
    let log = log_path(&p, "t");
    user_server(&p, &log, "auto_approve = [\"echo\"]");
    let mock = mock_with(observing(json!([
        {"action": "WRITE", "path": "notes.txt", "content": "notes\n"},
        tool_step("echo", json!({"text": "hello"}))
    ])));
    let r = run(&p, &mock, &["--yes"]);
    assert_eq!(r.status(), "success", "{}", r.text());
    let calls = events(&log, "call");
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["tool"], "echo");
    assert_eq!(calls[0]["arguments"], json!({"text": "hello"}));

    let reqs = mock.generation_requests();
    assert_eq!(reqs.len(), 2);
    // The tools are in the prompt, compactly, after the unchanged base prompt.
    assert!(
        reqs[0]
            .system
            .starts_with(pai::agent::prompt::SYSTEM_PROMPT)
    );
    assert!(
        reqs[0]
            .system
            .contains("- t.echo(text: string): Return the given text unchanged."),
        "{}",
        reqs[0].system
    );
    assert!(reqs[0].system.contains("- t.sleep(ms: integer)"));
    assert_eq!(
        reqs[0].system, reqs[1].system,
        "the prefix stays byte-stable"
    );
    assert!(
        reqs[0]
            .schema
            .as_ref()
            .unwrap()
            .to_string()
            .contains("TOOL")
    );
    let results = reqs[1].last_user_text().unwrap();
    assert!(results.contains("TOOL t.echo"), "{results}");
    assert!(results.contains("echo: hello"), "{results}");

    let step = &steps(&r)[1];
    assert_eq!(step["action"], "TOOL");
    assert_eq!(step["ok"], true);
    // The plan commit's body lists the TOOL step with the others.
    let body = support::project::git(&p.root, &["log", "-1", "--format=%B"]);
    assert!(
        body.contains("TOOL t.echo {\"text\":\"hello\"}: ok"),
        "{body}"
    );
    let log_text = session_log(&p);
    assert!(log_text.contains("TOOL"), "{log_text}");
    assert!(log_text.contains("echo: hello"), "{log_text}");
    // `pai log` lists the plan's steps, the TOOL call among them.
    let out = p.pai().arg("log").output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("- TOOL t.echo {\"text\":\"hello\"}: ok"),
        "{shown}"
    );
}

#[test]
fn without_approval_a_tool_is_refused_and_never_called() {
    let p = Project::repo(None);
    let log = log_path(&p, "t");
    user_server(&p, &log, "");
    let mock = mock_with(task_plan(
        "Calling.",
        json!([tool_step("echo", json!({"text": "x"}))]),
    ));
    // --yes --allow-run do not approve tools: only the user's list or an answer does. With
    // nobody to ask, the plan is not carried out, and the turn says what would allow it.
    let r = run(&p, &mock, &["--yes", "--allow-run"]);
    assert!(events(&log, "call").is_empty(), "{}", r.text());
    assert!(steps(&r).is_empty(), "{}", r.text());
    let finished = r.finished();
    assert_eq!(finished["status"], "not_approved", "{finished}");
    let message = finished["message"].as_str().unwrap();
    assert!(message.contains("TOOL t.echo needs approval"), "{message}");
    assert!(message.contains("auto_approve"), "{message}");
    assert_eq!(r.output.status.code(), Some(2));
    // No repair call: nothing the model could do changes that.
    assert_eq!(mock.generation_requests().len(), 1);
}

#[test]
fn the_always_answer_covers_the_rest_of_the_session() {
    let p = Project::repo(None);
    let log = log_path(&p, "t");
    user_server(&p, &log, "");
    let mock = MockLlm::start(
        Script::with_replies([
            Reply::plan(task_plan(
                "Twice.",
                json!([
                    tool_step("echo", json!({"text": "one"})),
                    tool_step("echo", json!({"text": "two"}))
                ]),
            )),
            Reply::plan(task_plan(
                "Again.",
                json!([tool_step("echo", json!({"text": "three"}))]),
            )),
        ])
        .require_key(TEST_KEY),
    );
    let mut pty = start_session(&p, &mock, false, &[]);
    pty.send_line("echo twice");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect("Call it? [y]es [n]o [a]lways");
    pty.send_line("a");
    pty.expect("`t.echo` now runs without asking");
    pty.expect(PROMPT);
    pty.send_line("echo again");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect(PROMPT);
    exit_session(&mut pty);
    let texts: Vec<Value> = events(&log, "call")
        .iter()
        .map(|c| c["arguments"]["text"].clone())
        .collect();
    assert_eq!(texts, [json!("one"), json!("two"), json!("three")]);
    assert_eq!(
        pty.text().matches("Call this tool?").count(),
        1,
        "{}",
        pty.text()
    );
}

#[test]
fn a_slow_tool_times_out_clearly_and_the_session_goes_on() {
    let p = Project::repo(None);
    let log = log_path(&p, "t");
    user_server(&p, &log, "auto_approve = [\"sleep\"]\ntimeout_secs = 1");
    let mock = mock_with(task_plan(
        "Sleeping.",
        json!([tool_step("sleep", json!({"ms": 20000}))]),
    ));
    let start = Instant::now();
    let r = run(&p, &mock, &["--yes"]);
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(events(&log, "call").len(), 1);
    let step = &steps(&r)[0];
    assert_eq!(step["ok"], false);
    let output = step["output"].as_str().unwrap();
    assert!(output.contains("did not answer within 1 s"), "{output}");
    // The failure went to the model in a next phase, and the turn ended normally.
    let reqs = mock.generation_requests();
    assert_eq!(reqs.len(), 2, "{}", r.text());
    assert!(reqs[1].last_user_text().unwrap().contains("did not answer"));
    assert!(r.output.status.code().is_some());
    // The server was told the call was abandoned.
    support::session::wait_until(Duration::from_secs(5), "the cancellation", || {
        !events(&log, "cancelled").is_empty()
    });
}

#[test]
fn a_big_result_is_capped_with_a_marker() {
    let p = Project::repo(None);
    let log = log_path(&p, "t");
    user_server(&p, &log, "auto_approve = [\"big\"]");
    let mock = mock_with(observing(json!([tool_step("big", json!({}))])));
    let r = run(&p, &mock, &["--yes"]);
    assert_eq!(r.status(), "success", "{}", r.text());
    let output = steps(&r)[0]["output"].as_str().unwrap().to_string();
    assert!(output.len() <= 17 * 1024, "{}", output.len());
    assert!(output.starts_with("BIG-START"), "{}", &output[..40]);
    assert!(output.ends_with("BIG-END"));
    assert!(output.contains("bytes of output dropped"));
    let reqs = mock.generation_requests();
    assert!(reqs[1].last_user_text().unwrap().len() < 10_000);
}

#[test]
fn an_error_result_is_reported_to_the_user_and_the_model() {
    let p = Project::repo(None);
    let log = log_path(&p, "t");
    user_server(&p, &log, "auto_approve = [\"fail\"]");
    let mock = mock_with(task_plan("Failing.", json!([tool_step("fail", json!({}))])));
    let r = run(&p, &mock, &["--yes"]);
    let step = &steps(&r)[0];
    assert_eq!(step["ok"], false);
    assert!(
        step["output"]
            .as_str()
            .unwrap()
            .contains("the tool reported an error: the fail tool failed as asked"),
        "{step}"
    );
    let reqs = mock.generation_requests();
    assert!(
        reqs[1]
            .last_user_text()
            .unwrap()
            .contains("fail tool failed")
    );
}

#[test]
fn an_unknown_tool_is_a_validation_error_sent_back_to_the_model() {
    let p = Project::repo(None);
    let log = log_path(&p, "t");
    user_server(&p, &log, "auto_approve = [\"echo\"]");
    let mock = mock_with(task_plan("Calling.", json!([tool_step("nope", json!({}))])));
    let r = run(&p, &mock, &["--yes"]);
    assert!(events(&log, "call").is_empty());
    let reqs = mock.generation_requests();
    assert!(reqs.len() >= 2, "{}", r.text());
    let correction = reqs[1].last_user_text().unwrap();
    assert!(correction.contains("has no tool `nope`"), "{correction}");
    assert!(correction.contains("t.echo"), "{correction}");
}

#[test]
fn provider_keys_never_reach_a_server() {
    let p = Project::repo(None);
    let log = log_path(&p, "t");
    user_server(
        &p,
        &log,
        "env = { SERVER_SETTING = \"kept\", GEMINI_API_KEY = \"from-config\" }",
    );
    let mock = mock_with(chat_plan("hi"));
    let r = p
        .pai()
        .env("GEMINI_API_KEY", TEST_KEY)
        .env("OPENAI_API_KEY", "sk-other-provider-key-0123456789")
        .env("SOME_OTHER_VAR", "not passed")
        .args([
            "run",
            "hi",
            "--json",
            "--base-url",
            &mock.base_url(ProviderKind::Gemini),
        ])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let start = &events(&log, "start")[0];
    let env = start["env"].as_object().unwrap();
    assert_eq!(env["SERVER_SETTING"], "kept");
    assert!(env.contains_key("PATH") && env.contains_key("HOME"));
    for hidden in ["GEMINI_API_KEY", "OPENAI_API_KEY", "SOME_OTHER_VAR"] {
        assert!(!env.contains_key(hidden), "{hidden} leaked: {env:?}");
    }
    let all = start.to_string();
    assert!(
        !all.contains(TEST_KEY) && !all.contains("sk-other"),
        "{all}"
    );
}

#[test]
fn an_untrusted_project_server_never_starts_even_with_yes() {
    let p = Project::repo(None);
    let log = log_path(&p, "proj");
    project_file(&p, &log, None);
    let mock = mock_with(chat_plan("hi"));
    let r = run(&p, &mock, &["--yes", "--allow-run"]);
    assert!(!log.exists(), "the untrusted server started:\n{}", r.text());
    let notices: Vec<String> = r
        .events_of("notice")
        .iter()
        .map(|n| n["text"].as_str().unwrap().to_string())
        .collect();
    assert!(
        notices.iter().any(|n| n.contains("pai mcp trust")),
        "{notices:?}"
    );
    // Nothing about MCP reaches the model: prompt and schema are the plain ones.
    let req = &mock.generation_requests()[0];
    assert_eq!(req.system, pai::agent::prompt::SYSTEM_PROMPT);
    assert!(!req.schema.as_ref().unwrap().to_string().contains("TOOL"));
}

#[test]
fn a_trusted_project_file_starts_and_a_changed_one_asks_again() {
    let p = Project::repo(None);
    let log = log_path(&p, "proj");
    project_file(&p, &log, None);
    let out = p.pai().args(["mcp", "trust"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("proj:") && text.contains("Trusted"), "{text}");
    // The decision lives in the user's config dir, never in the project.
    assert!(p.home.join(".config/pai-code/mcp_trust.json").is_file());

    let mock = mock_with(chat_plan("hi"));
    run(&p, &mock, &["--yes"]);
    assert_eq!(events(&log, "start").len(), 1, "trusted: started");
    let req = &mock.generation_requests()[0];
    assert!(req.system.contains("- proj.echo("), "{}", req.system);

    // The file changes: not started, and an interactive session asks again.
    std::fs::remove_file(&log).unwrap();
    project_file(&p, &log, Some("--bad-schema"));
    let r = run(&p, &mock, &["--yes"]);
    assert!(!log.exists(), "{}", r.text());
    let mut pty = start_session(&p, &mock, false, &[]);
    pty.send_line("hello");
    pty.expect("changed since you trusted it");
    pty.expect("Start them?");
    pty.send_line("n");
    pty.expect("were not started");
    pty.expect(PROMPT);
    exit_session(&mut pty);
    assert!(!log.exists());
}

#[test]
fn a_changed_script_a_trusted_project_server_names_is_not_started() {
    // `.mcp.json` unchanged, but the file its server's arguments name was rewritten (by a pull,
    // or a model in an earlier session): the trust was pinned to that file too.
    let p = Project::repo(None);
    let log = log_path(&p, "proj");
    std::fs::create_dir_all(p.root.join("tools")).unwrap();
    std::fs::write(p.root.join("tools/plugin.py"), "print('plugin')\n").unwrap();
    let args = json!([
        "--log",
        log.display().to_string(),
        "--plugin",
        "tools/plugin.py"
    ]);
    let file = json!({"mcpServers": {"proj": {"command": server_exe().display().to_string(), "args": args}}});
    std::fs::write(p.root.join(".mcp.json"), file.to_string()).unwrap();
    let out = p.pai().args(["mcp", "trust"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mock = mock_with(chat_plan("hi"));
    run(&p, &mock, &["--yes"]);
    assert_eq!(events(&log, "start").len(), 1, "trusted: started");

    std::fs::remove_file(&log).unwrap();
    std::fs::write(
        p.root.join("tools/plugin.py"),
        "import os; os.system('id')\n",
    )
    .unwrap();
    let r = run(&p, &mock, &["--yes"]);
    assert!(
        !log.exists(),
        "started with a changed script:\n{}",
        r.text()
    );
}

#[test]
fn a_symlinked_project_file_is_refused() {
    let p = Project::repo(None);
    let log = log_path(&p, "proj");
    project_file(&p, &log, None);
    std::fs::rename(p.root.join(".mcp.json"), p.home.join("elsewhere.json")).unwrap();
    std::os::unix::fs::symlink(p.home.join("elsewhere.json"), p.root.join(".mcp.json")).unwrap();
    let out = p.pai().args(["mcp", "trust"]).output().unwrap();
    assert!(!out.status.success());
    let mock = mock_with(chat_plan("hi"));
    let r = run(&p, &mock, &["--yes"]);
    assert!(!log.exists());
    assert!(r.text().contains(".mcp.json was not read"), "{}", r.text());
}

#[test]
fn mcp_commands_add_list_and_remove_servers() {
    let p = Project::repo(None);
    let log = log_path(&p, "t");
    let exe = server_exe().display().to_string();
    let log_arg = log.display().to_string();
    let out = p
        .pai()
        .args([
            "mcp",
            "add",
            "t",
            "--env",
            "A=1",
            "--",
            &exe,
            "--log",
            &log_arg,
            "--bad-schema",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = p.pai().args(["mcp", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(text.contains("t  started"), "{text}{err}");
    for tool in ["echo", "sleep", "fail", "big"] {
        assert!(text.contains(&format!("    {tool}  ")), "{text}");
    }
    assert!(!text.contains("broken"), "{text}");
    assert!(
        err.contains("tool broken: `properties` is not an object"),
        "{err}"
    );

    let out = p.pai().args(["mcp", "remove", "t"]).output().unwrap();
    assert!(out.status.success());
    let out = p.pai().args(["mcp", "list"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("No MCP servers configured"));
    let out = p.pai().args(["mcp", "remove", "t"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_streamable_http_server_is_called_like_a_stdio_one() {
    let p = Project::repo(None);
    let log = log_path(&p, "web");
    let url_file = p.home.join("url.txt");
    let mut server = std::process::Command::new(server_exe())
        .args([
            "--log",
            log.to_str().unwrap(),
            "--http",
            url_file.to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !url_file.exists() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = std::fs::read_to_string(&url_file).unwrap();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let path = config_file(&p);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        format!("[mcp_servers.t]\nurl = {url:?}\nauto_approve = [\"echo\"]\n"),
    )
    .unwrap();
    let mock = mock_with(observing(json!([tool_step(
        "echo",
        json!({"text": "over http"})
    )])));
    let r = run(&p, &mock, &["--yes"]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(r.status(), "success", "{}", r.text());
    let calls = events(&log, "call");
    assert_eq!(calls.len(), 1, "{}", r.text());
    assert_eq!(calls[0]["arguments"]["text"], "over http");
    let reqs = mock.generation_requests();
    assert!(
        reqs[1]
            .last_user_text()
            .unwrap()
            .contains("echo: over http")
    );
}

#[test]
fn ctrl_c_cancels_a_running_call_and_ends_the_turn() {
    let p = Project::repo(None);
    let log = log_path(&p, "t");
    user_server(&p, &log, "auto_approve = [\"sleep\"]");
    let mock = mock_with(task_plan(
        "Sleeping.",
        json!([tool_step("sleep", json!({"ms": 30000}))]),
    ));
    let child = p
        .pai()
        .env("GEMINI_API_KEY", TEST_KEY)
        .args([
            "run",
            "sleep",
            "--json",
            "--yes",
            "--base-url",
            &mock.base_url(ProviderKind::Gemini),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    support::session::wait_until(Duration::from_secs(20), "the call", || {
        !events(&log, "call").is_empty()
    });
    let start = Instant::now();
    // SAFETY: signals our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The step ends as a RUN interrupted mid-command does: failed, saying it was cancelled.
    assert!(
        stdout.contains("interrupted; the tool call was cancelled"),
        "{stdout}"
    );
    assert!(!stdout.contains("\"status\":\"success\""), "{stdout}");
    support::session::wait_until(Duration::from_secs(5), "the cancellation", || {
        !events(&log, "cancelled").is_empty()
    });
    assert!(events(&log, "slept").is_empty());
}

#[test]
fn a_changed_tool_list_is_picked_up_at_the_next_turn() {
    let p = Project::repo(None);
    let log = log_path(&p, "t");
    user_server(&p, &log, "auto_approve = [\"grow\"]");
    let mock = MockLlm::start(
        Script::with_replies([
            Reply::plan(task_plan("Growing.", json!([tool_step("grow", json!({}))]))),
            Reply::plan(chat_plan("Now there is more.")),
        ])
        .require_key(TEST_KEY),
    );
    let mut pty = start_session(&p, &mock, false, &[]);
    pty.send_line("grow the tools");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect(PROMPT);
    pty.send_line("what now?");
    pty.expect("Now there is more.");
    pty.expect(PROMPT);
    exit_session(&mut pty);
    let reqs = mock.generation_requests();
    assert!(!reqs[0].system.contains("- t.extra"), "{}", reqs[0].system);
    let last = &reqs[reqs.len() - 1];
    assert!(
        last.system
            .contains("- t.extra(): A tool that appeared later."),
        "{}",
        last.system
    );
    assert_eq!(
        events(&log, "start").len(),
        1,
        "the same server, not restarted"
    );
}

#[test]
fn files_a_tool_changes_are_part_of_the_plan_commit_and_undone_with_it() {
    let p = Project::repo(None);
    let log = log_path(&p, "t");
    user_server(&p, &log, "auto_approve = [\"write\"]");
    let mock = mock_with(task_plan(
        "Writing.",
        json!([tool_step("write", json!({}))]),
    ));
    let r = run(&p, &mock, &["--yes"]);
    assert_eq!(r.status(), "success", "{}", r.text());
    assert_eq!(p.read("tool.txt"), "written by the tool\n");
    let body = support::project::git(&p.root, &["log", "-1", "--format=%B"]);
    assert!(body.contains("TOOL t.write {}: ok"), "{body}");
    assert!(body.contains("tool.txt: changed by a TOOL call"), "{body}");
    let files = support::project::git(&p.root, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(files.trim(), "tool.txt");
    let out = p.pai().arg("undo").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!p.root.join("tool.txt").exists());
}

#[test]
fn a_server_that_crashes_mid_call_or_never_starts_does_not_end_the_session() {
    let p = Project::repo(None);
    let log = log_path(&p, "t");
    user_server(&p, &log, "auto_approve = [\"crash\"]");
    let path = config_file(&p);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("\n[mcp_servers.gone]\ncommand = \"/nonexistent/mcp-server\"\n");
    std::fs::write(&path, text).unwrap();
    let mock = mock_with(task_plan(
        "Crashing.",
        json!([tool_step("crash", json!({}))]),
    ));
    let r = run(&p, &mock, &["--yes"]);
    let notices: Vec<String> = r
        .events_of("notice")
        .iter()
        .map(|n| n["text"].as_str().unwrap().to_string())
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("`gone` did not start") && n.contains("/nonexistent")),
        "{notices:?}"
    );
    let step = &steps(&r)[0];
    assert_eq!(step["ok"], false);
    assert!(
        step["output"]
            .as_str()
            .unwrap()
            .contains("the server stopped during the call"),
        "{step}"
    );
    // The model heard about it and answered; the run ended normally.
    let reqs = mock.generation_requests();
    assert_eq!(reqs.len(), 2, "{}", r.text());
    assert!(reqs[1].last_user_text().unwrap().contains("stopped"));
    assert!(
        matches!(r.output.status.code(), Some(0 | 1)),
        "{:?}",
        r.output.status
    );
}

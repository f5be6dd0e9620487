//! The evaluation (`cargo run --example eval`) against the mock server, as CI runs it: every
//! task of `fixtures/eval/` passes its checks with the scripted replies, in the number of calls
//! the script allows, and the table adds up.

use crate::eval_core as core;
use crate::support;

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use pai::llm::ProviderKind;
use support::mock_llm::{MockLlm, Script};
use support::project::TEST_KEY;

/// Tasks run side by side: each has its own scratch repository, home and mock server.
const WORKERS: usize = 2;

/// One task against one wire format, checked against what the mock saw.
fn run_one(kind: ProviderKind, task: &core::Task) -> core::Outcome {
    let script = Script::from_json(&task.script.to_string()).unwrap();
    let replies = task.script["replies"].as_array().unwrap().len() as u64;
    let mock = MockLlm::start(script);
    let target = core::Target {
        pai: env!("CARGO_BIN_EXE_pai").into(),
        provider: kind.name().to_string(),
        model: None,
        base_url: Some(mock.base_url(kind)),
        hermetic_key: Some((kind.key_env_var().to_string(), TEST_KEY.into())),
    };
    let row = core::run(task, &target);
    assert!(row.ok, "{kind} {}: {:?}", task.name, row.failure);
    // The counts are pai's own report, and they match what the server saw.
    assert_eq!(row.calls, mock.calls(), "{kind} {}", task.name);
    assert_eq!(
        row.calls, replies,
        "{kind} {}: one call per scripted reply",
        task.name
    );
    assert_eq!(row.input, mock.input_tokens(), "{kind} {}", task.name);
    assert_eq!(row.output, mock.output_tokens(), "{kind} {}", task.name);
    assert_eq!(row.cached, mock.cached_tokens(), "{kind} {}", task.name);
    row
}

#[test]
fn every_eval_task_passes_against_the_mock_in_every_wire_format() {
    let tasks = core::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/eval"));
    assert_eq!(
        tasks.iter().filter(|t| t.thesis).count(),
        5,
        "the thesis scenarios"
    );
    assert!(
        tasks.iter().filter(|t| !t.thesis).count() >= 20,
        "everyday tasks"
    );
    let jobs: Vec<(usize, usize)> = (0..ProviderKind::ALL.len())
        .flat_map(|k| (0..tasks.len()).map(move |t| (k, t)))
        .collect();
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<core::Outcome>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..WORKERS {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(k, t)) = jobs.get(i) else { break };
                    let row = run_one(ProviderKind::ALL[k], &tasks[t]);
                    done.lock().unwrap()[i] = Some(row);
                }
            });
        }
    });
    let mut rows = done.into_inner().unwrap().into_iter().map(Option::unwrap);
    for kind in ProviderKind::ALL {
        let rows: Vec<core::Outcome> = rows.by_ref().take(tasks.len()).collect();
        let table = core::table(&format!("eval against the mock ({kind})"), &rows);
        assert!(
            table.contains(&format!("**{} passed, 0 failed**", rows.len())),
            "{table}"
        );
        let calls: u64 = rows.iter().map(|r| r.calls).sum();
        assert!(
            table.contains(&format!("| {calls} |")),
            "the totals row adds up the calls: {table}"
        );
        eprintln!("{table}");
    }
}

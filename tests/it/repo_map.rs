//! The repository map end to end: in a project too big to list whole, the first
//! call carries the files ranked for the request with their definitions and the best file's
//! text, in one call; `pai map` shows what it would carry and why.

use std::fs;

use crate::support;

use pai::llm::ProviderKind;
use serde_json::{Value, json};
use support::mock_llm::{MockLlm, Reply, Script};
use support::project::{Project, TEST_KEY, git};
use support::session::task_plan;

/// A committed project of 250 filler modules (their list is far over the 2,000 characters a
/// whole file list may take) and one module about invoices.
fn big_project() -> Project {
    let p = Project::repo(None);
    for i in 0..250 {
        let dir = p.root.join(format!("lib/area_{:02}", i / 25));
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join(format!("util_{i:03}.py")),
            format!("def util_{i}(x):\n    return x * {i}\n"),
        )
        .unwrap();
    }
    fs::create_dir_all(p.root.join("app/billing")).unwrap();
    fs::write(
        p.root.join("app/billing/invoice.py"),
        "from lib.area_00.util_000 import util_0\n\n\nclass Invoice:\n    def compute_tax(self, rate):\n        return util_0(self.total) * rate\n",
    )
    .unwrap();
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-q", "-m", "project"]);
    p
}

#[test]
fn pai_map_ranks_the_file_a_request_is_about_and_says_why() {
    let p = big_project();
    let out = p
        .pai()
        .args(["map", "the tax on an invoice uses the wrong rate", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ranked"][0]["path"], "app/billing/invoice.py", "{v:#}");
    assert_eq!(v["first_call_uses_map"], true);
    let why = &v["ranked"][0]["why"];
    assert!(
        why["path_words"]
            .as_array()
            .unwrap()
            .contains(&json!("invoic")),
        "{why}"
    );
    assert!(
        v["text"]
            .as_str()
            .unwrap()
            .contains("def compute_tax(self, rate):")
    );
    assert_eq!(v["files"], 251);

    // A file whose name and text carry terminal escapes (an OSC 52 clipboard write).
    fs::write(
        p.root.join("app/billing/tax_\x1b]52;c;ZXZpbA==\x07.py"),
        "RATE = '\x1b[2J invoice tax'\n",
    )
    .unwrap();
    let text = p
        .pai()
        .args(["map", "the tax on an invoice uses the wrong rate"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("  1. app/billing/invoice.py"), "{text}");
    assert!(text.contains("Repository map: 252 files"), "{text}");
    assert!(text.contains("tax_?]52;c;ZXZpbA==?.py"), "{text}");
    assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
}

#[test]
fn pai_map_json_carries_backticked_text_exactly() {
    // Rails' own docs hold SQL in backticks; the output layer quotes words of backticked
    // commands for the terminal, which must never reach JSON (an escaped quote is not JSON).
    let p = big_project();
    let sql = "# Invoice tax: `SELECT `invoices`.* WHERE name IN ('bell' 'hooks')` $(touch x)\n";
    fs::write(p.root.join("app/billing/invoice_tax.rb"), sql).unwrap();
    let out = p
        .pai()
        .args(["map", "the tax on an invoice uses the wrong rate", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    let text = v["text"].as_str().unwrap();
    assert!(text.contains(sql), "{text}");
}

#[test]
fn the_first_call_of_a_big_project_carries_the_map_and_the_files_text_in_one_call() {
    let p = big_project();
    let plan = task_plan(
        "Fixing the rate.",
        json!([{"action": "MODIFY", "path": "app/billing/invoice.py",
                "edits": [{"search": "* rate", "replace": "* (1 + rate)"}],
                "purpose": "apply the rate on top"}]),
    );
    let mock = MockLlm::start(Script::with_replies([Reply::plan(plan)]).require_key(TEST_KEY));
    let run = p.run(
        &mock,
        ProviderKind::Gemini,
        "the invoice tax rate is applied wrong",
        &["--yes"],
    );
    assert_eq!(run.status(), "success", "{}", run.text());
    assert_eq!(mock.calls(), 1);
    let first = &mock.requests()[0];
    let user = &first.messages[0].1;
    assert!(user.contains("Repository map: 251 files"), "{user}");
    assert!(user.contains("app/billing/invoice.py\n"), "{user}");
    assert!(
        user.contains("class Invoice:"),
        "the file's text is sent: {user}"
    );
    assert!(first.input_tokens <= 8_000, "{}", first.input_tokens);
    assert!(p.read("app/billing/invoice.py").contains("* (1 + rate)"));
}

#[test]
fn a_small_project_still_gets_its_whole_file_list() {
    let p = Project::repo(Some("calculator"));
    let mock = MockLlm::start(
        Script::with_replies([Reply::plan(task_plan("Nothing to do.", json!([])))])
            .require_key(TEST_KEY),
    );
    let _ = p.run(
        &mock,
        ProviderKind::Gemini,
        "look at calculator.py",
        &["--yes"],
    );
    let user = &mock.requests()[0].messages[0].1;
    assert!(user.starts_with("Project files ("), "{user}");
    assert!(!user.contains("Repository map"), "{user}");
}

/// A file the request names is found by its path whatever the project's
/// size — here the 99,999th of 100,000 files, which no bounded walk reaches — and its text is
/// in the first call.
#[test]
fn a_named_file_is_found_among_100000_files() {
    let p = Project::plain();
    for t in 0..10 {
        for m in 0..100 {
            let dir = p.root.join(format!("t{t:02}/m{m:03}"));
            fs::create_dir_all(&dir).unwrap();
            for f in 0..100 {
                fs::write(dir.join(format!("f{f:03}.txt")), b"").unwrap();
            }
        }
    }
    fs::write(p.root.join("t09/m099/f099.txt"), "the needle is here\n").unwrap();
    let mock = MockLlm::start(
        Script::with_replies([Reply::chat("It holds a needle.")]).require_key(TEST_KEY),
    );
    let run = p.run(
        &mock,
        ProviderKind::Gemini,
        "what is in t09/m099/f099.txt?",
        &[],
    );
    assert_eq!(run.status(), "answered", "{}", run.text());
    let user = &mock.requests()[0].messages[0].1;
    assert!(
        user.contains("Repository map: 100000 files"),
        "{}",
        &user[..user.len().min(400)]
    );
    assert!(
        user.contains("Current contents of t09/m099/f099.txt:\n```\nthe needle is here\n"),
        "{}",
        &user[..user.len().min(2000)]
    );
}

/// The files `pai map` shows for a small project whose HOME holds `home_files`, with
/// `env` added to pai's environment.
fn listed_with_home(home_files: &[(&str, &str)], env: &[(&str, &str)]) -> String {
    let p = Project::repo(None);
    fs::write(p.root.join("kept.txt"), "kept\n").unwrap();
    fs::write(p.root.join("private.secretlog"), "secret\n").unwrap();
    for (name, text) in home_files {
        let path = p.home.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text.replace("HOME", &p.home.to_string_lossy())).unwrap();
    }
    let mut cmd = p.pai();
    for (k, v) in env {
        cmd.env(k, v.replace("HOME", &p.home.to_string_lossy()));
    }
    let out = cmd
        .args(["map", "the kept file", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v["text"].as_str().unwrap().to_string();
    assert!(text.contains("kept.txt"), "{text}");
    text
}

#[test]
fn the_users_global_ignore_file_hides_files_where_git_finds_it() {
    let ignore = ("global-ignore", "*.secretlog\n");
    // `core.excludesFile` in ~/.gitconfig (a `~/` path, as users write it).
    let text = listed_with_home(
        &[
            (".gitconfig", "[core]\n\texcludesFile = ~/global-ignore\n"),
            ignore,
        ],
        &[("GIT_CONFIG_GLOBAL", "")],
    );
    assert!(!text.contains("private.secretlog"), "{text}");
    // ... in the file GIT_CONFIG_GLOBAL names, which replaces ~/.gitconfig.
    let text = listed_with_home(
        &[
            (
                "elsewhere.cfg",
                "[core]\n\texcludesfile = HOME/global-ignore\n",
            ),
            ignore,
        ],
        &[("GIT_CONFIG_GLOBAL", "HOME/elsewhere.cfg")],
    );
    assert!(!text.contains("private.secretlog"), "{text}");
    // git's default place when no configuration names one.
    let text = listed_with_home(&[(".config/git/ignore", "*.secretlog\n")], &[]);
    assert!(!text.contains("private.secretlog"), "{text}");
    // The variable in another section is not git's: nothing is hidden.
    let text = listed_with_home(
        &[
            (".gitconfig", "[alias]\n\texcludesFile = ~/global-ignore\n"),
            ignore,
        ],
        &[("GIT_CONFIG_GLOBAL", "")],
    );
    assert!(text.contains("private.secretlog"), "{text}");
}

/// `pai map --explain` says why each file's text is shown as it is: a long module is cut to the
/// definition the request is about, shown with its lines, its score and the request's words in
/// it; the unrelated definitions around it are left out.
#[test]
fn pai_map_explain_says_why_each_excerpt_was_chosen() {
    let p = big_project();
    let mut module = String::from("import math\n\n\nclass Ledger:\n");
    for i in 0..300 {
        module.push_str(&format!(
            "    def entry_{i}(self, value):\n        \"\"\"Book entry {i} of the month.\"\"\"\n        return math.floor(value) + {i}\n\n"
        ));
    }
    let tax_line = module.lines().count() + 1;
    module.push_str("    def invoice_tax(self, rate):\n        return self.total * rate\n");
    fs::write(p.root.join("app/billing/ledger.py"), &module).unwrap();
    let out = p
        .pai()
        .args([
            "map",
            "the invoice_tax of a ledger uses the wrong rate",
            "--explain",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let (explained, map) = text
        .split_once("--- the map as the model reads it ---")
        .unwrap();
    assert!(explained.contains("\nText shown ("), "{explained}");
    let head = explained
        .lines()
        .find(|l| l.starts_with("  app/billing/ledger.py (#"))
        .unwrap_or_else(|| panic!("no line for ledger.py: {explained}"));
    assert!(head.contains("excerpts, lines "), "{head}");
    let unit = explained
        .lines()
        .find(|l| l.contains(" invoice_tax: score "))
        .unwrap_or_else(|| panic!("no line for invoice_tax: {explained}"));
    assert!(
        unit.starts_with(&format!("    lines {tax_line}-{}", tax_line + 1)),
        "{unit}"
    );
    assert!(unit.contains("rate"), "{unit}");
    assert!(unit.contains("name "), "{unit}");
    // The excerpt is in the map with its line numbers; the filler far from it is not.
    assert!(
        map.contains(&format!("lines {tax_line}-"))
            || map.contains(&format!("-{}:\n", tax_line + 1)),
        "{map}"
    );
    assert!(map.contains("    def invoice_tax(self, rate):\n"), "{map}");
    assert!(!map.contains("def entry_150("), "{map}");
    // Without --explain the section is not printed.
    let plain = p
        .pai()
        .args(["map", "the invoice_tax of a ledger uses the wrong rate"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("\nText shown ("));
}

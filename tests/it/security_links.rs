//! The third review's attacks on the deny-list through hard links: a file shipped as a second
//! name of `.env` (`envcopy.txt`, `AGENTS.md`, `app/settings_loader.py`) must not carry the
//! secret's text to the model under its innocent name, neither in a READ nor in the first
//! call's context (named files, project instructions, the map's excerpts) nor in `pai map`'s
//! output. The oracle is the canary the test planted in `.env`, looked for in every request
//! body and every output; a control shows the same files are read once they are files of
//! their own.

use super::*;

impl Ctx {
    /// `name` made a second name of the project's `.env`, as a tarball can ship it.
    fn link_to_env(&mut self, name: &str) {
        let path = self.p(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let _ = fs::remove_file(&path);
        fs::hard_link(self.p(".env"), &path).unwrap();
        self.arm();
    }

    /// `pai run <request>` with the model answering `replies`.
    fn run_request(&mut self, request: &str, replies: Vec<Reply>, flags: &[&str]) -> String {
        let mock = MockLlm::start(
            Script::with_replies(replies).fallback(Reply::chat("Nothing more to do.")),
        );
        let mut cmd = self.pai();
        cmd.args(["run", request, "--json", "--provider", KIND.name()])
            .args(["--base-url", &mock.base_url(KIND)])
            .args(flags);
        let out = cmd.output().unwrap();
        self.requests
            .extend(mock.requests().into_iter().map(|r| r.raw_body));
        self.keep(&out)
    }
}

fn env_canary() -> String {
    canary(".env")
}

attacks! {
    hard_link_read_under_an_innocent_name: Ctx::repo() => |c| {
        c.link_to_env("envcopy.txt");
        let out = c.run(read_and_look("envcopy.txt"), &["--yes"]);
        assert!(!out.contains(&env_canary()), "{out}");
        assert!(out.contains("hard links"), "the refusal says why: {out}");
    }
    hard_link_named_in_the_request: Ctx::repo() => |c| {
        c.link_to_env("envcopy.txt");
        c.run_request("what does envcopy.txt say?", vec![Reply::chat("ok")], &["--yes"]);
    }
    hard_link_as_the_project_instructions: Ctx::repo() => |c| {
        c.link_to_env("AGENTS.md");
        c.run_request("follow the project instructions", vec![Reply::chat("ok")], &["--yes"]);
    }
    hard_link_as_a_source_file_in_the_map: Ctx::repo() => |c| {
        // A source file the request's words rank first: its excerpt is the map's.
        c.link_to_env("app/settings_loader.py");
        // The user's cache directory exists, as in a real home (the map keeps its cache there).
        fs::create_dir_all(c.home.join(".cache")).unwrap();
        for i in 0..40 {
            fs::write(c.p(&format!("mod{i}.py")), format!("def f{i}():\n    return {i}\n")).unwrap();
        }
        c.arm();
        c.run_request("fix settings_loader VALUE loading in app", vec![Reply::chat("ok")], &["--yes"]);
        let map = c.cmd(&["map", "settings_loader VALUE loading"]);
        assert!(!map.contains(&env_canary()), "pai map printed the secret:\n{map}");
    }
    hard_link_to_a_file_outside_the_project: Ctx::repo() => |c| {
        let _ = fs::remove_file(c.p("notes.txt"));
        fs::hard_link(c.victim.join("secret.txt"), c.p("notes.txt")).unwrap();
        c.arm();
        c.run(read_and_look("notes.txt"), &["--yes"]);
        c.run_request("summarise notes.txt", vec![Reply::chat("ok")], &["--yes"]);
    }
    hard_link_control_a_file_of_its_own_is_read: Ctx::repo() => |c| {
        fs::write(c.p("envcopy.txt"), "plain words\n").unwrap();
        c.arm();
        let out = c.run(read_and_look("envcopy.txt"), &["--yes"]);
        assert!(c.requests.iter().any(|r| r.contains("plain words")), "{out}");
    }
}

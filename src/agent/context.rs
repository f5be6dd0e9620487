//! The context sent with a turn's first call, within a budget: the project's file list (or, in
//! a project too big to list whole, the repository map ranked for the request), the
//! `AGENTS.md` instructions, the full text of the files the request names or the last plan
//! touched, and a short memory of the session's last turns. Everything the model needs for a
//! simple task is here, so a simple task costs one call.

use std::collections::VecDeque;

/// Turns remembered.
pub const MEMORY_TURNS: usize = 5;

/// How much context to send, in characters (about 4 per token).
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Characters of the file list.
    pub file_list_chars: usize,
    /// Characters of all file contents together.
    pub file_text_chars: usize,
    /// Characters of one file's contents.
    pub one_file_chars: usize,
    /// Characters of AGENTS.md.
    pub agents_chars: usize,
    /// Tokens the whole first call may carry in a project too big to list whole (system
    /// prompt, map, files' text, instructions, memory, request), at about 4 characters each.
    pub context_tokens: usize,
}

pub use crate::config::DEFAULT_CONTEXT_TOKENS;

impl Default for Budget {
    fn default() -> Self {
        Self {
            file_list_chars: 2_000,
            file_text_chars: 48_000,
            one_file_chars: 24_000,
            agents_chars: 4_000,
            context_tokens: DEFAULT_CONTEXT_TOKENS,
        }
    }
}

/// What the context builder needs from the project. The workspace implements it; tests use a
/// map.
pub trait ProjectView {
    /// Up to `max` project files (relative paths, `.gitignore`-aware, deny-list filtered),
    /// sorted, and how many more there are.
    fn files(&self, max: usize) -> (Vec<String>, usize);
    /// A text file's contents (None for binary, missing or refused files).
    fn text(&self, path: &str) -> Option<String>;
    /// The repository map for `request` within `budget_chars` (None: no map, send the file
    /// list). `last_files` are the files the last plan changed.
    fn map(&self, request: &str, budget_chars: usize, last_files: &[String]) -> Option<String> {
        let _ = (request, budget_chars, last_files);
        None
    }
}

/// One remembered turn.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TurnMemo {
    /// What the user asked.
    pub request: String,
    /// How it ended, in a few words.
    pub outcome: String,
    /// Files it changed.
    pub files: Vec<String>,
}

/// The session's memory of its last turns.
#[derive(Debug, Clone, Default)]
pub struct Memory {
    turns: VecDeque<TurnMemo>,
}

impl Memory {
    /// Remember a turn, forgetting the oldest beyond [`MEMORY_TURNS`].
    pub fn push(&mut self, memo: TurnMemo) {
        if self.turns.len() == MEMORY_TURNS {
            self.turns.pop_front();
        }
        self.turns.push_back(memo);
    }

    /// The remembered turns, oldest first.
    pub fn turns(&self) -> impl Iterator<Item = &TurnMemo> {
        self.turns.iter()
    }

    /// Forget everything (`/clear`).
    pub fn clear(&mut self) {
        self.turns.clear();
    }

    /// Files the last turn changed.
    pub fn last_files(&self) -> &[String] {
        self.turns
            .back()
            .map(|t| t.files.as_slice())
            .unwrap_or_default()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }
}

/// Files the request names, by relative path or, when unambiguous, by file name.
pub fn named_files(request: &str, files: &[String]) -> Vec<String> {
    crate::map::named::named_files(request, files)
}

/// Build the first message of a turn.
pub fn build(request: &str, project: &dyn ProjectView, memory: &Memory, budget: &Budget) -> String {
    build_in(request, project, memory, budget, None)
}

/// [`build`] for a user who started pai in `subdir` of the project (relative to the root):
/// the model is told where the user stands, since "here" and the file names they use are
/// relative to it, while the paths of steps stay relative to the project root.
pub fn build_in(
    request: &str,
    project: &dyn ProjectView,
    memory: &Memory,
    budget: &Budget,
    subdir: Option<&str>,
) -> String {
    let (files, more) = project.files(2_000);
    if !fits(&files, more, budget)
        && let Some(out) = with_map(request, project, memory, budget, subdir)
    {
        return out;
    }
    let mut out = String::new();
    push_file_list(&mut out, &files, more, budget);
    push_agents(&mut out, project, budget);
    push_file_contents(
        &mut out,
        project,
        wanted_files(request, &files, memory),
        budget,
    );
    push_memory(&mut out, memory);
    push_whereabouts(&mut out, subdir);
    out.push_str(&format!("\nRequest: {request}\n"));
    out
}

/// Whether the whole file list fits its budget (a small project: it is sent whole, with the
/// files the request names, as always).
pub fn fits(files: &[String], more: usize, budget: &Budget) -> bool {
    more == 0 && fits_paths(files.iter().map(String::as_str), budget)
}

/// [`fits`] for every file of the project, given as paths borrowed from where they are held
/// (no copy of a big project's file list just to measure it).
pub fn fits_paths<'a>(files: impl IntoIterator<Item = &'a str>, budget: &Budget) -> bool {
    let mut chars = 0usize;
    for f in files {
        chars += f.len() + 1;
        if chars > budget.file_list_chars {
            return false;
        }
    }
    true
}

/// The first message of a big project: the repository map (ranked files, their definitions,
/// the best files' text) in what the budget leaves after everything else.
fn with_map(
    request: &str,
    project: &dyn ProjectView,
    memory: &Memory,
    budget: &Budget,
    subdir: Option<&str>,
) -> Option<String> {
    let mut tail = String::new();
    push_agents(&mut tail, project, budget);
    push_memory(&mut tail, memory);
    push_whereabouts(&mut tail, subdir);
    tail.push_str(&format!("\nRequest: {request}\n"));
    let total = budget.context_tokens.saturating_mul(4);
    let room = total
        .saturating_sub(super::prompt::SYSTEM_PROMPT.len())
        .saturating_sub(tail.len())
        .max(2_000);
    let map = project.map(request, room, memory.last_files())?;
    Some(format!("{map}{tail}"))
}

/// The project's file list, trimmed to its budget; what is left out is counted so the model
/// knows to look with TREE or SEARCH.
fn push_file_list(out: &mut String, files: &[String], more: usize, budget: &Budget) {
    let mut listed = 0;
    let mut list = String::new();
    for f in files {
        if list.len() + f.len() + 1 > budget.file_list_chars {
            break;
        }
        list.push_str(f);
        list.push('\n');
        listed += 1;
    }
    let omitted = files.len() - listed + more;
    if files.is_empty() {
        out.push_str("Project files: none yet (empty project).\n");
    } else {
        out.push_str(&format!("Project files ({listed} listed):\n{list}"));
        if omitted > 0 {
            out.push_str(&format!(
                "({omitted} more not listed; use TREE or SEARCH to find them)\n"
            ));
        }
    }
}

/// The project's `AGENTS.md` instructions, when it has them, within their own budget.
fn push_agents(out: &mut String, project: &dyn ProjectView, budget: &Budget) {
    if let Some(agents) = project.text("AGENTS.md") {
        out.push_str("\nProject instructions (AGENTS.md):\n");
        out.push_str(&truncate(&agents, budget.agents_chars));
        out.push('\n');
    }
}

/// The files whose contents are worth sending: those the request names, then those the last
/// turn changed (a follow-up usually means them) that still exist, each once.
fn wanted_files(request: &str, files: &[String], memory: &Memory) -> Vec<String> {
    let mut wanted = named_files(request, files);
    for f in memory.last_files() {
        if !wanted.contains(f) && files.contains(f) {
            wanted.push(f.clone());
        }
    }
    wanted
}

/// The contents of `wanted`, in order, within the budget for all files and for each one; a
/// file that no longer fits is named so the model can READ it. `AGENTS.md` is never sent
/// twice.
fn push_file_contents(
    out: &mut String,
    project: &dyn ProjectView,
    wanted: Vec<String>,
    budget: &Budget,
) {
    let mut spent = 0;
    for path in wanted {
        if path == "AGENTS.md" {
            continue;
        }
        let Some(text) = project.text(&path) else {
            continue;
        };
        let room = budget
            .file_text_chars
            .saturating_sub(spent)
            .min(budget.one_file_chars);
        if room < 200 {
            out.push_str(&format!(
                "\n(contents of {path} not included: context budget spent; READ it if needed)\n"
            ));
            continue;
        }
        let shown = truncate(&text, room);
        spent += shown.len();
        let fence = crate::fence::for_text(&shown);
        out.push_str(&format!("\nCurrent contents of {path}:\n{fence}\n{shown}"));
        if !shown.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&fence);
        out.push('\n');
    }
}

/// The session's last turns, oldest first, each request cut short so memory stays cheap.
fn push_memory(out: &mut String, memory: &Memory) {
    if !memory.is_empty() {
        out.push_str("\nEarlier in this session:\n");
        for (i, t) in memory.turns.iter().enumerate() {
            let files = if t.files.is_empty() {
                String::new()
            } else {
                format!("; files: {}", t.files.join(", "))
            };
            out.push_str(&format!(
                "{}. {:?} -> {}{files}\n",
                i + 1,
                truncate(&t.request, 200),
                t.outcome
            ));
        }
    }
}

/// Where the user stands, when below the project root: their bare file names and "here" mean
/// that folder, while step paths stay relative to the root.
fn push_whereabouts(out: &mut String, subdir: Option<&str>) {
    if let Some(sub) = subdir.filter(|s| !s.is_empty()) {
        out.push_str(&format!(
            "\nThe user is working in the folder {sub}/ of the project: a file they name without a folder, or \"here\", means {sub}/<name>. Paths in steps are relative to the project root, so write {sub}/<name>.\n"
        ));
    }
}

/// Where to cut `text` (longer than `max`) to keep at most `max` bytes: after a line's end,
/// unless the last whole line ends in the first half, then at a character boundary.
pub fn cut_point(text: &str, max: usize) -> usize {
    let mut cut = max.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text[..cut]
        .rfind('\n')
        .map(|i| i + 1)
        .filter(|&i| i > max / 2)
        .unwrap_or(cut)
}

/// At most `max` characters of `text`, cut at a line end where possible and marked.
pub fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let cut = cut_point(text, max);
    format!(
        "{}\n[... truncated: {} of {} bytes shown]",
        &text[..cut],
        cut,
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    struct Fake(BTreeMap<String, String>);

    impl ProjectView for Fake {
        fn files(&self, max: usize) -> (Vec<String>, usize) {
            let all: Vec<String> = self.0.keys().cloned().collect();
            let more = all.len().saturating_sub(max);
            (all.into_iter().take(max).collect(), more)
        }
        fn text(&self, path: &str) -> Option<String> {
            self.0.get(path).cloned()
        }
    }

    fn fake(files: &[(&str, &str)]) -> Fake {
        Fake(
            files
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn names_are_matched_as_words() {
        let files = vec![
            "main.py".to_string(),
            "domain.py".to_string(),
            "src/util.rs".to_string(),
        ];
        assert_eq!(
            named_files("run main.py and fix it", &files),
            vec!["main.py"]
        );
        assert_eq!(
            named_files("fix util.rs please", &files),
            vec!["src/util.rs"]
        );
        assert!(named_files("the main.python file", &files).is_empty());
        assert_eq!(
            named_files("calculator.py.", &["calculator.py".to_string()]),
            vec!["calculator.py"]
        );
    }

    #[test]
    fn named_files_and_agents_md_are_sent() {
        let p = fake(&[
            ("AGENTS.md", "Use tabs."),
            ("calc.py", "def add(a, b):\n    return a + b\n"),
            ("other.py", "x = 1\n"),
        ]);
        let text = build(
            "add a power operation to calc.py",
            &p,
            &Memory::default(),
            &Budget::default(),
        );
        assert!(text.contains("Use tabs."));
        assert!(text.contains("Current contents of calc.py"));
        assert!(!text.contains("x = 1"));
        assert!(text.ends_with("Request: add a power operation to calc.py\n"));
    }

    #[test]
    fn the_file_list_is_trimmed_with_a_count() {
        let many: Vec<(String, String)> = (0..500)
            .map(|i| (format!("dir/file_{i:04}.txt"), String::new()))
            .collect();
        let p = Fake(many.into_iter().collect());
        let text = build(
            "hello",
            &p,
            &Memory::default(),
            &Budget {
                file_list_chars: 200,
                ..Budget::default()
            },
        );
        assert!(text.contains("more not listed"), "{text}");
        assert!(text.len() < 800);
    }

    #[test]
    fn memory_keeps_five_turns_and_last_files() {
        let mut m = Memory::default();
        for i in 0..7 {
            m.push(TurnMemo {
                request: format!("r{i}"),
                outcome: "success".into(),
                files: vec![format!("f{i}.py")],
            });
        }
        assert_eq!(m.turns.len(), 5);
        assert_eq!(m.last_files(), ["f6.py"]);
        let p = fake(&[("f6.py", "print(6)\n")]);
        let text = build("continue", &p, &m, &Budget::default());
        assert!(text.contains("print(6)") && text.contains("\"r2\"") && !text.contains("\"r1\""));
    }
}

//! The replay's oracle model: it knows where the commit changed each file and what the new
//! lines are, but it writes an edit only from file lines a request showed it. Its knowledge of
//! the current code comes from the request alone: the first call's whole files and excerpts,
//! and the READ results of later phases. Whatever it cannot see it READs first; whatever it
//! still cannot see after that it gives up on, saying so.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::support::mock_llm::{RecordedRequest, Reply, chat_plan};

/// Lines of context an edit's search takes on each side of a change, when shown.
const CONTEXT: u32 = 2;
/// How far a search may grow, line by line on each side, to be the only one of its text.
const GROW: u32 = 40;
/// Lines a READ of a range takes on each side of the lines to change (room for a search to
/// grow until it is unique).
const READ_AROUND: u32 = 40;
/// Spans to read closer than this many lines are read as one.
const READ_GAP: u32 = 200;

/// One hunk of a file's diff: where it is in the parent, what it puts there.
#[derive(Debug, Clone, Default)]
struct Hunk {
    /// The first changed line in the parent; for an insertion, the line it follows (0: top).
    old_start: u32,
    /// Lines of the parent it removes or replaces (0: an insertion).
    old_len: u32,
    /// The lines it puts in their place.
    new: Vec<String>,
    /// The parent's last line, in this hunk, has no newline.
    old_no_eol: bool,
    /// The commit's last line, in this hunk, has no newline.
    new_no_eol: bool,
}

impl Hunk {
    /// The parent lines an edit of this hunk must search: the changed ones, or the line an
    /// insertion follows (the first line for one at the top).
    fn needs(&self) -> (u32, u32) {
        if self.old_len == 0 {
            let at = self.old_start.max(1);
            (at, at)
        } else {
            (self.old_start, self.old_start + self.old_len - 1)
        }
    }
}

/// What the oracle knows of one changed file: its hunks (`git diff -U0`, no old text used).
#[derive(Debug, Clone, Default)]
pub struct FileDiff {
    path: String,
    hunks: Vec<Hunk>,
}

impl FileDiff {
    /// Reads the hunks of `path` out of `git diff -U0` output.
    pub fn parse(path: &str, patch: &str) -> FileDiff {
        let mut hunks: Vec<Hunk> = Vec::new();
        let mut last = ' ';
        for line in patch.lines() {
            if let Some(rest) = line.strip_prefix("@@ -") {
                let old = rest.split(' ').next().unwrap_or("");
                let mut parts = old.split(',');
                let old_start = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
                let old_len = parts.next().and_then(|s| s.parse().ok()).unwrap_or(1);
                hunks.push(Hunk {
                    old_start,
                    old_len,
                    ..Hunk::default()
                });
                last = ' ';
                continue;
            }
            let Some(h) = hunks.last_mut() else { continue };
            if let Some(added) = line.strip_prefix('+') {
                h.new.push(added.to_string());
                last = '+';
            } else if line.starts_with('-') {
                last = '-';
            } else if line.starts_with('\\') {
                match last {
                    '+' => h.new_no_eol = true,
                    '-' => h.old_no_eol = true,
                    _ => {}
                }
            }
        }
        FileDiff {
            path: path.to_string(),
            hunks,
        }
    }
}

/// The lines of one file a conversation has shown, by line number.
#[derive(Debug, Default, Clone)]
struct Shown {
    lines: BTreeMap<u32, String>,
    /// The whole file was shown (so a search's uniqueness can be checked in all of it).
    whole: bool,
}

impl Shown {
    fn put(&mut self, first: u32, lines: &[&str], whole: bool) {
        for (k, l) in lines.iter().enumerate() {
            self.lines.insert(first + k as u32, (*l).to_string());
        }
        self.whole |= whole;
    }

    /// The runs of consecutive shown lines, each as one text.
    fn blocks(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut prev = 0;
        for (&n, l) in &self.lines {
            match out.last_mut() {
                Some(b) if n == prev + 1 => {
                    b.push('\n');
                    b.push_str(l);
                }
                _ => out.push(l.clone()),
            }
            prev = n;
        }
        out
    }

    fn text(&self, lo: u32, hi: u32) -> String {
        (lo..=hi)
            .filter_map(|n| self.lines.get(&n).map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Everything the conversation of one request has shown, per file.
fn shown_in(req: &RecordedRequest) -> HashMap<String, Shown> {
    let mut files: HashMap<String, Shown> = HashMap::new();
    for (role, text) in &req.messages {
        if role == "user" {
            read_message(text, &mut files);
        }
    }
    files
}

/// The header of a READ result, `[3] READ path: OK` or `[3] READ path (lines A-B): OK`, as
/// its path.
fn read_header(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('[')?;
    let (num, rest) = rest.split_once("] READ ")?;
    num.parse::<u32>().ok()?;
    let target = rest.strip_suffix(": OK")?;
    Some(match target.rsplit_once(" (lines ") {
        Some((path, range)) if range.ends_with(')') => path,
        _ => target,
    })
}

/// Whether `line` starts another step's result.
fn step_header(line: &str) -> bool {
    line.strip_prefix('[')
        .and_then(|r| r.split_once("] "))
        .is_some_and(|(num, rest)| {
            num.parse::<u32>().is_ok() && (rest.ends_with(": OK") || rest.ends_with(": FAILED"))
        })
}

/// Takes in what one user message shows: whole files, excerpts, READ results.
fn read_message(text: &str, files: &mut HashMap<String, Shown>) {
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(path) = line
            .strip_prefix("Current contents of ")
            .and_then(|r| r.strip_suffix(':'))
            .filter(|_| lines.get(i + 1).is_some_and(|l| is_fence(l)))
        {
            let start = i + 2;
            let end = fence_end(&lines, start, lines[i + 1]);
            let mut body = &lines[start..end];
            let cut = body.iter().position(|l| l.starts_with("[... truncated:"));
            if let Some(c) = cut {
                // The line before the marker may be cut short.
                body = &body[..c.saturating_sub(1)];
            }
            files
                .entry(path.to_string())
                .or_default()
                .put(1, body, cut.is_none());
            i = end + 1;
        } else if let Some(rest) = line.strip_prefix("Excerpts of ") {
            let path = rest.rsplit_once(" (").map_or(rest, |(p, _)| p);
            i += 1;
            while let Some((a, b)) = lines
                .get(i)
                .and_then(|l| l.strip_prefix("lines "))
                .and_then(|r| r.strip_suffix(':'))
                .and_then(|r| r.split_once('-'))
                .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
            {
                let n = (b + 1).saturating_sub(a) as usize;
                let start = i + 2;
                if !lines.get(i + 1).is_some_and(|l| is_fence(l)) || start + n > lines.len() {
                    break;
                }
                files
                    .entry(path.to_string())
                    .or_default()
                    .put(a, &lines[start..start + n], false);
                i = start + n + 1;
            }
        } else if let Some(path) = read_header(line) {
            i = read_result(&lines, i, path, files);
        } else {
            i += 1;
        }
    }
}

/// Takes in the READ result of `path` whose header is line `i`; returns the line after it.
fn read_result(lines: &[&str], i: usize, path: &str, files: &mut HashMap<String, Shown>) -> usize {
    // The report line (`read path (N bytes)`, `read path lines A-B of N (M bytes)` or
    // a note), pai's mark when the workspace cut the file, then the file's text.
    let report = lines.get(i + 1).copied().unwrap_or("");
    let first = report
        .strip_prefix(&format!("read {path} lines "))
        .and_then(|r| r.split_once('-'))
        .and_then(|(a, _)| a.parse::<u32>().ok());
    let mut start = i + 2;
    let mut cut = false;
    if lines
        .get(start)
        .is_some_and(|l| l.starts_with("[truncated by pai:"))
    {
        cut = true;
        start += 1;
    }
    let mut end = start;
    while end < lines.len() {
        let l = lines[end];
        if l.starts_with("[... truncated:") {
            cut = true;
            break;
        }
        if step_header(l) || l.starts_with("Continue: reply with the remaining steps") {
            break;
        }
        end += 1;
    }
    let whole = !cut && first.is_none() && report.starts_with(&format!("read {path} ("));
    // A result pai cut here may end in a line cut short.
    let body_end = if end < lines.len() && lines[end].starts_with("[... truncated:") {
        end.saturating_sub(1)
    } else {
        end
    };
    let body = lines.get(start..body_end.max(start)).unwrap_or_default();
    files
        .entry(path.to_string())
        .or_default()
        .put(first.unwrap_or(1), body, whole);
    end
}

/// Whether `line` is a fence: three backticks or more, alone. pai fences a text holding
/// backticks with more of them than any run inside it, so a model reads every line as the
/// file's.
fn is_fence(line: &str) -> bool {
    line.len() >= 3 && line.bytes().all(|b| b == b'`')
}

/// Where `fence`, opened before `start` around a whole file, closes. A fence longer than three
/// backticks is one the text does not hold, so its first repeat closes it. A file's own text
/// may hold a line of three backticks (a doc comment's example, in a text fenced before pai
/// chose fences by their content), so a three-backtick fence closes at the fence followed by a
/// blank line and the next part of the message, or by its end; failing that, the first fence.
fn fence_end(lines: &[&str], start: usize, fence: &str) -> usize {
    if fence != "```" {
        return (start..lines.len())
            .find(|&j| lines[j] == fence)
            .unwrap_or(lines.len());
    }
    let next_part = |l: &str| {
        [
            "Current contents of ",
            "Excerpts of ",
            "Request:",
            "(contents of ",
        ]
        .iter()
        .any(|h| l.starts_with(h))
    };
    let fences = (start..lines.len()).filter(|&j| lines[j] == "```");
    let closing = fences
        .clone()
        .find(|&j| match (lines.get(j + 1), lines.get(j + 2)) {
            (None, _) => true,
            (Some(&""), None) => true,
            (Some(&""), Some(l)) => next_part(l),
            _ => false,
        });
    closing
        .or_else(|| fences.clone().next())
        .unwrap_or(lines.len())
}

/// One search/replace pair.
struct Edit {
    search: String,
    replace: String,
}

/// `text` without its whitespace: pai refuses a search whose text stands elsewhere in the
/// file once whitespace is ignored, so uniqueness is judged so too.
fn squeezed(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// How many times `needle` occurs among the shown blocks, whitespace ignored.
fn occurrences(blocks: &[String], needle: &str) -> usize {
    let needle = squeezed(needle);
    blocks
        .iter()
        .map(|b| squeezed(b).matches(needle.as_str()).count())
        .sum()
}

/// The parent lines `diff` needs that `shown` lacks, as spans, those closer than
/// [`READ_GAP`] lines merged (one READ each).
fn missing_spans(diff: &FileDiff, shown: Option<&Shown>) -> Vec<(u32, u32)> {
    let known = |n: u32| shown.is_some_and(|s| s.lines.contains_key(&n));
    let mut out: Vec<(u32, u32)> = Vec::new();
    let mut needs: Vec<(u32, u32)> = diff
        .hunks
        .iter()
        .map(Hunk::needs)
        .filter(|&(a, b)| !(a..=b).all(known))
        .collect();
    needs.sort_unstable();
    for (a, b) in needs {
        match out.last_mut() {
            Some(last) if a <= last.1 + READ_GAP => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// The edits of `diff` written from what `shown` holds, or the hunks it lacks.
fn edits(diff: &FileDiff, shown: Option<&Shown>) -> Result<Vec<Edit>, String> {
    let Some(shown) = shown else {
        return Err(format!("{}: not shown", diff.path));
    };
    let known = |n: u32| shown.lines.contains_key(&n);
    let missing: Vec<String> = diff
        .hunks
        .iter()
        .map(Hunk::needs)
        .filter(|&(a, b)| !(a..=b).all(known))
        .map(|(a, b)| format!("{}:{a}-{b}", diff.path))
        .collect();
    if !missing.is_empty() {
        return Err(missing.join(", "));
    }
    if diff.hunks.is_empty() {
        return Err(format!("{}: no hunks", diff.path));
    }
    // Spans of parent lines, each with a little shown context, merged where they touch.
    let mut spans: Vec<(u32, u32)> = Vec::new();
    for h in &diff.hunks {
        let (mut lo, mut hi) = h.needs();
        for _ in 0..CONTEXT {
            if lo > 1 && known(lo - 1) {
                lo -= 1;
            }
            if known(hi + 1) {
                hi += 1;
            }
        }
        spans.push((lo, hi));
    }
    let blocks = shown.blocks();
    let merge = |spans: &mut Vec<(u32, u32)>| {
        spans.sort_unstable();
        let mut out: Vec<(u32, u32)> = Vec::new();
        for &(a, b) in spans.iter() {
            match out.last_mut() {
                Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        *spans = out;
    };
    merge(&mut spans);
    // Grow each search until it is the only one of its text among the lines shown.
    for span in &mut spans {
        for _ in 0..GROW {
            let text = shown.text(span.0, span.1);
            if !text.trim().is_empty() && occurrences(&blocks, &text) <= 1 {
                break;
            }
            let (lo, hi) = *span;
            let down = lo > 1 && known(lo - 1);
            let up = known(hi + 1);
            if !down && !up {
                break;
            }
            if down {
                span.0 -= 1;
            }
            if up {
                span.1 += 1;
            }
        }
    }
    merge(&mut spans);
    // pai applies the edits in order, each to the text the ones before left: a search the
    // earlier replacements repeat is ambiguous by then. Such an edit is joined with the one
    // before it until every search is the only one of its text when its turn comes.
    loop {
        let edits: Vec<Edit> = spans
            .iter()
            .map(|&(lo, hi)| span_edit(diff, shown, lo, hi))
            .collect();
        match first_ambiguous(&blocks, &edits) {
            Some(k) if k > 0 => {
                spans[k - 1].1 = spans[k].1;
                spans.remove(k);
            }
            _ => return Ok(edits),
        }
    }
}

/// The first of `edits` whose search, applied in order to the shown text, is not there
/// exactly once (as it is, and with whitespace ignored).
fn first_ambiguous(blocks: &[String], edits: &[Edit]) -> Option<usize> {
    let mut text = blocks.join("\n\u{0}\n");
    for (k, e) in edits.iter().enumerate() {
        if text.matches(e.search.as_str()).count() != 1
            || squeezed(&text)
                .matches(squeezed(&e.search).as_str())
                .count()
                != 1
        {
            return Some(k);
        }
        text = text.replacen(e.search.as_str(), &e.replace, 1);
    }
    None
}

/// The edit that turns parent lines `lo..=hi` into what the commit has there.
fn span_edit(diff: &FileDiff, shown: &Shown, lo: u32, hi: u32) -> Edit {
    let inside: Vec<&Hunk> = diff
        .hunks
        .iter()
        .filter(|h| {
            let (a, b) = h.needs();
            a >= lo && b <= hi
        })
        .collect();
    let mut new: Vec<&str> = Vec::new();
    for n in lo..=hi {
        if n == 1 {
            for h in inside.iter().filter(|h| h.old_len == 0 && h.old_start == 0) {
                new.extend(h.new.iter().map(String::as_str));
            }
        }
        let replaced = inside
            .iter()
            .find(|h| h.old_len > 0 && h.old_start <= n && n < h.old_start + h.old_len);
        match replaced {
            Some(h) => {
                if n == h.old_start {
                    new.extend(h.new.iter().map(String::as_str));
                }
            }
            None => new.push(shown.lines.get(&n).map_or("", String::as_str)),
        }
        for h in inside.iter().filter(|h| h.old_len == 0 && h.old_start == n) {
            new.extend(h.new.iter().map(String::as_str));
        }
    }
    let mut search = shown.text(lo, hi);
    let mut replace = new.join("\n");
    // A span ending at a blank line, or a replacement ending with one, reads as text ending in
    // a newline: the other side, without one, would read as a line short (pai takes a search
    // of whole lines to be replaced by whole lines). Both then take the newline that ends the
    // span's last line, which leaves the literal replacement the same.
    if search.ends_with('\n') || replace.ends_with('\n') || search.is_empty() {
        search.push('\n');
        replace.push('\n');
    }
    // The file's last line gains or loses its newline.
    if inside.iter().any(|h| h.old_no_eol && !h.new_no_eol) {
        replace.push('\n');
    }
    if inside.iter().any(|h| !h.old_no_eol && h.new_no_eol) {
        search.push('\n');
    }
    Edit { search, replace }
}

/// A task plan with `steps`.
fn plan(reply: &str, steps: Vec<Value>, observe: bool) -> Value {
    json!({
        "intent": "task",
        "reply": reply,
        "analysis": {
            "user_intent": reply,
            "files_to_read": [],
            "files_to_create": [],
            "files_to_modify": [],
            "risks": "none",
            "success_criteria": [],
            "complexity": "simple"
        },
        "steps": steps,
        "observe": observe,
        "next_steps": []
    })
}

/// The oracle for one case.
pub struct Oracle {
    diffs: Vec<FileDiff>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    wrote: bool,
    notes: Vec<String>,
}

impl Oracle {
    /// An oracle that knows `diffs`.
    pub fn new(diffs: Vec<FileDiff>) -> Oracle {
        Oracle {
            diffs,
            state: Mutex::new(State::default()),
        }
    }

    /// Whether it answered with edits for every changed file.
    pub fn wrote_edits(&self) -> bool {
        self.state.lock().is_ok_and(|s| s.wrote)
    }

    /// Why it gave up, if it did.
    pub fn notes(&self) -> Vec<String> {
        self.state
            .lock()
            .map(|s| s.notes.clone())
            .unwrap_or_default()
    }

    fn give_up(&self, why: String) -> Reply {
        if let Ok(mut s) = self.state.lock() {
            s.notes.push(why.clone());
        }
        Reply::plan(chat_plan(&format!("I cannot make this change: {why}")))
    }

    /// The reply to `req`, from what its messages show.
    pub fn answer(&self, req: &RecordedRequest) -> Reply {
        let phase = 1 + req.messages.iter().filter(|(r, _)| r != "user").count();
        if let Some(failed) = req.last_user_text().filter(|_| phase > 1).and_then(|t| {
            let lines: Vec<&str> = t.lines().collect();
            let at = lines.iter().position(|l| l.ends_with(": FAILED"))?;
            // The step's header and the reason pai gave.
            Some(lines[at..lines.len().min(at + 2)].join(" "))
        }) {
            return self.give_up(format!("phase {phase}: {failed}"));
        }
        let shown = shown_in(req);
        let mut steps = Vec::new();
        let mut lacking = Vec::new();
        for d in &self.diffs {
            match edits(d, shown.get(&d.path)) {
                Ok(edits) => steps.push(json!({
                    "action": "MODIFY",
                    "path": d.path,
                    "edits": edits
                        .iter()
                        .map(|e| json!({"search": e.search, "replace": e.replace}))
                        .collect::<Vec<_>>(),
                    "purpose": "the change"
                })),
                Err(why) => lacking.push((d.path.clone(), why)),
            }
        }
        if let Some(dir) = std::env::var_os("PAI_MAP_ORACLE_LOG") {
            // The oracle's steps, to tell its edits from pai's application of them.
            let _ = std::fs::write(
                std::path::Path::new(&dir).join(format!("phase{phase}.json")),
                serde_json::to_string_pretty(&steps).unwrap_or_default(),
            );
        }
        if lacking.is_empty() {
            steps.push(json!({"action": "FINISH", "message": "done"}));
            if let Ok(mut s) = self.state.lock() {
                s.wrote = true;
            }
            return Reply::plan(plan("Making the change.", steps, false));
        }
        // What a model knows of where the code is: a file the first call named (listed with
        // its definitions' lines, or shown in part) is read at the lines to change; one it
        // never named is read whole first, and on by range when that READ was cut.
        let first_call = req
            .messages
            .iter()
            .find(|(r, _)| r == "user")
            .map_or("", |(_, t)| t.as_str());
        let mut reads = Vec::new();
        for (path, _) in &lacking {
            let Some(d) = self.diffs.iter().find(|d| &d.path == path) else {
                continue;
            };
            let named = shown.contains_key(path)
                || first_call
                    .lines()
                    .any(|l| l.trim_start().starts_with(path.as_str()));
            let read_before = phase > 1 && shown.contains_key(path);
            if phase == 1 && !named {
                reads.push(
                    json!({"action": "READ", "path": path, "purpose": "see the code to change"}),
                );
            } else if (phase == 1 || read_before) && phase <= 2 {
                for (a, b) in missing_spans(d, shown.get(path)) {
                    reads.push(json!({
                        "action": "READ", "path": path,
                        "lines": format!("{}-{}", a.saturating_sub(READ_AROUND).max(1), b + READ_AROUND),
                        "purpose": "see the code to change"
                    }));
                }
            }
        }
        if !reads.is_empty() && phase <= 2 {
            return Reply::plan(plan("Reading the code first.", reads, true));
        }
        let why: Vec<String> = lacking.into_iter().map(|(_, w)| w).collect();
        self.give_up(format!(
            "phase {phase}, still not shown: {}",
            why.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    /// A file whose text holds a fence of its own is sent in a longer one (whole, or as
    /// excerpts): the oracle reads its lines as a model does, and writes its edit at once.
    #[test]
    fn a_file_fenced_with_more_backticks_is_read() {
        let text = "/// ```\n/// run();\n/// ```\nfn run() {\n    dbg!(1);\n}\n";
        let whole = format!("Request: fix\n\nCurrent contents of src/lib.rs:\n````\n{text}````\n");
        let mut files = std::collections::HashMap::new();
        super::read_message(&whole, &mut files);
        let shown = files.get("src/lib.rs").expect("the whole file is read");
        assert!(shown.whole);
        assert_eq!(shown.lines.len(), 6, "{:?}", shown.lines);
        assert_eq!(
            shown.lines.get(&5).map(String::as_str),
            Some("    dbg!(1);")
        );
        let diff = super::FileDiff::parse("src/lib.rs", "@@ -5 +4,0 @@\n-    dbg!(1);\n");
        let edits = super::edits(&diff, Some(shown)).expect("an edit from what was shown");
        assert!(edits[0].search.contains("dbg!(1);"));

        let excerpt = format!(
            "Excerpts of src/lib.rs (6 lines; READ it for the rest):\nlines 1-5:\n````\n{}\n````\n",
            text.lines().take(5).collect::<Vec<_>>().join("\n")
        );
        let mut files = std::collections::HashMap::new();
        super::read_message(&excerpt, &mut files);
        let shown = files.get("src/lib.rs").expect("the excerpt is read");
        assert_eq!(shown.lines.len(), 5, "{:?}", shown.lines);
    }
}

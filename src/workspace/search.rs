//! SEARCH: a regular-expression search over the visible text files of the project (or below a
//! path), honouring `.gitignore` and the deny-list, skipping binary and oversized files, with a
//! bounded number of reported lines.
//!
//! Two passes over the parallel scan: every file's matching lines are counted on several
//! threads, then, in walk order, the files whose lines fit under the cap are read again and
//! rendered while the rest only add their counts. The output is what a sequential search
//! prints, and memory holds counts, not lines.

use std::ffi::CStr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};

use regex::{Regex, RegexBuilder};

use super::Workspace;
use super::beneath::open_dir;
use super::error::{WorkspaceError, display_path, quote_snippet};
use super::gate::{Gate, RelPath};
use super::listing::Start;
use super::scan::{Scan, ScanDir, on_threads, scan, thread_count};
use super::sys::{self, Kind};
use super::text::{looks_binary, thousands};
use super::walk::join;

/// Matched lines are cut at this many characters.
const LINE_CHARS: usize = 200;

struct State<'a> {
    re: &'a Regex,
    out: String,
    cap: usize,
    max_file: u64,
    shown: usize,
    matches: usize,
    files: usize,
    skipped_binary: usize,
    skipped_large: usize,
}

impl Workspace {
    /// SEARCH `pattern` (a regular expression; `^` and `$` match at line boundaries) in `path`
    /// (a file or directory; the whole project when `None`). Returns `path:line: text` lines,
    /// at most `max_search_matches`, then a summary.
    pub fn search(&self, pattern: &str, path: Option<&str>) -> Result<String, WorkspaceError> {
        let re = compile_pattern(pattern)?;
        let rel = self.gate_op(path.unwrap_or("."), true)?;
        let (w, start) = self.start_walk(&rel, "search")?;
        let mut st = State {
            re: &re,
            out: String::new(),
            cap: self.cfg.max_search_matches,
            max_file: self.cfg.max_search_file_bytes as u64,
            shown: 0,
            matches: 0,
            files: 0,
            skipped_binary: 0,
            skipped_large: 0,
        };
        match start {
            Start::Dir(fd) => {
                let tree = scan(w, fd, rel.resolved());
                let counts = count_in_parallel(&self.gate, &tree, &re, st.max_file);
                report_in_order(&self.gate, &tree, tree.root(), 0, &counts, &mut st);
            }
            Start::File { dir, name, kind } => {
                if kind != Kind::File {
                    return Err(WorkspaceError::failed(
                        "search",
                        rel.display(),
                        "it is not a regular file or directory",
                    ));
                }
                search_file(&dir, &name, rel.resolved(), &mut st);
            }
        }
        Ok(summarise(st, pattern, &rel))
    }
}

/// The pattern as SEARCH runs it: `^` and `$` at line boundaries (CRLF ones too), and size
/// limits so a pathological pattern is an error instead of a large allocation. An empty
/// pattern is refused: it would match every line.
fn compile_pattern(pattern: &str) -> Result<Regex, WorkspaceError> {
    let invalid = |reason: String| WorkspaceError::InvalidPattern {
        pattern: display_path(pattern),
        reason,
    };
    if pattern.is_empty() {
        return Err(invalid("the pattern is empty".into()));
    }
    RegexBuilder::new(pattern)
        .multi_line(true)
        .crlf(true)
        .size_limit(1 << 22)
        .dfa_size_limit(1 << 23)
        .build()
        .map_err(|e| {
            invalid(
                e.to_string()
                    .lines()
                    .last()
                    .unwrap_or("invalid")
                    .trim()
                    .to_string(),
            )
        })
}

/// The matched lines followed by the summary: no matches, a cut list with the full counts
/// (so a capped result never reads as complete), or the totals; then how many files were
/// skipped, when any were.
fn summarise(st: State<'_>, pattern: &str, rel: &RelPath) -> String {
    let where_ = if rel.is_root() {
        "the project".to_string()
    } else {
        rel.as_str().to_string()
    };
    let mut out = st.out;
    if st.matches == 0 {
        out.push_str(&format!(
            "no matches for `{}` in {where_}\n",
            quote_snippet(pattern, 80)
        ));
    } else if st.matches > st.shown {
        out.push_str(&format!(
            "… showing the first {} of {} matching lines (in {} files); narrow the pattern \
             or the path\n",
            thousands(st.shown),
            thousands(st.matches),
            thousands(st.files)
        ));
    } else {
        out.push_str(&format!(
            "{} matching lines in {} files\n",
            thousands(st.matches),
            thousands(st.files)
        ));
    }
    if st.skipped_binary + st.skipped_large > 0 {
        out.push_str(&format!(
            "(skipped {} binary and {} oversized files)\n",
            thousands(st.skipped_binary),
            thousands(st.skipped_large)
        ));
    }
    out
}

/// What counting found in one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Count {
    /// Lines with a match (0 when none, or when the file could not be read).
    Lines(usize),
    Binary,
    Large,
}

/// Files below which counting stays on the calling thread.
const PARALLEL_FROM_FILES: usize = 256;

/// Count the matching lines of every file of the scan, on several threads: the first pass of
/// SEARCH. `counts[d][i]` is for entry `i` of directory `d` (entries that are not files get
/// `Lines(0)`). Each directory is opened beneath the root again, component by component
/// without following symlinks, so a directory swapped for a link since the scan is skipped.
fn count_in_parallel(gate: &Gate, tree: &Scan, re: &Regex, max_file: u64) -> Vec<Vec<Count>> {
    let files: usize = (0..tree.len())
        .map(|d| {
            tree.dir(d)
                .entries
                .iter()
                .filter(|e| e.kind == Kind::File)
                .count()
        })
        .sum();
    let next = AtomicUsize::new(0);
    let work = || {
        let mut out = Vec::new();
        loop {
            let d = next.fetch_add(1, Ordering::Relaxed);
            if d >= tree.len() {
                return out;
            }
            out.push((d, count_dir(gate, tree.dir(d), re, max_file)));
        }
    };
    let threads = if files < PARALLEL_FROM_FILES {
        1
    } else {
        thread_count()
    };
    // Directories a panicked helper took stay uncounted (no matches).
    let done = on_threads(threads, "pai-search", work);
    let mut counts: Vec<Vec<Count>> = vec![Vec::new(); tree.len()];
    for (d, c) in done {
        if let Some(slot) = counts.get_mut(d) {
            *slot = c;
        }
    }
    counts
}

fn count_dir(gate: &Gate, d: &ScanDir, re: &Regex, max_file: u64) -> Vec<Count> {
    let mut out = vec![Count::Lines(0); d.entries.len()];
    if !d.entries.iter().any(|e| e.kind == Kind::File) {
        return out;
    }
    let Ok((dir, _)) = open_dir(gate, components(&d.rel), false, "search", &d.rel) else {
        return out;
    };
    for (e, slot) in d.entries.iter().zip(&mut out) {
        if e.kind == Kind::File {
            *slot = count_file(&dir, &e.cname, re, max_file);
        }
    }
    out
}

fn components(rel: &str) -> impl Iterator<Item = &str> {
    rel.split('/').filter(|c| !c.is_empty())
}

/// The second pass, in walk order: the files whose lines are shown (until the cap) are read
/// again and rendered by [`search_file`]; the rest only add their counts.
fn report_in_order(
    gate: &Gate,
    tree: &Scan,
    d: &ScanDir,
    id: usize,
    counts: &[Vec<Count>],
    st: &mut State<'_>,
) {
    let mut dir: Option<OwnedFd> = None;
    for (i, e) in d.entries.iter().enumerate() {
        if let Some(sub_id) = d.sub(i) {
            report_in_order(gate, tree, tree.dir(sub_id), sub_id, counts, st);
            continue;
        }
        if e.kind != Kind::File {
            continue;
        }
        match counts.get(id).and_then(|c| c.get(i)) {
            Some(Count::Binary) => st.skipped_binary += 1,
            Some(Count::Large) => st.skipped_large += 1,
            Some(Count::Lines(0)) | None => {}
            Some(Count::Lines(n)) if st.shown >= st.cap => {
                st.matches += n;
                st.files += 1;
            }
            Some(Count::Lines(_)) => {
                if dir.is_none() {
                    dir = open_dir(gate, components(&d.rel), false, "search", &d.rel)
                        .ok()
                        .map(|(fd, _)| fd);
                }
                if let Some(fd) = &dir {
                    search_file(fd, &e.cname, &join(&d.rel, &e.name()), st);
                }
            }
        }
    }
}

/// Count the lines of one file that match, as [`search_file`] would report them.
fn count_file(dir: &OwnedFd, name: &CStr, re: &Regex, max_file: u64) -> Count {
    match read_text(dir, name, max_file) {
        Ok(Some(text)) => Count::Lines(matching_lines(re, &text).count()),
        Ok(None) => Count::Lines(0),
        Err(skip) => skip,
    }
}

/// The text of a regular file: `Ok(None)` when it cannot be read (or is no longer a regular
/// file), `Err` when it is skipped as binary or oversized.
fn read_text(dir: &OwnedFd, name: &CStr, max_file: u64) -> Result<Option<String>, Count> {
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
    let Ok(fd) = sys::openat(dir.as_fd(), name, flags, 0) else {
        return Ok(None);
    };
    let Ok(meta) = sys::fstat(fd.as_fd()) else {
        return Ok(None);
    };
    if meta.kind != Kind::File {
        return Ok(None);
    }
    if meta.size > max_file {
        return Err(Count::Large);
    }
    let Ok(bytes) = sys::read_up_to(&fd, max_file as usize) else {
        return Ok(None);
    };
    if looks_binary(&bytes) {
        return Err(Count::Binary);
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| Count::Binary)
}

/// The matching lines of `text`: (line number, byte offset of the first match on it), one per
/// line however many matches it holds.
fn matching_lines<'a>(re: &'a Regex, text: &'a str) -> impl Iterator<Item = (usize, usize)> + 'a {
    let mut line_no = 1usize;
    let mut counted_to = 0usize;
    let mut last_line = 0usize;
    re.find_iter(text).filter_map(move |m| {
        let at = m.start();
        // `$` matches once more at the very end of a text that ends with a newline: that is
        // not a line of its own.
        if at == text.len() && text.ends_with('\n') && !text.is_empty() {
            return None;
        }
        line_no += bytecount(&text.as_bytes()[counted_to..at]);
        counted_to = at;
        if line_no == last_line {
            return None;
        }
        last_line = line_no;
        Some((line_no, at))
    })
}

fn search_file(dir: &OwnedFd, name: &CStr, rel: &str, st: &mut State<'_>) {
    let text = match read_text(dir, name, st.max_file) {
        Ok(Some(text)) => text,
        Ok(None) => return,
        Err(Count::Large) => {
            st.skipped_large += 1;
            return;
        }
        Err(_) => {
            st.skipped_binary += 1;
            return;
        }
    };
    let re = st.re;
    let mut any = false;
    for (line_no, at) in matching_lines(re, &text) {
        any = true;
        st.matches += 1;
        if st.shown < st.cap {
            let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
            let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
            let line = text[start..end].trim_end_matches('\r');
            st.out.push_str(&format!(
                "{rel}:{line_no}: {}\n",
                quote_snippet(line, LINE_CHARS)
            ));
            st.shown += 1;
        }
    }
    if any {
        st.files += 1;
    }
}

fn bytecount(b: &[u8]) -> usize {
    b.iter().filter(|&&c| c == b'\n').count()
}

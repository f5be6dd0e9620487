//! SEARCH: a regular-expression search over the visible text files of the project (or below a
//! path), honouring `.gitignore` and the deny-list, skipping binary and oversized files, with a
//! bounded number of reported lines.

use std::ffi::CStr;
use std::os::fd::{AsFd, OwnedFd};

use regex::{Regex, RegexBuilder};

use super::Workspace;
use super::error::{WorkspaceError, display_path, quote_snippet};
use super::listing::Start;
use super::sys::{self, Kind};
use super::text::{looks_binary, thousands};
use super::walk::{MAX_DEPTH, Walker, join, open_child};

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
        let invalid = |reason: String| WorkspaceError::InvalidPattern {
            pattern: display_path(pattern),
            reason,
        };
        if pattern.is_empty() {
            return Err(invalid("the pattern is empty".into()));
        }
        let re = RegexBuilder::new(pattern)
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
            })?;
        let rel = self.gate_op(path.unwrap_or("."), true)?;
        let (mut w, start) = self.start_walk(&rel, "search")?;
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
            Start::Dir(fd) => search_rec(&mut w, &fd, rel.resolved(), &mut st),
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
        Ok(out)
    }
}

fn search_rec(w: &mut Walker<'_>, dir: &OwnedFd, rel: &str, st: &mut State<'_>) {
    let Ok(entries) = w.enter(dir, rel) else {
        w.leave();
        return;
    };
    for e in &entries {
        let path = join(rel, &e.name());
        match e.kind {
            Kind::Dir => {
                if w.depth() < MAX_DEPTH
                    && let Ok(sub) = open_child(dir, e)
                {
                    search_rec(w, &sub, &path, st);
                }
            }
            Kind::File => search_file(dir, &e.cname, &path, st),
            Kind::Symlink | Kind::Other => {}
        }
    }
    w.leave();
}

fn search_file(dir: &OwnedFd, name: &CStr, rel: &str, st: &mut State<'_>) {
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
    let Ok(fd) = sys::openat(dir.as_fd(), name, flags, 0) else {
        return;
    };
    let Ok(meta) = sys::fstat(fd.as_fd()) else {
        return;
    };
    if meta.kind != Kind::File {
        return;
    }
    if meta.size > st.max_file {
        st.skipped_large += 1;
        return;
    }
    let Ok(bytes) = sys::read_up_to(&fd, st.max_file as usize) else {
        return;
    };
    if looks_binary(&bytes) {
        st.skipped_binary += 1;
        return;
    }
    let Ok(text) = std::str::from_utf8(&bytes) else {
        st.skipped_binary += 1;
        return;
    };
    let mut line_no = 1usize;
    let mut counted_to = 0usize;
    let mut last_line = 0usize;
    let mut any = false;
    for m in st.re.find_iter(text) {
        let at = m.start();
        if at == text.len() && text.ends_with('\n') && !text.is_empty() {
            break;
        }
        line_no += bytecount(&text.as_bytes()[counted_to..at]);
        counted_to = at;
        if line_no == last_line {
            continue;
        }
        last_line = line_no;
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

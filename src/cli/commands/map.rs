//! `pai map "<request>"`: the repository map the first call of that request would carry, with
//! each ranked file's score and why, so a user can see (and tune with `context_tokens`) what
//! the model gets.

use std::fmt::Write as _;
use std::time::Duration;

use crate::agent::context::{self, Budget};
use crate::agent::repo_map;
use crate::cli::assemble::Project;
use crate::config::Settings;
use crate::error::Error;
use crate::map::{DEFAULT_TIME_BUDGET, MapReport};
use crate::ui::output::Output;

/// Ranked files printed with their reasons.
const SHOWN_RANKED: usize = 30;

/// `pai map`.
pub fn map(
    settings: &Settings,
    project: &Project,
    out: &Output,
    request: &str,
    json: bool,
    explain: bool,
) -> Result<(), Error> {
    if request.trim().is_empty() {
        return Err(Error::usage(
            "pai map needs a request, e.g. pai map \"fix the login timeout\"",
        ));
    }
    let budget = Budget {
        context_tokens: settings.context_tokens,
        ..Budget::default()
    };
    // git's index is read while the project is listed, not after.
    let index = crate::agent::listing::IndexSoon::start(project.workspace.root());
    let corpus = crate::agent::listing::corpus(&project.workspace);
    let small = context::fits_paths(corpus.iter(), &budget);
    let chars = budget
        .context_tokens
        .saturating_mul(4)
        .saturating_sub(crate::agent::prompt::SYSTEM_PROMPT.len());
    let progress = |done: usize, total: usize| {
        if total >= 300 && (done == total || done.is_multiple_of(1024)) {
            out.progress(&format!(
                "Mapping the project: {done} of {total} files read"
            ));
        }
    };
    let report = repo_map::build(
        &project.workspace,
        &corpus,
        &index,
        request,
        &[],
        chars,
        // The first call counts from the process's start: the listing came out of it.
        repo_map::left_of(DEFAULT_TIME_BUDGET, crate::map::process_start()),
        &progress,
    );
    out.progress("");
    if json {
        let mut value = serde_json::to_value(&report)
            .map_err(|e| Error::failed(format!("cannot encode the map: {e}")))?;
        value["first_call_uses_map"] = serde_json::Value::Bool(!small);
        out.json_line(&value.to_string());
        return Ok(());
    }
    // Paths and file text are the repository's: no control character reaches the terminal.
    let text = crate::ui::layout::clean(&render(&report, small, budget.context_tokens, explain));
    out.raw(text.as_bytes());
    Ok(())
}

/// The report as text: the figures, the ranking with reasons, then the map itself.
fn render(r: &MapReport, small: bool, tokens: usize, explain: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} files; {} read now, the rest from the cache{}; {} ms",
        r.files,
        r.parsed,
        if r.unparsed > 0 {
            format!(
                "; {} not read within the time budget (ranked by path)",
                r.unparsed
            )
        } else {
            String::new()
        },
        ms(r.elapsed)
    );
    let stages: Vec<String> = r
        .stages
        .iter()
        .map(|(name, ms)| format!("{name} {ms:.1} ms"))
        .collect();
    let _ = writeln!(s, "({})", stages.join(", "));
    if small {
        let _ = writeln!(
            s,
            "This project is small: the first call carries its whole file list and the files the request names; the map below is what a bigger project would get."
        );
    } else {
        let _ = writeln!(
            s,
            "The first call carries the map below (about {} tokens of at most {tokens}): {} files listed, {} whole, {} as excerpts.",
            r.text.len() / 4,
            r.shown.listed.len(),
            r.shown.whole.len(),
            r.shown.excerpts.len()
        );
    }
    let _ = writeln!(s, "\nRanked files (score: why):");
    for (i, f) in r.ranked.iter().take(SHOWN_RANKED).enumerate() {
        let _ = writeln!(
            s,
            "{:>3}. {}  {:.2}: {}",
            i + 1,
            f.path,
            f.score,
            why(&f.why)
        );
    }
    if r.ranked.len() > SHOWN_RANKED {
        let _ = writeln!(
            s,
            "     ({} more with a score)",
            r.ranked.len() - SHOWN_RANKED
        );
    }
    if explain {
        s.push_str(&explain_texts(r));
    }
    let _ = writeln!(s, "\n--- the map as the model reads it ---\n{}", r.text);
    s
}

/// Why each file's text is shown as it is: the file's rank, score and share of the text
/// budget, then each chosen definition or block with its score and the request's words in it.
fn explain_texts(r: &MapReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nText shown (a file's share of the text budget follows its score; within a file, its definitions are scored for the request: BM25 of their words, the request's words in their names, identifiers the request names, a share of the score of the best definitions that call them):"
    );
    if r.shown.chosen.is_empty() {
        let _ = writeln!(s, "  none: no file scored above zero");
    }
    for c in &r.shown.chosen {
        let rank = r.ranked.iter().position(|f| f.path == c.path);
        let (place, score) = match rank {
            Some(k) => (format!("#{}", k + 1), r.ranked[k].score),
            None => ("unranked".to_string(), 0.0),
        };
        let how = if c.whole {
            format!("whole ({} lines)", c.lines)
        } else {
            format!("excerpts, lines {} of {}", spans(&c.ranges), c.lines)
        };
        let _ = writeln!(
            s,
            "  {} ({place}, score {score:.2}, {:.0}% of the text budget by rank): {how}",
            c.path,
            c.share * 100.0
        );
        for u in &c.units {
            let what = match (&u.name, u.kind) {
                (Some(name), crate::map::excerpt::UnitKind::Head) => format!("head of {name}"),
                (_, crate::map::excerpt::UnitKind::Imports) => "imports".to_string(),
                (Some(name), _) => name.clone(),
                (None, _) => "top-level code".to_string(),
            };
            let mut parts = vec![format!("words {:.2}", u.text)];
            if !u.hits.is_empty() {
                parts[0].push_str(&format!(" ({})", u.hits.join(", ")));
            }
            if u.name_part > 0.0 {
                parts.push(format!("name {:.2}", u.name_part));
            }
            if u.with_code > 0.0 {
                parts.push(format!("with the file's code {:.2}", u.with_code));
            }
            if u.called > 0.0 {
                let by = u.called_by.as_deref().unwrap_or("a chosen definition");
                parts.push(format!("called by {by} {:.2}", u.called));
            }
            if u.score <= 0.0 {
                parts.push("beside a chosen one".to_string());
            }
            let _ = writeln!(
                s,
                "    lines {}-{} {what}: score {:.2} = {}{}",
                u.start,
                u.end,
                u.score,
                parts.join(" + "),
                if u.elided {
                    "; too long to show whole: its signature and the blocks the request hits"
                } else {
                    ""
                }
            );
        }
    }
    s
}

/// Line ranges as `3-9, 20-31`.
fn spans(ranges: &[(u32, u32)]) -> String {
    ranges
        .iter()
        .map(|(a, b)| format!("{a}-{b}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

/// One line of reasons.
fn why(w: &crate::map::rank::Why) -> String {
    let mut parts = Vec::new();
    if !w.words.is_empty() {
        parts.push(format!("text has {} ({:.2})", w.words.join(", "), w.text));
    }
    if !w.path_words.is_empty() {
        parts.push(format!(
            "path has {} ({:.2})",
            w.path_words.join(", "),
            w.path
        ));
    }
    if !w.symbols.is_empty() {
        parts.push(format!("defines {} ({:.2})", w.symbols.join(", "), w.defs));
    }
    if w.graph > 0.0 {
        let from = w
            .referenced_by
            .first()
            .map_or(String::new(), |f| format!(" from {f}"));
        parts.push(format!("referenced{from} ({:.2})", w.graph));
    }
    parts.extend(w.signals.iter().map(|s| s.to_string()));
    parts.join("; ")
}

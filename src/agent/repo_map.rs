//! The repository map as the agent uses it: the project's git activity read through history,
//! parsing progress sent to the frontend as events, and the map handed to the context
//! builder. `pai map` shows the same map.

use std::cell::{Cell, OnceCell};
use std::path::Path;
use std::time::{Duration, Instant};

use super::context::ProjectView;
use super::listing::{IndexSoon, ListingSoon, corpus};
use super::protocol::{Event, Frontend};
use crate::map::{self, Activity, MapOptions, MapReport, TrackedFiles};
use crate::workspace::{Corpus, Workspace};

/// How often progress is reported while a cold map parses.
const PROGRESS_EVERY: Duration = Duration::from_millis(300);
/// Maps with fewer files than this to parse finish too soon to need progress.
const PROGRESS_FROM: usize = 300;
/// Time kept, of a first call's budget, for what follows the map: the call assembled and
/// sent, or the map written out and its cache's save joined before the process exits.
const TAIL: Duration = Duration::from_millis(200);
/// What is left for a map of a first call's `budget` counted from `since` (the start of the
/// turn, or of the process for `pai map`): what came before the map (the project's listing,
/// a cold one walking every directory) and the tail after it are taken out, so the whole
/// first call keeps to the budget, not only the map.
pub fn left_of(budget: Duration, since: Instant) -> Duration {
    budget.saturating_sub(since.elapsed()).saturating_sub(TAIL)
}

/// Wait for the map's cache, written while the first call goes out, to reach the disk; the
/// process calls this before it exits.
pub fn finish() {
    map::store::wait_for_save();
}

/// Build the map of the project in `ws` for `request`, reporting progress to `progress`;
/// `time_budget` counts from now (see [`left_of`]); `early` is git's index when read ahead.
#[allow(clippy::too_many_arguments)]
pub fn build(
    ws: &Workspace,
    corpus: &Corpus,
    early: &IndexSoon,
    request: &str,
    last_files: &[String],
    budget_chars: usize,
    time_budget: Duration,
    progress: &dyn Fn(usize, usize),
) -> MapReport {
    let root: &Path = ws.root();
    let recent = || crate::history::recently_changed(root, crate::history::RECENT_COMMITS);
    let index = || {
        early
            .take_current()
            .or_else(|| crate::history::TrackedBlobs::read(root))
            .map(|t| Box::new(Index(t)) as Box<dyn TrackedFiles>)
    };
    let activity = Activity {
        last_plan: last_files,
        head: crate::history::head_commit(root),
        recent: &recent,
        index: &index,
    };
    map::build(
        ws,
        corpus,
        request,
        &activity,
        &MapOptions {
            budget_chars,
            time_budget,
            progress,
            cache: dirs::cache_dir(),
        },
    )
}

/// git's index as the map looks tracked files up in it.
struct Index(crate::history::TrackedBlobs);

impl TrackedFiles for Index {
    fn blob(&self, path: &str) -> Option<map::store::BlobId> {
        self.0.blob(path)
    }
}

/// The project as the context builder sees it, with the map, for one turn. The project's
/// files are walked once: the file list and the map share the walk.
pub struct MapView<'a> {
    ws: &'a Workspace,
    frontend: &'a dyn Frontend,
    time_budget: Duration,
    /// When the turn started: the time budget counts from it.
    since: Instant,
    corpus: OnceCell<Corpus>,
    /// git's index, when read ahead with the listing.
    index: IndexSoon,
}

impl<'a> MapView<'a> {
    /// A view of `ws` for one turn starting now; progress of a cold map goes to `frontend`;
    /// the turn's first call, map included, keeps to `time_budget`.
    pub fn new(ws: &'a Workspace, frontend: &'a dyn Frontend, time_budget: Duration) -> Self {
        MapView {
            ws,
            frontend,
            time_budget,
            since: Instant::now(),
            corpus: OnceCell::new(),
            index: IndexSoon::default(),
        }
    }

    /// This view with the project's listing taken by `soon` (when it has one) instead of
    /// listing the project when first asked.
    pub fn with_listing(mut self, soon: Option<ListingSoon>) -> Self {
        if let Some((corpus, index)) = soon.map(ListingSoon::take) {
            if let Some(corpus) = corpus {
                let _ = self.corpus.set(corpus);
            }
            self.index = index;
        }
        self
    }

    fn corpus(&self) -> &Corpus {
        self.corpus.get_or_init(|| corpus(self.ws))
    }
}

impl ProjectView for MapView<'_> {
    fn files(&self, max: usize) -> (Vec<String>, usize) {
        let all = self.corpus();
        let listed = all.iter().take(max).map(str::to_string).collect();
        (listed, all.len().saturating_sub(max))
    }

    fn text(&self, path: &str) -> Option<String> {
        let out = self.ws.read(path).ok()?;
        out.text().map(str::to_string)
    }

    fn map(&self, request: &str, budget_chars: usize, last_files: &[String]) -> Option<String> {
        let last = Cell::new(Instant::now());
        let progress = |done: usize, total: usize| {
            if total >= PROGRESS_FROM && (last.get().elapsed() >= PROGRESS_EVERY || done == total) {
                last.set(Instant::now());
                self.frontend.event(&Event::Mapping { done, total });
            }
        };
        let corpus = self.corpus();
        let report = build(
            self.ws,
            corpus,
            &self.index,
            request,
            last_files,
            budget_chars,
            left_of(self.time_budget, self.since),
            &progress,
        );
        Some(report.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_left_takes_out_what_came_before_and_the_tail() {
        let now = Instant::now();
        let left = left_of(Duration::from_secs(4), now);
        assert!(left <= Duration::from_secs(4) - TAIL, "{left:?}");
        assert!(left > Duration::from_secs(3), "{left:?}");
        let long_ago = now.checked_sub(Duration::from_secs(5)).unwrap();
        assert_eq!(left_of(Duration::from_secs(4), long_ago), Duration::ZERO);
    }
}

//! The files in path (byte) order without sorting them. A project's listing comes folder by
//! folder, each folder's subfolders before its files: a few long ascending runs, broken where
//! a folder's files follow its subfolders. Merging the runs, each taken in whole stretches
//! found by a galloping search, compares a few paths per stretch, where a sort of 100,000
//! paths compared each of them about seventeen times (a fifth of the map's paths pass).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The first file of what is left of one run, ordered by path then place (so that equal
/// paths keep the list's order, as a stable sort keeps them).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Head<'p> {
    path: &'p str,
    at: usize,
    end: usize,
}

/// The order of the `len` paths `path(0..len)` by their bytes, equal paths in list order:
/// what a stable sort by path gives. `starts` holds where each ascending run of the list
/// begins, in order, from 0 (a run may hold equal paths).
pub fn by_path<'p>(len: usize, starts: &[usize], path: &dyn Fn(usize) -> &'p str) -> Vec<u32> {
    let mut heap: BinaryHeap<Reverse<Head<'p>>> = starts
        .iter()
        .enumerate()
        .map(|(k, &at)| Head {
            path: path(at),
            at,
            end: starts.get(k + 1).copied().unwrap_or(len),
        })
        .filter(|h| h.at < h.end)
        .map(Reverse)
        .collect();
    let mut out: Vec<u32> = Vec::with_capacity(len);
    while let Some(Reverse(head)) = heap.pop() {
        // Every file of this run before the next run's head comes now.
        let stop = match heap.peek() {
            Some(Reverse(next)) => {
                let before = |i: usize| (path(i), i) < (next.path, next.at);
                first_not(head.at + 1, head.end, before)
            }
            None => head.end,
        };
        out.extend((head.at..stop).map(|i| u32::try_from(i).unwrap_or(u32::MAX)));
        if stop < head.end {
            heap.push(Reverse(Head {
                path: path(stop),
                at: stop,
                end: head.end,
            }));
        }
    }
    out
}

/// The first `i` in `from..to` for which `holds(i)` is false, when it holds for a prefix of
/// the range: steps of 1, 2, 4... then a binary search in the last step (a stretch of `k`
/// files costs about 2 log k tests, however long the run).
fn first_not(from: usize, to: usize, holds: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut step) = (from, 1);
    // `holds` is true below `lo`; find `hi` where it is false (or the end).
    let hi = loop {
        let probe = lo.saturating_add(step - 1);
        if probe >= to {
            break to;
        }
        if !holds(probe) {
            break probe;
        }
        lo = probe + 1;
        step *= 2;
    };
    let mut hi = hi;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if holds(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The runs of `paths` as the map finds them: a new one wherever a path sorts before the
    /// one above it.
    fn starts(paths: &[String]) -> Vec<usize> {
        (0..paths.len())
            .filter(|&i| i == 0 || paths[i] < paths[i - 1])
            .collect()
    }

    fn merged(paths: &[String]) -> Vec<u32> {
        by_path(paths.len(), &starts(paths), &|i| paths[i].as_str())
    }

    fn sorted(paths: &[String]) -> Vec<u32> {
        let mut order: Vec<u32> = (0..paths.len() as u32).collect();
        order.sort_by(|&a, &b| paths[a as usize].cmp(&paths[b as usize]));
        order
    }

    #[test]
    fn a_listing_with_files_after_subfolders_comes_out_in_path_order() {
        let paths: Vec<String> = [
            "src/agent/a.rs",
            "src/cli/b.rs",
            "src/cli/c.rs",
            "src/map/d.rs",
            "src/cli.rs",
            "src/lib.rs",
            "src/map.rs",
            ".gitignore",
            "README.md",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(starts(&paths), [0, 4, 7]);
        assert_eq!(merged(&paths), [7, 8, 0, 4, 1, 2, 5, 6, 3]);
        assert_eq!(merged(&paths), sorted(&paths));
    }

    #[test]
    fn equal_paths_keep_the_list_order() {
        let paths: Vec<String> = ["b", "a", "b", "a", "b"].map(String::from).to_vec();
        assert_eq!(merged(&paths), [1, 3, 0, 2, 4]);
        assert!(merged(&[]).is_empty());
    }

    proptest! {
        /// Whatever the list, the merge is the stable sort: random paths over a small
        /// alphabet (many equal paths and shared prefixes), in random order.
        #[test]
        fn the_merge_is_a_stable_sort(paths in prop::collection::vec("[ab/.]{0,5}", 0..80)) {
            prop_assert_eq!(merged(&paths), sorted(&paths));
        }

        /// A listing-like list: long sorted runs, a few broken.
        #[test]
        fn sorted_runs_merge_as_a_sort(
            mut runs in prop::collection::vec(prop::collection::vec("[a-c/]{1,6}", 0..30), 0..8),
        ) {
            let mut paths = Vec::new();
            for run in &mut runs {
                run.sort();
                paths.append(run);
            }
            prop_assert_eq!(merged(&paths), sorted(&paths));
        }
    }
}

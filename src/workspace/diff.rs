//! Line diffs between two normalised texts (`\n` line ends), fast enough for the diff guard on
//! a 100,000-line file in well under 50 ms, and their unified rendering.
//!
//! The work is staged so a caller can stop early ([`Prepared`]): the common prefix and suffix
//! are stripped first (most edits are local); the remaining lines are interned to integers so
//! the diff compares words, not strings; a lower bound on the change comes from the line
//! multisets (every surplus copy of a line must be added or removed), which lets the guard
//! refuse a whole-file rewrite in O(n) without the full diff; lines found on one side only are
//! left out of the matching (they are added or removed whatever it finds). The matching itself
//! is described at [`match_lines_within`].

use std::ops::Range;
use std::time::{Duration, Instant};

use hashbrown::HashTable;
use similar::{Algorithm, DiffOp, DiffTag};

use super::text::thousands;

/// How long exact Myers may run on a small input before the anchored diff is used instead; a
/// fifth of it is what Myers gets to improve on the anchored diff of a big input.
pub(crate) const MYERS_BUDGET: Duration = Duration::from_millis(10);
/// Inputs up to this many lines (both sides, past the common prefix and suffix, shared lines
/// only) try exact Myers first.
const SMALL_INPUT: usize = 4_000;
/// How long Myers may run, in total, in the gaps between anchors; past it, `similar` finishes
/// with a coarser (still correct, possibly larger) diff.
const GAP_BUDGET: Duration = Duration::from_millis(200);
/// Lines of context around each hunk.
const CONTEXT: usize = 3;

/// A fast hash of a line for interning (eight bytes per multiply, then the tail byte by byte;
/// folding the tail in as one padded word measured slower, through more collisions). HashDoS
/// is not a concern for a local file, and SipHash would dominate the guard's time on big files.
fn line_hash(line: &str) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let bytes = line.as_bytes();
    let mut h = 0u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    for &b in chunks.remainder() {
        h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
    }
    // The multiplies leave the low bits weak, and the table picks buckets by the low bits:
    // finish with a full avalanche (MurmurHash3's fmix64).
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Numbers distinct lines, so the diff compares integers rather than strings. The table holds
/// only the 4-byte ids (the lines live in `lines`): a quarter of the memory of a map keyed by
/// `&str`, which is what decides the speed at 100,000 lines.
struct Interner<'a> {
    table: HashTable<u32>,
    lines: Vec<&'a str>,
}

impl<'a> Interner<'a> {
    fn with_capacity(n: usize) -> Interner<'a> {
        Interner {
            table: HashTable::with_capacity(n),
            lines: Vec::new(),
        }
    }

    /// The id of `line`, numbering it when it is new.
    fn id(&mut self, line: &'a str) -> u32 {
        let lines = &self.lines;
        let entry = self.table.entry(
            line_hash(line),
            |&id| lines[id as usize] == line,
            |&id| line_hash(lines[id as usize]),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(e) => *e.get(),
            hashbrown::hash_table::Entry::Vacant(e) => {
                let id = self.lines.len() as u32;
                e.insert(id);
                self.lines.push(line);
                id
            }
        }
    }

    /// How many distinct lines were numbered.
    fn len(&self) -> usize {
        self.lines.len()
    }
}

/// A line diff between two normalised texts.
#[derive(Debug)]
pub(crate) struct LineDiff<'a> {
    old: Vec<&'a str>,
    new: Vec<&'a str>,
    ops: Vec<DiffOp>,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
}

/// The lines of `text`, each with its `\n` (the last one may lack it). `memchr` finds the
/// newlines with SIMD; `str::split_inclusive` would be a third of the guard's time on big files.
pub(crate) fn lines(text: &str) -> Vec<&str> {
    let mut out = Vec::with_capacity(text.len() / 32 + 1);
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', text.as_bytes()) {
        out.push(&text[start..=end]);
        start = end + 1;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// Diff two windows of line slices (used for previews); indices come back absolute.
fn diff_ops(
    old: &[&str],
    new: &[&str],
    ow: Range<usize>,
    nw: Range<usize>,
    context_before: usize,
) -> Vec<DiffOp> {
    let mut ops = Vec::new();
    let ctx = context_before.min(CONTEXT);
    if ctx > 0 {
        ops.push(DiffOp::Equal {
            old_index: ow.start - ctx,
            new_index: nw.start - ctx,
            len: ctx,
        });
    }
    let deadline = Instant::now() + Duration::from_millis(20);
    ops.extend(similar::capture_diff_deadline(
        Algorithm::Myers,
        old,
        ow,
        new,
        nw,
        Some(deadline),
    ));
    ops
}

/// Matched pairs of equal lines between two id sequences, increasing in both coordinates.
///
/// Two ways to find them. Exact Myers (a longest common subsequence) costs about O(n + d²) and
/// explodes when many shared lines move: d is large although few lines are new. The patience
/// approach matches the lines unique on both sides along their longest increasing run and runs
/// Myers only in the gaps between those anchors, in O(n log n) plus the small gaps; it can miss
/// the minimum when repeated lines and moved unique lines cross.
///
/// Small inputs go to Myers first (cheap, and exact). Big ones are anchored first, and the
/// anchored result is kept when it provably is a minimum (it meets the multiset lower bound,
/// as every local edit does); otherwise Myers gets a fifth of the budget to do better (enough
/// when the anchors were misled by a few lines; the cases it cannot finish are the ones with
/// many moved lines, where the anchors are right). Trying Myers first on a big input would
/// spend the whole budget on exactly the inputs it cannot finish.
///
/// `budget` is the time exact Myers may take (tests pass a generous one, so a loaded machine
/// cannot change their outcome). Positions are `u32`: pai edits files of at most a few MiB, and
/// half-size indices halve the memory these arrays stream through.
pub(crate) fn match_lines_within(
    old: &[u32],
    new: &[u32],
    n_ids: usize,
    budget: Duration,
) -> Vec<(u32, u32)> {
    if old.len() + new.len() <= SMALL_INPUT {
        return exact(old, new, budget).unwrap_or_else(|| anchored(old, new, n_ids));
    }
    let mut count = vec![0i32; n_ids];
    for &id in old {
        count[id as usize] += 1;
    }
    for &id in new {
        count[id as usize] -= 1;
    }
    let lower_bound: usize = count.iter().map(|c| c.unsigned_abs() as usize).sum();
    let a = anchored(old, new, n_ids);
    if old.len() + new.len() - 2 * a.len() <= lower_bound {
        return a;
    }
    match exact(old, new, budget / 5) {
        Some(m) if m.len() > a.len() => m,
        _ => a,
    }
}

/// A longest common subsequence by Myers, or `None` when it does not finish within `budget`.
fn exact(old: &[u32], new: &[u32], budget: Duration) -> Option<Vec<(u32, u32)>> {
    let start = Instant::now();
    let ops = similar::capture_diff_deadline(
        Algorithm::Myers,
        old,
        0..old.len(),
        new,
        0..new.len(),
        Some(start + budget),
    );
    if start.elapsed() >= budget {
        return None;
    }
    let mut out = Vec::new();
    push_equal_pairs(&ops, &mut out);
    Some(out)
}

/// Matches anchored on the lines unique on both sides, with Myers in the gaps between anchors.
fn anchored(old: &[u32], new: &[u32], n_ids: usize) -> Vec<(u32, u32)> {
    // Per id: how often it occurs on each side (saturating at 2: only "once" matters), and its
    // position in `new`.
    let mut seen_old = vec![0u8; n_ids];
    let mut seen_new = vec![0u8; n_ids];
    let mut pos_new = vec![0u32; n_ids];
    for &id in old {
        let c = &mut seen_old[id as usize];
        *c = (*c + 1).min(2);
    }
    for (j, &id) in new.iter().enumerate() {
        let c = &mut seen_new[id as usize];
        *c = (*c + 1).min(2);
        pos_new[id as usize] = j as u32;
    }
    let candidates: Vec<(u32, u32)> = old
        .iter()
        .enumerate()
        .filter(|&(_, &id)| seen_old[id as usize] == 1 && seen_new[id as usize] == 1)
        .map(|(i, &id)| (i as u32, pos_new[id as usize]))
        .collect();
    let anchors = longest_increasing(&candidates);
    let deadline = Instant::now() + GAP_BUDGET;
    let mut out = Vec::with_capacity(anchors.len());
    let (mut po, mut pn) = (0usize, 0usize);
    let end = (old.len() as u32, new.len() as u32);
    for &(o, n) in anchors.iter().chain(std::iter::once(&end)) {
        let (o, n) = (o as usize, n as usize);
        if o > po && n > pn {
            let gap = similar::capture_diff_deadline(
                Algorithm::Myers,
                old,
                po..o,
                new,
                pn..n,
                Some(deadline),
            );
            push_equal_pairs(&gap, &mut out);
        }
        if o < old.len() {
            out.push((o as u32, n as u32));
        }
        po = o + 1;
        pn = n + 1;
    }
    out
}

fn push_equal_pairs(ops: &[DiffOp], out: &mut Vec<(u32, u32)>) {
    for op in ops {
        if let DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = *op
        {
            out.extend((0..len).map(|k| ((old_index + k) as u32, (new_index + k) as u32)));
        }
    }
}

/// The longest subsequence of `pairs` (sorted by `.0`) increasing in `.1` (patience sorting).
fn longest_increasing(pairs: &[(u32, u32)]) -> Vec<(u32, u32)> {
    // tail_at[k]: index into `pairs` of the smallest tail of an increasing run of length k + 1;
    // tail_value[k] is that tail's `.1`, kept apart so the binary search reads one dense array.
    let mut tail_at: Vec<u32> = Vec::new();
    let mut tail_value: Vec<u32> = Vec::new();
    let mut prev: Vec<u32> = vec![u32::MAX; pairs.len()];
    for (i, &(_, n)) in pairs.iter().enumerate() {
        // Most lines keep their order, so most pairs extend the longest run: check that first.
        let k = match tail_value.last() {
            Some(&last) if last < n => tail_value.len(),
            None => 0,
            Some(_) => tail_value.partition_point(|&v| v < n),
        };
        if k > 0 {
            prev[i] = tail_at[k - 1];
        }
        if k == tail_value.len() {
            tail_at.push(i as u32);
            tail_value.push(n);
        } else {
            tail_at[k] = i as u32;
            tail_value[k] = n;
        }
    }
    let mut out = Vec::with_capacity(tail_at.len());
    let mut cur = tail_at.last().copied().unwrap_or(u32::MAX);
    while cur != u32::MAX {
        out.push(pairs[cur as usize]);
        cur = prev[cur as usize];
    }
    out.reverse();
    out
}

/// Turn matched line pairs (increasing in both coordinates) of two sequences of lengths
/// `old_len` and `new_len` into diff operations, with every index shifted by `at`.
fn ops_from_matches(
    matches: &[(u32, u32)],
    old_len: usize,
    new_len: usize,
    at: usize,
    ops: &mut Vec<DiffOp>,
) {
    let change = |o: Range<usize>, n: Range<usize>, ops: &mut Vec<DiffOp>| match (
        o.is_empty(),
        n.is_empty(),
    ) {
        (true, true) => {}
        (false, true) => ops.push(DiffOp::Delete {
            old_index: at + o.start,
            old_len: o.len(),
            new_index: at + n.start,
        }),
        (true, false) => ops.push(DiffOp::Insert {
            old_index: at + o.start,
            new_index: at + n.start,
            new_len: n.len(),
        }),
        (false, false) => ops.push(DiffOp::Replace {
            old_index: at + o.start,
            old_len: o.len(),
            new_index: at + n.start,
            new_len: n.len(),
        }),
    };
    let (mut oi, mut ni, mut i) = (0usize, 0usize, 0usize);
    while i < matches.len() {
        let (mo, mn) = (matches[i].0 as usize, matches[i].1 as usize);
        change(oi..mo, ni..mn, ops);
        let mut len = 1;
        while i + len < matches.len()
            && (matches[i + len].0 as usize, matches[i + len].1 as usize) == (mo + len, mn + len)
        {
            len += 1;
        }
        ops.push(DiffOp::Equal {
            old_index: at + mo,
            new_index: at + mn,
            len,
        });
        oi = mo + len;
        ni = mn + len;
        i += len;
    }
    change(oi..old_len, ni..new_len, ops);
}

/// Two texts split into lines with their common prefix and suffix found and the lines between
/// interned: the first stage of a diff, enough for a lower bound on its size.
pub(crate) struct Prepared<'a> {
    old: Vec<&'a str>,
    new: Vec<&'a str>,
    prefix: usize,
    old_mid: Range<usize>,
    new_mid: Range<usize>,
    old_ids: Vec<u32>,
    new_ids: Vec<u32>,
    distinct: usize,
}

impl<'a> Prepared<'a> {
    /// Split and intern; `None` when a side has more lines than line positions (`u32`) hold.
    /// MODIFY's size limit keeps files far below this.
    pub(crate) fn new(old: &'a str, new: &'a str) -> Option<Prepared<'a>> {
        let old_l = lines(old);
        let new_l = lines(new);
        if old_l.len().max(new_l.len()) >= u32::MAX as usize {
            return None;
        }
        let prefix = old_l.iter().zip(&new_l).take_while(|(a, b)| a == b).count();
        let suffix = old_l[prefix..]
            .iter()
            .rev()
            .zip(new_l[prefix..].iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let old_mid = prefix..old_l.len() - suffix;
        let new_mid = prefix..new_l.len() - suffix;
        let mut ids = Interner::with_capacity(old_mid.len() + new_mid.len());
        let old_ids: Vec<u32> = old_l[old_mid.clone()].iter().map(|s| ids.id(s)).collect();
        let new_ids: Vec<u32> = new_l[new_mid.clone()].iter().map(|s| ids.id(s)).collect();
        Some(Prepared {
            old: old_l,
            new: new_l,
            prefix,
            old_mid,
            new_mid,
            old_ids,
            new_ids,
            distinct: ids.len(),
        })
    }

    /// Lines of the old text.
    pub(crate) fn old_lines(&self) -> usize {
        self.old.len()
    }

    /// At least this many lines are added and removed, `(added, removed)`: every surplus copy
    /// of a line on one side must be.
    pub(crate) fn lower_bound(&self) -> (usize, usize) {
        let mut balance = vec![0i32; self.distinct];
        for &i in &self.old_ids {
            balance[i as usize] += 1;
        }
        for &i in &self.new_ids {
            balance[i as usize] -= 1;
        }
        let sum = |keep: fn(i32) -> bool| -> usize {
            balance
                .iter()
                .filter(|&&b| keep(b))
                .map(|&b| b.unsigned_abs() as usize)
                .sum()
        };
        (sum(|b| b < 0), sum(|b| b > 0))
    }

    /// A diff of only the first `window` changed lines of each side: a preview that costs
    /// little however big the change.
    pub(crate) fn preview(self, window: usize) -> LineDiff<'a> {
        let ow = self.old_mid.start..self.old_mid.end.min(self.old_mid.start + window);
        let nw = self.new_mid.start..self.new_mid.end.min(self.new_mid.start + window);
        let ops = diff_ops(&self.old, &self.new, ow, nw, self.prefix);
        LineDiff::from_ops(self.old, self.new, ops)
    }

    /// The whole diff, exact Myers given at most `budget` on a small input.
    pub(crate) fn finish(self, budget: Duration) -> LineDiff<'a> {
        // Lines present on one side only are certainly removed or added. Leaving them out of
        // Myers does not change the longest common subsequence (it can only use lines both
        // sides have), but shrinks both the input and the edit distance Myers' cost grows
        // with: a rewrite with few shared lines becomes nearly free.
        let mut on_old = vec![false; self.distinct];
        let mut on_new = vec![false; self.distinct];
        for &i in &self.old_ids {
            on_old[i as usize] = true;
        }
        for &i in &self.new_ids {
            on_new[i as usize] = true;
        }
        let shared = |ids: &[u32], on_other: &[bool]| -> (Vec<u32>, Vec<u32>) {
            ids.iter()
                .enumerate()
                .filter(|&(_, &id)| on_other[id as usize])
                .map(|(i, &id)| (i as u32, id))
                .unzip()
        };
        let (old_pos, old_f) = shared(&self.old_ids, &on_new);
        let (new_pos, new_f) = shared(&self.new_ids, &on_old);
        let mut matches = match_lines_within(&old_f, &new_f, self.distinct, budget);
        for m in &mut matches {
            *m = (old_pos[m.0 as usize], new_pos[m.1 as usize]);
        }
        let mut ops = Vec::with_capacity(matches.len() / 4 + 4);
        if self.prefix > 0 {
            ops.push(DiffOp::Equal {
                old_index: 0,
                new_index: 0,
                len: self.prefix,
            });
        }
        let (old_n, new_n) = (self.old_ids.len(), self.new_ids.len());
        ops_from_matches(&matches, old_n, new_n, self.prefix, &mut ops);
        let suffix = self.old.len() - self.old_mid.end;
        if suffix > 0 {
            ops.push(DiffOp::Equal {
                old_index: self.old_mid.end,
                new_index: self.new_mid.end,
                len: suffix,
            });
        }
        LineDiff::from_ops(self.old, self.new, ops)
    }
}

impl<'a> LineDiff<'a> {
    fn from_ops(old: Vec<&'a str>, new: Vec<&'a str>, ops: Vec<DiffOp>) -> LineDiff<'a> {
        let (mut added, mut removed) = (0, 0);
        for op in &ops {
            let (tag, o, n) = op.as_tag_tuple();
            match tag {
                DiffTag::Equal => {}
                DiffTag::Delete => removed += o.len(),
                DiffTag::Insert => added += n.len(),
                DiffTag::Replace => {
                    removed += o.len();
                    added += n.len();
                }
            }
        }
        LineDiff {
            old,
            new,
            ops,
            added,
            removed,
        }
    }

    /// The new text rebuilt from the old one and the operations: the diff's own check.
    #[cfg(test)]
    pub(crate) fn apply(&self) -> String {
        let mut out = String::new();
        for op in &self.ops {
            let (tag, o, n) = op.as_tag_tuple();
            match tag {
                DiffTag::Equal => out.extend(self.old[o].iter().copied()),
                DiffTag::Delete => {}
                DiffTag::Insert | DiffTag::Replace => out.extend(self.new[n].iter().copied()),
            }
        }
        out
    }

    /// A diff of a new file (everything added) or a deleted one (everything removed).
    pub(crate) fn whole(old: &'a str, new: &'a str) -> LineDiff<'a> {
        let old_l = lines(old);
        let new_l = lines(new);
        let mut ops = Vec::new();
        if !old_l.is_empty() {
            ops.push(DiffOp::Delete {
                old_index: 0,
                old_len: old_l.len(),
                new_index: 0,
            });
        }
        if !new_l.is_empty() {
            ops.push(DiffOp::Insert {
                old_index: old_l.len(),
                new_index: 0,
                new_len: new_l.len(),
            });
        }
        LineDiff::from_ops(old_l, new_l, ops)
    }

    /// Render as a unified diff with `a/` and `b/` prefixes, at most `max_lines` lines (then a
    /// note saying how many were left out).
    pub(crate) fn unified(&self, path: &str, max_lines: usize) -> String {
        let groups = similar::group_diff_ops(self.ops.clone(), CONTEXT);
        if groups.is_empty() {
            return String::new();
        }
        let mut out = format!("--- a/{path}\n+++ b/{path}\n");
        let mut shown = 0usize;
        let mut hidden = 0usize;
        for group in &groups {
            let (Some(first), Some(last)) = (group.first(), group.last()) else {
                continue;
            };
            let o = first.old_range().start..last.old_range().end;
            let n = first.new_range().start..last.new_range().end;
            let body: usize = group
                .iter()
                .map(|op| {
                    let (tag, o, n) = op.as_tag_tuple();
                    match tag {
                        DiffTag::Equal | DiffTag::Delete => o.len(),
                        DiffTag::Insert => n.len(),
                        DiffTag::Replace => o.len() + n.len(),
                    }
                })
                .sum();
            if shown >= max_lines {
                hidden += body;
                continue;
            }
            out.push_str(&format!("@@ -{} +{} @@\n", hunk_range(&o), hunk_range(&n)));
            for op in group {
                let (tag, o, n) = op.as_tag_tuple();
                let parts: [(char, &[&str]); 2] = match tag {
                    DiffTag::Equal => [(' ', &self.old[o]), ('+', &[])],
                    DiffTag::Delete => [('-', &self.old[o]), ('+', &[])],
                    DiffTag::Insert => [('+', &self.new[n]), ('-', &[])],
                    DiffTag::Replace => [('-', &self.old[o]), ('+', &self.new[n])],
                };
                for (sign, ls) in parts {
                    for l in ls {
                        if shown >= max_lines {
                            hidden += 1;
                            continue;
                        }
                        out.push(sign);
                        out.push_str(l);
                        if !l.ends_with('\n') {
                            out.push_str("\n\\ No newline at end of file\n");
                        }
                        shown += 1;
                    }
                }
            }
        }
        if hidden > 0 {
            out.push_str(&format!(
                "… ({} more diff lines not shown)\n",
                thousands(hidden)
            ));
        }
        out
    }
}

fn hunk_range(r: &Range<usize>) -> String {
    match r.len() {
        0 => format!("{},0", r.start),
        1 => format!("{}", r.start + 1),
        n => format!("{},{n}", r.start + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchored_matching_is_valid_and_handles_moves() {
        // Lines 0..200, with every 10th line moved 5 places down.
        let old: Vec<u32> = (0..200).collect();
        let mut new = old.clone();
        for i in (0..190).step_by(10) {
            new.swap(i, i + 5);
        }
        new.push(7); // a repeated line: never an anchor
        let exact = exact(&old, &new, Duration::from_secs(5)).unwrap();
        let anchored = anchored(&old, &new, 200);
        for m in [&exact, &anchored] {
            assert!(m.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
            assert!(m.iter().all(|&(o, n)| old[o as usize] == new[n as usize]));
        }
        // 19 swaps of two lines: each swapped pair leaves the common subsequence.
        assert_eq!(exact.len(), 200 - 2 * 19);
        assert_eq!(anchored.len(), exact.len());
        assert_eq!(
            longest_increasing(&[(0, 3), (1, 1), (2, 2), (3, 0), (4, 4)]),
            [(1, 1), (2, 2), (4, 4)]
        );
    }

    #[test]
    fn big_inputs_are_refined_when_anchors_mislead() {
        // 3,000 shared unique lines, then A, 100 repeated lines, B; the new side swaps A and B.
        // Anchoring on unique lines keeps B and so gives up the 100 repeated lines (202 lines
        // changed); the minimum is 4. The input is over SMALL_INPUT, so this takes the
        // anchored-first path and must come back to the minimum.
        let (a, b, x) = (3_000, 3_001, 3_002);
        let mut old: Vec<u32> = (0..3_000).collect();
        let mut new = old.clone();
        old.push(a);
        old.extend(std::iter::repeat_n(x, 100));
        old.push(b);
        new.push(b);
        new.extend(std::iter::repeat_n(x, 100));
        new.push(a);
        assert!(old.len() + new.len() > SMALL_INPUT);
        assert_eq!(anchored(&old, &new, 3_003).len(), 3_001);
        let m = match_lines_within(&old, &new, 3_003, Duration::from_secs(30));
        assert!(m.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert!(m.iter().all(|&(o, n)| old[o as usize] == new[n as usize]));
        assert_eq!(m.len(), 3_100);
    }

    #[test]
    fn big_local_edits_keep_the_anchored_minimum() {
        // Every 100th line changed in 10,000: the anchored matching meets the lower bound, so
        // it is the minimum without asking Myers.
        let old: Vec<u32> = (0..10_000).collect();
        let new: Vec<u32> = (0..10_000)
            .map(|i| if i % 100 == 50 { 10_000 + i } else { i })
            .collect();
        let m = match_lines_within(&old, &new, 20_000, Duration::from_secs(30));
        assert_eq!(m.len(), 10_000 - 100);
    }
}

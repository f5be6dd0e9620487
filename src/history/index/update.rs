//! An index update: the file rewritten with a few entries changed, the unchanged ones
//! copied in runs, the cache tree (`TREE`) kept with the changed directories invalidated.

use std::collections::BTreeMap;
use std::io::Write;

use git2::Oid;

use super::file::IndexFile;
use super::file_bytes::WINDOW;
use super::format::{
    Entry, FIXED_LEN, FLAGS_OFFSET, HashingWriter, MODE_OFFSET, NAME_MASK, OID_OFFSET, SIGNATURE,
    encode_varint,
};

impl IndexFile {
    /// Indices of the entries an update replaces or removes: the updated paths (every stage),
    /// and whatever would clash with an added file — a file where one of its directories
    /// goes, or anything below a directory where it goes — as `git add` would remove them.
    pub(super) fn dropped(&self, updates: &ByteUpdates) -> Vec<bool> {
        let mut dropped = vec![false; self.entries.len()];
        let mark_exact = |path: &[u8], dropped: &mut Vec<bool>| {
            let mut i = self.lower_bound(path);
            while i < self.entries.len() && self.path_at(i) == path {
                dropped[i] = true;
                i += 1;
            }
        };
        for (path, entry) in updates {
            let path = path.as_slice();
            mark_exact(path, &mut dropped);
            if entry.is_none() {
                continue;
            }
            for (i, &b) in path.iter().enumerate() {
                if b == b'/' {
                    mark_exact(&path[..i], &mut dropped);
                }
            }
            let mut below = path.to_vec();
            below.push(b'/');
            let mut i = self.lower_bound(&below);
            while i < self.entries.len() && self.path_at(i).starts_with(&below) {
                dropped[i] = true;
                i += 1;
            }
        }
        dropped
    }

    /// The whole file with `updates` applied, in memory (tests compare it with a model).
    #[cfg(test)]
    pub(super) fn rewrite(&self, updates: &BTreeMap<String, Option<Entry>>) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = self.write_updated(&by_bytes(updates), &mut out);
        out
    }

    /// Write the whole file with `updates` applied to `sink`. Unchanged entries are copied in
    /// runs, byte for byte (in version 4 only the first entry of a run is re-encoded, since its
    /// predecessor may have changed), straight from the old file's bytes to `sink` and hashed
    /// on the way: the cost is one pass of copying and hashing, without building the new file
    /// in memory first (at 100,000 files that buffer alone would be 10 MB more faulted in and
    /// copied per commit and undo).
    pub(super) fn write_updated(
        &self,
        updates: &ByteUpdates,
        sink: impl Write,
    ) -> std::io::Result<()> {
        let dropped = self.dropped(updates);
        // New entries, each with the position of the old entry it goes before.
        let inserts: Vec<(usize, &[u8], Oid, u32)> = updates
            .iter()
            .filter_map(|(p, e)| {
                e.map(|(id, mode)| (self.lower_bound(p), p.as_slice(), id, mode as u32))
            })
            .collect();
        let count = dropped.iter().filter(|&&d| !d).count() + inserts.len();
        let mut out = HashingWriter::new(sink);
        out.put(SIGNATURE)?;
        out.put(&self.version.to_be_bytes())?;
        out.put(&(count as u32).to_be_bytes())?;
        // Entries that are re-encoded are assembled here, then written in one piece.
        let mut piece: Vec<u8> = Vec::with_capacity(256);
        let mut prev: Vec<u8> = Vec::new();
        let n = self.entries.len();
        let mut inserts = inserts.into_iter().peekable();
        let mut i = 0;
        loop {
            while let Some((_, p, id, mode)) = inserts.next_if(|x| x.0 <= i) {
                let mut fixed = [0u8; FIXED_LEN];
                fixed[MODE_OFFSET..MODE_OFFSET + 4].copy_from_slice(&mode.to_be_bytes());
                fixed[OID_OFFSET..OID_OFFSET + 20].copy_from_slice(id.as_bytes());
                let flags = p.len().min(NAME_MASK as usize) as u16;
                fixed[FLAGS_OFFSET..FLAGS_OFFSET + 2].copy_from_slice(&flags.to_be_bytes());
                piece.clear();
                piece.extend_from_slice(&fixed);
                self.emit_path(&mut piece, &mut prev, p, FIXED_LEN);
                out.put(&piece)?;
            }
            if i == n {
                break;
            }
            if dropped[i] {
                i += 1;
                continue;
            }
            let next_insert = inserts.peek().map_or(n, |x| x.0);
            let mut j = i + 1;
            while j < n && j < next_insert && !dropped[j] {
                j += 1;
            }
            let first = self.entries[i];
            let (start, fixed) = (first.start as usize, self.fixed_of(first));
            let run_end = self.end_of(j - 1);
            if self.version == 4 {
                piece.clear();
                piece.extend_from_slice(&self.buf[start..start + fixed]);
                self.emit_path(&mut piece, &mut prev, self.path_at(i), fixed);
                out.put(&piece)?;
                self.copy_run(&mut out, self.end_of(i)..run_end)?;
                prev.clear();
                prev.extend_from_slice(self.path_at(j - 1));
            } else {
                self.copy_run(&mut out, start..run_end)?;
            }
            i = j;
        }
        let changed: Vec<&[u8]> = updates.keys().map(Vec::as_slice).collect();
        for (sig, data) in &self.extensions {
            let data = &self.buf[data.clone()];
            let kept = match sig {
                b"TREE" => invalidate_cache_tree(data, &changed),
                b"REUC" => Some(data.to_vec()),
                _ => None,
            };
            if let Some(kept) = kept {
                out.put(sig)?;
                out.put(&(kept.len() as u32).to_be_bytes())?;
                out.put(&kept)?;
            }
        }
        out.finish()
    }

    /// Copy `range` of the old file's bytes to `out` a window at a time, handing each
    /// window's pages back once it is written: a run of unchanged entries is most of the
    /// file, which would otherwise all be resident at the end of the copy.
    fn copy_run<W: Write>(
        &self,
        out: &mut HashingWriter<W>,
        range: std::ops::Range<usize>,
    ) -> std::io::Result<()> {
        let mut at = range.start;
        while at < range.end {
            let end = (at + WINDOW).min(range.end);
            out.put(&self.buf[at..end])?;
            self.buf.release(at..end);
            at = end;
        }
        Ok(())
    }

    /// The path part of an entry: padded (v2, v3) or prefix-compressed (v4).
    pub(super) fn emit_path(
        &self,
        out: &mut Vec<u8>,
        prev: &mut Vec<u8>,
        path: &[u8],
        fixed: usize,
    ) {
        if self.version == 4 {
            let common = prev.iter().zip(path).take_while(|(a, b)| a == b).count();
            encode_varint(prev.len() - common, out);
            out.extend_from_slice(&path[common..]);
            out.push(0);
            prev.clear();
            prev.extend_from_slice(path);
        } else {
            out.extend_from_slice(path);
            let len = (fixed + path.len() + 8) & !7;
            out.resize(out.len() + len - fixed - path.len(), 0);
        }
    }
}

/// One node of the cache tree.
pub(super) struct TreeNode {
    name: Vec<u8>,
    entries: i64,
    id: Option<[u8; 20]>,
    children: Vec<TreeNode>,
}

pub(super) fn parse_tree_node(data: &[u8], pos: &mut usize) -> Option<TreeNode> {
    let nul = data[*pos..].iter().position(|&b| b == 0)?;
    let name = data[*pos..*pos + nul].to_vec();
    *pos += nul + 1;
    let nl = data[*pos..].iter().position(|&b| b == b'\n')?;
    let line = std::str::from_utf8(&data[*pos..*pos + nl]).ok()?;
    *pos += nl + 1;
    let (entries, subtrees) = line.split_once(' ')?;
    let entries: i64 = entries.parse().ok()?;
    let subtrees: usize = subtrees.parse().ok()?;
    let id = if entries >= 0 {
        let mut id = [0u8; 20];
        id.copy_from_slice(data.get(*pos..*pos + 20)?);
        *pos += 20;
        Some(id)
    } else {
        None
    };
    let mut children = Vec::with_capacity(subtrees);
    for _ in 0..subtrees {
        children.push(parse_tree_node(data, pos)?);
    }
    Some(TreeNode {
        name,
        entries,
        id,
        children,
    })
}

pub(super) fn write_tree_node(node: &TreeNode, out: &mut Vec<u8>) {
    out.extend_from_slice(&node.name);
    out.push(0);
    out.extend_from_slice(format!("{} {}\n", node.entries, node.children.len()).as_bytes());
    if let Some(id) = &node.id {
        out.extend_from_slice(id);
    }
    for child in &node.children {
        write_tree_node(child, out);
    }
}

/// Index updates keyed by the bytes of their paths: the index is sorted by bytes, which is
/// not the order of pai's string spellings once a name is not UTF-8 (see [`crate::rawname`]).
pub(super) type ByteUpdates = BTreeMap<Vec<u8>, Option<Entry>>;

pub(super) fn by_bytes(updates: &BTreeMap<String, Option<Entry>>) -> ByteUpdates {
    updates
        .iter()
        .map(|(p, e)| (crate::rawname::decode(p).into_owned(), *e))
        .collect()
}

/// The `TREE` extension with every directory on the way to a changed path marked invalid;
/// `None` (drop the cache) if it cannot be parsed.
pub(super) fn invalidate_cache_tree(data: &[u8], changed: &[&[u8]]) -> Option<Vec<u8>> {
    let mut pos = 0;
    let mut root = parse_tree_node(data, &mut pos)?;
    if pos != data.len() {
        return None;
    }
    for path in changed {
        let mut node = &mut root;
        let mut parts = path.split(|&b| b == b'/').peekable();
        loop {
            node.entries = -1;
            node.id = None;
            let Some(part) = parts.next() else { break };
            if parts.peek().is_none() {
                break;
            }
            match node.children.iter_mut().find(|c| c.name == part) {
                Some(child) => node = child,
                None => break,
            }
        }
    }
    let mut out = Vec::with_capacity(data.len());
    write_tree_node(&root, &mut out);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::Path;

    use super::super::format::{HASH_LEN, decode_varint};

    #[test]
    fn a_count_the_file_cannot_hold_is_refused_before_allocating() {
        for version in [2u32, 3, 4] {
            let mut buf = SIGNATURE.to_vec();
            buf.extend_from_slice(&version.to_be_bytes());
            buf.extend_from_slice(&u32::MAX.to_be_bytes());
            buf.extend_from_slice(&[0; 64]);
            buf.extend_from_slice(&[0; HASH_LEN]);
            let err = IndexFile::parse(Path::new("index"), buf)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains("more than the file can hold"), "{err}");
        }
    }

    #[test]
    fn varints_round_trip_like_git() {
        for v in [
            0usize,
            1,
            127,
            128,
            255,
            16511,
            16512,
            1 << 20,
            usize::MAX >> 8,
        ] {
            let mut out = Vec::new();
            encode_varint(v, &mut out);
            assert_eq!(decode_varint(&out), Some((v, out.len())), "{v}");
        }
        // git's encoding of 128 is 0x80 0x00 (the continuation adds one).
        let mut out = Vec::new();
        encode_varint(128, &mut out);
        assert_eq!(out, [0x80, 0x00]);
    }

    #[test]
    fn garbage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("index");
        fs::write(&p, b"DIRC\0\0\0\x02\0\0\0\x05short").unwrap();
        assert!(IndexFile::read(&p).is_err());
        fs::write(&p, b"not an index at all, not at all......").unwrap();
        assert!(IndexFile::read(&p).is_err());
        let missing = IndexFile::read(&dir.path().join("none")).unwrap();
        assert!(missing.get("a").is_none());
    }

    #[test]
    fn entries_round_trip_in_every_version_including_names_over_4095_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("index");
        let long = format!("{}/f.txt", "d".repeat(5000));
        let id = Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        for version in [2u32, 3, 4] {
            let mut empty = IndexFile::empty();
            empty.version = version;
            let mut updates = BTreeMap::new();
            updates.insert("a.txt".to_string(), Some((id, 0o100644)));
            updates.insert("a/b.txt".to_string(), Some((id, 0o100755)));
            updates.insert(long.clone(), Some((id, 0o100644)));
            fs::write(&p, empty.rewrite(&updates)).unwrap();
            let read = IndexFile::read(&p).unwrap();
            assert_eq!(read.version, version);
            assert_eq!(read.get("a.txt"), Some((id, 0o100644)));
            assert_eq!(read.get("a/b.txt"), Some((id, 0o100755)));
            assert_eq!(read.get(&long), Some((id, 0o100644)));
            assert_eq!(read.under("a"), ["a/b.txt"]);
            // Removing one entry keeps the others.
            let mut updates = BTreeMap::new();
            updates.insert("a.txt".to_string(), None);
            fs::write(&p, read.rewrite(&updates)).unwrap();
            let read = IndexFile::read(&p).unwrap();
            assert_eq!(read.get("a.txt"), None);
            assert_eq!(read.get(&long), Some((id, 0o100644)));
            assert_eq!(read.entries.len(), 2);
        }
    }

    #[test]
    fn lookups_across_many_blocks_find_every_entry_and_nothing_between() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("index");
        let id = Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        for version in [2u32, 4] {
            let mut empty = IndexFile::empty();
            empty.version = version;
            // Enough entries for many blocks of pivots, the last one partly filled.
            let paths: Vec<String> = (0..1000).map(|i| format!("d{}/f{i:04}", i % 7)).collect();
            let updates: BTreeMap<String, Option<Entry>> = paths
                .iter()
                .map(|p| (p.clone(), Some((id, 0o100644))))
                .collect();
            fs::write(&p, empty.rewrite(&updates)).unwrap();
            let read = IndexFile::read(&p).unwrap();
            let mut sorted = paths.clone();
            sorted.sort();
            for (i, path) in sorted.iter().enumerate() {
                assert_eq!(read.position(path.as_bytes()), Some(i), "{path}");
                assert_eq!(read.get(path), Some((id, 0o100644)));
                // Just after it and just before it: nothing there.
                assert_eq!(read.get(&format!("{path}x")), None);
                assert_eq!(read.lower_bound(format!("{path}x").as_bytes()), i + 1);
            }
            assert_eq!(read.lower_bound(b""), 0);
            assert_eq!(read.lower_bound(b"zzz"), 1000);
            assert_eq!(
                read.under("d3").len(),
                sorted.iter().filter(|p| p.starts_with("d3/")).count()
            );
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn rewrite_matches_a_model_in_every_version(
            version in 2u32..=4,
            start in proptest::collection::btree_map("[ab]{1,2}(/[ab]{1,2}){0,2}", 0u8..4, 0..40),
            edits in proptest::collection::btree_map("[ab]{1,2}(/[ab]{1,2}){0,2}", proptest::option::of(0u8..4), 0..8),
        ) {
            let id = |n: u8| Oid::from_bytes(&[n + 1; 20]).unwrap();
            // A valid index has no file/directory clashes: build the start state through
            // rewrite itself, which removes them as git add would.
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("index");
            let mut empty = IndexFile::empty();
            empty.version = version;
            let mut model: BTreeMap<String, u8> = BTreeMap::new();
            let mut current = empty;
            for (path, n) in &start {
                let mut one = BTreeMap::new();
                one.insert(path.clone(), Some((id(*n), 0o100644)));
                fs::write(&p, current.rewrite(&one)).unwrap();
                current = IndexFile::read(&p).unwrap();
                apply(&mut model, path, Some(*n));
            }
            let updates: BTreeMap<String, Option<Entry>> = edits
                .iter()
                .map(|(p, n)| (p.clone(), n.map(|n| (id(n), 0o100644))))
                .collect();
            for (path, n) in &edits {
                apply(&mut model, path, *n);
            }
            // Apply all edits at once; clashes among the edits themselves resolve in path order.
            fs::write(&p, current.rewrite(&updates)).unwrap();
            let read = IndexFile::read(&p).unwrap();
            let got: BTreeMap<String, u8> = (0..read.len())
                .map(|i| (String::from_utf8(read.path_at(i).to_vec()).unwrap(), read.entry_of(read.entries[i]).0.as_bytes()[0] - 1))
                .collect();
            let paths: Vec<&[u8]> = (0..read.len()).map(|i| read.path_at(i)).collect();
            proptest::prop_assert!(paths.windows(2).all(|w| w[0] < w[1]), "unsorted: {paths:?}");
            if edits.keys().all(|a| edits.keys().all(|b| a == b || !(b.starts_with(&format!("{a}/"))))) {
                proptest::prop_assert_eq!(got, model);
            }
        }
    }

    /// The model of `git add` / `git rm --cached` for one path.
    fn apply(model: &mut BTreeMap<String, u8>, path: &str, n: Option<u8>) {
        model.remove(path);
        if let Some(n) = n {
            model.retain(|k, _| {
                !k.starts_with(&format!("{path}/")) && !path.starts_with(&format!("{k}/"))
            });
            model.insert(path.to_string(), n);
        }
    }

    #[test]
    fn adding_a_file_removes_what_clashes_with_it() {
        let id = Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("index");
        let mut updates = BTreeMap::new();
        updates.insert("x".to_string(), Some((id, 0o100644)));
        updates.insert("y/z".to_string(), Some((id, 0o100644)));
        fs::write(&p, IndexFile::empty().rewrite(&updates)).unwrap();
        let read = IndexFile::read(&p).unwrap();
        let mut updates = BTreeMap::new();
        updates.insert("x/inner".to_string(), Some((id, 0o100644)));
        updates.insert("y".to_string(), Some((id, 0o100644)));
        fs::write(&p, read.rewrite(&updates)).unwrap();
        let read = IndexFile::read(&p).unwrap();
        let paths: Vec<&[u8]> = (0..read.len()).map(|i| read.path_at(i)).collect();
        assert_eq!(paths, [b"x/inner".as_slice(), b"y".as_slice()]);
    }

    #[test]
    fn cache_tree_invalidation_marks_only_the_changed_path() {
        // root (2 entries, 1 subtree) -> "a" (1 entry, 0 subtrees)
        let mut data = Vec::new();
        data.extend_from_slice(b"\x002 1\n");
        data.extend_from_slice(&[1u8; 20]);
        data.extend_from_slice(b"a\x001 0\n");
        data.extend_from_slice(&[2u8; 20]);
        data.extend_from_slice(b"b\x001 0\n");
        data.extend_from_slice(&[3u8; 20]);
        // Make the root say 2 subtrees.
        data[3] = b'2';
        let out = invalidate_cache_tree(&data, &[b"a/x.txt".as_slice()]).unwrap();
        let mut pos = 0;
        let root = parse_tree_node(&out, &mut pos).unwrap();
        assert_eq!(root.entries, -1);
        assert_eq!(root.children[0].entries, -1);
        assert_eq!(root.children[1].entries, 1);
        assert_eq!(root.children[1].id, Some([3u8; 20]));
        assert_eq!(pos, out.len());
    }
}

//! The index's stage-0 blobs read as a stream, for the repository map's "uncommitted" signal
//! ([`super::activity::index_blobs`]), which needs each tracked file's path and blob id and
//! nothing else.
//!
//! Why not [`super::index_file::IndexFile`]: it holds the whole file (9.6 MB at 100,000
//! files) and a table of its entries (2 MB) so that a commit can splice a few entries between
//! byte-for-byte copies of the rest, and the map would hold both while it is built. Here the
//! file passes through a 64 KiB buffer once. The checks are `index_file`'s: the header and
//! its entry count, every entry within the file, version 4's path compression, a path for
//! every entry, and the extensions that change how entries must be read (a split or sparse
//! index) refused.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::error::HistoryError;

const SIGNATURE: &[u8; 4] = b"DIRC";
const HEADER_LEN: u64 = 12;
const HASH_LEN: u64 = 20;
/// Stat data (40 bytes), object id (20) and flags (2); 2 more with extended flags.
const FIXED_LEN: usize = 62;
const OID_OFFSET: usize = 40;
const FLAGS_OFFSET: usize = 60;
const FLAG_EXTENDED: u16 = 0x4000;
const STAGE_MASK: u16 = 0x3000;
const NAME_MASK: u16 = 0x0fff;

fn bad(path: &Path, why: impl std::fmt::Display) -> HistoryError {
    HistoryError::Index {
        path: path.to_path_buf(),
        why: why.to_string(),
    }
}

/// Each stage-0 entry's path (spelled as [`crate::rawname`] spells names) and raw blob id,
/// in the index's order, from the index file at `path` (a missing file is an empty index).
pub(crate) fn stage0_blobs(path: &Path) -> Result<Vec<(String, [u8; 20])>, HistoryError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(bad(path, e)),
    };
    let len = file.metadata().map_err(|e| bad(path, e))?.len();
    let mut stream = Stream {
        file: path,
        reader: BufReader::with_capacity(64 * 1024, file),
        pos: 0,
        end: len.saturating_sub(HASH_LEN),
    };
    let (version, count) = stream.header(len)?;
    let mut out = Vec::with_capacity(count);
    let mut name = Vec::new();
    for _ in 0..count {
        let (stage, id) = stream.entry(version, &mut name)?;
        if name.is_empty() {
            return Err(bad(path, "an entry has no path"));
        }
        if stage == 0 {
            out.push((crate::rawname::encode(&name).into_owned(), id));
        }
    }
    stream.extensions()?;
    Ok(out)
}

/// The index file read front to back, never past `end` (where its checksum starts).
struct Stream<'p> {
    file: &'p Path,
    reader: BufReader<File>,
    pos: u64,
    end: u64,
}

impl Stream<'_> {
    fn truncated(&self) -> HistoryError {
        bad(self.file, "truncated entry")
    }

    /// Fill `buf` from the file.
    fn take(&mut self, buf: &mut [u8]) -> Result<(), HistoryError> {
        if self.pos + buf.len() as u64 > self.end {
            return Err(self.truncated());
        }
        self.reader.read_exact(buf).map_err(|e| bad(self.file, e))?;
        self.pos += buf.len() as u64;
        Ok(())
    }

    /// Append the bytes up to the next NUL to `out`; the NUL is read, not appended.
    fn until_nul(&mut self, out: &mut Vec<u8>) -> Result<(), HistoryError> {
        let limit = self.end - self.pos;
        let read = (&mut self.reader)
            .take(limit)
            .read_until(0, out)
            .map_err(|e| bad(self.file, e))?;
        self.pos += read as u64;
        if read == 0 || out.last() != Some(&0) {
            return Err(self.truncated());
        }
        out.pop();
        Ok(())
    }

    /// The header: signature, a version pai reads, and an entry count the file can hold
    /// (checked before anything is sized by it, as `index_file` does).
    fn header(&mut self, len: u64) -> Result<(u32, usize), HistoryError> {
        if len > u64::from(u32::MAX) {
            return Err(bad(self.file, "larger than 4 GiB"));
        }
        let mut head = [0u8; HEADER_LEN as usize];
        if len < HEADER_LEN + HASH_LEN || self.take(&mut head).is_err() || &head[..4] != SIGNATURE {
            return Err(bad(self.file, "not a git index file"));
        }
        let version = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        if !(2..=4).contains(&version) {
            return Err(bad(
                self.file,
                format!("index version {version} is not supported"),
            ));
        }
        let count = u32::from_be_bytes([head[8], head[9], head[10], head[11]]) as usize;
        let room = (len - HEADER_LEN - HASH_LEN) as usize;
        if count > room / (FIXED_LEN + 1) {
            return Err(bad(
                self.file,
                format!("the header counts {count} entries, more than the file can hold"),
            ));
        }
        Ok((version, count))
    }

    /// The next entry's stage and blob id; its path replaces `name` (version 4 compresses a
    /// path against the previous one, which `name` holds).
    fn entry(&mut self, version: u32, name: &mut Vec<u8>) -> Result<(u8, [u8; 20]), HistoryError> {
        let mut fixed = [0u8; FIXED_LEN + 2];
        self.take(&mut fixed[..FIXED_LEN])?;
        let flags = u16::from_be_bytes([fixed[FLAGS_OFFSET], fixed[FLAGS_OFFSET + 1]]);
        let mut fixed_len = FIXED_LEN;
        if flags & FLAG_EXTENDED != 0 {
            if version < 3 {
                return Err(bad(self.file, "extended flags in a version 2 index"));
            }
            self.take(&mut fixed[FIXED_LEN..])?;
            fixed_len += 2;
        }
        let mut id = [0u8; 20];
        id.copy_from_slice(&fixed[OID_OFFSET..OID_OFFSET + 20]);
        if version == 4 {
            self.compressed_path(name)?;
        } else {
            self.padded_path(fixed_len, flags, name)?;
        }
        Ok((((flags & STAGE_MASK) >> 12) as u8, id))
    }

    /// A version 4 path: git's offset varint of how many bytes to strip from the end of the
    /// previous path, then what follows them, NUL-terminated.
    fn compressed_path(&mut self, name: &mut Vec<u8>) -> Result<(), HistoryError> {
        let mut byte = [0u8; 1];
        self.take(&mut byte)?;
        let mut strip = usize::from(byte[0] & 127);
        while byte[0] & 128 != 0 {
            strip = strip
                .checked_add(1)
                .filter(|v| *v <= usize::MAX >> 7)
                .ok_or_else(|| self.truncated())?;
            self.take(&mut byte)?;
            strip = (strip << 7) + usize::from(byte[0] & 127);
        }
        if strip > name.len() {
            return Err(bad(self.file, "bad path compression"));
        }
        name.truncate(name.len() - strip);
        self.until_nul(name)
    }

    /// A version 2 or 3 path: as long as the flags say (up to the NUL when too long for
    /// them), NUL-terminated, padded with NULs to a multiple of 8 bytes for the entry.
    fn padded_path(
        &mut self,
        fixed_len: usize,
        flags: u16,
        name: &mut Vec<u8>,
    ) -> Result<(), HistoryError> {
        name.clear();
        let len = usize::from(flags & NAME_MASK);
        if len < usize::from(NAME_MASK) {
            name.resize(len, 0);
            self.take(name)?;
            let mut nul = [0u8; 1];
            self.take(&mut nul)?;
            if nul[0] != 0 {
                return Err(self.truncated());
            }
        } else {
            self.until_nul(name)?;
        }
        // The entry ends on a multiple of 8: what is left of its padding after the NUL.
        let padding = ((fixed_len + name.len() + 8) & !7) - (fixed_len + name.len() + 1);
        let mut pad = [0u8; 8];
        self.take(&mut pad[..padding])
    }

    /// The extensions between the entries and the checksum: each a signature, a size and its
    /// data, skipped; one that changes how the entries must be read is refused.
    fn extensions(&mut self) -> Result<(), HistoryError> {
        while self.pos < self.end {
            let mut head = [0u8; 8];
            self.take(&mut head)
                .map_err(|_| bad(self.file, "truncated extension"))?;
            let size = u64::from(u32::from_be_bytes([head[4], head[5], head[6], head[7]]));
            if self.pos + size > self.end {
                return Err(bad(self.file, "truncated extension"));
            }
            // Optional extensions start with an upper-case letter; the others change how
            // the entries must be read (split index `link`, sparse index `sdir`).
            if !head[0].is_ascii_uppercase() {
                return Err(bad(
                    self.file,
                    format!(
                        "it uses the `{}` extension (split or sparse index)",
                        String::from_utf8_lossy(&head[..4])
                    ),
                ));
            }
            // Within the file: checked against `end` above.
            self.reader
                .seek_relative(size as i64)
                .map_err(|e| bad(self.file, e))?;
            self.pos += size;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::index_file::IndexFile;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// A repository whose index has every kind of entry: plain files, names that are not
    /// UTF-8, a path longer than the flags can say, conflicts, and an intent-to-add entry
    /// (extended flags, so version 3).
    fn varied_index() -> tempfile::TempDir {
        use std::os::unix::ffi::OsStrExt;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        git(root, &["init", "-q"]);
        std::fs::create_dir(root.join("src")).unwrap();
        for name in ["a.txt", "src/b.rs", "src/c d.py"] {
            std::fs::write(root.join(name), format!("{name}\n")).unwrap();
        }
        let odd = std::ffi::OsStr::from_bytes(b"src/caf\xe9.txt");
        std::fs::write(root.join(odd), "latin-1\n").unwrap();
        git(root, &["add", "-A"]);
        let blob = git(root, &["hash-object", "-w", "a.txt"]);
        let blob = blob.trim();
        let long = format!("{}/end.txt", vec!["x".repeat(200); 25].join("/"));
        git(
            root,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("100644,{blob},{long}"),
            ],
        );
        let conflicts = format!(
            "100644 {blob} 1\tsrc/both.txt\n100644 {blob} 2\tsrc/both.txt\n100644 {blob} 3\tsrc/both.txt\n"
        );
        let mut child = Command::new("git")
            .args(["update-index", "--index-info"])
            .current_dir(root)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), conflicts.as_bytes()).unwrap();
        assert!(child.wait().unwrap().success());
        std::fs::write(root.join("new.txt"), "intent\n").unwrap();
        git(root, &["add", "-N", "new.txt"]);
        tmp
    }

    fn reference(index: &Path) -> Vec<(String, [u8; 20])> {
        IndexFile::read(index).unwrap().stage0_blobs()
    }

    #[test]
    fn the_stream_reads_what_the_whole_file_reader_reads_in_every_version() {
        let tmp = varied_index();
        let root = tmp.path();
        let index = root.join(".git/index");
        for version in ["3", "4", "2"] {
            if version == "2" {
                // Version 2 cannot hold the intent-to-add entry's extended flags.
                git(root, &["rm", "-q", "--cached", "new.txt"]);
            }
            git(root, &["update-index", "--index-version", version]);
            let streamed = stage0_blobs(&index).unwrap();
            assert_eq!(streamed, reference(&index), "version {version}");
            assert!(
                streamed.iter().any(|(p, _)| p.len() > 4095),
                "the long path is read in version {version}"
            );
            assert!(!streamed.iter().any(|(p, _)| p == "src/both.txt"));
        }
        // The cache tree (an optional extension) is skipped.
        git(
            root,
            &["update-index", "--remove", "--force-remove", "src/both.txt"],
        );
        git(root, &["write-tree"]);
        assert_eq!(stage0_blobs(&index).unwrap(), reference(&index));
    }

    #[test]
    fn a_damaged_or_split_index_is_refused_like_the_whole_file_reader_refuses_it() {
        let tmp = varied_index();
        let root = tmp.path();
        let index = root.join(".git/index");
        let bytes = std::fs::read(&index).unwrap();
        for cut in [5, 100, bytes.len() / 2, bytes.len() - 21] {
            std::fs::write(&index, &bytes[..cut]).unwrap();
            assert!(stage0_blobs(&index).is_err(), "cut at {cut}");
            assert!(IndexFile::read(&index).is_err(), "cut at {cut}");
        }
        std::fs::write(&index, &bytes).unwrap();
        git(root, &["rm", "-q", "--cached", "new.txt"]);
        git(
            root,
            &["update-index", "--remove", "--force-remove", "src/both.txt"],
        );
        git(root, &["update-index", "--split-index"]);
        assert!(stage0_blobs(&index).is_err());
        assert!(IndexFile::read(&index).is_err());
        assert_eq!(stage0_blobs(&root.join("no-index")).unwrap(), Vec::new());
    }
}

//! A file's bytes held for reading: mapped from the page cache when the file is large enough
//! for that to pay, read into memory otherwise.
//!
//! A mapping's pages count in the process's resident set once touched, and a pass over a whole
//! index (reading it, copying it into its update) touches all of it: 11 MB at 100,000 entries
//! of long paths, more than any other part of a command. So the mapping is not populated up
//! front, and a pass hands back what it has gone past ([`FileBytes::release`]): its pages
//! leave the process (they stay in the page cache), and a later read of them faults them in
//! again from there, unchanged.
//!
//! Mapping a file git replaces by renaming a new one over it (its index, under `index.lock`)
//! is safe to read for as long as the mapping lives: the mapping keeps the old file's pages,
//! whatever is renamed over its name. Only a program truncating the file in place, which no git
//! implementation does, could end the process with `SIGBUS`; git maps its index the same way.

use std::fs::File;
use std::io::Read;
use std::ops::Deref;

/// Below this size a file is read: a mapping costs more system calls than the copy saves.
const MAP_FROM: u64 = 256 * 1024;

/// A file's contents.
#[derive(Debug)]
pub(crate) enum FileBytes {
    /// Read into memory.
    Read(Vec<u8>),
    /// Mapped, read-only and private.
    Mapped(memmap2::Mmap),
}

impl FileBytes {
    /// The contents of `file` (open for reading, at its start), `size` bytes as its metadata
    /// said: a regular file that large is mapped, anything else is read to its end.
    pub(crate) fn of(file: &mut File, size: u64, regular: bool) -> std::io::Result<FileBytes> {
        if regular && size >= MAP_FROM && usize::try_from(size).is_ok() {
            // SAFETY: the mapping is read-only and private; what it shows could change only
            // if the file were written in place, which git never does to the files read here
            // (see the module comment). Every read of the bytes checks bounds against the
            // length the mapping has, which cannot change.
            let mapped = unsafe { memmap2::MmapOptions::new().map(&*file) };
            // A file system that cannot map files is read instead.
            if let Ok(m) = mapped
                && m.len() as u64 == size
            {
                return Ok(FileBytes::Mapped(m));
            }
        }
        let mut buf = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.read_to_end(&mut buf)?;
        Ok(FileBytes::Read(buf))
    }
}

/// How much of a mapping a pass reads before handing its pages back.
pub(crate) const WINDOW: usize = 1 << 20;

/// The most the kernel maps at once when a read of a mapping faults: the page cache's folio
/// holding the page read, which for a file written or read in one go is up to 2 MB (one
/// page-table block), else the 64 KB around the page. Handing back only the pages a range lies
/// on would leave the rest of each block resident.
const FAULT_AROUND: usize = 2 * 1024 * 1024;

impl FileBytes {
    /// Hand back the pages of `range` this process has faulted in, with the rest of the
    /// fault-around blocks it lies in (a mapping only; bytes read into memory stay): the
    /// process's resident set shrinks by them, and a later read finds the same bytes again in
    /// the page cache. Best effort: a refusal leaves them resident.
    pub(crate) fn release(&self, range: std::ops::Range<usize>) {
        let FileBytes::Mapped(m) = self else {
            return;
        };
        let end = range.end.min(m.len());
        if range.start >= end {
            return;
        }
        // The blocks are aligned in the address space, not in the file.
        let base = m.as_ptr() as usize;
        let start = ((base + range.start) & !(FAULT_AROUND - 1)).max(base) - base;
        let end = ((base + end).next_multiple_of(FAULT_AROUND) - base).min(m.len());
        // SAFETY: the mapping is read-only and private and this process never writes to it,
        // so dropping its pages changes no byte anyone borrows: the next read maps the file's
        // pages again, which hold the same bytes (the file is never written in place; see the
        // module comment). The range lies within the mapping (checked above).
        let _ = unsafe {
            m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
        };
    }

    /// Hand back every page of the mapping (see [`FileBytes::release`]).
    pub(crate) fn release_all(&self) {
        self.release(0..self.len());
    }
}

impl From<Vec<u8>> for FileBytes {
    fn from(bytes: Vec<u8>) -> Self {
        FileBytes::Read(bytes)
    }
}

impl Deref for FileBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Read(v) => v,
            FileBytes::Mapped(m) => m,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn bytes_of(content: &[u8]) -> FileBytes {
        let mut tmp = tempfile::NamedTempFile::new().unwrap();
        tmp.write_all(content).unwrap();
        let mut file = File::open(tmp.path()).unwrap();
        let size = file.metadata().unwrap().len();
        FileBytes::of(&mut file, size, true).unwrap()
    }

    #[test]
    fn a_small_file_is_read_and_a_large_one_mapped_with_the_same_bytes() {
        let small = bytes_of(b"DIRC small");
        assert!(matches!(small, FileBytes::Read(_)));
        assert_eq!(&*small, b"DIRC small");
        let content: Vec<u8> = (0..MAP_FROM as usize * 2)
            .map(|i| (i % 251) as u8)
            .collect();
        let large = bytes_of(&content);
        assert!(matches!(large, FileBytes::Mapped(_)));
        assert_eq!(&*large, &content[..]);
        assert!(matches!(bytes_of(b""), FileBytes::Read(v) if v.is_empty()));
    }

    /// The pages of this process's mappings of `path` that are resident, in KiB.
    fn resident_kib(path: &std::path::Path) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut mine = false;
        let mut kib = 0;
        for line in smaps.lines() {
            if line.contains('-') && line.split_whitespace().count() >= 5 {
                mine = line.ends_with(&*path.to_string_lossy());
            } else if mine && let Some(v) = line.strip_prefix("Rss:") {
                kib += v
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap();
            }
        }
        kib
    }

    #[test]
    fn released_pages_leave_the_process_and_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        let content: Vec<u8> = (0..4 * MAP_FROM as usize)
            .map(|i| (i % 253) as u8)
            .collect();
        std::fs::write(&path, &content).unwrap();
        let mut file = File::open(&path).unwrap();
        let mapped = FileBytes::of(&mut file, content.len() as u64, true).unwrap();
        // Not populated: nothing is resident until read.
        let untouched = resident_kib(&path);
        assert!(untouched < 256, "{untouched} KiB resident before any read");
        assert_eq!(&*mapped, &content[..]);
        assert!(resident_kib(&path) >= 1000);
        mapped.release(0..content.len() / 2);
        let half = resident_kib(&path);
        assert!(half <= 520, "{half} KiB resident after releasing half");
        mapped.release_all();
        assert!(resident_kib(&path) <= 8);
        assert_eq!(&*mapped, &content[..]);
        // Ranges past the end are cut; bytes read into memory have nothing to release.
        mapped.release(content.len() - 10..content.len() + 4096);
        FileBytes::from(vec![1, 2, 3]).release_all();
    }

    #[test]
    fn releasing_a_few_bytes_hands_back_the_whole_block_a_read_faulted_in() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        let content: Vec<u8> = (0..5 * FAULT_AROUND).map(|i| (i % 241) as u8).collect();
        // Written in one go and read back: in the page cache, in blocks as large as it keeps.
        std::fs::write(&path, &content).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), content);
        let mut file = File::open(&path).unwrap();
        let mapped = FileBytes::of(&mut file, content.len() as u64, true).unwrap();
        // One byte read in each of a few blocks, then released byte by byte.
        for at in [
            FAULT_AROUND + 100,
            3 * FAULT_AROUND + 5,
            5 * FAULT_AROUND - 1,
        ] {
            assert_eq!(mapped[at], content[at]);
            mapped.release(at..at + 1);
        }
        let left = resident_kib(&path);
        assert!(
            left <= 8,
            "{left} KiB resident after releasing every byte read"
        );
    }

    #[test]
    fn a_mapping_keeps_the_old_contents_when_a_new_file_is_renamed_over_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        let content = vec![7u8; MAP_FROM as usize];
        std::fs::write(&path, &content).unwrap();
        let mut file = File::open(&path).unwrap();
        let mapped = FileBytes::of(&mut file, content.len() as u64, true).unwrap();
        let next = dir.path().join("index.lock");
        std::fs::write(&next, vec![9u8; MAP_FROM as usize]).unwrap();
        std::fs::rename(&next, &path).unwrap();
        assert!(mapped.iter().all(|&b| b == 7));
    }
}

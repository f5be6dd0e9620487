//! A file's bytes held for reading: mapped from the page cache when the file is large enough
//! for that to pay, read into memory otherwise.
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
            let mapped = unsafe { memmap2::MmapOptions::new().populate().map(&*file) };
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

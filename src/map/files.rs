//! The project's files as the map numbers them: paths read from where they already are (the
//! corpus's one buffer), and per file only the number of its facts. At 100,000 files a record
//! per file holding its path (24 bytes) would be 2.4 MB written, faulted in and freed by every
//! map; four bytes a file are 0.4 MB.

use crate::workspace::Corpus;

/// Paths by number: the corpus, or a list (tests, callers with their own).
pub trait PathList: Sync {
    /// How many paths.
    fn count(&self) -> usize;
    /// Path `i` (empty past the end).
    fn path(&self, i: usize) -> &str;
}

impl PathList for Corpus {
    fn count(&self) -> usize {
        self.len()
    }

    fn path(&self, i: usize) -> &str {
        self.get(i)
    }
}

impl<S: AsRef<str> + Sync> PathList for [S] {
    fn count(&self) -> usize {
        self.len()
    }

    fn path(&self, i: usize) -> &str {
        self.get(i).map_or("", AsRef::as_ref)
    }
}

impl<S: AsRef<str> + Sync> PathList for Vec<S> {
    fn count(&self) -> usize {
        self.len()
    }

    fn path(&self, i: usize) -> &str {
        self.as_slice().path(i)
    }
}

/// No facts (not parsed yet, or no text) in [`MapFiles`]' per-file numbers.
const NONE: u32 = u32::MAX;

/// Every project file, in the file list's order, with the index of its facts in the store.
pub struct MapFiles<'a> {
    paths: &'a dyn PathList,
    blobs: Vec<u32>,
}

impl<'a> MapFiles<'a> {
    /// The files of `paths`, none with facts yet.
    pub fn new(paths: &'a dyn PathList) -> Self {
        MapFiles {
            paths,
            blobs: vec![NONE; paths.count()],
        }
    }

    /// How many files.
    pub fn len(&self) -> usize {
        self.blobs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.blobs.is_empty()
    }

    /// The paths themselves.
    pub fn paths(&self) -> &'a dyn PathList {
        self.paths
    }

    /// The project-relative path of file `i`.
    pub fn path(&self, i: usize) -> &'a str {
        self.paths.path(i)
    }

    /// The index of file `i`'s facts in the store (`None`: not parsed yet, or no text).
    pub fn blob(&self, i: usize) -> Option<u32> {
        self.blobs.get(i).copied().filter(|&b| b != NONE)
    }

    /// Every file's facts index, in order.
    pub fn blobs(&self) -> impl ExactSizeIterator<Item = Option<u32>> + '_ {
        self.blobs.iter().map(|&b| (b != NONE).then_some(b))
    }

    /// Record file `i`'s facts (a store of four billion blobs records no more).
    pub fn set_blob(&mut self, i: usize, blob: u32) {
        if let Some(slot) = self.blobs.get_mut(i)
            && blob != NONE
        {
            *slot = blob;
        }
    }
}

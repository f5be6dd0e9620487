//! The files of a fresh checkout, written on several threads. Work is handed out by
//! directory (a run of entries with the same parent, at most [`JOB`] long), so two threads
//! seldom create files in one directory, which the kernel serialises. Each thread has its own
//! repository handle (libgit2 handles are not shared between threads) and writes each blob as
//! a new file (`O_EXCL`: never through anything already there) with git's permissions; the
//! files libgit2 must write (see [`Conversion`]) it checks out with libgit2 into a scratch
//! directory of its own beside the worktree and moves into place. Links are made afterwards,
//! on one thread, once no file is left to write through a directory a link could replace.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use git2::Repository;

use super::conversion::Conversion;
use super::fresh_index::Stamp;
use super::listing::{Entry, MODE_EXEC, MODE_GITLINK, MODE_LINK};
use crate::history::error::{Context, HistoryError};
use crate::history::ops::convert::unstamped_entry;

/// The most entries one job holds.
const JOB: usize = 128;

/// Where the files go and how.
pub(crate) struct Target<'a> {
    /// The worktree's directory.
    pub root: &'a Path,
    /// A directory beside it (same file system) for libgit2's converted files; made by the
    /// threads that need it, removed by the caller.
    pub scratch: &'a Path,
    /// Which files libgit2 writes.
    pub conversion: Conversion,
}

fn io(context: String) -> impl FnOnce(std::io::Error) -> HistoryError {
    move |source| HistoryError::Io { context, source }
}

/// The jobs: runs of the entries `pick` names (ascending) with the same parent directory.
fn jobs<'p>(entries: &[Entry], pick: &'p [usize]) -> Vec<&'p [usize]> {
    let mut jobs: Vec<&'p [usize]> = Vec::new();
    let mut start = 0;
    for at in 1..=pick.len() {
        let split = at == pick.len()
            || at - start == JOB
            || entries[pick[at]].parent() != entries[pick[start]].parent();
        if split {
            jobs.push(&pick[start..at]);
            start = at;
        }
    }
    jobs
}

/// How many threads write: the processors, twice over (a thread waits on the disk for the
/// objects it reads), within bounds.
fn threads(jobs: usize) -> usize {
    let cpus = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    (cpus * 2).clamp(2, 8).min(jobs.max(1))
}

/// Write the entries of `entries` that `pick` names (ascending), but links (see
/// [`write_links`]); their stamps go to `stamps`, by index.
pub(crate) fn write_files(
    target: &Target<'_>,
    entries: &[Entry],
    pick: &[usize],
    stamps: &mut [Option<Stamp>],
) -> Result<(), HistoryError> {
    let jobs = jobs(entries, pick);
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Vec<Result<Vec<(usize, Stamp)>, HistoryError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads(jobs.len()))
            .map(|k| {
                let (jobs, next, failed) = (&jobs, &next, &failed);
                s.spawn(move || {
                    let out = Worker::new(target, k).and_then(|mut w| {
                        while !failed.load(Ordering::Relaxed) {
                            let Some(job) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) else {
                                break;
                            };
                            for &i in *job {
                                w.write(i, &entries[i])?;
                            }
                        }
                        w.finish(entries)
                    });
                    if out.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(HistoryError::Io {
                        context: "a thread writing the worktree's files failed".into(),
                        source: std::io::Error::other("the thread panicked"),
                    })
                })
            })
            .collect()
    });
    for result in results {
        for (i, stamp) in result? {
            stamps[i] = Some(stamp);
        }
    }
    Ok(())
}

/// One writing thread.
struct Worker<'a> {
    target: &'a Target<'a>,
    repo: Repository,
    /// This thread's scratch directory for libgit2's files.
    scratch: PathBuf,
    /// Directories this thread knows exist.
    made: HashSet<Vec<u8>>,
    /// Entries left to libgit2, by index.
    converted: Vec<usize>,
    stamps: Vec<(usize, Stamp)>,
}

impl<'a> Worker<'a> {
    fn new(target: &'a Target<'a>, k: usize) -> Result<Self, HistoryError> {
        let repo = Repository::open(target.root)
            .ctx(|| format!("cannot open the worktree {}", target.root.display()))?;
        Ok(Worker {
            target,
            repo,
            scratch: target.scratch.join(k.to_string()),
            made: HashSet::new(),
            converted: Vec::new(),
            stamps: Vec::new(),
        })
    }

    fn path(&self, rel: &[u8]) -> PathBuf {
        self.target.root.join(OsStr::from_bytes(rel))
    }

    /// The directory `rel` (and those above it), made when missing; one already there must
    /// be a directory, not a link.
    fn ensure_dir(&mut self, rel: &[u8]) -> Result<(), HistoryError> {
        if rel.is_empty() || self.made.contains(rel) {
            return Ok(());
        }
        let path = self.path(rel);
        let made = std::fs::DirBuilder::new().mode(0o777).create(&path);
        match made {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let parent = rel
                    .iter()
                    .rposition(|&b| b == b'/')
                    .map_or(&rel[..0], |at| &rel[..at]);
                self.ensure_dir(parent)?;
                std::fs::DirBuilder::new()
                    .mode(0o777)
                    .create(&path)
                    .or_else(|e| exists_as_dir(&path, e))
                    .map_err(io(format!("cannot create {}", path.display())))?;
            }
            Err(e) => {
                exists_as_dir(&path, e).map_err(io(format!("cannot create {}", path.display())))?;
            }
        }
        self.made.insert(rel.to_vec());
        Ok(())
    }

    fn write(&mut self, i: usize, entry: &Entry) -> Result<(), HistoryError> {
        self.ensure_dir(entry.parent())?;
        let path = self.path(&entry.path);
        if entry.mode == MODE_GITLINK {
            // A submodule is not checked out: its place is an empty directory, as git leaves it.
            self.ensure_dir(&entry.path)?;
            let meta = std::fs::symlink_metadata(&path)
                .map_err(io(format!("cannot read {}", path.display())))?;
            self.stamps.push((i, Stamp::of(&meta)));
            return Ok(());
        }
        if self.target.conversion.by_libgit2(&self.repo, entry) {
            self.converted.push(i);
            return Ok(());
        }
        if entry.mode == MODE_LINK {
            // Made once every file is written; its directory is made here.
            return Ok(());
        }
        let blob = self
            .repo
            .find_blob(entry.id)
            .ctx(|| format!("cannot read the blob of {}", path.display()))?;
        let what = || format!("cannot write {}", path.display());
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if entry.mode == MODE_EXEC {
                0o777
            } else {
                0o666
            })
            .open(&path)
            .map_err(io(what()))?;
        file.write_all(blob.content()).map_err(io(what()))?;
        let meta = file.metadata().map_err(io(what()))?;
        self.stamps.push((i, Stamp::of(&meta)));
        Ok(())
    }

    /// The entries left to libgit2: checked out into this thread's scratch directory and
    /// moved into place. Returns every stamp this thread took.
    fn finish(mut self, entries: &[Entry]) -> Result<Vec<(usize, Stamp)>, HistoryError> {
        if self.converted.is_empty() {
            return Ok(self.stamps);
        }
        let what = || "cannot run git's checkout conversion".to_string();
        let mut index = git2::Index::new().ctx(what)?;
        for &i in &self.converted {
            index
                .add(&unstamped_entry(
                    entries[i].path.clone(),
                    entries[i].id,
                    entries[i].mode,
                ))
                .ctx(|| {
                    format!(
                        "cannot run git's checkout conversion of {}",
                        entries[i].rel().display()
                    )
                })?;
        }
        std::fs::create_dir_all(&self.scratch)
            .map_err(io(format!("cannot create {}", self.scratch.display())))?;
        let mut opts = git2::build::CheckoutBuilder::new();
        opts.target_dir(&self.scratch)
            .force()
            .update_index(false)
            .refresh(false);
        self.repo
            .checkout_index(Some(&mut index), Some(&mut opts))
            .ctx(what)?;
        for &i in &self.converted {
            let entry = &entries[i];
            let (from, to) = (
                self.scratch.join(OsStr::from_bytes(&entry.path)),
                self.path(&entry.path),
            );
            std::fs::rename(&from, &to).map_err(io(format!("cannot write {}", to.display())))?;
            let meta = std::fs::symlink_metadata(&to)
                .map_err(io(format!("cannot read {}", to.display())))?;
            self.stamps.push((i, Stamp::of(&meta)));
        }
        Ok(self.stamps)
    }
}

/// `Ok` when `path`, which could not be made (`e`), is a directory already.
fn exists_as_dir(path: &Path, e: std::io::Error) -> std::io::Result<()> {
    if e.kind() == std::io::ErrorKind::AlreadyExists
        && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
    {
        Ok(())
    } else {
        Err(e)
    }
}

/// Make the links of `entries` that pai writes itself (every one, unless libgit2 wrote them
/// as files); their stamps, by index. Run after [`write_files`], which made their
/// directories: every directory and file is in place, and no entry lies below another
/// (`listing`), so no link can lead a write out of the worktree.
pub(crate) fn write_links(
    target: &Target<'_>,
    repo: &Repository,
    entries: &[Entry],
    stamps: &mut [Option<Stamp>],
) -> Result<(), HistoryError> {
    for (i, entry) in entries.iter().enumerate() {
        if entry.mode != MODE_LINK || stamps[i].is_some() {
            continue;
        }
        let path = target.root.join(OsStr::from_bytes(&entry.path));
        let blob = repo
            .find_blob(entry.id)
            .ctx(|| format!("cannot read the link {}", path.display()))?;
        std::os::unix::fs::symlink(OsStr::from_bytes(blob.content()), &path)
            .map_err(io(format!("cannot create the link {}", path.display())))?;
        let meta = std::fs::symlink_metadata(&path)
            .map_err(io(format!("cannot read {}", path.display())))?;
        stamps[i] = Some(Stamp::of(&meta));
    }
    Ok(())
}

//! Worktree sessions at the command line: `-w` creates a session's worktree and moves pai
//! into it (everything after that — the gate, the sandbox, history — works on the worktree
//! as it would on a checkout); a session id given to `undo`, `redo`, `discard` or `resume`
//! moves pai into that session's worktree; the end-of-session lines say where the work is
//! and how to review and merge it.

use std::path::{Path, PathBuf};

use crate::cli::assemble::history_error;
use crate::config::Settings;
use crate::error::Error;
use crate::history::{self, CreateOptions, Held, Linked, SessionSummary, sessions};
use crate::ui::output::Output;

/// How the user asked for the session's place: `-w [NAME]`, `--from`, `--in-place`.
#[derive(Debug, Clone, Default)]
pub struct Choice {
    /// `-w` / `--worktree[=NAME]`: `Some("")` without a name.
    pub worktree: Option<String>,
    /// `--from REF`.
    pub from: Option<String>,
    /// `--in-place`: not in a worktree even when `worktree = true`.
    pub in_place: bool,
    /// `--carry`: bring the uncommitted changes of the user's checkout along.
    pub carry: bool,
}

/// pai moved into a session's worktree (the process's current directory), holding the
/// session; [`finish`] and [`remove_discarded`] go back to where pai was started.
pub struct Entered {
    /// The session, held for this process.
    pub held: Held,
    /// The directory pai was started in.
    origin: PathBuf,
    /// The user's project root.
    root: PathBuf,
}

fn cwd() -> Result<PathBuf, Error> {
    std::env::current_dir()
        .map_err(|e| Error::failed(format!("cannot determine the current directory: {e}")))
}

/// Create a worktree session when asked to (`-w`, or `worktree = true` without
/// `--in-place`) and move pai into it; `None` when the session runs in place.
pub fn begin(choice: &Choice, settings: &Settings, out: &Output) -> Result<Option<Entered>, Error> {
    let wanted = choice.worktree.is_some() || (settings.worktree && !choice.in_place);
    if !wanted {
        if choice.from.is_some() || choice.carry {
            return Err(
                Error::usage("--from and --carry only apply to a worktree session")
                    .with_hint("add -w: `pai -w --from <ref>`, `pai -w --carry`"),
            );
        }
        return Ok(None);
    }
    let origin = cwd()?;
    let root = history::project_root(&origin);
    // What crashed or abandoned sessions left is tidied first; a failure only leaves it.
    let _ = sessions::tidy(&root);
    let mut held = sessions::create(
        &root,
        &CreateOptions {
            now: chrono::Local::now(),
            from: choice.from.clone(),
            name: choice.worktree.clone(),
        },
    )
    .map_err(history_error)?;
    let include = settings
        .project_worktree_include
        .get(&root.display().to_string())
        .cloned()
        .unwrap_or_default();
    out.warnings(&sessions::copy_included(&held.linked, &include));
    let carried = if choice.carry {
        sessions::carry(&mut held).map_err(history_error)?
    } else {
        0
    };
    announce(&held.linked, &root, carried, out);
    enter(held, origin, root).map(Some)
}

/// Say where the session works, and that the user's uncommitted changes are not there.
fn announce(linked: &Linked, root: &Path, carried: usize, out: &Output) {
    out.note(&format!(
        "Session {} works in its own worktree {} on pai/{}, from {}; your checkout is not touched",
        linked.id,
        linked.path.display(),
        linked.id,
        linked.base_name()
    ));
    if carried > 0 {
        out.note(&format!(
            "your uncommitted changes ({}) are carried into the worktree, uncommitted there; they stay in your checkout too",
            paths(carried)
        ));
    } else if let Ok(dirty) = sessions::uncommitted(root)
        && !dirty.is_empty()
    {
        out.note(&format!(
            "your uncommitted changes ({}) stay in your checkout and are not in the worktree: commit them first, or pass --carry, if the session needs them",
            paths(dirty.len())
        ));
    }
}

fn paths(n: usize) -> String {
    if n == 1 {
        "1 path".into()
    } else {
        format!("{n} paths")
    }
}

/// Move into `held`'s worktree (the same subdirectory as the user was in, when it exists).
fn enter(held: Held, origin: PathBuf, root: PathBuf) -> Result<Entered, Error> {
    let sub = origin
        .strip_prefix(&root)
        .ok()
        .map(|s| held.linked.path.join(s))
        .filter(|p| p.is_dir())
        .unwrap_or_else(|| held.linked.path.clone());
    std::env::set_current_dir(&sub).map_err(|e| {
        Error::failed(format!(
            "cannot enter the worktree {}: {e}",
            held.linked.path.display()
        ))
    })?;
    Ok(Entered { held, origin, root })
}

/// For a command given a session id or name: move into that session's worktree when it is a
/// worktree session (`None` when it is not, or no session was named: the command then acts
/// where it was started, a worktree included).
pub fn enter_named(session: Option<&str>) -> Result<Option<Entered>, Error> {
    let Some(key) = session else {
        return Ok(None);
    };
    let origin = cwd()?;
    let root = history::project_root(&origin);
    match sessions::hold(&root, key).map_err(history_error)? {
        Some(held) => enter(held, origin, root).map(Some),
        None => Ok(None),
    }
}

/// The worktree session whose worktree pai was started in, if any (`pai discard` there
/// discards that session and removes its worktree).
pub fn here() -> Option<String> {
    let root = history::project_root(&cwd().ok()?);
    let canonical = std::fs::canonicalize(&root).ok()?;
    sessions::list(&root)
        .ok()?
        .into_iter()
        .find(|l| std::fs::canonicalize(&l.path).is_ok_and(|p| p == canonical))
        .map(|l| l.id)
}

/// For `undo`/`redo SESSION` of a session that is not a worktree session: it must be the one
/// HEAD is on here.
pub fn check_in_place(session: Option<&str>) -> Result<(), Error> {
    let Some(id) = session else {
        return Ok(());
    };
    let root = history::project_root(&cwd()?);
    if history::head_session(&root).as_deref() == Some(id) {
        return Ok(());
    }
    Err(Error::usage(format!(
        "session {id} is neither a worktree session nor the one HEAD is on here"
    ))
    .with_hint("`pai sessions` lists the worktree sessions; `pai log` lists every session"))
}

impl Entered {
    /// The session's record.
    pub fn linked(&self) -> &Linked {
        &self.held.linked
    }

    /// Go back to where pai was started; the session stays held.
    fn back(&self) {
        // Best effort: the worktree may be gone already, the user's directory never is.
        let _ = std::env::set_current_dir(&self.origin);
    }
}

/// At a session's end: back in the user's directory, a session that carried out nothing is
/// removed whole; otherwise the lines that say where its work is and how to review and merge
/// it.
pub fn finish(entered: Entered, summary: Option<&SessionSummary>, out: &Output) {
    entered.back();
    let linked = entered.held.linked.clone();
    match sessions::finish(entered.held, &entered.root) {
        Ok(true) => out.note(&format!(
            "Session {} carried out nothing: its worktree and branch are removed; your checkout was not touched.",
            linked.id
        )),
        Ok(false) => out.note(&render_end(&linked, &entered.root, summary)),
        Err(e) => out.warning(&format!(
            "cannot tidy the worktree of session {}: {e}",
            linked.id
        )),
    }
}

/// Branch, worktree, review and merge commands, and whether it merges cleanly.
fn render_end(linked: &Linked, root: &Path, summary: Option<&SessionSummary>) -> String {
    let view = sessions::preview(root)
        .ok()
        .and_then(|v| v.into_iter().find(|v| v.id == linked.id));
    let plans = summary
        .map(|s| s.plans)
        .or(view.as_ref().map(|v| v.plans))
        .unwrap_or(0);
    let mut text = format!(
        "Session {}: {} on pai/{} (from {}), in its own worktree\n  worktree  {}\n",
        linked.id,
        if plans == 1 {
            "1 plan".to_string()
        } else {
            format!("{plans} plans")
        },
        linked.id,
        linked.base_name(),
        linked.path.display()
    );
    if let Some(v) = &view {
        text.push_str(&format!(
            "  review    {}\n  merge     {}\n",
            v.review, v.merge
        ));
        if v.branch.is_some() {
            if v.conflicts_with_base.is_empty() {
                text.push_str(&format!("  it merges cleanly into {}\n", v.base));
            } else {
                text.push_str(&format!(
                    "  it conflicts with {} in: {}\n",
                    v.base,
                    v.conflicts_with_base.join(", ")
                ));
            }
        }
    }
    text.push_str(&format!(
        "  discard   pai discard {}\nYour checkout is as you left it; `pai log {id}`, `pai undo {id}`, `pai resume {id}` work on this session from anywhere in the repository.\n",
        crate::shell::quote(&linked.id),
        id = crate::shell::quote(&linked.id)
    ));
    text
}

/// Before `pai discard SESSION` of a worktree session: refused, changing nothing, while its
/// worktree holds changes in no commit.
pub fn check_discardable(entered: &Entered) -> Result<(), Error> {
    let linked = &entered.held.linked;
    let dirty = sessions::lost_if_removed(linked).map_err(history_error)?;
    if !dirty.is_empty() {
        return Err(Error::failed(format!(
            "the worktree {} of session {} holds changes that are in no commit: {}",
            linked.path.display(),
            linked.id,
            dirty.join(", ")
        ))
        .with_hint("commit them there (or move them elsewhere), then discard again"));
    }
    Ok(())
}

/// After a worktree session's plans are discarded: back in the user's directory, the
/// worktree is removed (its branch stays under `refs/pai/discarded/`).
pub fn remove_discarded(entered: Entered, out: &Output) -> Result<(), Error> {
    let linked = entered.held.linked.clone();
    entered.back();
    sessions::remove(entered.held, &entered.root).map_err(history_error)?;
    out.line(&format!(
        "The worktree {} is removed.",
        linked.path.display()
    ));
    Ok(())
}

/// `pai sessions`: the project's worktree sessions with their merge preview.
pub fn list(out: &Output, json: bool) -> Result<(), Error> {
    let root = history::project_root(&cwd()?);
    let _ = sessions::tidy(&root);
    let views = sessions::preview(&root).map_err(history_error)?;
    if json {
        let text = serde_json::to_string_pretty(&views)
            .map_err(|e| Error::failed(format!("cannot print the sessions as JSON: {e}")))?;
        out.json_line(&text);
    } else {
        out.text(&crate::ui::log_text::sessions_text(&views));
    }
    Ok(())
}

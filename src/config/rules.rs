//! Saving a RUN allow-list rule answered at the prompt into the user's `config.toml`: under
//! `[run] allow` (every project) or `[projects."<root>".run] allow` (one project). The file is
//! edited in place, so the user's comments and layout survive, and replaced atomically.

use std::io::Write;
use std::path::{Path, PathBuf};

use toml_edit::{Array, DocumentMut, Item, Table, value};

/// Where a rule is saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleTarget {
    /// `[run] allow`: every project.
    User,
    /// `[projects."<root>".run] allow`: the project whose root is this absolute path.
    Project(String),
}

/// Why a rule could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    /// The file could not be read or written.
    #[error("cannot update {}: {source}", path.display())]
    Io {
        /// The settings file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is not valid TOML, or `run.allow` is not a list of strings.
    #[error("cannot add the rule to {}: {reason}", path.display())]
    Invalid {
        /// The settings file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

/// Add `rule` to the allow-list of `target` in the settings file at `path` (created, with its
/// directory as mode 0700, when missing). Adding a rule already there changes nothing.
pub fn save_run_rule(path: &Path, target: &RuleTarget, rule: &str) -> Result<(), RuleError> {
    let io = |source| RuleError::Io {
        path: path.to_path_buf(),
        source,
    };
    let invalid = |reason: String| RuleError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    let text = read_or_empty(path).map_err(io)?;
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        invalid(format!("it is not valid TOML ({})", e.message()))
    })?;
    let run = match target {
        RuleTarget::User => table_in(doc.as_table_mut(), "run", false).map_err(invalid)?,
        RuleTarget::Project(root) => {
            let projects = table_in(doc.as_table_mut(), "projects", true).map_err(invalid)?;
            let project = table_in(projects, root, false).map_err(invalid)?;
            table_in(project, "run", false).map_err(invalid)?
        }
    };
    let allow = run
        .entry("allow")
        .or_insert_with(|| value(Array::new()))
        .as_array_mut()
        .ok_or_else(|| invalid("`allow` is not a list".into()))?;
    if allow.iter().any(|v| v.as_str() == Some(rule)) {
        return Ok(());
    }
    allow.push(rule);
    write_atomically(path, doc.to_string().as_bytes()).map_err(io)
}

/// The table `key` inside `parent`, created when missing (implicit: no header of its own
/// unless it gets keys).
pub(crate) fn table_in<'a>(
    parent: &'a mut Table,
    key: &str,
    implicit: bool,
) -> Result<&'a mut Table, String> {
    let item = parent.entry(key).or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(implicit);
        Item::Table(t)
    });
    item.as_table_mut()
        .ok_or_else(|| format!("`{key}` is not a table"))
}

/// The settings file's text; a missing file is empty (it is created on the first write).
pub(crate) fn read_or_empty(path: &Path) -> std::io::Result<String> {
    match std::fs::read_to_string(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        other => other,
    }
}

pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("the settings file has no directory"))?;
    if !dir.exists() {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
    }
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    if let Ok(meta) = std::fs::metadata(path) {
        tmp.as_file().set_permissions(meta.permissions())?;
    }
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FileSettings;

    #[test]
    fn rules_are_added_without_losing_what_the_user_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pai-code/config.toml");
        save_run_rule(&path, &RuleTarget::User, "cargo test").unwrap();
        let project = RuleTarget::Project("/home/me/app".into());
        save_run_rule(&path, &project, "pytest tests").unwrap();
        save_run_rule(&path, &project, "pytest tests").unwrap();
        let loaded = FileSettings::load(&path).unwrap();
        assert_eq!(loaded.run.allow, vec!["cargo test"]);
        assert_eq!(
            loaded.projects["/home/me/app"].run.allow,
            vec!["pytest tests"]
        );

        std::fs::write(
            &path,
            "# my settings\nmodel = \"m\"  # keep\n\n[run]\nallow = [\"make\"]\n",
        )
        .unwrap();
        save_run_rule(&path, &RuleTarget::User, "cargo test").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("# my settings\nmodel = \"m\"  # keep\n"),
            "{text}"
        );
        let loaded = FileSettings::load(&path).unwrap();
        assert_eq!(loaded.run.allow, vec!["make", "cargo test"]);
    }

    #[test]
    fn a_broken_file_is_reported_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "run = 3\n").unwrap();
        let err = save_run_rule(&path, &RuleTarget::User, "make").unwrap_err();
        assert!(err.to_string().contains("`run` is not a table"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "run = 3\n");
    }
}

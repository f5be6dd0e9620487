//! Project-relative paths as history handles them: validated and normalised once, so that a
//! path from the workspace can be used as a git tree path and an index path unchanged.

use crate::history::error::HistoryError;

/// Normalise `rel` (drop `.` and empty segments and trailing slashes) or refuse it when it is
/// absolute, escapes with `..`, names a `.git` directory or contains a NUL byte.
pub(crate) fn normalize(rel: &str) -> Result<String, HistoryError> {
    let invalid = |why| HistoryError::InvalidPath {
        path: rel.to_string(),
        why,
    };
    if rel.starts_with('/') {
        return Err(invalid("absolute paths are not project paths"));
    }
    if rel.contains('\0') {
        return Err(invalid("contains a NUL byte"));
    }
    let mut parts = Vec::new();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(invalid("`..` leaves the project")),
            p if p.eq_ignore_ascii_case(".git") => {
                return Err(invalid("the .git directory is never recorded"));
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err(invalid("names the project root, not a file"));
    }
    Ok(parts.join("/"))
}

/// `dir/name`, or `name` at the root.
pub(crate) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_harmless_spellings() {
        assert_eq!(normalize("./a//b/").unwrap(), "a/b");
        assert_eq!(normalize("src/./main.rs").unwrap(), "src/main.rs");
    }

    #[test]
    fn refuses_escapes_and_git_dirs() {
        for bad in [
            "/etc/passwd",
            "../x",
            "a/../../x",
            ".git/config",
            "a/.GIT/x",
            "",
            ".",
            "a\0b",
        ] {
            assert!(normalize(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn join_handles_the_root() {
        assert_eq!(join("", "a"), "a");
        assert_eq!(join("d", "a"), "d/a");
    }
}

//! Where pai keeps its configuration: `$XDG_CONFIG_HOME/pai-code/`, else `~/.config/pai-code/`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::Env;
use crate::error::Error;

/// The configuration directory, located but not necessarily existing yet.
#[derive(Debug, Clone)]
pub struct ConfigDir {
    path: PathBuf,
}

impl ConfigDir {
    /// Locate the directory from `XDG_CONFIG_HOME` (when absolute, as the XDG spec requires)
    /// or `HOME`. Fails with a hint when neither is usable.
    ///
    /// This is `dirs::config_dir()`'s rule, read from the [`Env`] snapshot rather than the
    /// process: settings resolve as a function of flags, environment and files, so tests and
    /// `pai config` resolve a fabricated environment exactly as the real one (`dirs` reads the
    /// process environment, and falls back to the password database where pai asks for `HOME`).
    /// The home directory itself, where no snapshot is involved, comes from `dirs`.
    pub fn locate(env: &Env) -> Result<Self, Error> {
        let base = match env.get("XDG_CONFIG_HOME").map(PathBuf::from) {
            Some(xdg) if xdg.is_absolute() => xdg,
            _ => match env.get("HOME").map(PathBuf::from) {
                Some(home) if home.is_absolute() => home.join(".config"),
                _ => {
                    return Err(Error::config("cannot locate the configuration directory: HOME is not set")
                        .with_hint("set HOME (or XDG_CONFIG_HOME) to an absolute path, or pass the key in GEMINI_API_KEY / OPENAI_API_KEY / ANTHROPIC_API_KEY"));
                }
            },
        };
        Ok(Self {
            path: base.join("pai-code"),
        })
    }

    /// The directory itself.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The credentials file inside it.
    pub fn credentials_file(&self) -> PathBuf {
        self.path.join("credentials.json")
    }

    /// The settings file inside it.
    pub fn settings_file(&self) -> PathBuf {
        self.path.join("config.toml")
    }

    /// Check that the directory is usable: not a file, and private (0700). Returns notices for
    /// anything fixed on the way. A missing directory is fine (nothing stored yet).
    pub fn check_existing(&self) -> Result<Vec<String>, Error> {
        let mut notices = Vec::new();
        let meta = match fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(notices),
            Err(e) => {
                return Err(Error::config(format!(
                    "cannot access {}: {e}",
                    self.path.display()
                )));
            }
        };
        if !meta.is_dir() {
            return Err(Error::config(format!(
                "the configuration directory {} is a file, not a directory",
                self.path.display()
            ))
            .with_hint("move or remove that file, then try again (pai will not overwrite it)"));
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            fs::set_permissions(&self.path, fs::Permissions::from_mode(0o700)).map_err(|e| {
                Error::config(format!(
                    "cannot restrict permissions of {}: {e}",
                    self.path.display()
                ))
            })?;
            notices.push(format!(
                "tightened permissions of {} from {mode:04o} to 0700",
                self.path.display()
            ));
        }
        Ok(notices)
    }

    /// Read the settings file after checking the directory (a file where the directory should
    /// be is reported as such, not as an unreadable settings file). Returns notices too.
    pub fn load_settings(&self) -> Result<(super::FileSettings, Vec<String>), Error> {
        let notices = self.check_existing()?;
        Ok((super::FileSettings::load(&self.settings_file())?, notices))
    }

    /// Create the directory with mode 0700 if it does not exist yet, after the same checks as
    /// [`ConfigDir::check_existing`].
    pub fn ensure(&self) -> Result<Vec<String>, Error> {
        let notices = self.check_existing()?;
        if !self.path.exists() {
            let mut builder = fs::DirBuilder::new();
            builder.recursive(true);
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(&self.path).map_err(|e| {
                Error::config(format!("cannot create {}: {e}", self.path.display()))
            })?;
            // The umask may have removed bits we asked for; never added ones, but be exact.
            fs::set_permissions(&self.path, fs::Permissions::from_mode(0o700)).map_err(|e| {
                Error::config(format!(
                    "cannot set permissions of {}: {e}",
                    self.path.display()
                ))
            })?;
        }
        Ok(notices)
    }
}

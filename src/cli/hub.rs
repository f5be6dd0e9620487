//! The MCP hub of a session: the user's servers (config.toml) and the project's
//! (`.mcp.json`, read through the workspace gate: a symlinked file is refused), with the
//! trust decisions kept beside config.toml. Built for every session and for `pai mcp`.

use std::path::PathBuf;

use crate::config::Settings;
use crate::config::mcp_servers::PROJECT_FILE;
use crate::mcp::trust::TRUST_FILE;
use crate::mcp::{Hub, ProjectServers};
use crate::ui::output::Output;
use crate::workspace::Workspace;

/// Where trust decisions are kept: beside config.toml, in the user's configuration directory.
pub(crate) fn trust_file(settings: &Settings) -> Option<PathBuf> {
    settings
        .settings_file
        .as_deref()
        .and_then(|f| f.parent())
        .map(|d| d.join(TRUST_FILE))
}

/// The project's `.mcp.json`, read without following a symlink.
fn project_servers(workspace: &Workspace) -> ProjectServers {
    match workspace.read_bytes(PROJECT_FILE) {
        Ok(Some((bytes, _))) => ProjectServers::from_bytes(Some(&bytes)),
        Ok(None) => ProjectServers::default(),
        Err(e) => ProjectServers {
            problem: Some(format!("{PROJECT_FILE} was not read: {e}")),
            ..ProjectServers::default()
        },
    }
}

/// The hub of a session: the user's servers and the project's, nothing started yet.
pub fn session_hub(
    settings: &Settings,
    workspace: &Workspace,
    secrets: Vec<String>,
    out: &Output,
) -> Hub {
    Hub::new(
        settings.mcp_servers.clone(),
        project_servers(workspace),
        workspace.root(),
        trust_file(settings),
        secrets,
        &|text| out.warning(&text),
    )
}

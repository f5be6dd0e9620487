//! `pai mcp list|add|remove|trust`, and the session's MCP hub built from the settings and the
//! project's `.mcp.json` (read through the workspace gate: a symlinked file is refused).

use std::collections::BTreeMap;

use crate::config::Settings;
use crate::config::mcp_edit::{add_server, remove_server};
use crate::config::mcp_servers::PROJECT_FILE;
use crate::error::Error;
use crate::mcp::trust::TrustStore;
use crate::mcp::{Origin, ProjectServers, Status, UserServer};
use crate::ui::output::Output;

use crate::cli::assemble::{open_project, runtime, secrets};
use crate::cli::hub::{session_hub, trust_file};

/// `pai mcp list`: every server with its status and tools. Servers that may start are
/// started to list their tools; untrusted project servers are not.
pub fn list(settings: &Settings, out: &Output) -> Result<(), Error> {
    let project = open_project(settings)?;
    let mut hub = session_hub(settings, &project.workspace, secrets(settings), out);
    if hub.is_empty() {
        out.line(&format!(
            "No MCP servers configured. Add one with `pai mcp add <name> -- <command> [args...]` (or --url), or put them in {PROJECT_FILE}."
        ));
        return Ok(());
    }
    let rt = runtime()?;
    rt.block_on(async {
        let notices = std::sync::Mutex::new(Vec::new());
        hub.ensure_started(&|text| {
            if let Ok(mut n) = notices.lock() {
                n.push(text);
            }
        })
        .await;
        let mut text = String::new();
        for (spec, status, tools) in hub.overview() {
            let origin = match spec.origin {
                Origin::User => "config.toml",
                Origin::Project => PROJECT_FILE,
            };
            text.push_str(&format!(
                "{}  {}  ({origin}: {})\n",
                spec.name,
                status.word(),
                spec.describe()
            ));
            match status {
                Status::Failed(why) => text.push_str(&format!("    {why}\n")),
                Status::Untrusted => text.push_str("    run `pai mcp trust` to allow it\n"),
                _ => {}
            }
            for tool in tools {
                let first = tool.description.lines().next().unwrap_or_default();
                text.push_str(&format!("    {}  {first}\n", tool.name));
            }
        }
        for n in notices.lock().map(|n| n.clone()).unwrap_or_default() {
            if !n.contains("did not start") {
                out.warning(&n);
            }
        }
        out.text(&text);
        hub.shutdown().await;
    });
    Ok(())
}

/// `pai mcp add`.
pub fn add(
    settings: &Settings,
    out: &Output,
    name: &str,
    url: Option<String>,
    env: &[String],
    command: &[String],
) -> Result<(), Error> {
    let path = settings.settings_file.as_deref().ok_or_else(|| {
        Error::config("no configuration directory: cannot save the server")
            .with_hint("set HOME (or XDG_CONFIG_HOME)")
    })?;
    let mut vars = BTreeMap::new();
    for pair in env {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(Error::usage(format!("--env {pair}: expected KEY=VALUE")));
        };
        vars.insert(k.to_string(), v.to_string());
    }
    let server = match (url, command.split_first()) {
        (Some(url), None) => UserServer {
            url: Some(url),
            env: vars,
            ..UserServer::default()
        },
        (None, Some((program, args))) => UserServer {
            command: Some(program.clone()),
            args: args.to_vec(),
            env: vars,
            ..UserServer::default()
        },
        _ => {
            return Err(
                Error::usage("give either --url URL or -- COMMAND [ARGS...]")
                    .with_hint("pai mcp add docs -- npx -y some-mcp-server"),
            );
        }
    };
    add_server(path, name, &server).map_err(Error::config)?;
    out.line(&format!(
        "Added MCP server `{name}` to {}. Its tools are offered to the model from the next session; each call asks for approval unless listed in `auto_approve`.",
        path.display()
    ));
    Ok(())
}

/// `pai mcp remove`.
pub fn remove(settings: &Settings, out: &Output, name: &str) -> Result<(), Error> {
    let path = settings
        .settings_file
        .as_deref()
        .ok_or_else(|| Error::config("no configuration directory"))?;
    if remove_server(path, name).map_err(Error::config)? {
        out.line(&format!(
            "Removed MCP server `{name}` from {}.",
            path.display()
        ));
        Ok(())
    } else {
        Err(
            Error::usage(format!("no MCP server `{name}` in {}", path.display()))
                .with_hint("`pai mcp list` shows the configured servers"),
        )
    }
}

/// `pai mcp trust`: show the project's servers and trust this version of its `.mcp.json`.
/// Typing the command is the explicit approval (a session's `--yes` never grants it); what
/// is trusted is printed, and a later change to the file asks again.
pub fn trust(settings: &Settings, out: &Output) -> Result<(), Error> {
    let project = open_project(settings)?;
    let root = project.workspace.root().to_path_buf();
    let bytes = match project.workspace.read_bytes(PROJECT_FILE) {
        Ok(Some((bytes, _))) => bytes,
        Ok(None) => {
            return Err(Error::usage(format!(
                "there is no {PROJECT_FILE} in {}",
                root.display()
            )));
        }
        Err(e) => return Err(Error::failed(format!("{PROJECT_FILE} was not read: {e}"))),
    };
    let servers = ProjectServers::from_bytes(Some(&bytes));
    if let Some(problem) = servers.problem {
        return Err(Error::config(problem).with_hint(format!("fix {PROJECT_FILE} first")));
    }
    let file = trust_file(settings)
        .ok_or_else(|| Error::config("no configuration directory: cannot record the trust"))?;
    let mut text = format!(
        "{} starts these servers:\n",
        root.join(PROJECT_FILE).display()
    );
    for spec in &servers.specs {
        text.push_str(&format!("  {}: {}\n", spec.name, spec.describe()));
    }
    out.text(&text);
    let mut store = TrustStore::load(&file).map_err(Error::config)?;
    let hash = crate::mcp::trust::pin(&root, &crate::mcp::trust::file_hash(&bytes));
    store.trust(&root, &hash);
    store.save(&file).map_err(Error::failed)?;
    out.line(&format!(
        "Trusted {PROJECT_FILE} of {}; pai asks again if the file changes.",
        root.display()
    ));
    Ok(())
}

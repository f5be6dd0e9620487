//! Where MCP servers come from and what a server's configuration says: the user's
//! `[mcp_servers.<name>]` tables in config.toml (Codex's shape) and a project's `.mcp.json`
//! (`{"mcpServers": {...}}`, Claude Code's shape), both turned into one [`ServerSpec`].
//!
//! A project file is read from a repository the user may have just cloned, so parsing it is
//! strict about shapes and lenient about extra fields (other tools add their own), and nothing
//! in it is trusted: it cannot pre-approve tools or set timeouts.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

/// A tool call's timeout unless the server's configuration says otherwise.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// The project file naming a project's servers, at the project root.
pub const PROJECT_FILE: &str = ".mcp.json";

/// `[mcp_servers.<name>]` in the user's config.toml.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserServer {
    /// The program of a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables it gets (besides PATH, HOME and the locale).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The endpoint of a streamable HTTP server.
    pub url: Option<String>,
    /// Only these tools are exposed to the model (default: all).
    pub enabled_tools: Option<Vec<String>>,
    /// Tools that run without asking, `--yes` included.
    #[serde(default)]
    pub auto_approve: Vec<String>,
    /// Timeout of one tool call, in seconds (default 60).
    pub timeout_secs: Option<u64>,
    /// `false` keeps the server configured but not started.
    pub enabled: Option<bool>,
}

/// Where a server's configuration came from, which decides whether it needs the user's trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    /// The user's own config.toml: trusted.
    User,
    /// The project's `.mcp.json`: started only once the user trusted that file.
    Project,
}

/// How pai talks to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// The environment the configuration names.
        env: BTreeMap<String, String>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The URL.
        url: String,
    },
}

/// One server, checked and ready to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// Its name (the `server` of a TOOL step).
    pub name: String,
    /// Where it was configured.
    pub origin: Origin,
    /// How to reach it.
    pub transport: Transport,
    /// Whether to start it.
    pub enabled: bool,
    /// Tools exposed to the model (`None`: all).
    pub enabled_tools: Option<Vec<String>>,
    /// Tools that run without asking.
    pub auto_approve: Vec<String>,
    /// Timeout of one call.
    pub timeout: Duration,
}

impl ServerSpec {
    /// Whether the model may see and call `tool`.
    pub fn exposes(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == tool))
    }

    /// A one-line description of how it is reached (`npx -y server`, `http://...`).
    pub fn describe(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => {
                let mut text = command.clone();
                for a in args {
                    text.push(' ');
                    text.push_str(a);
                }
                text
            }
            Transport::Http { url } => url.clone(),
        }
    }
}

/// Whether `name` can name a server: letters, digits, `_` and `-` (no `.`, which separates
/// server and tool in the prompt).
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn check_url(url: &str) -> Result<(), String> {
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) || url.contains(' ') {
        return Err(format!(
            "`url` must be an http:// or https:// URL, not {url:?}"
        ));
    }
    Ok(())
}

/// Check one `[mcp_servers.<name>]` table.
pub fn user_spec(name: &str, server: &UserServer) -> Result<ServerSpec, String> {
    let at = format!("[mcp_servers.{name}]");
    if !valid_server_name(name) {
        return Err(format!(
            "{at}: a server name may hold only letters, digits, `_` and `-`"
        ));
    }
    let transport = match (&server.command, &server.url) {
        (Some(command), None) if !command.trim().is_empty() => Transport::Stdio {
            command: command.clone(),
            args: server.args.clone(),
            env: server.env.clone(),
        },
        (None, Some(url)) => {
            check_url(url).map_err(|e| format!("{at}: {e}"))?;
            if !server.args.is_empty() || !server.env.is_empty() {
                return Err(format!(
                    "{at}: `args` and `env` belong to a `command` server, not a `url` one"
                ));
            }
            Transport::Http { url: url.clone() }
        }
        (Some(_), Some(_)) => {
            return Err(format!(
                "{at}: give either `command` (a stdio server) or `url` (an HTTP server), not both"
            ));
        }
        _ => {
            return Err(format!(
                "{at}: needs `command` (a stdio server) or `url` (an HTTP server)"
            ));
        }
    };
    let timeout = match server.timeout_secs {
        Some(0) => return Err(format!("{at}: `timeout_secs` must be above 0")),
        Some(secs) => Duration::from_secs(secs),
        None => DEFAULT_TOOL_TIMEOUT,
    };
    Ok(ServerSpec {
        name: name.to_string(),
        origin: Origin::User,
        transport,
        enabled: server.enabled.unwrap_or(true),
        enabled_tools: server.enabled_tools.clone(),
        auto_approve: server.auto_approve.clone(),
        timeout,
    })
}

/// Check every `[mcp_servers]` table.
pub fn user_specs(servers: &BTreeMap<String, UserServer>) -> Result<Vec<ServerSpec>, String> {
    servers
        .iter()
        .map(|(name, server)| user_spec(name, server))
        .collect()
}

#[derive(Deserialize)]
struct ProjectFile {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
struct ProjectServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
}

/// Parse a project's `.mcp.json`. Errors name the server and the field, since the user reads
/// them when deciding whether to trust the file.
pub fn project_specs(text: &str) -> Result<Vec<ServerSpec>, String> {
    let file: ProjectFile =
        serde_json::from_str(text).map_err(|e| format!("{PROJECT_FILE} is not valid: {e}"))?;
    let mut specs = Vec::new();
    for (name, raw) in file.mcp_servers {
        let at = format!("{PROJECT_FILE}: server {name:?}");
        if !valid_server_name(&name) {
            return Err(format!(
                "{at}: a server name may hold only letters, digits, `_` and `-`"
            ));
        }
        let server: ProjectServer =
            serde_json::from_value(raw).map_err(|e| format!("{at}: {e}"))?;
        let transport = match (server.command, server.url) {
            (Some(command), None) if !command.trim().is_empty() => Transport::Stdio {
                command,
                args: server.args,
                env: server.env,
            },
            (None, Some(url)) => {
                check_url(&url).map_err(|e| format!("{at}: {e}"))?;
                if server.kind.as_deref() == Some("sse") {
                    return Err(format!(
                        "{at}: the legacy SSE transport is not supported; use a streamable HTTP endpoint"
                    ));
                }
                Transport::Http { url }
            }
            (Some(_), Some(_)) => {
                return Err(format!("{at}: give either `command` or `url`, not both"));
            }
            _ => return Err(format!("{at}: needs `command` or `url`")),
        };
        specs.push(ServerSpec {
            name,
            origin: Origin::Project,
            transport,
            enabled: true,
            enabled_tools: None,
            auto_approve: Vec::new(),
            timeout: DEFAULT_TOOL_TIMEOUT,
        });
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(toml_text: &str) -> Result<Vec<ServerSpec>, String> {
        #[derive(Deserialize)]
        struct File {
            mcp_servers: BTreeMap<String, UserServer>,
        }
        let file: File = toml::from_str(toml_text).map_err(|e| e.to_string())?;
        user_specs(&file.mcp_servers)
    }

    #[test]
    fn user_servers_parse_in_codex_shape() {
        let specs = user(
            r#"
            [mcp_servers.docs]
            command = "npx"
            args = ["-y", "docs-server"]
            env = { DOCS_TOKEN = "t" }
            enabled_tools = ["search"]
            auto_approve = ["search"]
            timeout_secs = 5

            [mcp_servers.remote]
            url = "https://example.test/mcp"
            "#,
        )
        .unwrap();
        assert_eq!(specs.len(), 2);
        assert_eq!(specs[0].name, "docs");
        assert_eq!(specs[0].timeout, Duration::from_secs(5));
        assert!(specs[0].exposes("search") && !specs[0].exposes("delete"));
        assert_eq!(specs[0].describe(), "npx -y docs-server");
        assert!(matches!(specs[1].transport, Transport::Http { .. }));
        assert_eq!(specs[1].timeout, DEFAULT_TOOL_TIMEOUT);
    }

    #[test]
    fn malformed_user_servers_are_clear_errors() {
        let cases = [
            ("[mcp_servers.a]\nargs = [\"x\"]\n", "needs `command`"),
            (
                "[mcp_servers.a]\ncommand = \"x\"\nurl = \"http://h\"\n",
                "not both",
            ),
            (
                "[mcp_servers.a]\nurl = \"ftp://h\"\n",
                "http:// or https://",
            ),
            ("[mcp_servers.\"a.b\"]\ncommand = \"x\"\n", "server name"),
            (
                "[mcp_servers.a]\ncommand = \"x\"\ntimeout_secs = 0\n",
                "above 0",
            ),
            (
                "[mcp_servers.a]\ncommand = \"x\"\ncomand = \"y\"\n",
                "unknown field",
            ),
        ];
        for (text, expected) in cases {
            let err = user(text).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn project_files_parse_in_claude_code_shape() {
        let specs = project_specs(
            r#"{"mcpServers": {
                "fs": {"command": "node", "args": ["fs.js"], "env": {"A": "1"}, "extra": true},
                "web": {"type": "http", "url": "http://127.0.0.1:9/mcp"}
            }, "other": 1}"#,
        )
        .unwrap();
        assert_eq!(specs.len(), 2);
        assert_eq!(specs[0].origin, Origin::Project);
        assert!(specs[0].auto_approve.is_empty());
        assert!(matches!(&specs[0].transport, Transport::Stdio { env, .. } if env["A"] == "1"));
        assert!(matches!(specs[1].transport, Transport::Http { .. }));
    }

    #[test]
    fn malformed_project_files_are_clear_errors() {
        let cases = [
            ("not json", "is not valid"),
            (r#"{"mcpServers": {"a": {"args": []}}}"#, "needs `command`"),
            (r#"{"mcpServers": {"a": {"command": 5}}}"#, "server \"a\""),
            (
                r#"{"mcpServers": {"a b": {"command": "x"}}}"#,
                "server name",
            ),
            (
                r#"{"mcpServers": {"a": {"type": "sse", "url": "http://h/sse"}}}"#,
                "legacy SSE",
            ),
        ];
        for (text, expected) in cases {
            let err = project_specs(text).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}

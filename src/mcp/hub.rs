//! Every configured server of a session: which may start (the user's own, and a project's
//! only once trusted), their connections, the tools they expose, and the calls to them. The
//! agent owns one hub; questions and notices go through the closures it passes, so this module
//! knows nothing of frontends.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::client::{CallError, Connection, ToolResult};
use super::render::{TOOL_LIST_TOKENS, ToolInfo, check_tool, prompt_section};
use super::trust::{TrustStore, file_hash, pin};
use crate::config::mcp_servers::{Origin, PROJECT_FILE, ServerSpec, project_specs};

/// A server's state, as `pai mcp list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Not started yet.
    Pending,
    /// Running, with these tools exposed.
    Started,
    /// It could not be started, or it stopped: why.
    Failed(String),
    /// A project server whose `.mcp.json` the user has not trusted (in this version).
    Untrusted,
    /// Configured with `enabled = false`.
    Disabled,
}

impl Status {
    /// The one word `pai mcp list` prints.
    pub fn word(&self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Started => "started",
            Status::Failed(_) => "failed",
            Status::Untrusted => "untrusted",
            Status::Disabled => "disabled",
        }
    }
}

/// A project's `.mcp.json` as found at the start.
#[derive(Debug, Clone, Default)]
pub struct ProjectServers {
    /// Its servers (empty when the file is missing or malformed).
    pub specs: Vec<ServerSpec>,
    /// SHA-256 of its bytes, the trust decision's pin.
    pub hash: Option<String>,
    /// Why it could not be used (unreadable, a symlink, malformed).
    pub problem: Option<String>,
}

impl ProjectServers {
    /// Parse the file's bytes (`None`: there is no file).
    pub fn from_bytes(bytes: Option<&[u8]>) -> Self {
        let Some(bytes) = bytes else {
            return Self::default();
        };
        let hash = Some(file_hash(bytes));
        let parsed = std::str::from_utf8(bytes)
            .map_err(|_| format!("{PROJECT_FILE} is not UTF-8 text"))
            .and_then(project_specs);
        match parsed {
            Ok(specs) => Self {
                specs,
                hash,
                problem: None,
            },
            Err(e) => Self {
                specs: Vec::new(),
                hash,
                problem: Some(e),
            },
        }
    }
}

/// What the user is asked before a project's servers start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustRequest {
    /// The file, as a path to show.
    pub file: String,
    /// One line per server: `name: command args` or `name: url`.
    pub servers: Vec<String>,
    /// The user trusted an earlier version of this file.
    pub changed: bool,
}

struct Server {
    spec: ServerSpec,
    status: Status,
    connection: Option<Connection>,
    tools: Vec<ToolInfo>,
}

/// The session's MCP servers.
pub struct Hub {
    servers: BTreeMap<String, Server>,
    root: PathBuf,
    secrets: Vec<String>,
    trust_file: Option<PathBuf>,
    project_hash: Option<String>,
    /// Project servers waiting for the trust question (asked once per session).
    trust_pending: bool,
    started: bool,
    prompt: String,
}

impl Hub {
    /// A hub over the user's servers and a project's. A project server whose name a user
    /// server already takes is left out (the user's own configuration wins), with a notice.
    pub fn new(
        user: Vec<ServerSpec>,
        project: ProjectServers,
        root: &Path,
        trust_file: Option<PathBuf>,
        secrets: Vec<String>,
        notice: &dyn Fn(String),
    ) -> Self {
        if let Some(problem) = &project.problem {
            notice(format!("the project's MCP servers are not used: {problem}"));
        }
        let store = trust_file
            .as_deref()
            .map(TrustStore::load)
            .transpose()
            .unwrap_or_else(|e| {
                notice(e);
                None
            })
            .unwrap_or_default();
        // Pinned to the file and to what its servers run, as found now.
        let pinned = project.hash.as_deref().map(|h| pin(root, h));
        let trusted = pinned.as_deref().is_some_and(|h| store.is_trusted(root, h));
        let mut servers = BTreeMap::new();
        for spec in user {
            let status = if spec.enabled {
                Status::Pending
            } else {
                Status::Disabled
            };
            servers.insert(spec.name.clone(), Server::new(spec, status));
        }
        let mut trust_pending = false;
        for spec in project.specs {
            if servers.contains_key(&spec.name) {
                notice(format!(
                    "{PROJECT_FILE} names a server `{}` that your config.toml already defines; yours is used",
                    spec.name
                ));
                continue;
            }
            let status = if trusted {
                Status::Pending
            } else {
                trust_pending = true;
                Status::Untrusted
            };
            servers.insert(spec.name.clone(), Server::new(spec, status));
        }
        Self {
            servers,
            root: root.to_path_buf(),
            secrets,
            trust_file,
            project_hash: pinned,
            trust_pending,
            started: false,
            prompt: String::new(),
        }
    }

    /// Whether any server is configured at all.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The question to ask before the project's servers may start, if one is due.
    pub fn trust_request(&self) -> Option<TrustRequest> {
        if !self.trust_pending {
            return None;
        }
        let changed = self
            .trust_file
            .as_deref()
            .is_some_and(|f| TrustStore::load(f).is_ok_and(|s| s.trusted_before(&self.root)));
        Some(TrustRequest {
            file: self.root.join(PROJECT_FILE).display().to_string(),
            servers: self
                .servers
                .values()
                .filter(|s| s.spec.origin == Origin::Project)
                .map(|s| format!("{}: {}", s.spec.name, s.spec.describe()))
                .collect(),
            changed,
        })
    }

    /// Record the user's answer to [`Hub::trust_request`]: trusted, the decision is saved
    /// (pinned to the file's hash) and the servers may start; not, they stay untrusted for
    /// the session. Returns a notice for the user.
    pub fn answer_trust(&mut self, trusted: bool) -> String {
        self.trust_pending = false;
        if !trusted {
            return format!(
                "the servers of {PROJECT_FILE} were not started; trust them with `pai mcp trust`"
            );
        }
        for server in self.servers.values_mut() {
            if server.spec.origin == Origin::Project {
                server.status = Status::Pending;
            }
        }
        match (&self.trust_file, &self.project_hash) {
            (Some(file), Some(hash)) => {
                let saved = TrustStore::load(file).and_then(|mut store| {
                    store.trust(&self.root, hash);
                    store.save(file)
                });
                match saved {
                    Ok(()) => format!("{PROJECT_FILE} trusted; pai asks again if it changes"),
                    Err(e) => format!("{PROJECT_FILE} trusted for this session only: {e}"),
                }
            }
            _ => {
                format!("{PROJECT_FILE} trusted for this session only (no configuration directory)")
            }
        }
    }

    /// Notice for project servers left untrusted without asking (`pai run`).
    pub fn untrusted_notice(&self) -> Option<String> {
        let names: Vec<&str> = self
            .servers
            .values()
            .filter(|s| s.status == Status::Untrusted)
            .map(|s| s.spec.name.as_str())
            .collect();
        (!names.is_empty()).then(|| {
            format!(
                "{PROJECT_FILE} servers not started (untrusted): {}; run `pai mcp trust` to allow them",
                names.join(", ")
            )
        })
    }

    /// Start every server that may start and is not running yet, and refresh the tool lists
    /// of those that said theirs changed. Failures become notices; nothing here fails the
    /// session.
    pub async fn ensure_started(&mut self, notice: &(dyn Fn(String) + Sync)) {
        let root = self.root.clone();
        let secrets = self.secrets.clone();
        for server in self.servers.values_mut() {
            if server.status == Status::Pending {
                match Connection::start(&server.spec, &root, &secrets).await {
                    Ok(c) => {
                        server.connection = Some(c);
                        server.status = Status::Started;
                        server.refresh(notice).await;
                    }
                    Err(e) => {
                        notice(format!(
                            "MCP server `{}` did not start: {e}",
                            server.spec.name
                        ));
                        server.status = Status::Failed(e);
                    }
                }
            } else if server.status == Status::Started
                && server
                    .connection
                    .as_ref()
                    .is_some_and(Connection::list_changed)
            {
                server.refresh(notice).await;
            }
        }
        self.started = true;
        self.prompt = prompt_section(&self.tools(), TOOL_LIST_TOKENS);
    }

    /// Every exposed tool, sorted by server then name.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.servers
            .values()
            .flat_map(|s| s.tools.iter().cloned())
            .collect()
    }

    /// The system prompt section for the tools (empty when there are none).
    pub fn prompt_section(&self) -> &str {
        &self.prompt
    }

    /// Every server with its status and exposed tools, by name.
    pub fn overview(&self) -> Vec<(&ServerSpec, &Status, &[ToolInfo])> {
        self.servers
            .values()
            .map(|s| (&s.spec, &s.status, s.tools.as_slice()))
            .collect()
    }

    /// The configuration of `server`.
    pub fn spec(&self, server: &str) -> Option<&ServerSpec> {
        self.servers.get(server).map(|s| &s.spec)
    }

    /// Whether `server.tool` can be called; the reason, in words the model can act on, if not.
    pub fn check(&self, server: &str, tool: &str) -> Result<(), String> {
        let Some(s) = self.servers.get(server) else {
            return Err(format!(
                "there is no MCP server `{server}`; available tools: {}",
                self.names()
            ));
        };
        if s.status != Status::Started {
            return Err(format!(
                "the MCP server `{server}` is not running ({}); do not call its tools",
                s.status.word()
            ));
        }
        if !s.tools.iter().any(|t| t.name == tool) {
            return Err(format!(
                "the MCP server `{server}` has no tool `{tool}`; available tools: {}",
                self.names()
            ));
        }
        Ok(())
    }

    fn names(&self) -> String {
        let names: Vec<String> = self
            .tools()
            .iter()
            .map(|t| format!("{}.{}", t.server, t.name))
            .collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    }

    /// Call `server.tool` with `arguments`.
    pub async fn call(
        &mut self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, CallError> {
        self.check(server, tool).map_err(CallError::Failed)?;
        let Some(s) = self.servers.get_mut(server) else {
            return Err(CallError::Failed(format!(
                "there is no MCP server `{server}`"
            )));
        };
        let Some(conn) = s.connection.as_ref() else {
            return Err(CallError::Failed(format!(
                "the MCP server `{server}` is not running"
            )));
        };
        let result = conn.call(tool, arguments, s.spec.timeout, cancel).await;
        if conn.is_closed() {
            // A crashed server stays down for the session: its tools leave the prompt at the
            // next turn instead of failing every later call the same way.
            s.status = Status::Failed("the server stopped".into());
            s.tools.clear();
            if let Some(c) = s.connection.take() {
                c.close().await;
            }
            self.prompt = prompt_section(&self.tools(), TOOL_LIST_TOKENS);
        }
        result
    }

    /// Stop every server.
    pub async fn shutdown(&mut self) {
        for server in self.servers.values_mut() {
            if let Some(c) = server.connection.take() {
                c.close().await;
            }
        }
    }
}

impl Server {
    fn new(spec: ServerSpec, status: Status) -> Self {
        Self {
            spec,
            status,
            connection: None,
            tools: Vec::new(),
        }
    }

    async fn refresh(&mut self, notice: &(dyn Fn(String) + Sync)) {
        let Some(conn) = &self.connection else {
            return;
        };
        match conn.tools().await {
            Ok(tools) => {
                self.tools = tools
                    .into_iter()
                    .filter(|t| self.spec.exposes(&t.name))
                    .filter_map(|t| match check_tool(&t.name, &t.input_schema) {
                        Ok(()) => Some(ToolInfo {
                            server: self.spec.name.clone(),
                            name: t.name.to_string(),
                            description: t.description.as_deref().unwrap_or_default().to_string(),
                            schema: (*t.input_schema).clone(),
                        }),
                        Err(e) => {
                            notice(format!(
                                "MCP server `{}`: {e}; that tool is left out",
                                self.spec.name
                            ));
                            None
                        }
                    })
                    .collect();
                self.tools.sort_by(|a, b| a.name.cmp(&b.name));
            }
            Err(e) => {
                notice(format!("MCP server `{}`: {e}", self.spec.name));
                self.status = Status::Failed(e);
            }
        }
    }
}

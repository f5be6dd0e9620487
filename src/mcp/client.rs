//! One connection to one MCP server through the official SDK (`rmcp`): start it (a child
//! process with a minimal, key-free environment), list its tools (every page), notice when it
//! says the list changed, and call a tool with a timeout and cancellation (a call cut short
//! sends `notifications/cancelled` and waits until it is out, so the server stops the work
//! too, even when the session closes right after).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ContentBlock,
    ServerResult, Tool,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use tokio_util::sync::CancellationToken;

use crate::config::mcp_servers::{ServerSpec, Transport};
use crate::exec;

/// How long a server may take to start and answer `initialize`.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a call cut short waits for its cancellation notice to be written.
const CANCEL_NOTICE_WAIT: Duration = Duration::from_secs(2);

/// Variables a server inherits from pai's environment (scrubbed of secrets like RUN's); all
/// else it gets only when its configuration names it.
const BASIC_VARIABLES: &[&str] = &[
    "PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TMPDIR", "USER", "LOGNAME",
];

/// Listens for `notifications/tools/list_changed`.
#[derive(Clone, Default)]
struct Watcher {
    changed: Arc<AtomicBool>,
}

impl ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.store(true, Ordering::SeqCst);
    }
}

/// A running server.
pub struct Connection {
    service: RunningService<RoleClient, Watcher>,
    changed: Arc<AtomicBool>,
}

/// What a tool call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// The server marked the result as an error (`isError`).
    pub is_error: bool,
    /// Its content as text, capped like RUN output.
    pub text: String,
}

/// Why a tool call gave no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The call took longer than the server's timeout; it was cancelled.
    Timeout(Duration),
    /// The user interrupted the turn; the call was cancelled.
    Cancelled,
    /// The server answered with a protocol error, or went away.
    Failed(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Timeout(d) => write!(
                f,
                "the tool did not answer within {} s and the call was cancelled (raise `timeout_secs` for the server in config.toml if it needs longer)",
                d.as_secs_f64()
            ),
            CallError::Cancelled => f.write_str("interrupted; the tool call was cancelled"),
            CallError::Failed(m) => f.write_str(m),
        }
    }
}

/// The environment of a stdio server: the basics from pai's own environment with secrets
/// removed as for RUN, plus what the configuration names, minus provider keys and any value
/// carrying one of `secrets`.
pub fn server_environment(
    configured: &BTreeMap<String, String>,
    secrets: &[String],
) -> Vec<(OsString, OsString)> {
    let basics = std::env::vars_os().filter(|(name, _)| {
        let name = name.to_string_lossy();
        BASIC_VARIABLES.contains(&name.as_ref()) || name.starts_with("LC_")
    });
    let mut env = exec::scrub_environment(basics, secrets);
    for (name, value) in configured {
        let (name, value) = (OsString::from(name), OsString::from(value));
        if !exec::carries_secret(&name, &value, secrets) {
            env.retain(|(n, _)| *n != name);
            env.push((name, value));
        }
    }
    env
}

impl Connection {
    /// Start the server `spec` describes, in `root`, and complete the MCP handshake.
    pub async fn start(spec: &ServerSpec, root: &Path, secrets: &[String]) -> Result<Self, String> {
        let watcher = Watcher::default();
        let changed = watcher.changed.clone();
        let service = match &spec.transport {
            Transport::Stdio { command, args, env } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args)
                    .current_dir(root)
                    .env_clear()
                    .envs(server_environment(env, secrets));
                // pai's key, credentials and state stay out of the server's reach, as out of
                // a RUN command's.
                let guard = exec::ChildGuard::unconfined(root);
                let refusable = guard.needs_namespace();
                // SAFETY: the closure runs in the forked child before exec; the guard makes
                // only raw system calls on memory prepared before the fork (see
                // `exec::ChildGuard::apply`).
                unsafe {
                    cmd.pre_exec(move || guard.apply());
                }
                // The server's own logging would land in the middle of pai's screen.
                let (transport, _) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| if refusable { exec::refusal(e) } else { e })
                    .map_err(|e| format!("cannot start `{}`: {e}", spec.describe()))?;
                tokio::time::timeout(START_TIMEOUT, watcher.serve(transport))
                    .await
                    .map_err(|_| {
                        format!(
                            "`{}` did not complete the MCP handshake within {} s",
                            spec.describe(),
                            START_TIMEOUT.as_secs()
                        )
                    })?
                    .map_err(|e| format!("`{}` failed the MCP handshake: {e}", spec.describe()))?
            }
            Transport::Http { url } => {
                // rmcp's HTTP client is the providers' reqwest, on rustls without a bundled
                // crypto provider: the same one (ring) is installed first. Unlike the
                // providers' client it trusts the system's root certificates.
                crate::llm::crypto_provider()
                    .map_err(|e| format!("cannot connect to {url}: {e}"))?;
                let transport = StreamableHttpClientTransport::from_uri(url.as_str());
                tokio::time::timeout(START_TIMEOUT, watcher.serve(transport))
                    .await
                    .map_err(|_| {
                        format!(
                            "{url} did not complete the MCP handshake within {} s",
                            START_TIMEOUT.as_secs()
                        )
                    })?
                    .map_err(|e| format!("{url} failed the MCP handshake: {e}"))?
            }
        };
        Ok(Self { service, changed })
    }

    /// Every tool the server lists (all pages).
    pub async fn tools(&self) -> Result<Vec<Tool>, String> {
        self.changed.store(false, Ordering::SeqCst);
        tokio::time::timeout(START_TIMEOUT, self.service.peer().list_all_tools())
            .await
            .map_err(|_| format!("tools/list took longer than {} s", START_TIMEOUT.as_secs()))?
            .map_err(|e| format!("tools/list failed: {e}"))
    }

    /// Whether the server said its tool list changed since the last [`Connection::tools`].
    pub fn list_changed(&self) -> bool {
        self.changed.load(Ordering::SeqCst)
    }

    /// Whether the server is gone (its process exited, its connection closed).
    pub fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// Call `tool`; at most `timeout`, and no longer than `cancel` allows.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, CallError> {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut handle = self
            .service
            .peer()
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.failed(&e))?;
        let cut_short = tokio::select! {
            r = tokio::time::timeout(timeout, &mut handle.rx) => match r {
                Ok(Ok(reply)) => return self.tool_result(reply),
                Ok(Err(_)) => return Err(self.failed(&rmcp::ServiceError::TransportClosed)),
                Err(_) => CallError::Timeout(timeout),
            },
            _ = cancel.cancelled() => CallError::Cancelled,
        };
        // The server is told, and the notice is out before the call returns: a session that
        // ends right after must not close the connection with it still queued. Bounded, so a
        // server that stopped reading cannot hold up an interrupt.
        let reason = match cut_short {
            CallError::Timeout(_) => "the call timed out",
            _ => "the user interrupted the turn",
        };
        let notice = handle.cancel(Some(reason.to_string()));
        let _ = tokio::time::timeout(CANCEL_NOTICE_WAIT, notice).await;
        Err(cut_short)
    }

    /// A call's reply: a tool result, or a failure for anything else.
    fn tool_result(
        &self,
        reply: Result<ServerResult, rmcp::ServiceError>,
    ) -> Result<ToolResult, CallError> {
        match reply {
            Ok(ServerResult::CallToolResult(result)) => Ok(ToolResult {
                is_error: result.is_error.unwrap_or(false),
                text: result_text(&result),
            }),
            Ok(_) => Err(CallError::Failed(
                "the call failed: the server answered with something other than a tool result"
                    .into(),
            )),
            Err(e) => Err(self.failed(&e)),
        }
    }

    /// A call that failed: the server went away, or it said why.
    fn failed(&self, e: &rmcp::ServiceError) -> CallError {
        CallError::Failed(if self.is_closed() {
            format!("the server stopped during the call ({e})")
        } else {
            format!("the call failed: {e}")
        })
    }

    /// Close the connection (a child process is ended).
    pub async fn close(mut self) {
        let _ = self
            .service
            .close_with_timeout(Duration::from_secs(2))
            .await;
    }
}

/// A result's content as text: text blocks as they are, other blocks named, structured
/// content when there is nothing else; capped head and tail like RUN output.
fn result_text(result: &CallToolResult) -> String {
    let mut parts = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::Image(i) => parts.push(format!("[image {}]", i.mime_type)),
            ContentBlock::Audio(a) => parts.push(format!("[audio {}]", a.mime_type)),
            other => {
                parts.push(serde_json::to_string(other).unwrap_or_else(|_| "[content]".into()))
            }
        }
    }
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    exec::cap_output(text.as_bytes(), exec::OUTPUT_CAP)
}

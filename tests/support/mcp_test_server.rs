//! A test-only MCP server built on the official SDK's server side, for pai's MCP tests and
//! benchmark: `cargo run --example mcp-test-server -- [--log FILE] [--ten] [--bad-schema]
//! [--http URL_FILE]`. It speaks stdio, or with `--http` streamable HTTP on a free loopback
//! port, writing its URL to URL_FILE.
//!
//! Tools: `echo` (returns its `text`), `sleep` (waits `ms` milliseconds), `fail` (an
//! `isError` result), `big` (1 MB of text), `write` (creates `tool.txt` in its working
//! directory, or the file `--write-to PATH` names, folders included), `crash` (the process exits mid-call), `grow` (adds the tool `extra` and sends
//! `notifications/tools/list_changed`); `--ten` adds three more so ten are listed (the
//! benchmark's tool-list cost), `--bad-schema` adds one whose schema is malformed. Tools are
//! listed two per page, so clients must follow `nextCursor`. With `--log FILE` (or
//! `MCP_TEST_LOG`) it appends one JSON line when it starts (with its environment), one per
//! call it receives and one per cancellation, so tests can check what it saw.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::CancelledNotificationParam;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Clone)]
struct TestServer {
    log: Option<Arc<String>>,
    tools: Vec<Value>,
    /// Set by the `grow` tool: `extra` is listed from then on.
    grown: Arc<AtomicBool>,
    /// Where the `write` tool writes instead of `tool.txt`.
    write_to: Option<Arc<String>>,
}

impl TestServer {
    fn record(&self, line: Value) {
        if let Some(path) = &self.log {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path.as_str())
                .expect("log file");
            writeln!(f, "{line}").expect("log write");
        }
    }
}

fn tool(name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": schema})
}

fn tools(ten: bool, bad: bool) -> Vec<Value> {
    let mut list = vec![
        tool(
            "echo",
            "Return the given text unchanged.",
            json!({"type": "object", "properties": {"text": {"type": "string", "description": "what to echo"}}, "required": ["text"]}),
        ),
        tool(
            "sleep",
            "Wait for the given number of milliseconds, then say so.",
            json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
        ),
        tool(
            "fail",
            "Always fail with an error result.",
            json!({"type": "object", "properties": {}}),
        ),
        tool(
            "big",
            "Return one megabyte of text.",
            json!({"type": "object", "properties": {}}),
        ),
        tool(
            "crash",
            "Exit the server process in the middle of the call.",
            json!({"type": "object", "properties": {}}),
        ),
        tool(
            "write",
            "Write tool.txt in the working directory.",
            json!({"type": "object", "properties": {}}),
        ),
        tool(
            "grow",
            "Add the `extra` tool and tell the client its tool list changed.",
            json!({"type": "object", "properties": {}}),
        ),
    ];
    if ten {
        for (name, description) in [
            (
                "search_issues",
                "Search the issue tracker by free text; returns matching issue titles and numbers.",
            ),
            ("get_issue", "Fetch one issue by number with its comments."),
            (
                "list_pulls",
                "List open pull requests, newest first, optionally filtered by label.",
            ),
        ] {
            list.push(tool(
                name,
                description,
                json!({"type": "object", "properties": {
                    "query": {"type": "string"}, "number": {"type": "integer"},
                    "label": {"type": "string"}, "limit": {"type": "integer"}
                }, "required": ["query"]}),
            ));
        }
    }
    if bad {
        list.push(tool(
            "broken",
            "A tool with a malformed schema.",
            json!({"type": "object", "properties": "not an object"}),
        ));
    }
    list
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let start: usize = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let mut all = self.tools.clone();
        if self.grown.load(Ordering::SeqCst) {
            all.push(tool(
                "extra",
                "A tool that appeared later.",
                json!({"type": "object", "properties": {}}),
            ));
        }
        let page: Vec<Value> = all.iter().skip(start).take(2).cloned().collect();
        let mut result = json!({"tools": page});
        if start + 2 < all.len() {
            result["nextCursor"] = json!((start + 2).to_string());
        }
        serde_json::from_value(result).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        self.record(json!({"event": "call", "tool": request.name, "arguments": args}));
        let result = match request.name.as_ref() {
            "echo" => {
                let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
                CallToolResult::success(vec![ContentBlock::text(format!("echo: {text}"))])
            }
            "sleep" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                self.record(json!({"event": "slept", "ms": ms}));
                CallToolResult::success(vec![ContentBlock::text(format!("slept {ms} ms"))])
            }
            "fail" => {
                CallToolResult::error(vec![ContentBlock::text("the fail tool failed as asked")])
            }
            "big" => {
                let mut text = String::from("BIG-START\n");
                text.push_str(&"x".repeat(1024 * 1024));
                text.push_str("\nBIG-END");
                CallToolResult::success(vec![ContentBlock::text(text)])
            }
            // A server dying mid-call, as a crashing one would.
            "crash" => std::process::exit(3),
            "write" => {
                // Servers run in the project root: this one writes a file there.
                let path = self.write_to.as_deref().map_or("tool.txt", String::as_str);
                if let Some(dir) = std::path::Path::new(path).parent() {
                    std::fs::create_dir_all(dir).unwrap();
                }
                std::fs::write(path, "written by the tool\n").unwrap();
                CallToolResult::success(vec![ContentBlock::text("wrote tool.txt")])
            }
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                CallToolResult::success(vec![ContentBlock::text("grown")])
            }
            other => CallToolResult::success(vec![ContentBlock::text(format!("{other} called"))]),
        };
        Ok(result.into())
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        self.record(json!({"event": "cancelled", "reason": notification.reason}));
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut log = std::env::var("MCP_TEST_LOG").ok();
    let (mut ten, mut bad) = (false, false);
    let mut http: Option<String> = None;
    let mut write_to: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--log" => log = args.next(),
            "--ten" => ten = true,
            "--bad-schema" => bad = true,
            "--http" => http = args.next(),
            "--write-to" => write_to = args.next(),
            // A file of the project the server would load (the trust is pinned to it).
            "--plugin" => {
                let _ = args.next();
            }
            other => {
                eprintln!("mcp-test-server: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    let server = TestServer {
        log: log.map(Arc::new),
        tools: tools(ten, bad),
        grown: Arc::new(AtomicBool::new(false)),
        write_to: write_to.map(Arc::new),
    };
    let env: serde_json::Map<String, Value> = std::env::vars()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    server.record(json!({"event": "start", "env": env}));
    if let Some(url_file) = http {
        serve_http(server, &url_file).await;
        return;
    }
    let running = server.serve(rmcp::transport::stdio()).await.expect("serve");
    let _ = running.waiting().await;
}

/// Serve streamable HTTP at `http://127.0.0.1:<free port>/mcp` until killed.
async fn serve_http(server: TestServer, url_file: &str) {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_sse_keep_alive(None),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    // Written whole, then renamed: a reader never sees half a URL.
    let tmp = format!("{url_file}.tmp");
    std::fs::write(&tmp, &url).unwrap();
    std::fs::rename(&tmp, url_file).unwrap();
    axum::serve(listener, router).await.unwrap();
}

//! The plan contract of SPEC section 11: the structured object the model returns, as Rust
//! types, the JSON schema sent to providers, and the validation every plan passes before any
//! step runs (an invalid plan runs nothing).

use std::collections::HashSet;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Largest file content a WRITE or whole-file MODIFY may carry. A real source file is far
/// smaller; anything bigger is a model running away, and would be costly to send back.
pub const MAX_CONTENT_BYTES: usize = 512 * 1024;
/// Most steps one reply may hold.
pub const MAX_STEPS: usize = 40;
/// Characters of a TOOL step's arguments shown in one-line displays (the plan table).
const TOOL_ARGS_SHOWN: usize = 80;
/// Largest TOOL arguments object, as JSON text.
const MAX_TOOL_ARGS_BYTES: usize = 64 * 1024;

/// What the model decided the message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Intent {
    /// A question or conversation: answered, nothing runs.
    Chat,
    /// Work on the project: a plan of steps.
    Task,
}

/// How big the model judged the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Complexity {
    /// One or two steps.
    #[default]
    Simple,
    /// Several steps.
    Moderate,
    /// Many steps or files.
    Complex,
}

/// The model's analysis of the request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Analysis {
    /// The request restated.
    pub user_intent: String,
    /// Files it wants to read.
    pub files_to_read: Vec<String>,
    /// Files it will create.
    pub files_to_create: Vec<String>,
    /// Files it will modify.
    pub files_to_modify: Vec<String>,
    /// Risks it sees.
    pub risks: String,
    /// How success will be judged.
    pub success_criteria: Vec<String>,
    /// How big the task is.
    pub complexity: Complexity,
}

/// One exact search/replace edit of MODIFY.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edit {
    /// Text that must occur exactly once in the file.
    pub search: String,
    /// Its replacement.
    pub replace: String,
}

/// The lines a READ asks for: numbered from 1, both ends included; `last: None` reads to the
/// end of the file. Written `"120-180"` (or `"120-"`) in the plan contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRange {
    /// The first line.
    pub first: usize,
    /// The last line (`None`: the file's last).
    pub last: Option<usize>,
}

impl fmt::Display for LineRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.last {
            Some(last) => write!(f, "{}-{last}", self.first),
            None => write!(f, "{}-", self.first),
        }
    }
}

impl Serialize for LineRange {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One step of a plan, already checked for its required arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Step {
    /// Show a file's contents, or only some of its lines.
    Read {
        path: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        lines: Option<LineRange>,
    },
    /// Create a new file.
    Write { path: String, content: String },
    /// Change an existing file by edits, or replace it whole.
    Modify {
        path: String,
        edits: Vec<Edit>,
        content: Option<String>,
    },
    /// Show a directory tree.
    Tree { path: String },
    /// List one directory.
    ListPath { path: String },
    /// Create a directory.
    Mkdir { path: String },
    /// Create an empty file or update its time.
    Touch { path: String },
    /// Remove a file or directory.
    Rm { path: String },
    /// Move or rename.
    Mv { path: String, to: String },
    /// Regex search.
    Search {
        pattern: String,
        path: Option<String>,
    },
    /// Run a shell command.
    Run { command: String },
    /// Call a tool of an MCP server.
    Tool {
        server: String,
        tool: String,
        /// The arguments, a JSON object.
        arguments: serde_json::Map<String, Value>,
    },
    /// The plan is complete.
    Finish { message: String },
}

/// The actions of the plan contract, named once: their spelling, and what each does to the
/// project and for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `READ`
    Read,
    /// `WRITE`
    Write,
    /// `MODIFY`
    Modify,
    /// `TREE`
    Tree,
    /// `LIST_PATH`
    ListPath,
    /// `MKDIR`
    Mkdir,
    /// `TOUCH`
    Touch,
    /// `RM`
    Rm,
    /// `MV`
    Mv,
    /// `SEARCH`
    Search,
    /// `RUN`
    Run,
    /// `TOOL` (offered only when MCP tools are available)
    Tool,
    /// `FINISH`
    Finish,
}

impl Action {
    /// Every action, in the order the schema lists them.
    pub const ALL: [Action; 13] = [
        Action::Read,
        Action::Write,
        Action::Modify,
        Action::Tree,
        Action::ListPath,
        Action::Mkdir,
        Action::Touch,
        Action::Rm,
        Action::Mv,
        Action::Search,
        Action::Run,
        Action::Tool,
        Action::Finish,
    ];

    /// The name as the contract spells it.
    pub fn name(self) -> &'static str {
        match self {
            Action::Read => "READ",
            Action::Write => "WRITE",
            Action::Modify => "MODIFY",
            Action::Tree => "TREE",
            Action::ListPath => "LIST_PATH",
            Action::Mkdir => "MKDIR",
            Action::Touch => "TOUCH",
            Action::Rm => "RM",
            Action::Mv => "MV",
            Action::Search => "SEARCH",
            Action::Run => "RUN",
            Action::Tool => "TOOL",
            Action::Finish => "FINISH",
        }
    }

    /// The action a (normalised) name spells.
    pub fn from_name(name: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The actions every schema offers (TOOL only joins when tools are available).
    fn always_offered() -> Vec<&'static str> {
        Action::ALL
            .into_iter()
            .filter(|a| *a != Action::Tool)
            .map(Action::name)
            .collect()
    }

    /// Whether it can change the project (and so belongs in the plan's commit).
    pub fn mutates(self) -> bool {
        matches!(
            self,
            Action::Write
                | Action::Modify
                | Action::Mkdir
                | Action::Touch
                | Action::Rm
                | Action::Mv
                | Action::Run
        )
    }

    /// Whether it acts rather than looks: every action that can change the project, and TOOL,
    /// whose effects reach beyond what pai can see. A failed step of such an action that is
    /// not redone leaves the request undone (the turn's outcome, `agent/turn/outcome.rs`); a
    /// failed READ or SEARCH only tells the model something.
    pub fn acts(self) -> bool {
        self.mutates() || self == Action::Tool
    }

    /// Whether its output is something the model may want to see before planning on.
    pub fn observes(self) -> bool {
        matches!(
            self,
            Action::Read
                | Action::Tree
                | Action::ListPath
                | Action::Search
                | Action::Run
                | Action::Tool
        )
    }
}

impl Step {
    /// The step's action.
    pub fn kind(&self) -> Action {
        match self {
            Step::Read { .. } => Action::Read,
            Step::Write { .. } => Action::Write,
            Step::Modify { .. } => Action::Modify,
            Step::Tree { .. } => Action::Tree,
            Step::ListPath { .. } => Action::ListPath,
            Step::Mkdir { .. } => Action::Mkdir,
            Step::Touch { .. } => Action::Touch,
            Step::Rm { .. } => Action::Rm,
            Step::Mv { .. } => Action::Mv,
            Step::Search { .. } => Action::Search,
            Step::Run { .. } => Action::Run,
            Step::Tool { .. } => Action::Tool,
            Step::Finish { .. } => Action::Finish,
        }
    }

    /// The action's name as the contract spells it.
    pub fn action(&self) -> &'static str {
        self.kind().name()
    }

    /// What the step acts on, for one-line displays (`calculator.py`, `a.txt -> b.txt`).
    pub fn target(&self) -> String {
        match self {
            Step::Read { path, lines: None }
            | Step::Write { path, .. }
            | Step::Modify { path, .. }
            | Step::Tree { path }
            | Step::ListPath { path }
            | Step::Mkdir { path }
            | Step::Touch { path }
            | Step::Rm { path } => path.clone(),
            Step::Read {
                path,
                lines: Some(lines),
            } => format!("{path} (lines {lines})"),
            Step::Mv { path, to } => format!("{path} -> {to}"),
            Step::Search { pattern, path } => match path {
                Some(p) => format!("/{pattern}/ in {p}"),
                None => format!("/{pattern}/"),
            },
            Step::Run { command } => command.clone(),
            Step::Tool {
                server,
                tool,
                arguments,
            } => {
                let args = Value::Object(arguments.clone()).to_string();
                let shown: String = args.chars().take(TOOL_ARGS_SHOWN).collect();
                let more = if shown.len() < args.len() { "..." } else { "" };
                format!("{server}.{tool} {shown}{more}")
            }
            Step::Finish { message } => message.clone(),
        }
    }

    /// Whether the step can change the project (and so belongs in the plan's commit).
    pub fn mutates(&self) -> bool {
        self.kind().mutates()
    }

    /// Whether the step's output is something the model may want to see (READ, TREE, ...).
    pub fn observes(&self) -> bool {
        self.kind().observes()
    }

    /// Project paths the step will write or remove, known before it runs.
    pub fn written_paths(&self) -> Vec<&str> {
        match self {
            Step::Write { path, .. }
            | Step::Modify { path, .. }
            | Step::Touch { path }
            | Step::Rm { path } => {
                vec![path.as_str()]
            }
            Step::Mv { path, to } => vec![path.as_str(), to.as_str()],
            _ => Vec::new(),
        }
    }
}

/// A step as planned, with the model's explanation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedStep {
    /// The checked step.
    #[serde(flatten)]
    pub step: Step,
    /// Why (shown in the plan table).
    pub purpose: String,
    /// What a WRITE or MODIFY would change, computed before approval (`--json`: the fields
    /// `diff`, `added`, `removed`, or `fails`).
    #[serde(flatten)]
    pub preview: Option<StepPreview>,
}

/// A WRITE's or MODIFY's change computed before approval, by applying it in memory with the
/// matcher the real run uses; nothing is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepPreview {
    /// The unified diff; `None` when the step would fail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// Why the step would fail (an edit whose search is not found, say), as it would say it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fails: Option<String>,
    /// The file holds the user's uncommitted edits, which history commits first as a
    /// snapshot (the session branch then includes them; undo gives them back).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub snapshot: bool,
}

/// A whole reply, validated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// Chat or task.
    pub intent: Intent,
    /// The acknowledgment, or the chat answer.
    pub reply: String,
    /// The analysis.
    pub analysis: Analysis,
    /// The steps, in order.
    pub steps: Vec<PlannedStep>,
    /// Run these steps and send the results back for another phase.
    pub observe: bool,
    /// Suggestions for what to do next.
    pub next_steps: Vec<String>,
}

/// Why a reply is not an acceptable plan: said in words the model can act on when it is asked
/// to correct its reply, and the user understands when the turn ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError(pub String);

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlanError {}

/// The schema when MCP tools are available: [`schema`] plus the TOOL action and its fields.
/// `arguments` is declared as a string holding the JSON object, because a free-form object
/// cannot be declared for every provider (Gemini refuses objects without properties, OpenAI's
/// strict mode closes every object); the parser takes a string or an object. Without tools
/// the schema stays exactly [`schema`], so nothing changes for sessions without MCP.
pub fn schema_with_tools() -> Value {
    let mut value = schema();
    if let Some(step) = value.pointer_mut("/properties/steps/items/properties")
        && let Some(props) = step.as_object_mut()
    {
        if let Some(Value::Array(actions)) = props.get_mut("action").and_then(|a| a.get_mut("enum"))
        {
            actions.push(Value::String("TOOL".into()));
        }
        let string = json!({"type": "string"});
        props.insert("server".into(), string.clone());
        props.insert("tool".into(), string);
        props.insert(
            "arguments".into(),
            json!({"type": "string", "description": "TOOL: the arguments as JSON object text"}),
        );
    }
    value
}

/// The JSON schema of the reply object, sent with every call. Kept small on purpose: it is
/// paid for on every call, and the system prompt explains the rest.
pub fn schema() -> Value {
    let string = json!({"type": "string"});
    let strings = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "object",
        "properties": {
            "intent": {"type": "string", "enum": ["chat", "task"]},
            "reply": string,
            "analysis": {
                "type": "object",
                "properties": {
                    "user_intent": string,
                    "files_to_read": strings,
                    "files_to_create": strings,
                    "files_to_modify": strings,
                    "risks": string,
                    "success_criteria": strings,
                    "complexity": {"type": "string", "enum": ["simple", "moderate", "complex"]}
                }
            },
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "action": {"type": "string", "enum": Action::always_offered()},
                        "path": string,
                        "to": string,
                        "content": string,
                        "edits": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {"search": string, "replace": string},
                                "required": ["search", "replace"]
                            }
                        },
                        "pattern": string,
                        "lines": string,
                        "command": string,
                        "message": string,
                        "purpose": string
                    },
                    "required": ["action"]
                }
            },
            "observe": {"type": "boolean"},
            "next_steps": strings
        },
        "required": ["intent", "reply", "steps", "observe"]
    })
}

/// What the validator needs to know about the project: whether a path exists now. Kept
/// abstract so validation is testable without files and the workspace stays the only gate.
pub trait PathProbe {
    /// Whether `path` names an existing file (`Some(true)`), directory (`Some(false)`), or
    /// nothing (`None`). Paths the gate refuses report `None`: the refusal comes when the step
    /// runs, with the gate's own message.
    fn probe(&self, path: &str) -> Option<bool>;

    /// Whether a TOOL step may call `server.tool`; the reason, in words the model can act on,
    /// when not. Without MCP servers no tool exists.
    fn tool(&self, server: &str, tool: &str) -> Result<(), String> {
        let _ = (server, tool);
        Err("no MCP tools are available in this session; do not use TOOL".into())
    }
}

/// Parse and validate a reply. Every step is checked before anything runs: unknown actions,
/// missing or mistyped arguments, file content posing as an action, WRITE over an existing
/// file, MODIFY of a missing one, oversized content.
pub fn parse_plan(value: &Value, probe: &dyn PathProbe) -> Result<Plan, PlanError> {
    let obj = value.as_object().ok_or_else(|| {
        PlanError(format!(
            "the reply must be a JSON object, not {}",
            kind(value)
        ))
    })?;
    // Checked one field at a time, in a fixed order: the first problem found is the one
    // reported.
    let intent = parse_intent(obj.get("intent"))?;
    let reply = opt_string(obj.get("reply"), "reply")?.unwrap_or_default();
    let analysis = parse_analysis(obj.get("analysis"))?;
    let observe = parse_observe(obj.get("observe"))?;
    let next_steps = string_list(obj.get("next_steps"), "next_steps")?;
    let raw_steps = raw_steps(obj.get("steps"))?;
    if intent == Intent::Chat {
        if reply.trim().is_empty() {
            return Err(PlanError("a chat reply needs a non-empty `reply`".into()));
        }
        // Steps under a chat intent would be dropped unseen: a request for a change must not
        // end as an answer while the reply itself holds the change.
        if !raw_steps.is_empty() {
            return Err(PlanError(format!(
                "a chat reply carries {} step(s): use intent \"task\" to carry them out, or leave `steps` empty",
                raw_steps.len()
            )));
        }
        return Ok(Plan {
            intent,
            reply,
            analysis,
            steps: Vec::new(),
            observe: false,
            next_steps,
        });
    }
    let steps = parse_steps(raw_steps, probe)?;
    if steps.is_empty() && !observe {
        return Err(PlanError(
            "a task reply needs at least one step (or use intent \"chat\")".into(),
        ));
    }
    Ok(Plan {
        intent,
        reply,
        analysis,
        steps,
        observe,
        next_steps,
    })
}

/// `intent`: required, and only "chat" or "task" (in any case), since it decides whether
/// anything runs at all.
fn parse_intent(v: Option<&Value>) -> Result<Intent, PlanError> {
    match v {
        Some(Value::String(s)) if s.eq_ignore_ascii_case("chat") => Ok(Intent::Chat),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("task") => Ok(Intent::Task),
        Some(Value::String(s)) => Err(PlanError(format!(
            "`intent` must be \"chat\" or \"task\", not {s:?}"
        ))),
        Some(other) => Err(PlanError(format!(
            "`intent` must be a string, not {}",
            kind(other)
        ))),
        None => Err(PlanError("the reply has no `intent`".into())),
    }
}

/// `analysis`: optional and only informative, so read leniently (see [`lenient_analysis`]);
/// only a shape that cannot be read at all is refused.
fn parse_analysis(v: Option<&Value>) -> Result<Analysis, PlanError> {
    match v {
        None | Some(Value::Null) => Ok(Analysis::default()),
        Some(v) => serde_json::from_value(lenient_analysis(v))
            .map_err(|e| PlanError(format!("`analysis` is malformed: {e}"))),
    }
}

/// `observe`: absent means false; anything but a boolean is refused rather than guessed,
/// since it decides whether the results go back to the model.
fn parse_observe(v: Option<&Value>) -> Result<bool, PlanError> {
    match v {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(PlanError(format!(
            "`observe` must be true or false, not {}",
            kind(other)
        ))),
    }
}

/// The `steps` array, not yet parsed: absent means none, and more than [`MAX_STEPS`] is
/// refused before any step is looked at.
fn raw_steps(v: Option<&Value>) -> Result<&[Value], PlanError> {
    let raw_steps: &[Value] = match v {
        None | Some(Value::Null) => &[],
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(PlanError(format!(
                "`steps` must be an array, not {}",
                kind(other)
            )));
        }
    };
    if raw_steps.len() > MAX_STEPS {
        return Err(PlanError(format!(
            "the plan has {} steps; at most {MAX_STEPS} are allowed: split the work",
            raw_steps.len()
        )));
    }
    Ok(raw_steps)
}

/// Every step parsed and checked against the project as the earlier steps will have left it,
/// in order; the first bad step refuses the whole plan, named by its number.
fn parse_steps(raw_steps: &[Value], probe: &dyn PathProbe) -> Result<Vec<PlannedStep>, PlanError> {
    let mut steps = Vec::with_capacity(raw_steps.len());
    let mut sim = Simulation::default();
    for (i, raw) in raw_steps.iter().enumerate() {
        let n = i + 1;
        let step = parse_step(raw).map_err(|e| PlanError(format!("step {n}: {e}")))?;
        sim.apply(&step.step, probe).map_err(|e| {
            PlanError(format!(
                "step {n} ({} {}): {e}",
                step.step.action(),
                step.step.target()
            ))
        })?;
        steps.push(step);
    }
    Ok(steps)
}

/// Tolerate `complexity` in any case and string lists given as a single string.
fn lenient_analysis(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(obj) = v.as_object_mut() {
        if let Some(Value::String(c)) = obj.get("complexity") {
            let lower = c.to_ascii_lowercase();
            let ok = ["simple", "moderate", "complex"].contains(&lower.as_str());
            obj.insert(
                "complexity".into(),
                Value::String(if ok { lower } else { "simple".into() }),
            );
        }
        for field in [
            "files_to_read",
            "files_to_create",
            "files_to_modify",
            "success_criteria",
        ] {
            if let Some(Value::String(s)) = obj.get(field) {
                let s = s.clone();
                obj.insert(field.into(), json!([s]));
            }
        }
        if let Some(r) = obj.get("risks")
            && !r.is_string()
        {
            let text = r.to_string();
            obj.insert("risks".into(), Value::String(text));
        }
    }
    v
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn opt_string(v: Option<&Value>, field: &str) -> Result<Option<String>, PlanError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(PlanError(format!(
            "`{field}` must be a string, not {}",
            kind(other)
        ))),
    }
}

fn string_list(v: Option<&Value>, field: &str) -> Result<Vec<String>, PlanError> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.clone()),
                other => Err(PlanError(format!(
                    "`{field}` must hold strings, found {}",
                    kind(other)
                ))),
            })
            .collect(),
        Some(other) => Err(PlanError(format!(
            "`{field}` must be an array of strings, not {}",
            kind(other)
        ))),
    }
}

fn required(
    obj: &serde_json::Map<String, Value>,
    field: &str,
    action: &str,
) -> Result<String, String> {
    match obj.get(field) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            Err(format!("{action} needs a non-empty `{field}`"))
        }
        Some(other) => Err(format!(
            "{action}: `{field}` must be a string, not {}",
            kind(other)
        )),
    }
}

fn optional(
    obj: &serde_json::Map<String, Value>,
    field: &str,
    action: &str,
) -> Result<Option<String>, String> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "{action}: `{field}` must be a string, not {}",
            kind(other)
        )),
    }
}

/// A READ's optional `lines`: `"120-180"`, `"120-"` (to the end) or `[120, 180]`. A lone
/// number is refused: it could mean one line or everything from it.
fn line_range(
    obj: &serde_json::Map<String, Value>,
    action: &str,
) -> Result<Option<LineRange>, String> {
    let bad = || {
        format!(
            "{action}: `lines` must be the first and last line to read, numbered from 1, like \"120-180\" (or \"120-\" for the rest of the file)"
        )
    };
    let number = |v: &str| v.trim().parse::<usize>().ok().filter(|&n| n > 0);
    let (first, last) = match obj.get("lines") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
        Some(Value::String(s)) => {
            let s = s.trim();
            let (a, b) = ["..", "-", "\u{2013}", ":"]
                .iter()
                .find_map(|sep| s.split_once(sep))
                .ok_or_else(bad)?;
            let last = if b.trim().is_empty() {
                None
            } else {
                Some(number(b).ok_or_else(bad)?)
            };
            (number(a).ok_or_else(bad)?, last)
        }
        Some(Value::Array(pair)) => match pair.as_slice() {
            [a, b] => {
                let n = |v: &Value| {
                    v.as_u64()
                        .and_then(|n| usize::try_from(n).ok())
                        .filter(|&n| n > 0)
                };
                (n(a).ok_or_else(bad)?, Some(n(b).ok_or_else(bad)?))
            }
            _ => return Err(bad()),
        },
        Some(_) => return Err(bad()),
    };
    if last.is_some_and(|l| l < first) {
        return Err(format!(
            "{action}: `lines` ends before it starts ({first}-{}); give the first line, then the last",
            last.unwrap_or(first)
        ));
    }
    Ok(Some(LineRange { first, last }))
}

/// What one step may write: `bytes` of `what` (the content, the replacements) for `path`.
fn check_size(bytes: usize, what: &str, path: &str) -> Result<(), String> {
    if bytes > MAX_CONTENT_BYTES {
        return Err(format!(
            "{what} for {path}: {} KB; at most {} KB may be written in one step: split the file or the change",
            bytes / 1024,
            MAX_CONTENT_BYTES / 1024
        ));
    }
    Ok(())
}

/// A path argument (`field`) that is really file content (a model pasting code where a path
/// belongs).
fn check_path(value: &str, field: &str, action: &str) -> Result<(), String> {
    if value.contains('\n') || value.len() > 4096 {
        return Err(format!(
            "{action}: `{field}` looks like file content, not a path"
        ));
    }
    Ok(())
}

/// One step of the reply, its arguments checked for presence, type and size. Whether it fits
/// the project (a WRITE over an existing file, ...) is [`Simulation`]'s part.
fn parse_step(raw: &Value) -> Result<PlannedStep, String> {
    let obj = raw
        .as_object()
        .ok_or_else(|| format!("each step must be an object, not {}", kind(raw)))?;
    let (named, action) = parse_action(obj)?;
    let purpose = optional(obj, "purpose", &action)?.unwrap_or_default();
    let step = match named {
        Action::Read => Step::Read {
            path: required(obj, "path", &action)?,
            lines: line_range(obj, &action)?,
        },
        Action::Write => write_step(obj, &action)?,
        Action::Modify => modify_step(obj, &action)?,
        Action::Tree => Step::Tree {
            path: path_or_dot(obj, &action)?,
        },
        Action::ListPath => Step::ListPath {
            path: path_or_dot(obj, &action)?,
        },
        Action::Mkdir => Step::Mkdir {
            path: required(obj, "path", &action)?,
        },
        Action::Touch => Step::Touch {
            path: required(obj, "path", &action)?,
        },
        Action::Rm => Step::Rm {
            path: required(obj, "path", &action)?,
        },
        Action::Mv => mv_step(obj, &action)?,
        Action::Search => Step::Search {
            pattern: required(obj, "pattern", &action)?,
            path: optional(obj, "path", &action)?.filter(|p| !p.trim().is_empty()),
        },
        Action::Run => run_step(obj, &action)?,
        Action::Tool => tool_step(obj, &action)?,
        Action::Finish => Step::Finish {
            message: optional(obj, "message", &action)?.unwrap_or_default(),
        },
    };
    if let Step::Read { path, .. }
    | Step::Write { path, .. }
    | Step::Modify { path, .. }
    | Step::Mkdir { path }
    | Step::Touch { path }
    | Step::Rm { path }
    | Step::Mv { path, .. } = &step
    {
        check_path(path, "path", &action)?;
    }
    Ok(PlannedStep {
        step,
        purpose,
        preview: None,
    })
}

/// The step's action, and its name normalised (`list path` is `LIST_PATH`) for the messages
/// about its arguments. Something that is not an action at all, such as code pasted into the
/// field, is told apart from a misspelt action, since the model corrects each differently.
fn parse_action(obj: &serde_json::Map<String, Value>) -> Result<(Action, String), String> {
    let action_raw = match obj.get("action") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(format!("`action` must be a string, not {}", kind(other))),
        None => return Err("the step has no `action`".into()),
    };
    let action = action_raw
        .trim()
        .to_ascii_uppercase()
        .replace([' ', '-'], "_");
    let Some(named) = Action::from_name(&action) else {
        let shown: String = action_raw.chars().take(60).collect();
        if action_raw.contains('\n')
            || action_raw.len() > 40
            || action_raw.contains('(')
            || action_raw.contains('=')
        {
            return Err(format!(
                "`action` holds what looks like file content or a command (`{}`), not an action; put content in `content` and commands in a RUN step",
                shown.lines().next().unwrap_or_default()
            ));
        }
        return Err(format!(
            "unknown action `{shown}`; expected one of {}",
            Action::always_offered().join(", ")
        ));
    };
    Ok((named, action))
}

/// The `path` of TREE and LIST_PATH, where leaving it out (or blank) means the project root.
fn path_or_dot(obj: &serde_json::Map<String, Value>, action: &str) -> Result<String, String> {
    Ok(optional(obj, "path", action)?
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| ".".into()))
}

/// WRITE: `content` is required (an empty string is a valid empty file) and bounded in size.
fn write_step(obj: &serde_json::Map<String, Value>, action: &str) -> Result<Step, String> {
    let path = required(obj, "path", action)?;
    let content = match obj.get("content") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => {
            return Err(format!("WRITE {path} needs `content` (the whole file)"));
        }
        Some(other) => {
            return Err(format!(
                "WRITE {path}: `content` must be a string, not {}",
                kind(other)
            ));
        }
    };
    check_size(content.len(), "the content", &path)?;
    Ok(Step::Write { path, content })
}

/// MODIFY: edits or a whole new content (at least one), no edit with an empty `search` (it
/// would match anywhere), and neither the content nor the replacements together over the size
/// bound.
fn modify_step(obj: &serde_json::Map<String, Value>, action: &str) -> Result<Step, String> {
    let path = required(obj, "path", action)?;
    let content = optional(obj, "content", action)?;
    let edits: Vec<Edit> = match obj.get("edits") {
        None | Some(Value::Null) => Vec::new(),
        Some(v @ Value::Array(_)) => serde_json::from_value(v.clone()).map_err(|_| {
            format!(
                "MODIFY {path}: each edit must be {{\"search\": \"...\", \"replace\": \"...\"}}"
            )
        })?,
        Some(other) => {
            return Err(format!(
                "MODIFY {path}: `edits` must be an array, not {}",
                kind(other)
            ));
        }
    };
    if edits.is_empty() && content.is_none() {
        return Err(format!(
            "MODIFY {path} needs `edits` (search/replace pairs) or `content` (the whole new file)"
        ));
    }
    if let Some(i) = edits.iter().position(|e| e.search.is_empty()) {
        return Err(format!(
            "MODIFY {path}: edit {} has an empty `search`; copy the exact text to replace",
            i + 1
        ));
    }
    if let Some(c) = &content {
        check_size(c.len(), "the content", &path)?;
    }
    let total: usize = edits.iter().map(|e| e.replace.len()).sum();
    check_size(total, "the replacements together", &path)?;
    Ok(Step::Modify {
        path,
        edits,
        content,
    })
}

/// MV: the destination is `to` (or `destination`, which models also write), never blank,
/// and held to the same path sanity check as `path`.
fn mv_step(obj: &serde_json::Map<String, Value>, action: &str) -> Result<Step, String> {
    let path = required(obj, "path", action)?;
    let to = match optional(obj, "to", action)?.or(optional(obj, "destination", action)?) {
        Some(to) if !to.trim().is_empty() => to,
        _ => return Err(format!("MV {path} needs `to` (the destination)")),
    };
    check_path(&to, "to", action)?;
    Ok(Step::Mv { path, to })
}

/// RUN: a command longer than 8 KB is refused: it is a script, and belongs in a file.
fn run_step(obj: &serde_json::Map<String, Value>, action: &str) -> Result<Step, String> {
    let command = required(obj, "command", action)?;
    if command.len() > 8192 {
        return Err(
            "RUN: the command is longer than 8 KB; write a script file and run that".into(),
        );
    }
    Ok(Step::Run { command })
}

/// TOOL: the server and tool named, and the arguments a JSON object (see [`tool_arguments`])
/// of bounded size. Whether the tool exists is [`PathProbe::tool`]'s part.
fn tool_step(obj: &serde_json::Map<String, Value>, action: &str) -> Result<Step, String> {
    let server = required(obj, "server", action)?;
    let tool = required(obj, "tool", action)?;
    let arguments = tool_arguments(obj.get("arguments"), &server, &tool)?;
    if Value::Object(arguments.clone()).to_string().len() > MAX_TOOL_ARGS_BYTES {
        return Err(format!(
            "TOOL {server}.{tool}: the arguments are larger than {} KB",
            MAX_TOOL_ARGS_BYTES / 1024
        ));
    }
    Ok(Step::Tool {
        server,
        tool,
        arguments,
    })
}

/// A TOOL step's arguments: an object, or the text of one (the schema declares a string, see
/// [`schema_with_tools`]); absent or blank means none.
fn tool_arguments(
    v: Option<&Value>,
    server: &str,
    tool: &str,
) -> Result<serde_json::Map<String, Value>, String> {
    match v {
        None | Some(Value::Null) => Ok(serde_json::Map::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(serde_json::Map::new()),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err(format!(
                "TOOL {server}.{tool}: `arguments` must be a JSON object (or its text)"
            )),
        },
        Some(other) => Err(format!(
            "TOOL {server}.{tool}: `arguments` must be a JSON object, not {}",
            kind(other)
        )),
    }
}

/// Tracks what the plan's earlier steps create and remove, so WRITE-after-RM and
/// MODIFY-after-WRITE in one plan validate the way they will run.
#[derive(Default)]
struct Simulation {
    created: HashSet<String>,
    removed: HashSet<String>,
}

fn normal(path: &str) -> String {
    let trimmed = path.trim().trim_start_matches("./").trim_end_matches('/');
    if trimmed.is_empty() {
        ".".into()
    } else {
        trimmed.to_string()
    }
}

impl Simulation {
    fn exists(&self, path: &str, probe: &dyn PathProbe) -> Option<bool> {
        let key = normal(path);
        if self.created.contains(&key) {
            return Some(true);
        }
        if self.removed.contains(&key) {
            return None;
        }
        probe.probe(&key)
    }

    fn apply(&mut self, step: &Step, probe: &dyn PathProbe) -> Result<(), String> {
        match step {
            Step::Write { path, .. } => {
                match self.exists(path, probe) {
                    Some(true) => {
                        return Err(format!("{path} already exists; use MODIFY to change it"));
                    }
                    Some(false) => return Err(format!("{path} is a directory")),
                    None => {}
                }
                self.created.insert(normal(path));
            }
            Step::Modify { path, .. } => match self.exists(path, probe) {
                Some(true) => {}
                Some(false) => return Err(format!("{path} is a directory")),
                None => return Err(format!("{path} does not exist; use WRITE to create it")),
            },
            Step::Touch { path } => {
                self.created.insert(normal(path));
            }
            Step::Rm { path } => {
                self.created.remove(&normal(path));
                self.removed.insert(normal(path));
            }
            Step::Mv { path, to } => {
                self.created.remove(&normal(path));
                self.removed.insert(normal(path));
                self.created.insert(normal(to));
            }
            Step::Tool { server, tool, .. } => probe.tool(server, tool)?,
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size refused is the size the model sent, whichever field carried it.
    #[test]
    fn oversized_writes_are_refused_with_their_real_size() {
        let big = "x".repeat(600 * 1024);
        let half = "y".repeat(300 * 1024);
        let steps = [
            (
                json!({"action": "WRITE", "path": "a.py", "content": big}),
                "the content for a.py: 600 KB",
            ),
            (
                json!({"action": "MODIFY", "path": "a.py", "edits": [
                    {"search": "a", "replace": half},
                    {"search": "b", "replace": half},
                ]}),
                "the replacements together for a.py: 600 KB",
            ),
            (
                json!({"action": "MV", "path": "a.py", "to": "b\nc"}),
                "MV: `to` looks like file content",
            ),
        ];
        for (step, expected) in steps {
            let err = parse_step(&step).err().unwrap_or_default();
            assert!(err.contains(expected), "{err}");
        }
    }

    struct Files(&'static [&'static str]);

    impl PathProbe for Files {
        fn probe(&self, path: &str) -> Option<bool> {
            self.0.contains(&path).then_some(true)
        }
    }

    fn task(steps: Value) -> Value {
        json!({"intent": "task", "reply": "ok", "steps": steps, "observe": false})
    }

    #[test]
    fn a_valid_plan_parses() {
        let v = task(json!([
            {"action": "WRITE", "path": "calc.py", "content": "print(1)\n", "purpose": "script"},
            {"action": "MODIFY", "path": "calc.py", "edits": [{"search": "1", "replace": "2"}]},
            {"action": "run", "command": "python3 -m py_compile calc.py"},
            {"action": "FINISH", "message": "done"}
        ]));
        let plan = parse_plan(&v, &Files(&[])).unwrap();
        assert_eq!(plan.steps.len(), 4);
        assert_eq!(plan.steps[0].purpose, "script");
        assert!(matches!(plan.steps[2].step, Step::Run { .. }));
    }

    #[test]
    fn rejects_what_would_half_apply() {
        let probe = Files(&["app.py"]);
        let cases = [
            (
                task(json!([{"action": "WRITE", "path": "app.py", "content": "x"}])),
                "already exists",
            ),
            (
                task(
                    json!([{"action": "MODIFY", "path": "nope.py", "edits": [{"search": "a", "replace": "b"}]}]),
                ),
                "does not exist",
            ),
            (
                task(json!([{"action": "DELETE_ALL", "path": "x"}])),
                "unknown action",
            ),
            (
                task(json!([{"action": "import os\nos.system('x')"}])),
                "looks like file content",
            ),
            (
                task(json!([{"action": "WRITE", "content": "x"}])),
                "non-empty `path`",
            ),
            (
                task(json!([{"action": "WRITE", "path": "a.py"}])),
                "needs `content`",
            ),
            (
                task(json!([{"action": "WRITE", "path": "a.py", "content": 5}])),
                "must be a string",
            ),
            (
                task(json!([{"action": "MV", "path": "app.py"}])),
                "needs `to`",
            ),
            (
                task(json!([{"action": "MODIFY", "path": "app.py"}])),
                "needs `edits`",
            ),
            (
                task(
                    json!([{"action": "MODIFY", "path": "app.py", "edits": [{"search": "", "replace": "x"}]}]),
                ),
                "empty `search`",
            ),
            (task(json!([{"action": "RUN"}])), "non-empty `command`"),
            (
                task(
                    json!([{"action": "WRITE", "path": "big.txt", "content": "x".repeat(2 * 1024 * 1024)}]),
                ),
                "at most",
            ),
            (task(json!("WRITE a.py")), "`steps` must be an array"),
            (task(json!([42])), "must be an object"),
            (
                json!({"intent": "maybe", "steps": []}),
                "\"chat\" or \"task\"",
            ),
            (json!({"reply": "x"}), "no `intent`"),
            (json!([1, 2]), "JSON object"),
            (
                json!({"intent": "task", "reply": "x", "steps": []}),
                "at least one step",
            ),
            (json!({"intent": "chat", "reply": ""}), "non-empty `reply`"),
            (
                json!({"intent": "task", "reply": "x", "observe": "yes", "steps": []}),
                "`observe` must be",
            ),
        ];
        for (value, expected) in cases {
            let err = parse_plan(&value, &probe).expect_err(expected);
            assert!(err.0.contains(expected), "expected `{expected}` in `{err}`");
        }
    }

    #[test]
    fn earlier_steps_count_in_validation() {
        let probe = Files(&["old.txt"]);
        let v = task(json!([
            {"action": "RM", "path": "old.txt"},
            {"action": "WRITE", "path": "old.txt", "content": "new"},
            {"action": "WRITE", "path": "n.txt", "content": "a"},
            {"action": "MODIFY", "path": "n.txt", "edits": [{"search": "a", "replace": "b"}]}
        ]));
        assert!(parse_plan(&v, &probe).is_ok());
    }

    struct WithTools;

    impl PathProbe for WithTools {
        fn probe(&self, _path: &str) -> Option<bool> {
            None
        }

        fn tool(&self, server: &str, tool: &str) -> Result<(), String> {
            if server == "t" && tool == "echo" {
                Ok(())
            } else {
                Err(format!("no tool {server}.{tool}"))
            }
        }
    }

    #[test]
    fn tool_steps_parse_and_name_only_available_tools() {
        let v = task(json!([
            {"action": "TOOL", "server": "t", "tool": "echo", "arguments": {"text": "hi"}},
            {"action": "TOOL", "server": "t", "tool": "echo", "arguments": "{\"text\": \"as text\"}"},
            {"action": "TOOL", "server": "t", "tool": "echo"}
        ]));
        let plan = parse_plan(&v, &WithTools).unwrap();
        let Step::Tool { arguments, .. } = &plan.steps[1].step else {
            panic!("{:?}", plan.steps[1]);
        };
        assert_eq!(arguments["text"], "as text");
        assert!(plan.steps[0].step.observes() && !plan.steps[0].step.mutates());
        assert_eq!(plan.steps[0].step.target(), "t.echo {\"text\":\"hi\"}");

        for (steps, expected) in [
            (
                json!([{"action": "TOOL", "server": "t", "tool": "rm"}]),
                "no tool t.rm",
            ),
            (
                json!([{"action": "TOOL", "tool": "echo"}]),
                "non-empty `server`",
            ),
            (
                json!([{"action": "TOOL", "server": "t", "tool": "echo", "arguments": [1]}]),
                "must be a JSON object",
            ),
            (
                json!([{"action": "TOOL", "server": "t", "tool": "echo", "arguments": "[1]"}]),
                "must be a JSON object",
            ),
        ] {
            let err = parse_plan(&task(steps), &WithTools).unwrap_err();
            assert!(err.0.contains(expected), "{err}");
        }
        let err = parse_plan(
            &task(json!([{"action": "TOOL", "server": "t", "tool": "echo"}])),
            &Files(&[]),
        )
        .unwrap_err();
        assert!(err.0.contains("no MCP tools are available"), "{err}");
    }

    #[test]
    fn the_tool_schema_extends_the_plain_one() {
        let plain = schema();
        let with = schema_with_tools();
        assert!(!plain.to_string().contains("TOOL"));
        let props = &with["properties"]["steps"]["items"]["properties"];
        assert_eq!(props["arguments"]["type"], "string");
        assert!(
            props["action"]["enum"]
                .as_array()
                .unwrap()
                .contains(&json!("TOOL"))
        );
        let mut back = with.clone();
        let p = back["properties"]["steps"]["items"]["properties"]
            .as_object_mut()
            .unwrap();
        for k in ["server", "tool", "arguments"] {
            p.remove(k);
        }
        p["action"]["enum"].as_array_mut().unwrap().pop();
        assert_eq!(back.to_string(), plain.to_string());
    }

    #[test]
    fn the_schema_lists_every_action() {
        let s = schema().to_string();
        for a in Action::ALL.into_iter().filter(|a| *a != Action::Tool) {
            assert!(s.contains(a.name()));
        }
        assert!(schema_with_tools().to_string().contains("TOOL"));
    }

    /// A READ's `lines` in every unambiguous spelling; a lone number, a reversed or a zero
    /// range, and anything that is not a range are refused with the expected form.
    #[test]
    fn read_lines_accepts_ranges_and_refuses_what_is_ambiguous() {
        let read = |lines: Value| {
            parse_step(&json!({"action": "READ", "path": "a.py", "lines": lines})).map(|p| p.step)
        };
        let range = |first, last| Step::Read {
            path: "a.py".into(),
            lines: Some(LineRange { first, last }),
        };
        for (given, want) in [
            (json!("120-180"), range(120, Some(180))),
            (json!(" 120 - 180 "), range(120, Some(180))),
            (json!("120..180"), range(120, Some(180))),
            (json!("120\u{2013}180"), range(120, Some(180))),
            (json!("120:180"), range(120, Some(180))),
            (json!("7-7"), range(7, Some(7))),
            (json!("120-"), range(120, None)),
            (json!([120, 180]), range(120, Some(180))),
        ] {
            assert_eq!(read(given.clone()), Ok(want), "{given}");
        }
        for none in [json!(null), json!("")] {
            assert_eq!(
                read(none),
                Ok(Step::Read {
                    path: "a.py".into(),
                    lines: None
                })
            );
        }
        for bad in [
            json!("120"),
            json!(120),
            json!("0-5"),
            json!("-5"),
            json!("a-b"),
            json!([1]),
            json!([1, 2, 3]),
            json!([0, 4]),
            json!({"start": 1}),
        ] {
            let e = read(bad.clone()).unwrap_err();
            assert!(e.contains("like \"120-180\""), "{bad}: {e}");
        }
        let e = read(json!("180-120")).unwrap_err();
        assert!(e.contains("ends before it starts"), "{e}");
        let step = range(3, Some(9));
        assert_eq!(step.target(), "a.py (lines 3-9)");
        assert_eq!(
            serde_json::to_value(&step).unwrap(),
            json!({"action": "READ", "path": "a.py", "lines": "3-9"})
        );
        assert_eq!(range(3, None).target(), "a.py (lines 3-)");
    }
}

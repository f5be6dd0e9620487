//! The command line (SPEC section 1): argument definitions and dispatch only. Every flag is
//! defined once here; help text comes from the doc comments, and completions from the same
//! definitions.

mod assemble;
mod commands;
mod hub;
mod worktree;

use clap::{Args, CommandFactory, Parser, Subcommand};

use crate::config::{Env, Flags, Settings};
use crate::error::Error;
use crate::llm::ProviderKind;
use crate::ui::output::Output;
use crate::ui::stream::{self, Stream};
use assemble::Resume;
use commands::{
    config as config_cmd, discard, gc, log, map as map_cmd, mcp as mcp_cmd, redo, run as run_cmd,
    session as session_cmd, sessions, undo,
};

/// pai: a fast, frugal terminal coding agent that works through a guarded workspace and records
/// every plan it carries out as one git commit.
#[derive(Debug, Parser)]
#[command(name = "pai", version, about, long_about = None, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    session: SessionArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start an interactive session in the current directory (the same as `pai`).
    Auto(SessionArgs),
    /// Carry out one request, then exit (it asks for approval at a terminal; without one,
    /// pass --yes, or it only shows the plan).
    Run(RunArgs),
    /// Manage API keys and show the effective settings.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Roll back the last plan of the current session branch (or of SESSION's worktree).
    Undo {
        /// A worktree session (its id or name); default: the session where you are.
        session: Option<String>,
        /// Undo even if files changed since the plan; their current state is saved first.
        #[arg(long)]
        force: bool,
    },
    /// Re-apply the plan most recently undone (here, or in SESSION's worktree).
    Redo {
        /// A worktree session (its id or name); default: the session where you are.
        session: Option<String>,
    },
    /// List the project's worktree sessions: branch, worktree, plans, running or finished,
    /// commits ahead of and behind the base, whether each merges cleanly, and which other
    /// sessions it conflicts with. pai never merges: it prints the `git merge` command.
    Sessions {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// End the session without keeping its work: undo every plan (your own edits come back),
    /// put HEAD back where the session started, keep the branch under refs/pai/discarded/.
    Discard {
        /// The session (a worktree session, or the one HEAD is on); default: the session
        /// where you are.
        session: Option<String>,
        /// Undo even if files changed since a plan; their current state is saved first.
        #[arg(long)]
        force: bool,
    },
    /// Show the repository map the first call of a request would carry: the ranked files,
    /// each with its score and why, then the map itself.
    Map {
        /// The request, as you would type it.
        request: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Also say why each file's text is shown as it is (whole, or which definitions).
        #[arg(long)]
        explain: bool,
    },
    /// List the agent's plans as commits, newest first.
    Log {
        /// Only this session (e.g. 20261122_101500).
        session: Option<String>,
        /// Show each plan's diff.
        #[arg(long)]
        patch: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Continue a session of this project: the same branch, the memory of its last turns.
    /// Without SESSION, list the sessions.
    Resume {
        /// The session to continue (e.g. 20261122_101500); omit to list them.
        session: Option<String>,
        #[command(flatten)]
        args: ResumeArgs,
    },
    /// Manage the MCP servers whose tools plans may call.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Prune what pai keeps only for redo and for discarded sessions (refs/pai/undone/*,
    /// refs/pai/discarded/*) and session logs, once older than `history_days` in config.toml
    /// (default 30); never anything still on a branch. A short pass also runs when a session
    /// starts.
    Gc {
        /// Prune what is older than this many days instead of the setting.
        #[arg(long, value_name = "N")]
        days: Option<u32>,
    },
    /// Print a shell completion script.
    ///
    /// Install it where your shell looks (the folder may not exist yet), e.g. for bash:
    /// `mkdir -p ~/.local/share/bash-completion/completions && pai completions bash >
    /// ~/.local/share/bash-completion/completions/pai`; for zsh: `mkdir -p ~/.zfunc && pai
    /// completions zsh > ~/.zfunc/_pai` with `fpath+=~/.zfunc` before `compinit` in
    /// ~/.zshrc; for fish: `mkdir -p ~/.config/fish/completions && pai completions fish >
    /// ~/.config/fish/completions/pai.fish`.
    Completions {
        /// The shell to generate for.
        shell: clap_complete::Shell,
    },
}

/// Settings for talking to the model.
#[derive(Debug, Clone, Default, Args)]
pub struct ModelArgs {
    /// Model to use (default: gemini-2.5-flash-lite for Gemini).
    #[arg(long, value_name = "M")]
    model: Option<String>,
    /// Sampling temperature, clamped to 0.0–2.0 (default 0.3).
    #[arg(long, value_name = "T", allow_negative_numbers = true)]
    temperature: Option<f32>,
    /// Provider: gemini, openai (any OpenAI-compatible server) or anthropic.
    #[arg(long, value_name = "P", value_parser = parse_provider)]
    provider: Option<ProviderKind>,
    /// Replace the provider's origin (e.g. http://localhost:11434/v1 for Ollama).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// How replies' JSON shape is asked for: auto (found per server and model, the default),
    /// json_schema, json_object+schema, json_object or prompt.
    #[arg(long, value_name = "MODE")]
    structured_output: Option<String>,
}

/// Flags of a session (`pai`, `pai auto`, `pai run`).
#[derive(Debug, Clone, Default, Args)]
pub struct SessionArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Approve plans without asking (RUN commands still ask unless --allow-run).
    #[arg(long, short = 'y')]
    yes: bool,
    /// Also approve RUN commands without asking.
    #[arg(long)]
    allow_run: bool,
    /// Continue the latest session of this project (its branch and the memory of its last
    /// turns) instead of starting a new one.
    #[arg(long = "continue", short = 'c')]
    resume_latest: bool,
    /// Run the session in its own linked git worktree on a new branch pai/<id>, leaving your
    /// checkout untouched (`--worktree=NAME` also names it).
    #[arg(
        short = 'w',
        long = "worktree",
        value_name = "NAME",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    worktree: Option<String>,
    /// With a worktree session: start from this branch, tag or commit instead of HEAD.
    #[arg(long, value_name = "REF")]
    from: Option<String>,
    /// Run in your checkout even when config.toml says `worktree = true`.
    #[arg(long, conflicts_with = "worktree")]
    in_place: bool,
    /// With a worktree session: bring your uncommitted changes into the worktree (a plan that
    /// touches one snapshots it as yours first, so undo gives it back exactly).
    #[arg(long)]
    carry: bool,
}

/// Flags of `pai resume SESSION`: a session's, without `--continue` (the session is named).
#[derive(Debug, Clone, Default, Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Approve plans without asking (RUN commands still ask unless --allow-run).
    #[arg(long, short = 'y')]
    yes: bool,
    /// Also approve RUN commands without asking.
    #[arg(long)]
    allow_run: bool,
}

impl ResumeArgs {
    fn flags(&self) -> Flags {
        SessionArgs {
            model: self.model.clone(),
            yes: self.yes,
            allow_run: self.allow_run,
            ..SessionArgs::default()
        }
        .flags()
    }
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The request, in plain language.
    request: String,
    #[command(flatten)]
    session: SessionArgs,
    /// Print one JSON event per line instead of text.
    #[arg(long)]
    json: bool,
    /// Dry run: show the plan (or the answer) and carry nothing out. Without --yes and
    /// without a terminal to approve at, `pai run` does this anyway (and exits 1).
    #[arg(long = "plan", conflicts_with = "yes")]
    plan_only: bool,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Store an API key (read from a hidden prompt or stdin when KEY is omitted).
    Set {
        /// The key. Omit it to keep it out of your shell history.
        key: Option<String>,
        /// Which provider the key is for (default: the configured provider).
        #[arg(long, value_parser = parse_provider)]
        provider: Option<ProviderKind>,
    },
    /// Show the stored keys (masked) and the effective settings with their sources.
    Show(ModelArgs),
    /// Remove a stored API key.
    Remove {
        /// Which provider's key to remove (default: the configured provider).
        #[arg(long, value_parser = parse_provider)]
        provider: Option<ProviderKind>,
    },
    /// Check the key's shape, then make one cheap call to the provider.
    Validate(ModelArgs),
    /// Print the path of the credentials file.
    Path,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// List the servers, their status (started, failed, untrusted, disabled) and tools.
    List,
    /// Add a server to config.toml: `pai mcp add NAME -- COMMAND [ARGS...]` or `--url URL`.
    Add {
        /// The server's name (letters, digits, `_`, `-`).
        name: String,
        /// A streamable HTTP server's URL.
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// An environment variable the server gets (repeatable).
        #[arg(long, value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// The command of a stdio server and its arguments, after `--`.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Remove a server from config.toml.
    Remove {
        /// The server's name.
        name: String,
    },
    /// Trust this project's .mcp.json (its current content), so its servers may start.
    Trust,
}

fn parse_provider(s: &str) -> Result<ProviderKind, String> {
    s.parse()
}

impl ModelArgs {
    fn flags(&self) -> Flags {
        Flags {
            provider: self.provider,
            model: self.model.clone(),
            temperature: self.temperature,
            base_url: self.base_url.clone(),
            yes: false,
            allow_run: false,
            structured_output: self.structured_output.clone(),
        }
    }
}

impl SessionArgs {
    fn resume(&self) -> Option<Resume> {
        self.resume_latest.then_some(Resume::Latest)
    }

    fn choice(&self) -> worktree::Choice {
        worktree::Choice {
            worktree: self.worktree.clone(),
            from: self.from.clone(),
            in_place: self.in_place,
            carry: self.carry,
        }
    }

    fn flags(&self) -> Flags {
        Flags {
            yes: self.yes,
            allow_run: self.allow_run,
            ..self.model.flags()
        }
    }
}

/// Parse the process arguments, run the command, and return the exit code.
pub fn main() -> i32 {
    // pai holds API keys in memory and in its environment; a RUN child must not read them
    // through /proc/<pai's pid>/environ or mem. Root reads environ whatever the dumpable flag
    // and its capabilities say, so first (while pai has one thread, see exec/environ.rs) the
    // kernel is told the environment block is empty. Then, not dumpable, mem needs
    // CAP_SYS_PTRACE, which RUN children lose. Both best effort: a kernel that refuses leaves
    // pai as it was.
    let _ = crate::exec::hide_from_proc();
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap knows whether this is --help/--version (exit 0) or a usage error (exit 2).
            if let Err(failure) = e.print() {
                let stream = if e.use_stderr() {
                    Stream::Err
                } else {
                    Stream::Out
                };
                stream::failed(stream, &failure);
            }
            return stream::finish(e.exit_code());
        }
    };
    let env = Env::from_process();
    let out = Output::new(&env);
    let result = run(cli, &env, &out);
    crate::agent::repo_map::finish();
    let code = match result {
        Ok(()) => 0,
        Err(err) => {
            if !err.is_silent() {
                out.error(&err);
            }
            err.exit_code()
        }
    };
    stream::finish(code)
}

/// Dispatch: one arm per command, each handing its arguments to the command's function.
fn run(cli: Cli, env: &Env, out: &Output) -> Result<(), Error> {
    if reads_history(cli.command.as_ref()) && !checks_itself(cli.command.as_ref()) {
        assemble::recover_interrupted(out)?;
    }
    match cli.command {
        None => session(&cli.session, cli.session.resume(), env, out),
        Some(Command::Auto(args)) => session(&args, args.resume(), env, out),
        Some(Command::Resume {
            session: None,
            args: _,
        }) => sessions::list_sessions(out),
        Some(Command::Resume {
            session: Some(id),
            args,
        }) => resume(&args, &id, env, out),
        Some(Command::Sessions { json }) => worktree::list(out, json),
        Some(Command::Run(args)) => run_once(&args, env, out),
        Some(Command::Config(cmd)) => config(cmd, env, out),
        Some(Command::Undo { session, force }) => {
            let settings = resolve(&Flags::default(), env, out)?;
            let _entered = per_session(session.as_deref(), out)?;
            undo::undo(&settings, out, force)
        }
        Some(Command::Redo { session }) => {
            let settings = resolve(&Flags::default(), env, out)?;
            let _entered = per_session(session.as_deref(), out)?;
            redo::redo(&settings, out)
        }
        Some(Command::Discard { session, force }) => {
            let settings = resolve(&Flags::default(), env, out)?;
            let session = session.or_else(worktree::here);
            match enter_session(session.as_deref(), out)? {
                Some(entered) => discard::discard_worktree(entered, &settings, out, force),
                None => discard::discard(&settings, out, session.as_deref(), force),
            }
        }
        Some(Command::Log {
            session,
            patch,
            json,
        }) => plan_log(session.as_deref(), patch, json, out),
        Some(Command::Mcp(cmd)) => mcp(cmd, env, out),
        Some(Command::Map {
            request,
            json,
            explain,
        }) => {
            let settings = resolve(&Flags::default(), env, out)?;
            let project = assemble::open_project_to_read(&settings)?;
            map_cmd::map(&settings, &project, out, &request, json, explain)
        }
        Some(Command::Gc { days }) => gc::gc(&resolve(&Flags::default(), env, out)?, out, days),
        Some(Command::Completions { shell }) => {
            completions(shell, out);
            Ok(())
        }
    }
}

/// Whether `command` reads or writes the project's history, and so first finishes an
/// operation an earlier pai process left unfinished.
fn reads_history(command: Option<&Command>) -> bool {
    !matches!(
        command,
        Some(Command::Config(_) | Command::Mcp(_) | Command::Completions { .. })
    )
}

/// Whether `command` makes the recovery check itself, with the repository it opens anyway
/// (`pai log`, whose whole cost is a few milliseconds of which each open is a part).
fn checks_itself(command: Option<&Command>) -> bool {
    matches!(command, Some(Command::Log { .. }))
}

/// Into a worktree session's worktree (see [`worktree::enter_named`]), first finishing an
/// operation a killed pai left unfinished there: the check at the start of the command looked
/// at the checkout it was started in.
fn enter_session(session: Option<&str>, out: &Output) -> Result<Option<worktree::Entered>, Error> {
    let entered = worktree::enter_named(session)?;
    if entered.is_some() {
        assemble::recover_interrupted(out)?;
    }
    Ok(entered)
}

/// For `undo`/`redo SESSION`: into that worktree session's worktree, or (an in-place session)
/// checked to be the one HEAD is on.
fn per_session(session: Option<&str>, out: &Output) -> Result<Option<worktree::Entered>, Error> {
    let entered = enter_session(session, out)?;
    if entered.is_none() {
        worktree::check_in_place(session)?;
    }
    Ok(entered)
}

/// `pai run`: its exit code is the turn's, and a failed turn has already been reported, so a
/// non-zero code leaves silently.
fn run_once(args: &RunArgs, env: &Env, out: &Output) -> Result<(), Error> {
    let settings = resolve(&args.session.flags(), env, out)?;
    // A dry run touches nothing in .git, so it never makes a worktree (the same test as
    // `run_cmd::run_once`: without --yes and nobody to approve at, the turn is a dry run).
    let nobody_to_ask = args.json || !std::io::IsTerminal::is_terminal(&std::io::stdin());
    let dry = args.plan_only || (!settings.yes && nobody_to_ask);
    let entered = if dry || args.session.resume().is_some() {
        None
    } else {
        worktree::begin(&args.session.choice(), &settings, out)?
    };
    let code = run_cmd::run_once(
        &settings,
        env,
        out,
        &args.request,
        args.json,
        run_cmd::Place {
            resume: args.session.resume(),
            entered,
        },
        args.plan_only,
    )?;
    if code == 0 {
        Ok(())
    } else {
        Err(Error::silent(code))
    }
}

/// `pai config ...`: unlike the other commands, each subcommand resolves the settings itself,
/// as far as it needs them.
fn config(cmd: ConfigCommand, env: &Env, out: &Output) -> Result<(), Error> {
    match cmd {
        ConfigCommand::Set { key, provider } => config_cmd::set(env, out, key, provider),
        ConfigCommand::Show(args) => config_cmd::show(env, out, &args.flags()),
        ConfigCommand::Remove { provider } => config_cmd::remove(env, out, provider),
        ConfigCommand::Validate(args) => config_cmd::validate(env, out, &args.flags()),
        ConfigCommand::Path => config_cmd::path(env, out),
    }
}

/// `pai log`: reads git only, so it needs no settings, only the project and its history,
/// opened once for the recovery check (made here, see [`checks_itself`]) and the log.
fn plan_log(session: Option<&str>, patch: bool, json: bool, out: &Output) -> Result<(), Error> {
    let cwd = std::env::current_dir()
        .map_err(|e| Error::failed(format!("cannot determine the current directory: {e}")))?;
    let mut source = crate::history::open_log(&cwd);
    if source.interrupted() {
        assemble::recover_interrupted(out)?;
        // Read what the recovery left, not what the repository held before it.
        source = crate::history::open_log(&cwd);
    }
    log::log(source, out, session, patch, json)
}

/// `pai mcp ...`, with the settings resolved (and their warnings shown) first.
fn mcp(cmd: McpCommand, env: &Env, out: &Output) -> Result<(), Error> {
    let settings = resolve(&Flags::default(), env, out)?;
    match cmd {
        McpCommand::List => mcp_cmd::list(&settings, out),
        McpCommand::Add {
            name,
            url,
            env,
            command,
        } => mcp_cmd::add(&settings, out, &name, url, &env, &command),
        McpCommand::Remove { name } => mcp_cmd::remove(&settings, out, &name),
        McpCommand::Trust => mcp_cmd::trust(&settings, out),
    }
}

/// `pai completions SHELL`: the script comes from the same definitions as the parser.
fn completions(shell: clap_complete::Shell, out: &Output) {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "pai", &mut buf);
    out.raw(&buf);
}

/// The interactive session (in its own worktree with `-w`).
fn session(
    args: &SessionArgs,
    resume: Option<Resume>,
    env: &Env,
    out: &Output,
) -> Result<(), Error> {
    let settings = resolve(&args.flags(), env, out)?;
    let entered = if resume.is_some() {
        None
    } else {
        worktree::begin(&args.choice(), &settings, out)?
    };
    match session_cmd::interactive(&settings, env, out, resume, entered)? {
        0 => Ok(()),
        code => Err(Error::silent(code)),
    }
}

/// `pai resume SESSION`: in that session's worktree when it is a worktree session.
fn resume(args: &ResumeArgs, id: &str, env: &Env, out: &Output) -> Result<(), Error> {
    let settings = resolve(&args.flags(), env, out)?;
    let entered = enter_session(Some(id), out)?;
    let id = entered
        .as_ref()
        .map_or(id, |e| e.linked().id.as_str())
        .to_string();
    match session_cmd::interactive(&settings, env, out, Some(Resume::Session(id)), entered)? {
        0 => Ok(()),
        code => Err(Error::silent(code)),
    }
}

/// Resolve the settings and show their warnings.
fn resolve(flags: &Flags, env: &Env, out: &Output) -> Result<Settings, Error> {
    let settings = Settings::resolve(flags, env)?;
    out.warnings(&settings.warnings);
    Ok(settings)
}

//! The RUN approval policy: whether a command runs without asking, what the question offers,
//! and what each answer does. Frontends only render the question and return the answer.
//!
//! A command runs without asking when `--yes --allow-run` cover it, or when an allow-list rule
//! (config.toml, or an "always" answer earlier in the session) covers it, and it will run
//! confined. The trust rule holds for every rule alike: under `--yes`, where the user never saw
//! the plan, a rule does not cover a command once the model wrote files in this turn, since
//! the command could run what was just written (`python3 -m py_compile` importing a planted
//! `py_compile.py`). Without `--yes` the user approved the plan, writes included, and a later
//! phase that writes asks for approval again.

use std::path::Path;

use std::collections::BTreeSet;

use super::events::{Event, Frontend, RuleScope, RunAnswer, RunQuestion, ToolAnswer, ToolQuestion};
use crate::config::rules::{RuleTarget, save_run_rule};
use crate::exec;

/// What the session's approval policy works from.
pub(super) struct RunPolicy<'a> {
    /// `--yes`.
    pub yes: bool,
    /// `--allow-run`.
    pub allow_run: bool,
    /// The allow-list: config rules plus the session's "always" answers (grows here).
    pub allow: &'a mut Vec<String>,
    /// Where saved rules go (`None`: no configuration directory).
    pub settings_file: Option<&'a Path>,
    /// The project root, naming the project in config.toml.
    pub root: &'a Path,
}

/// Why a command does not run.
pub(super) struct Denied;

impl RunPolicy<'_> {
    /// Decide about `command`: the command to run (the user may have edited it), or denied.
    /// `confined`: it will run in the sandbox; `model_wrote`: the model changed files in this
    /// turn before it.
    pub(super) fn decide(
        &mut self,
        command: &str,
        confined: bool,
        model_wrote: bool,
        frontend: &dyn Frontend,
        ask: impl FnOnce(&RunQuestion) -> RunAnswer,
    ) -> Result<String, Denied> {
        let covered = exec::is_preapproved(command, self.allow) && (!self.yes || !model_wrote);
        if confined && ((self.yes && self.allow_run) || covered) {
            return Ok(command.to_string());
        }
        let rule = if confined {
            exec::rule_for(command)
        } else {
            None
        };
        let question = RunQuestion {
            command: command.to_string(),
            confined,
            rule: rule.clone(),
            can_save: self.settings_file.is_some(),
        };
        match ask(&question) {
            RunAnswer::Yes => Ok(command.to_string()),
            RunAnswer::No => Err(Denied),
            RunAnswer::Edit(edited) if edited.trim().is_empty() => Err(Denied),
            RunAnswer::Edit(edited) => Ok(edited.trim().to_string()),
            RunAnswer::Always | RunAnswer::Save(_) if rule.is_none() => {
                // Not offered for this command: an answer that cannot be honoured runs it once.
                Ok(command.to_string())
            }
            RunAnswer::Always => {
                let rule = rule.unwrap_or_default();
                self.remember(&rule);
                frontend.event(&Event::Notice {
                    text: format!("`{rule}` now runs without asking for the rest of this session"),
                });
                Ok(command.to_string())
            }
            RunAnswer::Save(scope) => {
                let rule = rule.unwrap_or_default();
                self.remember(&rule);
                frontend.event(&Event::Notice {
                    text: self.save(&rule, scope),
                });
                Ok(command.to_string())
            }
        }
    }

    fn remember(&mut self, rule: &str) {
        if !self.allow.iter().any(|r| r == rule) {
            self.allow.push(rule.to_string());
        }
    }

    /// Save `rule`; the text telling the user where it went (or why it did not).
    fn save(&self, rule: &str, scope: RuleScope) -> String {
        let Some(path) = self.settings_file else {
            return format!(
                "`{rule}` runs without asking for the rest of this session; it could not be saved (no configuration directory)"
            );
        };
        let (target, place) = match scope {
            RuleScope::User => (RuleTarget::User, "every project".to_string()),
            RuleScope::Project => (
                RuleTarget::Project(self.root.display().to_string()),
                format!("this project ({})", self.root.display()),
            ),
        };
        match save_run_rule(path, &target, rule) {
            Ok(()) => format!(
                "`{rule}` now runs without asking in {place}: saved to {}",
                path.display()
            ),
            Err(e) => format!(
                "`{rule}` runs without asking for the rest of this session, but saving it failed: {e}"
            ),
        }
    }
}

/// The TOOL approval policy. A call runs without asking when its tool is in the server's
/// `auto_approve` list in the user's config.toml, or the user answered "always" for it this
/// session. `--yes` alone never approves a tool: like an unconfined RUN, a tool runs outside
/// any sandbox pai controls, so only a list the user wrote (or an answer) covers it. A
/// project's `.mcp.json` cannot pre-approve anything.
pub(super) struct ToolPolicy<'a> {
    /// The server's `auto_approve` list (empty for project servers).
    pub auto_approve: &'a [String],
    /// `server.tool` names the user allowed for this session (grows here).
    pub allowed: &'a mut BTreeSet<String>,
}

impl ToolPolicy<'_> {
    /// Decide about one call: approved, or denied.
    pub(super) fn decide(
        &mut self,
        question: &ToolQuestion,
        frontend: &dyn Frontend,
        ask: impl FnOnce(&ToolQuestion) -> ToolAnswer,
    ) -> Result<(), Denied> {
        let key = format!("{}.{}", question.server, question.tool);
        if self.auto_approve.contains(&question.tool) || self.allowed.contains(&key) {
            return Ok(());
        }
        match ask(question) {
            ToolAnswer::Yes => Ok(()),
            ToolAnswer::No => Err(Denied),
            ToolAnswer::Always => {
                self.allowed.insert(key.clone());
                frontend.event(&Event::Notice {
                    text: format!("`{key}` now runs without asking for the rest of this session"),
                });
                Ok(())
            }
        }
    }
}

/// What the plan's steps would need approved when nobody can be asked (`pai run --yes`
/// without a terminal, or `--json`): per step, what needs approval and the flag or setting
/// that would allow it; empty when the plan runs through. Checked before anything is carried out, so a
/// plan is never half done because an approval could not be asked.
pub(super) fn unaskable(
    steps: &[super::plan::PlannedStep],
    run: &RunPolicy<'_>,
    confined: bool,
    tool_allowed: impl Fn(&str, &str) -> bool,
) -> Vec<(String, String)> {
    use super::plan::Step;
    let mut out = Vec::new();
    let mut wrote = false;
    for (i, s) in steps.iter().enumerate() {
        match &s.step {
            Step::Run { command } => {
                let covered = exec::is_preapproved(command, run.allow) && (!run.yes || !wrote);
                let runs = confined && ((run.yes && run.allow_run) || covered);
                if !runs {
                    let remedy = if confined {
                        "pass --allow-run (with --yes) to run it"
                    } else {
                        "commands cannot be confined on this system, so each one needs approval at a terminal"
                    };
                    out.push((
                        format!("step {}: RUN `{command}` needs approval", i + 1),
                        remedy.to_string(),
                    ));
                }
            }
            Step::Tool { server, tool, .. } if !tool_allowed(server, tool) => {
                out.push((
                    format!("step {}: TOOL {server}.{tool} needs approval", i + 1),
                    format!(
                        "add `{tool}` to `auto_approve` of [mcp_servers.{server}] in config.toml, or run at a terminal"
                    ),
                ));
            }
            _ => {}
        }
        wrote |= s.step.mutates() && !matches!(s.step, Step::Run { .. } | Step::Tool { .. });
    }
    out
}

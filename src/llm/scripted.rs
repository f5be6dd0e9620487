//! A provider that answers from a script, in-process: the agent's tests (and demos) drive a
//! whole turn without HTTP. Each call takes the next reply in order and records the request it
//! was given; a script that runs out answers with an error, as a server that went away would.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::{
    LlmError, LlmReply, LlmRequest, OnText, Provider, ProviderKind, StreamEvent, Usage, UsageTotals,
};

/// One scripted answer.
#[derive(Debug)]
pub enum Scripted {
    /// A structured reply (the plan object), streamed as its JSON text.
    Reply {
        /// The object.
        value: Value,
        /// The usage to report for the call.
        usage: Usage,
    },
    /// A failed call.
    Fail(LlmError),
}

impl Scripted {
    /// A reply with `input` and `output` tokens.
    pub fn reply(value: Value, input: u64, output: u64) -> Scripted {
        Scripted::Reply {
            value,
            usage: Usage {
                input,
                output,
                ..Usage::default()
            },
        }
    }
}

/// A [`Provider`] that answers from a script. Clones share the script and the record, so a
/// test keeps one to inspect while the agent owns another.
#[derive(Clone)]
pub struct ScriptedProvider {
    kind: ProviderKind,
    shared: Arc<Shared>,
}

struct Shared {
    replies: Mutex<VecDeque<Scripted>>,
    requests: Mutex<Vec<LlmRequest>>,
    totals: Mutex<UsageTotals>,
}

impl ScriptedProvider {
    /// A provider of `kind` that gives `replies` in order.
    pub fn new(kind: ProviderKind, replies: impl IntoIterator<Item = Scripted>) -> Self {
        ScriptedProvider {
            kind,
            shared: Arc::new(Shared {
                replies: Mutex::new(replies.into_iter().collect()),
                requests: Mutex::new(Vec::new()),
                totals: Mutex::new(UsageTotals::default()),
            }),
        }
    }

    /// Every request made so far, in order.
    pub fn requests(&self) -> Vec<LlmRequest> {
        self.shared
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Replies not used yet.
    pub fn remaining(&self) -> usize {
        self.shared
            .replies
            .lock()
            .map(|r| r.len())
            .unwrap_or_default()
    }
}

impl Provider for ScriptedProvider {
    fn kind(&self) -> ProviderKind {
        self.kind
    }

    fn complete<'a>(
        &'a self,
        req: &'a LlmRequest,
        on_text: OnText<'a>,
    ) -> BoxFuture<'a, Result<LlmReply, LlmError>> {
        Box::pin(async move {
            if let Ok(mut r) = self.shared.requests.lock() {
                r.push(req.clone());
            }
            let next = self
                .shared
                .replies
                .lock()
                .ok()
                .and_then(|mut r| r.pop_front());
            let Some(next) = next else {
                return Err(LlmError::Interrupted {
                    provider: self.kind,
                    attempts: 1,
                    detail: "the script has no more replies".into(),
                });
            };
            if let Ok(mut t) = self.shared.totals.lock() {
                t.requests += 1;
            }
            match next {
                Scripted::Fail(e) => Err(e),
                Scripted::Reply { value, usage } => {
                    let raw = value.to_string();
                    if req.stream {
                        on_text(StreamEvent::Text(&raw));
                    }
                    if let Ok(mut t) = self.shared.totals.lock() {
                        t.usage.add(usage);
                    }
                    Ok(LlmReply {
                        value,
                        raw,
                        usage,
                        elapsed: Duration::ZERO,
                        attempts: 1,
                    })
                }
            }
        })
    }

    fn validate<'a>(&'a self) -> BoxFuture<'a, Result<(), LlmError>> {
        Box::pin(async { Ok(()) })
    }

    fn usage_totals(&self) -> UsageTotals {
        self.shared.totals.lock().map(|t| *t).unwrap_or_default()
    }
}

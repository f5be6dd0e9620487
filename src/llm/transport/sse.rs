//! Server-sent events of a streaming response, read with an idle timeout per event, and the
//! sink that forwards streamed text (telling the caller to start over when a retry restarts
//! the stream).

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError};
use futures_util::{Stream, StreamExt};
use serde_json::Value;

use super::classify::root_cause;
use crate::llm::error::{LlmError, TimeoutStage, scrub, snippet};
use crate::llm::{OnText, ProviderKind, StreamEvent};

/// A stream of server-sent events with an idle timeout per event.
pub(crate) struct Events {
    #[allow(clippy::type_complexity)]
    pub(super) inner:
        Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>,
    pub(super) idle: Duration,
    pub(super) kind: ProviderKind,
    pub(super) key: Option<String>,
}

impl Events {
    /// The next event; `Ok(None)` at the end of the stream.
    pub(crate) async fn next(&mut self) -> Result<Option<Event>, LlmError> {
        match tokio::time::timeout(self.idle, self.inner.next()).await {
            Err(_) => Err(LlmError::Timeout {
                provider: self.kind,
                stage: TimeoutStage::StreamIdle,
                after: self.idle,
            }),
            Ok(None) => Ok(None),
            Ok(Some(Ok(event))) => Ok(Some(event)),
            Ok(Some(Err(EventStreamError::Transport(e)))) => Err(LlmError::Interrupted {
                provider: self.kind,
                attempts: 1,
                detail: scrub(&root_cause(&e), self.key.as_deref()),
            }),
            Ok(Some(Err(e))) => Err(LlmError::BadResponse {
                provider: self.kind,
                detail: format!("the event stream is malformed: {e}"),
            }),
        }
    }

    /// Parses an event's data as JSON.
    pub(crate) fn parse(&self, event: &Event) -> Result<Value, LlmError> {
        serde_json::from_str(&event.data).map_err(|e| LlmError::BadResponse {
            provider: self.kind,
            detail: format!(
                "a streamed event is not JSON ({e}): `{}`",
                snippet(&scrub(&event.data, self.key.as_deref()), 120)
            ),
        })
    }

    /// The error for a stream that ended before the reply was complete.
    pub(crate) fn ended_early(&self) -> LlmError {
        LlmError::Interrupted {
            provider: self.kind,
            attempts: 1,
            detail: "the stream ended before the reply was complete".to_string(),
        }
    }
}

/// Forwards reply text to the caller and remembers whether any was shown, so a retry can tell
/// the caller to discard it.
pub(crate) struct TextSink<'a> {
    on_text: OnText<'a>,
    emitted: AtomicBool,
}

impl<'a> TextSink<'a> {
    pub(crate) fn new(on_text: OnText<'a>) -> Self {
        Self {
            on_text,
            emitted: AtomicBool::new(false),
        }
    }

    /// Passes a piece of reply text on.
    pub(crate) fn text(&self, piece: &str) {
        if !piece.is_empty() {
            self.emitted.store(true, Ordering::Relaxed);
            (self.on_text)(StreamEvent::Text(piece));
        }
    }

    pub(super) fn restart(&self) {
        if self.emitted.swap(false, Ordering::Relaxed) {
            (self.on_text)(StreamEvent::Restart);
        }
    }
}

//! What each path held when the current plan began, so the diff guard judges a file's net
//! change over the whole plan rather than one step at a time: RM then WRITE, MV away then
//! WRITE, or many small MODIFYs of one file are the same rewrite as one big MODIFY, and are
//! refused the same way (SPEC section 5).
//!
//! The ledger records a path the first time a plan touches it; what was there before that is,
//! by construction, what the plan started from. A file moved by the plan carries its origin to
//! its new name, so editing it there is judged against the text it started as.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::text::{looks_binary, normalise};

/// Text kept for origins over all paths of one plan. Past it, further origins are
/// [`Origin::Opaque`]: a plan that removes this much text is unusual, and judging it against
/// the current content (the per-step guard) is enough.
const TEXT_BUDGET: usize = 64 * 1024 * 1024;

/// What a path held when the plan began.
#[derive(Debug, Clone)]
pub(crate) enum Origin {
    /// Nothing: the plan created it.
    Absent,
    /// A text file, normalised to `\n`.
    Text(Arc<str>),
    /// Something the guard cannot judge (binary, too big, a link, over the budget).
    Opaque,
}

/// The per-plan record. Cheap when unused: a lock and an empty map.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    origins: HashMap<String, Origin>,
    text_bytes: usize,
}

impl Ledger {
    /// Forget everything: a new plan begins.
    pub(crate) fn clear(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            *inner = Inner::default();
        }
    }

    /// The recorded origin of `path`, if the plan touched it.
    pub(crate) fn get(&self, path: &str) -> Option<Origin> {
        self.inner.lock().ok()?.origins.get(path).cloned()
    }

    /// Record `path`'s origin from `bytes` (its content now) unless the plan touched it before;
    /// return the origin in force. `max_text` is the largest file the guard judges.
    pub(crate) fn note_bytes(&self, path: &str, bytes: &[u8], max_text: usize) -> Origin {
        self.note_with(path, || text_of(bytes, max_text))
    }

    /// Record that `path` held nothing (or nothing judgeable) unless already recorded.
    pub(crate) fn note(&self, path: &str, origin: Origin) -> Origin {
        self.note_with(path, || Some(origin))
    }

    /// Record a moved file's origin at its new name, unless the new name was touched before.
    pub(crate) fn carry(&self, from: &str, to: &str) {
        if let Some(origin) = self.get(from) {
            self.note(to, origin);
        }
    }

    fn note_with(&self, path: &str, make: impl FnOnce() -> Option<Origin>) -> Origin {
        let Ok(mut inner) = self.inner.lock() else {
            return Origin::Opaque;
        };
        if let Some(o) = inner.origins.get(path) {
            return o.clone();
        }
        let origin = match make() {
            Some(Origin::Text(t)) if inner.text_bytes + t.len() > TEXT_BUDGET => Origin::Opaque,
            Some(o) => o,
            None => Origin::Opaque,
        };
        if let Origin::Text(t) = &origin {
            inner.text_bytes += t.len();
        }
        inner.origins.insert(path.to_string(), origin.clone());
        origin
    }
}

/// A file's bytes as the guard sees them, or `None` when it cannot judge them.
fn text_of(bytes: &[u8], max_text: usize) -> Option<Origin> {
    if bytes.len() > max_text || looks_binary(bytes) {
        return None;
    }
    let s = std::str::from_utf8(bytes).ok()?;
    Some(Origin::Text(Arc::from(normalise(s).body.as_ref())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_record_wins_and_moves_carry_it() {
        let l = Ledger::default();
        assert!(
            matches!(l.note_bytes("a", b"one\r\ntwo\r\n", 100), Origin::Text(t) if &*t == "one\ntwo\n")
        );
        assert!(
            matches!(l.note_bytes("a", b"changed\n", 100), Origin::Text(t) if &*t == "one\ntwo\n")
        );
        l.carry("a", "b");
        assert!(matches!(l.get("b"), Some(Origin::Text(_))));
        assert!(matches!(l.note("c", Origin::Absent), Origin::Absent));
        assert!(matches!(l.note_bytes("d", &[0, 1, 2], 100), Origin::Opaque));
        l.clear();
        assert!(l.get("a").is_none());
    }
}

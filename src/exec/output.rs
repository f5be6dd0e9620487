//! The output cap: keep the first and the last part of a command's output, count the rest.
//!
//! The head usually says what ran and the tail says how it ended (the failing test, the
//! traceback), so both go back to the model while the middle is dropped. Memory stays bounded by
//! the cap however much the command prints. Cut points are moved to UTF-8 character boundaries so
//! a cap never manufactures replacement characters; invalid bytes the command itself printed are
//! decoded lossily.

use std::collections::VecDeque;

/// Accumulates output as it arrives, keeping at most `cap` bytes (half head, half tail).
#[derive(Debug)]
pub(crate) struct OutputCap {
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    total: usize,
}

impl OutputCap {
    /// A cap keeping `cap` bytes in total.
    pub(crate) fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Self {
            head: Vec::with_capacity(head_cap.min(64 * 1024)),
            head_cap,
            tail: VecDeque::new(),
            tail_cap: cap - head_cap,
            total: 0,
        }
    }

    /// Take the next chunk of output.
    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total = self.total.saturating_add(bytes.len());
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let n = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.is_empty() || self.tail_cap == 0 {
            return;
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    /// The kept text (with a marker where bytes were dropped) and the number of dropped bytes.
    pub(crate) fn finish(self) -> (String, usize) {
        let kept = self.head.len() + self.tail.len();
        let mut tail: Vec<u8> = self.tail.into();
        if kept == self.total {
            let mut all = self.head;
            all.append(&mut tail);
            return (String::from_utf8_lossy(&all).into_owned(), 0);
        }
        let head_end = complete_prefix_len(&self.head);
        let tail_start = continuation_prefix_len(&tail);
        let head = String::from_utf8_lossy(&self.head[..head_end]);
        let tail = String::from_utf8_lossy(&tail[tail_start..]);
        let dropped = self.total - (head_end + (kept - self.head.len() - tail_start));
        let mut text = String::with_capacity(head.len() + tail.len() + 48);
        text.push_str(&head);
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[... {dropped} bytes of output dropped ...]\n"));
        text.push_str(&tail);
        (text, dropped)
    }
}

/// Length of `bytes` without a trailing, incomplete UTF-8 sequence cut off by the cap.
fn complete_prefix_len(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=n.min(3) {
        let b = bytes[n - back];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for the lead byte
        }
        let needed = match b {
            0xF0..=0xFF => 4,
            0xE0..=0xEF => 3,
            0xC0..=0xDF => 2,
            _ => 1,
        };
        return if needed > back { n - back } else { n };
    }
    n
}

/// Number of leading UTF-8 continuation bytes (at most 3): the rest of a character whose start
/// was dropped.
fn continuation_prefix_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|b| **b & 0xC0 == 0x80)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn capped(cap: usize, chunks: &[&[u8]]) -> (String, usize) {
        let mut c = OutputCap::new(cap);
        for chunk in chunks {
            c.push(chunk);
        }
        c.finish()
    }

    #[test]
    fn under_the_cap_everything_is_kept() {
        assert_eq!(capped(10, &[b"abc", b"def"]), ("abcdef".to_string(), 0));
        assert_eq!(capped(6, &[b"abc", b"def"]), ("abcdef".to_string(), 0));
        assert_eq!(capped(0, &[]), (String::new(), 0));
    }

    #[test]
    fn over_the_cap_keeps_head_and_tail_and_counts_the_middle() {
        let (text, dropped) = capped(6, &[b"0123456789"]);
        assert_eq!(dropped, 4);
        assert_eq!(text, "012\n[... 4 bytes of output dropped ...]\n789");
        let (text, dropped) = capped(4, &[b"ab", b"cd", b"ef", b"gh", b"ij"]);
        assert_eq!(dropped, 6);
        assert_eq!(text, "ab\n[... 6 bytes of output dropped ...]\nij");
    }

    #[test]
    fn zero_cap_drops_everything() {
        let (text, dropped) = capped(0, &[b"hello"]);
        assert_eq!(dropped, 5);
        assert_eq!(text, "[... 5 bytes of output dropped ...]\n");
    }

    #[test]
    fn cuts_never_split_a_character() {
        // "é" is two bytes; a head of 3 bytes would end inside the second "é".
        let (text, dropped) = capped(6, &["ééééé".as_bytes()]);
        assert!(!text.contains('\u{FFFD}'), "{text:?}");
        assert_eq!(text, "é\n[... 6 bytes of output dropped ...]\né");
        assert_eq!(dropped, 6);
    }

    #[test]
    fn invalid_bytes_from_the_command_are_decoded_lossily() {
        let (text, dropped) = capped(100, &[b"ok \xff\xfe end"]);
        assert_eq!(dropped, 0);
        assert_eq!(text, "ok \u{FFFD}\u{FFFD} end");
    }

    proptest! {
        #[test]
        fn kept_plus_dropped_is_everything(
            cap in 0usize..64,
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..8),
        ) {
            let all: Vec<u8> = chunks.concat();
            let mut c = OutputCap::new(cap);
            for chunk in &chunks {
                c.push(chunk);
            }
            let (text, dropped) = c.finish();
            if all.len() <= cap {
                prop_assert_eq!(dropped, 0);
                prop_assert_eq!(text, String::from_utf8_lossy(&all).into_owned());
            } else {
                prop_assert!(dropped >= all.len() - cap);
                prop_assert!(dropped <= all.len() - cap + 6);
                let marker = format!("[... {dropped} bytes of output dropped ...]\n");
                prop_assert!(text.contains(&marker));
            }
        }

        #[test]
        fn text_is_a_head_and_tail_of_valid_utf8(s in "\\PC{0,60}", cap in 0usize..40) {
            prop_assume!(!s.contains(char::REPLACEMENT_CHARACTER));
            let (text, dropped) = capped(cap, &[s.as_bytes()]);
            prop_assert!(!text.contains(char::REPLACEMENT_CHARACTER), "{:?}", text);
            if dropped == 0 {
                prop_assert_eq!(text, s);
            } else {
                let marker = format!("[... {dropped} bytes of output dropped ...]\n");
                let Some((head, tail)) = text.split_once(&marker) else {
                    return Err(TestCaseError::fail(format!("no marker in {text:?}")));
                };
                let head = head.strip_suffix('\n').unwrap_or(head);
                prop_assert!(s.starts_with(head));
                prop_assert!(s.ends_with(tail));
            }
        }
    }
}

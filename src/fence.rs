//! Code fences around file text shown to the model. A file may hold fence lines itself (a
//! Markdown file, a test of a Markdown renderer, a doc comment with an example): a fixed
//! three-backtick fence would then end at the file's own line, and the model would read the
//! rest of the file as pai's prose. As in CommonMark, a fence longer than any run of
//! backticks in the text cannot be closed by it.

/// The fence to put around `text`: backticks, at least three, one more than the longest run
/// of backticks in it.
pub fn for_text(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for b in text.bytes() {
        if b == b'`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_is_never_closed_by_the_text_it_holds() {
        assert_eq!(for_text("plain"), "```");
        assert_eq!(for_text("a `code` span"), "```");
        assert_eq!(for_text("```rust\nfn f() {}\n```\n"), "````");
        assert_eq!(for_text("x ````` y"), "``````");
        for text in ["```", "a\n```\nb", "````\n", "`` ``` ````"] {
            let fence = for_text(text);
            assert!(!text.contains(fence.as_str()), "{text:?} holds {fence}");
        }
    }
}

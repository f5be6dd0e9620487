//! A definition's header as one line: what the map shows for it (`def add(a, b):`,
//! `pub fn parse(input: &str) -> Result<Plan, Error>`), without its body.

/// The longest signature kept, in characters.
pub const MAX_SIGNATURE_CHARS: usize = 160;

/// How many source lines a header may span (a long parameter list, a where clause).
const MAX_LINES: usize = 8;

/// The header of the definition whose name's line starts at byte `line_start` and whose node
/// ends at byte `end`: from the line start up to the body. With `line_headers` (Python, Ruby)
/// the header ends with the first line that closes its brackets; otherwise at the first `{` or
/// `;` outside brackets (both left out), or at the end of the definition. Whitespace runs
/// become one space; the result is trimmed and cut at [`MAX_SIGNATURE_CHARS`].
pub fn header(text: &str, line_start: usize, end: usize, line_headers: bool) -> String {
    let end = end.min(text.len());
    let Some(source) = text.get(line_start..end) else {
        return String::new();
    };
    let mut depth = 0i32;
    let mut lines = 1;
    let mut cut = source.len();
    for (i, c) in source.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '{' if line_headers => depth += 1,
            '}' if line_headers => depth -= 1,
            '{' | ';' if depth <= 0 => {
                cut = i;
                break;
            }
            '\n' => {
                lines += 1;
                if (line_headers && depth <= 0) || lines > MAX_LINES {
                    cut = i;
                    break;
                }
            }
            _ => {}
        }
    }
    let mut out = String::new();
    for word in source[..cut].split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
        if out.len() > MAX_SIGNATURE_CHARS * 4 {
            break;
        }
    }
    match out.char_indices().nth(MAX_SIGNATURE_CHARS) {
        Some((i, _)) => out[..i].trim_end().to_string(),
        None => out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brace_headers_end_before_the_body() {
        let text = "pub fn parse(\n    input: &str,\n) -> Result<Plan, Error> {\n    todo!()\n}\n";
        assert_eq!(
            header(text, 0, text.len(), false),
            "pub fn parse( input: &str, ) -> Result<Plan, Error>"
        );
        assert_eq!(
            header("const X: u8 = 1;\n", 0, 17, false),
            "const X: u8 = 1"
        );
        // A brace inside the parameters does not end the header.
        let js = "function f({ a, b }) {\n}\n";
        assert_eq!(header(js, 0, js.len(), false), "function f({ a, b })");
    }

    #[test]
    fn line_headers_end_with_the_line_that_closes_brackets() {
        let py = "def add(a,\n        b):\n    return a + b\n";
        assert_eq!(header(py, 0, py.len(), true), "def add(a, b):");
        let rb = "class Foo < Bar\n  def x; end\nend\n";
        assert_eq!(header(rb, 0, rb.len(), true), "class Foo < Bar");
    }

    #[test]
    fn long_headers_are_cut_on_a_char_boundary() {
        let text = format!("fn {}() {{}}", "é".repeat(400));
        let sig = header(&text, 0, text.len(), false);
        assert_eq!(sig.chars().count(), MAX_SIGNATURE_CHARS);
        assert!(sig.starts_with("fn é"));
        assert_eq!(header("x", 5, 9, false), "");
    }
}

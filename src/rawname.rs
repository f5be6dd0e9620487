//! File names that are not UTF-8, carried losslessly through pai's `&str` paths.
//!
//! Linux names are bytes; pai's paths are strings (they travel through JSON, the deny-list and
//! git tree paths as text). A lossy conversion would be worse than none: two different names
//! could become the same string, and history would record or restore the wrong file. So every
//! byte that is not part of valid UTF-8 is written as one character of a reserved block of
//! Unicode's last private-use plane (U+10FF80..=U+10FFFF, byte `b` as U+10FF00 + `b`), in the
//! spirit of Python's surrogateescape. A name that really contains a reserved character has
//! that character's bytes escaped the same way, so [`encode`] is total and [`decode`] inverts
//! it exactly. Only the canonical spelling of a name is accepted ([`is_canonical`]): a string
//! that spells valid UTF-8 bytes through escapes would be a second name for the same file.
//!
//! Only bytes 0x80..=0xFF are ever escaped, so no escape can produce `/`, `.` or NUL: path
//! checks made on the string hold for the bytes.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::Path;

/// The first character of the reserved block; byte `b` (0x80..=0xFF) is `BASE + b`.
const BASE: u32 = 0x10_FF00;

/// Whether `c` is one of the escape characters (stands for a byte that is not UTF-8).
pub(crate) fn is_escape(c: char) -> bool {
    (BASE + 0x80..=BASE + 0xFF).contains(&(c as u32))
}

fn escape(b: u8) -> char {
    // BASE + 0x80..=BASE + 0xFF are all valid scalar values (below U+10FFFF, no surrogates).
    char::from_u32(BASE + u32::from(b)).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The string spelling of a file name or path given as bytes.
pub fn encode(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(bytes)
        && !text.chars().any(is_escape)
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if is_escape(c) {
                let mut buf = [0u8; 4];
                out.extend(c.encode_utf8(&mut buf).bytes().map(escape));
            } else {
                out.push(c);
            }
        }
        out.extend(chunk.invalid().iter().copied().map(escape));
    }
    Cow::Owned(out)
}

/// The bytes a string spelling of a name stands for.
pub fn decode(text: &str) -> Cow<'_, [u8]> {
    // Escapes are far from ASCII: most names are checked a word at a time, not a char.
    if text.is_ascii() || !text.chars().any(is_escape) {
        return Cow::Borrowed(text.as_bytes());
    }
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        if is_escape(c) {
            // The escape block maps onto 0x80..=0xFF exactly.
            out.push((c as u32 - BASE) as u8);
        } else {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    Cow::Owned(out)
}

/// Whether `text` is the one spelling [`encode`] gives for its bytes.
pub fn is_canonical(text: &str) -> bool {
    !text.chars().any(is_escape) || encode(&decode(text)) == text
}

/// The file-system path a string spelling stands for.
pub fn path(text: &str) -> Cow<'_, Path> {
    match decode(text) {
        Cow::Borrowed(b) => Cow::Borrowed(Path::new(OsStr::from_bytes(b))),
        Cow::Owned(b) => Cow::Owned(std::ffi::OsString::from_vec(b).into()),
    }
}

/// The name for people to read: escapes shown as `\xNN`, as git quotes them.
pub fn display(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_escape) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if is_escape(c) {
                    format!("\\x{:02X}", c as u32 - BASE)
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn utf8_names_are_unchanged() {
        for name in ["a.txt", "naïve café.md", "日本/語.rs", ""] {
            assert!(matches!(encode(name.as_bytes()), Cow::Borrowed(_)));
            assert_eq!(decode(name), name.as_bytes());
        }
    }

    #[test]
    fn latin1_bytes_round_trip_and_display_like_git() {
        let raw = b"caf\xe9.txt";
        let text = encode(raw);
        assert_eq!(decode(&text), &raw[..]);
        assert_eq!(display(&text), "caf\\xE9.txt");
        assert_eq!(path(&text).as_os_str().as_bytes(), raw);
        assert!(is_canonical(&text));
    }

    #[test]
    fn a_name_holding_an_escape_character_is_escaped_too() {
        let real = "x\u{10FFE9}y";
        let text = encode(real.as_bytes());
        assert_ne!(text, real);
        assert_eq!(decode(&text), real.as_bytes());
        // The character itself spells the lone byte 0xE9, another name.
        assert_eq!(decode(real).as_ref(), b"x\xe9y");
    }

    #[test]
    fn escapes_spelling_valid_utf8_are_not_canonical() {
        // C3 A9 is "é": spelling it through escapes would be a second name for the same file.
        let alias = "caf\u{10FFC3}\u{10FFA9}";
        assert_eq!(decode(alias), "café".as_bytes());
        assert!(!is_canonical(alias));
    }

    proptest! {
        #[test]
        fn decode_inverts_encode(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let text = encode(&bytes);
            let back = decode(&text).into_owned();
            prop_assert_eq!(&back, &bytes);
            prop_assert!(is_canonical(&text));
        }

        #[test]
        fn escapes_never_make_ascii(text in "\\PC{0,20}") {
            let bytes = decode(&text);
            let ascii_in = text.bytes().filter(u8::is_ascii).count();
            prop_assert_eq!(bytes.iter().filter(|b| b.is_ascii()).count(), ascii_in);
        }
    }
}

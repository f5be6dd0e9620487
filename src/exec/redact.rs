//! Redaction of command output before it reaches the model, the session log or a commit: every
//! configured key pai knows, and text shaped like a credential whatever its source (a private
//! key a command printed from `~/.ssh`, a token in a config file it read). A confined command
//! may read outside the project (Landlock confines writes, not reads), so this is what stands
//! between a secret on disk and the model's request.

use std::sync::OnceLock;

use regex::Regex;

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

/// Credential shapes: PEM private keys, cloud and forge tokens, provider keys, and the value of
/// an assignment to a secret-sounding name. Deliberately broad: a redacted test output line is
/// a small price; a leaked key is not.
fn patterns() -> &'static [Regex] {
    static PATTERNS: OnceLock<Vec<Regex>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        [
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)",
            r"\b(AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b",
            r"\bgh[pousr]_[A-Za-z0-9]{30,}\b",
            r"\bgithub_pat_[A-Za-z0-9_]{20,}\b",
            r"\bglpat-[A-Za-z0-9_-]{20,}\b",
            r"\bsk-[A-Za-z0-9_-]{20,}\b",
            r"\bAIza[0-9A-Za-z_-]{30,}\b",
            r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b",
            r"\bnpm_[A-Za-z0-9]{30,}\b",
            r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b",
            r"(?i)\b[a-z0-9_.-]*(secret|token|passwd|password|api[_-]?key|access[_-]?key|private[_-]?key|auth)[a-z0-9_.-]*[\x22']?\s*[:=]\s*[\x22']?([^\s\x22',;]{8,})",
            r"(?i)\b[a-z][a-z0-9+.-]*://[^/\s:@]+:([^@\s/]{6,})@",
        ]
        .iter()
        .filter_map(|p| Regex::new(p).ok())
        .collect()
    })
}

/// The forms a binary secret (`raw`, stored as the text `stored`) takes in output: the stored
/// text and its upper-case, and base64 (standard and URL-safe, padded or not) of the raw bytes
/// and of the stored text with and without its newline: what `cat`, `xxd -p`, `base64`
/// print. Each is redacted as a known secret is.
pub fn secret_forms(raw: &[u8], stored: &str) -> Vec<String> {
    let mut out = vec![stored.to_string(), stored.to_uppercase()];
    let line = format!("{stored}\n");
    for bytes in [raw, stored.as_bytes(), line.as_bytes()] {
        let standard = base64(bytes, b'+', b'/');
        let url = base64(bytes, b'-', b'_');
        for form in [standard, url] {
            let bare = form.trim_end_matches('=').to_string();
            // `base64` wraps at 76 columns: its first line is a form of its own.
            if bare.len() > 76 {
                out.push(bare[..76].to_string());
            }
            out.push(form.clone());
            out.push(bare);
        }
    }
    // Longest first, so a form is never cut by a shorter one inside it.
    out.sort_by_key(|f| std::cmp::Reverse(f.len()));
    out.dedup();
    out
}

/// Base64 of `bytes` with the two last alphabet characters given, padded.
fn base64(bytes: &[u8], plus: u8, slash: u8) -> String {
    const ALPHABET: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let symbol = |v: u32| -> char {
        match v {
            62 => char::from(plus),
            63 => char::from(slash),
            v => ALPHABET.get(v as usize).map_or('=', |&b| char::from(b)),
        }
    };
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let byte = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (byte(0) << 16) | (byte(1) << 8) | byte(2);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(symbol((n >> (18 - 6 * i)) & 63));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `text` with every secret of at least 8 characters and every credential-shaped string
/// replaced by [`REDACTED`].
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets.iter().filter(|s| s.len() >= 8) {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), REDACTED);
        }
    }
    for (i, re) in patterns().iter().enumerate() {
        if !re.is_match(&out) {
            continue;
        }
        // The assignment and URL patterns keep the name and scheme, so the output still reads.
        let keep_prefix = i >= patterns().len() - 2;
        out = re
            .replace_all(&out, |caps: &regex::Captures<'_>| {
                let whole = caps.get(0).map_or("", |m| m.as_str());
                match caps.get(caps.len() - 1).filter(|_| keep_prefix) {
                    Some(value) => {
                        let start = value.start() - caps.get(0).map_or(0, |m| m.start());
                        format!("{}{REDACTED}", &whole[..start])
                    }
                    None => REDACTED.to_string(),
                }
            })
            .into_owned();
    }
    out
}

/// [`redact`] for output that arrives line by line: a private key spans lines, so from its
/// `BEGIN … PRIVATE KEY` line to its `END` line every line is redacted whole.
#[derive(Debug, Default)]
pub struct LineRedactor {
    secrets: Vec<String>,
    in_private_key: bool,
}

impl LineRedactor {
    /// A redactor for the known `secrets` (those under 8 characters are ignored).
    pub fn new(secrets: &[String]) -> Self {
        Self {
            secrets: secrets.iter().filter(|s| s.len() >= 8).cloned().collect(),
            in_private_key: false,
        }
    }

    /// One line, redacted.
    pub fn line(&mut self, line: &str) -> String {
        let begins = line.contains("-----BEGIN") && line.contains("PRIVATE KEY");
        let ends = line.contains("-----END") && line.contains("PRIVATE KEY");
        if self.in_private_key || begins {
            self.in_private_key = !ends;
            return REDACTED.to_string();
        }
        redact(line, &self.secrets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_secrets_and_credential_shapes_are_redacted() {
        let secrets = vec!["my-configured-key-123".to_string()];
        let cases = [
            "key: my-configured-key-123",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
            "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "OPENAI sk-proj-abcdefghijklmnopqrstuvwx",
            "export DB_PASSWORD=\"hunter2hunter2\"",
            "https://user:s3cr3tpass@example.com/repo.git",
        ];
        for case in cases {
            let out = redact(case, &secrets);
            assert!(out.contains(REDACTED), "{case} -> {out}");
            for word in [
                "my-configured",
                "b3BlbnNz",
                "AKIAIOSF",
                "wJalrX",
                "ghp_abc",
                "sk-proj",
                "hunter2",
                "s3cr3t",
            ] {
                assert!(!out.contains(word), "{case} -> {out}");
            }
        }
        assert_eq!(
            redact("test result: ok. 3 passed; 0 failed", &secrets),
            "test result: ok. 3 passed; 0 failed"
        );
        assert!(redact("DB_PASSWORD=hunter2hunter2", &[]).starts_with("DB_PASSWORD="));
    }

    #[test]
    fn every_form_of_a_binary_secret_is_redacted() {
        let raw: Vec<u8> = (0u8..32)
            .map(|i| i.wrapping_mul(37).wrapping_add(11))
            .collect();
        let stored: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        let forms = secret_forms(&raw, &stored);
        // Independent spellings: base64(1) of the raw bytes and of the file, as RFC 4648
        // test vectors fix the alphabet ("foob" -> "Zm9vYg==").
        assert_eq!(base64(b"foob", b'+', b'/'), "Zm9vYg==");
        assert_eq!(base64(&[0xfb, 0xff], b'-', b'_'), "-_8=");
        for shown in [
            stored.clone(),
            stored.to_uppercase(),
            format!("key: {}", base64(&raw, b'+', b'/')),
            base64(format!("{stored}\n").as_bytes(), b'+', b'/')[..76].to_string(),
        ] {
            let out = redact(&shown, &forms);
            assert!(out.contains(REDACTED), "{shown} -> {out}");
            assert!(!out.contains(&stored[..16]) && !out.contains(&stored[..16].to_uppercase()));
        }
    }

    #[test]
    fn a_private_key_arriving_line_by_line_is_redacted_whole() {
        let mut r = LineRedactor::new(&[]);
        let out: Vec<String> = [
            "before",
            "-----BEGIN RSA PRIVATE KEY-----",
            "MIIEowIBAAKCAQEA",
            "-----END RSA PRIVATE KEY-----",
            "after",
        ]
        .iter()
        .map(|l| r.line(l))
        .collect();
        assert_eq!(out, ["before", REDACTED, REDACTED, REDACTED, "after"]);
    }
}

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

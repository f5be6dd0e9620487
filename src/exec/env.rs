//! The child's environment: pai's own, minus anything that would hand a secret to the command.
//!
//! A RUN command is chosen by a model, so it must not be able to read the provider keys pai
//! holds. Removed: the provider key variables, every `PAI_*` variable (pai's own settings and
//! secrets), and any variable whose value is, or contains, a secret value the caller names (a key
//! loaded from a config file may sit in an unrelated variable, or inside a URL).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// Provider key variables never passed on.
const KEY_VARIABLES: &[&str] = &[
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
];

/// Secrets at least this long are also looked for inside values; shorter ones only match whole
/// values, so a short secret cannot strip unrelated variables that merely contain it.
const MIN_SUBSTRING_SECRET_LEN: usize = 8;

/// pai's current environment with keys, `PAI_*` variables and `secrets` removed.
pub fn child_environment(secrets: &[String]) -> Vec<(OsString, OsString)> {
    scrub_environment(std::env::vars_os(), secrets)
}

/// `vars` without provider keys, `PAI_*` variables, and variables whose value equals or contains
/// one of `secrets` (empty secrets are ignored; secrets shorter than 8 bytes match only whole
/// values).
pub fn scrub_environment<I>(vars: I, secrets: &[String]) -> Vec<(OsString, OsString)>
where
    I: IntoIterator<Item = (OsString, OsString)>,
{
    vars.into_iter()
        .filter(|(name, value)| !is_sensitive(name, value, secrets))
        .collect()
}

/// Whether a variable's name says it holds a credential (`*_API_KEY`, `*_TOKEN`, `*_SECRET`,
/// `*_PASSWORD`, `*_ACCESS_KEY`, `*_PRIVATE_KEY`, anything with `SECRET`). A command the model
/// chose gets none of them; a build that needs one (a private registry token) is run by the
/// user, or the variable is set in the command itself after approval.
fn credential_name(name: &[u8]) -> bool {
    let upper: Vec<u8> = name.to_ascii_uppercase();
    let ends = |suffix: &[u8]| upper.ends_with(suffix);
    ends(b"_API_KEY")
        || ends(b"_APIKEY")
        || ends(b"_TOKEN")
        || ends(b"_SECRET")
        || ends(b"_PASSWORD")
        || ends(b"_PASSWD")
        || ends(b"_ACCESS_KEY")
        || ends(b"_PRIVATE_KEY")
        || upper.windows(6).any(|w| w == b"SECRET")
}

/// Whether a variable a user's configuration names explicitly (an MCP server's `env`) must
/// still be withheld: a provider key variable, a `PAI_*` variable, or a value carrying one of
/// `secrets`. Unlike [`scrub_environment`], credential-looking names pass: a server's own
/// token set by the user is what that server needs.
pub fn carries_secret(name: &OsStr, value: &OsStr, secrets: &[String]) -> bool {
    let name_bytes = name.as_bytes();
    name_bytes.starts_with(b"PAI_")
        || KEY_VARIABLES.iter().any(|k| k.as_bytes() == name_bytes)
        || is_sensitive(OsStr::new("_"), value, secrets)
}

fn is_sensitive(name: &OsStr, value: &OsStr, secrets: &[String]) -> bool {
    let name = name.as_bytes();
    if name.starts_with(b"PAI_")
        || KEY_VARIABLES.iter().any(|k| k.as_bytes() == name)
        || credential_name(name)
    {
        return true;
    }
    let value = value.as_bytes();
    secrets
        .iter()
        .map(String::as_bytes)
        .filter(|s| !s.is_empty())
        .any(|secret| {
            value == secret || (secret.len() >= MIN_SUBSTRING_SECRET_LEN && contains(value, secret))
        })
}

/// Variables that hand a command a channel to a process outside its confinement: a terminal
/// multiplexer or terminal that runs commands on request (`tmux new-window`, kitty's remote
/// control), an agent that signs with the user's keys, a container daemon that starts
/// privileged containers, the desktop's session bus and display servers, an editor's server.
/// A confined command gets none of them (the sockets themselves are hidden by the shield).
pub const CHANNEL_VARIABLES: &[&str] = &[
    "TMUX",
    "TMUX_PANE",
    "STY",
    "ZELLIJ",
    "ZELLIJ_SESSION_NAME",
    "KITTY_LISTEN_ON",
    "KITTY_WINDOW_ID",
    "WEZTERM_UNIX_SOCKET",
    "ALACRITTY_SOCKET",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "EMACS_SOCKET_NAME",
    "VSCODE_IPC_HOOK_CLI",
    "VSCODE_GIT_IPC_HANDLE",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "GNOME_KEYRING_CONTROL",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "BUILDKIT_HOST",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "SWAYSOCK",
    "I3SOCK",
    "HYPRLAND_INSTANCE_SIGNATURE",
    "PULSE_SERVER",
    "XDG_RUNTIME_DIR",
];

/// Whether variable `name` opens a channel out of a confined command ([`CHANNEL_VARIABLES`]).
pub fn is_channel_variable(name: &OsStr) -> bool {
    CHANNEL_VARIABLES
        .iter()
        .any(|v| v.as_bytes() == name.as_bytes())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn names(v: &[(OsString, OsString)]) -> Vec<String> {
        v.iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn removes_provider_keys_and_pai_variables() {
        let out = scrub_environment(
            vars(&[
                ("PATH", "/usr/bin"),
                ("GEMINI_API_KEY", "g"),
                ("GOOGLE_API_KEY", "g2"),
                ("OPENAI_API_KEY", "o"),
                ("ANTHROPIC_API_KEY", "a"),
                ("PAI_PROVIDER", "gemini"),
                ("PAI_", "x"),
                ("PAIX", "kept: not the PAI_ prefix"),
                ("openai_api_key", "removed: a credential name, in any case"),
                ("HOME", "/home/u"),
            ]),
            &[],
        );
        assert_eq!(names(&out), ["PATH", "PAIX", "HOME"]);
    }

    #[test]
    fn removes_variables_carrying_a_secret_value() {
        let secret = "sk-live-0123456789".to_string();
        let out = scrub_environment(
            vars(&[
                ("MY_TOKEN", "sk-live-0123456789"),
                ("DATABASE_URL", "postgres://u:sk-live-0123456789@db/x"),
                ("OTHER", "sk-live-01234"),
                ("EDITOR", "vi"),
            ]),
            std::slice::from_ref(&secret),
        );
        assert_eq!(names(&out), ["OTHER", "EDITOR"]);
    }

    #[test]
    fn short_and_empty_secrets_match_only_whole_values() {
        let out = scrub_environment(
            vars(&[("A", "abc"), ("B", "xabcx"), ("C", ""), ("D", "v")]),
            &["abc".to_string(), String::new()],
        );
        assert_eq!(names(&out), ["B", "C", "D"]);
    }

    #[test]
    fn non_utf8_values_are_compared_as_bytes() {
        let value = OsString::from_vec(b"\xffsecret-value-123\xfe".to_vec());
        let out = scrub_environment(
            vec![
                (OsString::from("X"), value),
                (OsString::from("Y"), "ok".into()),
            ],
            &["secret-value-123".to_string()],
        );
        assert_eq!(names(&out), ["Y"]);
    }

    #[test]
    fn channel_variables_are_recognised_and_ordinary_ones_are_not() {
        for v in [
            "TMUX",
            "SSH_AUTH_SOCK",
            "DOCKER_HOST",
            "DBUS_SESSION_BUS_ADDRESS",
            "STY",
        ] {
            assert!(is_channel_variable(OsStr::new(v)), "{v}");
        }
        for v in ["PATH", "HOME", "TERM", "TMUXP_CONFIGDIR", "LANG"] {
            assert!(!is_channel_variable(OsStr::new(v)), "{v}");
        }
    }

    #[test]
    fn credential_names_never_reach_a_command() {
        let out = scrub_environment(
            vars(&[
                ("GITHUB_TOKEN", "ghp_x"),
                ("AWS_SECRET_ACCESS_KEY", "abc"),
                ("DB_PASSWORD", "pw"),
                ("MY_API_KEY", "k"),
                ("HOME", "/home/u"),
                ("PATH", "/usr/bin"),
                ("TOKENIZERS_PARALLELISM", "false"),
            ]),
            &[],
        );
        assert_eq!(names(&out), ["HOME", "PATH", "TOKENIZERS_PARALLELISM"]);
    }
}

//! What a line typed at the prompt means: a request for the agent, a slash command, or a way
//! out.

/// One parsed input line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    /// Nothing typed.
    Empty,
    /// `exit` / `quit`.
    Exit,
    /// `/help`.
    Help,
    /// `/undo`.
    Undo,
    /// `/redo`.
    Redo,
    /// `/log`.
    Log,
    /// `/model [NAME]`.
    Model(Option<String>),
    /// `/clear`.
    Clear,
    /// `/tokens`.
    Tokens,
    /// A slash command pai does not know.
    Unknown(String),
    /// A request for the agent.
    Request(String),
}

/// Parse a submitted line. Only a single word starting with `/` (plus the argument of
/// `/model`) is a command, so a request like "/etc/hosts is wrong, fix it" is still a request.
pub(crate) fn parse(line: &str) -> Command {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Command::Empty;
    }
    let lower = trimmed.to_ascii_lowercase();
    if matches!(lower.as_str(), "exit" | "quit" | "/exit" | "/quit") {
        return Command::Exit;
    }
    let Some(rest) = trimmed.strip_prefix('/') else {
        return Command::Request(line.trim_matches('\n').trim().to_string());
    };
    let mut words = rest.split_whitespace();
    let name = words.next().unwrap_or_default().to_ascii_lowercase();
    let args: Vec<&str> = words.collect();
    match (name.as_str(), args.as_slice()) {
        ("help" | "?", []) => Command::Help,
        ("undo", []) => Command::Undo,
        ("redo", []) => Command::Redo,
        ("log", []) => Command::Log,
        ("clear", []) => Command::Clear,
        ("tokens", []) => Command::Tokens,
        ("model", []) => Command::Model(None),
        ("model", [m]) => Command::Model(Some((*m).to_string())),
        _ if name.contains('/') || !args.is_empty() && !is_command_name(&name) => {
            Command::Request(trimmed.to_string())
        }
        _ => Command::Unknown(format!("/{name}")),
    }
}

fn is_command_name(name: &str) -> bool {
    matches!(
        name,
        "help" | "undo" | "redo" | "log" | "clear" | "tokens" | "model"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_and_requests() {
        assert_eq!(parse("  "), Command::Empty);
        assert_eq!(parse("exit"), Command::Exit);
        assert_eq!(parse(" QUIT "), Command::Exit);
        assert_eq!(parse("/help"), Command::Help);
        assert_eq!(parse("/undo"), Command::Undo);
        assert_eq!(parse("/redo"), Command::Redo);
        assert_eq!(parse("/log"), Command::Log);
        assert_eq!(parse("/clear"), Command::Clear);
        assert_eq!(parse("/tokens"), Command::Tokens);
        assert_eq!(parse("/model"), Command::Model(None));
        assert_eq!(
            parse("/model gpt-4o-mini"),
            Command::Model(Some("gpt-4o-mini".into()))
        );
        assert_eq!(parse("/frobnicate"), Command::Unknown("/frobnicate".into()));
        assert_eq!(
            parse("/etc/hosts is wrong, fix it"),
            Command::Request("/etc/hosts is wrong, fix it".into())
        );
        assert_eq!(
            parse("make a calculator\nin python"),
            Command::Request("make a calculator\nin python".into())
        );
        assert_eq!(
            parse("exit the loop early in main.py"),
            Command::Request("exit the loop early in main.py".into())
        );
    }
}

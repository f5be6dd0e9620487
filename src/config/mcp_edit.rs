//! `pai mcp add` and `pai mcp remove`: the user's `[mcp_servers.<name>]` tables edited in
//! place with the same toml_edit path as saved RUN rules, so comments and layout survive.

use std::path::Path;

use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, value};

use super::mcp_servers::{UserServer, user_spec, valid_server_name};
use super::rules::{read_or_empty, table_in, write_atomically};

fn load(path: &Path) -> Result<DocumentMut, String> {
    let text = read_or_empty(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    text.parse().map_err(|e: toml_edit::TomlError| {
        format!(
            "{} is not valid TOML ({})",
            path.display(),
            e.message().trim()
        )
    })
}

fn save(path: &Path, doc: &DocumentMut) -> Result<(), String> {
    write_atomically(path, doc.to_string().as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Add (or replace) the server `name` in the settings file at `path`.
pub fn add_server(path: &Path, name: &str, server: &UserServer) -> Result<(), String> {
    if !valid_server_name(name) {
        return Err(format!(
            "`{name}` cannot name a server: use letters, digits, `_` and `-`"
        ));
    }
    user_spec(name, server)?;
    let mut doc = load(path)?;
    let servers = table_in(doc.as_table_mut(), "mcp_servers", true)
        .map_err(|e| format!("cannot add the server to {}: {e}", path.display()))?;
    let mut table = Table::new();
    if let Some(command) = &server.command {
        table.insert("command", value(command.as_str()));
        let mut args = Array::new();
        for a in &server.args {
            args.push(a.as_str());
        }
        table.insert("args", value(args));
    }
    if let Some(url) = &server.url {
        table.insert("url", value(url.as_str()));
    }
    if !server.env.is_empty() {
        let mut env = InlineTable::new();
        for (k, v) in &server.env {
            env.insert(k, v.as_str().into());
        }
        table.insert("env", value(env));
    }
    servers.insert(name, Item::Table(table));
    save(path, &doc)
}

/// Remove the server `name`; `Ok(false)` when it was not there.
pub fn remove_server(path: &Path, name: &str) -> Result<bool, String> {
    let mut doc = load(path)?;
    let Some(servers) = doc
        .as_table_mut()
        .get_mut("mcp_servers")
        .and_then(Item::as_table_mut)
    else {
        return Ok(false);
    };
    if servers.remove(name).is_none() {
        return Ok(false);
    }
    save(path, &doc)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FileSettings;

    #[test]
    fn servers_are_added_and_removed_keeping_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "# mine\nmodel = \"m\"\n").unwrap();
        let server = UserServer {
            command: Some("node".into()),
            args: vec!["srv.js".into(), "--flag".into()],
            env: [("A".to_string(), "1".to_string())].into(),
            ..UserServer::default()
        };
        add_server(&path, "docs", &server).unwrap();
        let web = UserServer {
            url: Some("http://127.0.0.1:9/mcp".into()),
            ..UserServer::default()
        };
        add_server(&path, "web", &web).unwrap();
        let loaded = FileSettings::load(&path).unwrap();
        assert_eq!(loaded.mcp_servers["docs"], server);
        assert_eq!(loaded.mcp_servers["web"], web);
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .starts_with("# mine\n")
        );

        assert!(remove_server(&path, "docs").unwrap());
        assert!(!remove_server(&path, "docs").unwrap());
        let loaded = FileSettings::load(&path).unwrap();
        assert!(!loaded.mcp_servers.contains_key("docs"));
        assert!(add_server(&path, "a.b", &server).is_err());
        assert!(add_server(&path, "none", &UserServer::default()).is_err());
    }
}

//! `tackle mcp add` / `tackle mcp remove`: tackle.toml edited in place, its comments and layout
//! kept; the result is checked as a whole configuration before it is written.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use toml_edit::{DocumentMut, Item, Table, value};

use super::pairs;
use crate::UsageError;
use crate::cli::{McpAddArgs, McpNameArgs};
use crate::runtime::workspace_dir;
use crate::settings::{CONFIG_FILE, Settings, user_config_dir};

/// The tackle.toml `add`/`remove` edit: the user's (`--user`) or the workspace's.
fn target(user: bool, workspace: Option<&PathBuf>) -> Result<PathBuf> {
    if user {
        let dir = user_config_dir().ok_or_else(|| {
            UsageError("cannot find the user config directory; set HOME or XDG_CONFIG_HOME".into())
        })?;
        return Ok(dir.join(CONFIG_FILE));
    }
    Ok(workspace_dir(workspace)?.join(CONFIG_FILE))
}

fn read_document(path: &Path) -> Result<DocumentMut> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    text.parse::<DocumentMut>()
        .map_err(|e| UsageError(format!("{} is not valid TOML: {e}", path.display())).into())
}

/// The `[mcp.servers]` table, created (implicit, so no empty headers appear) when missing.
fn servers_table(doc: &mut DocumentMut) -> Result<&mut Table> {
    let mcp = doc.entry("mcp").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let mcp = mcp.as_table_mut().ok_or_else(|| UsageError("`mcp` in tackle.toml is not a table".into()))?;
    let servers = mcp.entry("servers").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    servers
        .as_table_mut()
        .ok_or_else(|| UsageError("`mcp.servers` in tackle.toml is not a table".into()).into())
}

/// Checks that `text` is a configuration Tackle accepts, naming the file.
fn check(path: &Path, text: &str) -> Result<()> {
    let table: toml::Table =
        text.parse().map_err(|e: toml::de::Error| UsageError(format!("{}: {e}", path.display())))?;
    <Settings as serde::Deserialize>::deserialize(toml::Value::Table(table))
        .map_err(|e| UsageError(format!("the new {} would be invalid: {e}", path.display())))?;
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// The server table `add` writes.
fn server_table(args: &McpAddArgs) -> Result<Table> {
    let mut table = Table::new();
    match (&args.url, args.command.split_first()) {
        (Some(_), Some(_)) => {
            return Err(UsageError("give either --url or a command after `--`, not both".into()).into());
        }
        (None, None) => {
            return Err(UsageError(format!(
                "`tackle mcp add {}` needs --url URL (Streamable HTTP) or `-- COMMAND ARGS...` (stdio)",
                args.name
            ))
            .into());
        }
        (Some(url), None) => {
            let parsed = url::Url::parse(url).map_err(|e| UsageError(format!("--url {url:?}: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(UsageError(format!("--url {url:?} is not an http(s) URL")).into());
            }
            if !args.env.is_empty() {
                return Err(UsageError(
                    "--env is for stdio servers (a command); use --header for HTTP".into(),
                )
                .into());
            }
            table.insert("url", value(url.as_str()));
            let headers = pairs("--header", &args.headers)?;
            if !headers.is_empty() {
                let mut inline = toml_edit::InlineTable::new();
                for (name, v) in headers {
                    inline.insert(&name, v.into());
                }
                table.insert("headers", value(inline));
            }
        }
        (None, Some((command, rest))) => {
            if !args.headers.is_empty() {
                return Err(UsageError(
                    "--header is for HTTP servers (--url); use --env for a command".into(),
                )
                .into());
            }
            if args.client_id.is_some()
                || !args.scopes.is_empty()
                || args.client_metadata_url.is_some()
                || args.grant.is_some()
            {
                return Err(UsageError("OAuth options are for HTTP servers (--url)".into()).into());
            }
            table.insert("command", value(command.as_str()));
            if !rest.is_empty() {
                let mut array = toml_edit::Array::new();
                for arg in rest {
                    array.push(arg.as_str());
                }
                table.insert("args", value(array));
            }
            let env = pairs("--env", &args.env)?;
            if !env.is_empty() {
                let mut inline = toml_edit::InlineTable::new();
                for (name, v) in env {
                    inline.insert(&name, v.into());
                }
                table.insert("env", value(inline));
            }
        }
    }
    if let Some(protocol) = &args.protocol {
        protocol.parse::<tackle_mcp::McpProtocol>().map_err(|e| UsageError(format!("--protocol: {e}")))?;
        table.insert("protocol", value(protocol.as_str()));
    }
    if args.client_id.is_some()
        || args.client_secret_env.is_some()
        || !args.scopes.is_empty()
        || args.client_metadata_url.is_some()
        || args.grant.is_some()
    {
        let mut oauth = Table::new();
        if let Some(grant) = &args.grant {
            oauth.insert("grant", value(grant.replace('-', "_")));
        }
        if let Some(var) = &args.private_key_env {
            oauth.insert("private_key_env", value(var.as_str()));
        }
        if let Some(alg) = &args.signing_algorithm {
            oauth.insert("signing_algorithm", value(alg.as_str()));
        }
        if let Some(url) = &args.client_metadata_url {
            let parsed = url::Url::parse(url)
                .map_err(|e| UsageError(format!("--client-metadata-url {url:?}: {e}")))?;
            if parsed.scheme() != "https" || parsed.path() == "/" {
                return Err(UsageError(format!(
                    "--client-metadata-url {url:?} must be an https URL with a path (the document Tackle is described by)"
                ))
                .into());
            }
            oauth.insert("client_metadata_url", value(url.as_str()));
        }
        if let Some(id) = &args.client_id {
            oauth.insert("client_id", value(id.as_str()));
        }
        if let Some(var) = &args.client_secret_env {
            oauth.insert("client_secret_env", value(var.as_str()));
        }
        let idp = [
            ("idp_issuer", &args.idp_issuer),
            ("idp_token_endpoint", &args.idp_token_endpoint),
            ("idp_client_id", &args.idp_client_id),
            ("idp_client_secret_env", &args.idp_client_secret_env),
            ("id_token_env", &args.id_token_env),
            ("assertion_env", &args.assertion_env),
            ("assertion_file", &args.assertion_file),
        ];
        for (key, setting) in idp {
            if let Some(setting) = setting {
                oauth.insert(key, value(setting.as_str()));
            }
        }
        if !args.scopes.is_empty() {
            let mut array = toml_edit::Array::new();
            for scope in &args.scopes {
                array.push(scope.as_str());
            }
            oauth.insert("scopes", value(array));
        }
        table.insert("oauth", Item::Table(oauth));
    }
    Ok(table)
}

pub fn add(args: McpAddArgs) -> Result<ExitCode> {
    if args.name.is_empty() || args.name.contains(['.', '"', '\'', '\n']) {
        return Err(UsageError(format!(
            "{:?} cannot name a server: no dots, quotes or line breaks",
            args.name
        ))
        .into());
    }
    // Everything is checked before the file is touched.
    let table = server_table(&args)?;
    let path = target(args.user, args.place.workspace.as_ref())?;
    let mut doc = read_document(&path)?;
    let servers = servers_table(&mut doc)?;
    if servers.contains_key(&args.name) && !args.force {
        return Err(UsageError(format!(
            "`{}` is already in {}; pass --force to replace it, or `tackle mcp remove {}` first",
            args.name,
            path.display(),
            args.name
        ))
        .into());
    }
    servers.insert(&args.name, Item::Table(table));
    let text = doc.to_string();
    check(&path, &text)?;
    write(&path, &text)?;
    eprintln!("added `{}` to {}", args.name, path.display());
    Ok(ExitCode::SUCCESS)
}

pub fn remove(args: McpNameArgs) -> Result<ExitCode> {
    // Without --user: the workspace's file when it has the server, else the user's.
    let mut candidates = vec![target(args.user, args.place.workspace.as_ref())?];
    if !args.user {
        candidates.push(target(true, None)?);
    }
    for path in candidates {
        if !path.is_file() {
            continue;
        }
        let mut doc = read_document(&path)?;
        let removed = doc
            .get_mut("mcp")
            .and_then(Item::as_table_like_mut)
            .and_then(|mcp| mcp.get_mut("servers"))
            .and_then(Item::as_table_like_mut)
            .and_then(|servers| servers.remove(&args.name))
            .is_some();
        if removed {
            let text = doc.to_string();
            check(&path, &text)?;
            write(&path, &text)?;
            eprintln!("removed `{}` from {}", args.name, path.display());
            return Ok(ExitCode::SUCCESS);
        }
    }
    Err(UsageError(format!(
        "no MCP server `{}` in tackle.toml; `tackle mcp list` shows the configured ones",
        args.name
    ))
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::McpWhere;

    fn add_args(name: &str) -> McpAddArgs {
        McpAddArgs {
            name: name.into(),
            url: None,
            headers: vec![],
            env: vec![],
            protocol: None,
            client_id: None,
            client_secret_env: None,
            scopes: vec![],
            client_metadata_url: None,
            grant: None,
            idp_issuer: None,
            idp_token_endpoint: None,
            idp_client_id: None,
            idp_client_secret_env: None,
            id_token_env: None,
            assertion_env: None,
            assertion_file: None,
            private_key_env: None,
            signing_algorithm: None,
            user: false,
            force: false,
            place: McpWhere { workspace: None },
            command: vec![],
        }
    }

    #[test]
    fn add_keeps_comments_and_remove_takes_only_the_server() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CONFIG_FILE);
        std::fs::write(
            &path,
            "# my settings\nmodel = \"m\" # the model\n\n[mcp.servers.old]\ncommand = \"x\"\n",
        )
        .unwrap();
        let place = McpWhere { workspace: Some(dir.path().to_owned()) };
        let mut http = add_args("hosted");
        http.url = Some("https://mcp.example/mcp".into());
        http.headers = vec!["X-Team=blue".into()];
        http.protocol = Some("2025-11-25".into());
        http.client_id = Some("tackle-cli".into());
        http.client_secret_env = Some("HOSTED_SECRET".into());
        http.scopes = vec!["files:read".into()];
        http.place = place.clone();
        add(http).unwrap();
        let mut stdio = add_args("files");
        stdio.command = vec!["npx".into(), "-y".into(), "server-files".into(), ".".into()];
        stdio.env = vec!["LOG=warn".into()];
        stdio.place = place.clone();
        add(stdio).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# my settings\nmodel = \"m\" # the model\n"), "{text}");
        let settings = Settings::load_from(None, dir.path(), &|_| None).unwrap().settings;
        let hosted = &settings.mcp.servers["hosted"];
        assert_eq!(hosted.protocol, tackle_mcp::McpProtocol::V2025_11_25);
        let oauth = hosted.oauth.as_ref().unwrap();
        assert_eq!(
            (oauth.client_id.as_deref(), oauth.scopes.as_slice()),
            (Some("tackle-cli"), &["files:read".to_owned()][..])
        );
        assert!(matches!(&settings.mcp.servers["files"].transport,
            tackle_mcp::McpTransportConfig::Stdio { args, env, .. } if args.len() == 3 && env["LOG"] == "warn"));

        let mut again = add_args("files");
        again.command = vec!["other".into()];
        again.place = place.clone();
        assert!(add(again).unwrap_err().to_string().contains("--force"));

        remove(McpNameArgs { name: "old".into(), place: place.clone(), json: false, user: false }).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("# my settings")
                && !text.contains("[mcp.servers.old]")
                && text.contains("[mcp.servers.files]"),
            "{text}"
        );
        assert!(remove(McpNameArgs { name: "old".into(), place, json: false, user: false }).is_err());
    }

    #[test]
    fn bad_input_is_refused_before_the_file_is_touched() {
        let dir = tempfile::tempdir().unwrap();
        let place = McpWhere { workspace: Some(dir.path().to_owned()) };
        let cases: Vec<(McpAddArgs, &str)> = vec![
            (add_args("x"), "--url"),
            (
                {
                    let mut a = add_args("x");
                    a.url = Some("ftp://h/x".into());
                    a
                },
                "http(s)",
            ),
            (
                {
                    let mut a = add_args("x");
                    a.url = Some("http://h/mcp".into());
                    a.headers = vec!["novalue".into()];
                    a
                },
                "NAME=VALUE",
            ),
            (
                {
                    let mut a = add_args("x");
                    a.command = vec!["srv".into()];
                    a.headers = vec!["A=b".into()];
                    a
                },
                "--header",
            ),
            (
                {
                    let mut a = add_args("x");
                    a.url = Some("http://h/mcp".into());
                    a.protocol = Some("2024".into());
                    a
                },
                "protocol",
            ),
            (
                {
                    let mut a = add_args("a.b");
                    a.url = Some("http://h/mcp".into());
                    a
                },
                "dots",
            ),
        ];
        for (mut args, needle) in cases {
            args.place = place.clone();
            let err = add(args).unwrap_err().to_string();
            assert!(err.contains(needle), "{needle}: {err}");
        }
        assert!(!dir.path().join(CONFIG_FILE).exists());
    }
}

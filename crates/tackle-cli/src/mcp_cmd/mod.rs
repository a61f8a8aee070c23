//! `tackle mcp ...`: managing MCP servers like `codex mcp` and `claude mcp` do.
//!
//! - `list.rs`: `list` (every server: state, protocol, tools, definition tokens).
//! - `edit.rs`: `add` / `remove`, editing tackle.toml in place (comments kept).
//! - `inspect.rs`: `get`, `tools`, `call`, `resources`, `prompts`, `skills` (one server at a time).
//! - `login.rs`: `login` / `logout` (the browser sign-in itself is `crate::mcp_sign_in`, shared with
//!   every command that connects).

mod edit;
mod inspect;
mod list;
mod login;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use tackle_mcp::McpServerConfig;

pub use list::list;

use crate::UsageError;
use crate::cli::{McpCommand, McpWhere};
use crate::runtime::workspace_dir;
use crate::settings::Settings;

/// Runs one `tackle mcp` command.
pub async fn run(command: McpCommand) -> Result<ExitCode> {
    match command {
        McpCommand::List(args) => list(args).await,
        McpCommand::Add(args) => edit::add(*args),
        McpCommand::Remove(args) => edit::remove(args),
        McpCommand::Get(args) => inspect::get(args).await,
        McpCommand::Tools(args) => inspect::tools(args).await,
        McpCommand::Call(args) => inspect::call(args).await,
        McpCommand::Resources(args) => inspect::resources(args).await,
        McpCommand::Prompts(args) => inspect::prompts(args).await,
        McpCommand::Skills(args) => inspect::skills(args).await,
        McpCommand::Login(args) => login::login(args).await,
        McpCommand::Logout(args) => login::logout(args).await,
        McpCommand::Serve(args) => crate::mcp_serve::run(*args).await,
    }
}

/// The workspace and its settings.
fn load(place: &McpWhere) -> Result<(PathBuf, Settings)> {
    let workspace = workspace_dir(place.workspace.as_ref())?;
    let settings = Settings::load(&workspace).map_err(|e| UsageError(e.to_string()))?.settings;
    Ok((workspace, settings))
}

/// The configuration of server `name`, or an error naming the configured ones.
fn server<'a>(settings: &'a Settings, name: &str) -> Result<&'a McpServerConfig> {
    settings.mcp.servers.get(name).ok_or_else(|| {
        let known: Vec<&str> = settings.mcp.servers.keys().map(String::as_str).collect();
        let known = if known.is_empty() {
            "none are configured".to_owned()
        } else {
            format!("configured: {}", known.join(", "))
        };
        UsageError(format!(
            "no MCP server `{name}` in tackle.toml ({known}); add one with `tackle mcp add {name} ...`"
        ))
        .into()
    })
}

/// `NAME=VALUE` pairs of a repeatable flag.
fn pairs(flag: &str, values: &[String]) -> Result<Vec<(String, String)>> {
    values
        .iter()
        .map(|v| match v.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_owned(), value.to_owned())),
            _ => Err(UsageError(format!("{flag} {v:?} is not NAME=VALUE")).into()),
        })
        .collect()
}

//! `tackle mcp ...`: managing MCP servers like `codex mcp` and `claude mcp` do.
//!
//! - `list.rs`: `list` (every server: state, protocol, tools, definition tokens).
//! - `edit.rs`: `add` / `remove`, editing tackle.toml in place (comments kept).
//! - `inspect.rs`: `get`, `tools`, `call`, `resources`, `prompts`, `skills` (one server at a time).
//! - `login.rs`: `login` / `logout`, and [`BrowserSignIn`]: the sign-in page through `$BROWSER`.

mod edit;
mod inspect;
mod list;
mod login;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use tackle_mcp::{McpOptions, McpServerConfig};

pub use list::list;
pub use login::BrowserSignIn;

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

/// Where the servers' OAuth credentials live: `mcp-credentials` in the data directory.
pub fn credentials_dir(settings: &Settings) -> Option<PathBuf> {
    settings.data_dir().ok().map(|d| d.join("mcp-credentials"))
}

/// Whether a person can sign in to a server from this process: a browser is configured
/// (`$BROWSER`) or someone is at the terminal to open the printed URL.
pub fn can_sign_in() -> bool {
    std::env::var_os("BROWSER").is_some_and(|b| !b.is_empty()) || std::io::stderr().is_terminal()
}

/// Connection options of a command: the credentials directory, and the browser sign-in when
/// `interactive`.
pub fn mcp_options(settings: &Settings, interactive: bool) -> McpOptions {
    McpOptions {
        credentials_dir: credentials_dir(settings),
        sign_in: interactive.then(|| {
            Arc::new(BrowserSignIn::new(Duration::from_secs(settings.mcp.login_timeout_secs.max(1))))
                as Arc<dyn tackle_mcp::oauth::SignIn>
        }),
        fresh_sign_in: false,
    }
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

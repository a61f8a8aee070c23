//! `tackle mcp login NAME` / `tackle mcp logout NAME`.

use std::process::ExitCode;

use anyhow::Result;
use tackle_mcp::oauth::store::CredentialFile;
use tackle_mcp::{McpConnection, McpTransportConfig};

use super::{load, server};
use crate::UsageError;
use crate::cli::McpNameArgs;
use crate::mcp_sign_in::{credentials_dir, mcp_options};

pub async fn login(args: McpNameArgs) -> Result<ExitCode> {
    let (_, settings) = load(&args.place)?;
    let config = server(&settings, &args.name)?.clone();
    if !matches!(config.transport, McpTransportConfig::Http { .. }) {
        return Err(UsageError(format!(
            "`{}` is a stdio server: it gets its credentials from its environment (`env` in tackle.toml), not by signing in",
            args.name
        ))
        .into());
    }
    let mut options = mcp_options(&settings, true);
    options.fresh_sign_in = true;
    let connection = McpConnection::connect_with(&args.name, config, &options).await?;
    // Listing the tools proves the credentials work (and is where many servers first ask).
    let listed = connection.list_tools().await;
    connection.shutdown().await;
    let tools = listed?;
    let dir = credentials_dir(&settings);
    let stored = match (&dir, &connection.config().transport) {
        (Some(dir), McpTransportConfig::Http { url, .. }) => {
            CredentialFile::new(dir, &args.name, url).summary()?
        }
        _ => None,
    };
    match stored {
        Some(summary) => {
            let issuer = summary.issuer.as_deref().unwrap_or("its authorization server");
            let scopes = if summary.scopes.is_empty() {
                String::new()
            } else {
                format!(" (scopes: {})", summary.scopes.join(" "))
            };
            eprintln!("signed in to `{}` at {issuer}{scopes}; {} tools", args.name, tools.len());
        }
        None => eprintln!("`{}` did not ask for a sign-in; {} tools", args.name, tools.len()),
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn logout(args: McpNameArgs) -> Result<ExitCode> {
    let (_, settings) = load(&args.place)?;
    let config = server(&settings, &args.name)?;
    let (McpTransportConfig::Http { url, .. }, Some(dir)) = (&config.transport, credentials_dir(&settings))
    else {
        eprintln!("`{}` has no stored sign-in", args.name);
        return Ok(ExitCode::SUCCESS);
    };
    let file = CredentialFile::new(&dir, &args.name, url);
    if file.remove()? {
        eprintln!("signed out of `{}` (its stored credentials are deleted)", args.name);
    } else {
        eprintln!("`{}` has no stored sign-in", args.name);
    }
    Ok(ExitCode::SUCCESS)
}

//! `tackle mcp login NAME` / `tackle mcp logout NAME`, and the browser sign-in.

use std::process::{ExitCode, Stdio};
use std::time::Duration;

use anyhow::Result;
use tackle_mcp::oauth::SignIn;
use tackle_mcp::oauth::store::CredentialFile;
use tackle_mcp::{McpConnection, McpTransportConfig};

use super::{credentials_dir, load, mcp_options, server};
use crate::UsageError;
use crate::cli::McpNameArgs;

/// Shows the sign-in page: runs `$BROWSER` with the URL (`%s` in it is replaced, else the URL
/// is appended; of a `:`-separated list the first is used) and prints the URL on stderr.
#[derive(Debug, Clone)]
pub struct BrowserSignIn {
    timeout: Duration,
}

impl BrowserSignIn {
    /// A sign-in that waits at most `timeout` for the person.
    pub fn new(timeout: Duration) -> Self {
        Self { timeout }
    }
}

/// The program and arguments `$BROWSER` asks for, to open `url`.
pub fn browser_command(browser: &str, url: &str) -> Option<Vec<String>> {
    let first = browser.split(':').map(str::trim).find(|b| !b.is_empty())?;
    let mut words: Vec<String> = first.split_whitespace().map(str::to_owned).collect();
    if words.iter().any(|w| w.contains("%s")) {
        for word in &mut words {
            *word = word.replace("%s", url);
        }
    } else {
        words.push(url.to_owned());
    }
    Some(words)
}

impl SignIn for BrowserSignIn {
    fn show(&self, server: &str, url: &str) {
        eprintln!("Sign in to `{server}` in your browser; if it does not open, visit:\n  {url}");
        let Some(browser) = std::env::var("BROWSER").ok() else { return };
        let Some(words) = browser_command(&browser, url) else { return };
        let mut command = std::process::Command::new(&words[0]);
        command.args(&words[1..]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        match command.spawn() {
            // Reaped on a thread of its own: the browser may outlive the sign-in.
            Ok(mut child) => {
                std::thread::spawn(move || child.wait());
            }
            Err(e) => eprintln!("(could not run $BROWSER `{}`: {e})", words[0]),
        }
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browser_commands() {
        let url = "https://as.example/authorize?x=1";
        assert_eq!(browser_command("firefox", url).unwrap(), ["firefox", url]);
        assert_eq!(browser_command("open -a Safari %s", url).unwrap(), ["open", "-a", "Safari", url]);
        assert_eq!(browser_command(" : w3m:lynx", url).unwrap(), ["w3m", url]);
        assert!(browser_command("", url).is_none());
    }
}

//! How the CLI connects to MCP servers that need a sign-in: where their OAuth credentials live,
//! whether a person can sign in from this process, and [`BrowserSignIn`], the sign-in page
//! through `$BROWSER`. Used by every command that connects (`runtime`, `tackle mcp ...`), so it
//! depends on the settings only.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tackle_mcp::McpOptions;
use tackle_mcp::oauth::SignIn;

use crate::settings::Settings;

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

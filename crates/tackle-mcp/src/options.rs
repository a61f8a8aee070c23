//! [`McpOptions`]: what connecting needs besides a server's configuration.

use std::path::PathBuf;
use std::sync::Arc;

use crate::oauth::SignIn;

/// Where OAuth credentials are kept and whether a person can sign in.
///
/// The default keeps nothing on disk and never signs in interactively: a server that needs a
/// sign-in fails, naming `tackle mcp login NAME`.
#[derive(Clone, Default)]
pub struct McpOptions {
    /// The directory of the servers' OAuth credentials (`<data dir>/mcp-credentials`); `None`
    /// keeps them in this process only.
    pub credentials_dir: Option<PathBuf>,
    /// How a person signs in (a browser, a printed URL); `None`: never interactively.
    pub sign_in: Option<Arc<dyn SignIn>>,
    /// Sign in anew even when credentials are stored (`tackle mcp login`).
    pub fresh_sign_in: bool,
}

impl std::fmt::Debug for McpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpOptions")
            .field("credentials_dir", &self.credentials_dir)
            .field("interactive", &self.sign_in.is_some())
            .field("fresh_sign_in", &self.fresh_sign_in)
            .finish()
    }
}

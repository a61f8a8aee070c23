//! OAuth credentials on disk: one file per server under the data directory, readable by this
//! user only (directory 0700, files 0600), written atomically.
//!
//! Each file records the server's URL (credentials for another URL are not used) and rmcp's
//! [`StoredCredentials`], stamped with the issuer of the authorization server that granted them:
//! when the server moves to another authorization server, rmcp discards them
//! (`AuthorizationManager::initialize_from_store`) and Tackle registers again.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use rmcp::transport::auth::{AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

/// Where a server's credentials are kept.
#[derive(Debug, Clone)]
pub struct CredentialFile {
    path: PathBuf,
    resource: String,
}

#[derive(Serialize, Deserialize)]
struct FileContents {
    /// The MCP server URL the credentials were granted for.
    resource: String,
    credentials: StoredCredentials,
}

/// What `tackle mcp get` may show about stored credentials (never a token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CredentialSummary {
    /// The authorization server that granted them.
    pub issuer: Option<String>,
    /// The client ID Tackle is registered under.
    pub client_id: String,
    /// Scopes granted.
    pub scopes: Vec<String>,
    /// Whether a refresh token is held.
    pub refreshable: bool,
    /// Seconds since the epoch when the access token expires, when known.
    pub expires_at: Option<u64>,
}

impl CredentialFile {
    /// The credentials of `server` (at `resource`) in `dir`.
    pub fn new(dir: &Path, server: &str, resource: &str) -> Self {
        Self { path: dir.join(format!("{}.json", file_stem(server))), resource: resource.to_owned() }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The stored credentials, when there are some for this URL.
    pub fn read(&self) -> Result<Option<StoredCredentials>, std::io::Error> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        match serde_json::from_str::<FileContents>(&text) {
            Ok(contents) if contents.resource == self.resource => Ok(Some(contents.credentials)),
            Ok(_) => Ok(None),
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "unreadable MCP credentials ignored");
                Ok(None)
            }
        }
    }

    /// A summary safe to print.
    pub fn summary(&self) -> Result<Option<CredentialSummary>, std::io::Error> {
        Ok(self.read()?.map(|c| {
            // The token response as its JSON fields (`refresh_token`, `expires_in`).
            let token = c.token_response.as_ref().and_then(|t| serde_json::to_value(t).ok());
            let field = |name: &str| token.as_ref().and_then(|t| t.get(name)).filter(|v| !v.is_null());
            CredentialSummary {
                issuer: c.issuer.clone(),
                client_id: c.client_id.clone(),
                scopes: c.granted_scopes.clone(),
                refreshable: field("refresh_token").is_some(),
                expires_at: field("expires_in")
                    .and_then(serde_json::Value::as_u64)
                    .zip(c.token_received_at)
                    .map(|(lifetime, at)| at.saturating_add(lifetime)),
            }
        }))
    }

    /// Writes `credentials` (a temporary file renamed over the old one, mode 0600).
    pub fn write(&self, credentials: StoredCredentials) -> Result<(), std::io::Error> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        let contents = FileContents { resource: self.resource.clone(), credentials };
        let json = serde_json::to_vec_pretty(&contents).map_err(std::io::Error::other)?;
        let tmp = dir.join(format!(".{}.{}.tmp", file_name(&self.path), std::process::id()));
        let mut file =
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
        file.write_all(&json)?;
        file.sync_all()?;
        std::fs::rename(&tmp, &self.path)
    }

    /// Deletes the credentials; `false` when there were none.
    pub fn remove(&self) -> Result<bool, std::io::Error> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// A file name for a server name: safe characters kept, anything else as `_XX` hex.
fn file_stem(server: &str) -> String {
    server
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' => (b as char).to_string(),
            other => format!("_{other:02x}"),
        })
        .collect()
}

fn store_error(e: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait]
impl CredentialStore for CredentialFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.read()).await.map_err(store_error)?.map_err(store_error)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.write(credentials))
            .await
            .map_err(store_error)?
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.remove())
            .await
            .map_err(store_error)?
            .map_err(store_error)?;
        Ok(())
    }

    /// Refreshes by several processes (a `tackle serve` and a `tackle run`) take turns: a lock
    /// file beside the credentials is held from loading them to saving the new ones.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let lock = self.path.with_extension("lock");
        let file = tokio::task::spawn_blocking(move || -> Result<std::fs::File, std::io::Error> {
            if let Some(dir) = lock.parent() {
                std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
            }
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&lock)?;
            file.lock()?;
            Ok(file)
        })
        .await
        .map_err(store_error)?
        .map_err(store_error)?;
        Ok(Some(CredentialRefreshGuard::new(file)))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn sample() -> StoredCredentials {
        StoredCredentials::new("client-1".into(), None, vec!["mcp:read".into()], Some(1))
            .with_issuer(Some("https://as.example".into()))
    }

    #[test]
    fn credentials_are_private_and_bound_to_the_url() {
        let dir = tempfile::tempdir().unwrap();
        let creds = dir.path().join("mcp-credentials");
        let file = CredentialFile::new(&creds, "my server/x", "https://mcp.example/mcp");
        assert!(file.read().unwrap().is_none());
        file.write(sample()).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(file.path()), 0o600);
        assert_eq!(mode(&creds), 0o700);
        assert!(file.path().file_name().unwrap().to_str().unwrap().starts_with("my_20server_2fx"));
        let back = file.read().unwrap().unwrap();
        assert_eq!(
            (back.client_id.as_str(), back.issuer.as_deref()),
            ("client-1", Some("https://as.example"))
        );
        let summary = file.summary().unwrap().unwrap();
        assert_eq!(summary.scopes, ["mcp:read"]);
        assert!(!summary.refreshable);

        let moved = CredentialFile::new(&creds, "my server/x", "https://elsewhere.example/mcp");
        assert!(moved.read().unwrap().is_none(), "credentials of another URL are not used");
        assert!(file.remove().unwrap());
        assert!(!file.remove().unwrap());
    }

    #[tokio::test]
    async fn the_refresh_guard_excludes_other_holders() {
        let dir = tempfile::tempdir().unwrap();
        let file = CredentialFile::new(dir.path(), "s", "http://h/mcp");
        let guard = file.acquire_refresh_guard().await.unwrap();
        let other = file.clone();
        let waiting = tokio::spawn(async move { other.acquire_refresh_guard().await.map(|_| ()) });
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(!waiting.is_finished(), "a second holder waits");
        drop(guard);
        waiting.await.unwrap().unwrap();
    }
}

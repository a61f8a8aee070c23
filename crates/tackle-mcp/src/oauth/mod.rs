//! OAuth 2.1 for Streamable HTTP servers, as the MCP authorization specification describes.
//!
//! rmcp's `auth` feature does the protocol: protected resource metadata (RFC 9728, from the
//! `WWW-Authenticate` challenge or the well-known paths), authorization server metadata (RFC
//! 8414, OpenID discovery and the 2025-03-26 fallbacks), pre-registered clients, client ID
//! metadata documents and dynamic registration, PKCE S256, the `resource` parameter, the `iss`
//! check (RFC 9207), refresh, and discarding credentials when the issuer changes. Tackle adds
//! what a product needs beside it:
//!
//! - [`store::CredentialFile`]: credentials under the data directory, 0600, one file per
//!   server, refreshed under a lock file so several processes can share them;
//! - [`loopback::Loopback`]: the redirect listener a browser sign-in ends at;
//! - [`Authorizer`]: signs in through a [`SignIn`] (open `$BROWSER` or print the URL) when the
//!   server answers 401, or 403 `insufficient_scope` (step-up: the scopes granted so far plus
//!   the challenged ones), at most [`MAX_SIGN_INS_PER_REQUEST`] times per request; without a
//!   way to show a page it fails at once naming `tackle mcp login NAME`;
//! - [`OAuthHttpClient`]: the Streamable HTTP client that sends the stored token (rmcp's
//!   `AuthClient`) and re-authorizes in the middle of a session, so the connection survives.

mod enterprise;
pub mod loopback;
pub mod store;
mod workload;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{
    AuthClient, AuthorizationManager, AuthorizationRequest, CredentialStore, OAuthState,
    WWWAuthenticateParams,
};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;

use crate::config::{EnterpriseSecrets, OAuthClientSettings, OAuthGrant, SigningAlgorithm};
use loopback::Loopback;
use store::CredentialFile;

/// Sign-ins one request may start (a 401, then a 403 asking for more scope): a server that
/// keeps refusing is not asked forever.
pub const MAX_SIGN_INS_PER_REQUEST: u32 = 2;
/// The client name Tackle registers under.
pub const CLIENT_NAME: &str = "Tackle";

/// Shows a person the sign-in page of a server: opens a browser, or prints the URL.
pub trait SignIn: Send + Sync {
    /// Shows `url`, where the person signs in to `server`.
    fn show(&self, server: &str, url: &str);
    /// How long to wait for the person to finish.
    fn timeout(&self) -> Duration;
}

/// Why signing in failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    /// The server needs a sign-in and nobody can sign in here.
    #[error("`{server}` needs you to sign in: run `tackle mcp login {server}`")]
    NeedsLogin {
        /// The server's name.
        server: String,
    },
    /// Nobody finished signing in in time.
    #[error(
        "nobody finished signing in to `{server}` within {secs}s; run `tackle mcp login {server}` to try again"
    )]
    TimedOut {
        /// The server's name.
        server: String,
        /// The wait.
        secs: u64,
    },
    /// The authorization server said no (the person denied access, or the request was wrong).
    #[error("the authorization server of `{server}` refused: {error}")]
    Refused {
        /// The server's name.
        server: String,
        /// Its `error` and `error_description`.
        error: String,
    },
    /// Discovery, registration or the token exchange failed.
    #[error("signing in to `{server}` failed: {message}")]
    Failed {
        /// The server's name.
        server: String,
        /// What went wrong.
        message: String,
    },
}

/// Signs a connection in, and in again when the server asks for it.
pub struct Authorizer {
    server: String,
    url: String,
    settings: OAuthClientSettings,
    secret: Option<String>,
    /// The PEM key of a `private_key_jwt` client.
    private_key: Option<Vec<u8>>,
    /// The ID token (and IdP secret) of an `enterprise_managed` client.
    enterprise: Option<EnterpriseSecrets>,
    store: Option<CredentialFile>,
    sign_in: Option<Arc<dyn SignIn>>,
    /// One sign-in at a time; its value counts the sign-ins done, so a request that waited for
    /// another's sign-in retries with the new token instead of starting its own.
    signing_in: tokio::sync::Mutex<u64>,
    generation: AtomicU64,
    /// Scopes granted by the last sign-in of this process (when nothing is stored).
    granted: Mutex<Vec<String>>,
    /// Why the last sign-in failed, for the connection's error.
    last_failure: Mutex<Option<OAuthError>>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("server", &self.server)
            .field("settings", &self.settings)
            .field("interactive", &self.sign_in.is_some())
            .finish()
    }
}

impl Authorizer {
    /// The authorizer of `server` at `url`. `secret` is the client secret (already read from
    /// the settings or the environment); `store` where credentials are kept (none: this process
    /// only); `sign_in` how a person signs in (none: never interactively).
    pub fn new(
        server: &str,
        url: &str,
        settings: OAuthClientSettings,
        secret: Option<String>,
        store: Option<CredentialFile>,
        sign_in: Option<Arc<dyn SignIn>>,
    ) -> Self {
        Self {
            server: server.to_owned(),
            url: url.to_owned(),
            settings,
            secret,
            private_key: None,
            enterprise: None,
            store,
            sign_in,
            signing_in: tokio::sync::Mutex::new(0),
            generation: AtomicU64::new(0),
            granted: Mutex::new(Vec::new()),
            last_failure: Mutex::new(None),
        }
    }

    /// The client's private key, for `grant = "client_credentials"` with `private_key_jwt`.
    pub fn with_private_key(mut self, pem: Option<Vec<u8>>) -> Self {
        self.private_key = pem;
        self
    }

    /// The user's ID token and the IdP client secret, for `grant = "enterprise_managed"`.
    pub fn with_enterprise(mut self, secrets: Option<EnterpriseSecrets>) -> Self {
        self.enterprise = secrets;
        self
    }

    /// Whether tokens come without a person at a browser (the client's own credentials, or the
    /// enterprise IdP's word).
    fn machine(&self) -> bool {
        self.settings.grant != OAuthGrant::AuthorizationCode
    }

    /// Whether this process can get a new token when the server asks: a person can sign in here,
    /// or the client uses its own credentials.
    pub fn interactive(&self) -> bool {
        self.sign_in.is_some() || self.machine()
    }

    /// Gets a token with the client's own credentials (client credentials grant, SEP-1046):
    /// `client_secret_basic`/`_post` with a secret, `private_key_jwt` with a key.
    async fn client_credentials(&self) -> Result<AuthorizationManager, OAuthError> {
        use rmcp::transport::auth::{ClientCredentialsConfig, JwtSigningAlgorithm};
        let client_id =
            self.settings.client_id.clone().ok_or_else(|| self.failed("no client_id is configured"))?;
        let scopes = self.settings.scopes.clone();
        // The MCP specification wants the `resource` parameter on every token request: the
        // server's URL, as in the authorization code flow.
        let resource = Some(self.url.clone());
        let config = match (&self.private_key, &self.secret) {
            (Some(key), _) => ClientCredentialsConfig::PrivateKeyJwt {
                client_id,
                signing_key: key.clone(),
                signing_algorithm: match self.settings.signing_algorithm.unwrap_or_default() {
                    SigningAlgorithm::ES256 => JwtSigningAlgorithm::ES256,
                    SigningAlgorithm::ES384 => JwtSigningAlgorithm::ES384,
                    SigningAlgorithm::RS256 => JwtSigningAlgorithm::RS256,
                    SigningAlgorithm::RS384 => JwtSigningAlgorithm::RS384,
                    SigningAlgorithm::RS512 => JwtSigningAlgorithm::RS512,
                },
                token_endpoint_audience: None,
                scopes,
                resource,
            },
            (None, Some(secret)) => ClientCredentialsConfig::ClientSecret {
                client_id,
                client_secret: secret.clone(),
                scopes,
                resource,
            },
            (None, None) => return Err(self.failed("no client secret or private key is configured")),
        };
        let manager = self.manager().await?;
        // rmcp's client-credentials future is not `Send` (it holds a form serializer across an
        // await), and the transport's requests must be: it runs to completion on a blocking
        // thread, on this runtime (whose own thread drives the IO meanwhile).
        let handle = tokio::runtime::Handle::current();
        let outcome = tokio::task::spawn_blocking(move || {
            handle.block_on(async move {
                let mut state = OAuthState::Unauthorized(manager);
                state.authenticate_client_credentials(config).await.map_err(|e| e.to_string())?;
                state.into_authorization_manager().ok_or_else(|| "no token was issued".to_owned())
            })
        })
        .await
        .map_err(|e| self.failed(e))?;
        let manager = outcome.map_err(|e| self.failed(e))?;
        *self.last_failure.lock().unwrap_or_else(|p| p.into_inner()) = None;
        tracing::info!(server = %self.server, "authorized with the client's own credentials");
        Ok(manager)
    }

    /// How long a person gets to sign in (zero when nobody can).
    pub fn sign_in_timeout(&self) -> Duration {
        self.sign_in.as_ref().map_or(Duration::ZERO, |s| s.timeout())
    }

    /// Why the last sign-in failed (or that one was needed and none was possible).
    pub fn last_failure(&self) -> Option<OAuthError> {
        self.last_failure.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn fail(&self, error: OAuthError) -> OAuthError {
        *self.last_failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(error.clone());
        error
    }

    fn failed(&self, message: impl std::fmt::Display) -> OAuthError {
        self.fail(OAuthError::Failed { server: self.server.clone(), message: message.to_string() })
    }

    /// An authorization manager for this server with the credential store set.
    async fn manager(&self) -> Result<AuthorizationManager, OAuthError> {
        let mut manager = AuthorizationManager::new(self.url.as_str()).await.map_err(|e| self.failed(e))?;
        if let Some(store) = &self.store {
            manager.set_credential_store(store.clone());
        }
        Ok(manager)
    }

    /// The manager the connection starts with: the stored credentials (unless `fresh`), to be
    /// refreshed when they expire.
    pub async fn initial_manager(&self, fresh: bool) -> Result<AuthorizationManager, OAuthError> {
        let mut manager = self.manager().await?;
        if !fresh && self.store.as_ref().is_some_and(|s| matches!(s.read(), Ok(Some(_)))) {
            match manager.initialize_from_store().await {
                Ok(true) => tracing::debug!(server = %self.server, "stored MCP credentials loaded"),
                Ok(false) => tracing::info!(server = %self.server, "stored MCP credentials no longer apply"),
                // The authorization server is unreachable now: start without a token and let the
                // server's answer decide.
                Err(e) => {
                    tracing::warn!(server = %self.server, error = %e, "stored MCP credentials not usable")
                }
            }
        }
        Ok(manager)
    }

    /// Scopes to ask for after `challenge`: the configured ones, else (on a step-up) those
    /// granted so far with the challenged ones added (SEP-2350); empty lets rmcp choose from the
    /// challenge and the metadata.
    fn scopes_for(&self, challenge: Option<&str>) -> Vec<String> {
        let challenged = challenge
            .and_then(|c| url::Url::parse(&self.url).ok().map(|base| WWWAuthenticateParams::parse(c, &base)))
            .and_then(|p| p.scope)
            .unwrap_or_default();
        let mut scopes = self.settings.scopes.clone();
        if scopes.is_empty() && !challenged.is_empty() {
            let stored = self.store.as_ref().and_then(|s| s.read().ok().flatten()).map(|c| c.granted_scopes);
            let prior =
                stored.unwrap_or_else(|| self.granted.lock().unwrap_or_else(|p| p.into_inner()).clone());
            if !prior.is_empty() {
                scopes = prior;
            }
        }
        if !scopes.is_empty() {
            for scope in challenged.split_whitespace() {
                if !scopes.iter().any(|s| s == scope) {
                    scopes.push(scope.to_owned());
                }
            }
        }
        scopes
    }

    /// Signs in through the browser: discovery (seeded from `challenge`, the server's
    /// `WWW-Authenticate`), registration, the page shown through [`SignIn`], the code received on
    /// the loopback listener, `iss` checked, the code exchanged. The credentials are stored.
    pub async fn sign_in(&self, challenge: Option<&str>) -> Result<AuthorizationManager, OAuthError> {
        match self.settings.grant {
            OAuthGrant::ClientCredentials => return self.client_credentials().await,
            OAuthGrant::EnterpriseManaged => return self.enterprise_managed(challenge).await,
            OAuthGrant::JwtBearer => return self.workload_identity(challenge).await,
            OAuthGrant::AuthorizationCode => {}
        }
        let Some(sign_in) = self.sign_in.clone() else {
            return Err(self.fail(OAuthError::NeedsLogin { server: self.server.clone() }));
        };
        let loopback = Loopback::bind(self.settings.redirect_port.unwrap_or(0))
            .await
            .map_err(|e| self.failed(format!("cannot listen for the sign-in redirect: {e}")))?;
        let mut request = AuthorizationRequest::new(loopback.redirect_uri())
            .with_client_name(CLIENT_NAME)
            .with_application_type("native");
        if let Some(client_id) = &self.settings.client_id {
            request = request.with_preregistered_client(client_id);
            if let Some(secret) = &self.secret {
                request = request.with_client_secret(secret);
            }
        }
        if let Some(url) = &self.settings.client_metadata_url {
            request = request.with_client_metadata_url(url);
        }
        let scopes = self.scopes_for(challenge);
        if !scopes.is_empty() {
            request = request.with_scopes(scopes);
        }
        if let Some(challenge) = challenge {
            request = request.with_challenge(challenge);
        }
        let mut state = OAuthState::Unauthorized(self.manager().await?);
        if let Err(e) = state.start_authorization(request.clone()).await {
            // A 2025-03-26 server that is its own authorization server may publish metadata at
            // its root whose `issuer` carries a path: accepted only when it and every endpoint
            // are on the server's own origin (see `same_origin_legacy_metadata`).
            let Some(metadata) = (match &e {
                rmcp::transport::auth::AuthError::AuthorizationServerMismatch { .. } => {
                    same_origin_legacy_metadata(&self.url).await
                }
                _ => None,
            }) else {
                return Err(self.failed(e));
            };
            tracing::info!(server = %self.server, "using the server's own 2025-03-26 authorization metadata");
            let mut manager = self.manager().await?;
            manager.set_metadata(metadata);
            let session = rmcp::transport::auth::AuthorizationSession::new(manager, request)
                .await
                .map_err(|(_, e)| self.failed(e))?;
            state = OAuthState::Session(session);
        }
        let url = state.get_authorization_url().await.map_err(|e| self.failed(e))?;
        tracing::info!(server = %self.server, "waiting for the sign-in in the browser");
        sign_in.show(&self.server, &url);
        let wait = sign_in.timeout();
        let callback = match tokio::time::timeout(wait, loopback.wait(&self.server)).await {
            Err(_) => {
                return Err(
                    self.fail(OAuthError::TimedOut { server: self.server.clone(), secs: wait.as_secs() })
                );
            }
            Ok(Err(e)) => return Err(self.failed(format!("the sign-in redirect failed: {e}"))),
            Ok(Ok(callback)) => callback,
        };
        if let Some(error) = callback.get("error") {
            let error = match callback.get("error_description") {
                Some(d) => format!("{error} ({d})"),
                None => error.to_owned(),
            };
            return Err(self.fail(OAuthError::Refused { server: self.server.clone(), error }));
        }
        let (Some(code), Some(csrf)) = (callback.get("code"), callback.get("state")) else {
            return Err(self.failed("the redirect carried no authorization code"));
        };
        state
            .handle_callback_with_issuer(code, csrf, callback.get("iss"))
            .await
            .map_err(|e| self.failed(e))?;
        let manager = state
            .into_authorization_manager()
            .ok_or_else(|| self.failed("the authorization did not complete"))?;
        let granted = manager.get_current_scopes().await;
        *self.granted.lock().unwrap_or_else(|p| p.into_inner()) = granted;
        *self.last_failure.lock().unwrap_or_else(|p| p.into_inner()) = None;
        tracing::info!(server = %self.server, "signed in");
        Ok(manager)
    }

    /// Forgets the stored credentials; `false` when there were none.
    pub async fn sign_out(&self) -> Result<bool, OAuthError> {
        match &self.store {
            None => Ok(false),
            Some(store) => {
                let had = store.read().ok().flatten().is_some();
                store.clear().await.map_err(|e| self.failed(e))?;
                Ok(had)
            }
        }
    }
}

/// The authorization server metadata a 2025-03-26 MCP server publishes for itself at the root of
/// its origin, when rmcp refused it only because its `issuer` differs from the origin (RFC 8414
/// wants them equal): used when the issuer and every endpoint are on the MCP server's own
/// origin, so no other party is involved and the mix-up the issuer check prevents cannot happen.
async fn same_origin_legacy_metadata(url: &str) -> Option<rmcp::transport::auth::AuthorizationMetadata> {
    let base = url::Url::parse(url).ok()?;
    let mut well_known = base.clone();
    well_known.set_path("/.well-known/oauth-authorization-server");
    well_known.set_query(None);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .ok()?;
    let response = client.get(well_known).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let metadata: rmcp::transport::auth::AuthorizationMetadata = response.json().await.ok()?;
    let same_origin = |candidate: &str| url::Url::parse(candidate).is_ok_and(|u| u.origin() == base.origin());
    let endpoints_local = same_origin(&metadata.authorization_endpoint)
        && same_origin(&metadata.token_endpoint)
        && metadata.registration_endpoint.as_deref().is_none_or(same_origin);
    (endpoints_local && metadata.issuer.as_deref().is_some_and(same_origin)).then_some(metadata)
}

/// The Streamable HTTP client of an OAuth-protected server: rmcp's [`AuthClient`] (the stored
/// token, refreshed) plus sign-ins in the middle of a session (see [`Authorizer`]).
#[derive(Clone)]
pub struct OAuthHttpClient {
    inner: AuthClient<reqwest::Client>,
    authorizer: Arc<Authorizer>,
}

impl std::fmt::Debug for OAuthHttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthHttpClient").field("authorizer", &self.authorizer).finish()
    }
}

impl OAuthHttpClient {
    /// A client for `authorizer`'s server; `fresh` ignores stored credentials (a new sign-in).
    pub async fn new(authorizer: Arc<Authorizer>, fresh: bool) -> Result<Self, OAuthError> {
        let manager = authorizer.initial_manager(fresh).await?;
        Ok(Self { inner: AuthClient::new(reqwest::Client::default(), manager), authorizer })
    }

    /// The authorizer.
    pub fn authorizer(&self) -> &Arc<Authorizer> {
        &self.authorizer
    }

    /// Signs in after `challenge`, unless another request signed in since `seen`; then the
    /// request is retried. `false`: give up (the original error stands).
    async fn reauthorize(&self, challenge: &str, seen: u64) -> bool {
        let mut done = self.authorizer.signing_in.lock().await;
        if *done != seen {
            return true;
        }
        match self.authorizer.sign_in(Some(challenge)).await {
            Ok(manager) => {
                *self.inner.auth_manager.lock().await = manager;
                *done += 1;
                self.authorizer.generation.store(*done, Ordering::Release);
                true
            }
            Err(e) => {
                tracing::warn!(server = %self.authorizer.server, error = %e, "signing in failed");
                false
            }
        }
    }

    /// Runs `call`, signing in again when the server challenges it.
    async fn with_sign_in<T, F, Fut>(&self, call: F) -> Result<T, StreamableHttpError<reqwest::Error>>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
    {
        let mut sign_ins = 0;
        loop {
            let seen = self.authorizer.generation.load(Ordering::Acquire);
            let result = call().await;
            let challenge = match &result {
                Err(StreamableHttpError::AuthRequired(e)) => e.www_authenticate_header.clone(),
                Err(StreamableHttpError::InsufficientScope(e)) => e.www_authenticate_header.clone(),
                _ => return result,
            };
            if !self.authorizer.interactive() {
                self.authorizer.fail(OAuthError::NeedsLogin { server: self.authorizer.server.clone() });
                return result;
            }
            sign_ins += 1;
            if sign_ins > MAX_SIGN_INS_PER_REQUEST {
                self.authorizer.failed(format!(
                    "the server still refuses after {MAX_SIGN_INS_PER_REQUEST} sign-ins ({})",
                    if matches!(result, Err(StreamableHttpError::InsufficientScope(_))) {
                        "insufficient scope"
                    } else {
                        "unauthorized"
                    }
                ));
                return result;
            }
            if !self.reauthorize(&challenge, seen).await {
                return result;
            }
        }
    }
}

impl StreamableHttpClient for OAuthHttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.with_sign_in(|| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.with_sign_in(|| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner.delete_session(uri, session_id, auth_header, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.inner.get_stream(uri, session_id, last_event_id, auth_header, custom_headers).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

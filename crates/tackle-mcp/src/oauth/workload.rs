//! Workload identity federation (SEP-1933, the `auth/wif` extension): a JWT the platform issues
//! to this workload (a Kubernetes service account token, a cloud workload identity token) is
//! presented to the MCP server's authorization server as an RFC 7523 JWT bearer grant; no
//! person and no stored secret.
//!
//! rmcp 3.9 has the JWT bearer grant only inside its enterprise-managed exchange (for an ID-JAG
//! it obtained itself), so the one token request is made here: the authorization server from
//! discovery (as for any sign-in), `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`,
//! the assertion read fresh at each exchange (the platform rotates it), the `resource`
//! parameter, the configured scopes. An error is reported as the authorization server's
//! `error`, never retried with another grant.

use oauth2::basic::BasicTokenType;
use oauth2::{AccessToken, Scope};
use rmcp::transport::auth::{AuthorizationManager, OAuthState, OAuthTokenResponse, VendorExtraTokenFields};
use serde::Deserialize;

use super::{Authorizer, OAuthError};

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    scope: Option<String>,
}

#[derive(Deserialize)]
struct ErrorResponse {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

impl Authorizer {
    /// Gets a token with the workload's JWT (see the module documentation).
    pub(super) async fn workload_identity(
        &self,
        challenge: Option<&str>,
    ) -> Result<AuthorizationManager, OAuthError> {
        let assertion =
            self.settings.assertion(&|var| std::env::var(var).ok()).map_err(|e| self.failed(e))?;
        let manager = self.manager().await?;
        let metadata =
            manager.resolve_metadata_from_challenge(challenge).await.map_err(|e| self.failed(e))?.metadata;
        let scopes = self.scopes_for(challenge);
        let mut form: Vec<(&str, String)> = vec![
            ("grant_type", JWT_BEARER.to_owned()),
            ("assertion", assertion),
            ("resource", self.url.clone()),
        ];
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| self.failed(e))?;
        let mut request = client.post(&metadata.token_endpoint).header("accept", "application/json");
        match (&self.settings.client_id, &self.secret) {
            (Some(id), Some(secret)) => {
                request = request.basic_auth(form_encode(id), Some(form_encode(secret)));
            }
            (Some(id), None) => form.push(("client_id", id.clone())),
            (None, _) => {}
        }
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(&form).finish();
        let response = request
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(|e| self.failed(format!("the token request failed: {}", e.without_url())))?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| self.failed(e.without_url()))?;
        if !status.is_success() {
            let error = match serde_json::from_slice::<ErrorResponse>(&body) {
                Ok(ErrorResponse { error, error_description: Some(d) }) => format!("{error} ({d})"),
                Ok(ErrorResponse { error, .. }) => error,
                Err(_) => format!("HTTP {status}"),
            };
            return Err(self.fail(OAuthError::Refused { server: self.server.clone(), error }));
        }
        let token: TokenResponse = serde_json::from_slice(&body)
            .map_err(|e| self.failed(format!("the token response is not one: {e}")))?;
        let mut response = OAuthTokenResponse::new(
            AccessToken::new(token.access_token),
            BasicTokenType::Bearer,
            VendorExtraTokenFields::default(),
        );
        response.set_expires_in(token.expires_in.map(std::time::Duration::from_secs).as_ref());
        let granted: Vec<String> = match token.scope {
            Some(scope) => scope.split_whitespace().map(str::to_owned).collect(),
            None => scopes,
        };
        if !granted.is_empty() {
            response.set_scopes(Some(granted.iter().cloned().map(Scope::new).collect()));
        }
        let client_id = self.settings.client_id.clone().unwrap_or_default();
        let mut state = OAuthState::Unauthorized(manager);
        state.set_credentials(&client_id, response).await.map_err(|e| self.failed(e))?;
        let manager = state.into_authorization_manager().ok_or_else(|| self.failed("no token was issued"))?;
        *self.granted.lock().unwrap_or_else(|p| p.into_inner()) = granted;
        *self.last_failure.lock().unwrap_or_else(|p| p.into_inner()) = None;
        tracing::info!(server = %self.server, "authorized with the workload's identity token");
        Ok(manager)
    }
}

/// `application/x-www-form-urlencoded` encoding, which RFC 6749 §2.3.1 applies to the client ID
/// and secret before HTTP Basic.
fn form_encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

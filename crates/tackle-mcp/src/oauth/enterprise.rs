//! Enterprise-managed authorization (SEP-990, the `enterprise-managed-authorization`
//! extension): no browser and no consent screen; the enterprise's identity provider vouches for
//! the user. The user's ID token from the IdP (their single sign-on) is exchanged at the IdP for
//! an identity assertion JWT authorization grant (ID-JAG, RFC 8693 token exchange) bound to the
//! MCP server and its authorization server, and the ID-JAG at that authorization server for the
//! server's access token (RFC 7523 JWT bearer grant).
//!
//! rmcp (`auth-enterprise-managed`) does both exchanges and checks the ID-JAG's bindings; Tackle
//! adds what it leaves to the caller: discovering the MCP server's authorization server (from
//! the 401 challenge or the well-known paths, as for a sign-in), the IdP's token endpoint (from
//! its OpenID configuration when not configured), and keeping the token like any other (the
//! credential file; a new exchange when it expires, since no refresh token is issued).

use oauth2::basic::BasicTokenType;
use oauth2::{AccessToken, ClientSecret, Scope};
use rmcp::transport::auth::enterprise::{
    EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
};
use rmcp::transport::auth::{AuthorizationManager, OAuthState, OAuthTokenResponse, VendorExtraTokenFields};

use super::{Authorizer, OAuthError};

impl Authorizer {
    /// Gets a token through the enterprise IdP (see the module documentation).
    pub(super) async fn enterprise_managed(
        &self,
        challenge: Option<&str>,
    ) -> Result<AuthorizationManager, OAuthError> {
        let settings = &self.settings;
        let secrets =
            self.enterprise.clone().ok_or_else(|| self.failed("the user's ID token is not configured"))?;
        let client_id =
            settings.client_id.clone().ok_or_else(|| self.failed("no client_id is configured"))?;
        let idp_issuer =
            settings.idp_issuer.clone().ok_or_else(|| self.failed("no idp_issuer is configured"))?;
        let idp_client_id =
            settings.idp_client_id.clone().ok_or_else(|| self.failed("no idp_client_id is configured"))?;
        let idp_token_endpoint = match &settings.idp_token_endpoint {
            Some(endpoint) => endpoint.clone(),
            None => idp_token_endpoint(&idp_issuer).await.map_err(|e| self.failed(e))?,
        };
        let manager = self.manager().await?;
        let metadata =
            manager.resolve_metadata_from_challenge(challenge).await.map_err(|e| self.failed(e))?.metadata;
        let issuer = metadata
            .issuer
            .clone()
            .ok_or_else(|| self.failed("the authorization server's metadata names no issuer"))?;
        let authentication = |secret: Option<String>| match secret {
            Some(secret) => EmaClientAuthentication::ClientSecretBasic(ClientSecret::new(secret)),
            None => EmaClientAuthentication::None,
        };
        let idp = EmaAuthorizationServer::new(idp_issuer, idp_token_endpoint, idp_client_id)
            .with_client_authentication(authentication(secrets.idp_client_secret.clone()));
        let resource_as =
            EmaAuthorizationServer::new(issuer, metadata.token_endpoint.clone(), client_id.clone())
                .with_client_authentication(authentication(self.secret.clone()));
        let scopes = self.scopes_for(challenge);
        let http = rmcp::transport::auth::default_oauth_http_client().map_err(|e| self.failed(e))?;
        let token = EmaExchangeRequest::new_with_id_token(idp, resource_as, &self.url, &secrets.id_token)
            .with_scopes(scopes)
            .exchange(&http, &http)
            .await
            .map_err(|e| self.failed(format!("the enterprise token exchange failed: {e}")))?;
        let mut response = OAuthTokenResponse::new(
            AccessToken::new(token.access_token.secret().clone()),
            BasicTokenType::Bearer,
            VendorExtraTokenFields::default(),
        );
        response.set_expires_in(token.expires_in.as_ref());
        let mut granted: Vec<String> = token.scopes.into_iter().collect();
        granted.sort();
        if !granted.is_empty() {
            response.set_scopes(Some(granted.iter().cloned().map(Scope::new).collect()));
        }
        let mut state = OAuthState::Unauthorized(manager);
        state.set_credentials(&client_id, response).await.map_err(|e| self.failed(e))?;
        let manager = state.into_authorization_manager().ok_or_else(|| self.failed("no token was issued"))?;
        *self.granted.lock().unwrap_or_else(|p| p.into_inner()) = granted;
        *self.last_failure.lock().unwrap_or_else(|p| p.into_inner()) = None;
        tracing::info!(server = %self.server, "authorized through the enterprise identity provider");
        Ok(manager)
    }
}

/// The token endpoint in the IdP's OpenID configuration, whose `issuer` must be `issuer`.
async fn idp_token_endpoint(issuer: &str) -> Result<String, String> {
    let url = format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/'));
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| e.to_string())?;
    let response =
        client.get(&url).send().await.map_err(|e| {
            format!("cannot read the IdP's OpenID configuration: {e}; set idp_token_endpoint")
        })?;
    if !response.status().is_success() {
        return Err(format!(
            "the IdP's OpenID configuration answered {}; set idp_token_endpoint",
            response.status()
        ));
    }
    let config: serde_json::Value =
        response.json().await.map_err(|e| format!("the IdP's OpenID configuration is not JSON: {e}"))?;
    if config.get("issuer").and_then(serde_json::Value::as_str) != Some(issuer) {
        return Err(format!("the IdP's OpenID configuration is for another issuer than {issuer}"));
    }
    config.get("token_endpoint").and_then(serde_json::Value::as_str).map(str::to_owned).ok_or_else(|| {
        "the IdP's OpenID configuration names no token_endpoint; set idp_token_endpoint".into()
    })
}

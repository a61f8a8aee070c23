//! Provider configuration: which API, where, with which key, and how patient to be.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::RetryPolicy;

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI Chat Completions, also spoken by OpenAI-compatible servers.
    Openai,
    /// OpenAI Responses (`--provider openai-responses`): same key and base URL as `openai`.
    #[serde(rename = "openai-responses", alias = "openai_responses")]
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Codex's `app-server` (JSON-RPC over a child process, crate `tackle-codex`): Codex is
    /// the model, with its own login in `CODEX_HOME`; no API key or base URL.
    Codex,
}

impl ProviderKind {
    /// `openai`, `openai-responses`, `anthropic` or `codex`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::OpenaiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
            Self::Codex => "codex",
        }
    }

    /// The environment variables the official SDKs read: `(api key, base url)`; none for
    /// Codex, which keeps its login in `CODEX_HOME`.
    pub fn env_vars(self) -> Option<(&'static str, &'static str)> {
        match self {
            Self::Openai | Self::OpenaiResponses => Some(("OPENAI_API_KEY", "OPENAI_BASE_URL")),
            Self::Anthropic => Some(("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")),
            Self::Codex => None,
        }
    }

    /// The official API's base URL (OpenAI's includes `/v1`, Anthropic's does not, as in the
    /// official SDKs); empty for Codex.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Openai | Self::OpenaiResponses => "https://api.openai.com/v1",
            Self::Anthropic => "https://api.anthropic.com",
            Self::Codex => "",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A provider name that is none of Tackle's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider {0:?}: use openai, openai-responses, anthropic or codex")]
pub struct UnknownProvider(pub String);

impl std::str::FromStr for ProviderKind {
    type Err = UnknownProvider;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "openai" => Ok(Self::Openai),
            "openai-responses" | "openai_responses" => Ok(Self::OpenaiResponses),
            "anthropic" => Ok(Self::Anthropic),
            "codex" => Ok(Self::Codex),
            other => Err(UnknownProvider(other.to_owned())),
        }
    }
}

/// An API key. Its `Debug` and `Display` never show the value.
///
/// ```
/// use tackle_provider::ApiKey;
/// let key = ApiKey::new("sk-secret");
/// assert_eq!(format!("{key:?}"), "ApiKey(****)");
/// assert_eq!(key.expose(), "sk-secret");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the request header only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A masked form for display: the first 3 characters and the length, e.g. `sk-…(51)`.
    pub fn masked(&self) -> String {
        let head: String = self.0.chars().take(3).collect();
        format!("{head}…({})", self.0.chars().count())
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(****)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("****")
    }
}

/// Timeouts of a provider client.
///
/// A streamed answer is limited per read, so a stalled stream fails however long the answer
/// runs; a whole answer (`"stream": false`) sends nothing until the model is done, so it is
/// limited as a whole instead, as the OpenAI and Anthropic SDKs limit their requests (600 s).
///
/// ```
/// use std::time::Duration;
/// let mut timeouts = tackle_provider::Timeouts::default();
/// timeouts.whole = Duration::from_secs(900);
/// assert_eq!(timeouts.read, Duration::from_secs(120));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Timeouts {
    /// Limit for establishing a connection.
    #[serde(with = "millis")]
    pub connect: Duration,
    /// Limit for any single read of a streamed answer, so a stalled stream fails instead of
    /// hanging.
    #[serde(with = "millis")]
    pub read: Duration,
    /// Limit for a whole answer, from sending the request to its last byte.
    #[serde(with = "millis", default = "default_whole")]
    pub whole: Duration,
}

fn default_whole() -> Duration {
    Duration::from_secs(600)
}

impl Default for Timeouts {
    fn default() -> Self {
        Self { connect: Duration::from_secs(10), read: Duration::from_secs(120), whole: default_whole() }
    }
}

/// Everything needed to build a provider client.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// Wire format.
    pub kind: ProviderKind,
    /// Base URL (OpenAI style includes `/v1`; Anthropic style does not).
    pub base_url: String,
    /// API key; local OpenAI-compatible servers often need none.
    pub api_key: Option<ApiKey>,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Retry behaviour.
    pub retry: RetryPolicy,
}

impl ProviderConfig {
    /// A configuration for `kind` with the official base URL, no key and default timeouts and
    /// retries.
    pub fn new(kind: ProviderKind) -> Self {
        Self {
            kind,
            base_url: kind.default_base_url().to_owned(),
            api_key: None,
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
        }
    }

    /// A configuration from the environment variables the official SDKs read
    /// (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`).
    pub fn from_env(kind: ProviderKind) -> Self {
        Self::from_lookup(kind, |name| std::env::var(name).ok())
    }

    /// Like [`ProviderConfig::from_env`] with a custom variable lookup (for tests and config
    /// layers).
    pub fn from_lookup(kind: ProviderKind, lookup: impl Fn(&str) -> Option<String>) -> Self {
        let mut config = Self::new(kind);
        let Some((key_var, url_var)) = kind.env_vars() else { return config };
        if let Some(url) = lookup(url_var).filter(|u| !u.trim().is_empty()) {
            config.base_url = url.trim().to_owned();
        }
        config.api_key = lookup(key_var).filter(|k| !k.trim().is_empty()).map(|k| ApiKey::new(k.trim()));
        config
    }

    /// Sets the base URL.
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(ApiKey::new(key));
        self
    }

    /// Sets the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets the timeouts.
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// The base URL without a trailing slash (and without its query, if it has one).
    pub fn base(&self) -> &str {
        self.base_url.split_once('?').map_or(self.base_url.as_str(), |(b, _)| b).trim_end_matches('/')
    }

    /// The URL of an API path: the path after the base URL's path, its query (e.g. Azure's
    /// `api-version`) kept at the end.
    ///
    /// ```
    /// use tackle_provider::{ProviderConfig, ProviderKind};
    /// let c = ProviderConfig::new(ProviderKind::Openai).with_base_url("https://x.example/v1/?api-version=2");
    /// assert_eq!(c.endpoint("/chat/completions"), "https://x.example/v1/chat/completions?api-version=2");
    /// ```
    pub fn endpoint(&self, path: &str) -> String {
        match self.base_url.split_once('?') {
            Some((_, query)) => format!("{}{path}?{query}", self.base()),
            None => format!("{}{path}", self.base()),
        }
    }

    /// Checks the base URL before anything is sent: an absolute `http` or `https` URL with a
    /// host, without a fragment (a query is kept after each API path: [`Self::endpoint`]).
    ///
    /// ```
    /// use tackle_provider::{ProviderConfig, ProviderKind};
    /// let ok = ProviderConfig::new(ProviderKind::Openai).with_base_url("http://localhost:11434/v1");
    /// assert!(ok.check_base_url().is_ok());
    /// let bad = ProviderConfig::new(ProviderKind::Openai).with_base_url("not a url");
    /// assert!(bad.check_base_url().unwrap_err().to_string().contains("not a url"));
    /// ```
    pub fn check_base_url(&self) -> Result<(), BaseUrlError> {
        let error = |reason: &str| BaseUrlError { url: shown(&self.base_url), reason: reason.to_owned() };
        let url = reqwest::Url::parse(&self.base_url).map_err(|e| error(&e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(error("the scheme must be http or https"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(error("it has no host"));
        }
        if url.fragment().is_some() {
            return Err(error("it must not have a fragment (#...)"));
        }
        Ok(())
    }
}

/// The URL as an error may show it: [`tackle_protocol::mask_url`]'s masking when it parses as
/// a `scheme://` URL; other text is shown only when it has none of the characters that set
/// credentials apart.
fn shown(url: &str) -> String {
    let is_url = reqwest::Url::parse(url).is_ok_and(|u| {
        url.split_once("://").is_some_and(|(scheme, _)| scheme.eq_ignore_ascii_case(u.scheme()))
    });
    if is_url {
        tackle_protocol::mask_url(url)
    } else if url.contains(['@', '?', '#', ':']) {
        "(not shown: it may hold credentials)".to_owned()
    } else {
        url.to_owned()
    }
}

/// A provider base URL that cannot be used. Its text never carries the URL's credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid base URL {url:?}: {reason}; use an absolute URL like http://localhost:11434/v1")]
pub struct BaseUrlError {
    /// The URL given, its credentials masked ([`tackle_protocol::mask_url`]).
    pub url: String,
    /// What is wrong with it.
    pub reason: String,
}

pub(crate) mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_base_url_is_reported_without_its_credentials() {
        for url in [
            "https://user:pw-canary@llm.example/v1?api_key=key-canary#frag",
            "https://token-canary@llm.example/v1#frag-canary",
            "ftp://user:pw-canary@llm.example/",
            "http://[bad-canary@",
        ] {
            let config = ProviderConfig::new(ProviderKind::Openai).with_base_url(url);
            let text = config.check_base_url().unwrap_err().to_string();
            assert!(!text.contains("canary"), "{text}");
        }
        let config = ProviderConfig::new(ProviderKind::Openai).with_base_url("ftp://llm.example/v1");
        assert!(config.check_base_url().unwrap_err().to_string().contains("ftp://llm.example/v1"));
    }

    #[test]
    fn env_lookup_reads_the_sdk_variables() {
        let vars = [("ANTHROPIC_API_KEY", " sk-ant-123 "), ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")];
        let cfg = ProviderConfig::from_lookup(ProviderKind::Anthropic, |n| {
            vars.iter().find(|(k, _)| *k == n).map(|(_, v)| v.to_string())
        });
        assert_eq!(cfg.api_key.as_ref().map(ApiKey::expose), Some("sk-ant-123"));
        assert_eq!(cfg.base(), "http://127.0.0.1:9");
        let debug = format!("{cfg:?}");
        assert!(!debug.contains("sk-ant-123"), "{debug}");
    }

    #[test]
    fn responses_speaks_to_openai_with_its_variables() {
        let kind: ProviderKind = "openai-responses".parse().unwrap();
        assert_eq!(kind, ProviderKind::OpenaiResponses);
        assert_eq!("OpenAI_Responses".parse::<ProviderKind>(), Ok(kind));
        assert_eq!(kind.env_vars(), ProviderKind::Openai.env_vars());
        assert_eq!(kind.to_string(), "openai-responses");
        assert_eq!(serde_json::to_string(&kind).unwrap(), "\"openai-responses\"");
        let err = "responses".parse::<ProviderKind>().unwrap_err().to_string();
        assert!(err.contains("openai-responses"), "{err}");
        let cfg = ProviderConfig::from_lookup(kind, |n| (n == "OPENAI_API_KEY").then(|| "sk-1".to_owned()));
        assert_eq!(cfg.base(), "https://api.openai.com/v1");
        assert_eq!(cfg.api_key.as_ref().map(ApiKey::expose), Some("sk-1"));
    }

    #[test]
    fn empty_variables_are_ignored() {
        let cfg = ProviderConfig::from_lookup(ProviderKind::Openai, |_| Some("  ".into()));
        assert_eq!(cfg.api_key, None);
        assert_eq!(cfg.base_url, "https://api.openai.com/v1");
    }
}

//! `web_fetch`: fetch a public web page as Markdown, behind an SSRF guard.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use schemars::JsonSchema;
use serde::Deserialize;
use tackle_protocol::{ErrorCategory, ToolAnnotations};
use tackle_tools::{ToolContext, ToolDoc, ToolFailure, ToolOutput, TypedTool};

use crate::BuiltinConfig;
use crate::ssrf::{AllowList, check_ip, is_local_name};

/// Redirect hops followed, each checked like the first request.
const MAX_REDIRECTS: usize = 5;

/// Arguments of `web_fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebFetchArgs {
    /// The http or https URL. Example: "https://docs.rs/serde".
    pub url: String,
}

/// The `web_fetch` tool.
pub struct WebFetch {
    config: BuiltinConfig,
    allow: Arc<AllowList>,
    lookup: Lookup,
    /// Built on the first fetch: building it loads the system's root certificates (a few ms),
    /// which most runs never need.
    client: std::sync::OnceLock<Option<reqwest::Client>>,
}

impl std::fmt::Debug for WebFetch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebFetch").field("config", &self.config).finish()
    }
}

/// Looks up the addresses of a host name (the system resolver by default).
pub type Lookup =
    Arc<dyn Fn(String) -> futures::future::BoxFuture<'static, std::io::Result<Vec<IpAddr>>> + Send + Sync>;

fn system_lookup() -> Lookup {
    Arc::new(|host: String| {
        Box::pin(
            async move { Ok(tokio::net::lookup_host((host.as_str(), 0)).await?.map(|a| a.ip()).collect()) },
        )
    })
}

/// Resolves host names and keeps only addresses the guard allows, so the connection can only go
/// to a checked address (no gap between checking and connecting for DNS rebinding).
struct GuardedResolver {
    allow: Arc<AllowList>,
    lookup: Lookup,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow = self.allow.clone();
        let lookup = self.lookup.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> =
                lookup(host.clone()).await?.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect();
            if allow.allows_host(&host) {
                return Ok(Box::new(addrs.into_iter()) as Addrs);
            }
            let mut refused = None;
            let allowed: Vec<SocketAddr> = addrs
                .into_iter()
                .filter(|a| match check_ip(a.ip(), &allow) {
                    Some(reason) => {
                        refused = Some(format!("{host} resolves to {}, {reason}", a.ip()));
                        false
                    }
                    None => true,
                })
                .collect();
            // Any blocked address refuses the host: a name mixing public and private answers
            // is a rebinding attempt.
            if let Some(reason) = refused {
                return Err(Box::new(Blocked(reason)) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

#[derive(Debug)]
struct Blocked(String);

impl std::fmt::Display for Blocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "blocked: {}", self.0)
    }
}

impl std::error::Error for Blocked {}

fn blocked(message: impl Into<String>) -> ToolFailure {
    ToolFailure::permission(format!("{}; web_fetch only reaches public addresses", message.into()))
        .with_hint("fetch a public http(s) URL; local services are not reachable from this tool")
}

impl WebFetch {
    /// A fetcher with these limits and allowlist, resolving names with the system resolver.
    pub fn new(config: BuiltinConfig) -> Self {
        Self::with_lookup(config, system_lookup())
    }

    /// A fetcher resolving names with `lookup` (every answer still goes through the guard).
    pub fn with_lookup(config: BuiltinConfig, lookup: Lookup) -> Self {
        let allow = Arc::new(AllowList::parse(&config.web_allow_private));
        Self { config, allow, lookup, client: std::sync::OnceLock::new() }
    }

    /// The HTTP client (made on first use), or `None` if it cannot be built.
    fn client(&self) -> Option<&reqwest::Client> {
        self.client
            .get_or_init(|| {
                let resolver = GuardedResolver { allow: self.allow.clone(), lookup: self.lookup.clone() };
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .timeout(Duration::from_secs(self.config.web_timeout_secs))
                    .connect_timeout(Duration::from_secs(self.config.web_timeout_secs.min(10)))
                    .user_agent(self.config.user_agent.clone())
                    .dns_resolver(Arc::new(resolver))
                    .no_proxy()
                    .build()
                    .ok()
            })
            .as_ref()
    }

    /// Checks a URL before any request: scheme, local names, literal addresses.
    fn check_url(&self, url: &Url) -> Result<(), ToolFailure> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolFailure::invalid_args(format!(
                "scheme {:?} is not supported; use http or https",
                url.scheme()
            )));
        }
        let Some(host) = url.host_str() else {
            return Err(ToolFailure::invalid_args("the URL has no host"));
        };
        if self.allow.allows_host(host) {
            return Ok(());
        }
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            if let Some(reason) = check_ip(ip, &self.allow) {
                return Err(blocked(format!("{ip} is {reason}")));
            }
            return Ok(());
        }
        if is_local_name(host) {
            return Err(blocked(format!("{host} is a local name")));
        }
        Ok(())
    }
}

fn describe(e: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

#[async_trait]
impl TypedTool for WebFetch {
    type Args = WebFetchArgs;

    fn name(&self) -> &str {
        "web_fetch"
    }

    fn description(&self) -> String {
        ToolDoc::new("Fetch a public web page or text document and return it as Markdown.")
            .use_when("you need documentation, an API reference, or any public page by URL")
            .does_not("reach localhost, private networks or cloud metadata addresses")
            .does_not("run JavaScript, log in, or download binary files")
            .arg("url", "An http or https URL. Example: \"https://www.rust-lang.org/\"")
            .returns("The final URL, status and content type, then the body: HTML as Markdown, text as is; long bodies are cut.")
            .example(r#"{"url": "https://docs.rs/serde/latest/serde/"}"#)
            .render()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: true,
            ..ToolAnnotations::default()
        }
    }

    async fn run(&self, args: WebFetchArgs, _ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        let Some(client) = self.client() else {
            return Err(ToolFailure::internal("the HTTP client could not be built"));
        };
        let mut url = Url::parse(args.url.trim())
            .map_err(|e| ToolFailure::invalid_args(format!("{:?} is not a valid URL: {e}", args.url)))?;
        let mut hops = 0;
        let response = loop {
            self.check_url(&url)?;
            let response = client.get(url.clone()).send().await.map_err(|e| {
                let text = describe(&e);
                if let Some(pos) = text.find("blocked: ") {
                    blocked(text[pos + "blocked: ".len()..].to_owned())
                } else if e.is_timeout() {
                    ToolFailure::timeout(format!("fetching {url} timed out: {text}")).with_retryable(true)
                } else {
                    ToolFailure::network(format!("fetching {url} failed: {text}"))
                }
            })?;
            if response.status().is_redirection() {
                let Some(location) =
                    response.headers().get(reqwest::header::LOCATION).and_then(|l| l.to_str().ok())
                else {
                    break response;
                };
                hops += 1;
                if hops > MAX_REDIRECTS {
                    return Err(ToolFailure::network(format!(
                        "more than {MAX_REDIRECTS} redirects from {}",
                        args.url
                    )));
                }
                url = url
                    .join(location)
                    .map_err(|e| ToolFailure::network(format!("bad redirect to {location:?}: {e}")))?;
                continue;
            }
            break response;
        };
        let status = response.status();
        if !status.is_success() {
            let category = match status.as_u16() {
                404 | 410 => ErrorCategory::NotFound,
                401 | 403 => ErrorCategory::Permission,
                429 => ErrorCategory::RateLimited,
                s if s >= 500 => ErrorCategory::Network,
                _ => ErrorCategory::InvalidArgs,
            };
            return Err(ToolFailure::new(category, format!("{url} answered HTTP {status}")));
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let textual = content_type.is_empty()
            || content_type.starts_with("text/")
            || ["json", "xml", "javascript", "yaml", "toml", "markdown"]
                .iter()
                .any(|t| content_type.contains(t));
        if !textual {
            return Err(ToolFailure::invalid_args(format!("{url} is {content_type}, not text"))
                .with_hint("web_fetch returns text and HTML only"));
        }
        let max = self.config.web_max_bytes;
        let mut body = Vec::new();
        let mut cut = false;
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk =
                chunk.map_err(|e| ToolFailure::network(format!("reading {url} failed: {}", describe(&e))))?;
            let room = max - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                cut = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let text = String::from_utf8_lossy(&body);
        let rendered = if content_type.contains("html")
            || (content_type.is_empty() && text.trim_start().starts_with('<'))
        {
            htmd::convert(&text).unwrap_or_else(|_| text.clone().into_owned())
        } else {
            text.into_owned()
        };
        let mut out = format!("URL: {url}\nStatus: {status}\nContent-Type: {content_type}\n\n{rendered}");
        if cut {
            out.push_str(&format!("\n[body cut at {max} bytes]"));
        }
        Ok(ToolOutput::text(out))
    }
}

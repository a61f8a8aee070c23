//! web_fetch: Markdown from a local server, and the SSRF guard.

use crate::common;

use std::net::IpAddr;
use std::sync::Arc;

use axum::Router;
use axum::response::{Html, Redirect};
use axum::routing::get;
use serde_json::json;
use tackle_builtins::{BuiltinConfig, Lookup, WebFetch, WebFetchArgs};
use tackle_protocol::ErrorCategory;
use tackle_tools::{ToolContext, ToolFailure, TypedTool};

async fn serve(router: Router) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    port
}

fn ctx() -> ToolContext {
    ToolContext::new("s", "c", std::env::temp_dir())
}

async fn fetch(tool: &WebFetch, url: &str) -> Result<String, ToolFailure> {
    tool.run(WebFetchArgs { url: url.into() }, ctx()).await.map(|o| o.text)
}

/// A resolver answering from a fixed table, standing in for DNS.
fn fake_dns(table: &'static [(&'static str, &'static [&'static str])]) -> Lookup {
    Arc::new(move |host: String| {
        Box::pin(async move {
            let ips = table
                .iter()
                .find(|(h, _)| *h == host)
                .map(|(_, ips)| ips.iter().map(|i| i.parse::<IpAddr>().unwrap()).collect());
            ips.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such host"))
        })
    })
}

#[tokio::test]
async fn html_becomes_markdown_from_an_allowlisted_server() {
    let port = serve(
        Router::new().route("/", get(|| async { Html("<h1>Title</h1><p>Some <b>bold</b> text.</p>") })),
    )
    .await;
    let config = BuiltinConfig { web_allow_private: vec!["127.0.0.1/32".into()], ..BuiltinConfig::default() };
    let ex = common::executor(&config);
    let r = common::call(
        &ex,
        std::path::Path::new("/tmp"),
        "web_fetch",
        json!({"url": format!("http://127.0.0.1:{port}/")}),
    )
    .await;
    let out = common::ok(&r);
    assert!(out.contains("Status: 200 OK"), "{out}");
    assert!(out.contains("# Title") && out.contains("**bold**"), "{out}");
}

#[tokio::test]
async fn private_and_special_targets_are_refused() {
    let tool = WebFetch::with_lookup(
        BuiltinConfig::default(),
        fake_dns(&[
            ("evil.example", &["127.0.0.1"]),
            ("rebind.example", &["93.184.215.14", "10.1.2.3"]),
            ("meta.example", &["169.254.169.254"]),
        ]),
    );
    let targets = [
        "http://127.0.0.1/",
        "http://10.0.0.1/",
        "http://172.16.5.4/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://100.64.0.1/",
        "http://0.0.0.0/",
        "http://224.0.0.1/",
        "http://[::1]/",
        "http://[fc00::1]/",
        "http://[fe80::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://localhost/",
        "http://api.localhost:8080/",
        "http://evil.example/",
        "http://rebind.example/",
        "http://meta.example/",
    ];
    for t in targets {
        let err = fetch(&tool, t).await.expect_err(t);
        assert_eq!(err.category, ErrorCategory::Permission, "{t}: {err}");
        assert!(err.message.contains("only reaches public addresses"), "{t}: {err}");
    }
    let err = fetch(&tool, "http://169.254.169.254/").await.unwrap_err();
    assert!(err.message.contains("cloud metadata"), "{err}");
}

#[tokio::test]
async fn ipv6_forms_embedding_a_private_ipv4_are_refused_literally_and_when_resolved() {
    let forms = [
        "::ffff:0:7f00:1",     // IPv4-translated 127.0.0.1 (reached a connect attempt before)
        "64:ff9b:1::7f00:1",   // local-use NAT64 127.0.0.1 (reached a connect attempt before)
        "::ffff:0:a9fe:a9fe",  // IPv4-translated metadata address
        "::ffff:7f00:1",       // IPv4-mapped loopback
        "::7f00:1",            // IPv4-compatible loopback
        "::a00:1",             // IPv4-compatible 10.0.0.1
        "64:ff9b::7f00:1",     // NAT64 loopback
        "64:ff9b::a9fe:a9fe",  // NAT64 metadata address
        "64:ff9b::ac10:1",     // NAT64 172.16.0.1
        "64:ff9b:1:2::c0a8:1", // local-use NAT64, another prefix length
        "2002:7f00:1::",       // 6to4 loopback
        "2002:c0a8:101::1",    // 6to4 192.168.1.1
        "2002:a9fe:a9fe::",    // 6to4 metadata address
        "2001:0:a00:1::1",     // Teredo, server 10.0.0.1
        "2001:0:5db8:d70e:0:0:80ff:fffe", // Teredo, client 127.0.0.1 (inverted)
        "2600::5efe:a9fe:a9fe", // ISATAP identifier of the metadata address
    ];
    static TABLE: std::sync::OnceLock<Vec<(String, Vec<String>)>> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        forms.iter().enumerate().map(|(i, f)| (format!("h{i}.example"), vec![f.to_string()])).collect()
    });
    let lookup: Lookup = Arc::new(move |host: String| {
        Box::pin(async move {
            table
                .iter()
                .find(|(h, _)| *h == host)
                .map(|(_, ips)| ips.iter().map(|i| i.parse::<IpAddr>().unwrap()).collect())
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such host"))
        })
    });
    let tool = WebFetch::with_lookup(BuiltinConfig::default(), lookup);
    for (i, form) in forms.iter().enumerate() {
        for url in [format!("http://[{form}]/"), format!("http://h{i}.example/")] {
            let err = fetch(&tool, &url).await.expect_err(&url);
            assert_eq!(err.category, ErrorCategory::Permission, "{url} ({form}): {err}");
            assert!(err.message.contains("only reaches public addresses"), "{url}: {err}");
        }
    }
}

#[tokio::test]
async fn other_schemes_are_refused() {
    let tool = WebFetch::new(BuiltinConfig::default());
    for url in ["file:///etc/passwd", "ftp://example.com/x", "gopher://example.com/"] {
        let err = fetch(&tool, url).await.expect_err(url);
        assert_eq!(err.category, ErrorCategory::InvalidArgs, "{url}");
        assert!(err.message.contains("use http or https"));
    }
    assert_eq!(fetch(&tool, "not a url").await.unwrap_err().category, ErrorCategory::InvalidArgs);
}

#[tokio::test]
async fn a_redirect_to_loopback_is_refused_at_the_hop() {
    let inner = serve(Router::new().route("/", get(|| async { "internal secret" }))).await;
    let outer = serve(Router::new().route(
        "/go",
        get(move || async move { Redirect::temporary(&format!("http://127.0.0.1:{inner}/")) }),
    ))
    .await;
    // Only the name `localhost` is allowed (and resolves to the outer server); the redirect
    // target is a literal loopback address that is not.
    let config = BuiltinConfig { web_allow_private: vec!["localhost".into()], ..BuiltinConfig::default() };
    let tool = WebFetch::with_lookup(config, fake_dns(&[("localhost", &["127.0.0.1"])]));
    let err = fetch(&tool, &format!("http://localhost:{outer}/go")).await.unwrap_err();
    assert_eq!(err.category, ErrorCategory::Permission, "{err}");
    assert!(err.message.contains("127.0.0.1 is a loopback address"), "{err}");
}

#[tokio::test]
async fn http_errors_and_binary_bodies_have_categories() {
    let port = serve(
        Router::new()
            .route("/missing", get(|| async { (axum::http::StatusCode::NOT_FOUND, "no") }))
            .route(
                "/bin",
                get(|| async { ([("content-type", "application/octet-stream")], vec![0u8, 1, 2]) }),
            )
            .route("/big", get(|| async { "x".repeat(10_000) })),
    )
    .await;
    let config = BuiltinConfig {
        web_allow_private: vec!["127.0.0.1".into()],
        web_max_bytes: 1000,
        ..BuiltinConfig::default()
    };
    let tool = WebFetch::new(config);
    let base = format!("http://127.0.0.1:{port}");
    assert_eq!(fetch(&tool, &format!("{base}/missing")).await.unwrap_err().category, ErrorCategory::NotFound);
    assert_eq!(fetch(&tool, &format!("{base}/bin")).await.unwrap_err().category, ErrorCategory::InvalidArgs);
    let big = fetch(&tool, &format!("{base}/big")).await.unwrap();
    assert!(big.ends_with("[body cut at 1000 bytes]"), "{}", &big[big.len() - 60..]);
}

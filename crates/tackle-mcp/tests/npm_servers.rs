//! The reference servers from npm: `@modelcontextprotocol/server-everything` over stdio and over
//! Streamable HTTP, and `@modelcontextprotocol/server-filesystem` rooted in a temp dir.
//!
//! The packages are installed by scripts/test-deps.sh; when they are missing the tests fail under
//! `TACKLE_REQUIRE_PEERS` and skip, saying why, otherwise (`tackle_testkit::peers`).

use crate::common;

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::{call, find, node_modules, server_script};
use serde_json::json;
use tackle_mcp::{McpManager, McpServerConfig, McpServerStatus};
use tackle_protocol::ErrorCategory;

fn node_config(script: String, extra: &[&str]) -> McpServerConfig {
    let mut args = vec![script];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    McpServerConfig::stdio("node", args)
        .with_start_timeout(Duration::from_secs(30))
        .with_call_timeout(Duration::from_secs(30))
}

async fn check_everything(manager: &McpManager, server: &str) {
    let statuses = manager.statuses();
    assert!(matches!(statuses[0].status, McpServerStatus::Connected { .. }), "{statuses:?}");
    // The reference servers (TypeScript SDK 1.x) do not know `server/discover`: `auto` falls
    // back to the `initialize` handshake of 2025-11-25.
    assert_eq!(statuses[0].protocol.as_deref(), Some("2025-11-25"), "{statuses:?}");
    let tools = manager.tools();
    assert!(tools.len() >= 10, "{} tools", tools.len());
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "tools of one server come sorted by name");

    let echo = find(&tools, &format!("{server}__echo"));
    assert!(echo.spec().annotations.read_only);
    let out = call(echo, json!({"message": "hello from tackle"})).await.unwrap();
    assert!(out.text.contains("hello from tackle"), "{}", out.text);

    let sum = find(&tools, &format!("{server}__get-sum"));
    let out = call(sum, json!({"a": 2, "b": 3})).await.unwrap();
    assert!(out.text.contains('5'), "{}", out.text);

    // Images are described, never inlined.
    let image = find(&tools, &format!("{server}__get-tiny-image"));
    let out = call(image, json!({})).await.unwrap();
    assert!(out.text.contains("[image/png, "), "{}", out.text);
    assert!(out.text.len() < 1_000, "blob inlined: {} bytes", out.text.len());
    assert_eq!(out.data.unwrap()["content"][0]["type"], "image");
}

#[tokio::test]
async fn everything_over_stdio() {
    let Some(modules) = node_modules() else { return };
    let script = server_script(&modules, "server-everything");
    let configs = BTreeMap::from([("everything".to_owned(), node_config(script, &["stdio"]))]);
    let manager = McpManager::connect(&configs).await;
    check_everything(&manager, "everything").await;
    manager.shutdown().await;
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test]
async fn everything_over_streamable_http() {
    let Some(modules) = node_modules() else { return };
    let port = free_port();
    let mut server = tokio::process::Command::new("node")
        .arg(server_script(&modules, "server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < deadline, "server-everything did not listen on {port}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let mut config = McpServerConfig::http(format!("http://127.0.0.1:{port}/mcp"))
        .with_start_timeout(Duration::from_secs(30));
    if let tackle_mcp::McpTransportConfig::Http { headers, .. } = &mut config.transport {
        headers.insert("X-Tackle-Test".to_owned(), "secret-value".to_owned());
    }
    let configs = BTreeMap::from([("remote".to_owned(), config)]);
    let manager = McpManager::connect(&configs).await;
    let status = &manager.statuses()[0];
    assert_eq!(status.transport, "http");
    assert_eq!(status.target, format!("http://127.0.0.1:{port}/mcp"));
    check_everything(&manager, "remote").await;
    manager.shutdown().await;
    server.kill().await.unwrap();
}

#[tokio::test]
async fn filesystem_reads_a_file_in_its_root() {
    let Some(modules) = node_modules() else { return };
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    std::fs::write(root_path.join("hello.txt"), "hello, filesystem\nsecond line\n").unwrap();
    let script = server_script(&modules, "server-filesystem");
    let configs = BTreeMap::from([("fs".to_owned(), node_config(script, &[root_path.to_str().unwrap()]))]);
    let manager = McpManager::connect(&configs).await;
    let tools = manager.tools();
    assert!(tools.len() >= 5, "{:?}", manager.statuses());

    let read = find(&tools, "fs__read_text_file");
    assert!(read.spec().annotations.read_only);
    let path = root_path.join("hello.txt");
    let out = call(read, json!({"path": path.to_str().unwrap()})).await.unwrap();
    assert!(out.text.contains("hello, filesystem"), "{}", out.text);

    let write = find(&tools, "fs__write_file");
    assert!(!write.spec().annotations.read_only);

    // Outside the root: the server refuses, and the failure is typed.
    let err = call(read, json!({"path": "/etc/hostname"})).await.unwrap_err();
    assert_ne!(err.category, ErrorCategory::Unavailable, "{err:?}");
    assert!(err.message.to_lowercase().contains("denied") || err.message.contains("outside"), "{err:?}");

    let index = manager.search_index();
    let hits = index.search("read file contents", 3);
    assert!(hits.iter().any(|(name, _)| name == "fs__read_text_file"), "{hits:?}");
    manager.shutdown().await;
}

//! The 100-tool rmcp test server (`examples/mcp_test_server.rs`) over stdio: listing with
//! pagination, namespacing and order, calls and result mapping, list_changed, timeouts, and
//! reconnection after the server process is killed.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{call, find, test_server_config};
use serde_json::json;
use tackle_mcp::{McpConnection, McpManager, McpServerStatus};
use tackle_protocol::ErrorCategory;
use tackle_tools::{Tool, ToolContext};

/// A context whose call reports when the server has it: the test server sends its progress
/// notifications before it sleeps, so the first one means the call is running on the server.
fn watched_context(call_id: &str) -> (ToolContext, Arc<tokio::sync::Notify>) {
    let mut ctx = ToolContext::new("s", call_id, std::env::temp_dir());
    let running = Arc::new(tokio::sync::Notify::new());
    let signal = running.clone();
    ctx.progress = tackle_tools::ProgressSink::new(move |_| signal.notify_one());
    (ctx, running)
}

async fn manager(names: &[&str]) -> McpManager {
    let configs: BTreeMap<String, _> =
        names.iter().map(|n| ((*n).to_owned(), test_server_config())).collect();
    McpManager::connect(&configs).await
}

#[tokio::test]
async fn lists_all_pages_namespaced_in_order_and_calls_a_tool() {
    // Configured out of order: the catalog is still sorted by server, then tool.
    let manager = manager(&["zeta", "alpha"]).await;
    let tools = manager.tools();
    assert_eq!(tools.len(), 200, "{:?}", manager.statuses());
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
    let expected: Vec<String> =
        ["alpha", "zeta"].iter().flat_map(|s| (0..100).map(move |i| format!("{s}__tool_{i:03}"))).collect();
    assert_eq!(names, expected);
    assert!(names.iter().all(|n| tackle_protocol::is_valid_tool_name(n)));

    let statuses = manager.statuses();
    assert_eq!(statuses.len(), 2);
    for status in &statuses {
        assert_eq!(status.status, McpServerStatus::Connected { tools: 100 });
        assert_eq!(status.transport, "stdio");
        assert_eq!(status.tool_count, 100);
        assert!(status.definitions_bytes > 100 * 100, "{}", status.definitions_bytes);
    }

    let tool = find(&tools, "zeta__tool_042");
    assert!(tool.spec().description.starts_with("Test tool number 42. Manages the weather records"));
    assert!(tool.spec().annotations.read_only);
    assert!(!find(&tools, "zeta__tool_043").spec().annotations.read_only);
    assert!(find(&tools, "zeta__tool_043").spec().annotations.destructive, "MCP default");
    let out = call(tool, json!({"text": "hi"})).await.unwrap();
    assert_eq!(out.text, r#"tool_042 got {"text":"hi"}"#);

    let index = manager.search_index();
    assert_eq!(index.len(), 200);
    manager.shutdown().await;
    assert!(manager.tools().is_empty());
}

#[tokio::test]
async fn maps_rich_content_errors_and_timeouts() {
    let configs = BTreeMap::from([(
        "t".to_owned(),
        test_server_config().with_call_timeout(Duration::from_millis(500)),
    )]);
    let manager = McpManager::connect(&configs).await;
    let tools = manager.tools();
    let tool = find(&tools, "t__tool_001");

    let out = call(tool, json!({"rich": true})).await.unwrap();
    assert_eq!(
        out.text,
        "{\"tool\":\"tool_001\",\"ok\":true}\n[image/png, 8 bytes]\nresource: file:///notes.txt (notes.txt)"
    );
    let data = out.data.unwrap();
    assert_eq!(data["structuredContent"]["ok"], true);
    assert_eq!(data["content"][0]["mimeType"], "image/png");

    let err = call(tool, json!({"fail": "EACCES: permission denied"})).await.unwrap_err();
    assert_eq!(err.category, ErrorCategory::Permission);

    let err = call(tool, json!({"sleep_ms": 3000})).await.unwrap_err();
    assert_eq!(err.category, ErrorCategory::Timeout, "{err:?}");
    assert!(err.is_retryable());

    // The server is still fine after a timed-out call.
    assert!(call(tool, json!({})).await.is_ok());

    // Cancellation stops the call early: cancelled while the server sleeps, before its
    // answer (400 ms, within the 500 ms timeout) could arrive.
    let (ctx, running) = watched_context("c");
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        running.notified().await;
        cancel.cancel();
    });
    let err = tool.call(json!({"progress": 1, "sleep_ms": 400}), ctx).await.unwrap_err();
    assert_eq!(err.category, ErrorCategory::Interrupted);

    let err = call(tool, json!([1, 2])).await.unwrap_err();
    assert_eq!(err.category, ErrorCategory::InvalidArgs);
    manager.shutdown().await;
}

#[tokio::test]
async fn unknown_remote_tool_is_reported() {
    let connection = McpConnection::connect("t", test_server_config()).await.unwrap();
    let ctx = tackle_tools::ToolContext::new("s", "c", std::env::temp_dir());
    let err = connection.call_tool("nope", None, &ctx, "t__nope").await.unwrap_err();
    let failure = tackle_mcp::failure_from_error(err, "t");
    assert_eq!(failure.category, ErrorCategory::NotFound, "{failure:?}");
    connection.shutdown().await;
}

#[tokio::test]
async fn list_changed_is_applied_only_on_refresh() {
    let manager = manager(&["t"]).await;
    assert!(!manager.refresh_if_changed().await, "nothing announced yet");
    let tools = manager.tools();
    assert_eq!(tools.len(), 100);

    call(find(&tools, "t__tool_003"), json!({"add_tool": true})).await.unwrap();
    // The notification arrives asynchronously; the catalog does not move until a refresh.
    let connection = manager.connection("t").unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !connection.take_list_changed() {
        assert!(Instant::now() < deadline, "no tools/list_changed notification");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(manager.tools().len(), 100, "mid-turn catalog is frozen");
    connection.mark_list_changed();

    assert!(manager.refresh_if_changed().await);
    let tools = manager.tools();
    assert_eq!(tools.len(), 101);
    assert_eq!(tools.last().unwrap().spec().name, "t__tool_100");
    assert!(!manager.refresh_if_changed().await, "flag was consumed");
    manager.shutdown().await;
}

fn kill_9(pid: u32) {
    let status = Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn killed_server_is_unavailable_then_reconnected() {
    let manager = manager(&["t"]).await;
    let tools: Vec<Arc<dyn Tool>> = manager.tools();
    let tool = find(&tools, "t__tool_010");
    assert!(call(tool, json!({})).await.is_ok());

    let connection = manager.connection("t").unwrap();
    let pid = connection.server_pid().expect("stdio server has a pid");
    kill_9(pid);
    let deadline = Instant::now() + Duration::from_secs(10);
    while connection.is_connected() {
        assert!(Instant::now() < deadline, "the dead server was not noticed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(matches!(manager.statuses()[0].status, McpServerStatus::Unavailable { tools: 100, .. }));

    // The next call fails fast as unavailable and retryable, and starts a reconnect.
    let started = Instant::now();
    let err = call(tool, json!({})).await.unwrap_err();
    assert_eq!(err.category, ErrorCategory::Unavailable, "{err:?}");
    assert!(err.is_retryable());
    assert!(err.hint.as_deref().unwrap_or_default().contains("reconnected"), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(2));

    // A later call waits for the reconnect and succeeds on a new process.
    let out = call(tool, json!({"text": "again"})).await.unwrap();
    assert_eq!(out.text, r#"tool_010 got {"text":"again"}"#);
    let new_pid = connection.server_pid().unwrap();
    assert_ne!(new_pid, pid);
    assert_eq!(manager.statuses()[0].status, McpServerStatus::Connected { tools: 100 });

    // A reconnect raises list_changed; the re-listing finds the same tools: no catalog change.
    assert!(!manager.refresh_if_changed().await);
    assert_eq!(manager.tools().len(), 100);

    // Killed mid-call: the in-flight call fails as unavailable too.
    let (ctx, running) = watched_context("c-killed");
    let pending = {
        let tool = Arc::clone(tools.iter().find(|t| t.spec().name == "t__tool_011").unwrap());
        tokio::spawn(async move { tool.call(json!({"progress": 1, "sleep_ms": 5000}), ctx).await })
    };
    running.notified().await;
    kill_9(new_pid);
    let err = pending.await.unwrap().unwrap_err();
    assert_eq!(err.category, ErrorCategory::Unavailable, "{err:?}");
    assert!(call(tool, json!({})).await.is_ok(), "reconnected again");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_stdio_server_gets_only_the_allowlisted_environment() {
    // The server is started through bash, which records the environment it was given.
    let dir = tempfile::tempdir().unwrap();
    let recorded = dir.path().join("env.txt");
    let script = format!("env > '{}'; exec '{}'", recorded.display(), common::test_server_path().display());
    let mut config = tackle_mcp::McpServerConfig::stdio("bash", ["-c".to_owned(), script])
        .with_start_timeout(Duration::from_secs(20));
    if let tackle_mcp::McpTransportConfig::Stdio { env, env_allow, .. } = &mut config.transport {
        env.insert("SERVER_TOKEN".into(), "configured-for-this-server".into());
        // Set by cargo for every test process: stands for a variable the user chose to pass.
        env_allow.push("CARGO_PKG_NAME".into());
    }
    let manager = McpManager::connect(&BTreeMap::from([("rec".to_owned(), config)])).await;
    assert!(
        matches!(manager.statuses()[0].status, McpServerStatus::Connected { .. }),
        "{:?}",
        manager.statuses()
    );
    manager.shutdown().await;
    let text = std::fs::read_to_string(&recorded).unwrap();
    let allow = vec!["CARGO_PKG_NAME".to_owned()];
    for line in text.lines() {
        let Some((name, _)) = line.split_once('=') else { continue };
        let bash_own = ["PWD", "SHLVL", "_"].contains(&name);
        assert!(
            bash_own || name == "SERVER_TOKEN" || tackle_sandbox::env_name_allowed(name, &allow),
            "{name} reached the MCP server: {text}"
        );
    }
    assert!(text.contains("SERVER_TOKEN=configured-for-this-server"), "{text}");
    assert!(text.contains("CARGO_PKG_NAME=tackle-mcp"), "{text}");
    assert!(!text.contains("CARGO_MANIFEST_DIR"), "only the names asked for: {text}");
}

/// The same rmcp server in each revision: discovered as 2026-07-28 by default, spoken to as
/// 2025-11-25 and 2025-06-18 when pinned; progress reaches the call, and a cancelled or timed-out
/// call is cancelled on the server, in each.
#[tokio::test]
async fn each_revision_negotiates_reports_progress_and_sends_cancellation() {
    use tackle_mcp::McpProtocol;
    for (protocol, expected) in [
        (McpProtocol::Auto, "2026-07-28"),
        (McpProtocol::V2026_07_28, "2026-07-28"),
        (McpProtocol::V2025_11_25, "2025-11-25"),
        (McpProtocol::V2025_06_18, "2025-06-18"),
    ] {
        let config = test_server_config().with_protocol(protocol).with_call_timeout(Duration::from_secs(2));
        let connection = McpConnection::connect("t", config).await.unwrap();
        assert_eq!(connection.protocol().as_deref(), Some(expected), "{protocol}");
        assert_eq!(connection.list_tools().await.unwrap().len(), 100, "{protocol}");

        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut ctx = ToolContext::new("s", "c", std::env::temp_dir());
        let sink = seen.clone();
        ctx.progress = tackle_tools::ProgressSink::new(move |p| sink.lock().unwrap().push(p.message));
        let args = json!({"progress": 3}).as_object().cloned();
        let out = connection.call_tool("tool_001", args, &ctx, "t__tool_001").await.unwrap();
        assert!(!out.result.content.is_empty());
        assert_eq!(*seen.lock().unwrap(), ["step 1 (1/3)", "step 2 (2/3)", "step 3 (3/3)"], "{protocol}");

        // Cancelled by the turn, then past the call timeout: the server hears of both.
        let (ctx, running) = watched_context("c2");
        let cancel = ctx.cancel.clone();
        tokio::spawn(async move {
            running.notified().await;
            cancel.cancel();
        });
        let slow = json!({"progress": 1, "sleep_ms": 10_000}).as_object().cloned();
        let err = connection.call_tool("tool_001", slow.clone(), &ctx, "t__tool_001").await.unwrap_err();
        assert_eq!(err, tackle_mcp::McpError::Cancelled);
        let ctx = ToolContext::new("s", "c3", std::env::temp_dir());
        let err = connection.call_tool("tool_001", slow, &ctx, "t__tool_001").await.unwrap_err();
        assert!(matches!(err, tackle_mcp::McpError::Timeout(_)), "{err:?}");
        let report = json!({"report_cancelled": true}).as_object().cloned();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let out = connection.call_tool("tool_001", report.clone(), &ctx, "t__tool_001").await.unwrap();
            let text = serde_json::to_string(&out.result.content).unwrap();
            if text.contains("cancelled: 2") {
                break;
            }
            assert!(Instant::now() < deadline, "{protocol}: the server saw {text}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        connection.shutdown().await;
    }
}

#[tokio::test]
async fn structured_results_are_checked_against_the_output_schema() {
    let manager = manager(&["t"]).await;
    let tools = manager.tools();
    let tool = find(&tools, "t__tool_000");
    let out = call(tool, json!({"rich": true})).await.unwrap();
    assert_eq!(out.data.unwrap()["structuredContent"], json!({"tool": "tool_000", "ok": true}));
    let err = call(tool, json!({"rich": true, "break_schema": true})).await.unwrap_err();
    assert!(err.message.contains("does not match the tool's outputSchema"), "{err:?}");
    // Tools without a schema take any structure.
    assert!(call(find(&tools, "t__tool_001"), json!({"rich": true, "break_schema": true})).await.is_ok());
    manager.shutdown().await;
}

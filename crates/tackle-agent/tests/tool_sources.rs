//! A tool source that changes while a session runs: the 100-tool MCP test server adds `tool_100`
//! and sends `notifications/tools/list_changed` during turn 1. The change must land at the start
//! of turn 2 (never between two steps), as a `catalog_changed` event; listed tools change the
//! catalog (a cache break, said out loud), deferred tools change only the search index.

use crate::common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::provider;
use tackle_agent::{Agent, AgentConfig, NewSessionOptions, Session, TurnInput};
use tackle_mcp::{McpManager, McpServerConfig};
use tackle_protocol::AgentEvent;
use tackle_provider::ProviderKind;
use tackle_store::Store;
use tackle_testkit::{FakeModel, Script, Turn};
use tackle_tools::{AutoApprove, EventSink};
use tokio_util::sync::CancellationToken;

struct Setup {
    fake: FakeModel,
    agent: Agent,
    manager: Arc<McpManager>,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    workspace: std::path::PathBuf,
    store: Store,
}

async fn setup(script: Script, window: u64) -> Setup {
    let server = tackle_testkit::example_binary("tackle-mcp", "mcp_test_server").unwrap();
    let config = McpServerConfig::stdio(server.to_string_lossy(), Vec::<String>::new())
        .with_start_timeout(Duration::from_secs(20))
        .with_call_timeout(Duration::from_secs(20));
    let manager = Arc::new(McpManager::connect(&BTreeMap::from([("test".to_owned(), config)])).await);
    let fake = FakeModel::start(script).await.unwrap();
    let db = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let store = Store::open(&db.path().join("t.db")).await.unwrap();
    let mut config = AgentConfig::new("gpt-4o");
    config.context.window = Some(window);
    let agent = Agent::builder(provider(ProviderKind::Openai, &fake))
        .config(config)
        .store(store.clone())
        .workspace(workspace.path())
        .tool_source(manager.clone())
        .approver(AutoApprove)
        .build()
        .await
        .unwrap();
    assert_eq!(manager.tools().len(), 100);
    let path = workspace.path().to_owned();
    Setup { fake, agent, manager, _dirs: (db, workspace), workspace: path, store }
}

impl Setup {
    async fn session(&self) -> Session {
        self.agent
            .create_session(NewSessionOptions { workspace: self.workspace.clone(), ..Default::default() })
            .await
            .unwrap()
    }

    /// Waits until the server's `list_changed` notification has reached the client.
    async fn await_notification(&self) {
        let connection = self.manager.connection("test").unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !connection.list_changed_pending() {
            assert!(Instant::now() < deadline, "no tools/list_changed notification");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

async fn turn(session: &mut Session, text: &str) -> (String, Vec<AgentEvent>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let events = events.clone();
        EventSink::new(move |e| events.lock().unwrap().push(e))
    };
    let outcome = session.run_turn(TurnInput::new(text), &sink, &CancellationToken::new()).await.unwrap();
    let events = events.lock().unwrap().clone();
    (outcome.text, events)
}

fn catalog_changes(events: &[AgentEvent]) -> Vec<&AgentEvent> {
    events.iter().filter(|e| matches!(e, AgentEvent::CatalogChanged { .. })).collect()
}

fn tool_names(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn results(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolResult { .. }))
        .map(|e| serde_json::to_string(e).unwrap())
        .collect()
}

#[tokio::test]
async fn a_listed_tool_added_mid_turn_joins_the_catalog_at_the_next_turn() {
    let script = Script::new(vec![
        Turn::call("test__tool_000", r#"{"add_tool":true}"#),
        Turn::text("Asked for a new tool."),
        Turn::call("test__tool_100", r#"{"text":"hi"}"#),
        Turn::text("Used it."),
    ]);
    let s = setup(script, 1_000_000).await;
    assert!(s.agent.deferred().is_none(), "100 small tools fit 10% of a 1M window");
    let mut session = s.session().await;
    let original = session.catalog().specs().clone();
    let (text, events) = turn(&mut session, "add a tool").await;
    assert_eq!(text, "Asked for a new tool.");
    assert!(catalog_changes(&events).is_empty(), "nothing changes inside the turn");
    s.await_notification().await;

    let (text, events) = turn(&mut session, "use it").await;
    assert_eq!(text, "Used it.");
    let changes = catalog_changes(&events);
    assert_eq!(changes.len(), 1, "{events:?}");
    let AgentEvent::CatalogChanged { reason, added, removed, cache_break, fingerprint } = changes[0] else {
        unreachable!()
    };
    assert_eq!(
        (reason.as_str(), added.as_slice(), removed.len()),
        ("tool_source", ["test__tool_100".to_owned()].as_slice(), 0)
    );
    assert!(cache_break, "a listed tool changes the definitions sent");
    assert_eq!(fingerprint, session.catalog().fingerprint());
    // Announced before the turn's first step.
    let first_step = events.iter().position(|e| matches!(e, AgentEvent::StepStarted { .. })).unwrap();
    let change = events.iter().position(|e| matches!(e, AgentEvent::CatalogChanged { .. })).unwrap();
    assert!(change < first_step);
    assert!(results(&events)[0].contains("tool_100 got"), "{:?}", results(&events));

    // Both requests of turn 1 sent the old list; both of turn 2 the new one.
    let requests = s.fake.requests();
    assert_eq!(requests.len(), 4);
    let lists: Vec<Vec<String>> = requests.iter().map(|r| tool_names(&r.body)).collect();
    assert_eq!(lists[0], lists[1]);
    assert_eq!(lists[2], lists[3]);
    assert!(
        !lists[1].contains(&"test__tool_100".to_owned()) && lists[2].contains(&"test__tool_100".to_owned())
    );
    assert_eq!(lists[2].len(), lists[1].len() + 1);

    // A session opened later starts with the new tools and reports nothing; sessions share one
    // catalog allocation (so providers render it once), rebuilt after the change.
    let id = session.id().to_owned();
    let before = session.catalog().specs().clone();
    let mut reopened = s.agent.open_session(&id).await.unwrap();
    assert!(reopened.catalog().contains("test__tool_100"));
    assert!(std::sync::Arc::ptr_eq(reopened.catalog().specs(), &before));
    assert!(!std::sync::Arc::ptr_eq(&original, &before), "the change built a new catalog");
    drop(session);
    let state: Option<Vec<String>> = s.store.sessions().get_state(&id, "catalog.tools").await.unwrap();
    assert!(state.unwrap().contains(&"test__tool_100".to_owned()));
    let _ = &mut reopened;
    s.manager.shutdown().await;
}

#[tokio::test]
async fn a_deferred_tool_added_mid_session_is_found_without_a_cache_break() {
    let script = Script::new(vec![
        Turn::call("tool_search", r#"{"query":"test tool number 0","limit":1}"#),
        Turn::call("call_tool", r#"{"name":"test__tool_000","arguments":{"add_tool":true}}"#),
        Turn::text("Asked for a new tool."),
        Turn::call("tool_search", r#"{"query":"tool_100","limit":1}"#),
        Turn::call("call_tool", r#"{"name":"test__tool_100","arguments":{"text":"hi"}}"#),
        Turn::text("Used it."),
        Turn::text("Elsewhere."),
    ]);
    let s = setup(script, 20_000).await;
    assert_eq!(s.agent.deferred().map(|d| d.len()), Some(100));
    let bytes = |specs: &[tackle_protocol::ToolSpec]| -> usize {
        specs.iter().map(|t| serde_json::to_string(t).unwrap().len()).sum()
    };
    let full = bytes(&s.agent.tool_specs());
    let sent = bytes(s.agent.catalog().specs());
    eprintln!(
        "tool definitions per request with the 100-tool MCP server: {sent} B of {full} B ({:.1}%)",
        sent as f64 * 100.0 / full as f64
    );
    // Exactly the MCP definitions are left out of what is sent: the core tools and the two
    // deferral tools remain, a small share of everything.
    let remote = bytes(&s.manager.tools().iter().map(|t| t.spec().clone()).collect::<Vec<_>>());
    assert_eq!(sent, full - remote);
    assert!(sent * 100 <= full * 15, "definitions sent {sent} B are <= 15% of the full catalog {full} B");
    // Opened before the change and left idle (a server opens sessions per message).
    let other = s.session().await.id().to_owned();
    let mut session = s.session().await;
    let (_, events) = turn(&mut session, "add a tool").await;
    assert!(catalog_changes(&events).is_empty());
    s.await_notification().await;

    let (text, events) = turn(&mut session, "use it").await;
    assert_eq!(text, "Used it.");
    let changes = catalog_changes(&events);
    assert_eq!(changes.len(), 1, "{events:?}");
    let AgentEvent::CatalogChanged { added, cache_break, .. } = changes[0] else { unreachable!() };
    assert_eq!(added, &["test__tool_100".to_owned()]);
    assert!(!cache_break, "deferred tools are not in the definitions sent");
    assert_eq!(s.agent.deferred().map(|d| d.len()), Some(101));
    let results = results(&events);
    assert!(results[0].contains("test__tool_100"), "search finds the new tool: {}", results[0]);
    assert!(results[1].contains("tool_100 got"), "{}", results[1]);

    // The idle session learns of the change when it is opened again.
    let mut reopened = s.agent.open_session(&other).await.unwrap();
    let (text, events) = turn(&mut reopened, "hello").await;
    assert_eq!(text, "Elsewhere.");
    let changes = catalog_changes(&events);
    assert_eq!(changes.len(), 1, "{events:?}");
    let AgentEvent::CatalogChanged { reason, added, cache_break, .. } = changes[0] else { unreachable!() };
    assert_eq!(
        (reason.as_str(), added.as_slice(), *cache_break),
        ("resumed", ["test__tool_100".to_owned()].as_slice(), false)
    );

    // The tool list never changed: every request's prefix starts with the same tools.
    let requests = s.fake.requests();
    assert_eq!(requests.len(), 7);
    for r in &requests {
        assert_eq!(r.body["tools"], requests[0].body["tools"]);
    }
    s.manager.shutdown().await;
}

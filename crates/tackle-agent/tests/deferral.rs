//! Deferred tools: 100 extra tools over budget leave the catalog; tool_search finds them,
//! call_tool runs them with their own schema, and the request prefix never changes.

use crate::common;

use std::sync::Arc;

use async_trait::async_trait;
use common::provider;
use serde_json::{Value, json};
use tackle_agent::{Agent, AgentConfig, NewSessionOptions, TurnInput};
use tackle_protocol::{AgentEvent, ToolAnnotations, ToolSpec};
use tackle_provider::ProviderKind;
use tackle_store::Store;
use tackle_testkit::{FakeModel, Script, Turn};
use tackle_tools::{AutoApprove, EventSink, StaticTools, Tool, ToolContext, ToolFailure, ToolOutput};
use tokio_util::sync::CancellationToken;

/// A tool with a runtime schema, like an MCP tool: `svc{n}__op` needs an integer `count`.
struct Remote(ToolSpec);

#[async_trait]
impl Tool for Remote {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        Ok(ToolOutput::text(format!("{} ran with {}", self.0.name, args)))
    }
}

/// A tool the size of a typical MCP tool definition (~700 bytes: a paragraph of description and
/// a handful of described parameters).
fn remote(n: usize) -> Remote {
    let topics = ["invoice", "calendar", "weather", "ticket", "payroll"];
    let topic = topics[n % topics.len()];
    Remote(
        ToolSpec::new(
            format!("svc{n:03}__{topic}_op"),
            format!(
                "Manage {topic} records number {n} in the {topic} service: create, update and look them up. \
                 Use it when the user asks about {topic} data; it returns the record as JSON with its id, \
                 owner, status and timestamps. Fails with not_found for unknown ids."
            ),
            json!({"type": "object", "properties": {
                "count": {"type": "integer", "description": "How many records to return, 1 to 100."},
                "note": {"type": "string", "description": "Free text attached to the change, shown in the audit log."},
                "owner": {"type": "string", "description": "User id of the owner; defaults to the caller."},
                "status": {"type": "string", "enum": ["open", "closed", "archived"], "description": "Filter by status."},
                "since": {"type": "string", "description": "Only records changed after this ISO 8601 time."}
            }, "required": ["count"]}),
        )
        .with_annotations(ToolAnnotations::read_only()),
    )
}

#[tokio::test]
async fn deferred_tools_are_found_and_called_without_changing_the_prefix() {
    let script = Script::new(vec![
        // Called before search: refused with a hint.
        Turn::call("call_tool", r#"{"name":"svc002__weather_op","arguments":{"count":1}}"#),
        Turn::call("tool_search", r#"{"query":"weather records","limit":3}"#),
        // Wrong arguments for the deferred tool's own schema.
        Turn::call("call_tool", r#"{"name":"svc002__weather_op","arguments":{"count":"two"}}"#),
        Turn::call("call_tool", r#"{"name":"svc002__weather_op","arguments":{"count":2}}"#),
        Turn::text("Done."),
    ]);
    let fake = FakeModel::start(script).await.unwrap();
    let db = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let store = Store::open(&db.path().join("t.db")).await.unwrap();
    let mut roomy = AgentConfig::new("gpt-4o");
    roomy.context.window = Some(1_000_000);
    let agent = Agent::builder(provider(ProviderKind::Openai, &fake))
        .config(roomy)
        .in_memory()
        .tool_source(remote_tools())
        .build()
        .await
        .unwrap();
    assert!(agent.deferred().is_none(), "they fit 10% of a 1M window");
    let agent = deferred_agent(ProviderKind::Openai, "gpt-4o", &fake, &store, false).await;
    assert_eq!(agent.deferred().unwrap().len(), 100, "100 tools are over 10% of a 50k window");
    // Everything the agent could offer without deferral.
    let full: usize = agent
        .tool_specs()
        .iter()
        .filter(|s| s.name != "tool_search" && s.name != "call_tool")
        .map(|s| serde_json::to_string(s).unwrap().len())
        .sum();
    let catalog = agent.catalog();
    assert!(
        catalog.contains("tool_search")
            && catalog.contains("call_tool")
            && !catalog.contains("svc002__weather_op")
    );
    let sent: usize = catalog.specs().iter().map(|s| serde_json::to_string(s).unwrap().len()).sum();
    eprintln!(
        "tool definitions per request: {sent} B of {full} B ({:.1}%)",
        sent as f64 * 100.0 / full as f64
    );
    // Exactly the remote definitions are left out: what is sent is the core tools plus the two
    // deferral tools, a small share of everything.
    let size = |name: &str| {
        serde_json::to_string(&agent.tool_specs().into_iter().find(|s| s.name == name).unwrap())
            .unwrap()
            .len()
    };
    let remote: usize = (0..100).map(|n| size(&remote(n).0.name)).sum();
    assert_eq!(sent, full - remote + size("tool_search") + size("call_tool"));
    assert!(sent * 100 <= full * 15, "definitions sent {sent} B are <= 15% of the full catalog {full} B");

    let mut session = agent
        .create_session(NewSessionOptions { workspace: workspace.path().to_owned(), ..Default::default() })
        .await
        .unwrap();
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = {
        let events = events.clone();
        EventSink::new(move |e| events.lock().unwrap().push(e))
    };
    let outcome = session
        .run_turn(TurnInput::new("what's the weather count?"), &sink, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.text, "Done.");
    let events = events.lock().unwrap().clone();
    let results: Vec<&AgentEvent> =
        events.iter().filter(|e| matches!(e, AgentEvent::ToolResult { .. })).collect();
    let text = |e: &AgentEvent| serde_json::to_string(e).unwrap();
    assert!(text(results[0]).contains("has not been found by tool_search"), "{}", text(results[0]));
    assert!(text(results[1]).contains("svc002__weather_op"), "search returns the tool: {}", text(results[1]));
    assert!(
        text(results[2]).contains("invalid_args"),
        "validated against the deferred schema: {}",
        text(results[2])
    );
    assert!(text(results[3]).contains("svc002__weather_op ran with"), "{}", text(results[3]));

    // Every request carried the same tools, and after the search a tail note names what was found.
    let requests = fake.requests();
    assert_eq!(requests.len(), 5);
    for r in &requests {
        assert_eq!(r.body["tools"], requests[0].body["tools"]);
    }
    let last = requests[4].body["messages"].to_string();
    assert!(last.contains("Found with tool_search") && last.contains("svc002__weather_op"), "{last}");
    let ratios = prefix_ratios(&events);
    // Steps 2-5 report a ratio (the first has no previous request to compare with).
    eprintln!("prefix ratios: {ratios:?}");
    assert!(
        ratios.len() == 4 && ratios.iter().all(|r| *r >= 0.995),
        "prefix stays stable through search and calls: {ratios:?}"
    );
}

/// The 100 remote tools, as a tool source.
fn remote_tools() -> Arc<StaticTools> {
    Arc::new(StaticTools::new("remote", (0..100).map(|n| Arc::new(remote(n)) as Arc<dyn Tool>).collect()))
}

/// The builtins and the 100 remote tools, deferred in a 50k window as `tackle.toml` would have
/// it, with `tool_search` and `call_tool`, and an agent over `kind` answering as `model`.
async fn deferred_agent(
    kind: ProviderKind,
    model: &str,
    fake: &FakeModel,
    store: &Store,
    native: bool,
) -> Agent {
    let mut config = AgentConfig::new(model);
    config.context.window = Some(50_000);
    config.deferral.native = native;
    let agent = Agent::builder(provider(kind, fake))
        .config(config)
        .store(store.clone())
        .tool_source(remote_tools())
        .approver(AutoApprove)
        .build()
        .await
        .unwrap();
    assert!(agent.deferred().is_some(), "100 tools in a 50k window are deferred");
    agent
}

async fn run(agent: &Agent, workspace: &std::path::Path, text: &str) -> (String, Vec<AgentEvent>) {
    let mut session = agent
        .create_session(NewSessionOptions { workspace: workspace.to_owned(), ..Default::default() })
        .await
        .unwrap();
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = {
        let events = events.clone();
        EventSink::new(move |e| events.lock().unwrap().push(e))
    };
    let outcome = session.run_turn(TurnInput::new(text), &sink, &CancellationToken::new()).await.unwrap();
    let events = events.lock().unwrap().clone();
    (outcome.text, events)
}

/// `[deferral] native = true` on Anthropic: every definition is sent from the first request
/// (deferred ones with `defer_loading`), `tool_search` loads what it finds with `tool_reference`
/// blocks, and the model calls found tools directly — the tool list never changes.
#[tokio::test]
async fn native_deferral_loads_found_tools_by_reference() {
    let script = Script::new(vec![
        // Not loaded yet: refused, pointing at tool_search.
        Turn::call("svc002__weather_op", r#"{"count":1}"#),
        Turn::call("tool_search", r#"{"query":"weather records","limit":3}"#),
        // Loaded: called by its own name, validated against its own schema.
        Turn::call("svc002__weather_op", r#"{"count":"two"}"#),
        Turn::call("svc002__weather_op", r#"{"count":2}"#),
        Turn::text("Done."),
    ]);
    let fake = FakeModel::start(script).await.unwrap();
    let db = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let store = Store::open(&db.path().join("t.db")).await.unwrap();
    let agent = deferred_agent(ProviderKind::Anthropic, "claude-sonnet-4-5", &fake, &store, true).await;
    assert_eq!(agent.deferred().unwrap().mode(), tackle_agent::DeferralMode::Native);
    let catalog = agent.catalog();
    assert!(catalog.contains("tool_search") && !catalog.contains("call_tool"));
    assert!(catalog.get("svc002__weather_op").unwrap().defer_loading);
    assert!(!catalog.get("shell").unwrap().defer_loading);

    let (text, events) = run(&agent, workspace.path(), "what's the weather count?").await;
    assert_eq!(text, "Done.");
    let results: Vec<String> = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolResult { .. }))
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    assert!(results[0].contains("has not been found by tool_search"), "{}", results[0]);
    assert!(results[1].contains("svc002__weather_op"), "{}", results[1]);
    assert!(results[2].contains("invalid_args"), "{}", results[2]);
    assert!(results[3].contains("svc002__weather_op ran with"), "{}", results[3]);
    let strategies: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolsResolved { strategy, .. } => Some(strategy.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(strategies[..4], ["defer_loading"; 4], "no tail note or allowed_tools needed");

    let requests = fake.requests();
    assert_eq!(requests.len(), 5);
    for r in &requests {
        assert_eq!(r.body["tools"], requests[0].body["tools"], "the tool list never changes");
        assert_eq!(r.header("anthropic-beta"), Some(tackle_provider::DEFERRED_TOOLS_BETA));
    }
    let tools = requests[0].body["tools"].as_array().unwrap();
    assert_eq!(tools.iter().filter(|t| t["defer_loading"] == true).count(), 100);
    // After the search, its result is a tool_reference to each tool found.
    let search_result = &requests[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find_map(|m| m["content"].as_array()?.iter().find(|b| b["type"] == "tool_result").cloned());
    let refs = search_result.as_ref().unwrap()["content"].as_array().unwrap().clone();
    assert!(refs.iter().all(|r| r["type"] == "tool_reference"), "{refs:?}");
    assert!(refs.iter().any(|r| r["tool_name"] == "svc002__weather_op"), "{refs:?}");
    let ratios = prefix_ratios(&events);
    assert!(ratios.len() == 4 && ratios.iter().all(|r| *r >= 0.995), "{ratios:?}");
}

/// Native deferral asked of a provider without it falls back to the proxy, and says so.
#[tokio::test]
async fn native_deferral_falls_back_to_the_proxy_where_unsupported() {
    let fake = FakeModel::start(Script::new(vec![Turn::text("Hi.")])).await.unwrap();
    let db = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let store = Store::open(&db.path().join("t.db")).await.unwrap();
    let agent = deferred_agent(ProviderKind::Openai, "gpt-4o", &fake, &store, true).await;
    assert_eq!(agent.deferred().unwrap().mode(), tackle_agent::DeferralMode::Proxy);
    assert!(agent.catalog().contains("call_tool"));
    let (_, events) = run(&agent, workspace.path(), "hi").await;
    assert!(
        events.iter().any(|e| matches!(e, AgentEvent::Warning { code, .. } if code == "strategy_fallback")),
        "{events:?}"
    );
    let body = fake.requests()[0].body.to_string();
    assert!(!body.contains("defer_loading"));
}

/// The prefix ratio of every step that reports one.
fn prefix_ratios(events: &[AgentEvent]) -> Vec<f64> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::StepFinished { metrics: Some(m), .. } => m.prefix_ratio,
            _ => None,
        })
        .collect()
}

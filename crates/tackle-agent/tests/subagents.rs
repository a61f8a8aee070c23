//! Sub-agents against the scripted fake model: the `agent` tool runs each task in a child
//! session linked to the parent's call, with its own mask; two calls in one step run at the same
//! time; a child's confirmation is asked on the parent's channel; cancelling the parent stops
//! the child; the depth limit holds, for a reopened child too; usage rolls up; the child's
//! first request shares the parent's prefix and raises no cache-break warning, while a real
//! break later in the child still does; a sub-agent's `model` is the model of its requests only.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tackle_agent::{Agent, AgentBuilder, NewSessionOptions, Session, SubAgent, SubAgentRegistry, TurnInput};
use tackle_protocol::{AgentEvent, ToolAnnotations, TurnEnd, Usage};
use tackle_provider::ProviderKind;
use tackle_store::Store;
use tackle_testkit::{FakeModel, Script, Turn};
use tackle_tools::{ApprovalQueue, EventSink, ToolContext, ToolFailure, ToolOutput, TypedTool};
use tokio_util::sync::CancellationToken;

struct Rig {
    fake: FakeModel,
    agent: Agent,
    store: Store,
    workspace: tempfile::TempDir,
    _db: tempfile::TempDir,
    events: Arc<Mutex<Vec<AgentEvent>>>,
}

impl Rig {
    async fn new(script: Script, builder: impl FnOnce(AgentBuilder) -> AgentBuilder) -> Self {
        Self::speaking(ProviderKind::Openai, script, builder).await
    }

    /// A rig whose model speaks `kind`'s wire format.
    async fn speaking(
        kind: ProviderKind,
        script: Script,
        builder: impl FnOnce(AgentBuilder) -> AgentBuilder,
    ) -> Self {
        let workspace = tempfile::tempdir().unwrap();
        let db = tempfile::tempdir().unwrap();
        let store = Store::open(&db.path().join("tackle.db")).await.unwrap();
        let fake = FakeModel::start(script).await.unwrap();
        let mut agents = SubAgentRegistry::new();
        agents
            .insert(
                SubAgent::new("reader", "Reads files and reports.")
                    .instructions("You only read. Report what you found.")
                    .tools(["read_file"]),
            )
            .unwrap();
        agents
            .insert(SubAgent::new("cheap", "Answers quickly on a smaller model.").model("model-small"))
            .unwrap();
        let b = Agent::builder(common::provider(kind, &fake))
            .model("model-x")
            .store(store.clone())
            .workspace(workspace.path())
            .sub_agents(agents);
        let agent = builder(b).build().await.unwrap();
        Self { fake, agent, store, workspace, _db: db, events: Arc::default() }
    }

    async fn session(&self) -> Session {
        self.agent
            .create_session(NewSessionOptions {
                workspace: self.workspace.path().to_owned(),
                ..Default::default()
            })
            .await
            .unwrap()
    }

    fn sink(&self) -> EventSink {
        let events = self.events.clone();
        EventSink::new(move |e| events.lock().unwrap().push(e))
    }

    /// The `subagent` events (the children's events as the parent's front end sees them):
    /// (child session id, inner event).
    fn child_events(&self) -> Vec<(String, Value)> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Custom { name, data } if name == "subagent" => {
                    Some((data["session_id"].as_str().unwrap().to_owned(), data["event"].clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// The request whose first user message is `prompt`.
    fn request_of(&self, prompt: &str) -> Value {
        self.fake
            .requests()
            .into_iter()
            .map(|r| r.body)
            .find(|b| {
                b["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["role"] == "user" && m["content"] == prompt)
            })
            .unwrap_or_else(|| panic!("no request carries {prompt:?}"))
    }
}

/// How long a test waits for what must happen at once before it fails instead of hanging.
const GUARD: std::time::Duration = std::time::Duration::from_secs(30);

fn usage(input: u64, output: u64) -> Usage {
    Usage { input_tokens: input, output_tokens: output, ..Usage::default() }
}

fn allowed(body: &Value) -> Option<Vec<String>> {
    body["tool_choice"]["allowed_tools"]["tools"]
        .as_array()
        .map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect())
}

#[tokio::test]
async fn two_agent_calls_in_one_step_run_two_linked_children_at_once() {
    let script = Script::new(vec![
        Turn::default()
            .with_call_id("call_a", "agent", r#"{"prompt": "task A", "agent": "reader"}"#)
            .with_call_id("call_b", "agent", r#"{"prompt": "task B"}"#)
            .with_usage(usage(100, 10)),
        Turn::text("child answer one").with_usage(usage(40, 4)),
        Turn::text("child answer two").with_usage(usage(60, 6)),
        Turn::text("both done").with_usage(usage(200, 20)),
    ]);
    let rig = Rig::new(script, |b| b).await;
    let mut parent = rig.session().await;
    let outcome = parent
        .run_turn(TurnInput::new("split the work"), &rig.sink(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.end, TurnEnd::Completed, "{outcome:?}");
    assert_eq!(outcome.text, "both done");

    // Usage rolls up: the parent's two steps and both children's.
    assert_eq!(outcome.usage.input_tokens, 100 + 40 + 60 + 200);
    assert_eq!(outcome.usage.output_tokens, 10 + 4 + 6 + 20);

    // Each child is its own session, linked to the parent's call.
    let children = rig.store.sessions().children(parent.id()).await.unwrap();
    assert_eq!(children.len(), 2, "{children:?}");
    let mut calls: Vec<&str> = children.iter().map(|c| c.parent_call_id.as_str()).collect();
    calls.sort();
    assert_eq!(calls, ["call_a", "call_b"]);
    for child in &children {
        let link = rig.store.sessions().parent(&child.id).await.unwrap().unwrap();
        assert_eq!(link.session_id, parent.id().as_str());
        let history = rig.agent.history(&child.id).await.unwrap();
        assert_eq!(history.len(), 2, "the child's own context: its task and its answer");
        assert!(history[1].text().starts_with("child answer"), "{:?}", history[1]);
    }

    // The parent's model saw both answers, each with the child's session id.
    let last = rig.fake.requests().last().unwrap().body.clone();
    let results: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(results.len(), 2);
    let mut answers: Vec<&str> = results.iter().map(|r| r.lines().next().unwrap()).collect();
    answers.sort();
    assert_eq!(answers, ["child answer one", "child answer two"]);
    for (result, child) in results.iter().zip(&children) {
        assert!(
            results.iter().any(|r| r.contains(&format!("tackle sessions show {}", child.id))),
            "{result}"
        );
    }

    // Own masks: the `reader` child may call only read_file (and the agent's own bookkeeping
    // tools); the general-purpose child has no mask.
    let a = rig.request_of("task A");
    let reader_tools = allowed(&a).expect("the reader child's request restricts its tools");
    assert!(reader_tools.contains(&"read_file".to_owned()), "{reader_tools:?}");
    for absent in ["shell", "write_file", "agent"] {
        assert!(!reader_tools.iter().any(|t| t == absent), "{absent} in {reader_tools:?}");
    }
    let b = rig.request_of("task B");
    assert_eq!(allowed(&b), None, "the general-purpose child has every tool");
    // Its instructions follow the parent's system prompt, which both share.
    let system_a = a["messages"][0]["content"].as_str().unwrap();
    let system_b = b["messages"][0]["content"].as_str().unwrap();
    assert!(system_a.starts_with(system_b) && system_a.ends_with("You only read. Report what you found."));

    // Both children ran at the same time: each started before the other finished.
    let events = rig.child_events();
    let position = |child: &str, kind: &str| {
        events
            .iter()
            .position(|(id, e)| id == child && e["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind}"))
    };
    let (x, y) = (children[0].id.as_str(), children[1].id.as_str());
    assert!(
        position(x, "session_started") < position(y, "turn_finished")
            && position(y, "session_started") < position(x, "turn_finished"),
        "the children ran one after the other: {events:?}"
    );

    // Same catalog bytes and the parent's cache key: the child's first request reads the
    // parent's cache entry; its prefix ratio against the parent's request is measured.
    let parent_first = &rig.fake.requests()[0].body;
    assert_eq!(a["tools"], parent_first["tools"]);
    assert_eq!(b["tools"], parent_first["tools"]);
    assert_eq!(a["prompt_cache_key"], json!(parent.id().as_str()));
    for child in [x, y] {
        let ratio = events
            .iter()
            .find(|(id, e)| id == child && e["type"] == "step_finished")
            .and_then(|(_, e)| e["metrics"]["prefix_ratio"].as_f64())
            .expect("the child's first step measured against the parent's request");
        assert!(ratio >= 0.9, "prefix ratio {ratio}");
    }
    assert!(
        !events.iter().any(|(_, e)| e["type"] == "warning" && e["code"] == "cache_break"),
        "a child's first request is no cache break"
    );
}

#[tokio::test]
async fn a_childs_destructive_call_is_approved_on_the_parents_channel() {
    let script = Script::new(vec![
        Turn::call("agent", r#"{"prompt": "write the report"}"#),
        Turn::call("write_file", r#"{"path": "report.txt", "content": "all good"}"#),
        Turn::text("report written"),
        Turn::text("the sub-agent wrote it"),
    ]);
    let queue = ApprovalQueue::default();
    let rig = Rig::new(script, |b| b.approver(queue.clone())).await;
    let mut parent = rig.session().await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let events = rig.events.clone();
    // The parent's front end: it sees approval requests in the parent's events and answers them.
    let sink = EventSink::new(move |e| {
        if let AgentEvent::ApprovalRequested { approval_id, tool, .. } = &e {
            tx.send((approval_id.clone(), tool.clone())).unwrap();
        }
        events.lock().unwrap().push(e);
    });
    let answer = {
        let queue = queue.clone();
        tokio::spawn(async move {
            let (id, tool) = rx.recv().await.unwrap();
            assert_eq!(tool, "write_file");
            queue.resolve(&id, true, None).unwrap();
        })
    };
    // A guard, not a wait: the turn ends as soon as the approval is answered.
    let outcome = tokio::time::timeout(
        GUARD,
        parent.run_turn(TurnInput::new("delegate"), &sink, &CancellationToken::new()),
    )
    .await
    .expect("the child's approval never reached the parent's front end")
    .unwrap();
    answer.await.unwrap();
    assert_eq!(outcome.text, "the sub-agent wrote it");
    assert_eq!(std::fs::read_to_string(rig.workspace.path().join("report.txt")).unwrap(), "all good");
    let children = rig.store.sessions().children(parent.id()).await.unwrap();
    assert_eq!(children.len(), 1);
    // The approval resolved on the parent's stream too.
    assert!(
        rig.events
            .lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, AgentEvent::ApprovalResolved { approved: true, .. }))
    );
}

/// Arguments of `hold`.
#[derive(Deserialize, JsonSchema)]
struct HoldArgs {}

/// A tool that says it started, then waits for its cancellation and records it.
struct Hold {
    started: Arc<tokio::sync::Notify>,
    cancelled: Arc<AtomicBool>,
}

#[async_trait]
impl TypedTool for Hold {
    type Args = HoldArgs;
    fn name(&self) -> &str {
        "hold"
    }
    fn description(&self) -> String {
        "Wait until cancelled.".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn run(&self, _: HoldArgs, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        self.started.notify_one();
        ctx.cancel.cancelled().await;
        self.cancelled.store(true, Ordering::SeqCst);
        Err(ToolFailure::from_message("cancelled"))
    }
}

#[tokio::test]
async fn cancelling_the_parent_stops_its_children() {
    let script = Script::new(vec![Turn::call("agent", r#"{"prompt": "wait"}"#), Turn::call("hold", "{}")]);
    let started = Arc::new(tokio::sync::Notify::new());
    let cancelled = Arc::new(AtomicBool::new(false));
    let hold = Hold { started: started.clone(), cancelled: cancelled.clone() };
    let rig = Rig::new(script, |b| b.tool(hold)).await;
    let mut parent = rig.session().await;
    let cancel = CancellationToken::new();
    let stopper = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            started.notified().await;
            cancel.cancel();
        })
    };
    let outcome = tokio::time::timeout(GUARD, parent.run_turn(TurnInput::new("go"), &rig.sink(), &cancel))
        .await
        .expect("the parent's cancel never reached the child")
        .unwrap();
    stopper.await.unwrap();
    assert_eq!(outcome.end, TurnEnd::Cancelled, "{outcome:?}");
    assert!(cancelled.load(Ordering::SeqCst), "the child's running call saw the cancel");
    let finished: Vec<Value> = rig
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Custom { name, data } if name == "subagent_finished" => Some(data.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["end"], "cancelled");
    assert_eq!(rig.fake.requests().len(), 2, "nothing was asked of the model after the cancel");
}

#[tokio::test]
async fn the_depth_limit_takes_the_agent_tool_from_the_deepest_children() {
    let script = Script::new(vec![
        Turn::call("agent", r#"{"prompt": "child task"}"#),
        Turn::call("agent", r#"{"prompt": "grandchild task"}"#),
        Turn::text("did it myself"),
        Turn::text("done"),
    ]);
    let rig = Rig::new(script, |b| b.sub_agent_depth(1)).await;
    let mut parent = rig.session().await;
    let outcome =
        parent.run_turn(TurnInput::new("go"), &rig.sink(), &CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.text, "done");
    // The child at the limit is offered every tool but `agent`.
    let child_request = rig.request_of("child task");
    let tools = allowed(&child_request).expect("the child's request masks agent");
    assert!(!tools.iter().any(|t| t == "agent") && tools.iter().any(|t| t == "shell"), "{tools:?}");
    // Its call was refused with an envelope, and no grandchild exists.
    let requests = rig.fake.requests();
    let refused = requests[2].body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let envelope: Value = serde_json::from_str(&refused).unwrap();
    assert_eq!(envelope["tool"], "agent", "{envelope}");
    assert!(envelope["error"].is_string() || envelope["message"].is_string(), "{envelope}");
    let children = rig.store.sessions().children(parent.id()).await.unwrap();
    assert_eq!(children.len(), 1);
    assert!(rig.store.sessions().children(&children[0].id).await.unwrap().is_empty());
    assert!(!requests.iter().any(|r| r.body.to_string().contains("\"content\":\"grandchild task\"")
        && r.body["messages"].as_array().unwrap().len() == 2));
}

#[tokio::test]
async fn without_sub_agents_or_at_depth_zero_there_is_no_agent_tool() {
    let rig = Rig::new(Script::new(vec![]), |b| b.sub_agent_depth(0)).await;
    assert!(!rig.agent.tool_specs().iter().any(|t| t.name == "agent"));
    let rig = Rig::new(Script::new(vec![]), |b| b).await;
    let spec = rig.agent.tool_specs().into_iter().find(|t| t.name == "agent").unwrap();
    assert!(spec.description.contains("reader: Reads files and reports."), "{}", spec.description);
}

#[tokio::test]
async fn a_sub_agent_naming_an_unknown_tool_is_refused_when_building() {
    let fake = FakeModel::start(Script::new(vec![])).await.unwrap();
    let mut agents = SubAgentRegistry::new();
    agents.insert(SubAgent::new("x", "X.").tools(["Read"]).source("ws/agents/x.md")).unwrap();
    let err = Agent::builder(common::provider(ProviderKind::Openai, &fake))
        .model("m")
        .in_memory()
        .sub_agents(agents)
        .build()
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("ws/agents/x.md") && text.contains("tools") && text.contains("\"Read\""), "{text}");
}

/// The `(step, code)` of each warning among a child's events (the step that was running).
fn child_warnings(events: &[(String, Value)], child: &str) -> Vec<(u64, String)> {
    let mut step = 0;
    let mut warnings = Vec::new();
    for (_, e) in events.iter().filter(|(id, _)| id == child) {
        match e["type"].as_str() {
            Some("step_started") => step = e["step"].as_u64().unwrap(),
            Some("warning") => warnings.push((step, e["code"].as_str().unwrap().to_owned())),
            _ => {}
        }
    }
    warnings
}

#[tokio::test]
async fn a_childs_first_request_is_no_cache_break_but_a_later_break_in_it_is() {
    // Anthropic caches `tool_choice` before the messages: the last step's `none` changes the
    // prefix, a real break, which the child's second (last) step shows.
    let script = Script::new(vec![
        Turn::call("agent", r#"{"prompt": "look around"}"#),
        Turn::call("list_files", r#"{"path": "."}"#),
        Turn::text("the child looked"),
        Turn::text("done"),
    ]);
    let rig = Rig::speaking(ProviderKind::Anthropic, script, |b| b.max_steps(2)).await;
    let mut parent = rig.session().await;
    let outcome =
        parent.run_turn(TurnInput::new("delegate"), &rig.sink(), &CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.text, "done", "{outcome:?}");
    let events = rig.child_events();
    let child = rig.store.sessions().children(parent.id()).await.unwrap().remove(0).id;
    let steps: Vec<&Value> = events
        .iter()
        .filter(|(id, e)| id == &child && e["type"] == "step_finished")
        .map(|(_, e)| e)
        .collect();
    assert_eq!(steps.len(), 2, "{events:?}");
    // The first request is measured against the parent's, shares its prefix, and is no break.
    let first = &steps[0]["metrics"];
    assert!(first["prefix_ratio"].as_f64().unwrap() >= 0.9, "{first}");
    assert_eq!(first.get("cache_break"), None, "{first}");
    // The second is measured against the child's own first, and its changed tool choice breaks.
    assert_eq!(steps[1]["metrics"]["cache_break"], "tool_choice.type", "{}", steps[1]);
    let breaks: Vec<u64> = child_warnings(&events, &child)
        .into_iter()
        .filter(|(_, code)| code == "cache_break")
        .map(|(step, _)| step)
        .collect();
    assert_eq!(breaks, [2], "one cache-break warning, on the child's second step");
}

#[tokio::test]
async fn a_sub_agents_model_is_the_model_of_its_requests_only() {
    let script = Script::new(vec![
        Turn::call("agent", r#"{"prompt": "quick question", "agent": "cheap"}"#),
        Turn::text("quick answer"),
        Turn::text("done"),
    ]);
    let rig = Rig::new(script, |b| b).await;
    let mut parent = rig.session().await;
    let outcome =
        parent.run_turn(TurnInput::new("ask cheaply"), &rig.sink(), &CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.text, "done", "{outcome:?}");
    let child = rig.request_of("quick question");
    assert_eq!(child["model"], "model-small");
    let parents: Vec<Value> = rig
        .fake
        .requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| b["messages"].as_array().unwrap().iter().any(|m| m["content"] == "ask cheaply"))
        .collect();
    assert_eq!(parents.len(), 2);
    for body in &parents {
        assert_eq!(body["model"], "model-x");
    }
    // The child's session records the model it ran on.
    let children = rig.store.sessions().children(parent.id()).await.unwrap();
    assert_eq!(children[0].model, "model-small");
    assert_eq!(parent.record().model, "model-x");
}

#[tokio::test]
async fn a_reopened_child_at_the_depth_limit_still_cannot_nest() {
    let script = Script::new(vec![
        Turn::call("agent", r#"{"prompt": "child task"}"#),
        Turn::text("child done"),
        Turn::text("parent done"),
        // The child reopened: its depth comes from its stored link, so `agent` is refused.
        Turn::call("agent", r#"{"prompt": "grandchild task"}"#),
        Turn::text("did it myself"),
    ]);
    let rig = Rig::new(script, |b| b.sub_agent_depth(1)).await;
    let mut parent = rig.session().await;
    let outcome =
        parent.run_turn(TurnInput::new("go"), &rig.sink(), &CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.text, "parent done");
    let child_id = rig.store.sessions().children(parent.id()).await.unwrap().remove(0).id;
    assert_eq!(rig.store.sessions().depth(&child_id).await.unwrap(), 1);

    // Opened again from the store (as another process, or a later request, would).
    drop(parent);
    let mut child = rig.agent.open_session(&child_id).await.unwrap();
    let outcome =
        child.run_turn(TurnInput::new("go deeper"), &rig.sink(), &CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.text, "did it myself", "{outcome:?}");
    let requests = rig.fake.requests();
    let refused = requests.last().unwrap().body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let envelope: Value = serde_json::from_str(&refused).unwrap();
    assert_eq!(envelope["tool"], "agent", "{envelope}");
    assert!(envelope.to_string().contains("at depth 1"), "{envelope}");
    assert!(rig.store.sessions().children(&child_id).await.unwrap().is_empty(), "no grandchild");
}

/// Nobody watches a child whose parent nobody watches: with the parent's sink discarding, the
/// child's requests ask for whole answers too; watched, both stream (with `Streaming::Auto`).
#[tokio::test]
async fn a_child_of_an_unwatched_turn_asks_for_whole_answers() {
    for discard in [true, false] {
        let script = Script::new(vec![
            Turn::call("agent", r#"{"prompt": "quick question", "agent": "cheap"}"#),
            Turn::text("quick answer"),
            Turn::text("done"),
        ]);
        let rig = Rig::new(script, |b| b.streaming(tackle_agent::Streaming::Auto)).await;
        let mut parent = rig.session().await;
        let sink = if discard { EventSink::discard() } else { rig.sink() };
        let outcome = parent.run_turn(TurnInput::new("ask"), &sink, &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.text, "done", "{outcome:?}");
        assert_eq!(rig.request_of("quick question")["stream"], json!(!discard));
        let flags: Vec<Value> = rig.fake.requests().iter().map(|r| r.body["stream"].clone()).collect();
        assert_eq!(flags, vec![json!(!discard); 3]);
    }
}

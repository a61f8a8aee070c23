//! Codex as the model of Tackle's agent, with the real `codex app-server` against the
//! testkit's fake Responses server: Tackle's tools run through Tackle's executor, sessions
//! resume their thread, a killed Codex process loses no result and runs no call twice, a
//! changed tool set starts a new thread.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tackle_agent::{Agent, NewSessionOptions, TurnInput};
use tackle_codex::{CodexProvider, CodexServer};
use tackle_protocol::{AgentEvent, ToolSpec, TurnEnd};
use tackle_store::Store;
use tackle_testkit::{FakeModel, RecordedRequest, Script, Turn};
use tackle_tools::{AutoApprove, EventSink, Tool, ToolContext, ToolFailure, ToolOutput};
use tokio_util::sync::CancellationToken;

struct Setup {
    fake: FakeModel,
    home: tempfile::TempDir,
    workspace: tempfile::TempDir,
    db: tempfile::TempDir,
    binary: std::path::PathBuf,
}

impl Setup {
    async fn new(script: Script) -> Option<Self> {
        let binary = common::codex_binary()?;
        let fake = FakeModel::start(script).await.unwrap();
        let home = tempfile::tempdir().unwrap();
        common::codex_home(home.path(), &fake.base_url());
        Some(Self {
            fake,
            home,
            workspace: tempfile::tempdir().unwrap(),
            db: tempfile::tempdir().unwrap(),
            binary,
        })
    }

    /// A new session in the workspace.
    async fn session(&self, agent: &Agent) -> tackle_agent::Session {
        let options = NewSessionOptions { workspace: self.workspace.path().to_owned(), ..Default::default() };
        agent.create_session(options).await.unwrap()
    }

    /// An agent over a fresh provider (a new Codex process: what a Tackle restart sees).
    async fn agent(&self, extra: Vec<Arc<dyn Tool>>) -> (Agent, Arc<CodexProvider>) {
        let server = CodexServer::new(common::config(&self.binary, self.home.path()));
        let provider = Arc::new(CodexProvider::new(server, Some(self.workspace.path().to_owned())));
        let store = Store::open(&self.db.path().join("tackle.db")).await.unwrap();
        let shared: Arc<dyn tackle_provider::Provider> = provider.clone();
        let agent = Agent::builder(shared)
            .model("mock-model")
            .store(store)
            .workspace(self.workspace.path())
            .tools(extra)
            .skills(false)
            .approver(AutoApprove)
            .build()
            .await
            .unwrap();
        (agent, provider)
    }
}

fn recorder() -> (EventSink, Arc<Mutex<Vec<AgentEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let e = events.clone();
    (EventSink::new(move |ev| e.lock().unwrap().push(ev)), events)
}

fn outputs(request: &RecordedRequest) -> Vec<(String, String)> {
    request.body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| {
            let out = match &i["output"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (i["call_id"].as_str().unwrap().to_owned(), out)
        })
        .collect()
}

fn tool_names(request: &RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

async fn run(
    session: &mut tackle_agent::Session,
    prompt: &str,
) -> (tackle_agent::TurnOutcome, Vec<AgentEvent>) {
    let (sink, events) = recorder();
    let outcome = tokio::time::timeout(
        Duration::from_secs(120),
        session.run_turn(TurnInput::new(prompt), &sink, &CancellationToken::new()),
    )
    .await
    .expect("the turn hung")
    .unwrap();
    let events = events.lock().unwrap().clone();
    (outcome, events)
}

#[tokio::test]
async fn a_multi_step_task_runs_tackles_tools_and_the_session_resumes_its_thread() {
    let script = Script::new(vec![
        Turn::default().with_call_id(
            "call-w",
            "write_file",
            r#"{"path":"notes.txt","content":"hello codex\n"}"#,
        ),
        Turn::default().with_call_id("call-r", "read_file", r#"{"path":"notes.txt"}"#).with_call_id(
            "call-l",
            "list_files",
            r#"{"path":"."}"#,
        ),
        Turn::text("notes.txt says hello codex."),
        Turn::text("Still there."),
    ]);
    let Some(setup) = Setup::new(script).await else {
        return common::missing_peer("codex (npm @openai/codex)");
    };
    let (agent, provider) = setup.agent(Vec::new()).await;
    let mut session = setup.session(&agent).await;
    let (outcome, events) = run(&mut session, "write notes.txt, then read it back").await;
    assert_eq!(outcome.end, TurnEnd::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.text, "notes.txt says hello codex.");
    assert_eq!(outcome.steps, 3);
    assert_eq!(std::fs::read_to_string(setup.workspace.path().join("notes.txt")).unwrap(), "hello codex\n");

    // Tackle's executor ran the calls (its events), and the model saw their results.
    let mut results: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    // read_file and list_files are read-only: they ran concurrently, in any order.
    results[1..].sort_unstable();
    assert_eq!(results, ["call-w", "call-l", "call-r"]);
    let requests = setup.fake.requests();
    assert_eq!(requests.len(), 3);
    for name in ["write_file", "read_file", "list_files", "shell", "edit_file"] {
        assert!(tool_names(&requests[0]).iter().any(|n| n == name), "dynamic tool {name} reached the model");
    }
    let second = outputs(&requests[1]);
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].0, "call-w");
    let third = outputs(&requests[2]);
    assert!(third.iter().any(|(id, out)| id == "call-r" && out.contains("hello codex")), "{third:?}");
    assert!(third.iter().any(|(id, out)| id == "call-l" && out.contains("notes.txt")), "{third:?}");
    let thread = provider.thread_of(session.id()).await.unwrap();
    assert_eq!(requests[0].body["prompt_cache_key"], thread.as_str());
    let usage = events.iter().find_map(|e| match e {
        AgentEvent::TurnFinished { usage, .. } => Some(*usage),
        _ => None,
    });
    assert!(usage.is_some());

    // A new Tackle process (new provider, new Codex process) opens the stored session: the
    // thread id comes from the stored history and the thread is resumed, not restarted.
    drop(session);
    drop(agent);
    provider.server().shutdown().await;
    let (agent, provider) = setup.agent(Vec::new()).await;
    let mut session = agent.open_session(&outcome.session_id).await.unwrap();
    let (again, _) = run(&mut session, "is it still there?").await;
    assert_eq!(again.text, "Still there.");
    assert_eq!(provider.thread_of(session.id()).await.as_ref(), Some(&thread), "the same Codex thread");
    let requests = setup.fake.requests();
    let last = requests.last().unwrap();
    assert_eq!(last.body["prompt_cache_key"], thread.as_str());
    let text = last.body["input"].to_string();
    assert!(text.contains("write notes.txt, then read it back") && text.contains("is it still there?"));
    assert_eq!(outputs(last).len(), 3, "the thread kept its history: {:?}", outputs(last));
}

/// Counts its runs and kills the Codex process it was given, once (a crash while a call is out).
struct KillCodex {
    runs: Arc<AtomicUsize>,
    pid: Arc<Mutex<Option<u32>>>,
}

#[async_trait]
impl Tool for KillCodex {
    fn spec(&self) -> &ToolSpec {
        static SPEC: std::sync::OnceLock<ToolSpec> = std::sync::OnceLock::new();
        SPEC.get_or_init(|| ToolSpec::new("tick", "Count once.", json!({"type": "object", "properties": {}})))
    }

    async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        let n = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(pid) = self.pid.lock().unwrap().take() {
            let status = std::process::Command::new("kill").arg("-9").arg(pid.to_string()).status().unwrap();
            assert!(status.success());
        }
        Ok(ToolOutput::text(format!("ticked {n} time(s)")))
    }
}

#[tokio::test]
async fn a_killed_codex_process_loses_no_result_and_runs_no_call_twice() {
    // The model calls `tick`; the call kills Codex while its request is open. After the
    // restart the model reuses the very same call id (a new call, by the session's rule that
    // every call the model makes runs once), then answers.
    let script = Script::new(vec![
        Turn::default().with_call_id("call-1", "tick", "{}"),
        Turn::default().with_call_id("call-1", "tick", "{}"),
        Turn::text("Ticked."),
    ]);
    let Some(setup) = Setup::new(script).await else {
        return common::missing_peer("codex (npm @openai/codex)");
    };
    let runs = Arc::new(AtomicUsize::new(0));
    let pid = Arc::new(Mutex::new(None));
    let tool = Arc::new(KillCodex { runs: runs.clone(), pid: pid.clone() });
    let (agent, provider) = setup.agent(vec![tool]).await;
    let mut session = setup.session(&agent).await;
    // Start the process first so the tool knows whom to kill.
    provider.server().request("account/read", json!({})).await.unwrap();
    let first_pid = provider.server().pid().await.unwrap();
    *pid.lock().unwrap() = Some(first_pid);

    let (outcome, events) = run(&mut session, "tick once").await;
    assert_eq!(outcome.end, TurnEnd::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.text, "Ticked.");
    let second_pid = provider.server().pid().await.unwrap();
    assert_ne!(first_pid, second_pid, "a new Codex process took over");
    // Two model calls, two runs: the crash and the resume ran nothing again.
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let ran: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ran, ["call-1", "call-1_2"], "the reused id ran under a fresh one");

    let requests = setup.fake.requests();
    assert_eq!(requests.len(), 3, "{:#?}", requests.iter().map(|r| &r.body["input"]).collect::<Vec<_>>());
    // After the restart the model got the result the dead process never received.
    assert_eq!(outputs(&requests[1]), [("call-1".to_owned(), "ticked 1 time(s)".to_owned())]);
    assert_eq!(requests[0].body["prompt_cache_key"], requests[2].body["prompt_cache_key"], "the same thread");
    // The open request of the reused id got the new call's result, without waiting for the
    // release timeout.
    assert_eq!(
        outputs(&requests[2]),
        [
            ("call-1".to_owned(), "ticked 1 time(s)".to_owned()),
            ("call-1".to_owned(), "ticked 2 time(s)".to_owned())
        ]
    );
    let retries = events.iter().filter(|e| matches!(e, AgentEvent::Retry { .. })).count();
    // Noticed before the next call, or by that call's failure and one retry of the step.
    assert!(retries <= 1, "{retries} retries");
}

#[tokio::test]
async fn a_changed_tool_set_starts_a_new_thread_seeded_with_the_conversation() {
    let script = Script::new(vec![Turn::text("First answer."), Turn::text("Second answer.")]);
    let Some(setup) = Setup::new(script).await else {
        return common::missing_peer("codex (npm @openai/codex)");
    };
    let (agent, provider) = setup.agent(Vec::new()).await;
    let mut session = setup.session(&agent).await;
    let (first, _) = run(&mut session, "first question").await;
    assert_eq!(first.text, "First answer.");
    let first_thread = provider.thread_of(session.id()).await.unwrap();
    drop(session);

    // The same session opened by an agent with one more tool: the catalog changed.
    let extra: Arc<dyn Tool> =
        Arc::new(KillCodex { runs: Arc::new(AtomicUsize::new(0)), pid: Arc::new(Mutex::new(None)) });
    let (agent, provider) = setup.agent(vec![extra]).await;
    let mut session = agent.open_session(&first.session_id).await.unwrap();
    let (second, events) = run(&mut session, "second question").await;
    assert_eq!(second.text, "Second answer.");
    let changed = events.iter().find_map(|e| match e {
        AgentEvent::CatalogChanged { added, cache_break, .. } => Some((added.clone(), *cache_break)),
        _ => None,
    });
    assert_eq!(changed, Some((vec!["tick".to_owned()], true)), "the agent says so");
    let second_thread = provider.thread_of(session.id()).await.unwrap();
    assert_ne!(first_thread, second_thread, "a new thread for the new tools");
    let requests = setup.fake.requests();
    let last = requests.last().unwrap();
    assert!(tool_names(last).contains(&"tick".to_owned()));
    assert_eq!(last.body["prompt_cache_key"], second_thread.as_str());
    let input = last.body["input"].to_string();
    assert!(input.contains("first question") && input.contains("First answer."), "seeded: {input}");
}

#[tokio::test]
async fn codex_dying_mid_turn_is_retried_on_a_new_process_that_resumes_the_thread() {
    // The first model request hangs; Codex is killed while it waits. The agent retries the
    // step once; the provider starts a new process, resumes the thread and goes on. (The fake
    // picks a request's turn when it answers: the retried request, answered at once, gets the
    // first turn.)
    let script = Script::new(vec![Turn::text("Recovered."), Turn::text("never delivered")]);
    let Some(setup) = Setup::new(script).await else {
        return common::missing_peer("codex (npm @openai/codex)");
    };
    setup.fake.push_fault(tackle_testkit::Fault::Latency { ms: 30_000 });
    let (agent, provider) = setup.agent(Vec::new()).await;
    let mut session = setup.session(&agent).await;
    let turn = tokio::spawn(async move {
        let outcome = run(&mut session, "hello?").await;
        (outcome, session)
    });
    for _ in 0..600 {
        if !setup.fake.requests().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(setup.fake.requests().len(), 1, "Codex sent the first model request");
    let first_pid = provider.server().pid().await.unwrap();
    let status = std::process::Command::new("kill").arg("-9").arg(first_pid.to_string()).status().unwrap();
    assert!(status.success());

    let ((outcome, events), session) = turn.await.unwrap();
    assert_eq!(outcome.end, TurnEnd::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.text, "Recovered.");
    let retries: Vec<&AgentEvent> = events.iter().filter(|e| matches!(e, AgentEvent::Retry { .. })).collect();
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert_ne!(provider.server().pid().await, Some(first_pid));
    let requests = setup.fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["prompt_cache_key"], requests[1].body["prompt_cache_key"], "the same thread");
    let user_turns = requests[1].body["input"].to_string().matches("hello?").count();
    assert_eq!(user_turns, 1, "the prompt reached the resumed thread once");
    drop(session);
}

/// A backend stream that carries each item only whole (`response.output_item.done`, no `added`,
/// no deltas): Codex sends the answer only as a completed `agentMessage`, and it is the answer.
#[tokio::test]
async fn an_answer_sent_only_as_a_completed_item_is_not_lost() {
    let script = Script { whole_items: true, ..Script::new(vec![Turn::text("All done, no deltas.")]) };
    let Some(setup) = Setup::new(script).await else {
        return common::missing_peer("codex (npm @openai/codex)");
    };
    let (agent, _provider) = setup.agent(Vec::new()).await;
    let mut session = setup.session(&agent).await;
    let (outcome, events) = run(&mut session, "anything").await;
    assert_eq!(outcome.end, TurnEnd::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.text, "All done, no deltas.");
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "All done, no deltas.", "shown as it came");
}

/// Codex's model backend is down, with Codex's default arguments (it reconnects forever): the
/// turn fails once Codex has retried as often as `backend_retries` allows, in seconds, with an
/// error that says the backend cannot be reached, instead of waiting out the idle limit.
#[tokio::test]
async fn a_backend_that_is_down_fails_the_turn_after_the_allowed_retries() {
    let Some(binary) = common::codex_binary() else {
        return common::missing_peer("codex (npm @openai/codex)");
    };
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let home = tempfile::tempdir().unwrap();
    common::codex_home(home.path(), &format!("http://127.0.0.1:{port}"));
    let workspace = tempfile::tempdir().unwrap();
    let config = tackle_codex::CodexConfig {
        args: vec!["app-server".into()],
        idle_timeout_secs: 600,
        backend_retries: Some(1),
        ..common::config(&binary, home.path())
    };
    let provider: Arc<dyn tackle_provider::Provider> =
        Arc::new(CodexProvider::new(CodexServer::new(config), Some(workspace.path().to_owned())));
    let agent = Agent::builder(provider)
        .model("mock-model")
        .store(Store::open(&workspace.path().join("tackle.db")).await.unwrap())
        .workspace(workspace.path())
        .skills(false)
        .approver(AutoApprove)
        .build()
        .await
        .unwrap();
    let options = NewSessionOptions { workspace: workspace.path().to_owned(), ..Default::default() };
    let mut session = agent.create_session(options).await.unwrap();
    let started = std::time::Instant::now();
    let (sink, _) = recorder();
    let outcome = tokio::time::timeout(
        Duration::from_secs(90),
        session.run_turn(TurnInput::new("hi"), &sink, &CancellationToken::new()),
    )
    .await
    .expect("the turn waited on a backend that is down");
    let error = match outcome {
        Ok(o) => {
            assert_eq!(o.end, TurnEnd::Failed, "{o:?}");
            o.error.map(|e| e.to_string()).unwrap_or_default()
        }
        Err(e) => e.to_string(),
    };
    assert!(error.contains("Codex cannot reach its model backend"), "{error}");
    assert!(error.contains("after 1 retries"), "{error}");
    eprintln!("failed after {:?}: {error}", started.elapsed());
}

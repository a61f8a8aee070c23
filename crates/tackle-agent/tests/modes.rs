//! Permission modes against the scripted fake model: plan mode refuses every tool that writes
//! and executes after the user approves the plan (or revises it when they refine it),
//! accept-edits runs file edits without asking but not the shell, bypass needs a sandbox.

use crate::common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tackle_agent::{Agent, AgentBuilder, AgentError, BuildError, NewSessionOptions, Session, TurnInput};
use tackle_protocol::{AgentEvent, TurnEnd};
use tackle_provider::ProviderKind;
use tackle_store::Store;
use tackle_testkit::{FakeModel, Script, Turn};
use tackle_tools::{ApprovalDecision, ApprovalRequest, Approver, EventSink, PermissionMode};
use tokio_util::sync::CancellationToken;

/// Answers approvals from a list, recording what it was asked.
#[derive(Default)]
struct Scripted {
    answers: Mutex<VecDeque<ApprovalDecision>>,
    asked: Mutex<Vec<ApprovalRequest>>,
}

#[async_trait]
impl Approver for Scripted {
    async fn decide(&self, request: ApprovalRequest) -> ApprovalDecision {
        self.asked.lock().unwrap().push(request);
        self.answers.lock().unwrap().pop_front().unwrap_or_else(|| ApprovalDecision::deny("no answer left"))
    }
}

struct Rig {
    fake: FakeModel,
    agent: Agent,
    workspace: tempfile::TempDir,
    _db: tempfile::TempDir,
    approver: Arc<Scripted>,
    events: Arc<Mutex<Vec<AgentEvent>>>,
}

impl Rig {
    async fn new(
        script: Script,
        answers: Vec<ApprovalDecision>,
        builder: impl FnOnce(AgentBuilder) -> AgentBuilder,
    ) -> Self {
        let workspace = tempfile::tempdir().unwrap();
        let db = tempfile::tempdir().unwrap();
        let store = Store::open(&db.path().join("tackle.db")).await.unwrap();
        let fake = FakeModel::start(script).await.unwrap();
        let approver = Arc::new(Scripted { answers: Mutex::new(answers.into()), asked: Mutex::default() });
        let b = Agent::builder(common::provider(ProviderKind::Openai, &fake))
            .model("model-x")
            .store(store)
            .workspace(workspace.path())
            .plan_mode(true)
            .shared_approver(approver.clone());
        let agent = builder(b).build().await.unwrap();
        Self { fake, agent, workspace, _db: db, approver, events: Arc::default() }
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

    async fn turn(&self, session: &mut Session, prompt: &str) -> tackle_agent::TurnOutcome {
        session.run_turn(TurnInput::new(prompt), &self.sink(), &CancellationToken::new()).await.unwrap()
    }

    /// The tool results the model saw in its `n`th request.
    fn results(&self, n: usize) -> Vec<String> {
        self.fake.requests()[n].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// The tools offered (`allowed_tools` of the tool choice) in the `n`th request, if restricted.
    fn allowed(&self, n: usize) -> Option<Vec<String>> {
        let choice = &self.fake.requests()[n].body["tool_choice"];
        choice["allowed_tools"]["tools"].as_array().map(|tools| {
            tools.iter().map(|t| t["function"]["name"].as_str().unwrap_or_default().to_owned()).collect()
        })
    }
}

const PLAN: &str = r#"{"plan": "1. Write notes.md with the summary\n2. Run `wc -l notes.md`"}"#;

#[tokio::test]
async fn plan_mode_refuses_every_writing_tool_and_executes_after_approval() {
    let script = Script::new(vec![
        Turn::call("write_file", r#"{"path": "notes.md", "content": "x"}"#)
            .with_call("shell", r#"{"command": "touch shell.txt"}"#)
            .with_call("edit_file", r#"{"path": "seed.txt", "old_string": "a", "new_string": "b"}"#),
        Turn::call("read_file", r#"{"path": "seed.txt"}"#),
        Turn::call("propose_plan", PLAN),
        Turn::call("write_file", r#"{"path": "notes.md", "content": "summary\n"}"#),
        Turn::text("Done as planned."),
    ]);
    let rig = Rig::new(script, vec![ApprovalDecision::approve(), ApprovalDecision::approve()], |b| b).await;
    std::fs::write(rig.workspace.path().join("seed.txt"), "a\n").unwrap();
    let mut session = rig.session().await;
    session.set_mode(PermissionMode::Plan).await.unwrap();
    let outcome = rig.turn(&mut session, "summarize seed.txt into notes.md").await;
    assert_eq!(outcome.end, TurnEnd::Completed, "{outcome:?}");
    // Step 1: every writing call was refused, nothing was written.
    let refused = rig.results(1);
    assert_eq!(refused.len(), 3);
    for r in &refused {
        assert!(r.contains("\"category\":\"denied\"") && r.contains("plan mode"), "{r}");
    }
    // The plan-mode steps offered only the tools that run in plan mode.
    let offered = rig.allowed(0).expect("plan mode restricts the step's tools");
    assert!(
        offered.contains(&"read_file".to_owned()) && offered.contains(&"propose_plan".to_owned()),
        "{offered:?}"
    );
    assert!(!offered.iter().any(|t| t == "write_file" || t == "shell" || t == "edit_file"), "{offered:?}");
    // Reading worked; the plan was asked about, with its text, and approved.
    let read = rig.results(2).pop().unwrap();
    assert!(!read.contains("denied") && read.contains('a'), "read_file ran: {read}");
    let asked = rig.approver.asked.lock().unwrap().clone();
    assert_eq!(asked[0].tool, "propose_plan");
    assert!(asked[0].args["plan"].as_str().unwrap().contains("Write notes.md"));
    assert!(rig.results(3).last().unwrap().contains("approved the plan"));
    // After the approval the same turn carried the plan out, in default mode.
    assert_eq!(rig.allowed(3), None, "every tool is offered again");
    assert_eq!(std::fs::read_to_string(rig.workspace.path().join("notes.md")).unwrap(), "summary\n");
    assert!(!rig.workspace.path().join("shell.txt").exists());
    assert_eq!(std::fs::read_to_string(rig.workspace.path().join("seed.txt")).unwrap(), "a\n");
    assert_eq!(session.mode(), PermissionMode::Default);
    let reopened = rig.agent.open_session(session.id()).await.unwrap();
    assert_eq!(reopened.mode(), PermissionMode::Default, "the switch is stored");
    assert!(rig.events.lock().unwrap().iter().any(
        |e| matches!(e, AgentEvent::ModeChanged { mode, reason } if mode == "default" && reason == "plan_approved")
    ));
}

/// Plan mode knows no tool by name: a user's own tool that reads, or that changes only the
/// session, says so in its annotations and runs there like the builtins that do; one that
/// says neither is refused.
#[tokio::test]
async fn a_users_own_tools_run_in_plan_mode_by_what_they_declare() {
    use tackle_protocol::ToolAnnotations;
    /// No arguments.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}
    let script = Script::new(vec![
        Turn::call("lookup", "{}").with_call("note_to_self", "{}").with_call("deploy", "{}"),
        Turn::text("planned"),
    ]);
    let rig = Rig::new(script, vec![], |b| {
        let tool =
            |name: &'static str, annotations| {
                tackle_tools::tool_fn(name, "A user's tool.", move |_: NoArgs| async move {
                    format!("{name} ran")
                })
                .annotations(annotations)
            };
        b.tool(tool("lookup", ToolAnnotations::read_only()))
            .tool(tool("note_to_self", ToolAnnotations::session_only()))
            .tool(tool("deploy", ToolAnnotations::default()))
    })
    .await;
    let mut session = rig.session().await;
    session.set_mode(PermissionMode::Plan).await.unwrap();
    let outcome = rig.turn(&mut session, "plan the release").await;
    assert_eq!(outcome.end, TurnEnd::Completed, "{outcome:?}");
    let offered = rig.allowed(0).expect("plan mode restricts the step's tools");
    for name in ["lookup", "note_to_self", "todo", "compact_context"] {
        assert!(offered.iter().any(|t| t == name), "{name} is offered in plan mode: {offered:?}");
    }
    assert!(!offered.iter().any(|t| t == "deploy"), "{offered:?}");
    let results = rig.results(1);
    assert_eq!(results[..2], ["lookup ran", "note_to_self ran"], "{results:?}");
    assert!(
        results[2].contains("\"category\":\"denied\"") && results[2].contains("plan mode"),
        "{results:?}"
    );
}

#[tokio::test]
async fn refining_a_plan_keeps_plan_mode_and_tells_the_model_what_to_change() {
    let script = Script::new(vec![
        Turn::call("propose_plan", PLAN),
        Turn::call("write_file", r#"{"path": "notes.md", "content": "x"}"#),
        Turn::call("propose_plan", r#"{"plan": "1. Write notes.md in a temporary directory"}"#),
        Turn::text("Waiting for your approval."),
    ]);
    let rig = Rig::new(script, vec![ApprovalDecision::deny("write it under tmp/ instead")], |b| b).await;
    let mut session = rig.session().await;
    session.set_mode(PermissionMode::Plan).await.unwrap();
    rig.turn(&mut session, "summarize").await;
    let first = rig.results(1).pop().unwrap();
    assert!(
        first.contains("did not approve the plan") && first.contains("write it under tmp/ instead"),
        "{first}"
    );
    let write = rig.results(2).pop().unwrap();
    assert!(write.contains("plan mode"), "still plan mode after a refinement: {write}");
    assert!(!rig.workspace.path().join("notes.md").exists());
    assert_eq!(session.mode(), PermissionMode::Plan);
}

#[tokio::test]
async fn accept_edits_runs_file_edits_without_asking_but_not_the_shell() {
    let script = Script::new(vec![
        Turn::call("write_file", r#"{"path": "a.txt", "content": "one\n"}"#)
            .with_call("edit_file", r#"{"path": "a.txt", "old_string": "one", "new_string": "two"}"#)
            .with_call("shell", r#"{"command": "touch shell.txt"}"#),
        Turn::text("done"),
    ]);
    // Nobody approves anything: whatever asks is refused.
    let rig = Rig::new(script, vec![], |b| b).await;
    let mut session = rig.session().await;
    session.set_mode(PermissionMode::AcceptEdits).await.unwrap();
    rig.turn(&mut session, "edit").await;
    assert_eq!(std::fs::read_to_string(rig.workspace.path().join("a.txt")).unwrap(), "two\n");
    assert!(!rig.workspace.path().join("shell.txt").exists(), "the shell still asks");
    let asked: Vec<String> = rig.approver.asked.lock().unwrap().iter().map(|r| r.tool.clone()).collect();
    assert_eq!(asked, ["shell"]);
    // In default mode the same edits ask.
    let script = Script::new(vec![
        Turn::call("write_file", r#"{"path": "b.txt", "content": "x"}"#),
        Turn::text("done"),
    ]);
    let rig = Rig::new(script, vec![], |b| b).await;
    let mut session = rig.session().await;
    rig.turn(&mut session, "edit").await;
    assert!(!rig.workspace.path().join("b.txt").exists());
    assert_eq!(rig.approver.asked.lock().unwrap()[0].tool, "write_file");
}

#[tokio::test]
async fn bypass_is_refused_without_an_enforced_sandbox_and_plan_without_plan_mode() {
    let rig = Rig::new(Script::new(vec![]), vec![], |b| b).await;
    let mut session = rig.session().await;
    let err = session.set_mode(PermissionMode::Bypass).await.unwrap_err();
    assert!(matches!(err, AgentError::Mode(_)) && err.to_string().contains("sandbox"), "{err}");
    assert_eq!(session.mode(), PermissionMode::Default);
    assert!(rig.agent.set_session_mode(session.id(), PermissionMode::Bypass).await.is_err());
    let fake = FakeModel::start(Script::new(vec![])).await.unwrap();
    let err = Agent::builder(common::provider(ProviderKind::Openai, &fake))
        .model("m")
        .in_memory()
        .permission_mode(PermissionMode::Bypass)
        .build()
        .await
        .unwrap_err();
    assert!(matches!(err, BuildError::Mode(tackle_agent::ModeUnavailable::BypassNeedsSandbox)), "{err}");
    assert!(err.to_string().contains("tackle sandbox check"), "the error says what to do: {err}");
    let plain = Agent::builder(common::provider(ProviderKind::Openai, &fake))
        .model("m")
        .in_memory()
        .build()
        .await
        .unwrap();
    let mut s = plain.create_session(NewSessionOptions::default()).await.unwrap();
    assert!(s.set_mode(PermissionMode::Plan).await.unwrap_err().to_string().contains("plan mode is off"));
    assert!(
        !plain.tool_specs().iter().any(|t| t.name == "propose_plan"),
        "no plan tool unless plan mode is on"
    );
    assert_eq!(plain.modes(), [PermissionMode::Default, PermissionMode::AcceptEdits]);
}

//! [`TackleMcp`] against an rmcp client in the same process (over an in-memory pipe) and the
//! scripted fake model: `notifications/cancelled` stops the turn it names, and a call that needs
//! confirmation is asked of the client through elicitation (declined: the call is refused with
//! Tackle's error envelope and nothing runs; accepted: it runs); `output_schema` gives a typed
//! answer whose structured content matches the declared `outputSchema`, and a bad one is refused
//! before any session exists.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, ProgressNotificationParam,
    ProtocolVersion,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tackle_agent::Agent;
use tackle_mcp_server::{ClientApprovals, McpServeOptions, TackleMcp};
use tackle_provider::{OpenAiChat, OpenAiDialect, ProviderConfig, ProviderKind};
use tackle_store::Store;
use tackle_testkit::{FakeModel, Fault, Script, Turn};
use tokio::sync::mpsc;

/// A client that declares elicitation, answers every form with `answer`, and reports what it was
/// asked and the progress it got.
#[derive(Clone)]
struct TestClient {
    answer: ElicitationAction,
    asked: Arc<Mutex<Vec<String>>>,
    progress: mpsc::UnboundedSender<String>,
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("tackle-test", "1.0.0"),
        );
        // Elicitation requests from servers exist up to 2025-11-25.
        config.protocol_version = ProtocolVersion::V_2025_11_25;
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let message = match request {
            ElicitRequestParams::FormElicitationParams { message, .. } => message,
            ElicitRequestParams::UrlElicitationParams { message, .. } => message,
            _ => String::new(),
        };
        self.asked.lock().unwrap().push(message);
        let content = (self.answer == ElicitationAction::Accept).then(|| json!({"approve": true}));
        let mut result = ElicitResult::new(self.answer.clone());
        result.content = content;
        Ok(result)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params.message.unwrap_or_default());
    }
}

struct Rig {
    fake: FakeModel,
    workspace: tempfile::TempDir,
    _db: tempfile::TempDir,
    store: Store,
    client: RunningService<RoleClient, TestClient>,
    asked: Arc<Mutex<Vec<String>>>,
    progress: mpsc::UnboundedReceiver<String>,
}

impl Rig {
    async fn new(script: Script, answer: ElicitationAction) -> Self {
        let fake = FakeModel::start(script).await.unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let db = tempfile::tempdir().unwrap();
        let store = Store::open(&db.path().join("tackle.db")).await.unwrap();
        let config = ProviderConfig::new(ProviderKind::Openai)
            .with_base_url(format!("{}/v1", fake.base_url()))
            .with_api_key("sk-test");
        let provider = Arc::new(OpenAiChat::with_dialect(config, OpenAiDialect::OpenAi).unwrap());
        let approvals = ClientApprovals::default();
        let agent = Agent::builder(provider as Arc<dyn tackle_provider::Provider>)
            .model("gpt-test")
            .store(store.clone())
            .workspace(workspace.path())
            .shared_approver(Arc::new(approvals.clone()))
            .build()
            .await
            .unwrap();
        let server = TackleMcp::new(agent, approvals, McpServeOptions::default());
        let (server_io, client_io) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        let asked = Arc::new(Mutex::new(Vec::new()));
        let (tx, progress) = mpsc::unbounded_channel();
        let handler = TestClient { answer, asked: asked.clone(), progress: tx };
        let client = handler.serve(client_io).await.unwrap();
        Self { fake, workspace, _db: db, store, client, asked, progress }
    }

    async fn call(&self, name: &'static str, args: Value) -> CallToolResult {
        let Value::Object(args) = args else { unreachable!() };
        self.client.call_tool(CallToolRequestParams::new(name).with_arguments(args)).await.unwrap()
    }

    /// The tool results the model saw in its `n`th request.
    fn tool_results(&self, n: usize) -> Vec<String> {
        self.fake.requests()[n].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

fn text(result: &CallToolResult) -> Vec<String> {
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect()
}

const WRITE: &str = r#"{"path": "out.txt", "content": "written\n"}"#;

#[tokio::test]
async fn a_declined_elicitation_refuses_the_call_with_the_error_envelope() {
    let script = Script::new(vec![Turn::call("write_file", WRITE), Turn::text("I could not write it.")]);
    let rig = Rig::new(script, ElicitationAction::Decline).await;
    let result = rig.call("tackle", json!({"prompt": "write out.txt"})).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(text(&result)[0], "I could not write it.");
    let asked = rig.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "the client was asked once: {asked:?}");
    assert!(asked[0].contains("`write_file`") && asked[0].contains("out.txt"), "{asked:?}");
    let results = rig.tool_results(1);
    let envelope: Value = serde_json::from_str(&results[0]).expect("an error envelope");
    assert_eq!(envelope["tool"], "write_file");
    assert_eq!(envelope["category"], "denied");
    assert!(envelope["message"].as_str().unwrap().contains("declined it in the MCP client"), "{envelope}");
    assert!(!rig.workspace.path().join("out.txt").exists(), "a declined call never runs");
}

#[tokio::test]
async fn an_accepted_elicitation_runs_the_call() {
    let script = Script::new(vec![Turn::call("write_file", WRITE), Turn::text("Written.")]);
    let rig = Rig::new(script, ElicitationAction::Accept).await;
    let result = rig.call("tackle", json!({"prompt": "write out.txt"})).await;
    assert_eq!(text(&result)[0], "Written.");
    assert_eq!(rig.asked.lock().unwrap().len(), 1);
    assert_eq!(std::fs::read_to_string(rig.workspace.path().join("out.txt")).unwrap(), "written\n");
}

#[tokio::test]
async fn notifications_cancelled_stops_the_turn() {
    // The first model request would take a minute to answer; the reply's is immediate. (The
    // fake picks its answer when it sends it, so both are the same.)
    let script = Script::new(vec![Turn::text("After the cancel."), Turn::text("After the cancel.")]);
    let mut rig = Rig::new(script, ElicitationAction::Decline).await;
    rig.fake.push_fault(Fault::Latency { ms: 60_000 });
    let Value::Object(args) = json!({"prompt": "a long task"}) else { unreachable!() };
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("tackle").with_arguments(args),
    ));
    let handle =
        rig.client.send_cancellable_request(request, PeerRequestOptions::no_options()).await.unwrap();
    // The turn started its first step (progress says so) and the model has the request, which
    // it holds for a minute: cancel the call.
    let first = tokio::time::timeout(Duration::from_secs(30), rig.progress.recv()).await.unwrap().unwrap();
    assert_eq!(first, "step 1 of at most 25");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while rig.fake.requests().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "the model never got the request");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    handle.cancel(Some("the user changed their mind".into())).await.unwrap();
    // The session is free again only once its turn ended: the reply runs (a turn still waiting
    // on the model would refuse it as running) and sees the cancelled turn's prompt.
    let sessions = sessions(&rig).await;
    assert_eq!(sessions.len(), 1);
    let reply = tokio::time::timeout(
        Duration::from_secs(30),
        rig.call("tackle_reply", json!({"session_id": sessions[0], "prompt": "go on"})),
    )
    .await
    .expect("the cancelled turn let go of its session");
    assert_eq!(reply.is_error, Some(false), "{reply:?}");
    assert_eq!(text(&reply)[0], "After the cancel.");
    let requests = rig.fake.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].body["messages"].to_string().contains("a long task"));
}

/// The ids of the sessions the server created, from the store it writes.
async fn sessions(rig: &Rig) -> Vec<String> {
    let list = rig.store.sessions().list(tackle_store::SessionFilter::default()).await.unwrap();
    list.into_iter().map(|s| s.id.to_string()).collect()
}

fn report_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"files": {"type": "integer"}, "summary": {"type": "string"}},
        "required": ["files", "summary"],
        "additionalProperties": false
    })
}

#[tokio::test]
async fn output_schema_gives_a_typed_answer_that_matches_the_declared_output_schema() {
    let script = Script::new(vec![
        Turn::text(r#"{"files": 1, "summary": "one file"}"#),
        // The reply's answer is invalid twice: repaired once, then the turn fails.
        Turn::text(r#"{"files": "one"}"#),
        Turn::text(r#"{"files": 2}"#),
    ]);
    let rig = Rig::new(script, ElicitationAction::Decline).await;
    let tools = rig.client.list_tools(None).await.unwrap();
    let declared = |name: &str| {
        let tool = tools.tools.iter().find(|t| t.name == name).unwrap();
        jsonschema::validator_for(&Value::Object(tool.output_schema.as_deref().unwrap().clone())).unwrap()
    };

    let result =
        rig.call("tackle", json!({"prompt": "count the files", "output_schema": report_schema()})).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let sent = result.structured_content.clone().unwrap();
    assert_eq!(sent["output"], json!({"files": 1, "summary": "one file"}));
    assert_eq!(text(&result)[0], r#"{"files":1,"summary":"one file"}"#, "the text is the JSON");
    assert!(declared("tackle").is_valid(&sent), "{sent}");
    // Asked natively (Chat Completions `response_format`), named `output`.
    assert_eq!(
        rig.fake.requests()[0].body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "output", "schema": report_schema(), "strict": true}})
    );

    let session = sent["session_id"].as_str().unwrap();
    let reply = rig
        .call(
            "tackle_reply",
            json!({"session_id": session, "prompt": "again", "output_schema": report_schema()}),
        )
        .await;
    assert_eq!(reply.is_error, Some(true), "{reply:?}");
    let sent = reply.structured_content.clone().unwrap();
    assert_eq!(sent["error"]["code"], "output_invalid", "{sent}");
    assert_eq!(sent["end"], "failed");
    assert!(sent.get("output").is_none());
    assert!(text(&reply)[0].contains("output_invalid"), "{reply:?}");
    assert!(declared("tackle_reply").is_valid(&sent), "{sent}");
    assert_eq!(rig.fake.requests().len(), 3, "one repair round");
    // A bad schema on a reply is refused before the turn: no model call.
    let bad =
        rig.call("tackle_reply", json!({"session_id": session, "prompt": "again", "output_schema": 7})).await;
    assert_eq!(bad.is_error, Some(true), "{bad:?}");
    assert!(text(&bad)[0].contains("invalid `output_schema`"), "{bad:?}");
    assert_eq!(rig.fake.requests().len(), 3);
}

#[tokio::test]
async fn a_bad_output_schema_is_a_tool_error_before_any_session() {
    let rig = Rig::new(Script::new(vec![Turn::text("never")]), ElicitationAction::Decline).await;
    for bad in [json!({"type": "objekt"}), json!("type: object"), json!(["object"])] {
        let result = rig.call("tackle", json!({"prompt": "count the files", "output_schema": bad})).await;
        assert_eq!(result.is_error, Some(true), "{bad}: {result:?}");
        let message = &text(&result)[0];
        assert!(message.contains("invalid `output_schema`") && message.contains("JSON Schema"), "{message}");
        assert!(result.structured_content.is_none());
    }
    assert!(sessions(&rig).await.is_empty(), "no session was created");
    assert!(rig.fake.requests().is_empty(), "no model call");
}

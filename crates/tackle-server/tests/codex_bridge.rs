//! Bridge mode of `/v1/chat/completions` and `/v1/responses`: models `codex/<model>` run on the
//! real `codex app-server` (npm `@openai/codex`, pinned) against the testkit's fake Responses
//! server, driven by the official `openai` Python SDK (both installed by scripts/test-deps.sh).

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;

use axum::http::{Method, StatusCode};
use common::{ALICE, BOB, Harness, tokens};
use serde_json::{Value, json};
use tackle_codex::{CodexBridge, CodexConfig, CodexServer};
use tackle_testkit::{RecordedRequest, Script, Turn};

/// Seconds a tool call may wait for the client before it is released.
const TOOL_CALL_TIMEOUT: u64 = 3;

fn venv_python() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join("target/test-deps/venv/bin/python");
    python.is_file().then_some(python)
}

fn missing_peer(what: &str) {
    tackle_testkit::peers::missing(what, "not found where scripts/test-deps.sh installs it");
}

/// A server with tokens whose bridge runs the pinned Codex against the harness's fake.
async fn harness(script: Script, codex_home: &tempfile::TempDir) -> Option<Harness> {
    let binary = tackle_testkit::codex::binary()?;
    let h = Harness::with(script, tokens()).await;
    tackle_testkit::codex::write_home(codex_home.path(), &h.fake.base_url()).unwrap();
    let config = CodexConfig {
        command: binary.display().to_string(),
        args: tackle_testkit::codex::APP_SERVER_ARGS.map(str::to_owned).to_vec(),
        home: Some(codex_home.path().to_owned()),
        tool_call_timeout_secs: TOOL_CALL_TIMEOUT,
        models: vec!["mock-model".into()],
        ..CodexConfig::default()
    };
    let bridge = CodexBridge::new(CodexServer::new(config), Some(h.workspace.path().to_owned()));
    let Harness { fake, state, store, workspace, db } = h;
    let state = state.with_codex_bridge(Arc::new(bridge));
    Some(Harness { fake, state, store, workspace, db })
}

fn tool_names(r: &RecordedRequest) -> Vec<String> {
    r.body["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
}

fn outputs(r: &RecordedRequest) -> Vec<(String, Value)> {
    r.body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| (i["call_id"].as_str().unwrap().to_owned(), i["output"].clone()))
        .collect()
}

#[tokio::test]
async fn the_official_openai_python_sdk_drives_codex_through_the_bridge() {
    let Some(python) = venv_python() else { return missing_peer("the openai Python SDK") };
    let usage = |i, c| tackle_protocol::Usage {
        input_tokens: i,
        output_tokens: 5,
        cache_read_tokens: c,
        ..tackle_protocol::Usage::default()
    };
    let script = Script::new(vec![
        // 1. JSON, two rounds, then a follow-up on the same thread.
        Turn::default().with_call_id("call_w1", "get_weather", r#"{"city":"Oslo"}"#),
        Turn::text("It rains in Oslo.").with_usage(usage(300, 200)),
        Turn::text("Tomorrow too."),
        // 2. Streaming, two rounds.
        Turn::default().with_call_id("call_w2", "get_weather", r#"{"city":"Bergen"}"#),
        Turn::text("Bergen is sunny."),
        // 3. tool_choice none.
        Turn::text("Hi."),
        // 4. Forced get_time.
        Turn::default().with_call_id("call_t1", "get_time", "{}"),
        Turn::text("It is noon."),
        // 5. Two parallel calls.
        Turn::default()
            .with_call_id("call_p1", "get_weather", r#"{"city":"Oslo"}"#)
            .with_call_id("call_p2", "get_time", "{}"),
        Turn::text("Rain at noon."),
        // 7. A call the client answers too late.
        Turn::default().with_call_id("call_l1", "get_weather", r#"{"city":"Late"}"#),
    ]);
    let codex_home = tempfile::tempdir().unwrap();
    let Some(h) = harness(script, &codex_home).await else {
        return missing_peer("codex (npm @openai/codex)");
    };
    let base = h.listen().await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/codex_bridge.py");
    let late_wait = (TOOL_CALL_TIMEOUT + 2).to_string();
    let out = tokio::process::Command::new(python)
        .arg(script)
        .arg(&base)
        .arg(ALICE)
        .arg(late_wait)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the SDK script failed:\n{stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();

    assert!(seen["models"].as_array().unwrap().contains(&json!("codex/mock-model")), "{seen}");
    assert!(seen["models"].as_array().unwrap().contains(&json!("codex/default")));
    assert_eq!(
        seen["json_call"],
        json!({"id": "call_w1", "name": "get_weather", "arguments": {"city": "Oslo"}, "finish": "tool_calls"})
    );
    assert_eq!(
        seen["json_answer"],
        json!({"text": "It rains in Oslo.", "finish": "stop", "prompt_tokens": 300, "cached": 200})
    );
    assert_eq!(seen["json_follow_up"], "Tomorrow too.");
    assert_eq!(
        seen["stream_call"],
        json!({"finish": "tool_calls", "calls": [{"name": "get_weather", "arguments": {"city": "Bergen"}}]})
    );
    assert_eq!(seen["stream_answer"]["text"], "Bergen is sunny.");
    assert_eq!(seen["stream_answer"]["finish"], "stop");
    assert!(seen["stream_answer"]["usage"].is_u64(), "{seen}");
    assert_eq!(seen["none"], json!({"text": "Hi.", "finish": "stop"}));
    assert_eq!(seen["forced_call"], "get_time");
    assert_eq!(seen["forced_answer"], "It is noon.");
    assert_eq!(seen["parallel_calls"], json!(["get_weather", "get_time"]));
    assert_eq!(seen["parallel_answer"], "Rain at noon.");
    assert_eq!(
        seen["unknown_id"],
        json!({"type": "BadRequestError", "status": 400, "param": "messages[2].tool_call_id", "code": "unknown_tool_call"})
    );
    assert_eq!(seen["late"], json!({"type": "ConflictError", "status": 409, "code": "tool_call_expired"}));

    // What Codex sent the model.
    let r = h.fake.requests();
    assert!(r.len() >= 11, "{} model requests", r.len());
    assert_eq!(tool_names(&r[0]).iter().filter(|n| n.starts_with("get_")).count(), 2, "the client's tools");
    assert!(r[0].body["input"].to_string().contains("You answer weather questions."), "the system message");
    assert_eq!(outputs(&r[1]), [("call_w1".to_owned(), json!("rain, 8 C"))]);
    assert_eq!(
        r[2].body["prompt_cache_key"], r[0].body["prompt_cache_key"],
        "the follow-up continued the thread"
    );
    assert_ne!(
        r[3].body["prompt_cache_key"], r[0].body["prompt_cache_key"],
        "another conversation, another thread"
    );
    assert!(
        tool_names(&r[5]).iter().all(|n| !n.starts_with("get_")),
        "tool_choice none: {:?}",
        tool_names(&r[5])
    );
    let forced = tool_names(&r[6]);
    assert!(
        forced.contains(&"get_time".to_owned()) && !forced.contains(&"get_weather".to_owned()),
        "{forced:?}"
    );
    let mut parallel = outputs(&r[9]);
    parallel.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(parallel, [("call_p1".to_owned(), json!("rain")), ("call_p2".to_owned(), json!("noon"))]);
}

/// A Codex model on /v1/responses: the SDK's tool loop, continued by `previous_response_id`,
/// whole and streamed.
#[tokio::test]
async fn the_openai_python_sdk_runs_codex_models_on_the_responses_api() {
    let Some(python) = venv_python() else { return missing_peer("the openai Python SDK") };
    let script = Script::new(vec![
        Turn::default().with_call_id("call_r1", "get_weather", r#"{"city":"Oslo"}"#),
        Turn::text("It rains in Oslo."),
        Turn::default().with_call_id("call_r2", "get_weather", r#"{"city":"Bergen"}"#),
        Turn::text("Bergen is sunny."),
    ]);
    let codex_home = tempfile::tempdir().unwrap();
    let Some(h) = harness(script, &codex_home).await else {
        return missing_peer("codex (npm @openai/codex)");
    };
    let base = h.listen().await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/codex_responses.py");
    let out = tokio::process::Command::new(python).arg(script).arg(&base).arg(ALICE).output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the SDK script failed:\n{stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        seen["json_call"],
        json!({"name": "get_weather", "arguments": {"city": "Oslo"}, "status": "completed", "model": "codex/mock-model"})
    );
    assert_eq!(seen["json_answer"], json!({"text": "It rains in Oslo.", "status": "completed"}));
    assert_eq!(
        seen["stream_call"],
        json!({"name": "get_weather", "arguments": {"city": "Bergen"}, "completed": true})
    );
    assert_eq!(seen["stream_answer"], "Bergen is sunny.");
    let r = h.fake.requests();
    assert!(r[0].body["input"].to_string().contains("You answer weather questions."), "the instructions");
    assert_eq!(outputs(&r[1]), [("call_r1".to_owned(), json!("rain, 8 C"))]);
    assert_eq!(outputs(&r[3]), [("call_r2".to_owned(), json!("sun"))]);
}

/// Without a bridge, a Codex model on either OpenAI route says how to serve it (not that the
/// operator should list it in `[server] models`).
#[tokio::test]
async fn a_codex_model_without_the_bridge_says_how_to_serve_it() {
    let h = Harness::with(Script::new(vec![]), tokens()).await;
    for (path, body) in [
        ("/v1/responses", json!({"model": "codex/default", "input": "hi"})),
        (
            "/v1/chat/completions",
            json!({"model": "codex/default", "messages": [{"role": "user", "content": "hi"}]}),
        ),
    ] {
        let (status, body) = h.call(Method::POST, path, Some(ALICE), Some(body)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert_eq!(body["error"]["code"], "model_not_found", "{path}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("--provider codex") && !message.contains("[server] models"), "{message}");
    }
}

#[tokio::test]
async fn tool_results_are_matched_by_user_and_conversation() {
    let script = Script::new(vec![
        Turn::default().with_call_id("call_a", "get_weather", r#"{"city":"Oslo"}"#),
        Turn::text("Rain."),
    ]);
    let codex_home = tempfile::tempdir().unwrap();
    let Some(h) = harness(script, &codex_home).await else {
        return missing_peer("codex (npm @openai/codex)");
    };
    let tools =
        json!([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]);
    let ask = json!({"model": "codex/mock-model", "tools": tools, "messages": [{"role": "user", "content": "Weather?"}]});
    let (status, body) = h.call(Method::POST, "/v1/chat/completions", Some(ALICE), Some(ask)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    let call = body["choices"][0]["message"]["tool_calls"][0].clone();
    let answer = |user_text: &str| {
        json!({"model": "codex/mock-model", "tools": tools, "messages": [
            {"role": "user", "content": user_text},
            {"role": "assistant", "content": null, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_a", "content": "rain"}]})
    };
    // Another user cannot answer Alice's call: to Bob it does not exist.
    let (status, body) =
        h.call(Method::POST, "/v1/chat/completions", Some(BOB), Some(answer("Weather?"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "unknown_tool_call");
    assert_eq!(body["error"]["param"], "messages[2].tool_call_id");
    // Alice with an edited history: not the conversation the call came from.
    let (status, body) =
        h.call(Method::POST, "/v1/chat/completions", Some(ALICE), Some(answer("Edited?"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "conversation_mismatch");
    // The real answer goes through, once.
    let (status, body) =
        h.call(Method::POST, "/v1/chat/completions", Some(ALICE), Some(answer("Weather?"))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "Rain.");
    let (status, body) =
        h.call(Method::POST, "/v1/chat/completions", Some(ALICE), Some(answer("Weather?"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "an answered call is no longer open: {body}");
}

#[tokio::test]
async fn codex_models_are_refused_when_the_bridge_is_off() {
    let h = Harness::with(Script::new(vec![]), tokens()).await;
    let ask = json!({"model": "codex/gpt-5", "messages": [{"role": "user", "content": "hi"}]});
    let (status, body) = h.call(Method::POST, "/v1/chat/completions", Some(ALICE), Some(ask)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], "model_not_found");
    let (_, models) = h.call(Method::GET, "/v1/models", Some(ALICE), None).await;
    assert!(!models.to_string().contains("codex/"), "{models}");
}

/// `tackle serve --provider codex`: the sessions API runs Tackle's agent on Codex. Codex's own
/// shell (builtin tools on) asks for approval, which goes to the server's approval queue like
/// any confirmation of Tackle's hook policy; Tackle's own tools run in Tackle's executor.
#[tokio::test]
async fn the_sessions_api_runs_on_codex_and_codex_approvals_use_the_approval_routes() {
    use tackle_agent::Agent;
    use tackle_codex::{ApprovalsFactory, CodexApprovals, CodexProvider, HookApprovals};
    use tackle_server::{AppState, ServerConfig};
    use tackle_tools::{ApprovalMode, ApprovalQueue, HookPolicy};

    let Some(binary) = tackle_testkit::codex::binary() else {
        return missing_peer("codex (npm @openai/codex)");
    };
    let fake = tackle_testkit::FakeModel::start(Script::new(vec![
        Turn::default().with_call_id("call-x", "exec_command", r#"{"cmd":"touch made_by_codex"}"#),
        Turn::default().with_call_id("call-l", "list_files", r#"{"path":"."}"#),
        Turn::text("Codex made made_by_codex."),
    ]))
    .await
    .unwrap();
    let codex_home = tempfile::tempdir().unwrap();
    tackle_testkit::codex::write_home(codex_home.path(), &fake.base_url()).unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    let store = tackle_store::Store::open(&db.path().join("tackle.db")).await.unwrap();
    let queue = ApprovalQueue::default();
    let config = CodexConfig {
        command: binary.display().to_string(),
        args: tackle_testkit::codex::APP_SERVER_ARGS.map(str::to_owned).to_vec(),
        home: Some(codex_home.path().to_owned()),
        builtin_tools: true,
        ..CodexConfig::default()
    };
    let approver = queue.clone();
    let factory: ApprovalsFactory = Arc::new(move |session: &str| {
        let policy = HookPolicy::defaults(ApprovalMode::Server);
        Arc::new(HookApprovals::new(policy, Arc::new(approver.clone()), session)) as Arc<dyn CodexApprovals>
    });
    let server = CodexServer::new(config);
    let provider = CodexProvider::new(server, Some(workspace.path().to_owned())).with_approvals(factory);
    let agent = Agent::builder(provider)
        .model("mock-model")
        .store(store)
        .workspace(workspace.path())
        .skills(false)
        .hooks(Vec::new(), ApprovalMode::Server)
        .approver(queue.clone())
        .build()
        .await
        .unwrap();
    let state = AppState::new(agent, queue.clone(), ServerConfig::new(workspace.path().to_owned()));
    let app = tackle_server::router(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let http = reqwest::Client::new();

    let session: Value =
        http.post(format!("{base}/v1/sessions")).json(&json!({})).send().await.unwrap().json().await.unwrap();
    let id = session["id"].as_str().unwrap().to_owned();
    let turn = {
        let (http, base, id) = (http.clone(), base.clone(), id.clone());
        tokio::spawn(async move {
            let body = json!({"message": "make a file", "stream": false});
            let r = http.post(format!("{base}/v1/sessions/{id}/messages")).json(&body).send().await.unwrap();
            (r.status(), r.json::<Value>().await.unwrap())
        })
    };
    // Codex's command waits for a decision in the session's approval queue.
    let mut pending = Value::Null;
    for _ in 0..600 {
        let listed: Value = http
            .get(format!("{base}/v1/sessions/{id}/approvals"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        pending = listed["approvals"].clone();
        if pending.as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let approval = &pending[0];
    assert_eq!(approval["tool"], "codex_exec", "{pending}");
    assert!(approval["args"]["command"].as_str().unwrap().contains("touch made_by_codex"), "{pending}");
    assert!(!workspace.path().join("made_by_codex").exists(), "nothing runs before the decision");
    let approval_id = approval["id"].as_str().unwrap();
    let decided = http
        .post(format!("{base}/v1/approvals/{approval_id}"))
        .json(&json!({"approve": true}))
        .send()
        .await
        .unwrap();
    assert!(decided.status().is_success());

    let (status, result) =
        tokio::time::timeout(std::time::Duration::from_secs(120), turn).await.unwrap().unwrap();
    assert_eq!(status, StatusCode::OK, "{result}");
    assert_eq!(result["end"], "completed", "{result}");
    assert_eq!(result["text"], "Codex made made_by_codex.");
    assert!(workspace.path().join("made_by_codex").exists(), "Codex ran its approved command");
    let tool_results: Vec<&str> = result["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(tool_results, ["call-l"], "Tackle's executor ran Tackle's tool; Codex ran its own");
    let requests = fake.requests();
    assert!(requests[2].body["input"].to_string().contains("made_by_codex"), "list_files saw the new file");
}

//! Batching, answering, releasing and turn endings, against a scripted in-memory peer.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};

use super::*;
use crate::connection::read_peer;
use crate::server::ThreadOptions;
use crate::wire::DynamicToolSpec;
use crate::{CodexConfig, DenyNativeTools};

struct Peer<R, W> {
    from_client: R,
    to_client: W,
}

impl<R: AsyncBufRead + Unpin, W: AsyncWrite + Unpin> Peer<R, W> {
    async fn recv(&mut self) -> Value {
        tokio::time::timeout(Duration::from_secs(5), read_peer(&mut self.from_client))
            .await
            .expect("client sent nothing")
    }

    async fn send(&mut self, v: Value) {
        self.to_client.write_all(format!("{v}\n").as_bytes()).await.unwrap();
        self.to_client.flush().await.unwrap();
    }

    /// Reads the next request of the client, checks its method, answers `result`.
    async fn answer(&mut self, method: &str, result: Value) -> Value {
        let request = self.recv().await;
        assert_eq!(request["method"], method, "{request}");
        self.send(json!({"id": request["id"], "result": result})).await;
        request
    }
}

fn options(tools: &[&str]) -> ThreadOptions {
    ThreadOptions {
        model: None,
        cwd: None,
        instructions: None,
        tools: tools
            .iter()
            .map(|n| DynamicToolSpec::Function {
                name: (*n).into(),
                description: "d".into(),
                input_schema: json!({"type": "object"}),
            })
            .collect(),
        ephemeral: true,
        approvals: Arc::new(DenyNativeTools),
    }
}

async fn setup(
    config: CodexConfig,
    tools: &[&str],
) -> (CodexThread, Peer<impl AsyncBufRead + Unpin, impl AsyncWrite + Unpin>) {
    let (server, from_client, to_client) = CodexServer::in_memory(config).await;
    let mut peer = Peer { from_client, to_client };
    let opts = options(tools);
    let starting = tokio::spawn(async move { server.start_thread(opts).await });
    let request =
        peer.answer("thread/start", json!({"thread": {"id": "th", "turns": []}, "model": "m"})).await;
    assert_eq!(request["params"]["experimentalRawEvents"], true);
    let mut thread = starting.await.unwrap().unwrap();
    let turn = tokio::spawn(async move {
        thread.start_turn(vec![UserInput::text("go")]).await.unwrap();
        thread
    });
    peer.answer("turn/start", json!({"turn": {"id": "tu", "items": [], "status": "inProgress"}})).await;
    (turn.await.unwrap(), peer)
}

fn raw_call(call: &str, name: &str, args: &str) -> Value {
    json!({"method": "rawResponseItem/completed", "params": {"threadId": "th", "turnId": "tu",
        "item": {"type": "function_call", "call_id": call, "name": name, "arguments": args}}})
}

fn call_request(id: i64, call: &str, name: &str) -> Value {
    json!({"id": id, "method": "item/tool/call", "params": {"threadId": "th", "turnId": "tu", "callId": call,
        "namespace": null, "tool": name, "arguments": {}}})
}

fn raw_done() -> Value {
    json!({"method": "rawResponse/completed", "params": {"threadId": "th", "turnId": "tu", "responseId": "r",
        "usage": {"inputTokens": 100, "cachedInputTokens": 60, "outputTokens": 7, "reasoningOutputTokens": 0, "totalTokens": 107}}})
}

#[tokio::test]
async fn calls_of_one_response_come_out_as_one_batch_even_when_one_is_late() {
    let (mut thread, mut peer) = setup(CodexConfig::default(), &["a", "b"]).await;
    peer.send(raw_call("c1", "a", "{}")).await;
    peer.send(call_request(0, "c1", "a")).await;
    peer.send(raw_call("c2", "b", "{\"x\":1}")).await;
    // A call of a tool that is not dynamic, and one with arguments Codex cannot parse: Codex
    // answers those itself, no request comes.
    peer.send(raw_call("c3", "view_image", "{}")).await;
    peer.send(raw_call("c4", "a", "not json")).await;
    peer.send(raw_done()).await;
    // The second request comes after the response completed.
    let late = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peer.send(call_request(1, "c2", "b")).await;
        peer
    });
    assert_eq!(
        thread.next_event().await.unwrap(),
        TurnEvent::Usage(Usage {
            input_tokens: 100,
            output_tokens: 7,
            cache_read_tokens: 60,
            cache_write_tokens: 0,
            reasoning_tokens: 0
        })
    );
    let TurnEvent::ToolCalls(calls) = thread.next_event().await.unwrap() else { panic!("no batch") };
    let ids: Vec<&str> = calls.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2"]);
    let mut peer = late.await.unwrap();

    assert_eq!(
        thread.answer(&"c2".into(), DynamicToolCallResponse::text("two", true)).unwrap(),
        Answer::Delivered
    );
    assert_eq!(
        peer.recv().await,
        json!({"id": 1, "result": {"contentItems": [{"type": "inputText", "text": "two"}], "success": true}})
    );
    assert_eq!(
        thread.answer(&"c1".into(), DynamicToolCallResponse::text("one", false)).unwrap(),
        Answer::Delivered
    );
    assert_eq!(peer.recv().await["result"]["success"], false);
    assert_eq!(
        thread.answer(&"c1".into(), DynamicToolCallResponse::text("again", true)).unwrap(),
        Answer::Duplicate
    );
    assert_eq!(
        thread.answer(&"nope".into(), DynamicToolCallResponse::text("?", true)).unwrap(),
        Answer::Unknown
    );

    peer.send(json!({"method": "item/agentMessage/delta", "params": {"threadId": "th", "turnId": "tu", "itemId": "m", "delta": "done"}})).await;
    peer.send(json!({"method": "turn/completed", "params": {"threadId": "th", "turn": {"id": "tu", "items": [], "status": "completed"}}})).await;
    assert_eq!(thread.next_event().await.unwrap(), TurnEvent::TextDelta("done".into()));
    assert_eq!(thread.next_event().await.unwrap(), TurnEvent::Ended(TurnEnd::Completed));
    assert!(!thread.turn_active());
}

/// A backend stream without `response.output_item.added` makes Codex send an answer only as a
/// completed `agentMessage` item: its text counts, and only the part no delta streamed.
#[tokio::test]
async fn a_completed_message_supplies_the_text_its_deltas_did_not() {
    let (mut thread, mut peer) = setup(CodexConfig::default(), &["a"]).await;
    let delta = |item: &str, text: &str| json!({"method": "item/agentMessage/delta", "params": {"threadId": "th", "turnId": "tu", "itemId": item, "delta": text}});
    let completed = |item: &str, text: &str| {
        json!({"method": "item/completed", "params": {"threadId": "th", "turnId": "tu",
            "item": {"type": "agentMessage", "id": item, "text": text, "phase": null}}})
    };
    peer.send(completed("m1", "All done.")).await;
    peer.send(delta("m2", "Hel")).await;
    peer.send(completed("m2", "Hello")).await;
    peer.send(delta("m3", "whole")).await;
    peer.send(completed("m3", "whole")).await;
    peer.send(json!({"method": "item/completed", "params": {"threadId": "th", "turnId": "tu",
        "item": {"type": "reasoning", "id": "r", "summary": []}}}))
        .await;
    peer.send(json!({"method": "turn/completed", "params": {"threadId": "th", "turn": {"id": "tu", "items": [], "status": "completed"}}})).await;
    let mut texts = Vec::new();
    loop {
        match thread.next_event().await.unwrap() {
            TurnEvent::TextDelta(t) => texts.push(t),
            TurnEvent::Ended(TurnEnd::Completed) => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(texts, ["All done.", "Hel", "lo", "whole"]);
}

/// Codex retrying a backend that is down: its notices count, in a row, against
/// `backend_retries`; one more stops the turn (interrupted at Codex) with an error that says so.
/// An answer from the backend starts the count again.
#[tokio::test]
async fn a_backend_retried_more_often_than_allowed_stops_the_turn() {
    let config = CodexConfig { backend_retries: Some(1), ..CodexConfig::default() };
    let (mut thread, mut peer) = setup(config, &["a"]).await;
    let reconnecting = |n: u32| {
        json!({"method": "error", "params": {"threadId": "th", "turnId": "tu", "willRetry": true,
            "error": {"message": format!("Reconnecting... {n}/5"), "additionalDetails": "Connection failed: error sending request",
                "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": null}}}}})
    };
    peer.send(reconnecting(1)).await;
    peer.send(json!({"method": "item/agentMessage/delta", "params": {"threadId": "th", "turnId": "tu", "itemId": "m", "delta": "Hi"}})).await;
    assert!(matches!(thread.next_event().await.unwrap(), TurnEvent::TextDelta(t) if t == "Hi"));
    peer.send(reconnecting(1)).await;
    peer.send(reconnecting(2)).await;
    let err = thread.next_event().await.unwrap_err();
    assert!(matches!(err, CodexError::BackendUnreachable { retries: 1, .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("Connection failed: error sending request") && message.contains("backend_retries"),
        "{message}"
    );
    let interrupt = peer.recv().await;
    assert_eq!(
        (interrupt["method"].as_str(), &interrupt["params"]["turnId"]),
        (Some("turn/interrupt"), &json!("tu"))
    );
    assert!(!thread.turn_active());
}

#[tokio::test]
async fn without_raw_events_calls_close_after_a_quiet_moment() {
    let (mut thread, mut peer) = setup(CodexConfig::default(), &["a"]).await;
    peer.send(call_request(0, "c1", "a")).await;
    peer.send(call_request(1, "c2", "a")).await;
    let TurnEvent::ToolCalls(calls) = thread.next_event().await.unwrap() else { panic!("no batch") };
    assert_eq!(calls.len(), 2);
}

#[tokio::test]
async fn an_unanswered_call_is_released_with_an_error_and_its_turn_interrupted() {
    let config = CodexConfig { tool_call_timeout_secs: 1, ..CodexConfig::default() };
    let (mut thread, mut peer) = setup(config, &["a"]).await;
    peer.send(raw_call("c1", "a", "{}")).await;
    peer.send(raw_done()).await;
    peer.send(call_request(7, "c1", "a")).await;
    let _usage = thread.next_event().await.unwrap();
    let TurnEvent::ToolCalls(_) = thread.next_event().await.unwrap() else { panic!("no batch") };
    let released = tokio::time::timeout(Duration::from_secs(3), peer.recv()).await.unwrap();
    assert_eq!(released["id"], 7);
    assert_eq!(released["result"]["success"], false);
    assert!(released["result"]["contentItems"][0]["text"].as_str().unwrap().contains("released"));
    let interrupt = peer.recv().await;
    assert_eq!(interrupt["method"], "turn/interrupt");
    assert_eq!(interrupt["params"], json!({"threadId": "th", "turnId": "tu"}));
    assert_eq!(
        thread.answer(&"c1".into(), DynamicToolCallResponse::text("late", true)).unwrap(),
        Answer::Late
    );
}

#[tokio::test]
async fn failed_turns_are_typed_and_approval_and_unknown_requests_are_answered() {
    let (mut thread, mut peer) = setup(CodexConfig::default(), &["a"]).await;
    peer.send(
        json!({"id": 3, "method": "item/commandExecution/requestApproval", "params": {"threadId": "th",
        "turnId": "tu", "itemId": "x", "command": "rm -rf /", "startedAtMs": 0}}),
    )
    .await;
    peer.send(json!({"id": 4, "method": "item/somethingNew", "params": {"threadId": "th"}})).await;
    peer.send(json!({"method": "turn/completed", "params": {"threadId": "th", "turn": {"id": "tu", "items": [],
        "status": "failed", "error": {"message": "Quota exceeded", "codexErrorInfo": "usageLimitExceeded"}}}})).await;
    let err = thread.next_event().await.unwrap_err();
    assert_eq!(
        err,
        CodexError::TurnFailed { message: "Quota exceeded".into(), kind: Some("usageLimitExceeded".into()) }
    );
    assert_eq!(peer.recv().await, json!({"id": 3, "result": {"decision": "decline"}}));
    let unknown = peer.recv().await;
    assert_eq!(
        (unknown["id"].clone(), unknown["error"]["code"].clone()),
        (json!(4), json!(rpc::METHOD_NOT_FOUND))
    );
}

#[tokio::test]
async fn dropping_a_thread_mid_turn_answers_its_calls_and_interrupts() {
    let (mut thread, mut peer) = setup(CodexConfig::default(), &["a"]).await;
    peer.send(raw_call("c1", "a", "{}")).await;
    peer.send(raw_done()).await;
    peer.send(call_request(9, "c1", "a")).await;
    let _usage = thread.next_event().await.unwrap();
    let TurnEvent::ToolCalls(_) = thread.next_event().await.unwrap() else { panic!("no batch") };
    drop(thread);
    let answer = peer.recv().await;
    assert_eq!((answer["id"].clone(), answer["result"]["success"].clone()), (json!(9), json!(false)));
    assert_eq!(peer.recv().await["method"], "turn/interrupt");
}

#[tokio::test]
async fn a_batch_keeps_the_models_order_whatever_order_the_requests_come_in() {
    let (mut thread, mut peer) = setup(CodexConfig::default(), &["a"]).await;
    peer.send(raw_call("c1", "a", "{}")).await;
    peer.send(raw_call("c2", "a", "{}")).await;
    peer.send(raw_done()).await;
    peer.send(call_request(1, "c2", "a")).await;
    peer.send(call_request(0, "c1", "a")).await;
    let _usage = thread.next_event().await.unwrap();
    let TurnEvent::ToolCalls(calls) = thread.next_event().await.unwrap() else { panic!("no batch") };
    let ids: Vec<&str> = calls.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2"]);
}

#[tokio::test]
async fn calls_and_events_of_an_abandoned_turn_do_not_leak_into_the_next() {
    let (mut thread, mut peer) = setup(CodexConfig::default(), &["a"]).await;
    thread.abandon_turn();
    assert_eq!(peer.recv().await["method"], "turn/interrupt");
    let next = tokio::spawn(async move {
        thread.start_turn(vec![UserInput::text("again")]).await.unwrap();
        thread
    });
    peer.answer("turn/start", json!({"turn": {"id": "tu2", "items": [], "status": "inProgress"}})).await;
    let mut thread = next.await.unwrap();
    // The old turn's stragglers: a raw call, a request, its end.
    peer.send(raw_call("old", "a", "{}")).await;
    peer.send(call_request(5, "old", "a")).await;
    peer.send(json!({"method": "turn/completed", "params": {"threadId": "th", "turn": {"id": "tu", "items": [], "status": "interrupted"}}})).await;
    peer.send(json!({"method": "turn/completed", "params": {"threadId": "th", "turn": {"id": "tu2", "items": [], "status": "completed"}}})).await;
    assert_eq!(thread.next_event().await.unwrap(), TurnEvent::Ended(TurnEnd::Completed));
    let answer = peer.recv().await;
    assert_eq!((answer["id"].clone(), answer["result"]["success"].clone()), (json!(5), json!(false)));
}

/// A notification Tackle reads whose params do not fit is skipped with a warning, not a panic and
/// not made-up data; the turn goes on. A `turn/completed` that does not fit fails the turn, naming
/// the field.
#[tokio::test]
async fn a_misfit_notification_is_skipped_and_a_misfit_turn_end_fails_the_turn() {
    let (mut thread, mut peer) = setup(CodexConfig::default(), &["a"]).await;
    peer.send(json!({"method": "item/agentMessage/delta", "params": {"threadId": "th", "turnId": "tu", "itemId": "m", "delta": 5}})).await;
    peer.send(json!({"method": "item/agentMessage/delta", "params": {"threadId": "th", "itemId": "m", "delta": "lost"}})).await;
    peer.send(
        json!({"method": "error", "params": {"threadId": "th", "turnId": "tu", "error": {"message": "x"}}}),
    )
    .await;
    peer.send(json!({"method": "item/somethingNew", "params": {"threadId": "th", "turnId": "tu"}})).await;
    peer.send(json!({"method": "item/agentMessage/delta", "params": {"threadId": "th", "turnId": "tu", "itemId": "m", "delta": "ok"}})).await;
    assert_eq!(thread.next_event().await.unwrap(), TurnEvent::TextDelta("ok".into()));
    peer.send(json!({"method": "turn/completed", "params": {"threadId": "th", "turn": {"id": 7, "items": [], "status": "completed"}}})).await;
    let e = thread.next_event().await.unwrap_err();
    assert!(
        matches!(&e, CodexError::Unexpected { method, message } if method == "turn/completed" && message.contains("turn.id")),
        "{e:?}"
    );
}

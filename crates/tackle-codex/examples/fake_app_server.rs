//! A scripted stand-in for `codex app-server`, for the protocol-error tests: it speaks the
//! same JSON lines, and on `turn/start` plays the scenario named by `FAKE_CODEX_SCENARIO`:
//!
//! - `text`: streams "hello" and completes the turn.
//! - `tool_call`: asks for dynamic tool `echo` (call `call-1`), then streams the answer's text.
//! - `malformed`: writes a line that is not JSON in the middle of the turn.
//! - `unknown_request`: sends a request with a method no client knows, expects an error
//!   answer, then completes the turn.
//! - `exit_mid_turn`: streams a delta, then exits with status 3.
//! - `silent`: accepts the turn and never sends anything again.
//!
//! Every line received is appended to the file `FAKE_CODEX_LOG` names.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

fn main() {
    let scenario = std::env::var("FAKE_CODEX_SCENARIO").unwrap_or_else(|_| "text".into());
    let mut log = std::env::var("FAKE_CODEX_LOG")
        .ok()
        .and_then(|p| std::fs::OpenOptions::new().create(true).append(true).open(p).ok());
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut out = std::io::stdout();
    let mut send = |v: Value| {
        let _ = writeln!(out, "{v}");
        let _ = out.flush();
    };
    let thread = "fake-thread";
    let mut turns = 0;
    let mut next_request = 100;
    while let Some(Ok(line)) = lines.next() {
        if let Some(f) = log.as_mut() {
            let _ = writeln!(f, "{line}");
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else { continue };
        let id = msg.get("id").cloned();
        let method = msg.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
        let Some(id) = id.filter(|_| !method.is_empty()) else { continue };
        match method.as_str() {
            "initialize" => send(json!({"id": id, "result": {"userAgent": "fake/0.0", "codexHome": "/tmp",
                "platformFamily": "unix", "platformOs": "linux"}})),
            "thread/start" | "thread/resume" => {
                send(json!({"id": id, "result": {"thread": {"id": thread, "turns": []},
                "model": "fake-model"}}))
            }
            "thread/inject_items" | "turn/interrupt" => send(json!({"id": id, "result": {}})),
            "turn/steer" => send(json!({"id": id, "result": {"turnId": format!("turn-{turns}")}})),
            "turn/start" => {
                turns += 1;
                let turn = format!("turn-{turns}");
                send(
                    json!({"id": id, "result": {"turn": {"id": turn, "items": [], "status": "inProgress"}}}),
                );
                send(
                    json!({"method": "turn/started", "params": {"threadId": thread, "turn": {"id": turn, "items": [], "status": "inProgress"}}}),
                );
                let delta = |text: &str| {
                    json!({"method": "item/agentMessage/delta", "params": {"threadId": thread,
                    "turnId": turn, "itemId": "msg-1", "delta": text}})
                };
                let completed = json!({"method": "turn/completed", "params": {"threadId": thread,
                    "turn": {"id": turn, "items": [], "status": "completed"}}});
                match scenario.as_str() {
                    "text" => {
                        send(delta("hello"));
                        send(completed);
                    }
                    "tool_call" => {
                        send(
                            json!({"method": "rawResponseItem/completed", "params": {"threadId": thread, "turnId": turn,
                            "item": {"type": "function_call", "call_id": "call-1", "name": "echo", "arguments": "{\"text\":\"hi\"}"}}}),
                        );
                        send(
                            json!({"method": "rawResponse/completed", "params": {"threadId": thread, "turnId": turn,
                            "responseId": "r1", "usage": {"inputTokens": 10, "cachedInputTokens": 4, "outputTokens": 2,
                            "reasoningOutputTokens": 0, "totalTokens": 12}}}),
                        );
                        send(
                            json!({"id": next_request, "method": "item/tool/call", "params": {"threadId": thread,
                            "turnId": turn, "callId": "call-1", "namespace": null, "tool": "echo", "arguments": {"text": "hi"}}}),
                        );
                        next_request += 1;
                        let answer = wait_answer(&mut lines, &mut log);
                        let text = answer
                            .pointer("/result/contentItems/0/text")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                            .to_owned();
                        send(delta(&format!("tool said: {text}")));
                        send(completed);
                    }
                    "malformed" => {
                        send(delta("partial"));
                        let _ = writeln!(
                            std::io::stdout(),
                            "{{\"method\": \"item/agentMessage/delta\", this is not json"
                        );
                        let _ = std::io::stdout().flush();
                    }
                    "unknown_request" => {
                        send(
                            json!({"id": next_request, "method": "item/brandNew/request", "params": {"threadId": thread, "turnId": turn}}),
                        );
                        next_request += 1;
                        let answer = wait_answer(&mut lines, &mut log);
                        let code = answer.pointer("/error/code").cloned().unwrap_or(Value::Null);
                        send(delta(&format!("answered with error {code}")));
                        send(completed);
                    }
                    "exit_mid_turn" => {
                        send(delta("half an ans"));
                        eprintln!("fake app-server: exiting mid-turn as scripted");
                        std::process::exit(3);
                    }
                    _ => {}
                }
            }
            _ => send(
                json!({"id": id, "error": {"code": -32600, "message": format!("Invalid request: unknown variant `{method}`")}}),
            ),
        }
    }
}

/// Reads lines until the answer to a request of ours (a line with an id and no method).
fn wait_answer(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    log: &mut Option<std::fs::File>,
) -> Value {
    for line in lines.by_ref() {
        let Ok(line) = line else { break };
        if let Some(f) = log.as_mut() {
            let _ = writeln!(f, "{line}");
        }
        if let Ok(v) = serde_json::from_str::<Value>(&line)
            && v.get("method").is_none()
            && v.get("id").is_some()
        {
            return v;
        }
    }
    Value::Null
}

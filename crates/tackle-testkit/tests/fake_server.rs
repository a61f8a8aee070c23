//! Self-tests of the fake model server in all three wire formats.

use serde_json::{Value, json};
use tackle_protocol::Usage;
use tackle_testkit::{FakeModel, Fault, Script, Turn, WireFormat};

fn usage() -> Usage {
    Usage { input_tokens: 1000, output_tokens: 20, cache_read_tokens: 600, cache_write_tokens: 100 }
}

fn script() -> Script {
    Script::new(vec![
        Turn::text("Hello there, this is a longer text to split.").with_usage(usage()),
        Turn::text("Calling.")
            .with_call("read_file", r#"{"path": "src/a_rather_long_file_name.rs"}"#)
            .with_call("list_files", r#"{"pattern": "**/*.md"}"#)
            .with_usage(usage()),
    ])
}

async fn post(fake: &FakeModel, path: &str, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}{path}", fake.base_url()))
        .header("x-api-key", "k")
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// Splits an SSE body into (event name, data) pairs.
fn sse(text: &str) -> Vec<(String, String)> {
    text.split("\n\n")
        .filter(|f| !f.trim().is_empty())
        .map(|f| {
            let mut event = String::new();
            let mut data = String::new();
            for line in f.lines() {
                if let Some(e) = line.strip_prefix("event: ") {
                    event = e.to_owned();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = d.to_owned();
                }
            }
            (event, data)
        })
        .collect()
}

fn openai_body(stream: bool) -> Value {
    json!({"model": "gpt-x", "stream": stream, "stream_options": {"include_usage": true},
           "messages": [{"role": "user", "content": "hi"}]})
}

fn anthropic_body(stream: bool) -> Value {
    json!({"model": "claude-x", "max_tokens": 100, "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn openai_chat_stream_text_tools_and_usage() {
    let fake = FakeModel::start(script()).await.unwrap();
    let text = post(&fake, "/v1/chat/completions", openai_body(true)).await.text().await.unwrap();
    let frames = sse(&text);
    assert_eq!(frames.last().unwrap().1, "[DONE]");
    let chunks: Vec<Value> =
        frames[..frames.len() - 1].iter().map(|(_, d)| serde_json::from_str(d).unwrap()).collect();
    let content: String =
        chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect();
    assert_eq!(content, "Hello there, this is a longer text to split.");
    assert!(chunks.len() > 4, "text is split into deltas");
    let usage = &chunks.last().unwrap()["usage"];
    assert_eq!(usage["prompt_tokens"], 1000);
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 600);
    assert_eq!(chunks.last().unwrap()["choices"], json!([]));

    let mut body = openai_body(true);
    body["messages"] = json!([{"role": "user", "content": "hi"}]);
    let text = post(&fake, "/v1/chat/completions", body).await.text().await.unwrap();
    let chunks: Vec<Value> = sse(&text)
        .iter()
        .filter(|(_, d)| d != "[DONE]")
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    let mut args = ["".to_string(), "".to_string()];
    let mut starts = 0;
    for c in &chunks {
        for call in c["choices"][0]["delta"]["tool_calls"].as_array().into_iter().flatten() {
            let i = call["index"].as_u64().unwrap() as usize;
            if call.get("id").is_some() {
                starts += 1;
                assert_eq!(call["type"], "function");
            }
            args[i].push_str(call["function"]["arguments"].as_str().unwrap_or(""));
        }
    }
    assert_eq!(starts, 2);
    assert_eq!(args[0], r#"{"path": "src/a_rather_long_file_name.rs"}"#);
    assert_eq!(args[1], r#"{"pattern": "**/*.md"}"#);
    let finish: Vec<&str> = chunks.iter().filter_map(|c| c["choices"][0]["finish_reason"].as_str()).collect();
    assert_eq!(finish, ["tool_calls"]);
}

#[tokio::test]
async fn openai_chat_json() {
    let fake = FakeModel::start(script()).await.unwrap();
    let v: Value = post(&fake, "/v1/chat/completions", openai_body(false)).await.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["content"], "Hello there, this is a longer text to split.");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    let v: Value = post(&fake, "/v1/chat/completions", openai_body(false)).await.json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["tool_calls"][1]["function"]["name"], "list_files");
}

#[tokio::test]
async fn anthropic_stream_and_json() {
    let fake = FakeModel::start(script()).await.unwrap();
    let text = post(&fake, "/v1/messages", anthropic_body(true)).await.text().await.unwrap();
    let events: Vec<String> = sse(&text).into_iter().map(|(e, _)| e).collect();
    assert_eq!(events.first().map(String::as_str), Some("message_start"));
    assert_eq!(events[1], "ping");
    assert_eq!(events.last().map(String::as_str), Some("message_stop"));
    let frames = sse(&text);
    let start: Value = serde_json::from_str(&frames[0].1).unwrap();
    let u = &start["message"]["usage"];
    assert_eq!(
        (
            u["input_tokens"].as_u64(),
            u["cache_read_input_tokens"].as_u64(),
            u["cache_creation_input_tokens"].as_u64()
        ),
        (Some(300), Some(600), Some(100))
    );

    let v: Value = post(&fake, "/v1/messages", anthropic_body(false)).await.json().await.unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(v["stop_reason"], "tool_use");
    assert_eq!(v["content"][1]["type"], "tool_use");
    assert_eq!(v["content"][1]["input"], json!({"path": "src/a_rather_long_file_name.rs"}));
}

#[tokio::test]
async fn anthropic_streams_tool_input_in_fragments_and_thinking() {
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("shell", r#"{"command": "ls -la /tmp"}"#).with_reasoning("think first"),
    ]))
    .await
    .unwrap();
    let text = post(&fake, "/v1/messages", anthropic_body(true)).await.text().await.unwrap();
    let datas: Vec<Value> = sse(&text).iter().map(|(_, d)| serde_json::from_str(d).unwrap()).collect();
    let partial: String = datas.iter().filter_map(|d| d["delta"]["partial_json"].as_str()).collect();
    assert_eq!(partial, r#"{"command": "ls -la /tmp"}"#);
    assert!(datas.iter().filter(|d| d["delta"]["type"] == "input_json_delta").count() > 2);
    assert!(datas.iter().any(|d| d["delta"]["type"] == "signature_delta"));
}

#[tokio::test]
async fn responses_stream() {
    let fake = FakeModel::start(script()).await.unwrap();
    fake.set_script(Script::new(vec![
        Turn::text("Hi.").with_call("echo", r#"{"x": 1}"#).with_usage(usage()),
    ]));
    let text = post(&fake, "/v1/responses", json!({"model": "gpt-x", "input": "hi", "stream": true}))
        .await
        .text()
        .await
        .unwrap();
    let frames = sse(&text);
    let names: Vec<&str> = frames.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names[0], "response.created");
    assert!(names.contains(&"response.output_text.delta"));
    assert!(names.contains(&"response.function_call_arguments.delta"));
    assert_eq!(*names.last().unwrap(), "response.completed");
    let done: Value = serde_json::from_str(&frames.last().unwrap().1).unwrap();
    assert_eq!(done["response"]["usage"]["input_tokens_details"]["cached_tokens"], 600);
    let seqs: Vec<u64> = frames
        .iter()
        .map(|(_, d)| serde_json::from_str::<Value>(d).unwrap()["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..frames.len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn stateless_mode_repeats_traffic() {
    let fake = FakeModel::start(Script::stateless(vec![
        Turn::call("a", "{}"),
        Turn::call("b", "{}"),
        Turn::text("done"),
    ]))
    .await
    .unwrap();
    let with_results = |n: usize| {
        let mut messages = vec![json!({"role": "user", "content": "hi"})];
        for i in 0..n {
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{i}"), "type": "function", "function": {"name": "a", "arguments": "{}"}}]}));
            messages.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "ok"}));
        }
        json!({"model": "m", "messages": messages})
    };
    for _ in 0..2 {
        let v: Value = post(&fake, "/v1/chat/completions", with_results(0)).await.json().await.unwrap();
        assert_eq!(v["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "a");
        let v: Value = post(&fake, "/v1/chat/completions", with_results(2)).await.json().await.unwrap();
        assert_eq!(v["choices"][0]["message"]["content"], "done");
    }
}

#[tokio::test]
async fn faults_status_html_cut_and_malformed() {
    let fake =
        FakeModel::start(Script::new(vec![Turn::text("one two three four five six"); 4])).await.unwrap();
    fake.push_fault(Fault::Status {
        status: 429,
        body: None,
        retry_after: Some("2".into()),
        retry_after_ms: Some(1500),
        should_retry: Some(true),
    });
    let r = post(&fake, "/v1/messages", anthropic_body(true)).await;
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "2");
    assert_eq!(r.headers()["retry-after-ms"], "1500");
    assert_eq!(r.headers()["x-should-retry"], "true");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "rate_limit_error");

    fake.push_fault(Fault::Html { status: 502 });
    let r = post(&fake, "/v1/chat/completions", openai_body(true)).await;
    assert_eq!(r.status(), 502);
    assert!(r.text().await.unwrap().contains("<title>502"));

    fake.push_fault(Fault::CutAfter { events: 3 });
    let r = post(&fake, "/v1/chat/completions", openai_body(true)).await;
    assert!(r.text().await.is_err(), "the connection is dropped mid-stream");

    fake.push_fault(Fault::MalformedChunk { after_events: 2 });
    let text = post(&fake, "/v1/chat/completions", openai_body(true)).await.text().await.unwrap();
    let bad =
        sse(&text).iter().filter(|(_, d)| d != "[DONE]" && serde_json::from_str::<Value>(d).is_err()).count();
    assert_eq!(bad, 1);
    assert!(text.ends_with("data: [DONE]\n\n"), "the stream continues after the bad chunk");

    fake.push_fault(Fault::Latency { ms: 50 });
    let started = std::time::Instant::now();
    assert_eq!(post(&fake, "/v1/chat/completions", openai_body(false)).await.status(), 200);
    assert!(started.elapsed() >= std::time::Duration::from_millis(50));
}

#[tokio::test]
async fn invalid_requests_get_provider_errors() {
    let fake = FakeModel::start(script()).await.unwrap();
    let orphan = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "nope", "content": "x"}]});
    let r = post(&fake, "/v1/chat/completions", orphan).await;
    assert_eq!(r.status(), 400);
    assert!(
        r.json::<Value>().await.unwrap()["error"]["message"].as_str().unwrap().contains("must be a response")
    );

    let unanswered = json!({"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{}"}}]},
        {"role": "user", "content": "next"}]});
    let r = post(&fake, "/v1/chat/completions", unanswered).await;
    assert!(r.json::<Value>().await.unwrap()["error"]["message"].as_str().unwrap().contains("c1"));

    let cc = json!({"type": "ephemeral"});
    let too_many = json!({"model": "c", "max_tokens": 10,
        "system": [{"type": "text", "text": "a", "cache_control": cc}, {"type": "text", "text": "b", "cache_control": cc}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "x", "cache_control": cc}, {"type": "text", "text": "y", "cache_control": cc}, {"type": "text", "text": "z", "cache_control": cc}]}]});
    let r = post(&fake, "/v1/messages", too_many).await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert!(v["error"]["message"].as_str().unwrap().contains("Found 5"));

    let anthropic_orphan = json!({"model": "c", "max_tokens": 10, "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "r"}]}]});
    assert_eq!(post(&fake, "/v1/messages", anthropic_orphan).await.status(), 400);
    let bad_choice = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}}],
        "tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [{"type": "function", "function": {"name": "b"}}]}}});
    assert_eq!(post(&fake, "/v1/chat/completions", bad_choice).await.status(), 400);
    let r = reqwest::Client::new()
        .post(format!("{}/v1/messages", fake.base_url()))
        .json(&anthropic_body(false))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "x-api-key is required");
}

#[tokio::test]
async fn requests_are_recorded_and_exhaustion_is_an_error() {
    let fake = FakeModel::start(Script::new(vec![Turn::text("only")])).await.unwrap();
    post(&fake, "/v1/chat/completions", openai_body(false)).await;
    let r = post(&fake, "/v1/messages", anthropic_body(false)).await;
    assert_eq!(r.status(), 500);
    assert!(r.text().await.unwrap().contains("script exhausted after 1 turns"));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!((reqs[0].wire, reqs[1].wire), (WireFormat::OpenAiChat, WireFormat::AnthropicMessages));
    assert_eq!(reqs[1].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(reqs[0].body["model"], "gpt-x");
}

/// The benchmark loop: N from the model name, `{k}` filled in, streamed answers on one kept-alive
/// connection, and the counters a driver in another process reads over HTTP.
#[tokio::test]
async fn loop_mode_plays_n_steps_and_counts_traffic() {
    let mut script = Script::new(vec![
        Turn::call("add", r#"{"a": {k}, "b": 1}"#),
        Turn::text("done after {k} tool calls"),
    ]);
    script.mode = tackle_testkit::ScriptMode::Loop;
    let fake = FakeModel::start(script).await.unwrap();
    fake.set_recording(false);
    let client = reqwest::Client::new();
    let mut messages = vec![json!({"role": "user", "content": "go"})];
    let mut sent_bytes = 0;
    for k in 0..=3 {
        let body = json!({"model": "fake-steps-3", "stream": true, "messages": messages});
        sent_bytes += body.to_string().len() as u64;
        let text = client
            .post(format!("{}/v1/chat/completions", fake.base_url()))
            .body(body.to_string())
            .header("content-type", "application/json")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let chunks: Vec<Value> = sse(&text)
            .iter()
            .filter(|(_, d)| d != "[DONE]")
            .map(|(_, d)| serde_json::from_str(d).unwrap())
            .collect();
        let delta = |f: &dyn Fn(&Value) -> Option<String>| -> String {
            chunks.iter().filter_map(|c| f(&c["choices"][0]["delta"])).collect()
        };
        if k < 3 {
            let args = delta(&|d| d["tool_calls"][0]["function"]["arguments"].as_str().map(str::to_owned));
            assert_eq!(serde_json::from_str::<Value>(&args).unwrap(), json!({"a": k, "b": 1}));
            let id = delta(&|d| d["tool_calls"][0]["id"].as_str().map(str::to_owned));
            assert_eq!(id, format!("call_{k}_0"), "ids are unique per step");
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "add", "arguments": args}}]}));
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": (k + 1).to_string()}));
        } else {
            assert_eq!(delta(&|d| d["content"].as_str().map(str::to_owned)), "done after 3 tool calls");
        }
    }
    let stats = fake.stats();
    assert_eq!((stats.requests, stats.bytes_in, stats.connections), (4, sent_bytes, 1), "{stats:?}");
    assert!(fake.requests().is_empty(), "recording was off");

    // The same counters over HTTP, and a reset.
    let url = |path: &str| format!("{}/_fake/{path}", fake.base_url());
    let over_http: tackle_testkit::FakeStats =
        client.get(url("stats")).send().await.unwrap().json().await.unwrap();
    assert_eq!(
        (over_http.requests, over_http.bytes_in, over_http.first_request_unix_us),
        (stats.requests, stats.bytes_in, stats.first_request_unix_us)
    );
    assert!(stats.first_request_unix_us.unwrap() <= stats.last_request_unix_us.unwrap());
    assert_eq!(client.post(url("reset")).send().await.unwrap().status(), 204);
    assert_eq!(fake.stats().requests, 0);

    // A model name without a length is refused with a message that says what to send.
    let r = post(&fake, "/v1/chat/completions", openai_body(false)).await;
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("-steps-"));
}

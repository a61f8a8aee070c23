//! Self-tests of the fake model server in all three wire formats.

use serde_json::{Value, json};
use tackle_protocol::{StopReason, Usage};
use tackle_testkit::{FakeModel, Fault, Script, Turn, WireFormat};

fn usage() -> Usage {
    Usage {
        input_tokens: 1000,
        output_tokens: 20,
        cache_read_tokens: 600,
        cache_write_tokens: 100,
        reasoning_tokens: 0,
    }
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

fn responses_body(stream: bool) -> Value {
    json!({"model": "gpt-x", "input": "hi", "stream": stream, "store": false,
           "include": ["reasoning.encrypted_content"], "reasoning": {"summary": "auto"},
           "tools": [{"type": "function", "name": "read_file", "strict": false, "parameters": {"type": "object"}},
                     {"type": "function", "name": "list_files", "strict": false, "parameters": {"type": "object"}}]})
}

fn reasoning_turn() -> Turn {
    Turn::text("Calling.")
        .with_reasoning("The user wants two files listed; call both tools.")
        .with_call("read_file", r#"{"path": "src/a_rather_long_file_name.rs"}"#)
        .with_call("list_files", r#"{"pattern": "**/*.md"}"#)
        .with_usage(Usage { reasoning_tokens: 64, ..usage() })
}

/// The documented event order: lifecycle, then each output item added -> its parts and deltas ->
/// done, in output order, then the terminal event; sequence numbers count from 0.
#[tokio::test]
async fn responses_stream_follows_the_documented_order() {
    let fake = FakeModel::start(Script::new(vec![reasoning_turn()])).await.unwrap();
    let text = post(&fake, "/v1/responses", responses_body(true)).await.text().await.unwrap();
    let frames = sse(&text);
    let events: Vec<Value> = frames.iter().map(|(_, d)| serde_json::from_str(d).unwrap()).collect();
    for ((name, _), e) in frames.iter().zip(&events) {
        assert_eq!(name, e["type"].as_str().unwrap(), "the SSE event name is the type");
    }
    let seqs: Vec<u64> = events.iter().map(|e| e["sequence_number"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..events.len() as u64).collect::<Vec<_>>());
    // Consecutive repeats collapsed, to compare the order.
    let mut order: Vec<&str> = Vec::new();
    for e in &events {
        let t = e["type"].as_str().unwrap();
        if order.last() != Some(&t) {
            order.push(t);
        }
    }
    assert_eq!(
        order,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let by = |t: &'static str| events.iter().filter(move |e| e["type"] == t);
    let added: Vec<&Value> = by("response.output_item.added").collect();
    let done: Vec<&Value> = by("response.output_item.done").collect();
    assert_eq!(added[0]["item"]["type"], "reasoning");
    assert!(added[0]["item"].get("encrypted_content").is_none(), "the blob comes with the done item");
    let reasoning = &done[0]["item"];
    assert!(reasoning["encrypted_content"].as_str().unwrap().starts_with("enc1."));
    assert_eq!(reasoning["summary"][0]["text"], "The user wants two files listed; call both tools.");
    let summary: String =
        by("response.reasoning_summary_text.delta").map(|e| e["delta"].as_str().unwrap()).collect();
    assert_eq!(summary, "The user wants two files listed; call both tools.");
    for (i, e) in done.iter().enumerate() {
        assert_eq!(e["output_index"], i);
    }
    let args: String = by("response.function_call_arguments.delta")
        .filter(|e| e["output_index"] == 2)
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(args, r#"{"path": "src/a_rather_long_file_name.rs"}"#);
    assert!(by("response.output_text.delta").all(|e| e["logprobs"] == json!([])));
    let completed = &events.last().unwrap()["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"], json!(done.iter().map(|d| d["item"].clone()).collect::<Vec<_>>()));
    assert_eq!(completed["usage"]["input_tokens_details"]["cached_tokens"], 600);
    assert_eq!(completed["usage"]["output_tokens_details"]["reasoning_tokens"], 64);
    assert_eq!(completed["store"], false, "request parameters are echoed");
    assert_eq!(completed["tools"][1]["name"], "list_files");
    assert_eq!(events[0]["response"]["status"], "in_progress");
    assert!(events[0]["response"]["usage"].is_null());
}

/// The `response` object echoes the request's parameters as sent (key order included) and the
/// API's defaults for the others, in the API's order, between `output` and `usage`.
#[tokio::test]
async fn responses_echo_the_request_in_the_apis_order() {
    let fake = FakeModel::start(Script::new(vec![Turn::text("a"), Turn::text("b")])).await.unwrap();
    let tools = json!([{"type": "function", "name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}, "strict": false}]);
    let v: Value = post(&fake, "/v1/responses", json!({"model": "gpt-x", "input": "hi", "tools": tools,
        "tool_choice": {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "f"}]},
        "reasoning": {"effort": "low"}, "temperature": 0.2, "store": false, "instructions": "be brief"}))
    .await
    .json()
    .await
    .unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let echoed = [
        "instructions",
        "max_output_tokens",
        "parallel_tool_calls",
        "previous_response_id",
        "prompt_cache_key",
        "reasoning",
        "store",
        "temperature",
        "text",
        "tool_choice",
        "tools",
        "top_p",
        "truncation",
        "user",
        "metadata",
    ];
    let at = keys.iter().position(|k| *k == "output").unwrap() + 1;
    assert_eq!(keys[at..at + echoed.len()], echoed, "{keys:?}");
    assert_eq!(keys[at + echoed.len()..], ["usage"]);
    let echo = |k: &str| v[k].to_string();
    assert_eq!(
        echo("tool_choice"),
        r#"{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"f"}]}"#
    );
    assert_eq!(echo("reasoning"), r#"{"effort":"low"}"#);
    assert_eq!(
        (echo("temperature"), echo("store"), echo("instructions")),
        ("0.2".into(), "false".into(), r#""be brief""#.into())
    );
    assert_eq!(v["tools"], tools);
    let v: Value =
        post(&fake, "/v1/responses", json!({"model": "gpt-x", "input": "hi"})).await.json().await.unwrap();
    let defaults: Vec<String> = echoed.iter().map(|k| format!("{k}={}", v[*k])).collect();
    assert_eq!(
        defaults.join(" "),
        r#"instructions=null max_output_tokens=null parallel_tool_calls=true previous_response_id=null prompt_cache_key=null reasoning={"effort":null,"summary":null} store=true temperature=1.0 text={"format":{"type":"text"}} tool_choice="auto" tools=[] top_p=1.0 truncation="disabled" user=null metadata={}"#
    );
}

#[tokio::test]
async fn responses_json_incomplete_and_what_the_request_did_not_ask_for() {
    let fake = FakeModel::start(Script::new(vec![
        reasoning_turn(),
        Turn::text("Cut sh").with_stop(StopReason::MaxTokens),
        Turn::text("Cut sh").with_stop(StopReason::MaxTokens),
    ]))
    .await
    .unwrap();
    // Neither `include` nor `reasoning.summary`: an empty summary and no blob.
    let v: Value =
        post(&fake, "/v1/responses", json!({"model": "gpt-x", "input": "hi"})).await.json().await.unwrap();
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "completed");
    assert_eq!(v["output"][0], json!({"id": "rs_fake0", "type": "reasoning", "summary": []}));
    assert_eq!(v["output"][1]["content"][0]["text"], "Calling.");
    assert_eq!(v["output"][2]["call_id"], "call_0_0");
    for key in
        ["parallel_tool_calls", "tool_choice", "tools", "truncation", "store", "error", "incomplete_details"]
    {
        assert!(v.get(key).is_some(), "{key} is part of every response object");
    }
    let v: Value =
        post(&fake, "/v1/responses", json!({"model": "gpt-x", "input": "hi"})).await.json().await.unwrap();
    assert_eq!(
        (v["status"].as_str(), v["incomplete_details"]["reason"].as_str()),
        (Some("incomplete"), Some("max_output_tokens"))
    );
    let text = post(&fake, "/v1/responses", json!({"model": "gpt-x", "input": "hi", "stream": true}))
        .await
        .text()
        .await
        .unwrap();
    let last: Value = serde_json::from_str(&sse(&text).last().unwrap().1).unwrap();
    assert_eq!(last["type"], "response.incomplete");
    assert_eq!(last["response"]["output"][0]["status"], "incomplete");
}

/// The API's checks, with its status codes and wording: a client bug fails here as it would
/// against OpenAI.
#[tokio::test]
async fn responses_requests_are_checked_like_the_api_does() {
    let fake = FakeModel::start(Script::new(vec![reasoning_turn(), Turn::text("ok"), Turn::text("ok")]))
        .await
        .unwrap();
    // A first response, whose reasoning item goes back in the next requests.
    let first: Value = post(&fake, "/v1/responses", responses_body(false)).await.json().await.unwrap();
    let reasoning = first["output"][0].clone();
    let call = first["output"][2].clone();
    let history = |reasoning: Value| {
        json!([{"role": "user", "content": "hi"}, reasoning, call.clone(),
               {"type": "function_call_output", "call_id": call["call_id"], "output": "fn main() {}"}])
    };
    let with_input = |input: Value| {
        let mut b = responses_body(false);
        b["input"] = input;
        b
    };
    let strict_tool = |parameters: Value, strict: Option<bool>| {
        let mut t = json!({"type": "function", "name": "t", "parameters": parameters});
        if let Some(s) = strict {
            t["strict"] = json!(s);
        }
        json!({"model": "m", "input": "x", "tools": [t]})
    };
    let open_schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let mut tampered = reasoning.clone();
    let blob = tampered["encrypted_content"].as_str().unwrap().replace("enc1.72", "enc1.73");
    tampered["encrypted_content"] = json!(blob);
    let mut bare = reasoning.clone();
    bare.as_object_mut().unwrap().remove("encrypted_content");
    let cases: Vec<(Value, u16, &str, &str)> = vec![
        (
            json!({"model": "m", "input": "x", "max_tokens": 10}),
            400,
            "Unknown parameter: 'max_tokens'.",
            "max_tokens",
        ),
        (json!({"input": "x"}), 400, "Missing required parameter: 'model'.", "model"),
        (
            json!({"model": "m", "input": "x", "max_output_tokens": 10}),
            400,
            "Expected a value >= 16",
            "max_output_tokens",
        ),
        (
            json!({"model": "m", "input": "x", "truncation": "sometimes"}),
            400,
            "Supported values are",
            "truncation",
        ),
        (
            json!({"model": "m", "input": "x", "include": ["reasoning.text"]}),
            400,
            "Invalid value: 'reasoning.text'",
            "include[0]",
        ),
        (
            json!({"model": "m", "input": "x", "previous_response_id": "resp_1"}),
            404,
            "Previous response with id 'resp_1' not found.",
            "previous_response_id",
        ),
        (
            strict_tool(open_schema.clone(), None),
            400,
            "'additionalProperties' is required to be supplied and to be false",
            "tools[0].parameters",
        ),
        (
            strict_tool(
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}),
                Some(true),
            ),
            400,
            "Missing 'a'",
            "tools[0].parameters",
        ),
        (
            json!({"model": "m", "input": "x", "tools": [{"type": "function", "name": "a b", "strict": false}]}),
            400,
            "does not match pattern",
            "tools[0].name",
        ),
        (
            json!({"model": "m", "input": "x", "tools": [{"type": "function", "name": "a", "strict": false}], "tool_choice": {"type": "function", "name": "b"}}),
            400,
            "not found in 'tools' parameter",
            "tool_choice",
        ),
        (
            json!({"model": "m", "input": "x", "tools": [{"type": "function", "name": "a", "strict": false}], "tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "b"}]}}),
            400,
            "not found in 'tools' parameter",
            "tool_choice.tools[0]",
        ),
        (
            json!({"model": "m", "input": "x", "tools": [{"type": "function", "name": "a", "strict": false}], "tool_choice": {"type": "function", "function": {"name": "a"}}}),
            400,
            "Missing required parameter: 'tool_choice.name'.",
            "tool_choice.name",
        ),
        (
            json!({"model": "m", "input": "x", "tool_choice": {"type": "web_search_2030"}}),
            400,
            "Invalid value: \"web_search_2030\"",
            "tool_choice.type",
        ),
        (
            with_input(json!([{"type": "function_call_output", "call_id": "c9", "output": "x"}])),
            400,
            "No tool call found for function call output with call_id c9.",
            "input",
        ),
        (
            with_input(json!([{"role": "user", "content": "hi"}, call.clone()])),
            400,
            "No tool output found for function call call_0_0.",
            "input",
        ),
        (
            with_input(json!([{"role": "user", "content": [{"type": "output_text", "text": "hi"}]}])),
            400,
            "Invalid value: 'output_text'",
            "input[0].content[0]",
        ),
        (
            with_input(json!([{"role": "assistant", "content": [{"type": "input_text", "text": "hi"}]}])),
            400,
            "Invalid value: 'input_text'",
            "input[0].content[0]",
        ),
        (
            with_input(json!([{"role": "robot", "content": "hi"}])),
            400,
            "Invalid value: 'robot'",
            "input[0].role",
        ),
        (with_input(history(tampered)), 400, "could not be verified", "input[1].encrypted_content"),
        (with_input(history(bare)), 404, "Items are not persisted when `store` is set to false", "input"),
        (
            with_input(json!([{"type": "item_reference", "id": "msg_1"}])),
            404,
            "Item with id 'msg_1' not found.",
            "input",
        ),
    ];
    for (body, status, message, param) in cases {
        let r = post(&fake, "/v1/responses", body.clone()).await;
        assert_eq!(r.status(), status, "{body}");
        let e: Value = r.json().await.unwrap();
        assert!(e["error"]["message"].as_str().unwrap().contains(message), "{body}: {e}");
        assert_eq!(e["error"]["param"], param, "{body}: {e}");
        assert_eq!(e["error"]["type"], "invalid_request_error");
    }
    assert_eq!(fake.requests().len(), 22, "rejected requests are recorded too");
    // The reasoning item exactly as received, and strict schemas done right, pass.
    let closed = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false});
    let mut ok = with_input(history(reasoning));
    ok["tools"] = json!([{"type": "function", "name": "read_file", "strict": true, "parameters": closed},
                         {"type": "function", "name": "list_files", "strict": false, "parameters": open_schema}]);
    ok["tool_choice"] = json!({"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "read_file"}]});
    let r = post(&fake, "/v1/responses", ok).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    // Codex's request shape (research transcripts of codex 0.169.0) passes.
    let codex = json!({"model": "mock-model", "stream": true, "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "base"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Look up ticket ABC-123"}]}],
        "tools": [{"type": "function", "name": "lookup_ticket", "description": "Fetch a ticket by id", "strict": false,
                   "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}],
        "tool_choice": "auto", "parallel_tool_calls": false, "reasoning": {"summary": "auto"}, "store": false,
        "include": ["reasoning.encrypted_content"], "prompt_cache_key": "01a20238-0e53-7eb0-8bee-b9addc469cb5",
        "client_metadata": {"x": "y"}});
    assert_eq!(post(&fake, "/v1/responses", codex).await.status(), 200);
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

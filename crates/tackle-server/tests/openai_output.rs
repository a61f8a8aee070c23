//! Structured output on the OpenAI-compatible routes: in agent mode a client's `response_format`
//! (Chat Completions) or `text.format` (Responses) is the turn's output schema, asked natively of
//! the agent's provider in all three wire formats (or through the forced final-answer tool); the
//! agent's tools still run before the answer; the client gets only the validated JSON, streaming
//! or not; an invalid answer is repaired once, a second is the route's mapped error; a bad schema
//! is a 400 before any model request. In gateway mode the format goes to the provider natively.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{Harness, parse_sse, run_peer_script, tokens};
use serde_json::{Value, json};
use tackle_agent::FINAL_ANSWER_TOOL;
use tackle_provider::ProviderKind;
use tackle_testkit::{Script, Turn, peers};

const FORMATS: [ProviderKind; 3] =
    [ProviderKind::Openai, ProviderKind::OpenaiResponses, ProviderKind::Anthropic];

fn city_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
        "additionalProperties": false
    })
}

fn chat_format() -> Value {
    json!({"type": "json_schema", "json_schema": {"name": "city", "schema": city_schema(), "strict": true}})
}

fn responses_format() -> Value {
    json!({"type": "json_schema", "name": "city", "schema": city_schema(), "strict": true})
}

/// The model's final answer `json` as the provider's format gives it: text where the API
/// constrains the answer itself, a call of the final-answer tool elsewhere (after some text,
/// which must not reach the client either).
fn answer(kind: ProviderKind, json: &str) -> Turn {
    match kind {
        ProviderKind::Anthropic => Turn::text("Here it is.").with_call(FINAL_ANSWER_TOOL, json),
        _ => Turn::text(json),
    }
}

/// A step that says something and runs one of the agent's tools.
fn tool_step() -> Turn {
    Turn::text("Let me look first.").with_call("list_files", r#"{"path":"."}"#)
}

/// What a request to the provider asks for, per format: the exact native field.
fn asked(kind: ProviderKind, body: &Value) -> Value {
    match kind {
        ProviderKind::Openai => body["response_format"].clone(),
        ProviderKind::OpenaiResponses => body["text"].clone(),
        _ => json!({"tool": body["tools"].as_array().unwrap().last(), "tool_choice": body["tool_choice"]}),
    }
}

fn expected_ask(kind: ProviderKind, request: &Value) -> Value {
    match kind {
        ProviderKind::Openai => chat_format(),
        ProviderKind::OpenaiResponses => json!({"format": responses_format()}),
        _ => json!({
            "tool": {
                "name": FINAL_ANSWER_TOOL,
                "description": request["tools"].as_array().unwrap().last().unwrap()["description"],
                "input_schema": city_schema()
            },
            "tool_choice": {"type": "any"}
        }),
    }
}

/// The content a streamed chat completion carries, its deltas concatenated.
fn chat_content(body: &Value) -> String {
    parse_sse(body.as_str().unwrap())
        .iter()
        .filter_map(|c| c.data["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
        .collect()
}

/// The text a streamed response carries, its `output_text` deltas concatenated, and its final
/// response object.
fn responses_stream(body: &Value) -> (String, Value) {
    let events = parse_sse(body.as_str().unwrap());
    let text = events
        .iter()
        .filter(|e| e.event == "response.output_text.delta")
        .map(|e| e.data["delta"].as_str().unwrap().to_owned())
        .collect();
    let last = events.last().expect("events");
    (text, last.data["response"].clone())
}

#[tokio::test]
async fn agent_mode_asks_each_format_natively_runs_tools_and_answers_only_the_json() {
    let city = json!({"city": "Paris", "population": 2102650});
    for kind in FORMATS {
        let turns = (0..4).flat_map(|_| [tool_step(), answer(kind, &city.to_string())]).collect();
        let h = Harness::with_provider(Script::new(turns), Vec::new(), kind).await;
        std::fs::write(h.workspace.path().join("notes.md"), "x").unwrap();
        let messages = json!([{"role": "user", "content": "Which city?"}]);
        let chat = |stream: bool| json!({"model": "tackle-agent", "stream": stream, "messages": messages, "response_format": chat_format()});
        let responses = |stream: bool| json!({"model": "tackle-agent", "stream": stream, "input": "Which city?", "text": {"format": responses_format()}});

        let (status, body) = h.call(Method::POST, "/v1/chat/completions", None, Some(chat(false))).await;
        assert_eq!(status, StatusCode::OK, "{kind}: {body}");
        let content = body["choices"][0]["message"]["content"].as_str().unwrap();
        assert_eq!(serde_json::from_str::<Value>(content).unwrap(), city, "{kind}: only the JSON: {content}");
        assert_eq!(body["choices"][0]["finish_reason"], "stop", "{kind}");

        let (status, body) = h.call(Method::POST, "/v1/chat/completions", None, Some(chat(true))).await;
        assert_eq!(status, StatusCode::OK, "{kind}: {body}");
        let content = chat_content(&body);
        assert_eq!(serde_json::from_str::<Value>(&content).ok(), Some(city.clone()), "{kind}: {content}");

        let (status, body) = h.call(Method::POST, "/v1/responses", None, Some(responses(false))).await;
        assert_eq!(status, StatusCode::OK, "{kind}: {body}");
        assert_eq!(body["text"]["format"], responses_format(), "{kind}: the format is echoed");
        let output = body["output"].as_array().unwrap();
        assert_eq!(output.len(), 1, "{kind}: one message, the JSON: {body}");
        let text = output[0]["content"][0]["text"].as_str().unwrap();
        assert_eq!(serde_json::from_str::<Value>(text).unwrap(), city, "{kind}: {text}");

        let (status, body) = h.call(Method::POST, "/v1/responses", None, Some(responses(true))).await;
        assert_eq!(status, StatusCode::OK, "{kind}: {body}");
        let (text, response) = responses_stream(&body);
        assert_eq!(serde_json::from_str::<Value>(&text).ok(), Some(city.clone()), "{kind}: {text}");
        assert_eq!(response["status"], "completed", "{kind}: {response}");
        assert_eq!(response["text"]["format"], responses_format(), "{kind}");
        assert_eq!(response["output"].as_array().map(Vec::len), Some(1), "{kind}: {response}");

        // Each turn asked natively on every step, and its tool ran before the answer.
        let requests = h.fake.requests();
        assert_eq!(requests.len(), 8, "{kind}");
        for (i, request) in requests.iter().enumerate() {
            assert_eq!(asked(kind, &request.body), expected_ask(kind, &request.body), "{kind}: request {i}");
            if i % 2 == 1 {
                assert!(
                    request.body.to_string().contains("notes.md"),
                    "{kind}: the tool's result was sent back"
                );
            }
        }
    }
}

#[tokio::test]
async fn an_invalid_answer_is_repaired_and_a_second_is_the_routes_mapped_error() {
    let invalid = r#"{"city": "Paris", "population": "many"}"#;
    let valid = r#"{"city": "Paris", "population": 1}"#;
    // Repaired: the second answer is the client's.
    let h = Harness::new(Script::new(vec![Turn::text(invalid), Turn::text(valid)])).await;
    let chat = |stream: bool| {
        json!({"model": "tackle-agent", "stream": stream, "messages": [{"role": "user", "content": "city?"}],
            "response_format": chat_format()})
    };
    let (status, body) = h.call(Method::POST, "/v1/chat/completions", None, Some(chat(false))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], r#"{"city":"Paris","population":1}"#);
    let requests = h.fake.requests();
    assert!(requests[1].body.to_string().contains("/population"), "the repair carries the validation error");

    // Invalid twice: the failure's own status and code, in OpenAI's shape.
    let twice = || (0..4).flat_map(|_| [Turn::text(invalid), Turn::text("[]")]).collect();
    let h = Harness::new(Script::new(twice())).await;
    let (status, body) = h.call(Method::POST, "/v1/chat/completions", None, Some(chat(false))).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert_eq!(
        (body["error"]["code"].as_str(), body["error"]["type"].as_str()),
        (Some("output_invalid"), Some("server_error"))
    );
    // Streaming: an error chunk with the code, and no content but the empty first delta.
    let (status, body) = h.call(Method::POST, "/v1/chat/completions", None, Some(chat(true))).await;
    assert_eq!(status, StatusCode::OK, "a stream has answered before the turn fails");
    assert_eq!(chat_content(&body), "", "nothing invalid was streamed");
    let chunks = parse_sse(body.as_str().unwrap());
    let error = chunks.iter().find(|c| c.data.get("error").is_some()).expect("an error chunk");
    assert_eq!(error.data["error"]["code"], "output_invalid", "{:?}", error.data);

    let responses = |stream: bool| json!({"model": "tackle-agent", "stream": stream, "input": "city?", "text": {"format": responses_format()}});
    let (status, body) = h.call(Method::POST, "/v1/responses", None, Some(responses(false))).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert_eq!(body["error"]["code"], "output_invalid", "{body}");
    // Streaming: `response.failed`, its error in the Responses API's own codes.
    let (status, body) = h.call(Method::POST, "/v1/responses", None, Some(responses(true))).await;
    assert_eq!(status, StatusCode::OK);
    let (text, response) = responses_stream(&body);
    assert_eq!(text, "", "nothing invalid was streamed");
    assert_eq!(response["status"], "failed", "{response}");
    assert_eq!(response["error"]["code"], "server_error", "{response}");
    assert!(response["error"]["message"].as_str().unwrap().contains("output schema \"city\""), "{response}");
    assert_eq!(response["output"], json!([]), "{response}");
}

#[tokio::test]
async fn json_object_is_any_object_and_text_is_free_text() {
    let h =
        Harness::new(Script::new(vec![Turn::text("[1]"), Turn::text(r#"{"a": 1}"#), Turn::text("Plain.")]))
            .await;
    let ask = |format: Value| json!({"model": "tackle-agent", "messages": [{"role": "user", "content": "x"}], "response_format": format});
    let (status, body) =
        h.call(Method::POST, "/v1/chat/completions", None, Some(ask(json!({"type": "json_object"})))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], r#"{"a":1}"#, "an array is repaired to an object");
    let (status, body) =
        h.call(Method::POST, "/v1/chat/completions", None, Some(ask(json!({"type": "text"})))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "Plain.");
    let requests = h.fake.requests();
    assert_eq!(requests[0].body["response_format"]["json_schema"]["schema"], json!({"type": "object"}));
    assert!(requests[2].body.get("response_format").is_none(), "{}", requests[2].body);
}

#[tokio::test]
async fn a_bad_schema_is_a_400_naming_the_field_before_any_model_request_or_session() {
    let h = Harness::new(Script::new(vec![Turn::text("never")])).await;
    let user = json!([{"role": "user", "content": "x"}]);
    let chat = |format: Value| json!({"model": "tackle-agent", "messages": user, "response_format": format});
    let responses =
        |format: Value| json!({"model": "tackle-agent", "input": "x", "text": {"format": format}});
    for (path, body, param) in [
        (
            "/v1/chat/completions",
            chat(
                json!({"type": "json_schema", "json_schema": {"name": "city", "schema": {"type": "objekt"}}}),
            ),
            "response_format.json_schema.schema",
        ),
        (
            "/v1/chat/completions",
            chat(json!({"type": "json_schema", "json_schema": {"name": "city", "schema": []}})),
            "response_format.json_schema.schema",
        ),
        (
            "/v1/chat/completions",
            chat(json!({"type": "json_schema", "json_schema": {"name": "city"}})),
            "response_format.json_schema.schema",
        ),
        (
            "/v1/chat/completions",
            chat(json!({"type": "json_schema", "json_schema": {"name": "a city", "schema": city_schema()}})),
            "response_format.json_schema.name",
        ),
        ("/v1/chat/completions", chat(json!({"type": "yaml"})), "response_format"),
        (
            "/v1/responses",
            responses(json!({"type": "json_schema", "name": "city", "schema": {"type": "objekt"}})),
            "text.format.schema",
        ),
        ("/v1/responses", responses(json!({"type": "json_schema", "name": "city"})), "text.format.schema"),
    ] {
        let (status, error) = h.call(Method::POST, path, None, Some(body.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {error}");
        assert_eq!(error["error"]["type"], "invalid_request_error", "{error}");
        assert!(error["error"]["param"].as_str().unwrap().starts_with(param), "{body}: {error}");
    }
    assert_eq!(h.fake.requests().len(), 0, "no model request");
    let (_, sessions) = h.call(Method::GET, "/v1/sessions", None, None).await;
    assert_eq!(sessions["sessions"], json!([]), "no session written");
    // The document describes both fields.
    let (_, doc) = h.call(Method::GET, "/openapi.json", None, None).await;
    let schemas = &doc["components"]["schemas"];
    let chat = &schemas["ChatRequest"]["properties"]["response_format"]["oneOf"][2];
    assert_eq!(chat["properties"]["json_schema"]["required"], json!(["name", "schema"]), "{chat}");
    let text = &schemas["ResponsesRequest"]["properties"]["text"]["oneOf"][1]["properties"]["format"];
    assert_eq!(text["oneOf"][2]["required"], json!(["type", "name", "schema"]), "{text}");
}

#[tokio::test]
async fn the_gateway_forwards_the_format_natively() {
    let city = r#"{"city": "Oslo", "population": 1}"#;
    let chat = json!({"model": "model-x", "messages": [{"role": "user", "content": "x"}], "response_format": chat_format()});
    let h = Harness::new(Script::new(vec![Turn::text(city)])).await;
    let (status, body) = h.call(Method::POST, "/v1/chat/completions", None, Some(chat.clone())).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], city);
    assert_eq!(h.fake.requests()[0].body["response_format"], chat_format());

    let h = Harness::with_provider(
        Script::new(vec![Turn::text(city)]),
        Vec::new(),
        ProviderKind::OpenaiResponses,
    )
    .await;
    let request = json!({"model": "model-x", "input": "x", "text": {"format": responses_format()}});
    let (status, body) = h.call(Method::POST, "/v1/responses", None, Some(request)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["text"]["format"], responses_format(), "echoed");
    assert_eq!(body["output"][0]["content"][0]["text"], city);
    assert_eq!(h.fake.requests()[0].body["text"], json!({"format": responses_format()}));

    // Codex models answer in free text: refused by name too.
    let codex = json!({"model": "codex/gpt-5", "messages": [{"role": "user", "content": "x"}], "response_format": chat_format()});
    let (status, error) = h.call(Method::POST, "/v1/chat/completions", None, Some(codex)).await;
    assert_eq!(
        (status, &error["error"]["param"]),
        (StatusCode::BAD_REQUEST, &json!("response_format")),
        "{error}"
    );
    let codex = json!({"model": "codex/gpt-5", "input": "x", "text": {"format": responses_format()}});
    let (status, error) = h.call(Method::POST, "/v1/responses", None, Some(codex)).await;
    assert_eq!(
        (status, &error["error"]["param"]),
        (StatusCode::BAD_REQUEST, &json!("text.format")),
        "{error}"
    );

    // A provider that cannot constrain its answer: refused by name, not forwarded without it.
    let h = Harness::with_provider(Script::new(vec![Turn::text(city)]), Vec::new(), ProviderKind::Anthropic)
        .await;
    let (status, error) = h.call(Method::POST, "/v1/chat/completions", None, Some(chat)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(error["error"]["param"], "response_format", "{error}");
    assert!(h.fake.requests().is_empty());
}

/// Gateway mode is a pass-through: the provider receives exactly the client's `response_format`
/// / `text.format`, its `strict` as sent (or none), its `description`, and `json_object` as
/// `json_object`, never a schema Tackle derived from it.
#[tokio::test]
async fn the_gateway_forwards_the_clients_format_byte_for_byte() {
    let city = r#"{"city": "Oslo", "population": 1}"#;
    let described = |strict: Option<bool>| {
        let mut f =
            json!({"name": "city", "description": "A city and its population.", "schema": city_schema()});
        if let Some(strict) = strict {
            f["strict"] = json!(strict);
        }
        f
    };
    // The schema fits the strict subset, so a derived `strict` would be `true`.
    let formats = [
        described(Some(false)),
        described(Some(true)),
        described(None),
        json!({"name": "city", "schema": city_schema()}),
    ];
    let mut chat_formats: Vec<Value> =
        formats.iter().map(|f| json!({"type": "json_schema", "json_schema": f})).collect();
    chat_formats.push(json!({"type": "json_object"}));
    let mut text_formats: Vec<Value> = formats
        .iter()
        .map(|f| {
            let mut t = json!({"type": "json_schema"});
            t.as_object_mut().unwrap().extend(f.as_object().unwrap().clone());
            t
        })
        .collect();
    text_formats.push(json!({"type": "json_object"}));

    let turns = || Script::new((0..10).map(|_| Turn::text(city)).collect());
    let h = Harness::new(turns()).await;
    for (i, format) in chat_formats.iter().enumerate() {
        for stream in [false, true] {
            let chat = json!({"model": "model-x", "stream": stream, "messages": [{"role": "user", "content": "x"}], "response_format": format});
            let (status, body) = h.call(Method::POST, "/v1/chat/completions", None, Some(chat)).await;
            assert_eq!(status, StatusCode::OK, "{format}: {body}");
            let sent = &h.fake.requests()[2 * i + usize::from(stream)].body;
            assert_eq!(
                sent["response_format"].to_string(),
                format.to_string(),
                "{format}: the bytes as sent"
            );
        }
    }

    let h = Harness::with_provider(turns(), Vec::new(), ProviderKind::OpenaiResponses).await;
    for (i, format) in text_formats.iter().enumerate() {
        for stream in [false, true] {
            let request =
                json!({"model": "model-x", "stream": stream, "input": "x", "text": {"format": format}});
            let (status, body) = h.call(Method::POST, "/v1/responses", None, Some(request)).await;
            assert_eq!(status, StatusCode::OK, "{format}: {body}");
            let sent = &h.fake.requests()[2 * i + usize::from(stream)].body;
            assert_eq!(sent["text"]["format"].to_string(), format.to_string(), "{format}: the bytes as sent");
        }
    }
}

/// The official SDK's own structured-output helpers (`chat.completions.parse` with a Pydantic
/// model, `responses.parse` with `text_format`, and the chat stream helper) read agent mode's
/// answers as their model.
#[tokio::test]
async fn the_official_sdks_parse_helpers_read_agent_modes_answers() {
    let Some(python) = peers::or_skip(peers::venv_python("openai")) else { return };
    let answer = r#"{"city": "Paris", "population": 2102650}"#;
    let turns = (0..3).flat_map(|_| [tool_step(), Turn::text(answer)]).collect();
    let h = Harness::with(Script::new(turns), tokens()).await;
    let base = h.listen().await;
    let seen = run_peer_script(&python, "openai_parse.py", &base).await;
    let city = json!({"city": "Paris", "population": 2102650});
    assert_eq!(seen, json!({"chat_parse": city, "chat_stream": city, "responses_parse": city}));
    // The SDK's schema reached the provider natively, strict.
    let format = &h.fake.requests()[0].body["response_format"];
    assert_eq!(
        (format["type"].as_str(), format["json_schema"]["strict"].as_bool()),
        (Some("json_schema"), Some(true))
    );
}

/// A structured answer is sent whole at the end, so a turn says nothing for a while: the stream
/// carries SSE heartbeat comments meanwhile (which SDKs skip), and the content still parses.
#[tokio::test]
async fn a_silent_structured_turn_streams_heartbeats_until_the_json() {
    let answer = r#"{"city": "Oslo", "population": 1}"#;
    let h = Harness::new(Script::new(vec![Turn::text(answer), Turn::text(answer)])).await;
    let slow = || tackle_testkit::Fault::Latency { ms: 700 };
    let chat = json!({"model": "tackle-agent", "stream": true, "messages": [{"role": "user", "content": "city?"}],
        "response_format": chat_format()});
    let responses = json!({"model": "tackle-agent", "stream": true, "input": "city?", "text": {"format": responses_format()}});
    for (path, body) in [("/v1/chat/completions", chat), ("/v1/responses", responses)] {
        h.fake.push_fault(slow());
        let (status, bytes) = h.call_raw(Method::POST, path, None, Some(body.to_string())).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        let text = String::from_utf8(bytes).unwrap();
        let beat = text.find(": heartbeat").unwrap_or_else(|| panic!("{path}: no heartbeat in {text}"));
        let json = text.find("Oslo").unwrap();
        assert!(beat < json, "{path}: the heartbeats come while the turn is silent: {text}");
        let streamed = match path {
            "/v1/responses" => responses_stream(&Value::String(text.clone())).0,
            _ => chat_content(&Value::String(text.clone())),
        };
        assert_eq!(
            serde_json::from_str::<Value>(&streamed).unwrap(),
            json!({"city": "Oslo", "population": 1})
        );
    }
}

//! `POST /v1/responses`: gateway and agent modes, streaming and not, `previous_response_id`
//! across requests and users, through the router against the validating fake; and real clients
//! (the `openai` Python SDK's `client.responses.create`, the OpenAI Agents SDK's default model
//! class) over a socket.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{ALICE, BOB, Harness, missing_peer, parse_sse, run_peer_script, tokens, venv_python};
use serde_json::{Value, json};
use tackle_provider::ProviderKind;
use tackle_testkit::{Script, Turn};

fn tools() -> Value {
    json!([
        {"type": "function", "name": "get_weather", "description": "Weather of a city", "strict": true,
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}},
        {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}
    ])
}

async fn post(h: &Harness, token: Option<&str>, body: Value) -> (StatusCode, Value) {
    h.call(Method::POST, "/v1/responses", token, Some(body)).await
}

/// The events of a streamed response: their types in order (each named after its type, with
/// sequence numbers from 0), and the final response object.
fn events(body: &Value) -> (Vec<String>, Value) {
    let events = parse_sse(body.as_str().expect("an SSE body"));
    let mut types = Vec::new();
    for (n, e) in events.iter().enumerate() {
        assert_eq!(e.event, e.data["type"].as_str().unwrap(), "{e:?}");
        assert_eq!(e.data["sequence_number"], n, "{e:?}");
        types.push(e.event.clone());
    }
    (types, events.last().unwrap().data["response"].clone())
}

fn streamed_text(body: &Value) -> String {
    parse_sse(body.as_str().unwrap())
        .iter()
        .filter(|e| e.event == "response.output_text.delta")
        .map(|e| e.data["delta"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn gateway_tool_round_continues_from_a_previous_response() {
    let script = Script::new(vec![
        Turn::call("get_weather", r#"{"city":"Oslo"}"#),
        Turn::text("Rainy in Oslo, 8 degrees."),
    ]);
    let h = Harness::new(script).await;
    let (status, first) = post(
        &h,
        None,
        json!({"model": "model-x", "input": "Weather in Oslo?", "instructions": "Be brief.", "tools": tools(),
               "tool_choice": {"type": "function", "name": "get_weather"}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!((first["object"].as_str(), first["status"].as_str()), (Some("response"), Some("completed")));
    let call = &first["output"][0];
    assert_eq!((call["type"].as_str(), call["name"].as_str()), (Some("function_call"), Some("get_weather")));
    assert_eq!(call["arguments"], r#"{"city":"Oslo"}"#);
    assert!(first["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(first["tools"], tools(), "the request's tools are echoed");
    assert!(first["usage"]["input_tokens_details"]["cached_tokens"].is_u64());

    // The client runs the tool and sends only the output, naming the response it continues (and,
    // as instructions are not carried over, sending them again); the tools come in another order
    // and the answer streams.
    let mut reversed = tools();
    reversed.as_array_mut().unwrap().reverse();
    let (status, body) = post(
        &h,
        None,
        json!({"model": "model-x", "previous_response_id": first["id"], "stream": true, "tools": reversed, "instructions": "Be brief.",
               "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "rain, 8 C"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (types, done) = events(&body);
    assert_eq!(
        types,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed"
        ]
    );
    assert_eq!(streamed_text(&body), "Rainy in Oslo, 8 degrees.");
    assert_eq!(done["output"][0]["content"][0]["text"], "Rainy in Oslo, 8 degrees.");
    assert_eq!(done["previous_response_id"], first["id"]);

    let requests = h.fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["tools"], requests[1].body["tools"], "tool order is frozen");
    assert_eq!(requests[0].body["prompt_cache_key"], requests[1].body["prompt_cache_key"]);
    // The stored conversation was restored (the fake checks the call has its result).
    let messages = requests[1].body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert_eq!(requests[0].body["messages"][0], json!({"role": "system", "content": "Be brief."}));
}

#[tokio::test]
async fn previous_responses_belong_to_their_user_and_to_what_was_stored() {
    let script = Script::new(vec![Turn::text("one"), Turn::text("two"), Turn::text("three")]);
    let h = Harness::with(script, tokens()).await;
    let (status, first) = post(&h, Some(ALICE), json!({"model": "model-x", "input": "hi"})).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    // Bob cannot continue (or learn about) Alice's response.
    let (status, error) = post(
        &h,
        Some(BOB),
        json!({"model": "model-x", "input": "more", "previous_response_id": first["id"]}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{error}");
    assert_eq!(error["error"]["param"], "previous_response_id");
    assert_eq!(error["error"]["type"], "invalid_request_error");
    // store: false leaves nothing to continue from.
    let (status, unstored) =
        post(&h, Some(ALICE), json!({"model": "model-x", "input": "x", "store": false})).await;
    assert_eq!((status, &unstored["store"]), (StatusCode::OK, &json!(false)));
    let (status, _) = post(
        &h,
        Some(ALICE),
        json!({"model": "model-x", "input": "y", "previous_response_id": unstored["id"]}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, error) =
        h.call(Method::POST, "/v1/responses", None, Some(json!({"model": "m", "input": "x"}))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(error["error"]["type"], "authentication_error", "{error}");
    assert_eq!(h.fake.requests().len(), 2, "refused requests reach no model");
}

#[tokio::test]
async fn errors_name_the_field_in_openai_shape() {
    let h = Harness::new(Script::new(vec![])).await;
    for (body, param) in [
        (json!({"model": "m", "input": []}), "input"),
        (
            json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}),
            "input[0].content[0]",
        ),
        (json!({"model": "m", "input": "x", "tools": [{"type": "web_search"}]}), "tools[0].type"),
        (
            json!({"model": "m", "input": "x", "tools": [{"type": "function", "name": "a b"}]}),
            "tools[0].name",
        ),
        (
            json!({"model": "m", "input": "x", "tools": tools(), "tool_choice": {"type": "function", "name": "nope"}}),
            "tool_choice",
        ),
        (
            json!({"model": "m", "input": [{"role": "user", "content": "x"}, {"type": "function_call_output", "call_id": "c1", "output": "o"}]}),
            "input[1]",
        ),
        (
            json!({"model": "tackle-agent", "input": [{"type": "function_call", "call_id": "c", "name": "a", "arguments": "{}"}]}),
            "input[0].type",
        ),
        (json!({"model": "m", "input": 7}), "input"),
    ] {
        let (status, error) = post(&h, None, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {error}");
        assert_eq!(error["error"]["type"], "invalid_request_error");
        assert_eq!(error["error"]["param"], param, "{body}: {error}");
    }
    let (status, _) = post(&h, None, json!({"input": "x"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "model is required");
    // The gateway forwards only offered models (the provider's and `[server] models`).
    let (status, error) = post(&h, None, json!({"model": "m", "input": "x"})).await;
    assert_eq!((status, &error["error"]["param"]), (StatusCode::BAD_REQUEST, &json!("model")), "{error}");
    // A provider failure is a 502 in the same shape (the fake has no turns left).
    let (status, error) = post(&h, None, json!({"model": "model-y", "input": "x"})).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{error}");
    assert_eq!(error["error"]["type"], "server_error");
    let (_, doc) = h.call(Method::GET, "/openapi.json", None, None).await;
    assert!(doc["paths"]["/v1/responses"]["post"].is_object(), "documented in the OpenAPI document");
}

/// Every form of `tool_choice` the route accepts comes back in the response as the client spelled
/// it, key order included; a malformed one is a 400 naming `tool_choice`, before any model call.
#[tokio::test]
async fn tool_choice_is_echoed_as_sent_and_a_bad_one_is_named() {
    let accepted = [
        json!("auto"),
        json!("none"),
        json!("required"),
        json!({"type": "function", "name": "get_time"}),
        json!({"type": "allowed_tools", "mode": "required", "tools": [
            {"type": "function", "name": "get_weather"}, {"type": "function", "name": "get_time"}]}),
        json!({"type": "allowed_tools", "mode": "auto", "tools": [{"name": "get_time"}]}),
        // Chat Completions' spellings, which the route has always taken too.
        json!({"type": "function", "function": {"name": "get_time"}}),
        json!({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [
            {"type": "function", "function": {"name": "get_time"}}]}}),
    ];
    let h = Harness::new(Script::new((0..=accepted.len()).map(|_| Turn::text("ok")).collect())).await;
    for choice in &accepted {
        let body = json!({"model": "model-x", "input": "x", "tools": tools(), "tool_choice": choice});
        let (status, response) = post(&h, None, body).await;
        assert_eq!(status, StatusCode::OK, "{choice}: {response}");
        assert_eq!(response["tool_choice"].to_string(), choice.to_string(), "echoed byte for byte");
    }
    let (_, response) = post(&h, None, json!({"model": "model-x", "input": "x", "temperature": 0.7})).await;
    assert_eq!(response["tool_choice"], "auto", "absent: the API's default");
    // The echo has always written the request's f32 widened; its bytes are unchanged.
    assert_eq!(response["temperature"].to_string(), "0.699999988079071");
    // The document allows exactly these forms on both routes ([api-contract]).
    let (_, doc) = h.call(Method::GET, "/openapi.json", None, None).await;
    let documented: Vec<jsonschema::Validator> = ["ChatRequest", "ResponsesRequest"]
        .iter()
        .map(|r| {
            let schema = &doc["components"]["schemas"][r]["properties"]["tool_choice"];
            jsonschema::validator_for(schema).unwrap_or_else(|e| panic!("{r}'s tool_choice compiles: {e}"))
        })
        .collect();
    for choice in &accepted {
        for schema in &documented {
            let errors: Vec<String> = schema.iter_errors(choice).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{choice} is accepted, so documented: {errors:?}");
        }
    }
    let requests = h.fake.requests().len();
    for (choice, param) in [
        (json!("sometimes"), "tool_choice"),
        (json!(5), "tool_choice"),
        (json!([]), "tool_choice"),
        (json!({"type": "function"}), "tool_choice.name"),
        (json!({"type": "function", "name": 5}), "tool_choice"),
        (json!({"type": "allowed_tools", "mode": "sometimes", "tools": []}), "tool_choice"),
        (json!({"type": "allowed_tools", "mode": "none", "tools": []}), "tool_choice"),
        (
            json!({"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "nope"}]}),
            "tool_choice",
        ),
        (json!({"type": "mcp"}), "tool_choice.server_label"),
        (json!({"type": "file_search"}), "tool_choice"),
        (json!({"type": "somewhere"}), "tool_choice"),
        (json!({"name": "get_time"}), "tool_choice"),
    ] {
        // A name missing from `tools` is refused by the route, not by the document's shapes.
        let unknown_name = choice.to_string().contains("nope");
        for schema in &documented {
            assert_eq!(schema.is_valid(&choice), unknown_name, "{choice}: the document refuses its shape");
        }
        let body = json!({"model": "model-x", "input": "x", "tools": tools(), "tool_choice": choice});
        let (status, error) = post(&h, None, body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{choice}: {error}");
        assert_eq!(error["error"]["type"], "invalid_request_error", "{choice}: {error}");
        assert_eq!(error["error"]["param"], param, "{choice}: {error}");
    }
    assert_eq!(h.fake.requests().len(), requests, "refused requests reach no model");
}

#[tokio::test]
async fn agent_mode_streams_and_continues_its_session() {
    let script = Script::new(vec![
        Turn::text("Looking.").with_call("list_files", r#"{"path":"."}"#),
        Turn::text("One file: notes.md."),
        Turn::text("Still notes.md."),
    ]);
    let h = Harness::with(script, tokens()).await;
    std::fs::write(h.workspace.path().join("notes.md"), "x").unwrap();
    let (status, body) =
        post(&h, Some(ALICE), json!({"model": "tackle-agent", "stream": true, "input": "what is here?"}))
            .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (types, done) = events(&body);
    assert_eq!(types.last().unwrap(), "response.completed");
    assert_eq!(streamed_text(&body), "Looking.One file: notes.md.");
    let texts: Vec<&str> = done["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["Looking.", "One file: notes.md."], "one message per step");
    assert!(done["usage"]["total_tokens"].is_u64());
    assert!(!types.iter().any(|t| t.contains("function_call")), "the agent's own tools stay inside");

    // Bob cannot continue Alice's agent session; Alice continues it with the next message only.
    let next = json!({"model": "tackle-agent", "previous_response_id": done["id"], "input": "and now?"});
    let (status, _) = post(&h, Some(BOB), next.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, second) = post(&h, Some(ALICE), next).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["output"][0]["content"][0]["text"], "Still notes.md.");
    let requests = h.fake.requests();
    assert_eq!(requests.len(), 3);
    let last = requests[2].body["messages"].to_string();
    assert!(
        last.contains("what is here?") && last.contains("notes.md") && last.contains("and now?"),
        "{last}"
    );
    let (_, sessions) = h.call(Method::GET, "/v1/sessions", Some(ALICE), None).await;
    assert_eq!(
        sessions["sessions"].as_array().map(Vec::len),
        Some(1),
        "the same session went on: {sessions}"
    );
}

/// Agent mode answers with one message item per step that said something, streaming or not.
#[tokio::test]
async fn agent_mode_answers_every_step_the_same_streaming_or_not() {
    let steps = || {
        [
            Turn::text("Looking.").with_call("list_files", r#"{"path":"."}"#),
            Turn::text("## Summary\nOne file."),
        ]
    };
    let h = Harness::new(Script::new(steps().into_iter().chain(steps()).collect())).await;
    let texts = |output: &Value| -> Vec<String> {
        output
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["content"][0]["text"].as_str().unwrap().to_owned())
            .collect()
    };
    let (status, whole) = post(&h, None, json!({"model": "tackle-agent", "input": "what is here?"})).await;
    assert_eq!(status, StatusCode::OK, "{whole}");
    let (status, body) =
        post(&h, None, json!({"model": "tackle-agent", "stream": true, "input": "what is here?"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, done) = events(&body);
    assert_eq!(texts(&whole["output"]), ["Looking.", "## Summary\nOne file."]);
    assert_eq!(texts(&done["output"]), texts(&whole["output"]));
}

/// With the Responses provider behind the gateway, the model's reasoning item reaches the client
/// verbatim, and comes back to the API unchanged whether the client resends it or names the
/// stored response (the fake rejects an altered one).
#[tokio::test]
async fn reasoning_passes_through_the_gateway_verbatim() {
    let script = Script::stateless(vec![
        Turn::call("get_weather", r#"{"city":"Oslo"}"#).with_reasoning("The weather tool answers this."),
        Turn::text("Rainy."),
    ]);
    let h = Harness::with_provider(script, Vec::new(), ProviderKind::OpenaiResponses).await;
    let (status, first) =
        post(&h, None, json!({"model": "model-x", "input": "Weather in Oslo?", "tools": tools()})).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let reasoning = first["output"][0].clone();
    assert_eq!(reasoning["type"], "reasoning");
    assert!(reasoning["encrypted_content"].as_str().unwrap().starts_with("enc1."), "{reasoning}");
    let call = first["output"][1].clone();
    // A stateless client (the Agents SDK, say) sends the whole output back.
    let output = json!({"type": "function_call_output", "call_id": call["call_id"], "output": "rain"});
    let (status, stateless) = post(
        &h,
        None,
        json!({"model": "model-x", "tools": tools(), "store": false,
               "input": [{"role": "user", "content": "Weather in Oslo?"}, reasoning, call, output]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{stateless}");
    let (status, stored) = post(
        &h,
        None,
        json!({"model": "model-x", "tools": tools(), "previous_response_id": first["id"], "input": [output]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{stored}");
    assert_eq!(stored["output"][0]["content"][0]["text"], "Rainy.");
    let requests = h.fake.requests();
    for r in &requests[1..] {
        let sent = r.body["input"].as_array().unwrap().iter().find(|i| i["type"] == "reasoning").unwrap();
        assert_eq!(sent, &reasoning, "the item goes back unchanged");
    }
}

#[tokio::test]
async fn the_openai_python_sdk_and_the_agents_sdk_use_the_endpoint() {
    let Some(python) = venv_python() else { return missing_peer("the openai and openai-agents Python SDKs") };
    let script = Script::new(vec![
        // client.responses.create: gateway, not streaming, then streaming after the tool ran.
        Turn::call("get_weather", r#"{"city":"Oslo"}"#),
        Turn::text("It rains in Oslo."),
        // ... streaming a tool call.
        Turn::call("get_weather", r#"{"city":"Bergen"}"#),
        // Agent mode, streaming and not.
        Turn::call("list_files", r#"{"path":"."}"#),
        Turn::text("The workspace has notes.md."),
        Turn::text("Still notes.md."),
        // The Agents SDK's tool loop.
        Turn::call("get_weather", r#"{"city":"Paris"}"#),
        Turn::text("Sunny in Paris, says the tool."),
    ]);
    let h = Harness::with(script, tokens()).await;
    std::fs::write(h.workspace.path().join("notes.md"), "x").unwrap();
    let base = h.listen().await;
    let seen = run_peer_script(&python, "openai_responses_sdk.py", &base).await;
    assert_eq!(
        seen["gateway_call"],
        json!({"name": "get_weather", "arguments": {"city": "Oslo"}, "status": "completed"})
    );
    assert_eq!(seen["gateway_stream"]["text"], "It rains in Oslo.");
    assert_eq!(seen["gateway_stream"]["final_text"], "It rains in Oslo.");
    assert!(seen["gateway_stream"]["usage"].is_u64(), "{seen}");
    assert_eq!(seen["gateway_stream_call"], json!({"name": "get_weather", "arguments": {"city": "Bergen"}}));
    assert_eq!(seen["agent_stream"], "The workspace has notes.md.");
    assert_eq!(seen["agent"], "Still notes.md.");
    assert_eq!(seen["agents_sdk"]["final_output"], "Sunny in Paris, says the tool.");
    assert_eq!(seen["agents_sdk"]["tool_calls"], json!([{"city": "Paris"}]));
    assert_eq!(seen["bad_request"], json!({"type": "BadRequestError", "status": 400}));
    assert_eq!(seen["not_found"], json!({"type": "NotFoundError", "status": 404}));
    // The Agents SDK sent the tool's result back as a function_call_output, which the fake saw
    // answer the call by id.
    let requests = h.fake.requests();
    let last = requests.last().unwrap().body["messages"].to_string();
    assert!(last.contains("sunny, 24 C") && last.contains("Paris"), "{last}");
}

/// The Vercel AI SDK's default OpenAI provider (Responses API, `store` true) names its earlier
/// output by `item_reference` from the second step of a tool loop on: `generateText` and
/// `streamText` both run their loops to the answer, and a reference is resolved only for the
/// user whose response made the item.
#[tokio::test]
async fn the_ai_sdk_runs_tool_loops_with_item_references() {
    use tackle_testkit::peers;
    let Some(node) = peers::or_skip(peers::node()) else { return };
    let Some(_) = peers::or_skip(peers::npm_package("@ai-sdk/openai")) else { return };
    let script = Script::new(vec![
        Turn::text("Let me check.").with_call("get_weather", r#"{"city":"Oslo"}"#),
        Turn::text("Rainy in Oslo."),
        Turn::text("Looking it up.").with_call("get_weather", r#"{"city":"Bergen"}"#),
        Turn::text("Rainy in Bergen."),
        Turn::text("Referenced."),
    ]);
    let h = Harness::with(script, tokens()).await;
    let base = h.listen().await;
    let out = tokio::process::Command::new(node)
        .arg(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/ai_sdk_responses.mjs"))
        .arg(&base)
        .arg(ALICE)
        .env("TACKLE_NODE_MODULES", peers::node_modules())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the AI SDK run failed:\n{stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["generate"], json!({"text": "Rainy in Oslo.", "steps": 2, "finish": "stop"}), "{seen}");
    assert_eq!(
        seen["stream"],
        json!({"text": "Looking it up.Rainy in Bergen.", "steps": 2, "finish": "stop", "errors": []}),
        "{seen}"
    );
    assert_eq!(seen["runs"], json!(["Oslo", "Bergen"]));
    let references = seen["references"].as_array().unwrap();
    assert_eq!(references.len(), 2, "the SDK named the text before each call by reference: {seen}");
    // What the model saw on the second step: the referenced text, then the call and its output.
    let second = h.fake.requests()[1].body["messages"].to_string();
    assert!(second.contains("Let me check.") && second.contains("rain, 8 C in Oslo"), "{second}");

    // The reference is Alice's: Bob gets a 404 naming the item, as for an unknown id; Alice's
    // own request resolves it.
    let input = json!([{"type": "message", "role": "user", "content": "Weather?"},
                       {"type": "item_reference", "id": references[0]}]);
    for (token, id) in [(BOB, references[0].clone()), (ALICE, json!("msg_unknown"))] {
        let mut input = input.clone();
        input[1]["id"] = id;
        let (status, body) = post(&h, Some(token), json!({"model": "model-x", "input": input})).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_eq!(body["error"]["param"], "input[1].id", "{body}");
    }
    let (status, body) = post(&h, Some(ALICE), json!({"model": "model-x", "input": input})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let last = h.fake.requests().last().unwrap().body["messages"].to_string();
    assert!(last.contains("Let me check."), "{last}");
}

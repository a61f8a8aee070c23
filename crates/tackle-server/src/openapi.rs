//! The OpenAPI 3.1 document, generated from the handlers and types (no build-time downloads),
//! then completed so it states every response the server can give: [`document`] adds the error
//! responses every operation shares and the shapes of the OpenAI-compatible request, and
//! [`document_for`] the values this server accepts (models, workspaces), so that what the
//! document allows is exactly what the server accepts.

use serde_json::{Value, json};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::AppState;
use crate::routes::openai::{chat as openai, responses};
use crate::routes::{approvals, elicitations, health, messages, metrics, results, rewind, sessions};

/// The API description served at `/openapi.json`.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tackle API",
        description = "Sessions, turns streamed as server-sent events, approvals, restoring offloaded outputs, \
                       and OpenAI-compatible chat completions and responses endpoints. Every `/v1` route needs `Authorization: Bearer <token>` \
                       when the server has tokens; resources of other users answer 404."
    ),
    paths(
        health::healthz, metrics::metrics,
        sessions::create, sessions::list, sessions::show, sessions::update, sessions::delete, sessions::tools, sessions::context,
        sessions::children,
        rewind::turns, rewind::rewind, rewind::fork,
        messages::send, messages::events, messages::cancel, messages::compact,
        approvals::list, approvals::decide,
        elicitations::list, elicitations::answer,
        results::read,
        openai::chat_completions, openai::models, responses::create,
    ),
    components(schemas(crate::ErrorBody, crate::ErrorDetail, tackle_protocol::AgentEvent)),
    modifiers(&BearerAuth),
    tags(
        (name = "sessions", description = "Conversations owned by the caller"),
        (name = "turns", description = "Sending messages, cancelling, compacting"),
        (name = "approvals", description = "Confirmations of tool calls"),
        (name = "elicitations", description = "Questions MCP servers ask the person behind a turn"),
        (name = "results", description = "Restoring tool outputs offloaded behind locators"),
        (name = "openai", description = "OpenAI-compatible endpoints"),
        (name = "health", description = "Probes"),
        (name = "operations", description = "Prometheus metrics for operators"),
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The document, the same for every server: every operation under `/v1` documents 400 (a bad
/// path, query or body), 401, 500, 404 when it takes ids and 413 when it takes a body, in the
/// error shape of its route.
pub fn document() -> Value {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    let mut doc = serde_json::to_value(doc).unwrap_or_else(|_| json!({}));
    if let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(Value::as_object_mut) {
        schemas.insert("OpenAiErrorBody".into(), openai_error_schema());
        schemas.insert(
            "AgentSseEvent".into(),
            sse_event_schema(json!({"$ref": "#/components/schemas/AgentEvent"})),
        );
        schemas.insert("ChatCompletionSseEvent".into(), sse_event_schema(json!({})));
        if let Some(chat) = schemas.get_mut("ChatRequest").and_then(|c| c.get_mut("properties")) {
            chat["messages"] = chat_messages_schema();
            chat["tools"] = chat_tools_schema();
            chat["tool_choice"] = tool_choice_schema();
            chat["response_format"] = response_format_schema(true);
        }
        if let Some(responses) = schemas.get_mut("ResponsesRequest").and_then(|c| c.get_mut("properties")) {
            responses["tool_choice"] = tool_choice_schema();
            responses["input"] = json!({
                "description": "The user's message as text, or input items (`message`, `function_call`, \
                    `function_call_output`, `reasoning`): each item has a `type`, or a `role` for a message",
                "oneOf": [
                    {"type": "string", "minLength": 1},
                    {"type": "array", "items": {
                        "type": "object",
                        "anyOf": [{"required": ["type"]}, {"required": ["role"]}],
                    }},
                ],
            });
            responses["text"] = json!({
                "description": "The answer's format (echoed in the response): with the agent model, a JSON \
                    format is the turn's output schema and the output message is only the validated JSON",
                "oneOf": [
                    {"type": "null"},
                    {"type": "object", "properties": {
                        "format": response_format_schema(false),
                        "verbosity": {"type": "string", "description": "Accepted and echoed; not applied"},
                    }},
                ],
            });
        }
    }
    // A `text/event-stream` schema describes one event (`data`, `event`, `id`), as OpenAPI 3.2's
    // `itemSchema` does.
    for (pointer, event) in [
        (
            "/paths/~1v1~1sessions~1{id}~1messages/post/responses/200/content/text~1event-stream",
            "AgentSseEvent",
        ),
        ("/paths/~1v1~1sessions~1{id}~1events/get/responses/200/content/text~1event-stream", "AgentSseEvent"),
        (
            "/paths/~1v1~1chat~1completions/post/responses/200/content/text~1event-stream",
            "ChatCompletionSseEvent",
        ),
    ] {
        if let Some(media) = doc.pointer_mut(pointer) {
            media["schema"] = json!({"$ref": format!("#/components/schemas/{event}")});
        }
    }
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for (path, item) in paths.iter_mut() {
            if !path.starts_with("/v1/") {
                continue;
            }
            let openai = crate::routes::openai::shared::OPENAI_ROUTES.contains(&path.as_str());
            let body = if openai { "OpenAiErrorBody" } else { "ErrorBody" };
            for operation in item.as_object_mut().into_iter().flat_map(|i| i.values_mut()) {
                let takes_ids = path.contains('{');
                let takes_body = operation.get("requestBody").is_some();
                let responses = &mut operation["responses"];
                let mut add = |status: &str, description: &str| {
                    if responses.get(status).is_none() {
                        responses[status] = json!({
                            "description": description,
                            "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{body}")}}},
                        });
                    }
                };
                add("400", "The path, query string or body is invalid; `field` names the part at fault");
                add("401", "Missing or unknown bearer token");
                add("500", "An internal failure (e.g. of the store)");
                if takes_ids {
                    add("404", "No such resource for this user");
                }
                if takes_body {
                    add("413", "The body is larger than the server's limit");
                }
            }
        }
    }
    doc
}

/// [`document`] with the values this server accepts: its provider, models and workspace
/// profiles as enums (a value outside them is a 400).
pub(crate) fn document_for(state: &AppState) -> Value {
    let mut doc = document();
    let agent = state.agent();
    let config = state.config();
    let mut session_models = vec![Value::from(agent.config().model.clone())];
    session_models.extend(config.models.iter().map(|m| Value::from(m.as_str())));
    session_models.dedup();
    let workspaces: Vec<Value> = config.workspaces.keys().map(|w| Value::from(w.as_str())).collect();
    let nullable =
        |values: Vec<Value>| json!({"enum": values.into_iter().chain([Value::Null]).collect::<Vec<_>>()});
    if let Some(create) = doc.pointer_mut("/components/schemas/CreateSession/properties") {
        create["model"] = nullable(session_models.clone());
        create["workspace"] = nullable(workspaces);
        create["provider"] = nullable(vec![Value::from(agent.provider().name())]);
    }
    // The permission modes this server's sessions can run (bypass only with an enforced
    // sandbox).
    let modes: Vec<Value> = agent.modes().into_iter().map(|m| Value::from(m.as_str())).collect();
    for schema in ["CreateSession", "UpdateSession"] {
        if let Some(props) = doc.pointer_mut(&format!("/components/schemas/{schema}/properties")) {
            props["mode"] = nullable(modes.clone());
        }
    }
    if !config.gateway_any_model {
        let mut models = vec![Value::from(config.agent_model.as_str())];
        models.extend(session_models);
        models.dedup();
        // Chat Completions also answers the Codex bridge's models; Responses does not.
        let mut chat_models = models.clone();
        chat_models
            .extend(crate::routes::openai::codex_bridge::model_ids(state).into_iter().map(Value::from));
        for (schema, models) in [("ChatRequest", chat_models), ("ResponsesRequest", models)] {
            if let Some(model) = doc.pointer_mut(&format!("/components/schemas/{schema}/properties/model")) {
                model["enum"] = Value::Array(models);
            }
        }
    }
    doc
}

/// One server-sent event whose `data` is JSON matching `data` (`{}`: any text, e.g. `[DONE]`).
fn sse_event_schema(data: Value) -> Value {
    let data = if data == json!({}) {
        json!({"type": "string"})
    } else {
        json!({"type": "string", "contentMediaType": "application/json", "contentSchema": data})
    };
    json!({
        "type": "object",
        "description": "One server-sent event",
        "required": ["data"],
        "properties": {"data": data, "event": {"type": "string"}, "id": {"type": "string"}, "retry": {"type": "integer"}},
    })
}

fn openai_error_schema() -> Value {
    json!({
        "type": "object",
        "description": "An error in OpenAI's shape",
        "required": ["error"],
        "properties": {"error": {
            "type": "object",
            "required": ["message", "type", "code"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string", "enum": ["invalid_request_error", "authentication_error", "rate_limit_error", "server_error"]},
                "param": {"type": ["string", "null"]},
                "code": {"type": "string"},
            },
        }},
    })
}

fn chat_messages_schema() -> Value {
    // One flat object rather than a `oneOf` per role: nested alternatives make schemathesis'
    // generator recurse deep enough to crash CPython 3.11's parser. What depends on the role is
    // stated here and checked by the server (400).
    json!({
        "type": "array",
        "minItems": 1,
        "description": "The conversation. The server also checks what depends on the role (400 otherwise): system, \
            developer and user messages need non-empty `content` (a string, or text parts each with text); an \
            assistant message needs `content` or `tool_calls`; a tool message needs `tool_call_id` and answers a \
            tool call of the assistant message before it; every tool call is answered; the agent model needs a \
            user message last.",
        "items": {
            "type": "object",
            "required": ["role"],
            "properties": {
                "role": {"enum": ["system", "developer", "user", "assistant", "tool"]},
                "content": {
                    "type": ["string", "array", "null"],
                    "items": {
                        "type": "object", "required": ["type", "text"],
                        "properties": {"type": {"const": "text"}, "text": {"type": "string"}},
                    },
                },
                "tool_calls": {"type": "array", "items": {
                    "type": "object", "required": ["id", "function"],
                    "properties": {
                        "id": {"type": "string"},
                        "function": {
                            "type": "object", "required": ["name"],
                            "properties": {"name": {"type": "string"}, "arguments": {"type": "string"}},
                        },
                    },
                }},
                "tool_call_id": {"type": ["string", "null"]},
            },
        },
    })
}

fn chat_tools_schema() -> Value {
    json!({
        "type": "array",
        "description": "Function tools the client runs itself; names are unique (400 otherwise).",
        "items": {
            "type": "object", "required": ["type", "function"],
            "properties": {
                "type": {"const": "function"},
                "function": {
                    "type": "object", "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"},
                        "description": {"type": "string"},
                        "parameters": {"type": ["object", "null"]},
                    },
                },
            },
        },
    })
}

/// Chat Completions' `response_format` (`nested`: the schema's fields under `json_schema`) or
/// Responses' `text.format` (flat). A schema that is not a valid JSON Schema object, or a name
/// outside the pattern, is a 400 naming the field.
fn response_format_schema(nested: bool) -> Value {
    let fields = json!({
        "name": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"},
        "description": {"type": "string"},
        "schema": {"type": "object", "description": "The JSON Schema the answer must match"},
        "strict": {"type": ["boolean", "null"]},
    });
    let json_schema = if nested {
        json!({
            "type": "object", "required": ["type", "json_schema"],
            "properties": {
                "type": {"const": "json_schema"},
                "json_schema": {"type": "object", "required": ["name", "schema"], "properties": fields},
            },
        })
    } else {
        let mut properties = fields;
        properties["type"] = json!({"const": "json_schema"});
        json!({"type": "object", "required": ["type", "name", "schema"], "properties": properties})
    };
    json!({
        "description": "`text` (the default), `json_object` (any JSON object) or `json_schema` (structured output). \
            Forwarded natively to a provider model; with the agent model, the agent's final answer must match it \
            (its tools still run first), validated and repaired once, else the turn fails `output_invalid` (502).",
        "oneOf": [
            {"type": "null"},
            {"type": "object", "required": ["type"], "properties": {"type": {"enum": ["text", "json_object"]}}},
            json_schema,
        ],
    })
}

/// `tool_choice` of both OpenAI-compatible routes, which take either API's spelling of a
/// function and of an allowed subset (`tackle_wire::chat::ToolChoiceObject`).
fn tool_choice_schema() -> Value {
    let name = json!({"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}});
    let mode = json!({"enum": ["auto", "required"]});
    let refs = json!({"type": "array", "items": tool_ref_schema()});
    json!({
        "description": "`auto`, `none`, `required`, a function, or an allowed subset, in the Chat Completions or \
            the Responses spelling; named tools must be in `tools` (400 otherwise).",
        "oneOf": [
            {"type": "null"},
            {"enum": ["auto", "none", "required"]},
            {
                "type": "object", "required": ["type", "function"],
                "properties": {"type": {"const": "function"}, "function": name},
            },
            {
                "type": "object", "required": ["type", "name"],
                "properties": {"type": {"const": "function"}, "name": {"type": "string"}},
                "not": {"required": ["function"]},
            },
            {
                "type": "object", "required": ["type", "allowed_tools"],
                "properties": {
                    "type": {"const": "allowed_tools"},
                    "allowed_tools": {
                        "type": "object", "required": ["mode", "tools"],
                        "properties": {"mode": mode, "tools": refs},
                    },
                },
            },
            {
                "type": "object", "required": ["type", "mode", "tools"],
                "properties": {"type": {"const": "allowed_tools"}, "mode": mode, "tools": refs},
                "not": {"required": ["allowed_tools"]},
            },
        ],
    })
}

/// A function in an allowed subset: `{"type": "function", "function": {"name"}}` or the
/// Responses spelling `{"type": "function", "name"}` (`type` may be left out).
fn tool_ref_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "type": {"const": "function"},
            "function": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
            "name": {"type": "string"},
        },
        "anyOf": [{"required": ["function"]}, {"required": ["name"]}],
    })
}

//! The OpenAPI 3.1 document, generated from the handlers and types (no build-time downloads).

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::{approvals, health, messages, metrics, openai, responses, results, sessions};

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
        messages::send, messages::cancel, messages::compact,
        approvals::list, approvals::decide,
        results::read,
        openai::chat_completions, openai::models, responses::create,
    ),
    components(schemas(crate::ErrorBody, crate::ErrorDetail, tackle_protocol::AgentEvent)),
    modifiers(&BearerAuth),
    tags(
        (name = "sessions", description = "Conversations owned by the caller"),
        (name = "turns", description = "Sending messages, cancelling, compacting"),
        (name = "approvals", description = "Confirmations of tool calls"),
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

/// The document as JSON.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    doc
}

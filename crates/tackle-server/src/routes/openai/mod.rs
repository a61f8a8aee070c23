//! The OpenAI-compatible surface: `POST /v1/chat/completions`, `GET /v1/models` and
//! `POST /v1/responses`, served with OpenAI's error shape ([`shared::OpenAiError`], a layer on
//! their router). One owner per file:
//!
//! - `chat.rs`: the `/v1/chat/completions` and `/v1/models` handlers (gateway and agent modes).
//! - `responses.rs`: the `/v1/responses` handler (the same two modes, `previous_response_id`,
//!   the documented event order) and its stored responses.
//! - `chat_wire.rs`: the Chat Completions wire (request types, conversion, whole and chunked
//!   answers); no routes. `chat.rs` and `codex_bridge.rs` speak it.
//! - `codex_bridge.rs`: models `codex/<model>` on both endpoints, run on Codex's app-server.
//! - `read.rs`: a client's JSON read into tackle-wire's request types, errors in OpenAI's
//!   wording naming the parameter.
//! - `shared.rs`: what the endpoints share: the error shape and [`shared::OPENAI_ROUTES`], the
//!   client's tools and tool choice as Tackle's, the gateway request, turns of Tackle's agent.

pub mod chat;
pub mod chat_wire;
pub mod codex_bridge;
mod read;
pub mod responses;
pub mod shared;

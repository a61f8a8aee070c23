//! Provider wire formats as typed serde structs, without IO.
//!
//! One module per wire format. The provider client encodes its requests and decodes its streams
//! with these types, and the testkit's fake model serves its answers and checks what it is sent
//! with the same ones, so a field is named once and a mistake in either shows as a type error or
//! a deserialization error that names the field. Field order is declaration order: it is the
//! byte order on the wire, which prompt caching depends on (`tackle-provider`'s snapshots pin it).
//!
//! - [`anthropic`]: Anthropic Messages (`POST /v1/messages`): request, stream events, errors.
//! - [`chat`]: OpenAI Chat Completions (`POST /v1/chat/completions`): request, stream chunks,
//!   whole completions, errors.
//! - [`responses`]: OpenAI Responses (`POST /v1/responses`): request, input items, tools, the
//!   response object, output items and stream events.
//!
//! ```
//! use tackle_wire::anthropic::{ContentBlock, Message, MessagesRequest, Role};
//! let request: MessagesRequest = serde_json::from_str(
//!     r#"{"model": "claude", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}"#,
//! ).unwrap();
//! assert_eq!(request.messages[0].role, Role::User);
//! assert!(matches!(&request.messages[0].content.blocks()[0], ContentBlock::Text { text, .. } if text == "hi"));
//! let _ = Message::default();
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

pub mod anthropic;
mod borrow;
pub mod chat;
mod choice;
pub mod responses;

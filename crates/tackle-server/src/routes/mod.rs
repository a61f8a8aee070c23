//! Request handlers, one module per resource; the OpenAI-compatible surface is the `openai`
//! folder.

pub mod approvals;
pub mod elicitations;
pub mod health;
pub mod messages;
pub mod metrics;
pub mod openai;
pub mod results;
pub mod rewind;
pub mod sessions;
pub mod web;

//! A scripted fake model server for Tackle's tests and benchmarks.
//!
//! [`FakeModel`] speaks OpenAI Chat Completions, Anthropic Messages and OpenAI Responses (SSE
//! and JSON) on one loopback port, plays a [`Script`] of [`Turn`]s, validates requests as
//! strictly as the real APIs, records every request, and injects [`Fault`]s.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod cache_sim;
mod examples;
mod fault;
mod script;
mod server;
mod validate;
mod wire;

pub use cache_sim::SimulatedCache;
pub use examples::{ExampleError, example_binary};
pub use fault::Fault;
pub use script::{LOOP_PLACEHOLDER, LOOP_STEPS_SUFFIX, Script, ScriptMode, ScriptedCall, Turn};
pub use server::{FakeModel, FakeStats, RecordedRequest, WireFormat};

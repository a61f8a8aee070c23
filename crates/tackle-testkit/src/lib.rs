//! A scripted fake model server for Tackle's tests and benchmarks.
//!
//! [`FakeModel`] speaks OpenAI Chat Completions, Anthropic Messages and OpenAI Responses (SSE
//! and JSON) on one loopback port, plays a [`Script`] of [`Turn`]s, validates requests as
//! strictly as the real APIs, records every request, and injects [`Fault`]s.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use tackle_testkit::{FakeModel, Script, Turn};
//! let fake = FakeModel::start(Script::new(vec![Turn::call("read_file", r#"{"path": "a.txt"}"#), Turn::text("done")]))
//!     .await
//!     .unwrap();
//! // Point any client at fake.base_url(); every request is recorded and validated.
//! assert!(fake.base_url().starts_with("http://127.0.0.1:"));
//! assert!(fake.requests().is_empty());
//! # });
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

pub mod bfcl;
mod cache_sim;
pub mod codex;
mod examples;
mod fault;
pub mod peers;
pub mod postgres;
mod script;
mod server;
mod test_files;
mod validate;
mod wire;

pub use cache_sim::SimulatedCache;
pub use examples::{ExampleError, example_binary};
pub use fault::Fault;
pub use script::{LOOP_PLACEHOLDER, LOOP_STEPS_SUFFIX, Script, ScriptMode, ScriptedCall, Turn};
pub use server::{FakeModel, FakeStats, RecordedRequest, WireFormat};
pub use test_files::undeclared_test_files;

//! tackle-server's integration tests, one module per file, built as one test binary: one link
//! instead of one per file, which kept the suite's build within the disk CI has (each binary links
//! every dependency statically). `cargo nextest run -p tackle-server -E 'test(/^MODULE::/)'` runs
//! one file's tests. A new `tests/*.rs` file must be listed here: `every_test_file_is_a_module`
//! fails until it is.

mod addons;
mod codex_bridge;
mod common;
mod examples;
mod failures;
mod metrics;
mod openai_compat;
mod openai_output;
mod output_schema;
mod responses_api;
mod rewind_api;
mod routes;
mod subagents_api;
mod web_chat;
mod web_subagents;

tackle_testkit::every_test_file_is_a_module!(include_str!("main.rs"));

//! tackle-cli's integration tests, one module per file, built as one test binary: one link instead
//! of one per file, which kept the suite's build within the disk CI has (each binary links every
//! dependency statically). `cargo nextest run -p tackle-cli -E 'test(/^MODULE::/)'` runs one file's
//! tests. A new `tests/*.rs` file must be listed here: `every_test_file_is_a_module` fails until it
//! is.

#[path = "common/telegram_emulator.rs"]
mod telegram_emulator;

mod cli;
mod codex;
mod conformance;
mod control;
mod instances;
mod mcp;
mod mcp_conformance;
mod mcp_serve;
mod output_schema;
mod repl_tmux;
mod responses;
mod security;
mod subagents;
mod telegram;
mod telegram_elicitation;
mod telemetry;
mod tool_search;

tackle_testkit::every_test_file_is_a_module!(include_str!("main.rs"));

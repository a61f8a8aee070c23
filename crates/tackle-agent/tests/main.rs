//! tackle-agent's integration tests, one module per file, built as one test binary: one link
//! instead of one per file, which kept the suite's build within the disk CI has (each binary links
//! every dependency statically). `cargo nextest run -p tackle-agent -E 'test(/^MODULE::/)'` runs
//! one file's tests. A new `tests/*.rs` file must be listed here: `every_test_file_is_a_module`
//! fails until it is.

mod agent_loop;
mod bfcl;
mod call_ids;
mod common;
mod compaction_props;
mod context;
mod deferral;
mod dynamic_tools;
mod examples;
mod full_output;
mod hooks;
mod modes;
mod output_schema;
mod rewind;
mod skills;
mod streaming;
mod subagents;
mod tool_sources;

tackle_testkit::every_test_file_is_a_module!(include_str!("main.rs"));

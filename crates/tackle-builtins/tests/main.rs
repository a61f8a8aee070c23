//! tackle-builtins's integration tests, one module per file, built as one test binary: one link
//! instead of one per file, which kept the suite's build within the disk CI has (each binary links
//! every dependency statically). `cargo nextest run -p tackle-builtins -E 'test(/^MODULE::/)'` runs
//! one file's tests. A new `tests/*.rs` file must be listed here: `every_test_file_is_a_module`
//! fails until it is.

mod common;
mod files;
mod jail;
mod shell;
mod web_fetch;

tackle_testkit::every_test_file_is_a_module!(include_str!("main.rs"));

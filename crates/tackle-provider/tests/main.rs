//! tackle-provider's integration tests, one module per file, built as one test binary: one link
//! instead of one per file, which kept the suite's build within the disk CI has (each binary links
//! every dependency statically). `cargo nextest run -p tackle-provider -E 'test(/^MODULE::/)'` runs
//! one file's tests. A new `tests/*.rs` file must be listed here: `every_test_file_is_a_module`
//! fails until it is.

mod decode;
mod encode;
mod fake_server;
mod retry;
mod whole;

tackle_testkit::every_test_file_is_a_module!(include_str!("main.rs"));

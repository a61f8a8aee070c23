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
mod subagents;
mod tool_sources;

/// A test file that is not declared above would never be built or run.
#[test]
fn every_test_file_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let declared = include_str!("main.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(module) = name.strip_suffix(".rs")
            && module != "main"
            && !declared.contains(&format!("\nmod {module};\n"))
        {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "add `mod NAME;` to tests/main.rs for {missing:?}");
}

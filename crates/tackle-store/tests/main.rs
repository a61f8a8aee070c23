//! tackle-store's integration tests, one module per file, built as one test binary: one link
//! instead of one per file, which kept the suite's build within the disk CI has (each binary links
//! every dependency statically). `cargo nextest run -p tackle-store -E 'test(/^MODULE::/)'` runs
//! one file's tests. A new `tests/*.rs` file must be listed here: `every_test_file_is_a_module`
//! fails until it is.

// First: its `both!` macro is used by the modules after it.
#[macro_use]
mod common;

mod channels;
mod store;

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

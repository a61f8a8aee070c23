//! read_file, write_file, edit_file and list_files in a temporary workspace.

use crate::common;

use serde_json::{Value, json};
use tackle_builtins::BuiltinConfig;
use tackle_protocol::ErrorCategory;

fn ws() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[tokio::test]
async fn write_then_read_with_offsets() {
    let dir = ws();
    let ex = common::executor(&BuiltinConfig::default());
    let content: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    let r =
        common::call(&ex, dir.path(), "write_file", json!({"path": "a/b/c.txt", "content": content})).await;
    assert_eq!(common::ok(&r), "created a/b/c.txt (71 bytes)");
    let r =
        common::call(&ex, dir.path(), "write_file", json!({"path": "a/b/c.txt", "content": content})).await;
    assert_eq!(common::ok(&r), "replaced a/b/c.txt (71 bytes; was 71 bytes)");
    let r = common::call(&ex, dir.path(), "read_file", json!({"path": "a/b/c.txt", "offset": 3, "limit": 2}))
        .await;
    assert_eq!(
        common::ok(&r),
        "     3\tline 3\n     4\tline 4\n[lines 3-4 of 10; read more with offset 5]\n"
    );
    let r = common::call(&ex, dir.path(), "read_file", json!({"path": "a/b/c.txt"})).await;
    assert!(common::ok(&r).ends_with("    10\tline 10\n[lines 1-10 of 10]\n"));
    let r = common::call(&ex, dir.path(), "read_file", json!({"path": "a/b/c.txt", "offset": 50})).await;
    assert!(common::err(&r).message.contains("past the end"));
    // No temporary files are left behind by atomic writes.
    let names: Vec<_> =
        std::fs::read_dir(dir.path().join("a/b")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 1);
}

#[tokio::test]
async fn read_file_refuses_binary_missing_and_huge_files() {
    let dir = ws();
    std::fs::write(dir.path().join("bin.dat"), [0u8, 1, 2, 3]).unwrap();
    std::fs::write(dir.path().join("big.txt"), "x\n".repeat(600)).unwrap();
    let config = BuiltinConfig { read_max_bytes: 1000, ..BuiltinConfig::default() };
    let ex = common::executor(&config);
    let r = common::call(&ex, dir.path(), "read_file", json!({"path": "bin.dat"})).await;
    assert!(common::err(&r).message.contains("binary"));
    let r = common::call(&ex, dir.path(), "read_file", json!({"path": "nope.txt"})).await;
    assert_eq!(common::err(&r).category, ErrorCategory::NotFound);
    assert!(common::err(&r).hint.as_deref().unwrap().contains("list_files"));
    let r = common::call(&ex, dir.path(), "read_file", json!({"path": "big.txt"})).await;
    assert!(common::err(&r).hint.as_deref().unwrap().contains("offset"));
    let r = common::call(&ex, dir.path(), "read_file", json!({"path": "big.txt", "offset": 599})).await;
    assert!(common::ok(&r).contains("[lines 599-600 of 600]"));
    let r = common::call(&ex, dir.path(), "read_file", json!({"path": "."})).await;
    assert!(common::err(&r).message.contains("directory"));
}

#[tokio::test]
async fn edit_file_requires_a_unique_exact_match() {
    let dir = ws();
    std::fs::write(dir.path().join("f.rs"), "fn a() {}\nfn b() {}\nfn a() {}\n").unwrap();
    let ex = common::executor(&BuiltinConfig::default());
    let r = common::call(
        &ex,
        dir.path(),
        "edit_file",
        json!({"path": "f.rs", "old_string": "fn a() {}", "new_string": "fn c() {}"}),
    )
    .await;
    let e = common::err(&r);
    assert_eq!(e.category, ErrorCategory::Conflict);
    assert!(e.message.contains("found 2 times") && e.hint.as_deref().unwrap().contains("replace_all"));
    let r = common::call(
        &ex,
        dir.path(),
        "edit_file",
        json!({"path": "f.rs", "old_string": "fn  b() {}", "new_string": "x"}),
    )
    .await;
    let e = common::err(&r);
    assert_eq!(e.category, ErrorCategory::NotFound);
    assert!(e.hint.as_deref().unwrap().contains("closest line is 2"), "{e:?}");
    insta::assert_json_snapshot!("edit_not_found_envelope", e);
    let r = common::call(
        &ex,
        dir.path(),
        "edit_file",
        json!({"path": "f.rs", "old_string": "fn b() {}", "new_string": "fn b() { 1 }"}),
    )
    .await;
    let out = common::ok(&r);
    assert!(out.starts_with("edited f.rs: 1 replacement\n--- a/f.rs\n+++ b/f.rs\n"), "{out}");
    assert!(out.contains("-fn b() {}\n+fn b() { 1 }\n"));
    let r = common::call(
        &ex,
        dir.path(),
        "edit_file",
        json!({"path": "f.rs", "old_string": "fn a() {}", "new_string": "fn z() {}", "replace_all": true}),
    )
    .await;
    assert!(common::ok(&r).starts_with("edited f.rs: 2 replacements"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.rs")).unwrap(),
        "fn z() {}\nfn b() { 1 }\nfn z() {}\n"
    );
    let r = common::call(
        &ex,
        dir.path(),
        "edit_file",
        json!({"path": "f.rs", "old_string": "x", "new_string": "x"}),
    )
    .await;
    assert_eq!(common::err(&r).category, ErrorCategory::InvalidArgs);
}

#[tokio::test]
async fn list_files_paginates_and_respects_gitignore() {
    let dir = ws();
    let root = dir.path();
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    for f in [
        "src/a.rs",
        "src/b.rs",
        "src/deep/c.rs",
        "README.md",
        "target/debug/x.rs",
        "build.log",
        ".hidden/h.rs",
    ] {
        let p = root.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "").unwrap();
    }
    let ex = common::executor(&BuiltinConfig::default());
    let list = |v: &str| -> Value { serde_json::from_str(v).unwrap() };
    let r = common::call(&ex, root, "list_files", json!({})).await;
    let v = list(common::ok(&r));
    assert_eq!(
        v["entries"],
        json!(["README.md", "src/", "src/a.rs", "src/b.rs", "src/deep/", "src/deep/c.rs"])
    );
    assert_eq!((v["total_count"].as_u64(), v["has_more"].as_bool()), (Some(6), Some(false)));
    let r =
        common::call(&ex, root, "list_files", json!({"pattern": "**/*.rs", "offset": 1, "limit": 1})).await;
    let v = list(common::ok(&r));
    assert_eq!(v["entries"], json!(["src/b.rs"]));
    assert_eq!((v["total_count"].as_u64(), v["has_more"].as_bool()), (Some(3), Some(true)));
    let r = common::call(&ex, root, "list_files", json!({"path": "src", "pattern": "*.rs"})).await;
    assert_eq!(list(common::ok(&r))["entries"], json!(["a.rs", "b.rs"]), "* does not cross directories");
    let r =
        common::call(&ex, root, "list_files", json!({"include_hidden": true, "pattern": "**/h.rs"})).await;
    assert_eq!(list(common::ok(&r))["entries"], json!([".hidden/h.rs"]));
    let r = common::call(&ex, root, "list_files", json!({"pattern": "[unclosed"})).await;
    assert_eq!(common::err(&r).category, ErrorCategory::InvalidArgs);
}

#[test]
fn every_builtin_follows_the_tool_rules() {
    for tool in tackle_builtins::builtin_tools(&BuiltinConfig::default()) {
        let problems = tackle_tools::lint::lint_tool(tool.spec());
        assert!(problems.is_empty(), "{}: {problems:#?}", tool.spec().name);
    }
    let names: Vec<String> = tackle_builtins::builtin_tools(&BuiltinConfig::default())
        .iter()
        .map(|t| t.spec().name.clone())
        .collect();
    assert_eq!(names, ["shell", "read_file", "write_file", "edit_file", "list_files", "web_fetch"]);
}

#[test]
fn descriptions_snapshot() {
    let tools = tackle_builtins::builtin_tools(&BuiltinConfig::default());
    insta::assert_snapshot!("read_file_description", tools[1].spec().description);
}

//! Jail escapes: every attempt to leave the workspace is refused.

use crate::common;

use std::os::unix::fs::symlink;

use serde_json::json;
use tackle_builtins::{BuiltinConfig, WorkspaceJail};
use tackle_protocol::ErrorCategory;

fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let base = tempfile::tempdir().unwrap();
    let ws = base.path().join("ws");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::create_dir_all(base.path().join("ws-evil")).unwrap();
    std::fs::write(base.path().join("secret.txt"), "top secret").unwrap();
    std::fs::write(ws.join("ok.txt"), "fine").unwrap();
    symlink(base.path().join("secret.txt"), ws.join("link_file")).unwrap();
    symlink(base.path(), ws.join("link_dir")).unwrap();
    symlink(ws.join("link_dir"), ws.join("chain")).unwrap();
    symlink(base.path().join("does-not-exist.txt"), ws.join("dangling")).unwrap();
    (base, ws)
}

#[test]
fn escapes_are_denied() {
    let (base, ws) = setup();
    let jail = WorkspaceJail::new(&ws).unwrap();
    let evil = base.path().join("ws-evil/x").display().to_string();
    let secret = base.path().join("secret.txt").display().to_string();
    let attempts = [
        "../secret.txt",
        "sub/../../secret.txt",
        "./../secret.txt",
        "/etc/passwd",
        "//etc/passwd",
        secret.as_str(),
        evil.as_str(),
        "link_file",
        "link_dir/secret.txt",
        "chain/secret.txt",
        "dangling",
        "~/.ssh/id_rsa",
        "sub/\0/x",
        "",
    ];
    for a in attempts {
        let err = jail.resolve(a).expect_err(a);
        assert!(err.to_string().contains("tools only reach inside the workspace"), "{a}: {err}");
    }
}

#[test]
fn look_alikes_are_plain_names_inside() {
    let (_base, ws) = setup();
    let jail = WorkspaceJail::new(&ws).unwrap();
    let root = ws.canonicalize().unwrap();
    for a in ["\u{2024}\u{2024}/x", "a\u{FF0F}..\u{FF0F}b", "\u{FE52}\u{FE52}/y", "...", "sub/./ok"] {
        let p = jail.resolve(a).unwrap();
        assert!(p.starts_with(&root), "{a} -> {}", p.display());
    }
    assert_eq!(jail.resolve("sub/../ok.txt").unwrap(), root.join("ok.txt"));
    assert_eq!(jail.resolve(&root.join("ok.txt").display().to_string()).unwrap(), root.join("ok.txt"));
}

#[tokio::test]
async fn every_file_tool_and_the_shell_cwd_are_jailed() {
    let (_base, ws) = setup();
    let ex = common::executor(&BuiltinConfig::default());
    let calls = [
        ("read_file", json!({"path": "../secret.txt"})),
        ("read_file", json!({"path": "link_file"})),
        ("write_file", json!({"path": "link_dir/new.txt", "content": "x"})),
        ("write_file", json!({"path": "dangling", "content": "x"})),
        ("edit_file", json!({"path": "/etc/hosts", "old_string": "a", "new_string": "b"})),
        ("list_files", json!({"path": "link_dir"})),
        ("shell", json!({"command": "pwd", "cwd": ".."})),
    ];
    for (tool, args) in calls {
        let r = common::call(&ex, &ws, tool, args.clone()).await;
        let e = common::err(&r);
        assert_eq!(e.category, ErrorCategory::Permission, "{tool} {args}: {e:?}");
        assert!(
            e.message.contains(ws.canonicalize().unwrap().to_str().unwrap()),
            "names the root: {}",
            e.message
        );
    }
    assert_eq!(std::fs::read_to_string(_base.path().join("secret.txt")).unwrap(), "top secret");
}

use serde_json::json;
use tackle_protocol::{ErrorCategory, ToolError};

use super::*;
use crate::style::strip_ansi;

fn result(name: &str, outcome: ToolOutcome, lines: u64) -> AgentEvent {
    AgentEvent::ToolResult {
        id: "c1".into(),
        name: name.into(),
        outcome,
        bytes: 10,
        lines,
        truncated: false,
        locator: None,
        duration_ms: 1500,
    }
}

fn ok(preview: &str, tail: Option<&str>) -> ToolOutcome {
    ToolOutcome::Ok { preview: preview.into(), tail: tail.map(str::to_owned) }
}

#[test]
fn shell_results_show_their_output_and_a_failing_exit_code() {
    let ws = tempfile::tempdir().unwrap();
    let e = result("shell", ok("exit code: 0\nstdout:\nHello, world!\n", None), 3);
    let lines = result_lines(Style::plain(), ws.path(), "shell sh greet.sh", &e, None);
    assert_eq!(lines, ["✓ shell sh greet.sh 1.5s", "    │ Hello, world!"]);

    let e = result("shell", ok("exit code: 2\nstdout:\nstderr:\nboom\n", None), 4);
    let lines = result_lines(Style::plain(), ws.path(), "shell x", &e, None);
    assert_eq!(lines[1], "    exit code 2");
    assert_eq!(lines[2], "    │ boom");
}

/// An offloaded output's preview is its reference: the exit code is read from the output's first
/// lines inside it, the reference's own lines are not shown, and the count is the output's.
#[test]
fn offloaded_shell_output_shows_its_real_exit_code_and_last_lines() {
    let ws = tempfile::tempdir().unwrap();
    let preview = "[shell output stored outside the context: 18894 bytes, 3002 lines]\n--- first 20 lines ---\nexit code: 3\nstdout:\n1\n2\n";
    let tail = "2999\n3000\nlocator: out_0123\nTo read more, call read_result with {\"locator\": \"out_0123\", \"offset\": 21, \"limit\": 200}; add \"pattern\" (a regex) to keep only matching lines.";
    let e = result("shell", ok(preview, Some(tail)), 48);
    let lines = result_lines(Style::plain(), ws.path(), "shell seq 1 3000", &e, None);
    assert_eq!(lines[1], "    exit code 3", "{lines:?}");
    assert_eq!(lines[2], "    … 2998 lines above", "{lines:?}");
    assert_eq!(&lines[3..5], ["    │ 2999", "    │ 3000"], "{lines:?}");
    assert!(!lines.iter().any(|l| l.contains("locator:") || l.contains("read_result")), "{lines:?}");
    let e = result("shell", ok(&preview.replace("exit code: 3", "exit code: 0"), Some(tail)), 48);
    let lines = result_lines(Style::plain(), ws.path(), "shell seq 1 3000", &e, None);
    assert!(!lines.iter().any(|l| l.contains("exit code")), "{lines:?}");
}

#[test]
fn long_shell_output_shows_its_last_lines() {
    let ws = tempfile::tempdir().unwrap();
    let tail: String = (193..=200).map(|i| format!("{i}\n")).collect();
    let e = result("shell", ok("exit code: 0\nstdout:\n1\n2\n", Some(tail.trim_end())), 202);
    let lines = result_lines(Style::plain(), ws.path(), "shell seq 1 200", &e, None);
    assert_eq!(lines[1], "    … 192 lines above");
    assert_eq!(lines.last().unwrap(), "    │ 200");
    assert_eq!(lines.len(), 2 + PREVIEW_LINES.min(8), "{lines:?}");
}

#[test]
fn edits_and_writes_show_a_coloured_diff_of_the_file() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.sh"), "#!/bin/sh\necho 'Hello, Tackle!'\n").unwrap();
    let args = json!({"path": "a.sh", "old_string": "Tackle", "new_string": "world"});
    let before = snapshot(ws.path(), "edit_file", &args).unwrap();
    std::fs::write(ws.path().join("a.sh"), "#!/bin/sh\necho 'Hello, world!'\n").unwrap();
    let e = result("edit_file", ok("edited a.sh: 1 replacement\n", None), 7);
    let lines = result_lines(Style::colored(), ws.path(), "edit_file a.sh", &e, Some(&before));
    assert!(lines.iter().any(|l| l.contains("\x1b[31m-echo 'Hello, Tackle!'")), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("\x1b[32m+echo 'Hello, world!'")), "{lines:?}");

    // A new file: all additions.
    let args = json!({"path": "new.txt", "content": "one\ntwo\n"});
    let before = snapshot(ws.path(), "write_file", &args).unwrap();
    assert!(before.text.is_none());
    std::fs::write(ws.path().join("new.txt"), "one\ntwo\n").unwrap();
    let e = result("write_file", ok("created new.txt (8 bytes)", None), 1);
    let plain: Vec<String> = result_lines(Style::plain(), ws.path(), "write_file new.txt", &e, Some(&before));
    assert!(plain.contains(&"    +one".to_owned()) && plain.contains(&"    +two".to_owned()), "{plain:?}");
}

#[test]
fn snapshots_never_read_outside_the_workspace() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s3cret").unwrap();
    for path in ["../secret", "/etc/passwd", outside.path().join("secret").to_str().unwrap()] {
        assert!(snapshot(ws.path(), "write_file", &json!({"path": path, "content": ""})).is_none(), "{path}");
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path().join("secret"), ws.path().join("link")).unwrap();
        assert!(snapshot(ws.path(), "edit_file", &json!({"path": "link"})).is_none());
    }
}

#[test]
fn errors_are_red_with_their_category_and_hint() {
    let ws = tempfile::tempdir().unwrap();
    let envelope = ToolError::new("read_file", ErrorCategory::NotFound, "no file greet.sh in the workspace")
        .with_hint("list the files first");
    let e = result("read_file", ToolOutcome::Error { envelope }, 1);
    let lines = result_lines(Style::colored(), ws.path(), "read_file greet.sh", &e, None);
    assert!(lines[0].contains("\x1b[31m✗"), "{lines:?}");
    assert_eq!(
        strip_ansi(&lines.join("\n")),
        "✗ read_file greet.sh not_found: no file greet.sh in the workspace\n    hint: list the files first"
    );
}

#[test]
fn approvals_show_the_command_the_diff_or_the_content() {
    let ws = tempfile::tempdir().unwrap();
    let body = approval_body(Style::plain(), ws.path(), "shell", &json!({"command": "rm -rf build\nls"}));
    assert_eq!(body, ["    $ rm -rf build", "    $ ls"]);

    let body = approval_body(
        Style::plain(),
        ws.path(),
        "write_file",
        &json!({"path": "greet.sh", "content": "#!/bin/sh\necho hi\n"}),
    );
    assert_eq!(body[0], "    new file greet.sh (18 bytes)");
    assert!(body.contains(&"    +echo hi".to_owned()), "{body:?}");

    std::fs::write(ws.path().join("greet.sh"), "#!/bin/sh\necho hi\n").unwrap();
    let body = approval_body(
        Style::plain(),
        ws.path(),
        "edit_file",
        &json!({"path": "greet.sh", "old_string": "hi", "new_string": "bye"}),
    );
    assert!(
        body.contains(&"    -echo hi".to_owned()) && body.contains(&"    +echo bye".to_owned()),
        "{body:?}"
    );
}

#[test]
fn terminal_escapes_in_tool_output_are_neutralized() {
    let ws = tempfile::tempdir().unwrap();
    let e = result("shell", ok("exit code: 0\nstdout:\n\x1b]0;owned\x07\x1b[2Jhi\n", None), 3);
    let lines = result_lines(Style::plain(), ws.path(), "shell x", &e, None);
    assert!(lines.iter().all(|l| !l.contains('\x1b') && !l.contains('\x07')), "{lines:?}");
}

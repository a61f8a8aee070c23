//! The shell tool: exit codes, capture, timeouts without orphans, secret-free environment.

use crate::common;

use std::ffi::OsString;
use std::time::Duration;

use serde_json::json;
use tackle_builtins::{BuiltinConfig, Shell, ShellArgs};
use tackle_protocol::ErrorCategory;
use tackle_tools::{ToolContext, TypedTool};

#[tokio::test]
async fn runs_in_the_workspace_and_reports_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let ex = common::executor(&BuiltinConfig::default());
    let r =
        common::call(&ex, dir.path(), "shell", json!({"command": "pwd; echo err >&2; exit 3", "cwd": "sub"}))
            .await;
    let out = common::ok(&r);
    assert!(out.starts_with("exit code: 3\nstdout:\n"), "{out}");
    assert!(out.contains(&format!("{}/sub\n", dir.path().canonicalize().unwrap().display())));
    assert!(out.ends_with("stderr:\nerr\n"), "{out}");
}

#[tokio::test]
async fn the_child_environment_is_an_allowlist() {
    let dir = tempfile::tempdir().unwrap();
    let mut parent: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for (k, v) in [
        ("OPENAI_API_KEY", "sk-parent-secret"),
        ("ANTHROPIC_API_KEY", "sk-ant-parent"),
        ("GITHUB_TOKEN", "ghp_x"),
        ("DB_PASSWORD", "hunter2"),
        ("TACKLE_SERVER_TOKENS", "alice:tok"),
        ("DATABASE_URL", "postgres://app:innocent-name-secret@db/app"),
        ("CARGO_TARGET_DIR", "/t"),
        ("LC_ALL", "C.UTF-8"),
    ] {
        parent.push((k.into(), v.into()));
    }
    let config = BuiltinConfig {
        shell_env_allow: vec!["CARGO_*".into()],
        shell_env: [("MY_SETTING".to_owned(), "configured".to_owned())].into(),
        ..BuiltinConfig::default()
    };
    let shell = Shell::new(config).with_base_env(parent);
    let ctx = ToolContext::new("s", "c", dir.path().to_path_buf());
    let out = shell
        .run(ShellArgs { command: "env".into(), cwd: None, timeout_secs: None }, ctx)
        .await
        .unwrap()
        .text;
    for secret in
        ["sk-parent-secret", "sk-ant-parent", "ghp_x", "hunter2", "alice:tok", "innocent-name-secret"]
    {
        assert!(!out.contains(secret), "{secret} leaked: {out}");
    }
    for kept in ["CARGO_TARGET_DIR=/t", "LC_ALL=C.UTF-8", "MY_SETTING=configured", "PATH="] {
        assert!(out.contains(kept), "{kept} missing: {out}");
    }
    for line in out.lines().skip(2) {
        if let Some((name, _)) = line.split_once('=') {
            let bash_own = ["PWD", "SHLVL", "_", "OLDPWD"].contains(&name);
            assert!(
                bash_own
                    || name == "MY_SETTING"
                    || tackle_sandbox::env_name_allowed(name, &["CARGO_*".into()]),
                "{name} is not on the allowlist"
            );
        }
    }
}

#[test]
fn the_description_says_the_sandbox_is_off_when_it_is() {
    let description = Shell::new(BuiltinConfig::default()).description();
    assert!(description.contains("the sandbox is off"), "{description}");
    assert!(!description.contains("does not see secrets"), "{description}");
}

#[tokio::test]
async fn a_flood_is_captured_head_and_tail_without_exhausting_memory() {
    let dir = tempfile::tempdir().unwrap();
    let config = BuiltinConfig { shell_capture_bytes: 1000, ..BuiltinConfig::default() };
    let ex = common::executor(&config);
    let r =
        common::call(&ex, dir.path(), "shell", json!({"command": "yes | head -c 50000000; echo; echo END"}))
            .await;
    let out = common::ok(&r);
    assert!(out.contains("bytes cut ...]"), "{}", &out[..200]);
    assert!(out.trim_end().ends_with("END"));
    assert!(out.len() < 3000);
}

/// Past the stored-output cap the model is told exactly how many bytes were dropped, and the
/// report counts everything the command printed.
#[tokio::test]
async fn output_past_the_spool_cap_is_dropped_and_counted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let mut registry = tackle_tools::ToolRegistry::new();
    for tool in tackle_builtins::builtin_tools(&BuiltinConfig::default()) {
        registry.register(tool).unwrap();
    }
    let limits = tackle_tools::ExecLimits { max_spool_bytes: 100_000, ..tackle_tools::ExecLimits::default() };
    let ex = tackle_tools::ToolExecutor::new(
        std::sync::Arc::new(registry),
        tackle_tools::HookPolicy::defaults(tackle_tools::ApprovalMode::Headless),
        std::sync::Arc::new(tackle_tools::AutoApprove),
        limits,
    );
    let r = common::call(&ex, dir.path(), "shell", json!({"command": "seq 1 200000"})).await;
    let out = common::ok(&r);
    let printed: u64 = (1..=200_000u64).map(|i| i.to_string().len() as u64 + 1).sum();
    assert_eq!(printed, 1_288_895);
    let note = format!(
        "[{} more bytes of output past the 100000-byte limit of stored output were dropped and cannot be restored]",
        printed - 100_000
    );
    assert!(out.ends_with(&note), "{}", &out[out.len().saturating_sub(300)..]);
    let header = "exit code: 0\nstdout:\n".len() as u64;
    // The stored rendering (header, the 100000 bytes kept, the newline closing the cut stdout)
    // and the dropped rest.
    assert_eq!(
        r.bytes,
        header + 100_000 + 1 + (printed - 100_000),
        "the report counts all the command printed"
    );
    assert!(r.truncated);
}

/// Whether a live (not zombie) process of group `pgid` exists. Killed processes whose parent
/// died are reparented to PID 1, which in a container may never reap them: zombies are dead.
fn group_alive(pgid: i32) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // After the comm field (which may hold spaces): state, ppid, pgrp, ...
        let Some((_, rest)) = stat.rsplit_once(')') else { return false };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        fields.len() > 2 && !matches!(fields[0], "Z" | "X") && fields[2].parse::<i32>().ok() == Some(pgid)
    })
}

#[tokio::test]
async fn a_timed_out_command_leaves_no_orphans() {
    let dir = tempfile::tempdir().unwrap();
    let ex = common::executor(&BuiltinConfig::default());
    let pid_file = dir.path().join("pgid");
    let command = format!("echo $$ > {}; sleep 300 & sleep 300; wait", pid_file.display());
    let r = common::call(&ex, dir.path(), "shell", json!({"command": command, "timeout_secs": 1})).await;
    let e = common::err(&r);
    assert_eq!(e.category, ErrorCategory::Timeout);
    assert!(e.retryable);
    let pgid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    for _ in 0..50 {
        if !group_alive(pgid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("processes of group {pgid} survived the timeout");
}

#[tokio::test]
async fn background_processes_left_at_exit_are_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let ex = common::executor(&BuiltinConfig::default());
    let pid_file = dir.path().join("pgid");
    let command = format!("echo $$ > {}; sleep 300 & echo started", pid_file.display());
    let r = common::call(&ex, dir.path(), "shell", json!({"command": command})).await;
    let out = common::ok(&r);
    assert!(out.contains("started") && out.contains("were stopped"), "{out}");
    let pgid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    for _ in 0..50 {
        if !group_alive(pgid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("background process survived");
}

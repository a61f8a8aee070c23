//! The real `tackle` binary with script hooks from `tackle.toml`, `--mode plan`, `tackle
//! rewind` and `tackle sessions fork`, against the fake model.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tackle_testkit::{FakeModel, Script, Turn};

const BIN: &str = env!("CARGO_BIN_EXE_tackle");

fn tackle(home: &Path, fake: &FakeModel) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TACKLE_HOME", home.join("data"))
        .env("OPENAI_API_KEY", "sk-canary-hooks-never-see-it")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
        .env("TACKLE_PROVIDER", "openai")
        .stdin(Stdio::null());
    cmd
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

fn events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn jq_available() -> bool {
    let ok = Command::new("jq").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        tackle_testkit::peers::missing("jq", "`jq --version` failed (scripts/test-deps.sh installs it)");
    }
    ok
}

#[tokio::test]
async fn hooks_from_tackle_toml_block_calls_and_never_see_secrets() {
    if !jq_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let hooks = ws.path().join(".tackle/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(
        hooks.join("no_rm_rf.sh"),
        "#!/bin/bash\nCOMMAND=$(jq -r '.tool_input.command')\nif echo \"$COMMAND\" | grep -q 'rm -rf'; then\n  echo 'Blocked: rm -rf is not allowed here' >&2\n  exit 2\nfi\nexit 0\n",
    )
    .unwrap();
    std::fs::write(hooks.join("env.sh"), "#!/bin/bash\nenv > \"$CLAUDE_PROJECT_DIR/hook-env.txt\"\n")
        .unwrap();
    std::fs::write(
        ws.path().join("tackle.toml"),
        r#"
[[hooks]]
tools = "shell"
action = "log"

[[hooks]]
event = "PreToolUse"
tools = "shell"
command = "bash $CLAUDE_PROJECT_DIR/.tackle/hooks/no_rm_rf.sh"
timeout_secs = 10

[[hooks]]
event = "UserPromptSubmit"
command = "bash .tackle/hooks/env.sh"
"#,
    )
    .unwrap();
    std::fs::create_dir(ws.path().join("build")).unwrap();
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("shell", r#"{"command": "rm -rf build"}"#),
        Turn::text("I could not remove it."),
    ]))
    .await
    .unwrap();
    let events_file = home.path().join("events.jsonl");
    let mut cmd = tackle(home.path(), &fake);
    cmd.args(["run", "clean up", "--workspace"]).arg(ws.path()).arg("--events").arg(&events_file);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(ws.path().join("build").is_dir(), "the hook blocked rm -rf");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("PreToolUse hook") && stderr.contains("Blocked: rm -rf"), "{stderr}");
    let events = events(&events_file);
    let hook_runs: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "hook_finished")
        .map(|e| (e["event"].as_str().unwrap(), e["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(hook_runs, [("UserPromptSubmit", "ok"), ("PreToolUse", "blocked")]);
    // The hook's environment is the allowlist: Tackle's key never reaches it.
    let env = std::fs::read_to_string(ws.path().join("hook-env.txt")).unwrap();
    assert!(env.contains("CLAUDE_PROJECT_DIR=") && env.contains("PATH="), "{env}");
    assert!(!env.contains("sk-canary") && !env.contains("OPENAI_API_KEY"), "{env}");
    // `tackle config` shows both kinds of entries.
    let mut cmd = tackle(home.path(), &fake);
    cmd.args(["config", "--json", "--workspace"]).arg(ws.path());
    let config: Value = serde_json::from_slice(&output(cmd).await.stdout).unwrap();
    let settings = &config["settings"];
    assert_eq!(settings["hooks"][1]["event"], "PreToolUse");
    assert_eq!(settings["hooks"][0]["action"], "log");
    assert_eq!(settings["permissions"]["mode"], "default");
    assert_eq!(settings["checkpoints"]["enabled"], true);
    // A broken entry is a usage error naming it, before anything runs.
    std::fs::write(ws.path().join("tackle.toml"), "[[hooks]]\nevent = \"BeforeTool\"\ncommand = \"x\"\n")
        .unwrap();
    let mut cmd = tackle(home.path(), &fake);
    cmd.args(["run", "hi", "--workspace"]).arg(ws.path());
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("BeforeTool"), "{}", text(&out.stderr));
}

#[tokio::test]
async fn plan_mode_from_the_command_line() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("write_file", r#"{"path": "a.txt", "content": "too early"}"#),
        Turn::call("propose_plan", r#"{"plan": "1. write a.txt"}"#),
        Turn::call("write_file", r#"{"path": "a.txt", "content": "planned"}"#),
        Turn::text("done"),
    ]))
    .await
    .unwrap();
    let events_file = home.path().join("events.jsonl");
    let mut cmd = tackle(home.path(), &fake);
    cmd.args(["run", "write a.txt", "--mode", "plan", "--yes", "--workspace"])
        .arg(ws.path())
        .arg("--events")
        .arg(&events_file);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "planned");
    let events = events(&events_file);
    let first = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert!(first["outcome"]["envelope"]["message"].as_str().unwrap().contains("plan mode"), "{first}");
    assert!(events.iter().any(|e| e["type"] == "mode_changed"));
    // Bypass without a sandbox is refused before anything runs.
    let mut cmd = tackle(home.path(), &fake);
    cmd.env("TACKLE_SANDBOX_MODE", "off")
        .args(["run", "hi", "--mode", "bypass", "--workspace"])
        .arg(ws.path());
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("sandbox"), "{}", text(&out.stderr));
}

#[tokio::test]
async fn rewind_and_fork_from_the_command_line() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("shell", r#"{"command": "printf v1 > a.txt"}"#),
        Turn::text("one"),
        Turn::call("shell", r#"{"command": "printf v2 > a.txt && mkdir gen && printf x > gen/b.txt"}"#),
        Turn::text("two"),
    ]))
    .await
    .unwrap();
    let run = |prompt: &str, session: Option<&str>| {
        let mut cmd = tackle(home.path(), &fake);
        cmd.args(["run", prompt, "--yes", "--json", "--workspace"]).arg(ws.path());
        if let Some(s) = session {
            cmd.args(["--session", s]);
        }
        cmd
    };
    let out = output(run("first", None)).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = serde_json::from_slice::<Value>(&out.stdout).unwrap()["session_id"].as_str().unwrap().to_owned();
    let out = output(run("second", Some(&id))).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "v2");

    // The turns, with their checkpoints.
    let mut cmd = tackle(home.path(), &fake);
    cmd.args(["rewind", &id, "--json"]);
    let turns: Value = serde_json::from_slice(&output(cmd).await.stdout).unwrap();
    assert_eq!(turns.as_array().unwrap().len(), 2);
    assert_eq!(turns[1]["prompt"], "second");
    assert_eq!(turns[1]["checkpoint"], true);
    // A dry run changes nothing; without a terminal and without --yes nothing happens either.
    let mut cmd = tackle(home.path(), &fake);
    cmd.args(["rewind", &id[..13], "2", "--dry-run", "--json"]);
    let preview: Value = serde_json::from_slice(&output(cmd).await.stdout).unwrap();
    assert_eq!(preview["applied"], false);
    assert_eq!(preview["files"]["changes"].as_array().unwrap().len(), 3, "{preview}");
    let mut cmd = tackle(home.path(), &fake);
    cmd.args(["rewind", &id, "2"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(ws.path().join("gen/b.txt").exists());
    // Fork after turn 1 with its own files, then rewind the original.
    let copy = home.path().join("copy");
    let mut cmd = tackle(home.path(), &fake);
    cmd.args(["sessions", "fork", &id, "--turn", "1", "--json", "--files"]).arg(&copy);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let fork: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(std::fs::read_to_string(copy.join("a.txt")).unwrap(), "v1");
    assert!(!copy.join("gen").exists());
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "v2", "the original's files stay");
    let mut cmd = tackle(home.path(), &fake);
    cmd.args(["rewind", &id, "2", "--yes"]);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("rewound to before turn 2"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "v1");
    assert!(!ws.path().join("gen").exists());
    let mut cmd = tackle(home.path(), &fake);
    cmd.args(["sessions", "show", fork["session_id"].as_str().unwrap(), "--json"]);
    let shown: Value = serde_json::from_slice(&output(cmd).await.stdout).unwrap();
    assert_eq!(
        shown["session"]["workspace"].as_str().unwrap(),
        copy.canonicalize().unwrap().to_str().unwrap()
    );
    // Unknown turns are usage errors.
    let mut cmd = tackle(home.path(), &fake);
    cmd.args(["rewind", &id, "7", "--yes"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no turn 7"), "{}", text(&out.stderr));
}

//! Sub-agents through the real `tackle` binary: `agents/NAME.md` files give the model the
//! `agent` tool, `tackle sessions show` prints the tree, and a bad file stops the command before
//! anything happens, naming the file and the field.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tackle_testkit::{FakeModel, Script, Turn};

const BIN: &str = env!("CARGO_BIN_EXE_tackle");

/// A command with a clean environment: no provider keys, a private data directory, run in
/// `workspace`, against `fake`.
fn tackle(home: &Path, workspace: &Path, fake: Option<&FakeModel>) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TACKLE_HOME", home.join("data"))
        .current_dir(workspace)
        .stdin(Stdio::null());
    if let Some(fake) = fake {
        cmd.env("OPENAI_API_KEY", "sk-test")
            .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
            .env("TACKLE_PROVIDER", "openai")
            // The fake accepts `allowed_tools` as OpenAI does (a loopback URL is taken for a
            // compatible server otherwise).
            .env("TACKLE_OPENAI_DIALECT", "openai");
    }
    cmd
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

const READER: &str = "---\nname: reader\ndescription: Reads files and reports.\ntools: read_file, list_files\ncolor: blue\n---\nOnly read. Report what you found.\n";

#[tokio::test]
async fn a_run_delegates_to_a_sub_agent_file_and_sessions_show_prints_the_tree() {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(workspace.path().join("agents")).unwrap();
    std::fs::write(workspace.path().join("agents/reader.md"), READER).unwrap();
    std::fs::write(workspace.path().join("notes.txt"), "the launch is on Tuesday\n").unwrap();
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("agent", r#"{"prompt": "When is the launch? Read notes.txt.", "agent": "reader"}"#),
        Turn::call("read_file", r#"{"path": "notes.txt"}"#),
        Turn::text("The launch is on Tuesday."),
        Turn::text("The reader says: Tuesday."),
    ]))
    .await
    .unwrap();
    let mut cmd = tackle(home.path(), workspace.path(), Some(&fake));
    cmd.args(["run", "When is the launch?"]);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("The reader says: Tuesday."), "{}", text(&out.stdout));

    // The `agent` tool's description lists the file's sub-agent; the child's request is masked
    // to its tools and carries the parent's catalog bytes.
    let requests = fake.requests();
    let agent_tool = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "agent")
        .cloned()
        .expect("the agent tool is offered");
    assert!(
        agent_tool["function"]["description"].as_str().unwrap().contains("reader: Reads files and reports.")
    );
    assert_eq!(requests[1].body["tools"], requests[0].body["tools"]);
    let allowed: Vec<&str> = requests[1].body["tool_choice"]["allowed_tools"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(allowed.contains(&"read_file") && !allowed.contains(&"shell"), "{allowed:?}");

    // Two sessions; `sessions show` of the parent lists the child, the child names its parent.
    let mut cmd = tackle(home.path(), workspace.path(), None);
    cmd.args(["sessions", "list", "--json"]);
    let out = output(cmd).await;
    let sessions: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sessions = sessions.as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    let child = sessions.iter().find(|s| s["title"].as_str().unwrap().starts_with("[reader]")).unwrap();
    let parent = sessions.iter().find(|s| s["id"] != child["id"]).unwrap();
    let (child_id, parent_id) = (child["id"].as_str().unwrap(), parent["id"].as_str().unwrap());
    let mut cmd = tackle(home.path(), workspace.path(), None);
    cmd.args(["sessions", "show", parent_id]);
    let shown = text(&output(cmd).await.stdout);
    assert!(shown.contains("sub-agents") && shown.contains(child_id), "{shown}");
    let mut cmd = tackle(home.path(), workspace.path(), None);
    cmd.args(["sessions", "show", child_id]);
    let shown = text(&output(cmd).await.stdout);
    assert!(shown.contains(&format!("parent    {parent_id}")), "{shown}");
    assert!(shown.contains("The launch is on Tuesday."), "{shown}");
    let mut cmd = tackle(home.path(), workspace.path(), None);
    cmd.args(["sessions", "show", parent_id, "--json"]);
    let json: Value = serde_json::from_slice(&output(cmd).await.stdout).unwrap();
    assert_eq!(json["children"][0]["id"], child_id);
}

#[tokio::test]
async fn a_bad_agent_file_stops_the_command_naming_the_file_and_the_field() {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(workspace.path().join("agents")).unwrap();
    std::fs::write(workspace.path().join("agents/broken.md"), "---\ndescription: d\ntools: 3\n---\nbody\n")
        .unwrap();
    let fake = FakeModel::start(Script::new(vec![Turn::text("never asked")])).await.unwrap();
    let mut cmd = tackle(home.path(), workspace.path(), Some(&fake));
    cmd.args(["run", "hello"]);
    let out = output(cmd).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "a configuration error: {stderr}");
    assert!(stderr.contains("agents/broken.md") && stderr.contains("tools:"), "{stderr}");
    assert!(fake.requests().is_empty(), "nothing was asked of the model");
    assert!(!home.path().join("data").exists(), "no store was created before the error");

    // A tool name the agent does not have is refused the same way.
    std::fs::write(workspace.path().join("agents/broken.md"), "---\ndescription: d\ntools: [Read]\n---\n")
        .unwrap();
    let mut cmd = tackle(home.path(), workspace.path(), Some(&fake));
    cmd.args(["run", "hello"]);
    let out = output(cmd).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("agents/broken.md") && stderr.contains("\"Read\""), "{stderr}");
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn tackle_config_shows_the_sub_agent_settings() {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        workspace.path().join("tackle.toml"),
        "[subagents]\nmax_depth = 1\n\n[agents.tester]\ndescription = \"Runs tests\"\ntools = [\"shell\"]\n",
    )
    .unwrap();
    let mut cmd = tackle(home.path(), workspace.path(), None);
    cmd.env("TACKLE_SUBAGENTS_ENABLED", "on").args(["config"]);
    let out = output(cmd).await;
    let shown = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        shown.contains("[subagents]")
            && shown.contains("enabled = \"on\"")
            && shown.contains("max_depth = 1"),
        "{shown}"
    );
    assert!(shown.contains("[agents.tester]") && shown.contains("Runs tests"), "{shown}");
}

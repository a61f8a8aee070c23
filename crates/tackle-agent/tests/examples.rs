//! The examples in `examples/` run as an embedder would run them (`cargo build --example`, then
//! the binary), against the scripted fake model through the OpenAI environment variables.

use std::path::Path;
use std::process::Output;

use tackle_testkit::{FakeModel, Script, Turn, example_binary};

/// Runs example `name` with `args` in `cwd`, its provider pointed at `fake`.
async fn run_example(name: &str, args: &[&str], cwd: &Path, fake: &FakeModel) -> Output {
    let binary = example_binary("tackle-agent", name).unwrap();
    let mut command = std::process::Command::new(binary);
    command
        .args(args)
        .current_dir(cwd)
        .env("OPENAI_API_KEY", "sk-example")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
        .env_remove("TACKLE_HOME");
    let output = tokio::task::spawn_blocking(move || command.output()).await.unwrap().unwrap();
    assert!(
        output.status.success(),
        "{name} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn minimal_agent_calls_its_custom_tool() {
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("add", r#"{"a": 2, "b": 3}"#),
        Turn::text("2 + 3 = 5"),
    ]))
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = run_example("minimal_agent", &[], dir.path(), &fake).await;
    assert_eq!(stdout(&out).trim(), "2 + 3 = 5");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let tools = requests[0].body["tools"].to_string();
    assert!(tools.contains("\"add\"") && tools.contains("First term."), "the typed schema was sent: {tools}");
    let result = &requests[1].body["messages"].as_array().unwrap().last().unwrap()["content"];
    assert_eq!(result, "5", "the closure ran with the model's arguments");
}

#[tokio::test]
async fn streaming_events_prints_text_tool_calls_and_usage() {
    let fake =
        FakeModel::start(Script::new(vec![Turn::call("list_files", "{}"), Turn::text("Two files here.")]))
            .await
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a").unwrap();
    let out = run_example("streaming_events", &["what is here?"], dir.path(), &fake).await;
    let text = stdout(&out);
    assert!(text.contains("> list_files"), "{text}");
    assert!(text.contains("list_files: ok"), "{text}");
    assert!(text.contains("Two files here."), "{text}");
    assert!(text.contains("[2 steps,"), "{text}");
}

#[tokio::test]
async fn mcp_tools_come_from_the_server() {
    let server = example_binary("tackle-mcp", "mcp_test_server").unwrap();
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("everything__tool_007", r#"{"text": "tackle"}"#),
        Turn::text("It echoed tackle."),
    ]))
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = run_example("mcp_tools", &[server.to_str().unwrap()], dir.path(), &fake).await;
    let text = stdout(&out);
    assert!(text.contains("everything__tool_000") && text.contains("everything__tool_099"), "{text}");
    assert!(text.contains("It echoed tackle."), "{text}");
    let result = fake.requests()[1].body["messages"].to_string();
    assert!(result.contains("tool_007"), "the MCP server answered the call: {result}");
}

#[tokio::test]
async fn resume_session_continues_with_the_whole_conversation() {
    let fake =
        FakeModel::start(Script::new(vec![Turn::text("I will remember 42."), Turn::text("You said 42.")]))
            .await
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let out = run_example("resume_session", &[db.to_str().unwrap()], dir.path(), &fake).await;
    let text = stdout(&out);
    assert!(text.contains("first: I will remember 42."), "{text}");
    assert!(text.contains("resumed: You said 42."), "{text}");
    assert!(text.contains(": 4 messages"), "{text}");
    let second = fake.requests()[1].body["messages"].to_string();
    assert!(
        second.contains("Remember the number 42."),
        "the resumed request carries the first turn: {second}"
    );
}

//! The real `tackle` binary: demo, run in both wire formats, sessions, exit codes, the REPL, and
//! resuming after the process is killed between steps.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use tackle_testkit::{FakeModel, Fault, Script, Turn, peers};

const BIN: &str = env!("CARGO_BIN_EXE_tackle");

/// A command with a clean environment: no provider keys, a private data directory.
fn tackle(home: &Path) -> Command {
    tackle_at(BIN, home)
}

/// [`tackle`] with another path to the program.
fn tackle_at(program: &str, home: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TACKLE_HOME", home.join("data"))
        .stdin(Stdio::null());
    cmd
}

fn with_fake(cmd: &mut Command, kind: &str, fake: &FakeModel) {
    match kind {
        "openai" => {
            cmd.env("OPENAI_API_KEY", "sk-test").env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
        }
        _ => cmd.env("ANTHROPIC_API_KEY", "sk-ant-test").env("ANTHROPIC_BASE_URL", fake.base_url()),
    };
    cmd.env("TACKLE_PROVIDER", kind);
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}

#[tokio::test]
async fn demo_runs_offline_and_stores_the_session() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = tackle(home.path());
    cmd.arg("demo");
    let out = output(cmd).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("echo 'Hello, world!'"), "{stderr}");
    assert!(
        stderr.contains("✗ read_file greet.sh not_found"),
        "the demo recovers from a real tool error: {stderr}"
    );
    // The shell step shows what it printed, and the edit its diff.
    assert!(
        stderr.contains("│ Hello, world!") && stderr.contains("the shell step printed: Hello, world!"),
        "{stderr}"
    );
    assert!(
        stderr.contains("-echo 'Hello, Tackle!'") && stderr.contains("+echo 'Hello, world!'"),
        "{stderr}"
    );
    // Usage is simulated from the requests sent, and says so; the old scripted figures are gone.
    assert!(stderr.contains("simulated usage:") && !stderr.contains("27500"), "{stderr}");
    // So does the per-turn line, whose figures are those same simulated ones.
    let turn_line = stderr.lines().find(|l| l.starts_with("─ 9 steps")).expect("a turn line");
    assert!(turn_line.ends_with("· simulated usage"), "{turn_line}");
    // The hint runs this very binary (not on PATH here).
    let hint = stderr.lines().find_map(|l| l.strip_prefix("see it again: ")).unwrap();
    let mut again = hint.split_whitespace();
    let (exe, rest): (&str, Vec<&str>) = (again.next().unwrap(), again.collect());
    assert_eq!(std::fs::canonicalize(exe).unwrap(), std::fs::canonicalize(BIN).unwrap(), "{hint}");
    let mut cmd = tackle_at(exe, home.path());
    cmd.args(&rest);
    let out = output(cmd).await;
    assert!(out.status.success() && text(&out.stdout).contains("tackle demo"), "{}", text(&out.stderr));
    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "list", "--json"]);
    let list: Value = serde_json::from_slice(&output(cmd).await.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["title"], "tackle demo");
    assert!(list[0]["message_count"].as_i64().unwrap() > 15);
}

#[tokio::test]
async fn run_in_both_wire_formats_with_json_and_events() {
    for kind in ["openai", "anthropic"] {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("hello.txt"), "hi there").unwrap();
        let fake = FakeModel::start(Script::new(vec![
            Turn::text("Reading.").with_call("read_file", r#"{"path": "hello.txt"}"#),
            Turn::text("It says hi there."),
        ]))
        .await
        .unwrap();
        let events = home.path().join("events.jsonl");
        let mut cmd = tackle(home.path());
        with_fake(&mut cmd, kind, &fake);
        cmd.args(["run", "what does hello.txt say?", "--json", "--workspace"])
            .arg(ws.path())
            .arg("--events")
            .arg(&events);
        let out = output(cmd).await;
        assert!(out.status.success(), "{kind}: {}", text(&out.stderr));
        let result: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(result["end"], "completed");
        assert_eq!(result["text"], "It says hi there.");
        assert_eq!(result["steps"], 2);
        let lines: Vec<Value> = std::fs::read_to_string(&events)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
        assert_eq!(types.first(), Some(&"session_started"));
        assert!(types.contains(&"tool_call") && types.contains(&"tool_result"));
        assert_eq!(types.last(), Some(&"turn_finished"));
        // The store was closed on the way out: SQLite removed its WAL, so the next start has none
        // to read back before its first request.
        let data = home.path().join("data");
        assert!(data.join("tackle.db").exists(), "{kind}: the store is in {}", data.display());
        assert!(!data.join("tackle.db-wal").exists(), "{kind}: tackle run left a WAL behind");

        // Plain text mode streams the answer to stdout and status lines to stderr.
        fake.set_script(Script::new(vec![Turn::text("Plain answer.")]));
        let mut cmd = tackle(home.path());
        with_fake(&mut cmd, kind, &fake);
        cmd.args(["run", "hi", "--workspace"]).arg(ws.path());
        let out = output(cmd).await;
        assert_eq!(text(&out.stdout).trim(), "Plain answer.");
        assert!(text(&out.stderr).contains("session "));
    }
}

#[tokio::test]
async fn events_to_stdout_are_json_lines() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![Turn::text("ok")])).await.unwrap();
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    cmd.args(["run", "hi", "--events", "-", "--workspace"]).arg(home.path());
    let out = output(cmd).await;
    let stdout = text(&out.stdout);
    for line in stdout.lines() {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
    assert!(stdout.contains(r#""type":"text_delta""#));
}

#[tokio::test]
async fn exit_codes_and_messages() {
    let home = tempfile::tempdir().unwrap();
    // No provider: exit 2 with what to do.
    let mut cmd = tackle(home.path());
    cmd.args(["run", "hi"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("set OPENAI_API_KEY or ANTHROPIC_API_KEY") && stderr.contains("tackle demo"),
        "{stderr}"
    );

    let fake = FakeModel::start(Script::new(vec![Turn::text("ok")])).await.unwrap();
    for args in [
        vec!["run", "hi", "--max-steps", "0"],
        vec!["run", "hi", "--session", "no-such-session"],
        vec!["run", "hi", "--workspace", "/no/such/dir"],
    ] {
        let mut cmd = tackle(home.path());
        with_fake(&mut cmd, "openai", &fake);
        cmd.args(&args);
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
    }
    // Bad flags are usage errors too (clap).
    let mut cmd = tackle(home.path());
    cmd.args(["run"]);
    assert_eq!(output(cmd).await.status.code(), Some(2));

    // A provider that keeps failing: exit 1.
    for _ in 0..3 {
        fake.push_fault(Fault::status(500));
    }
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    cmd.env("TACKLE_MODEL", "m").args(["run", "hi", "--workspace"]).arg(home.path());
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("HTTP 500") || text(&out.stderr).contains("provider error"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn sessions_list_show_and_rm() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![Turn::text("first"), Turn::text("second")])).await.unwrap();
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "anthropic", &fake);
    cmd.args(["run", "remember this", "--json", "--workspace"]).arg(home.path());
    let result: Value = serde_json::from_slice(&output(cmd).await.stdout).unwrap();
    let id = result["session_id"].as_str().unwrap().to_owned();

    // Resume by prefix: the second turn sees the first.
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "anthropic", &fake);
    cmd.args(["run", "and now?", "--json", "--session", &id[..20], "--workspace"]).arg(home.path());
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(fake.requests()[1].body.to_string().contains("remember this"));

    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "show", &id, "--json"]);
    let shown: Value = serde_json::from_slice(&output(cmd).await.stdout).unwrap();
    assert_eq!(shown["session"]["id"], id.as_str());
    assert_eq!(shown["messages"].as_array().unwrap().len(), 4);

    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "show", &id]);
    let out = output(cmd).await;
    assert!(text(&out.stdout).contains("remember this"));

    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "rm", &id, "--json"]);
    assert!(output(cmd).await.status.success());
    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "show", &id]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not found"));
}

#[tokio::test]
async fn the_repl_reads_commands_and_messages_from_stdin() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![Turn::text("Hello from the model.")])).await.unwrap();
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    cmd.args(["chat", "--workspace"])
        .arg(home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(b"/help\n/tools\nhello\n/session\n/nonsense\n/quit\n").unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("Hello from the model."), "{stdout}");
    assert!(stderr.contains("/resume ID"), "help was shown: {stderr}");
    assert!(stderr.contains("read_file"), "tools were listed");
    assert!(stderr.contains("messages  2"), "session info: {stderr}");
    assert!(stderr.contains("unknown command /nonsense"));
}

/// Lines piped into `tackle chat` are messages and commands: a call that needs confirmation is
/// refused without asking (nobody could answer), so the next line stays a message instead of
/// becoming the reason of a denial; the model is told nobody could confirm, not that someone said
/// no. `/model` checks the name against the provider's model listing.
#[tokio::test]
async fn piped_chat_input_never_answers_an_approval_and_model_names_are_checked() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("write_file", r#"{"path": "a.txt", "content": "x"}"#),
        Turn::text("I could not write it."),
        Turn::text("Noted."),
    ]))
    .await
    .unwrap();
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    cmd.args(["chat", "--workspace"])
        .arg(ws.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"/model gpt-4o-typo\n/model fake-model\nwrite a.txt\nthis line is a message\n/quit\n")
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("calls that need confirmation are refused without asking"), "{stderr}");
    assert!(
        stderr.contains("unknown model gpt-4o-typo: openai lists 1 models, not this one"),
        "the listing of the fake server has only fake-model: {stderr}"
    );
    assert!(stderr.contains("model fake-model from the next message on"), "{stderr}");
    assert!(!ws.path().join("a.txt").exists(), "nothing was written");
    assert!(stderr.contains("pass --yes to allow such calls"), "{stderr}");

    let requests = fake.requests();
    assert_eq!(requests.len(), 3, "the line after the refused call is a turn of its own");
    assert_eq!(requests[0].body["model"], "fake-model");
    let refused = requests[1].body.to_string();
    assert!(refused.contains("nobody can give it here"), "{refused}");
    assert!(!refused.contains("the user denied"), "nobody was asked: {refused}");
    assert!(requests[2].body.to_string().contains("this line is a message"));
}

/// `tackle run` without a terminal and without --yes: the same refusal, never "the user denied".
#[tokio::test]
async fn a_run_nobody_can_answer_refuses_confirmations_without_blaming_the_user() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("write_file", r#"{"path": "a.txt", "content": "x"}"#),
        Turn::text("I could not write it."),
    ]))
    .await
    .unwrap();
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    cmd.args(["run", "write a.txt", "--workspace"]).arg(ws.path());
    let out = output(cmd).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!ws.path().join("a.txt").exists());
    assert!(stderr.contains("✗ write_file a.txt denied") && stderr.contains("pass --yes"), "{stderr}");
    let refused = fake.requests()[1].body.to_string();
    assert!(refused.contains("nobody can give it here"), "{refused}");
    assert!(!refused.contains("the user denied"), "{refused}");
}

#[tokio::test]
async fn a_process_killed_between_steps_resumes_with_every_committed_message() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("write_file", r#"{"path": "step1.txt", "content": "done"}"#),
        Turn::text("finished after resume"),
    ]))
    .await
    .unwrap();
    // The second model call hangs, so the process is killed between steps.
    fake.push_fault(Fault::Pass);
    fake.push_fault(Fault::Latency { ms: 30_000 });
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    cmd.args(["run", "write step1", "--yes", "--json", "--workspace"])
        .arg(ws.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    for _ in 0..200 {
        if fake.requests().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(fake.requests().len(), 2, "the second step started");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(std::fs::read_to_string(ws.path().join("step1.txt")).unwrap(), "done");

    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "list", "--json"]);
    let list: Value = serde_json::from_slice(&output(cmd).await.stdout).unwrap();
    let id = list[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(list[0]["message_count"], 3, "user, assistant call, tool result were committed");
    assert_eq!(list[0]["status"], "interrupted", "a turn whose process died is not shown as running");

    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    cmd.args(["run", "continue", "--json", "--session", &id, "--workspace"]).arg(ws.path());
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["text"], "finished after resume");
    let resumed = fake.requests().last().unwrap().body.to_string();
    assert!(resumed.contains("write step1") && resumed.contains("created step1.txt"), "{resumed}");
    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "list", "--json"]);
    let list: Value = serde_json::from_slice(&output(cmd).await.stdout).unwrap();
    assert_eq!(list[0]["status"], "idle");
}

#[tokio::test]
async fn config_masks_secrets() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = tackle(home.path());
    cmd.env("OPENAI_API_KEY", "sk-very-secret-value-1234").args(["config", "--json"]);
    let out = output(cmd).await;
    let stdout = text(&out.stdout);
    assert!(out.status.success());
    assert!(!stdout.contains("very-secret"), "{stdout}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["provider"]["api_key"], "sk-…(25)");
}

/// `tackle run` watches its turn, so it streams; `TACKLE_STREAMING=never` (or `streaming` in
/// `tackle.toml`) asks for whole answers, prints the same answer, and `tackle config` shows it.
#[tokio::test]
async fn streaming_is_a_setting_that_reaches_the_requests() {
    let home = tempfile::tempdir().unwrap();
    let fake =
        FakeModel::start(Script::new(vec![Turn::text("streamed"), Turn::text("whole")])).await.unwrap();
    for (setting, answer, streamed) in [(None, "streamed", true), (Some("never"), "whole", false)] {
        let mut cmd = tackle(home.path());
        with_fake(&mut cmd, "anthropic", &fake);
        if let Some(value) = setting {
            cmd.env("TACKLE_STREAMING", value);
        }
        cmd.args(["run", "hi", "--workspace"]).arg(home.path());
        let out = output(cmd).await;
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains(answer), "{}", text(&out.stdout));
        assert_eq!(fake.requests().last().unwrap().body["stream"], streamed, "{setting:?}");
    }
    std::fs::write(home.path().join("tackle.toml"), "streaming = \"never\"\n").unwrap();
    let mut cmd = tackle(home.path());
    cmd.current_dir(home.path()).args(["config", "--workspace"]).arg(home.path());
    let out = output(cmd).await;
    assert!(text(&out.stdout).contains("streaming = \"never\""), "{}", text(&out.stdout));
}

#[tokio::test]
async fn ctrl_c_cancels_the_turn_not_the_repl() {
    let home = tempfile::tempdir().unwrap();
    let fake =
        FakeModel::start(Script::new(vec![Turn::text("slow ".repeat(500)), Turn::text("after the cancel")]))
            .await
            .unwrap();
    fake.push_fault(Fault::Trickle { ms: 20 });
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    cmd.args(["chat", "--workspace"])
        .arg(home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"talk slowly\n").unwrap();
    stdin.flush().unwrap();
    // Only once the turn is under way (a loaded machine may take seconds to get there).
    for _ in 0..1500 {
        if !fake.requests().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(fake.requests().len(), 1, "the turn started");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    tokio::time::sleep(Duration::from_millis(200)).await;
    if let Err(e) = stdin.write_all(b"again\n/quit\n") {
        let out = child.wait_with_output().unwrap();
        panic!("the REPL is gone ({e}): {:?}\n{}", out.status, text(&out.stderr));
    }
    drop(stdin);
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "the REPL survived Ctrl-C: {stderr}");
    assert!(stderr.contains("cancelling the turn"), "{stderr}");
    assert!(stdout.contains("after the cancel"), "the next message worked: {stdout}");
}

#[tokio::test]
async fn bench_cache_reports_no_breaks_in_either_format() {
    let home = tempfile::tempdir().unwrap();
    let replay_path = home.path().join("replay.json");
    let mut cmd = tackle(home.path());
    cmd.args(["bench", "cache", "--steps", "20", "--json", "--export"]).arg(&replay_path);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let reports: Value = serde_json::from_slice(&out.stdout).unwrap();
    for r in reports.as_array().unwrap() {
        assert_eq!(r["steps"], 20);
        assert_eq!(r["cache_breaks"], serde_json::json!([]));
        assert!(r["prefix_ratios"].as_array().unwrap().iter().all(|x| x.as_f64().unwrap() >= 0.995));
        // The independent oracle: the fake model's prompt-cache simulation, which compares the
        // bytes it received. Every step reads from the cache the whole previous request but its
        // closing brackets (2 tokens), less OpenAI's rounding down to 128-token increments: a
        // prefix that broke anywhere shows as a step that read much less.
        let rounding = if r["format"] == "anthropic" { 0 } else { 127 };
        let usage = r["step_usage"].as_array().unwrap();
        assert_eq!(usage.len(), 20);
        for (k, pair) in usage.windows(2).enumerate() {
            let previous = pair[0]["input_tokens"].as_u64().unwrap();
            let read = pair[1]["cache_read_tokens"].as_u64().unwrap();
            assert!(
                read + 2 + rounding >= previous,
                "{} step {}: read {read} of the previous {previous} prompt tokens from the cache",
                r["format"],
                k + 1
            );
        }
        assert_eq!(r["tool_errors"], 2);
        assert!(r["cache_read_tokens"].as_u64().unwrap() > 0);
        assert_eq!(r["simulated_usage"], true, "the token figures say they are simulated");
        // A sub-agent's first request repeats its parent's prefix ([subagent-shares-prefix]).
        let child = r["subagent"]["prefix_ratio"].as_f64().unwrap();
        assert!(child >= 0.9, "{} sub-agent prefix ratio {child}", r["format"]);
        assert!(r["subagent"]["cache_read_tokens"].as_u64().unwrap() > 0);
    }
    let mut cmd = tackle(home.path());
    cmd.args(["bench", "cache", "--steps", "12"]);
    let out = output(cmd).await;
    let table = text(&out.stdout);
    assert!(table.contains("cache read / input tokens (simulated)"), "{table}");
    assert!(table.contains("Token figures are simulated: no provider was called"), "{table}");

    // The replay of the OpenAI run holds what another framework needs to run the same scenario:
    // one allowed-tools list per step, the masks visible in them, every tool result.
    let replay: Value = serde_json::from_slice(&std::fs::read(&replay_path).unwrap()).unwrap();
    let tools: Vec<&str> =
        replay["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert!(tools.contains(&"shell") && tools.contains(&"activate_skill"), "{tools:?}");
    let steps: Vec<Vec<&str>> = replay["turns"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["allowed_tools"].as_array().unwrap())
        .map(|step| step.as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect())
        .collect();
    assert_eq!(steps.len(), 20);
    assert_eq!(replay["script"]["turns"].as_array().unwrap().len(), 20);
    assert_eq!(replay["script"]["simulate_cache"], true);
    assert!(steps.iter().all(|s| s.iter().all(|n| tools.contains(n))), "allowed tools are catalog tools");
    assert!(steps.iter().any(|s| !s.contains(&"shell")), "the shell mask shows in some step");
    assert!(steps.iter().any(|s| s.len() < tools.len()) && steps.iter().any(|s| s.contains(&"shell")));
    let calls = replay["script"]["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tool_calls"].as_array().unwrap().len())
        .sum::<usize>();
    assert_eq!(replay["tool_results"].as_object().unwrap().len(), calls, "a result for every call");
    assert_eq!(replay["tackle"]["steps"], 20);
    assert!(
        replay["system"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["role"] == "system" || m["role"] == "developer")
    );
    assert!(!replay["system"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn serve_refuses_public_binds_without_tokens_and_shuts_down_gracefully() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = tackle(home.path());
    cmd.env("OPENAI_API_KEY", "sk-test")
        .args(["serve", "--bind", "0.0.0.0:0", "--workspace"])
        .arg(home.path());
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("refusing to listen on 0.0.0.0:0 without authentication"),
        "{}",
        text(&out.stderr)
    );

    let mut script = Script::new(vec![Turn::text("finished before shutdown")]);
    script.latency_ms = Some(1_500);
    let fake = FakeModel::start(script).await.unwrap();
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    cmd.args(["serve", "--bind", "127.0.0.1:0", "--workspace"])
        .arg(home.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    let base = first.trim().strip_prefix("tackle serving on ").expect(&first).to_owned();
    let client = reqwest::Client::new();
    let session: Value = client
        .post(format!("{base}/v1/sessions"))
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = session["id"].as_str().unwrap().to_owned();
    let turn = tokio::spawn({
        let (client, base) = (client.clone(), base.clone());
        async move {
            client
                .post(format!("{base}/v1/sessions/{id}/messages"))
                .json(&serde_json::json!({"message": "hi"}))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }
    });
    while fake.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // SIGTERM while the turn runs: it finishes, its stream ends, then the process exits 0.
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let stream = turn.await.unwrap();
    assert!(
        stream.contains("event: turn_finished") && stream.contains("finished before shutdown"),
        "{stream}"
    );
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap()).await.unwrap();
    assert!(status.success());
    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "list", "--json"]);
    let list: Value = serde_json::from_slice(&output(cmd).await.stdout).unwrap();
    assert_eq!(list[0]["message_count"], 2, "the turn was stored before exit");
    assert_eq!(list[0]["status"], "idle");
}

/// Whoever started `tackle serve` may stop reading its stdout after the address
/// (`tackle serve | head -1`, a supervisor, a test): the server keeps serving its clients. Here
/// the pipe's reader is gone before the first line, so every notice fails to write; the server
/// used to end itself quietly on the first one.
#[tokio::test]
async fn serve_keeps_serving_when_its_stdout_reader_is_gone() {
    let home = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut cmd = tackle(home.path());
    cmd.env("OPENAI_API_KEY", "sk-test")
        .args(["serve", "--bind", &format!("127.0.0.1:{port}"), "--workspace"])
        .arg(home.path())
        .stdout(writer)
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let client = reqwest::Client::new();
    let health = format!("http://127.0.0.1:{port}/healthz");
    let mut answered = false;
    for _ in 0..1200 {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            panic!("serve ended ({status}) when its stdout could not be written: {err}");
        }
        if client.get(&health).send().await.is_ok_and(|r| r.status() == 200) {
            answered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(answered, "serve never answered on {health}");
    // Still there after answering: its notice was written (and failed) before it served.
    assert!(child.try_wait().unwrap().is_none());
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test]
async fn demo_serve_serves_the_web_page_with_the_scripted_model_for_every_message() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = tackle(home.path());
    cmd.args(["demo", "--serve", "--bind", "127.0.0.1:0"]).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    let base = first.trim().strip_prefix("tackle serving on ").expect(&first).to_owned();
    let client = reqwest::Client::new();
    let page = client.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("<title>Tackle"), "the web page");
    let session: Value = client
        .post(format!("{base}/v1/sessions"))
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = session["id"].as_str().unwrap().to_owned();
    // Any message, and again: each replays the demo with real tools, no key anywhere.
    for message in ["hello", "once more, please"] {
        let turn: Value = client
            .post(format!("{base}/v1/sessions/{id}/messages"))
            .json(&serde_json::json!({"message": message, "stream": false}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(turn["end"], "completed", "{turn}");
        assert_eq!(turn["steps"], 9, "{turn}");
        assert!(turn["text"].as_str().unwrap().starts_with("Done. scripts/greet.sh"), "{turn}");
        let shell = turn["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["type"] == "tool_result" && e["name"] == "shell")
            .unwrap_or_else(|| panic!("{turn}"));
        assert!(shell.to_string().contains("Hello, world!"), "{shell}");
    }
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap()).await.unwrap();
    assert!(status.success());
    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "list", "--json"]);
    let list: Value = serde_json::from_slice(&output(cmd).await.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
}

/// The MCP reference server `server-everything`, installed by scripts/test-deps.sh.
fn everything_server() -> Option<std::path::PathBuf> {
    let package = peers::or_skip(peers::npm_package("@modelcontextprotocol/server-everything"))?;
    Some(package.join("dist/index.js"))
}

#[tokio::test]
async fn mcp_tools_run_directly_or_through_tool_search_when_deferred() {
    let Some(server) = everything_server() else { return };
    for deferred in [false, true] {
        let home = tempfile::tempdir().unwrap();
        let mut config = format!(
            "[mcp.servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\nstart_timeout_secs = 30\n",
            server.display().to_string()
        );
        // A tiny share forces deferral of the server's tools.
        if deferred {
            config.push_str("\n[deferral]\nshare = 0.0001\n");
        }
        std::fs::write(home.path().join("tackle.toml"), config).unwrap();
        let turns = if deferred {
            vec![
                Turn::call("tool_search", r#"{"query":"echo back the input message"}"#),
                Turn::call(
                    "call_tool",
                    r#"{"name":"everything__echo","arguments":{"message":"through the proxy"}}"#,
                ),
                Turn::text("echoed"),
            ]
        } else {
            vec![Turn::call("everything__echo", r#"{"message":"straight in"}"#), Turn::text("echoed")]
        };
        let fake = FakeModel::start(Script::new(turns)).await.unwrap();
        let mut cmd = tackle(home.path());
        with_fake(&mut cmd, "openai", &fake);
        cmd.args(["run", "--events", "-", "--workspace"]).arg(home.path()).arg("echo something");
        let out = output(cmd).await;
        assert!(out.status.success(), "{}", text(&out.stderr));
        let events = text(&out.stdout);
        let expected = if deferred { "Echo: through the proxy" } else { "Echo: straight in" };
        assert!(events.contains(expected), "deferred={deferred}: {events}");
        let tools = fake.requests()[0].body["tools"].to_string();
        assert_eq!(
            tools.contains("\"everything__echo\""),
            !deferred,
            "deferred tools leave the catalog: {tools}"
        );
        assert_eq!(tools.contains("\"tool_search\""), deferred);
        let requests = fake.requests();
        assert!(requests.iter().all(|r| r.body["tools"] == requests[0].body["tools"]));
    }
    // `tackle mcp list` shows the server with its tools and their cost.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("tackle.toml"),
        format!(
            "[mcp.servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
            server.display().to_string()
        ),
    )
    .unwrap();
    let mut cmd = tackle(home.path());
    cmd.args(["mcp", "list", "--json", "--workspace"]).arg(home.path());
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["name"], "everything");
    assert_eq!(rows[0]["status"]["state"], "connected");
    assert!(rows[0]["tool_count"].as_u64().unwrap() > 5);
    assert!(rows[0]["definition_tokens"].as_u64().unwrap() > 100);
}

#[tokio::test]
async fn a_provider_that_never_answers_fails_after_the_configured_read_timeout() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![Turn::text("too late")])).await.unwrap();
    fake.push_fault(Fault::Latency { ms: 60_000 });
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    cmd.env("TACKLE_READ_TIMEOUT_SECS", "1").env("TACKLE_MAX_RETRIES", "0");
    cmd.args(["run", "hello", "--workspace"]).arg(home.path());
    let started = std::time::Instant::now();
    let out = output(cmd).await;
    // The default would wait 120 s per attempt; a bound far below the fake's 60 s latency
    // shows the setting was applied.
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).to_lowercase().contains("timed out") || text(&out.stderr).contains("timeout"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn completions_for_bash_zsh_and_fish() {
    let home = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let mut cmd = tackle(home.path());
        cmd.args(["completions", shell]);
        let out = output(cmd).await;
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        for word in ["sessions", "export", "results", "completions", "workspace"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    // --provider completes to the providers, codex included (not to file names), and the help of
    // every command that takes it lists them.
    let mut cmd = tackle(home.path());
    cmd.args(["completions", "bash"]);
    let bash = text(&output(cmd).await.stdout);
    let offered = r#"compgen -W "openai openai-responses anthropic codex""#;
    let after_flag = bash.split("--provider)").skip(1).collect::<Vec<_>>();
    assert!(after_flag.len() >= 3, "run, chat and serve take --provider");
    assert!(after_flag.iter().all(|rest| rest.trim_start().starts_with(&format!("COMPREPLY=($({offered}"))));
    for command in ["run", "chat", "serve"] {
        let mut cmd = tackle(home.path());
        cmd.args([command, "--help"]);
        let help = text(&output(cmd).await.stdout);
        assert!(help.contains("codex") && help.contains("openai-responses"), "{command}: {help}");
    }
    let mut cmd = tackle(home.path());
    cmd.args(["run", "hi", "--provider", "bogus"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("codex"), "the error lists the providers: {}", text(&out.stderr));
    // The bash script is valid bash.
    let mut cmd = tackle(home.path());
    cmd.args(["completions", "bash"]);
    let script = home.path().join("tackle.bash");
    std::fs::write(&script, output(cmd).await.stdout).unwrap();
    let check = Command::new("bash").arg("-n").arg(&script).output().unwrap();
    assert!(check.status.success(), "{}", text(&check.stderr));
    let mut cmd = tackle(home.path());
    cmd.args(["completions", "tcsh-nope"]);
    assert_eq!(output(cmd).await.status.code(), Some(2));
}

#[tokio::test]
async fn export_import_round_trips_and_offloaded_outputs_can_be_read() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![
        Turn::text("Counting.").with_call("shell", r#"{"command": "seq 1 3000"}"#),
        Turn::text("It counted to **3000**; a ``` fence inside stays in its block."),
    ]))
    .await
    .unwrap();
    let events = home.path().join("events.jsonl");
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    cmd.args(["run", "count to 3000", "--yes", "--json", "--workspace"])
        .arg(ws.path())
        .arg("--events")
        .arg(&events);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = serde_json::from_slice::<Value>(&out.stdout).unwrap()["session_id"].as_str().unwrap().to_owned();
    // The result line of the offloaded output: its real exit code (0: not shown), its last lines,
    // where the rest is; none of the reference's own lines.
    let stderr = text(&out.stderr);
    assert!(stderr.contains("✓ shell seq 1 3000"), "{stderr}");
    assert!(!stderr.contains("exit code"), "exit code 0 is not shown: {stderr}");
    assert!(stderr.contains("lines above") && stderr.contains("│ 3000"), "{stderr}");
    assert!(stderr.contains("full output: tackle results show out_"), "{stderr}");
    assert!(!stderr.contains("read_result"), "{stderr}");

    // The shell output was offloaded: `tackle results show` prints all of it, byte-exact.
    let locator = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|e| e["locator"].as_str().map(str::to_owned))
        .expect("an offloaded output");
    let mut cmd = tackle(home.path());
    cmd.args(["results", "show", &locator]);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let expected =
        format!("exit code: 0\nstdout:\n{}", (1..=3000).map(|i| format!("{i}\n")).collect::<String>());
    assert_eq!(text(&out.stdout), expected);
    let mut cmd = tackle(home.path());
    cmd.args(["results", "show", "out_00000000000000000000000000000000"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no stored output"), "{}", text(&out.stderr));

    // JSON export → import → export: the same conversation.
    let export = |id: String| {
        let mut cmd = tackle(home.path());
        cmd.args(["sessions", "export", &id, "--format", "json"]);
        async move {
            let out = output(cmd).await;
            assert!(out.status.success(), "{}", text(&out.stderr));
            serde_json::from_slice::<Value>(&out.stdout).unwrap()
        }
    };
    let first = export(id.clone()).await;
    assert_eq!(first["format"], "tackle-session/1");
    assert_eq!(first["messages"].as_array().unwrap().len(), 4);
    let file = home.path().join("export.json");
    std::fs::write(&file, first.to_string()).unwrap();
    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "import", "--json"]).arg(&file);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let imported =
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["imported"].as_str().unwrap().to_owned();
    assert_ne!(imported, id);
    // The same file again: refused before anything is written, naming the session it became;
    // --duplicate asks for another copy.
    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "import"]).arg(&file);
    let out = output(cmd).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("imported before, as session {imported}")), "{stderr}");
    assert!(stderr.contains("--duplicate"), "{stderr}");
    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "import", "--duplicate", "--json"]).arg(&file);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let copy = serde_json::from_slice::<Value>(&out.stdout).unwrap()["imported"].as_str().unwrap().to_owned();
    assert_ne!(copy, imported);
    let second = export(imported.clone()).await;
    assert_eq!(second["messages"], first["messages"]);
    assert_eq!(second["session"]["title"], first["session"]["title"]);

    // The imported session continues with its history.
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    fake.set_script(Script::new(vec![Turn::text("continued")]));
    cmd.args(["run", "and then?", "--json", "--session", &imported, "--workspace"]).arg(ws.path());
    assert!(output(cmd).await.status.success());
    assert!(fake.requests().last().unwrap().body.to_string().contains("count to 3000"));

    // Markdown: every message, tool calls with arguments, fences that hold.
    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "export", &id]);
    let md = text(&output(cmd).await.stdout);
    assert!(md.contains("## User") && md.contains("count to 3000"), "{md}");
    assert!(md.contains("**shell**") && md.contains("\"command\": \"seq 1 3000\""), "{md}");
    assert!(md.contains("It counted to **3000**"), "{md}");

    // A broken file is refused before anything is written.
    std::fs::write(&file, "{\"format\": \"something-else\"}").unwrap();
    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "import"]).arg(&file);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "list", "--json"]);
    let list: Value = serde_json::from_slice(&output(cmd).await.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 3, "the original, the import and its copy");

    // `sessions list` lines its columns up, with each session's workspace.
    let mut cmd = tackle(home.path());
    cmd.args(["sessions", "list"]);
    let listing = text(&output(cmd).await.stdout);
    let lines: Vec<&str> = listing.lines().collect();
    let workspace_at = lines[0].find("workspace").expect("a workspace column");
    for line in &lines[1..] {
        assert_eq!(line[workspace_at..].find(&ws.path().display().to_string()), Some(0), "{listing}");
    }
    let title_at = lines[0].find("title").unwrap();
    for line in &lines[1..] {
        assert!(
            line.len() > title_at && !line[..title_at].ends_with(|c: char| !c.is_whitespace()),
            "{listing}"
        );
    }
}

#[tokio::test]
async fn config_init_writes_a_commented_file_that_loads() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let mut cmd = tackle(home.path());
    cmd.args(["config", "init", "--workspace"]).arg(ws.path());
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(ws.path().join("tackle.toml")).unwrap();
    assert!(written.lines().all(|l| l.is_empty() || l.starts_with('#')), "all commented");
    assert!(written.contains("# max_steps = 25"));
    // Loads as it is, and with a line uncommented the setting takes effect.
    std::fs::write(ws.path().join("tackle.toml"), written.replace("# max_steps = 25", "max_steps = 7"))
        .unwrap();
    let mut cmd = tackle(home.path());
    cmd.args(["config", "--json", "--workspace"]).arg(ws.path());
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()["settings"]["max_steps"], 7);
    // The template's example data_dir, uncommented, is in the home directory: no directory
    // named `~` appears where Tackle runs. Its example model is the default model.
    assert!(written.contains("# model = \"gpt-4.1\""), "{written}");
    let line = written.lines().find(|l| l.starts_with("# data_dir = ")).unwrap();
    std::fs::write(ws.path().join("tackle.toml"), line.trim_start_matches("# ")).unwrap();
    let mut cmd = tackle(home.path());
    cmd.env_remove("TACKLE_HOME").current_dir(ws.path()).args(["sessions", "list"]);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!ws.path().join("~").exists(), "a literal ~ directory was created");
    let data = line.trim_start_matches("# data_dir = ").trim_matches('"').trim_start_matches("~/");
    assert!(home.path().join(data).join("tackle.db").is_file(), "the store is under HOME/{data}");
    // An existing file is kept.
    std::fs::write(ws.path().join("tackle.toml"), &written).unwrap();
    let mut cmd = tackle(home.path());
    cmd.args(["config", "init", "--workspace"]).arg(ws.path());
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--force"));
}

#[tokio::test]
async fn logs_and_status_lines_carry_no_escape_codes_off_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("list_files", r#"{"path": "."}"#),
        Turn::text("**bold** answer"),
    ]))
    .await
    .unwrap();
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    cmd.args(["-vv", "run", "hi", "--workspace"]).arg(home.path());
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(stderr.contains("DEBUG") || stderr.contains("INFO"), "logs were written: {stderr}");
    assert!(!stderr.contains('\x1b') && !stdout.contains('\x1b'), "{stderr:?}");
    assert!(stderr.contains("✓ list_files ."), "{stderr}");
    assert_eq!(stdout.trim(), "**bold** answer", "markdown passes through a pipe unchanged");
}

#[tokio::test]
async fn bad_input_exits_2_before_any_session_request_or_file() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![Turn::text("never")])).await.unwrap();
    let a_file = home.path().join("a-file");
    std::fs::write(&a_file, "not a directory").unwrap();
    /// Arguments, environment, and what the error must name.
    type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, &'a str);
    let cases: Vec<Case> = vec![
        (vec!["run", "--base-url", "not a url", "hi"], vec![], "not a url"),
        (vec!["run", "hi"], vec![("TACKLE_HOME", a_file.to_str().unwrap())], "a-file"),
        (vec!["run", "--events", "/no/such/dir/events.jsonl", "hi"], vec![], "/no/such/dir"),
        (vec!["run", ""], vec![], "prompt is empty"),
        (vec!["run", "   "], vec![], "prompt is empty"),
        (vec!["run", "--tool-mask", "{shell: false", "hi"], vec![], "--tool-mask"),
        (vec!["run", "--max-steps", "0", "hi"], vec![], "--max-steps"),
        (vec!["run", "hi"], vec![("TACKLE_MAX_STEPS", "lots")], "TACKLE_MAX_STEPS"),
        (vec!["serve", "--session", "abc"], vec![], "--session"),
        (vec!["serve", "--tool-mask", "{}"], vec![], "--tool-mask"),
        // The chosen provider's official API without its key: nothing is created or sent.
        (vec!["run", "--provider", "anthropic", "hi"], vec![], "ANTHROPIC_API_KEY"),
        // A data directory that cannot be created.
        (vec!["run", "hi"], vec![("TACKLE_HOME", "/proc/tackle-x")], "/proc/tackle-x"),
    ];
    for (args, env, says) in cases {
        let mut cmd = tackle(home.path());
        with_fake(&mut cmd, "openai", &fake);
        for (k, v) in &env {
            cmd.env(k, v);
        }
        cmd.args(&args).arg("--workspace").arg(home.path());
        let out = output(cmd).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?} should name {says:?}: {stderr}");
        assert!(fake.requests().is_empty(), "{args:?} sent a request");
        assert!(!home.path().join("data").exists(), "{args:?} created the store");
    }
}

#[tokio::test]
async fn run_dash_reads_the_prompt_from_stdin() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![Turn::text("read it")])).await.unwrap();
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    cmd.args(["run", "-", "--workspace"]).arg(home.path()).stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child.stdin.take().unwrap().write_all(b"the task from a pipe\n").unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let body = fake.requests()[0].body.to_string();
    assert!(body.contains("the task from a pipe") && !body.contains("\"-\""), "{body}");
}

/// `tackle CMD | head -1`: every command that prints, its reader gone before it writes (the read
/// end of its stdout closed at once, so the write fails every time, not by timing), exits as it
/// does when read to the end, without a panic.
#[tokio::test]
async fn every_printing_command_survives_a_closed_pipe() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::stateless(vec![Turn::text("the answer")])).await.unwrap();
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    cmd.args(["run", "remember this", "--json", "--workspace"]).arg(home.path());
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = serde_json::from_slice::<Value>(&out.stdout).unwrap()["session_id"].as_str().unwrap().to_owned();
    let ws = home.path().to_str().unwrap().to_owned();
    let commands: Vec<Vec<&str>> = vec![
        vec!["completions", "bash"],
        vec!["completions", "zsh"],
        vec!["completions", "fish"],
        vec!["--help"],
        vec!["sessions", "list"],
        vec!["sessions", "list", "--json"],
        vec!["sessions", "show", &id],
        vec!["sessions", "show", &id, "--json"],
        vec!["sessions", "export", &id, "--format", "md"],
        vec!["sessions", "export", &id, "--format", "json"],
        vec!["config"],
        vec!["config", "init", "--stdout"],
        vec!["sandbox", "check"],
        vec!["bench", "cache", "--steps", "4"],
        vec!["bench", "cache", "--steps", "4", "--json"],
        vec!["run", "again", "--workspace", &ws],
        vec!["run", "again", "--json", "--workspace", &ws],
        vec!["run", "again", "--events", "-", "--workspace", &ws],
    ];
    for args in commands {
        let run = |closed: bool| {
            let mut cmd = tackle(home.path());
            with_fake(&mut cmd, "openai", &fake);
            cmd.args(&args).env("RUST_BACKTRACE", "1");
            if closed {
                let (reader, writer) = std::io::pipe().unwrap();
                drop(reader);
                cmd.stdout(writer);
            }
            output(cmd)
        };
        let read = run(false).await;
        assert!(!read.stdout.is_empty(), "{args:?} prints: {}", text(&read.stderr));
        let closed = run(true).await;
        let stderr = text(&closed.stderr);
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{args:?}: {stderr}");
        assert_eq!(closed.status.code(), read.status.code(), "{args:?}: {stderr}");
    }
}

/// On Linux with glibc the binary's relative relocations are packed (`build.rs`), so the loader
/// does not read 1.4 MB of `RELA` entries into every process: the `DT_RELR` table is there,
/// and the `RELA` table holds only what RELR cannot say (well under 100 KB).
#[test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn the_binary_packs_its_relative_relocations() {
    let Ok(out) = Command::new("readelf").args(["-S", "-W", BIN]).output() else {
        peers::missing("readelf (binutils)", "not on PATH; it comes with the C toolchain that links Rust");
        return;
    };
    let sections = text(&out.stdout);
    let size = |name| section(&sections, name).map(|(_, size)| size);
    assert!(size(".relr.dyn").is_some_and(|s| s > 0), "no .relr.dyn section:\n{sections}");
    let rela = size(".rela.dyn").unwrap_or(0);
    assert!(rela < 100 * 1024, ".rela.dyn is {rela} bytes:\n{sections}");
}

/// The address and size of section `name` in `readelf -S -W`'s table.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn section(sections: &str, name: &str) -> Option<(u64, u64)> {
    sections.lines().find_map(|l| {
        let fields: Vec<&str> = l.split_whitespace().collect();
        let at = fields.iter().position(|w| *w == name)?;
        let hex = |i: usize| u64::from_str_radix(fields.get(at + i)?, 16).ok();
        Some((hex(2)?, hex(4)?))
    })
}

/// Where Rust's LLD links it, the binary starts its code with the functions of
/// `link-order.txt`, in the list's order (`build.rs`): the functions a run executes share as few
/// pages as they can. This test build's names differ from the shipped profile's for most generic
/// code, so the test checks the ones it has (a name defined once). In the shipped build all of
/// them are in order with nothing between (`scripts/link_order.sh` prints so); in this one a few
/// of std's precompiled functions stay where they were, so up to 1% may be out of order and 5%
/// of other functions between. A link that ignores the list has about half out of order (the
/// `dist` build without it: 2,004 of 4,130).
#[test]
#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
fn the_binary_places_the_functions_a_run_executes_first() {
    let (Ok(symbols), Ok(sections)) = (
        Command::new("nm").args(["--defined-only", "-n", BIN]).output(),
        Command::new("readelf").args(["-S", "-W", BIN]).output(),
    ) else {
        peers::missing(
            "nm and readelf (binutils)",
            "not on PATH; they come with the C toolchain that links Rust",
        );
        return;
    };
    let code: Vec<(u64, String)> = text(&symbols.stdout)
        .lines()
        .filter_map(|l| {
            let mut fields = l.split_whitespace();
            let address = u64::from_str_radix(fields.next()?, 16).ok()?;
            let kind = fields.next()?;
            let name = fields.next()?;
            ["t", "T"].contains(&kind).then(|| (address, name.to_owned()))
        })
        .collect();
    let mut count = std::collections::HashMap::<&str, usize>::new();
    for (_, name) in &code {
        *count.entry(name.as_str()).or_default() += 1;
    }
    let address: std::collections::HashMap<&str, u64> =
        code.iter().filter(|(_, n)| count[n.as_str()] == 1).map(|(a, n)| (n.as_str(), *a)).collect();
    let list = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("link-order.txt")).unwrap();
    let listed: Vec<u64> = list
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|name| address.get(name).copied())
        .collect();
    assert!(listed.len() >= 100, "only {} of link-order.txt's functions are in this build", listed.len());
    let (text_start, _) = section(&text(&sections.stdout), ".text").unwrap();
    assert_eq!(listed[0], text_start, "the list's first function does not start .text");
    let out_of_order = listed.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(
        out_of_order * 100 <= listed.len(),
        "{out_of_order} of {} listed functions are out of order",
        listed.len()
    );
    let end = listed.iter().copied().max().unwrap_or(text_start);
    let places: std::collections::HashSet<u64> = listed.iter().copied().collect();
    let between: Vec<&String> = code
        .iter()
        .filter(|(a, _)| *a > text_start && *a < end && !places.contains(a))
        .map(|(_, n)| n)
        .collect();
    assert!(
        between.len() * 20 <= listed.len(),
        "{} other functions sit among the {} listed ones: {:?}",
        between.len(),
        listed.len(),
        &between[..between.len().min(10)]
    );
}

//! The real `tackle` binary: demo, run in both wire formats, sessions, exit codes, the REPL, and
//! resuming after the process is killed between steps.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use tackle_testkit::{FakeModel, Fault, Script, Turn};

const BIN: &str = env!("CARGO_BIN_EXE_tackle");

/// A command with a clean environment: no provider keys, a private data directory.
fn tackle(home: &Path) -> Command {
    let mut cmd = Command::new(BIN);
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
    assert!(stderr.contains("error not_found"), "the demo recovers from a real tool error: {stderr}");
    assert!(stderr.contains("Hello, world!"));
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

    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, "openai", &fake);
    cmd.args(["run", "continue", "--json", "--session", &id, "--workspace"]).arg(ws.path());
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["text"], "finished after resume");
    let resumed = fake.requests().last().unwrap().body.to_string();
    assert!(resumed.contains("write step1") && resumed.contains("created step1.txt"), "{resumed}");
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
    for _ in 0..200 {
        if !fake.requests().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    tokio::time::sleep(Duration::from_millis(200)).await;
    stdin.write_all(b"again\n/quit\n").unwrap();
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
        assert_eq!(r["tool_errors"], 2);
        assert!(r["cache_read_tokens"].as_u64().unwrap() > 0);
    }

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

/// The MCP reference server `server-everything`, installed by scripts/test-deps.sh.
fn everything_server() -> Option<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path =
        root.join("target/test-deps/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("TACKLE_REQUIRE_PEERS").is_none(),
        "server-everything missing: run scripts/test-deps.sh"
    );
    eprintln!("skipped: server-everything is not installed (run scripts/test-deps.sh)");
    None
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

//! `tackle mcp serve` through the real binary against the scripted fake model, driven by the
//! official MCP clients, unmodified (installed by scripts/test-deps.sh): the Python SDK (pip
//! `mcp`), the TypeScript SDK (npm `@modelcontextprotocol/sdk`) and the MCP Inspector CLI (npm
//! `@modelcontextprotocol/inspector-cli`), each over stdio and over Streamable HTTP with a bearer
//! token. Each lists the tools, runs a task with `tackle` and continues its session with
//! `tackle_reply`; the sessions are then read back with `tackle sessions show`. The two SDKs also
//! run a task with an `output_schema`: they validate the structured content against the declared
//! `outputSchema` themselves (and are shown refusing a copy that breaks it), the model is asked
//! natively, and a bad `output_schema` is a tool error that creates no session.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use tackle_testkit::{FakeModel, Script, Turn, peers};

const BIN: &str = env!("CARGO_BIN_EXE_tackle");
const TOKEN: &str = "alice-token-0123456789abcdef";
const FIRST: &str = "Hello from the fake.";
const SECOND: &str = "Second answer.";

fn peer_script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers").join(name)
}

/// The environment of a `tackle` on the fake model, isolated in `home`.
fn isolate(cmd: &mut Command, home: &Path, fake: &FakeModel) {
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TACKLE_HOME", home.join("data"))
        .env("TACKLE_PROVIDER", "openai")
        .env("TACKLE_MODEL", "gpt-test")
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
        .env("TACKLE_SANDBOX_MODE", "off");
}

struct Rig {
    fake: FakeModel,
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
}

impl Rig {
    async fn new() -> Self {
        Self::with(Script::new(vec![Turn::text(FIRST), Turn::text(SECOND)])).await
    }

    async fn with(script: Script) -> Self {
        let fake = FakeModel::start(script).await.unwrap();
        Self { fake, home: tempfile::tempdir().unwrap(), ws: tempfile::tempdir().unwrap() }
    }

    /// A peer client command with the environment `tackle` needs (stdio clients start it).
    fn client(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        isolate(&mut cmd, self.home.path(), &self.fake);
        cmd.env("TACKLE_NODE_MODULES", peers::node_modules()).stdin(Stdio::null());
        cmd
    }

    fn tackle(&self) -> Command {
        let mut cmd = Command::new(BIN);
        isolate(&mut cmd, self.home.path(), &self.fake);
        cmd.stdin(Stdio::null());
        cmd
    }

    /// `tackle mcp serve --http 127.0.0.1:0` with a token for alice; its endpoint URL.
    fn serve_http(&self, extra: &[&str]) -> Served {
        let mut child = self
            .tackle()
            .env("TACKLE_SERVER_TOKENS", format!("alice:{TOKEN}"))
            .args(["mcp", "serve", "--http", "127.0.0.1:0", "--workspace"])
            .arg(self.ws.path())
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        let url = first.trim().strip_prefix("tackle mcp serving on ").expect(&first).to_owned();
        Served(child, url)
    }

    /// `tackle sessions show ID --json`.
    fn session(&self, id: &str) -> Value {
        let out = self.tackle().args(["sessions", "show", id, "--json"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The user messages and answers of session `id`, in order.
    fn conversation(&self, id: &str) -> Vec<String> {
        self.session(id)["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["message"]["content"].as_array().cloned().unwrap_or_default())
            .filter_map(|c| c["text"].as_str().map(str::to_owned))
            .collect()
    }

    /// What every client must have seen: both tools; the task's answer and session id as text
    /// and as structured content; the reply in the same session; both turns stored, owned by
    /// `owner`.
    fn check(&self, out: &Value, owner: &str, progress: bool) {
        assert_eq!(out["tools"], json!(["tackle", "tackle_reply"]), "{out}");
        let first = &out["first"];
        let id = first["structured"]["session_id"].as_str().expect("a session id").to_owned();
        assert_eq!(first["is_error"], false, "{out}");
        assert_eq!(first["structured"]["answer"], FIRST);
        assert_eq!(first["structured"]["end"], "completed");
        assert_eq!(first["text"][0], FIRST);
        assert!(first["text"][1].as_str().unwrap().contains(&id), "the text names the session: {out}");
        if progress {
            let messages: Vec<&str> =
                first["progress"].as_array().unwrap().iter().filter_map(|p| p["message"].as_str()).collect();
            assert!(messages.contains(&"step 1 of at most 25"), "progress while the turn ran: {out}");
        }
        let second = &out["second"];
        assert_eq!(second["is_error"], false, "{out}");
        assert_eq!(second["structured"]["session_id"], id.as_str(), "the reply continues the session");
        assert_eq!(second["structured"]["answer"], SECOND);
        assert_eq!(second["text"][0], SECOND);
        // The reply's model request carried the first turn: one conversation.
        let requests = self.fake.requests();
        assert_eq!(requests.len(), 2);
        assert!(requests[1].body["messages"].to_string().contains(FIRST));
        assert_eq!(self.conversation(&id), ["Say hello.", FIRST, "And again.", SECOND]);
        assert_eq!(self.session(&id)["session"]["owner"], owner);
    }
}

fn report_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"files": {"type": "integer"}, "summary": {"type": "string"}},
        "required": ["files", "summary"],
        "additionalProperties": false
    })
}

const REPORT: &str = r#"{"files": 1, "summary": "one file, a.txt"}"#;

impl Rig {
    async fn typed() -> Self {
        Self::with(Script::new(vec![Turn::text(REPORT)])).await
    }

    /// What a client of the `typed` scenario must have seen: the answer as JSON in `output` and
    /// as text, validated by the SDK against a self-contained declared schema whose validator
    /// refuses a broken copy; the model asked natively; the bad schema refused, with one session
    /// in the store, the typed task's.
    fn check_typed(&self, out: &Value) {
        let declared = &out["output_schema"];
        assert_eq!(declared["type"], "object", "{out}");
        assert!(!declared.to_string().contains("$ref"), "{declared}");
        let typed = &out["typed"];
        assert_eq!(typed["is_error"], false, "{out}");
        assert_eq!(typed["structured"]["output"], json!({"files": 1, "summary": "one file, a.txt"}));
        assert_eq!(typed["structured"]["end"], "completed");
        assert_eq!(typed["text"][0], r#"{"files":1,"summary":"one file, a.txt"}"#, "the text is the JSON");
        let refused =
            out["broken_refused"].as_str().unwrap_or_else(|| panic!("the SDK accepted a broken copy: {out}"));
        assert!(
            refused.contains("end") || refused.contains("enum") || refused.contains("finished"),
            "{refused}"
        );
        let bad = &out["bad"];
        assert_eq!(bad["is_error"], true, "{out}");
        let message = bad["text"][0].as_str().unwrap();
        assert!(message.contains("invalid `output_schema`") && message.contains("JSON Schema"), "{message}");
        assert!(bad["structured"].is_null(), "{out}");
        let requests = self.fake.requests();
        assert_eq!(requests.len(), 1, "the bad schema cost no model call");
        assert_eq!(
            requests[0].body["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "output", "schema": report_schema(), "strict": true}})
        );
        let out = self.tackle().args(["sessions", "list", "--json"]).output().unwrap();
        let list: Value = serde_json::from_slice(&out.stdout).unwrap();
        let ids: Vec<&str> = list.as_array().unwrap().iter().filter_map(|s| s["id"].as_str()).collect();
        assert_eq!(ids, [typed["structured"]["session_id"].as_str().unwrap()], "no session for the bad call");
    }
}

struct Served(Child, String);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run_json(mut cmd: Command) -> Value {
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the client failed:\n{stderr}\n{}", String::from_utf8_lossy(&out.stdout));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{stderr}", String::from_utf8_lossy(&out.stdout)))
}

fn python() -> Option<PathBuf> {
    peers::or_skip(peers::venv_python("mcp"))
}

fn typescript() -> Option<()> {
    peers::or_skip(peers::npm_package("@modelcontextprotocol/sdk")).map(|_| ())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_runs_a_task_and_replies_over_stdio() {
    let Some(python) = python() else { return };
    let rig = Rig::new().await;
    let mut cmd = rig.client(python);
    cmd.arg(peer_script("mcp_serve_client.py")).args(["stdio", BIN]).arg(rig.ws.path());
    let out = tokio::task::spawn_blocking(move || run_json(cmd)).await.unwrap();
    rig.check(&out, "local", true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_runs_a_task_and_replies_over_http() {
    let Some(python) = python() else { return };
    let rig = Rig::new().await;
    let served = rig.serve_http(&[]);
    let mut cmd = rig.client(python);
    cmd.arg(peer_script("mcp_serve_client.py")).args(["http", &served.1, TOKEN]);
    let out = tokio::task::spawn_blocking(move || run_json(cmd)).await.unwrap();
    rig.check(&out, "alice", true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_runs_a_task_and_replies_over_stdio() {
    let Some(()) = typescript() else { return };
    let rig = Rig::new().await;
    let mut cmd = rig.client("node");
    cmd.arg(peer_script("mcp_serve_client.mjs")).args(["stdio", BIN]).arg(rig.ws.path());
    let out = tokio::task::spawn_blocking(move || run_json(cmd)).await.unwrap();
    rig.check(&out, "local", true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_runs_a_task_and_replies_over_http() {
    let Some(()) = typescript() else { return };
    let rig = Rig::new().await;
    let served = rig.serve_http(&[]);
    let mut cmd = rig.client("node");
    cmd.arg(peer_script("mcp_serve_client.mjs")).args(["http", &served.1, TOKEN]);
    let out = tokio::task::spawn_blocking(move || run_json(cmd)).await.unwrap();
    rig.check(&out, "alice", true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_validates_a_typed_answer_over_stdio() {
    let Some(python) = python() else { return };
    let rig = Rig::typed().await;
    let mut cmd = rig.client(python);
    cmd.arg(peer_script("mcp_serve_client.py")).args(["stdio", BIN]).arg(rig.ws.path()).arg("typed");
    let out = tokio::task::spawn_blocking(move || run_json(cmd)).await.unwrap();
    rig.check_typed(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_validates_a_typed_answer_over_http() {
    let Some(python) = python() else { return };
    let rig = Rig::typed().await;
    let served = rig.serve_http(&[]);
    let mut cmd = rig.client(python);
    cmd.arg(peer_script("mcp_serve_client.py")).args(["http", &served.1, TOKEN, "typed"]);
    let out = tokio::task::spawn_blocking(move || run_json(cmd)).await.unwrap();
    rig.check_typed(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_validates_a_typed_answer_over_stdio() {
    let Some(()) = typescript() else { return };
    let rig = Rig::typed().await;
    let mut cmd = rig.client("node");
    cmd.arg(peer_script("mcp_serve_client.mjs")).args(["stdio", BIN]).arg(rig.ws.path()).arg("typed");
    let out = tokio::task::spawn_blocking(move || run_json(cmd)).await.unwrap();
    rig.check_typed(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_validates_a_typed_answer_over_http() {
    let Some(()) = typescript() else { return };
    let rig = Rig::typed().await;
    let served = rig.serve_http(&[]);
    let mut cmd = rig.client("node");
    cmd.arg(peer_script("mcp_serve_client.mjs")).args(["http", &served.1, TOKEN, "typed"]);
    let out = tokio::task::spawn_blocking(move || run_json(cmd)).await.unwrap();
    rig.check_typed(&out);
}

/// The Inspector CLI's directory. It reads its own package.json by a path relative to the
/// working directory (`../package.json`), so it runs from its `build` directory.
fn inspector() -> Option<PathBuf> {
    peers::or_skip(peers::npm_package("@modelcontextprotocol/inspector-cli")).map(|d| d.join("build"))
}

/// Lists the tools, calls `tackle`, then `tackle_reply` on its session, one Inspector CLI
/// invocation each (`target`: the server command or URL and its options), as [`Rig::check`]
/// reads them.
async fn inspect(rig: &Rig, dir: &Path, target: &[String]) -> Value {
    let run = |args: Vec<String>| {
        let mut cmd = rig.client("node");
        cmd.current_dir(dir).arg("index.js").args(target).args(args);
        tokio::task::spawn_blocking(move || run_json(cmd))
    };
    let tools = run(vec!["--method".into(), "tools/list".into()]).await.unwrap();
    let call = |name: &str, args: &[(&str, &str)]| {
        let mut argv = vec!["--method".into(), "tools/call".into(), "--tool-name".into(), name.to_owned()];
        argv.push("--tool-arg".into());
        argv.extend(args.iter().map(|(k, v)| format!("{k}={v}")));
        run(argv)
    };
    let summary = |r: &Value| {
        json!({
            "text": r["content"].as_array().unwrap().iter().map(|c| c["text"].clone()).collect::<Vec<_>>(),
            "structured": r["structuredContent"],
            "is_error": r["isError"].as_bool().unwrap_or(false),
        })
    };
    let first = call("tackle", &[("prompt", "Say hello.")]).await.unwrap();
    let id = first["structuredContent"]["session_id"].as_str().expect("a session id").to_owned();
    let second = call("tackle_reply", &[("session_id", &id), ("prompt", "And again.")]).await.unwrap();
    let mut names: Vec<&str> =
        tools["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    json!({"tools": names, "first": summary(&first), "second": summary(&second)})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_cli_lists_and_calls_the_tools_over_stdio() {
    let Some(dir) = inspector() else { return };
    let rig = Rig::new().await;
    let target = [BIN, "mcp", "serve", "--workspace"].map(str::to_owned).into_iter();
    let target: Vec<String> = target.chain([rig.ws.path().display().to_string()]).collect();
    let out = inspect(&rig, &dir, &target).await;
    rig.check(&out, "local", false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_cli_lists_and_calls_the_tools_over_http() {
    let Some(dir) = inspector() else { return };
    let rig = Rig::new().await;
    let served = rig.serve_http(&[]);
    let target = vec![served.1.clone(), "--header".into(), format!("Authorization: Bearer {TOKEN}")];
    let out = inspect(&rig, &dir, &target).await;
    rig.check(&out, "alice", false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_needs_a_configured_token_and_no_token_means_loopback_only() {
    let rig = Rig::new().await;
    let served = rig.serve_http(&[]);
    let client = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    for token in [None, Some("wrong-token-0123456789abcdef")] {
        let mut request =
            client.post(&served.1).header("accept", "application/json, text/event-stream").json(&init);
        if let Some(t) = token {
            request = request.bearer_auth(t);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401, "token {token:?}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "unauthorized");
    }
    let response = client
        .post(&served.1)
        .bearer_auth(TOKEN)
        .header("accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    // Without tokens, a non-loopback address is refused before anything is bound or created.
    let fresh = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    isolate(&mut cmd, fresh.path(), &rig.fake);
    let out =
        cmd.args(["mcp", "serve", "--http", "0.0.0.0:0", "--workspace"]).arg(rig.ws.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("without authentication") && stderr.contains("--http 127.0.0.1:PORT"),
        "{stderr}"
    );
    assert!(!fresh.path().join("data").exists(), "nothing was created: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_exposes_tackles_own_tools_through_the_executor() {
    let Some(dir) = inspector() else { return };
    let rig = Rig::new().await;
    std::fs::write(rig.ws.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let run = |args: &[&str]| {
        let mut cmd = rig.client("node");
        cmd.current_dir(&dir)
            .arg("index.js")
            .args([BIN, "mcp", "serve", "--tools", "--workspace"])
            .arg(rig.ws.path())
            .args(args);
        tokio::task::spawn_blocking(move || run_json(cmd))
    };
    let tools = run(&["--method", "tools/list"]).await.unwrap();
    let names: Vec<&str> =
        tools["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    for name in ["tackle", "tackle_reply", "read_file", "write_file", "shell"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let read = run(&["--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=notes.txt"])
        .await
        .unwrap();
    assert_eq!(read["isError"], false, "{read}");
    assert!(read["content"][0]["text"].as_str().unwrap().contains("beta"), "{read}");
    // A call that needs confirmation, from a client that cannot be asked: the configured policy
    // (`deny`) refuses it with Tackle's error envelope, and nothing is written.
    let write = run(&[
        "--method",
        "tools/call",
        "--tool-name",
        "write_file",
        "--tool-arg",
        "path=out.txt",
        "content=x",
    ])
    .await
    .unwrap();
    assert_eq!(write["isError"], true, "{write}");
    let envelope: Value = serde_json::from_str(write["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["category"], "denied", "{envelope}");
    assert_eq!(envelope["tool"], "write_file");
    assert!(!rig.ws.path().join("out.txt").exists());
    // No model was asked anything.
    assert!(rig.fake.requests().is_empty());
}

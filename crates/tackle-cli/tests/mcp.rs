//! MCP through the real binary: the reference `server-everything` (npm, installed by
//! scripts/test-deps.sh) asking the user a question through the sessions API of `tackle serve`
//! and through `tackle run`; the `tackle mcp` commands on it; and a server that needs a sign-in
//! failing fast in an unattended run, naming `tackle mcp login`.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use tackle_testkit::{FakeModel, Script, Turn, peers};

const BIN: &str = env!("CARGO_BIN_EXE_tackle");
const TOKEN: &str = "alice-token-0123456789abcdef";

fn everything() -> Option<PathBuf> {
    let dir = peers::or_skip(peers::npm_package("@modelcontextprotocol/server-everything"))?;
    Some(dir.join("dist/index.js"))
}

fn servers(script: &Path) -> String {
    json!({"everything": {"command": "node", "args": [script, "stdio"], "start_timeout_secs": 30}})
        .to_string()
}

fn tackle(home: &Path, fake: &FakeModel) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TACKLE_HOME", home.join("data"))
        .env("TACKLE_PROVIDER", "openai")
        .env("TACKLE_MODEL", "gpt-test")
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
        .env("TACKLE_SANDBOX_MODE", "off")
        .stdin(Stdio::null());
    cmd
}

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads SSE events until `stop` says so (inclusive).
async fn read_until<B: AsRef<[u8]>>(
    body: &mut (impl futures::Stream<Item = reqwest::Result<B>> + Unpin),
    buffer: &mut String,
    stop: impl Fn(&str, &Value) -> bool,
) -> Vec<(String, Value)> {
    let mut events = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let (mut name, mut data) = (None, String::new());
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    name = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            let Some(name) = name else { continue };
            let data: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
            let done = stop(&name, &data);
            events.push((name, data));
            if done {
                return events;
            }
        }
        let chunk = tokio::time::timeout_at(deadline.into(), body.next()).await.expect("events in time");
        match chunk {
            Some(chunk) => buffer.push_str(&String::from_utf8_lossy(chunk.unwrap().as_ref())),
            None => return events,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_question_is_answered_through_the_sessions_api() {
    let Some(script) = everything() else { return };
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("everything__trigger-elicitation-request", "{}"),
        Turn::text("Thanks, noted."),
        Turn::text("Read it."),
    ]))
    .await
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let mut child = tackle(home.path(), &fake)
        .env("TACKLE_SERVER_TOKENS", format!("alice:{TOKEN}"))
        .env("TACKLE_MCP_SERVERS", servers(&script))
        .args(["serve", "--bind", "127.0.0.1:0", "--workspace"])
        .arg(ws.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let base = first.trim().strip_prefix("tackle serving on ").expect(&first).to_owned();
    let server = Server(child, base);
    let url = |path: &str| format!("{}{path}", server.1);
    let client = reqwest::Client::new();

    let session: Value = client
        .post(url("/v1/sessions"))
        .bearer_auth(TOKEN)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = session["id"].as_str().unwrap().to_owned();
    let response = client
        .post(url(&format!("/v1/sessions/{id}/messages")))
        .bearer_auth(TOKEN)
        .json(&json!({"message": "sign me up", "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let events = read_until(&mut body, &mut buffer, |name, _| name == "elicitation_requested").await;
    let (_, asked) = events.last().unwrap();
    assert_eq!(asked["mode"], "form", "{asked}");
    assert_eq!(asked["server"], "everything");
    assert_eq!(asked["schema"]["required"], json!(["name"]));
    let question = asked["elicitation_id"].as_str().unwrap().to_owned();

    // Listed like an approval, under the session (the event may arrive first).
    let mut list = Value::Null;
    for _ in 0..200 {
        list = client
            .get(url(&format!("/v1/sessions/{id}/elicitations")))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if list["elicitations"].as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(list["elicitations"][0]["id"], question.as_str(), "{list}");
    assert_eq!(list["elicitations"][0]["schema"]["properties"]["email"]["format"], "email");

    // An answer that does not fit the form is refused, and nothing is answered.
    let bad = client
        .post(url(&format!("/v1/elicitations/{question}")))
        .bearer_auth(TOKEN)
        .json(&json!({"action": "accept", "content": {"email": "not an address"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let problem: Value = bad.json().await.unwrap();
    assert!(problem.to_string().contains("name"), "the missing field is named: {problem}");
    // Someone else's token sees nothing.
    let unknown = client
        .post(url("/v1/elicitations/no-such-question"))
        .bearer_auth(TOKEN)
        .json(&json!({"action": "decline"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);

    let ok = client
        .post(url(&format!("/v1/elicitations/{question}")))
        .bearer_auth(TOKEN)
        .json(&json!({"action": "accept", "content": {"name": "Ada Lovelace", "email": "ada@example.com"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let rest = read_until(&mut body, &mut buffer, |name, _| name == "turn_finished").await;
    let resolved = rest.iter().find(|(n, _)| n == "elicitation_resolved").expect("resolved event");
    assert_eq!(resolved.1["action"], "accept");
    // What the model read: the server saw the answer, defaults filled in.
    let sent = fake.requests().last().unwrap().body.to_string();
    assert!(sent.contains("Name: Ada Lovelace"), "{sent}");
    assert!(sent.contains("Favorite Integer: 42"), "the form's defaults were sent: {sent}");
    let again = client
        .post(url(&format!("/v1/elicitations/{question}")))
        .bearer_auth(TOKEN)
        .json(&json!({"action": "decline"}))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 404, "answered once");

    // A resource attached through the API's field; an unreadable one is refused before the turn.
    let attach = |uri: &str| json!({"message": "what is in it?", "stream": false, "resources": [{"server": "everything", "uri": uri}]});
    let refused = client
        .post(url(&format!("/v1/sessions/{id}/messages")))
        .bearer_auth(TOKEN)
        .json(&attach("demo://resource/static/document/nope.md"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let problem = refused.text().await.unwrap();
    assert!(
        problem.contains("cannot attach @everything:demo://resource/static/document/nope.md"),
        "{problem}"
    );
    let done: Value = client
        .post(url(&format!("/v1/sessions/{id}/messages")))
        .bearer_auth(TOKEN)
        .json(&attach("demo://resource/static/document/features.md"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(done["text"], "Read it.", "{done}");
    let sent = fake.requests().last().unwrap().body.to_string();
    assert!(sent.contains("# Everything Server - Features"), "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_question_is_answered_in_the_web_page() {
    let Some(script) = everything() else { return };
    let Some(browser) = peers::or_skip(peers::chromium()) else { return };
    let Some(_) = peers::or_skip(peers::npm_package("playwright-core")) else { return };
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("everything__trigger-elicitation-request", "{}"),
        Turn::text("Thanks, noted."),
    ]))
    .await
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let mut child = tackle(home.path(), &fake)
        .env("TACKLE_MCP_SERVERS", servers(&script))
        .args(["serve", "--bind", "127.0.0.1:0", "--workspace"])
        .arg(ws.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let base = first.trim().strip_prefix("tackle serving on ").expect(&first).to_owned();
    let _server = Server(child, base.clone());
    // Screenshots under the target directory; in docs/screens only on request
    // (`TACKLE_UPDATE_SCREENS=1`), so the suite leaves the tree as it found it.
    let shots = if std::env::var_os("TACKLE_UPDATE_SCREENS").is_some_and(|v| v == "1") {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/screens")
    } else {
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screens")
    };
    std::fs::create_dir_all(&shots).unwrap();
    let out = tokio::process::Command::new("node")
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/web_question.mjs"))
        .arg(&base)
        .env("TACKLE_NODE_MODULES", peers::node_modules())
        .env("CHROMIUM", &browser)
        .env("SCREENSHOT_DIR", &shots)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the browser run failed:\n{stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["errors"], json!([]), "no script errors in the page");
    assert!(seen["asks"].as_str().unwrap().starts_with("everything asks: Please provide inputs"), "{seen}");
    assert_eq!(seen["status"], "waiting for an answer");
    let fields = seen["fields"].as_array().unwrap();
    assert!(fields.len() >= 10 && fields.contains(&json!("email")), "{seen}");
    assert_eq!(seen["defaults"], json!({"integer": "42", "friend": "Monica", "hero": "Superman"}), "{seen}");
    assert!(seen["problem"].as_str().unwrap().contains("name"), "the server's refusal is shown: {seen}");
    let output = seen["output"].as_str().unwrap();
    assert!(output.contains("Name: Ada Lovelace") && output.contains("Agreed to terms: true"), "{output}");
    assert_eq!(seen["answered"], true);
    let sent = fake.requests().last().unwrap().body.to_string();
    assert!(sent.contains("hero-3"), "the titled choice sent its value: {sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unattended_run_declines_questions_it_cannot_answer_and_says_why() {
    let Some(script) = everything() else { return };
    let fake = FakeModel::start(Script::stateless(vec![
        Turn::call("everything__trigger-elicitation-request", "{}"),
        Turn::text("ok"),
    ]))
    .await
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    for (flag, why) in [(None, "re-run with --yes"), (Some("--yes"), "name without defaults")] {
        let mut cmd = tackle(home.path(), &fake);
        cmd.env("TACKLE_MCP_SERVERS", servers(&script)).args(["run", "--workspace"]).arg(ws.path());
        if let Some(flag) = flag {
            cmd.arg(flag);
        }
        let out = cmd.arg("sign me up").output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let sent = fake.requests().last().unwrap().body.to_string();
        assert!(sent.contains("User declined"), "the server was told no: {sent}");
        assert!(sent.contains(why), "the model is told why ({why}): {sent}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_commands_manage_and_try_a_server() {
    let Some(script) = everything() else { return };
    let fake = FakeModel::start(Script::new(vec![])).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("tackle.toml"), "# kept\nmax_steps = 9\n").unwrap();
    let run = |args: &[&str]| {
        let out = tackle(home.path(), &fake).current_dir(ws.path()).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let script = script.to_string_lossy().into_owned();
    let (code, _, err) = run(&["mcp", "add", "ev", "--env", "LOG=warn", "--", "node", &script, "stdio"]);
    assert_eq!(code, Some(0), "{err}");
    let toml = std::fs::read_to_string(ws.path().join("tackle.toml")).unwrap();
    assert!(toml.starts_with("# kept\nmax_steps = 9\n") && toml.contains("[mcp.servers.ev]"), "{toml}");

    let (code, out, err) = run(&["mcp", "list", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows[0]["status"]["state"], "connected", "{rows}");
    assert_eq!(rows[0]["protocol"], "2025-11-25", "the reference server falls back from 2026-07-28: {rows}");

    let (code, out, _) = run(&["mcp", "tools", "ev", "--json"]);
    assert_eq!(code, Some(0));
    let tools: Value = serde_json::from_str(&out).unwrap();
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "get-sum" && t["inputSchema"]["properties"]["a"].is_object())
    );

    let (code, out, err) = run(&["mcp", "call", "ev", "get-sum", r#"{"a": 2, "b": 40}"#]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("42"), "{out}");
    let (code, _, err) = run(&["mcp", "call", "ev", "nope"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("has no tool `nope`") && err.contains("get-sum"), "{err}");
    let (code, _, err) = run(&["mcp", "call", "ev", "get-sum", "[1]"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("JSON object"), "{err}");

    let (code, out, err) = run(&["mcp", "resources", "ev", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let listing: Value = serde_json::from_str(&out).unwrap();
    let uri = listing["resources"][0]["uri"].as_str().expect("resources listed").to_owned();
    let (code, out, err) = run(&["mcp", "resources", "ev", "--read", &uri]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!out.trim().is_empty());

    let (code, out, err) = run(&["mcp", "prompts", "ev"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("/ev:"), "{out}");
    let (code, out, err) =
        run(&["mcp", "prompts", "ev", "--get", "args-prompt", "--arg", "city=Paris", "--arg", "state=TX"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Paris"), "{out}");

    let (code, out, err) = run(&["mcp", "get", "ev"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("2025-11-25") && out.contains("LOG = \"********\""), "env values are masked: {out}");

    let (code, _, err) = run(&["mcp", "remove", "ev"]);
    assert_eq!(code, Some(0), "{err}");
    let toml = std::fs::read_to_string(ws.path().join("tackle.toml")).unwrap();
    assert!(toml.starts_with("# kept\n") && !toml.contains("[mcp.servers.ev]"), "{toml}");
    let (code, _, err) = run(&["mcp", "get", "ev"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no MCP server `ev`"), "{err}");
}

/// A Streamable HTTP server that answers every request 401, as an OAuth-protected one does to a
/// client without a token.
async fn unauthorized_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = vec![0u8; 65536];
                let _ = stream.read(&mut buf).await;
                let body = r#"{"error":"invalid_token"}"#;
                let response = format!(
                    "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer resource_metadata=\"http://{addr}/.well-known/oauth-protected-resource\"\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}/mcp")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_needs_a_sign_in_fails_fast_in_an_unattended_run() {
    let url = unauthorized_server().await;
    let fake = FakeModel::start(Script::stateless(vec![Turn::text("done without it")])).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = tackle(home.path(), &fake)
        .env("TACKLE_MCP_SERVERS", json!({"hosted": {"url": url}}).to_string())
        .args(["run", "--workspace"])
        .arg(ws.path())
        .arg("hello")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the run goes on without the server: {err}");
    assert!(err.contains("tackle mcp login hosted"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20), "no hang: {:?}", started.elapsed());
    // `tackle mcp get` says the same.
    let out = tackle(home.path(), &fake)
        .env("TACKLE_MCP_SERVERS", json!({"hosted": {"url": url}}).to_string())
        .args(["mcp", "get", "hosted", "--workspace"])
        .arg(ws.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("tackle mcp login hosted"), "{text}");
}

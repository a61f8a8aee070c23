//! The HTTP API against its own OpenAPI document: schemathesis (pinned in the test venv by
//! scripts/test-deps.sh) runs every check it has against a real `tackle serve` over the
//! scripted fake model, and must find nothing.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tackle_testkit::{FakeModel, Script, Turn, peers};

const BIN: &str = env!("CARGO_BIN_EXE_tackle");
const TOKEN: &str = "alice-conformance-token-0123456789";

/// Kills the server when the test ends, whatever happens.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_api_conforms_to_its_openapi_document() {
    let Some(st) = peers::or_skip(peers::venv_bin("st")) else { return };
    let fake = FakeModel::start(Script::stateless(vec![Turn::text("ok")])).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let workspace = home.path().join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    let mut server = Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("TACKLE_HOME", home.path().join("data"))
        .env("TACKLE_PROVIDER", "openai")
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
        .env("TACKLE_SERVER_TOKENS", format!("alice:{TOKEN}"))
        .args(["serve", "--bind", "127.0.0.1:0", "--workspace"])
        .arg(&workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let _server = Server(server);
    let base = first.trim().strip_prefix("tackle serving on ").expect(&first).to_owned();

    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/schemathesis.toml");
    let reports = home.path().join("schemathesis");
    let hooks = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/hooks.py");
    let run = Command::new(st)
        .env("SCHEMATHESIS_HOOKS", &hooks)
        .arg("--no-color")
        .arg("--config-file")
        .arg(&config)
        .arg("run")
        .arg(format!("{base}/openapi.json"))
        .args(["--header", &format!("Authorization: Bearer {TOKEN}")])
        // One worker: with several, CPython before 3.11.8 / 3.12.1 can fail parsing source in
        // threads ("AST constructor recursion depth mismatch", gh-106905), which hypothesis does to
        // describe its strategies; Debian 12's python3 is 3.11.2.
        .args(["--checks", "all", "--max-examples", "40", "--workers", "1", "--request-timeout", "30"])
        .arg("--report-dir")
        .arg(&reports)
        .current_dir(home.path())
        .stdin(Stdio::null())
        .output();
    let out = tokio::time::timeout(Duration::from_secs(280), tokio::task::spawn_blocking(move || run))
        .await
        .expect("schemathesis ran longer than 280 s")
        .unwrap()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "schemathesis found failures (the seed is in its summary):\n{text}");
    let summary = text.lines().rev().find(|l| l.contains(" in ") && l.starts_with('=')).unwrap_or("");
    assert!(!summary.contains("failure") && !summary.contains("error"), "{text}");
    // Every operation of the document, however many it has, was tested.
    let field = |name: &str| {
        text.lines().find_map(|l| l.trim().strip_prefix(name)).map(str::trim).unwrap_or_default().to_owned()
    };
    let total = field("Selected:").rsplit('/').next().unwrap_or_default().to_owned();
    assert!(!total.is_empty() && field("Tested:") == total, "every operation was tested:\n{text}");
}

//! `tackle run --output-schema FILE` of the real binary against the fake model in the three wire
//! formats: the request asks natively, stdout is exactly the JSON answer, an invalid answer is
//! repaired once and a second one fails with `output_invalid`; a bad schema file is refused
//! before any model call.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use tackle_testkit::{FakeModel, Script, Turn};

const BIN: &str = env!("CARGO_BIN_EXE_tackle");

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
        "anthropic" => cmd.env("ANTHROPIC_API_KEY", "sk-ant-test").env("ANTHROPIC_BASE_URL", fake.base_url()),
        _ => cmd.env("OPENAI_API_KEY", "sk-test").env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url())),
    };
    cmd.env("TACKLE_PROVIDER", kind);
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

const KINDS: [&str; 3] = ["openai", "openai-responses", "anthropic"];

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"files": {"type": "integer"}, "summary": {"type": "string"}},
        "required": ["files", "summary"],
        "additionalProperties": false
    })
}

fn answer(kind: &str, json: &str) -> Turn {
    if kind == "anthropic" { Turn::call("final_answer", json) } else { Turn::text(json) }
}

/// Runs `tackle run --output-schema report.json` in a workspace with one file.
async fn run(kind: &str, script: Script) -> (Output, FakeModel) {
    let home = tempfile::tempdir().unwrap();
    let workspace = home.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("a.txt"), "alpha").unwrap();
    let schema_file = home.path().join("report.json");
    std::fs::write(&schema_file, schema().to_string()).unwrap();
    let fake = FakeModel::start(script).await.unwrap();
    let mut cmd = tackle(home.path());
    with_fake(&mut cmd, kind, &fake);
    cmd.arg("run")
        .arg("count the files")
        .arg("--output-schema")
        .arg(&schema_file)
        .arg("--workspace")
        .arg(&workspace);
    let out = output(cmd).await;
    (out, fake)
}

#[tokio::test]
async fn stdout_is_exactly_the_json_and_the_request_asks_natively() {
    for kind in KINDS {
        let script = Script::new(vec![
            Turn::text("Looking.").with_call("list_files", r#"{"path": "."}"#),
            answer(kind, r#"{"files": 1, "summary": "one file, a.txt"}"#),
        ]);
        let (out, fake) = run(kind, script).await;
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{kind}: {stderr}");
        // Nothing but the JSON on stdout (one line), progress on stderr.
        assert_eq!(text(&out.stdout), "{\"files\":1,\"summary\":\"one file, a.txt\"}\n", "{kind}: {stderr}");
        let requests = fake.requests();
        assert_eq!(requests.len(), 2, "{kind}");
        // The tool ran before the final answer: its result is in the second request.
        assert!(requests[1].body.to_string().contains("a.txt"), "{kind}");
        let body = &requests[0].body;
        match kind {
            "openai" => assert_eq!(
                body["response_format"],
                json!({"type": "json_schema", "json_schema": {"name": "report", "schema": schema(), "strict": true}})
            ),
            "openai-responses" => assert_eq!(
                body["text"],
                json!({"format": {"type": "json_schema", "name": "report", "schema": schema(), "strict": true}})
            ),
            _ => {
                let last = body["tools"].as_array().unwrap().last().unwrap();
                assert_eq!((&last["name"], &last["input_schema"]), (&json!("final_answer"), &schema()));
                assert_eq!(body["tool_choice"]["type"], "any");
            }
        }
    }
}

#[tokio::test]
async fn an_invalid_answer_is_repaired_once_then_the_run_fails() {
    for kind in KINDS {
        let script = Script::new(vec![
            answer(kind, r#"{"files": "one"}"#),
            answer(kind, r#"{"files": 1, "summary": "fixed"}"#),
        ]);
        let (out, fake) = run(kind, script).await;
        assert!(out.status.success(), "{kind}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "{\"files\":1,\"summary\":\"fixed\"}\n", "{kind}");
        assert!(fake.requests()[1].body.to_string().contains("/files"), "{kind}: the repair names the error");

        let script = Script::new(vec![answer(kind, r#"{"files": "one"}"#), answer(kind, "{}")]);
        let (out, _) = run(kind, script).await;
        assert_eq!(out.status.code(), Some(1), "{kind}");
        assert_eq!(text(&out.stdout), "", "{kind}: nothing on stdout when the answer is invalid");
        let stderr = text(&out.stderr);
        assert!(stderr.contains("output schema") && stderr.contains("summary"), "{kind}: {stderr}");
    }
}

#[tokio::test]
async fn a_bad_schema_file_is_refused_before_any_model_call() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![Turn::text("never")])).await.unwrap();
    let cases: [(&str, Option<&str>, &str); 3] = [
        ("missing.json", None, "cannot read it"),
        ("broken.json", Some("{not json"), "not JSON"),
        ("wrong.json", Some(r#"{"type": "objekt"}"#), "not a valid JSON Schema"),
    ];
    for (file, content, expected) in cases {
        let path = home.path().join(file);
        if let Some(content) = content {
            std::fs::write(&path, content).unwrap();
        }
        let mut cmd = tackle(home.path());
        with_fake(&mut cmd, "openai", &fake);
        cmd.args(["run", "hi", "--output-schema"]).arg(&path);
        let out = output(cmd).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
        assert!(stderr.contains("--output-schema") && stderr.contains(expected), "{file}: {stderr}");
        assert_eq!(text(&out.stdout), "");
    }
    assert!(fake.requests().is_empty());
}

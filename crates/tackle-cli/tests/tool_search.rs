//! `tackle run` with a real catalogue too large to list: the 1,233 BFCL v4 functions from one
//! stdio MCP server (`bench/tool-search/bfcl.py serve`, data from the pinned `bfcl-eval` wheel)
//! are deferred, and the fake model searches them. The answer, five real schemas that together
//! are larger than the offload threshold, must reach the model whole: every tool found shown
//! with every parameter, within the answer's token budget, never replaced by a stored-output
//! reference.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;
use tackle_testkit::bfcl;
use tackle_testkit::{FakeModel, Script, Turn, peers};

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

#[tokio::test]
async fn five_real_schemas_found_by_tool_search_reach_the_model_whole() {
    let Some(data) = peers::or_skip(bfcl::load()) else { return };
    let Some(python) = peers::or_skip(peers::venv_python("mcp")) else { return };
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("tackle.toml"),
        format!(
            "[mcp.servers.bfcl]\ncommand = {:?}\nargs = [{:?}, \"serve\"]\nstart_timeout_secs = 120\n",
            python.display().to_string(),
            bfcl::script().display().to_string()
        ),
    )
    .unwrap();
    // Instana's API functions are among the largest BFCL schemas.
    let query = "create a website configuration or an apdex configuration in Instana";
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("tool_search", serde_json::json!({"query": query, "limit": 5}).to_string()),
        Turn::text("found them"),
    ]))
    .await
    .unwrap();
    let mut cmd = tackle(home.path());
    cmd.env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
        .env("TACKLE_PROVIDER", "openai")
        .env("TACKLE_MODEL", "gpt-4o")
        // Outputs over 1 KiB are offloaded; search answers never are.
        .env("TACKLE_CONTEXT_OFFLOAD_BYTES", "1024");
    cmd.args(["run", "--workspace"]).arg(home.path()).arg("set up monitoring for my website");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let tools = requests[0].body["tools"].as_array().unwrap();
    assert!(tools.len() < 40, "the 1,233 functions are deferred, not listed: {} tools", tools.len());
    let messages = requests[1].body["messages"].as_array().unwrap();
    let answer = messages.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap();
    assert!(!answer.contains("stored outside the context") && !answer.contains("read_result"), "{answer}");

    // The five tools found, by the names the model sees, with their BFCL schemas.
    let pairs: Vec<(&str, &str)> = data.tools.iter().map(|t| ("bfcl", t.name.as_str())).collect();
    let names = tackle_mcp::namespace_all(&pairs);
    let by_name: HashMap<&str, &Value> =
        names.iter().map(String::as_str).zip(data.tools.iter().map(|t| &t.input_schema)).collect();
    let found: Vec<&str> = answer
        .split("\n\n")
        .skip(1)
        .filter_map(|block| block.split(':').next().filter(|name| by_name.contains_key(name)))
        .collect();
    assert_eq!(found.len(), 5, "{answer}");
    let schema_bytes: usize = found.iter().map(|n| by_name[n].to_string().len()).sum();
    assert!(
        schema_bytes > tackle_agent::DEFAULT_OFFLOAD_BYTES,
        "five schemas of {schema_bytes} B would have been offloaded before"
    );
    for name in &found {
        let props = by_name[name]["properties"].as_object().unwrap();
        for param in props.keys() {
            assert!(answer.contains(param.as_str()), "{name}: parameter {param} is shown: {answer}");
        }
    }
    let tokens = tackle_context::TokenCounter::for_model("gpt-4o").count_text(answer);
    assert!(tokens <= tackle_agent::SEARCH_RESULT_TOKENS, "{tokens} tokens");
    eprintln!("tool_search answer: {tokens} tokens for five schemas of {schema_bytes} B:\n{answer}");
}

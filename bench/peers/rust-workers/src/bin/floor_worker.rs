//! The raw HTTP floor of the peer benchmark: the same N+1 requests as every framework, made by
//! hand with reqwest on one kept-alive connection pool, with no agent around them.
//! `floor-peer-worker json` asks for whole JSON answers; `floor-peer-worker stream` streams them
//! (SSE parsed, tool-call argument fragments joined), as Tackle does.

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use serde_json::{Value, json};

/// One model call: the assistant message it answered (content and tool calls).
async fn call(client: &reqwest::Client, url: &str, body: &Value, stream: bool) -> Result<Value> {
    let response = client.post(url).json(body).send().await?.error_for_status()?;
    if !stream {
        let mut answer: Value = response.json().await?;
        return Ok(answer["choices"][0]["message"].take());
    }
    let (mut text, mut id, mut name, mut arguments) = (String::new(), None, None, String::new());
    let mut pending = Vec::new();
    let mut chunks = response.bytes_stream();
    'read: while let Some(chunk) = chunks.next().await {
        pending.extend_from_slice(&chunk?);
        while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = pending.drain(..end + 2).collect();
            let Some(data) = event.strip_prefix(b"data: ") else { continue };
            let data = data.trim_ascii();
            if data == b"[DONE]" {
                break 'read;
            }
            let chunk: Value = serde_json::from_slice(data)?;
            let delta = &chunk["choices"][0]["delta"];
            text.push_str(delta["content"].as_str().unwrap_or_default());
            if let Some(call) = delta["tool_calls"].get(0) {
                id = id.or_else(|| call["id"].as_str().map(str::to_owned));
                name = name.or_else(|| call["function"]["name"].as_str().map(str::to_owned));
                arguments.push_str(call["function"]["arguments"].as_str().unwrap_or_default());
            }
        }
    }
    Ok(match (id, name) {
        (Some(id), Some(name)) => json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}]}),
        _ => json!({"role": "assistant", "content": text}),
    })
}

async fn run(client: &reqwest::Client, base: &str, n: usize, stream: bool) -> Result<String> {
    let url = format!("{base}/chat/completions");
    let tools = json!([{"type": "function", "function": {"name": "add", "description": "Add two integers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                       "required": ["a", "b"]}}}]);
    let mut messages = vec![json!({"role": "user", "content": "go"})];
    for _ in 0..=n {
        let mut body =
            json!({"model": tackle_peer_workers::model_for(n), "messages": messages, "tools": tools});
        if stream {
            body["stream"] = json!(true);
            body["stream_options"] = json!({"include_usage": true});
        }
        let message = call(client, &url, &body, stream).await?;
        let Some(call) = message["tool_calls"].get(0).cloned() else {
            return Ok(message["content"].as_str().unwrap_or_default().to_owned());
        };
        let args: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or("{}"))?;
        let sum = args["a"].as_i64().context("a")? + args["b"].as_i64().context("b")?;
        messages.push(message);
        messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": sum.to_string()}));
    }
    bail!("no final answer after {} calls", n + 1)
}

fn main() -> Result<()> {
    let stream = match std::env::args().nth(1).as_deref() {
        Some("json") => false,
        Some("stream") => true,
        _ => bail!("usage: floor-peer-worker json|stream [--once N]"),
    };
    // The protocol reads its own arguments after the mode.
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let client = reqwest::Client::new();
    let base = tackle_peer_workers::fake_base();
    tackle_peer_workers::serve_with_args(&runtime, std::env::args().skip(2).collect(), |n| {
        let (client, base) = (client.clone(), base.clone());
        async move { run(&client, &base, n, stream).await }
    })
}

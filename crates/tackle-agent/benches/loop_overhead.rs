//! Loop overhead per step, excluding the model.
//!
//! `cargo bench -p tackle-agent --bench loop_overhead`
//!
//! The model is an in-process provider that answers instantly from a script (a tool call, then
//! a text answer), after serializing each request with the real OpenAI encoder, so what is
//! timed is Tackle's own work per step: history repair, request building and encoding, event
//! emission, a no-op tool call through the executor (validation, hooks, spawn, cap), the
//! at-most-once audit, and committing every message to SQLite. The session starts with a
//! history of about 50k tokens.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tackle_agent::{Agent, NewSessionOptions, TurnInput};
use tackle_protocol::{
    Message, ModelRequest, Role, StopReason, StreamEvent, ToolInput, ToolResult, ToolUse, Usage,
};
use tackle_provider::{
    CallOptions, Capabilities, EncodedRequest, EventStream, OpenAiChat, OpenAiDialect, Provider,
    ProviderConfig, ProviderError, ProviderKind,
};
use tackle_store::Store;
use tackle_tools::{AutoApprove, EventSink};
use tokio_util::sync::CancellationToken;

/// Arguments of `noop`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoopArgs {
    /// Anything.
    #[serde(default)]
    _note: Option<String>,
}

/// A tool that does nothing, so the timing excludes tool work as well as the model.
struct Noop;

#[async_trait]
impl tackle_tools::TypedTool for Noop {
    type Args = NoopArgs;
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> String {
        "Do nothing.".into()
    }
    fn annotations(&self) -> tackle_protocol::ToolAnnotations {
        tackle_protocol::ToolAnnotations::read_only()
    }
    async fn run(
        &self,
        _: NoopArgs,
        _: tackle_tools::ToolContext,
    ) -> Result<tackle_tools::ToolOutput, tackle_tools::ToolFailure> {
        Ok("ok".into())
    }
}

/// Answers odd calls with a `noop` call and even calls with text, instantly.
struct InstantModel {
    encoder: OpenAiChat,
    calls: AtomicUsize,
}

#[async_trait]
impl Provider for InstantModel {
    fn name(&self) -> &str {
        "instant"
    }
    fn capabilities(&self) -> Capabilities {
        self.encoder.capabilities()
    }
    fn encode(&self, request: &ModelRequest) -> Result<EncodedRequest, ProviderError> {
        self.encoder.encode(request)
    }
    async fn send(&self, encoded: EncodedRequest, _: &CallOptions) -> Result<EventStream, ProviderError> {
        std::hint::black_box(encoded);
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let usage = Usage {
            input_tokens: 50_000,
            output_tokens: 20,
            cache_read_tokens: 49_000,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
        };
        let events = if n.is_multiple_of(2) {
            let call = ToolUse {
                id: format!("call_{n}").into(),
                name: "noop".into(),
                input: ToolInput::parse("{}"),
            };
            vec![
                StreamEvent::ToolCallStart { index: 0, id: call.id.to_string(), name: call.name.clone() },
                StreamEvent::ToolCallDelta { index: 0, arguments: "{}".into() },
                StreamEvent::ToolCallEnd { index: 0, call },
                StreamEvent::Usage(usage),
                StreamEvent::Stop { reason: StopReason::ToolUse },
            ]
        } else {
            vec![
                StreamEvent::TextDelta { text: "Listed the files.".into() },
                StreamEvent::Usage(usage),
                StreamEvent::Stop { reason: StopReason::EndTurn },
            ]
        };
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

/// About 50k tokens of prior conversation: 100 exchanges with ~2 KB tool outputs.
fn history() -> Vec<Message> {
    let mut out = Vec::new();
    let chunk = "fn example() { let value = compute(42); println!(\"{value}\"); }\n".repeat(32);
    for i in 0..100 {
        out.push(Message::user(format!("step {i}: please look at the next file")));
        let call = ToolUse {
            id: format!("old_{i}").into(),
            name: "read_file".into(),
            input: ToolInput::parse(r#"{"path": "src/lib.rs"}"#),
        };
        out.push(Message {
            role: Role::Assistant,
            content: vec![tackle_protocol::ContentBlock::ToolUse(call)],
        });
        out.push(Message::tool_results([ToolResult::ok(format!("old_{i}"), chunk.clone())]));
        out.push(Message::assistant(format!("File {i} defines example().")));
    }
    out
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("bench.db")).await.unwrap();
        let encoder =
            OpenAiChat::with_dialect(ProviderConfig::new(ProviderKind::Openai), OpenAiDialect::OpenAi)
                .unwrap();
        let provider = InstantModel { encoder, calls: AtomicUsize::new(0) };
        let agent = Agent::builder(provider)
            .model("bench")
            .store(store.clone())
            .workspace(workspace.path())
            .tool(Noop)
            .approver(AutoApprove)
            .offload(false)
            .build()
            .await
            .unwrap();
        let session = agent
            .create_session(NewSessionOptions {
                workspace: workspace.path().to_owned(),
                ..Default::default()
            })
            .await
            .unwrap();
        store.messages().append_all(session.id(), 0, &history()).await.unwrap();
        let mut session = agent.open_session(session.id()).await.unwrap();
        let bytes: usize = session.history().iter().map(|m| serde_json::to_string(m).unwrap().len()).sum();
        let tokens: usize = session
            .history()
            .iter()
            .map(|m| {
                tiktoken_rs::o200k_base_singleton().encode_ordinary(&m.text()).len()
                    + m.tool_results_iter()
                        .map(|r| tiktoken_rs::o200k_base_singleton().encode_ordinary(&r.content).len())
                        .sum::<usize>()
            })
            .sum();

        let sink = EventSink::new(|e| {
            std::hint::black_box(e);
        });
        let cancel = CancellationToken::new();
        // Warm up, then time turns of two steps each (a tool call, then the answer).
        for _ in 0..5 {
            session.run_turn(TurnInput::new("again"), &sink, &cancel).await.unwrap();
        }
        let mut per_step = Vec::new();
        for _ in 0..200 {
            let t = Instant::now();
            let outcome = session.run_turn(TurnInput::new("again"), &sink, &cancel).await.unwrap();
            assert_eq!(outcome.steps, 2);
            per_step.push(t.elapsed() / 2);
        }
        per_step.sort();
        let pct = |p: f64| per_step[((per_step.len() as f64 - 1.0) * p) as usize];
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "history: {} messages, {} KB, ~{} tokens (o200k)",
            session.history().len(),
            bytes / 1024,
            tokens
        );
        println!("| metric | value |\n|---|---|");
        println!("| loop overhead per step, median | {:.3} ms |", ms(pct(0.5)));
        println!("| loop overhead per step, p90 | {:.3} ms |", ms(pct(0.9)));
        println!("| loop overhead per step, p99 | {:.3} ms |", ms(pct(0.99)));
    });
}

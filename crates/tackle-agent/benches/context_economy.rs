//! Context economy: tokenizer throughput, resuming a 10,000-message session, offloading and
//! restoring 1 MB, and the compaction ratio of a long session.
//!
//! `cargo bench -p tackle-agent --bench context_economy`
//!
//! Everything runs against a real SQLite store on disk. The model (needed only to summarize
//! during compaction) is in process and answers a fixed ~300-token summary at once, so the
//! compaction time is Tackle's own work.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use tackle_agent::{Agent, AgentConfig, NewSessionOptions, StoreOffloader, read_page};
use tackle_context::TokenCounter;
use tackle_protocol::{
    ContentBlock, Message, ModelRequest, Role, StopReason, StreamEvent, ToolInput, ToolResult, ToolUse, Usage,
};
use tackle_provider::{
    CallOptions, Capabilities, EncodedRequest, EventStream, OpenAiChat, OpenAiDialect, Provider,
    ProviderConfig, ProviderError, ProviderKind,
};
use tackle_store::Store;
use tackle_tools::{AutoApprove, EventSink, OutputOffloader, ToolContext};

/// Answers every request with the same summary, instantly.
struct Summarizer {
    encoder: OpenAiChat,
}

#[async_trait]
impl Provider for Summarizer {
    fn name(&self) -> &str {
        "summarizer"
    }
    fn capabilities(&self) -> Capabilities {
        self.encoder.capabilities()
    }
    fn encode(&self, request: &ModelRequest) -> Result<EncodedRequest, ProviderError> {
        self.encoder.encode(request)
    }
    async fn send(&self, encoded: EncodedRequest, _: &CallOptions) -> Result<EventStream, ProviderError> {
        std::hint::black_box(encoded);
        let summary = "The user is refactoring the parser module. Files read so far: src/lib.rs, \
                       src/parser.rs and the tests; the lexer was split out and two tests fixed. "
            .repeat(6);
        let events = vec![
            StreamEvent::TextDelta { text: summary },
            StreamEvent::Usage(Usage { input_tokens: 1000, output_tokens: 300, ..Usage::default() }),
            StreamEvent::Stop { reason: StopReason::EndTurn },
        ];
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

/// `n` messages in exchanges of four: a question, a tool call, its ~1 KB result (unique, so
/// nothing is counted from a memo), the answer.
fn long_history(n: usize) -> Vec<Message> {
    let mut out = Vec::with_capacity(n);
    let mut i = 0;
    while out.len() < n {
        out.push(Message::user(format!("step {i}: look at module {i} and tell me what it does")));
        let id = format!("call_{i}");
        out.push(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse(ToolUse {
                id: id.clone().into(),
                name: "read_file".into(),
                input: ToolInput::parse(&format!(r#"{{"path": "src/module_{i}.rs"}}"#)),
            })],
        });
        let body: String = (0..14)
            .map(|l| format!("    let value_{l}_{i} = compute_{l}(input_{i}, {});\n", l * i))
            .collect();
        out.push(Message::tool_results([ToolResult::ok(id, format!("fn module_{i}() {{\n{body}}}\n"))]));
        out.push(Message::assistant(format!("Module {i} computes fourteen values from its input.")));
        i += 1;
    }
    out.truncate(n);
    out
}

/// The agent: builtin tools, the in-process summarizer, a 2M-token window.
async fn build_agent(store: &Store, workspace: &std::path::Path) -> Agent {
    let encoder =
        OpenAiChat::with_dialect(ProviderConfig::new(ProviderKind::Openai), OpenAiDialect::OpenAi).unwrap();
    let mut config = AgentConfig::new("gpt-4o");
    config.context.window = Some(2_000_000);
    Agent::builder(Summarizer { encoder })
        .config(config)
        .store(store.clone())
        .workspace(workspace)
        .approver(AutoApprove)
        .offload(false)
        .build()
        .await
        .unwrap()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        // 1. Tokenizer: 4 MB of distinct code, prose and JSON in 8 KB texts.
        let texts: Vec<String> = (0..512)
            .map(|k| {
                let mut t = String::with_capacity(8192);
                let mut j = 0;
                while t.len() < 8192 {
                    match j % 3 {
                        0 => t.push_str(&format!("fn handler_{k}_{j}(req: Request) -> Result<Response, Error> {{ todo!() }}\n")),
                        1 => t.push_str(&format!("The service {k} returned {j} rows after retrying the query twice; see the log.\n")),
                        _ => t.push_str(&format!("{{\"id\": {k}{j}, \"name\": \"item-{j}\", \"tags\": [\"a\", \"b\"], \"ok\": true}}\n")),
                    }
                    j += 1;
                }
                t
            })
            .collect();
        let bytes: usize = texts.iter().map(String::len).sum();
        let counter = TokenCounter::for_model("gpt-4o");
        counter.count_text("warm up the vocabulary");
        let t = Instant::now();
        let tokens: u64 = texts.iter().map(|x| counter.count_text(x)).sum();
        let cold = t.elapsed();
        let t = Instant::now();
        let again: u64 = texts.iter().map(|x| counter.count_text(x)).sum();
        let warm = t.elapsed();
        assert_eq!(tokens, again);
        let mbps = |d: Duration| bytes as f64 / d.as_secs_f64() / 1e6;
        println!("tokenizer: {:.1} MB/s first count ({tokens} tokens in {} KB), {:.0} MB/s counted again (memo)",
            mbps(cold), bytes / 1024, mbps(warm));

        // The agent over a store on disk.
        let dir = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("bench.db")).await.unwrap();
        let agent = build_agent(&store, workspace.path()).await;

        // 2. Resume a 10,000-message session written as the loop writes it (each message with
        //    its token count): load it and compute the budget, as the first request after a
        //    restart does.
        let history = long_history(10_000);
        let session = agent
            .create_session(NewSessionOptions { workspace: workspace.path().to_owned(), ..Default::default() })
            .await
            .unwrap();
        let id = session.id().to_owned();
        for m in &history {
            let tokens = i64::try_from(counter.count_message(m)).unwrap();
            store.messages().append_counted(&id, 0, m, Some(tokens)).await.unwrap();
        }
        drop(session);
        // A restart: the store is closed (SQLite checkpoints its WAL) and opened again by a new
        // agent with cold connections.
        store.close().await;
        let store = Store::open(&dir.path().join("bench.db")).await.unwrap();
        let agent = build_agent(&store, workspace.path()).await;
        let mut times = Vec::new();
        let mut opened = None;
        for _ in 0..7 {
            let t = Instant::now();
            let mut session = agent.open_session(&id).await.unwrap();
            let report = session.context_report();
            times.push(t.elapsed());
            opened = Some((session, report));
        }
        let (mut resumed, report) = opened.unwrap();
        let first = times[0];
        let resume = median(times.clone());
        assert_eq!(resumed.history().len(), 10_000);
        println!(
            "resume of a 10,000-message session after a restart: first {}, median of 7 {} (conversation {} tokens)",
            ms(first),
            ms(resume),
            report.conversation
        );

        // 3. Offload and restore 1 MB.
        let offloader = StoreOffloader::new(store.clone(), 4096, Duration::from_secs(3600));
        let megabyte: String = (0..)
            .map(|i| format!("{i:>8} build step {i}: compiled crate_{i} in {}ms\n", i % 997))
            .take_while({
                let mut len = 0;
                move |l: &String| {
                    len += l.len();
                    len <= 1 << 20
                }
            })
            .collect();
        let mut rounds = Vec::new();
        for i in 0..50 {
            let ctx = ToolContext::new(&id, format!("call_offload_{i}"), workspace.path().to_owned());
            let t = Instant::now();
            let off = offloader.offload(&ctx, "shell", &megabyte).await.unwrap();
            let blob = store.blobs().get(&id, &off.locator).await.unwrap();
            rounds.push(t.elapsed());
            assert_eq!(blob.data.len(), megabyte.len());
        }
        let ctx = ToolContext::new(&id, "call_offload_page", workspace.path().to_owned());
        let off = offloader.offload(&ctx, "shell", &megabyte).await.unwrap();
        let args = serde_json::from_value(serde_json::json!({"locator": off.locator, "offset": 10000, "limit": 200})).unwrap();
        let t = Instant::now();
        let page = read_page(&store, &id, &args).await.unwrap();
        let paged = t.elapsed();
        assert!(page.contains("build step 9999"));
        println!(
            "offload + restore of {} KB: median {} (read_result page of 200 lines: {})",
            megabyte.len() / 1024,
            ms(median(rounds)),
            ms(paged)
        );

        // 4. Compaction ratio of the same long session.
        let t = Instant::now();
        let compacted = resumed.compact_now(&EventSink::discard()).await.unwrap();
        let took = t.elapsed();
        println!(
            "compaction of the 10,000-message session: {} -> {} tokens ({:.1}% of before, {} -> {} messages), strategies {:?}, {}",
            compacted.tokens_before,
            compacted.tokens_after,
            compacted.tokens_after as f64 * 100.0 / compacted.tokens_before.max(1) as f64,
            compacted.messages_before,
            compacted.messages_after,
            compacted.strategies,
            ms(took)
        );
    });
}

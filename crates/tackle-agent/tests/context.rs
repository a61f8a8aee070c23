//! Context economy end to end: offloading and restore, TTL, session scoping, thresholds,
//! summarization through the fake model, the reactive path, and a long run within budget.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use common::{FORMATS, Harness};
use tackle_agent::{
    Agent, AgentConfig, NewSessionOptions, ReadResultArgs, ReadUnit, StoreOffloader, TurnInput, read_page,
};
use tackle_context::{SUMMARY_INSTRUCTIONS, Thresholds};
use tackle_protocol::{
    AgentEvent, ErrorCategory, ModelRequest, Role, StopReason, StreamEvent, ToolInput, ToolUse, TurnEnd,
    Usage,
};
use tackle_provider::{
    CallOptions, Capabilities, EncodedRequest, EventStream, OpenAiChat, OpenAiDialect, Provider,
    ProviderConfig, ProviderError, ProviderKind,
};
use tackle_store::{MessageFilter, Store};
use tackle_testkit::{Fault, Script, Turn};
use tackle_tools::{AutoApprove, EventSink};
use tokio_util::sync::CancellationToken;

fn locators(h: &Harness) -> Vec<String> {
    h.events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { locator, .. } => locator,
            _ => None,
        })
        .collect()
}

fn args(locator: &str) -> ReadResultArgs {
    ReadResultArgs { locator: locator.into(), offset: None, limit: None, unit: None, pattern: None }
}

#[tokio::test]
async fn large_outputs_are_offloaded_and_restored_byte_exact_even_after_a_restart() {
    for kind in FORMATS {
        let script =
            Script::new(vec![Turn::call("shell", r#"{"command": "seq 1 5000"}"#), Turn::text("done")]);
        let h = Harness::new(kind, script).await;
        let mut session = h.session().await;
        session.run_turn(TurnInput::new("count"), &h.sink(), &CancellationToken::new()).await.unwrap();
        let locator = locators(&h).pop().expect("the output was offloaded");
        // The model saw a compact reference with a preview and how to restore.
        let sent = h.fake.requests()[1].body.to_string();
        assert!(sent.contains(&format!("locator: {locator}")) && sent.contains("read_result"), "{kind}");
        assert!(
            !sent.contains("2500\\n2501"),
            "{kind}: the middle of the 24 KB output is not in the request"
        );

        let full =
            format!("exit code: 0\nstdout:\n{}", (1..=5000).map(|i| format!("{i}\n")).collect::<String>());
        let page = read_page(
            &h.store,
            session.id(),
            &ReadResultArgs { offset: Some(3), limit: Some(3), ..args(&locator) },
        )
        .await
        .unwrap();
        assert_eq!(page, format!("[{locator}: lines 3-5 of 5002; read more with offset 6]\n1\n2\n3\n"));
        let page = read_page(
            &h.store,
            session.id(),
            &ReadResultArgs { pattern: Some("^499[0-9]$".into()), ..args(&locator) },
        )
        .await
        .unwrap();
        assert!(page.starts_with(&format!("[{locator}: matching lines 1-10 of 10]")), "{page}");
        assert!(page.contains("  5001: 4999\n"), "{page}");
        let bytes = read_page(
            &h.store,
            session.id(),
            &ReadResultArgs {
                unit: Some(ReadUnit::Bytes),
                offset: Some(100),
                limit: Some(1000),
                ..args(&locator)
            },
        )
        .await
        .unwrap();
        let body = bytes.split_once('\n').unwrap().1;
        assert_eq!(body, &full[100..1100]);

        // A new process: a new store handle on the same file, a new agent.
        let store = Store::open(&h.db_dir.path().join("tackle.db")).await.unwrap();
        let blob = store.blobs().get(session.id(), &locator).await.unwrap();
        assert_eq!(blob.data, full.as_bytes(), "{kind}: byte-exact after a restart");
    }
}

#[tokio::test]
async fn read_result_refuses_other_sessions_and_bad_patterns() {
    let script = Script::new(vec![Turn::call("shell", r#"{"command": "seq 1 5000"}"#), Turn::text("done")]);
    let h = Harness::new(ProviderKind::Openai, script).await;
    let mut a = h.session().await;
    a.run_turn(TurnInput::new("go"), &h.sink(), &CancellationToken::new()).await.unwrap();
    let locator = locators(&h).pop().unwrap();
    let b = h.session().await;
    let err = read_page(&h.store, b.id(), &args(&locator)).await.unwrap_err();
    assert_eq!(err.category, ErrorCategory::NotFound);
    assert!(err.hint.unwrap().contains("other sessions"));
    let err = read_page(&h.store, a.id(), &ReadResultArgs { pattern: Some("(".into()), ..args(&locator) })
        .await
        .unwrap_err();
    assert_eq!(err.category, ErrorCategory::InvalidArgs);
}

#[tokio::test]
async fn expired_outputs_say_so() {
    let script = Script::new(vec![Turn::call("shell", r#"{"command": "seq 1 5000"}"#), Turn::text("done")]);
    let h = Harness::new(ProviderKind::Anthropic, script).await;
    let mut session = h.session().await;
    session.run_turn(TurnInput::new("go"), &h.sink(), &CancellationToken::new()).await.unwrap();
    let locator = locators(&h).pop().unwrap();
    // TTL cleanup as it runs when sessions open (at most every ten minutes).
    let purged = h.store.blobs().purge_expired(i64::MAX / 4).await.unwrap();
    assert_eq!(purged, 1);
    let err = read_page(&h.store, session.id(), &args(&locator)).await.unwrap_err();
    assert_eq!(err.category, ErrorCategory::Expired);
    assert!(err.message.contains("expired") && err.message.contains("run the tool again"), "{}", err.message);
    // A zero TTL expires at once too.
    let offloader = StoreOffloader::new(h.store.clone(), 10, Duration::ZERO);
    use tackle_tools::OutputOffloader;
    let ctx = tackle_tools::ToolContext::new(session.id(), "c", h.workspace.path().to_owned());
    let off = offloader.offload(&ctx, "shell", &"x\n".repeat(100)).await.unwrap();
    assert_eq!(
        read_page(&h.store, session.id(), &args(&off.locator)).await.unwrap_err().category,
        ErrorCategory::Expired
    );
}

fn small_window(window: u64) -> impl FnOnce(AgentConfig) -> AgentConfig {
    move |mut c| {
        c.context.window = Some(window);
        c.context.reserved_output = 1000;
        c.context.keep_tool_results = 1;
        c
    }
}

#[tokio::test]
async fn thresholds_trigger_compaction_and_the_hard_block_refuses() {
    for kind in FORMATS {
        // Outputs of ~3.5 KB stay in the context (under the offload threshold) until compaction
        // clears them. Three turns of four calls each.
        let call = |k: usize| {
            Turn::call(
                "shell",
                format!(r#"{{"command": "for i in $(seq 1 350); do echo line{k}_$i; done"}}"#),
            )
        };
        let mut turns: Vec<Turn> = Vec::new();
        for t in 0..3 {
            turns.extend((4 * t..4 * t + 4).map(call));
            turns.push(Turn::text("done"));
        }
        let h = Harness::with_config(kind, Script::new(turns), small_window(20_000)).await;
        let mut session = h.session().await;
        for q in ["print lines", "more lines", "even more"] {
            let outcome =
                session.run_turn(TurnInput::new(q), &h.sink(), &CancellationToken::new()).await.unwrap();
            assert_eq!(outcome.end, TurnEnd::Completed, "{kind}: {outcome:?}");
        }
        let compactions: Vec<(String, Vec<String>, u64, u64)> = h
            .events()
            .into_iter()
            .filter_map(|e| match e {
                AgentEvent::ContextCompacted { reason, strategies, tokens_before, tokens_after, .. } => {
                    Some((reason, strategies, tokens_before, tokens_after))
                }
                _ => None,
            })
            .collect();
        assert!(!compactions.is_empty(), "{kind}: compaction ran");
        for (reason, _, before, after) in &compactions {
            assert_eq!(reason, "threshold");
            assert!(after < before);
        }
        assert!(
            compactions
                .iter()
                .any(|(_, s, _, _)| s.first().map(String::as_str) == Some("clear_tool_results")),
            "{kind}: older turns' results are cleared first: {compactions:?}"
        );
        for e in h.events() {
            if let AgentEvent::StepFinished { metrics: Some(m), .. } = e {
                let c = m.context.unwrap();
                assert!(c.percent <= 96.0, "{kind}: requests stay under the trigger after compaction: {c:?}");
            }
        }
        // A message that alone overflows the window cannot be compacted away: refused.
        let huge = "word ".repeat(20_000);
        let outcome =
            session.run_turn(TurnInput::new(huge), &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Failed);
        let failure = outcome.error.unwrap();
        assert_eq!(failure.code(), tackle_protocol::ErrorCode::ContextLengthExceeded, "{failure:?}");
        assert!(failure.to_string().contains("even after compaction"));
    }
}

#[test]
fn thresholds_fire_at_95_and_98_percent() {
    use tackle_context::{Components, ContextBudget, CountSource, Pressure};
    let t = Thresholds::default();
    let at = |used: u64| {
        t.pressure(&ContextBudget::new(
            10_000 + 1000,
            1000,
            Components { conversation: used, ..Default::default() },
            CountSource::Exact,
        ))
    };
    assert_eq!(at(9_500), Pressure::Fine);
    assert_eq!(at(9_501), Pressure::Compact);
    assert_eq!(at(9_800), Pressure::Compact);
    assert_eq!(at(9_801), Pressure::Block);
}

#[tokio::test]
async fn forced_compaction_summarizes_through_the_model_and_resume_starts_from_the_snapshot() {
    for kind in FORMATS {
        let script = Script::new(vec![
            Turn::text("First answer."),
            Turn::text("Second answer."),
            Turn::text("Third answer."),
            Turn::text(
                "Goal: test compaction. Decisions: none. Files touched: none. Open tasks: none. Errors seen: none.",
            ),
            Turn::text("After compaction."),
        ]);
        let h = Harness::new(kind, script).await;
        let mut session = h.session().await;
        let cancel = CancellationToken::new();
        for q in ["one", "two", "three"] {
            session
                .run_turn(
                    TurnInput::new(format!("question {q} {}", "padding ".repeat(200))),
                    &h.sink(),
                    &cancel,
                )
                .await
                .unwrap();
        }
        let report = session.compact_now(&h.sink()).await.unwrap();
        assert!(report.strategies.contains(&"summarize".to_string()), "{kind}: {report:?}");
        assert!(report.messages_after < report.messages_before);
        // The summary request reused the session's system and tools and asked for the summary.
        let summary_request = h.fake.requests()[3].body.clone();
        assert_eq!(summary_request["tools"], h.fake.requests()[2].body["tools"], "{kind}: same tools");
        assert!(summary_request.to_string().contains("Files touched"), "{kind}");
        assert!(session.history()[0].text().contains("Goal: test compaction"), "{kind}");
        // Originals are hidden, not deleted.
        let all =
            h.store.messages().load(session.id(), MessageFilter { include_hidden: true }).await.unwrap();
        assert_eq!(all.len(), 6);
        assert!(all.iter().any(|m| m.hidden));
        // A new process resumes from the snapshot.
        let mut resumed = h.agent.open_session(session.id()).await.unwrap();
        assert_eq!(resumed.history(), session.history());
        let outcome = resumed.run_turn(TurnInput::new("and now?"), &h.sink(), &cancel).await.unwrap();
        assert_eq!(outcome.text, "After compaction.");
        let last = h.fake.requests().last().unwrap().body.to_string();
        assert!(last.contains("Goal: test compaction") && !last.contains("question one"), "{kind}");
    }
}

#[tokio::test]
async fn the_model_can_ask_for_compaction() {
    let script = Script::new(vec![
        Turn::text("a"),
        Turn::call("compact_context", r#"{"reason": "phase done"}"#),
        Turn::text("Goal: x. Decisions: y. Files touched: none. Open tasks: none. Errors seen: none."),
        Turn::text("compacted and continuing"),
    ]);
    let h = Harness::new(ProviderKind::Openai, script).await;
    let mut session = h.session().await;
    let cancel = CancellationToken::new();
    session
        .run_turn(TurnInput::new(format!("first {}", "pad ".repeat(500))), &h.sink(), &cancel)
        .await
        .unwrap();
    let outcome = session.run_turn(TurnInput::new("compact please"), &h.sink(), &cancel).await.unwrap();
    assert_eq!(outcome.text, "compacted and continuing");
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, AgentEvent::ContextCompacted { reason, .. } if reason == "forced"))
    );
}

#[tokio::test]
async fn a_context_exceeded_error_compacts_and_retries_once() {
    for kind in FORMATS {
        let script = Script::new(vec![
            Turn::call("shell", r#"{"command": "for i in $(seq 1 300); do echo line$i; done"}"#),
            Turn::text("step two"),
            // Compaction after the provider's refusal halves the conversation: a summary.
            Turn::text("summary: the first turn listed 300 lines"),
            Turn::text("answered after the retry"),
        ]);
        let h = Harness::new(kind, script).await;
        let mut session = h.session().await;
        let cancel = CancellationToken::new();
        session.run_turn(TurnInput::new("first"), &h.sink(), &cancel).await.unwrap();
        let body = if kind != ProviderKind::Anthropic {
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#
        } else {
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 9000 tokens > 8192 maximum"}}"#
        };
        h.fake.push_fault(Fault::Status {
            status: 400,
            body: Some(body.into()),
            retry_after: None,
            retry_after_ms: None,
            should_retry: None,
        });
        let outcome = session.run_turn(TurnInput::new("second"), &h.sink(), &cancel).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Completed, "{kind}: {outcome:?}");
        assert_eq!(outcome.text, "answered after the retry");
        assert!(h.events().iter().any(
            |e| matches!(e, AgentEvent::ContextCompacted { reason, .. } if reason == "context_exceeded")
        ));
    }
}

/// A provider that says the prompt is too long when compaction has nothing to shrink (the
/// turn's own message is all there is) gets the request once: the turn fails saying so, rather
/// than compacting to no effect and sending the same request again.
#[tokio::test]
async fn a_prompt_too_long_that_compaction_cannot_shrink_is_not_sent_again() {
    for kind in FORMATS {
        let h = Harness::new(kind, Script::new(vec![Turn::text("never reached")])).await;
        let mut session = h.session().await;
        for _ in 0..2 {
            h.fake.push_fault(Fault::Status {
                status: 413,
                body: Some(
                    r#"{"error":{"type":"invalid_request_error","message":"prompt too long"}}"#.into(),
                ),
                retry_after: None,
                retry_after_ms: None,
                should_retry: None,
            });
        }
        let outcome =
            session.run_turn(TurnInput::new("hello"), &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Failed, "{kind}: {outcome:?}");
        let failure = outcome.error.clone().unwrap();
        assert_eq!(failure.code(), tackle_protocol::ErrorCode::ContextLengthExceeded, "{kind}: {failure:?}");
        let error = failure.to_string();
        assert!(error.contains("prompt too long") && error.contains("compaction"), "{kind}: {error}");
        assert_eq!(h.fake.requests().len(), 1, "{kind}: the same request was not sent again");
    }
}

/// A model answering instantly: nine calls of `blob`, then an answer; summaries on request.
struct LongRunModel {
    encoder: OpenAiChat,
    calls: AtomicUsize,
}

#[async_trait]
impl Provider for LongRunModel {
    fn name(&self) -> &str {
        "openai"
    }
    fn capabilities(&self) -> Capabilities {
        self.encoder.capabilities()
    }
    fn encode(&self, request: &ModelRequest) -> Result<EncodedRequest, ProviderError> {
        self.encoder.encode(request)
    }
    async fn send(&self, encoded: EncodedRequest, _: &CallOptions) -> Result<EventStream, ProviderError> {
        // Read the last message back from the exact bytes the loop sends.
        let body: serde_json::Value = serde_json::from_slice(&encoded.body).unwrap();
        let last = body["messages"].as_array().unwrap().last().unwrap()["content"].to_string();
        self.answer(&last)
    }
}

impl LongRunModel {
    fn answer(&self, last: &str) -> Result<EventStream, ProviderError> {
        let usage = Usage::default();
        let events = if last.contains("Open tasks:")
            && last.contains(SUMMARY_INSTRUCTIONS.lines().next().unwrap_or("-"))
        {
            vec![StreamEvent::TextDelta { text: "Goal: keep going. Decisions: none. Files touched: none. Open tasks: more blobs. Errors seen: none.".into() }, StreamEvent::Usage(usage), StreamEvent::Stop { reason: StopReason::EndTurn }]
        } else {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            if n % 10 == 9 {
                vec![
                    StreamEvent::TextDelta { text: "batch done".into() },
                    StreamEvent::Usage(usage),
                    StreamEvent::Stop { reason: StopReason::EndTurn },
                ]
            } else {
                let args = format!(r#"{{"command": "for i in $(seq 1 60); do echo row{n}_$i; done"}}"#);
                let call = ToolUse {
                    id: format!("call_{n}").into(),
                    name: "shell".into(),
                    input: ToolInput::parse(&args),
                };
                vec![
                    StreamEvent::ToolCallEnd { index: 0, call },
                    StreamEvent::Usage(usage),
                    StreamEvent::Stop { reason: StopReason::ToolUse },
                ]
            }
        };
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

#[tokio::test]
async fn a_thousand_step_session_never_exceeds_the_budget() {
    let db = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let store = Store::open(&db.path().join("t.db")).await.unwrap();
    let encoder =
        OpenAiChat::with_dialect(ProviderConfig::new(ProviderKind::Openai), OpenAiDialect::OpenAi).unwrap();
    let provider = LongRunModel { encoder, calls: AtomicUsize::new(0) };
    let mut config = AgentConfig::new("gpt-4o");
    config.context.window = Some(12_000);
    config.context.reserved_output = 1_000;
    config.max_steps = 12;
    let agent = Agent::builder(provider)
        .config(config)
        .store(store.clone())
        .workspace(workspace.path())
        .approver(AutoApprove)
        .build()
        .await
        .unwrap();
    let mut session = agent
        .create_session(NewSessionOptions { workspace: workspace.path().to_owned(), ..Default::default() })
        .await
        .unwrap();
    let events: Arc<std::sync::Mutex<Vec<AgentEvent>>> = Arc::default();
    let sink = {
        let e = events.clone();
        EventSink::new(move |ev| e.lock().unwrap().push(ev))
    };
    let cancel = CancellationToken::new();
    let mut steps = 0;
    while steps < 1000 {
        let outcome = session.run_turn(TurnInput::new("next batch"), &sink, &cancel).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Completed, "{outcome:?}");
        steps += outcome.steps as usize;
    }
    let events = events.lock().unwrap().clone();
    let mut max_percent: f64 = 0.0;
    let mut compactions = 0;
    for e in events.iter() {
        match e {
            AgentEvent::StepFinished { metrics: Some(m), .. } => {
                let c = m.context.unwrap();
                assert!(c.used + c.reserved_output <= c.window, "step over budget: {c:?}");
                max_percent = max_percent.max(c.percent);
            }
            AgentEvent::ContextCompacted { .. } => compactions += 1,
            _ => {}
        }
    }
    assert!(compactions > 0);
    assert!(max_percent <= 96.0, "max {max_percent}");
    // Nothing was lost: every message is in the store.
    let stored = store.messages().load(session.id(), MessageFilter { include_hidden: true }).await.unwrap();
    assert!(stored.len() >= 2 * steps, "{} messages for {steps} steps", stored.len());
    assert!(stored.iter().filter(|m| m.message.role == Role::Tool).count() >= 900);
}

#[tokio::test]
async fn messages_are_stored_with_their_counts_and_a_new_vocabulary_recounts() {
    let script = Script::new(vec![Turn::call("shell", r#"{"command": "echo hi"}"#), Turn::text("done")]);
    let h = Harness::with_config(ProviderKind::Openai, script, |mut c| {
        c.model = "gpt-4o".into();
        c
    })
    .await;
    let mut session = h.session().await;
    session.run_turn(TurnInput::new("say hi"), &h.sink(), &CancellationToken::new()).await.unwrap();
    let stored = h.store.messages().load(session.id(), MessageFilter::default()).await.unwrap();
    assert!(stored.iter().all(|m| m.token_count.is_some_and(|n| n > 0)), "every message has its count");
    let before = session.context_report();

    // Resumed with the same vocabulary: the stored counts give the same budget.
    let mut resumed = h.agent.open_session(session.id()).await.unwrap();
    assert_eq!(resumed.context_report().conversation, before.conversation);

    // Resumed with a model of another vocabulary (cl100k): stored counts are dropped and the
    // budget is counted afresh.
    let mut other = h.agent.with_model("gpt-4-turbo").open_session(session.id()).await.unwrap();
    let stored = h.store.messages().load(session.id(), MessageFilter::default()).await.unwrap();
    assert!(stored.iter().all(|m| m.token_count.is_none()), "o200k counts are not reused for cl100k");
    let recounted = other.context_report().conversation;
    assert!(recounted > 0);
    let counter = tackle_context::TokenCounter::for_model("gpt-4-turbo");
    let expected: u64 = other.history().iter().map(|m| counter.count_message(m)).sum();
    assert_eq!(recounted, expected);
}

/// `/context` and `/compact` speak of the same "conversation tokens", even when the provider's
/// reported usage disagrees wildly with the count (here it claims 50 input tokens per request):
/// compacting never appears to grow the context.
#[tokio::test]
async fn context_report_and_compaction_use_one_conversation_figure() {
    for kind in FORMATS {
        let tiny = Usage { input_tokens: 50, output_tokens: 5, ..Usage::default() };
        let script = Script::new(vec![
            Turn::call("shell", r#"{"command": "seq 1 300"}"#).with_usage(tiny),
            Turn::call("shell", r#"{"command": "seq 1 200"}"#).with_usage(tiny),
            Turn::call("shell", r#"{"command": "seq 1 100"}"#).with_usage(tiny),
            Turn::text("done").with_usage(tiny),
            Turn::text("ok").with_usage(tiny),
            Turn::text("Goal: g. Decisions: none. Files touched: none. Open tasks: none. Errors seen: none.")
                .with_usage(tiny),
        ]);
        let h = Harness::with_config(kind, script, |mut c| {
            c.model = "gpt-4o".into();
            c
        })
        .await;
        let mut session = h.session().await;
        let cancel = CancellationToken::new();
        session
            .run_turn(TurnInput::new(format!("count {}", "padding ".repeat(300))), &h.sink(), &cancel)
            .await
            .unwrap();
        session.run_turn(TurnInput::new("thanks"), &h.sink(), &cancel).await.unwrap();
        let before = session.context_report();
        assert_eq!(before.reported_input, Some(50), "{kind}: the budget starts from the provider's report");
        let report = session.compact_now(&h.sink()).await.unwrap();
        assert_eq!(report.tokens_before, before.conversation, "{kind}: /compact starts where /context was");
        let after = session.context_report();
        assert_eq!(report.tokens_after, after.conversation, "{kind}: /context shows what /compact left");
        assert!(report.tokens_after < report.tokens_before, "{kind}: {report:?}");
        // The figure is the tokenizer's count of the messages, not the provider's claim.
        let counter = tackle_context::TokenCounter::for_model(h.agent.config().model.as_str());
        let counted: u64 = session.history().iter().map(|m| counter.count_message(m)).sum();
        assert_eq!(after.conversation, counted, "{kind}");
    }
}

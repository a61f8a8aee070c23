//! Whether answers stream: a turn nobody watches (`EventSink::discard`) asks for whole answers,
//! a watched one streams, `always` and `never` override both, and the `chat` span says what was
//! sent. The requests the fake model received are the evidence.

use crate::common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use common::{FORMATS, Harness};
use serde_json::json;
use tackle_agent::{Agent, Streaming, TurnInput};
use tackle_protocol::{AgentEvent, TurnEnd};
use tackle_provider::ProviderKind;
use tackle_testkit::{Fault, Script, Turn};
use tackle_tools::EventSink;
use tokio_util::sync::CancellationToken;

/// Stateless: a request's answer depends on the tool results it carries, so a retried request
/// gets the answer the failed one would have.
fn script() -> Script {
    Script::stateless(vec![Turn::call("count", "{}"), Turn::text("Counted once.")])
}

/// The `stream` flag of every request the fake received.
fn stream_flags(h: &Harness) -> Vec<serde_json::Value> {
    h.fake.requests().iter().map(|r| r.body["stream"].clone()).collect()
}

#[tokio::test]
async fn a_discarding_sink_asks_for_whole_answers_and_the_setting_overrides() {
    let cases = [
        (Streaming::Auto, true, false),
        (Streaming::Auto, false, true),
        (Streaming::Always, true, true),
        (Streaming::Never, false, false),
    ];
    for kind in FORMATS {
        for (streaming, discard, streamed) in cases {
            let h = Harness::with_config(kind, script(), |mut c| {
                c.streaming = streaming;
                c
            })
            .await;
            let mut session = h.session().await;
            let sink = if discard { EventSink::discard() } else { h.sink() };
            let outcome = session
                .run_turn(TurnInput::new("Count once."), &sink, &CancellationToken::new())
                .await
                .unwrap();
            let case = format!("{kind:?} {streaming:?} discard={discard}");
            assert_eq!(outcome.end, TurnEnd::Completed, "{case}: {outcome:?}");
            assert_eq!(outcome.text, "Counted once.", "{case}");
            assert_eq!(h.counter.load(Ordering::SeqCst), 1, "{case}");
            assert_eq!(stream_flags(&h), [json!(streamed), json!(streamed)], "{case}");
            if !discard {
                // A watcher sees the text either way: as it streams, or whole when it is complete.
                let deltas: String = h
                    .events()
                    .iter()
                    .filter_map(|e| match e {
                        AgentEvent::TextDelta { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                assert_eq!(deltas, "Counted once.", "{case}");
            }
        }
    }
}

/// `AgentBuilder::streaming` sets it: `always` streams a turn nobody watches.
#[tokio::test]
async fn the_builder_sets_streaming() {
    let h = Harness::new(ProviderKind::Anthropic, script()).await;
    let agent = Agent::builder(common::provider(ProviderKind::Anthropic, &h.fake))
        .model("model-x")
        .store(h.store.clone())
        .workspace(h.workspace.path())
        .tool(common::Count(h.counter.clone()))
        .approver(tackle_tools::AutoApprove)
        .streaming(Streaming::Always)
        .build()
        .await
        .unwrap();
    assert_eq!(agent.config().streaming, Streaming::Always);
    let mut session = agent
        .create_session(tackle_agent::NewSessionOptions {
            workspace: h.workspace.path().to_owned(),
            ..Default::default()
        })
        .await
        .unwrap();
    let outcome = session
        .run_turn(TurnInput::new("Count."), &EventSink::discard(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.text, "Counted once.");
    assert_eq!(stream_flags(&h), [json!(true), json!(true)]);
}

/// A whole answer's failures go through the loop's one path: a rate limit is retried by the
/// provider, a body cut mid-way is retried once by the loop like a broken stream, and a body
/// that never decodes fails the turn with a provider error, never a panic.
#[tokio::test]
async fn whole_answers_fail_and_retry_like_streams() {
    for kind in FORMATS {
        let h = Harness::with_config(kind, script(), |mut c| {
            c.streaming = Streaming::Never;
            c
        })
        .await;
        h.fake.push_fault(Fault::status(429));
        h.fake.push_fault(Fault::CutAfter { events: 0 });
        let mut session = h.session().await;
        let outcome = session
            .run_turn(TurnInput::new("Count once."), &h.sink(), &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(outcome.text, "Counted once.", "{kind:?}: {outcome:?}");
        assert_eq!(h.counter.load(Ordering::SeqCst), 1, "{kind:?}: the call ran once");
        let flags = stream_flags(&h);
        assert_eq!(flags, vec![json!(false); 4], "{kind:?}: 429, cut, then both steps whole");
        let retries: Vec<String> = h
            .events()
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Retry { reason, .. } => Some(reason.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(retries.len(), 2, "{kind:?}: {retries:?}");
        assert!(retries[0].contains("rate limited"), "{retries:?}");
        assert!(retries[1].contains("network error"), "{retries:?}");

        // Malformed twice: the loop's one retry is spent, the turn fails with a provider error.
        let h = Harness::with_config(kind, script(), |mut c| {
            c.streaming = Streaming::Never;
            c
        })
        .await;
        h.fake.push_fault(Fault::MalformedChunk { after_events: 0 });
        h.fake.push_fault(Fault::MalformedChunk { after_events: 0 });
        let mut session = h.session().await;
        let outcome = session
            .run_turn(TurnInput::new("Count once."), &h.sink(), &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(outcome.end, TurnEnd::Failed, "{kind:?}: {outcome:?}");
        let failure = outcome.error.map(|e| e.to_string()).unwrap_or_default();
        assert!(failure.contains("malformed response body"), "{kind:?}: {failure}");
        assert_eq!(h.fake.requests().len(), 2, "{kind:?}");
    }
}

/// The `chat` span's `gen_ai.request.stream` says what each request asked for.
#[tokio::test]
async fn the_chat_span_says_whether_the_answer_streamed() {
    use tracing::field::{Field, Visit};
    use tracing_subscriber::layer::{Context, SubscriberExt};

    #[derive(Clone, Default)]
    struct Flags(Arc<Mutex<Vec<bool>>>);
    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Flags {
        fn on_new_span(
            &self,
            attrs: &tracing::span::Attributes<'_>,
            _: &tracing::span::Id,
            _: Context<'_, S>,
        ) {
            struct Stream(Option<bool>);
            impl Visit for Stream {
                fn record_bool(&mut self, field: &Field, value: bool) {
                    if field.name() == "gen_ai.request.stream" {
                        self.0 = Some(value);
                    }
                }
                fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
            }
            if attrs.metadata().name() == "chat" {
                let mut seen = Stream(None);
                attrs.record(&mut seen);
                self.0.lock().unwrap().extend(seen.0);
            }
        }
    }
    let flags = Flags::default();
    // The test's runtime has one thread, so the call runs in place under this subscriber.
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(flags.clone()));
    for discard in [true, false] {
        let h = Harness::with_config(ProviderKind::Openai, script(), |mut c| {
            c.streaming = Streaming::Auto;
            c
        })
        .await;
        let mut session = h.session().await;
        let sink = if discard { EventSink::discard() } else { h.sink() };
        session.run_turn(TurnInput::new("Count once."), &sink, &CancellationToken::new()).await.unwrap();
    }
    assert_eq!(*flags.0.lock().unwrap(), [false, false, true, true]);
}

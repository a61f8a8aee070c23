use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::{EventSink, TurnState};

fn sep1034_schema() -> Value {
    // The form of the conformance suite's `elicitation-sep1034-client-defaults` scenario.
    json!({"type": "object", "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": true}
    }, "required": []})
}

fn question(schema: Value) -> Question {
    Question {
        tool: "srv__ask".into(),
        server: "srv".into(),
        message: "please answer".into(),
        kind: ElicitationKind::Form { schema },
    }
}

fn ctx_with(policy: Option<ElicitationPolicy>, elicitor: Option<Arc<dyn Elicitor>>) -> ToolContext {
    let mut ctx = ToolContext::new("s1", "c1", std::env::temp_dir());
    ctx.turn = TurnState::default();
    if let Some(p) = policy {
        ctx.turn.insert(p);
    }
    if let Some(e) = elicitor {
        ctx.turn.insert(TurnElicitor(e));
    }
    ctx
}

struct Fixed(ElicitationAnswer);

#[async_trait]
impl Elicitor for Fixed {
    async fn elicit(&self, _request: ElicitationRequest) -> ElicitationAnswer {
        self.0.clone()
    }
}

#[tokio::test]
async fn defaults_policy_accepts_a_form_whose_fields_all_have_defaults() {
    let ctx = ctx_with(Some(ElicitationPolicy::Defaults), None);
    let answer = elicit(&ctx, question(sep1034_schema())).await;
    assert_eq!(
        answer,
        ElicitationAnswer::Accept {
            content: json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
        }
    );
}

#[tokio::test]
async fn defaults_policy_declines_when_a_required_field_has_none() {
    let schema = json!({"type": "object", "properties": {
        "name": {"type": "string", "default": "x"}, "email": {"type": "string", "format": "email"}},
        "required": ["name", "email"]});
    let ctx = ctx_with(Some(ElicitationPolicy::Defaults), None);
    match elicit(&ctx, question(schema)).await {
        ElicitationAnswer::Decline { reason: Some(reason) } => assert!(reason.contains("email"), "{reason}"),
        other => panic!("{other:?}"),
    }
    let url = Question {
        kind: ElicitationKind::Url { url: "https://x.example/pay".into() },
        ..question(json!({}))
    };
    assert!(matches!(elicit(&ctx, url).await, ElicitationAnswer::Decline { .. }));
}

#[tokio::test]
async fn policy_follows_the_turn_approval_policy() {
    let ctx = ctx_with(None, Some(Arc::new(Fixed(ElicitationAnswer::Accept { content: json!({}) }))));
    ctx.turn.insert(ApprovalPolicy::Deny);
    assert!(matches!(elicit(&ctx, question(sep1034_schema())).await, ElicitationAnswer::Decline { .. }));
    ctx.turn.insert(ApprovalPolicy::Auto);
    assert!(matches!(elicit(&ctx, question(sep1034_schema())).await, ElicitationAnswer::Accept { .. }));
}

#[tokio::test]
async fn an_asked_answer_gets_defaults_and_is_validated() {
    let elicitor: Arc<dyn Elicitor> =
        Arc::new(Fixed(ElicitationAnswer::Accept { content: json!({"age": 41}) }));
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut ctx = ctx_with(Some(ElicitationPolicy::Ask(None)), Some(elicitor));
    let seen = events.clone();
    ctx.events = EventSink::new(move |e| seen.lock().unwrap().push(e.name()));
    match elicit(&ctx, question(sep1034_schema())).await {
        ElicitationAnswer::Accept { content } => {
            assert_eq!(content["age"], 41, "the answer wins over the default");
            assert_eq!(content["name"], "John Doe", "omitted fields get their defaults");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(*events.lock().unwrap(), ["elicitation_requested", "elicitation_resolved"]);

    let bad: Arc<dyn Elicitor> =
        Arc::new(Fixed(ElicitationAnswer::Accept { content: json!({"age": "old"}) }));
    let ctx = ctx_with(Some(ElicitationPolicy::Ask(None)), Some(bad));
    match elicit(&ctx, question(sep1034_schema())).await {
        ElicitationAnswer::Decline { reason: Some(reason) } => assert!(reason.contains("age"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn without_an_elicitor_or_in_time_the_question_is_declined() {
    let ctx = ctx_with(Some(ElicitationPolicy::Ask(None)), None);
    assert!(matches!(elicit(&ctx, question(sep1034_schema())).await, ElicitationAnswer::Decline { .. }));

    let queue = ElicitationQueue::default();
    let ctx = ctx_with(
        Some(ElicitationPolicy::Ask(Some(Duration::from_millis(50)))),
        Some(Arc::new(queue.clone())),
    );
    let answer = elicit(&ctx, question(sep1034_schema())).await;
    assert!(matches!(answer, ElicitationAnswer::Decline { .. }), "{answer:?}");
    assert!(queue.pending(None).is_empty(), "a withdrawn question leaves the queue");
}

#[tokio::test]
async fn the_queue_lists_and_answers_and_pauses_the_call_clock() {
    let queue = ElicitationQueue::default();
    let ctx = ctx_with(Some(ElicitationPolicy::Ask(None)), Some(Arc::new(queue.clone())));
    let clock = ctx.wait_clock.clone();
    let asking = tokio::spawn(async move { elicit(&ctx, question(sep1034_schema())).await });
    let pending = loop {
        let p = queue.pending(Some("s1"));
        if !p.is_empty() {
            break p;
        }
        tokio::task::yield_now().await;
    };
    assert!(clock.is_paused(), "waiting for a person stops the call's clock");
    assert!(queue.pending(Some("other")).is_empty());
    assert!(queue.answer("nope", ElicitationAnswer::Cancel).is_err());
    queue.answer(&pending[0].id, ElicitationAnswer::Accept { content: json!({"verified": false}) }).unwrap();
    match asking.await.unwrap() {
        ElicitationAnswer::Accept { content } => assert_eq!(content["verified"], false),
        other => panic!("{other:?}"),
    }
    assert!(!clock.is_paused());
}

#[test]
fn typed_input_is_parsed_per_field() {
    let schema = sep1034_schema();
    let fields: std::collections::HashMap<&str, &Value> = form_fields(&schema).into_iter().collect();
    assert_eq!(parse_field_input(fields["age"], " 42 ").unwrap(), json!(42));
    assert!(parse_field_input(fields["age"], "4.2").is_err());
    assert_eq!(parse_field_input(fields["score"], "1.5").unwrap(), json!(1.5));
    assert_eq!(parse_field_input(fields["verified"], "no").unwrap(), json!(false));
    assert_eq!(parse_field_input(fields["status"], "2").unwrap(), json!("inactive"));
    assert_eq!(parse_field_input(fields["status"], "pending").unwrap(), json!("pending"));
    assert!(parse_field_input(fields["status"], "gone").unwrap_err().to_string().contains("1 active"));
    let titled = json!({"type": "string", "oneOf": [{"const": "#f00", "title": "Red"}, {"const": "#00f", "title": "Blue"}]});
    assert_eq!(parse_field_input(&titled, "blue").unwrap(), json!("#00f"));
    let multi = json!({"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}});
    assert_eq!(parse_field_input(&multi, "a, 3").unwrap(), json!(["a", "c"]));
    assert!(validate_field(&json!({"type": "string", "format": "email"}), &json!("nope")).is_err());
    assert!(validate_field(&json!({"type": "string", "format": "email"}), &json!("a@b.example")).is_ok());
}

#[test]
fn unsupported_forms_are_refused() {
    assert!(check_form_schema(&sep1034_schema()).is_ok());
    assert!(check_form_schema(&json!({"type": "array"})).is_err());
    let nested = json!({"type": "object", "properties": {"x": {"type": "object"}}});
    assert!(check_form_schema(&nested).unwrap_err().to_string().contains("`x`"));
}

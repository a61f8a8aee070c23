use serde_json::json;

use super::*;

fn codes(q: &Question) -> Vec<String> {
    q.buttons
        .iter()
        .flatten()
        .filter_map(|b| match &b.action {
            ButtonAction::Reply(code) => Some(code.clone()),
            ButtonAction::Open(_) => None,
        })
        .collect()
}

fn signup() -> Value {
    json!({"type": "object", "properties": {
        "email": {"type": "string", "format": "email", "title": "Email"},
        "plan": {"oneOf": [{"const": "free", "title": "Free"}, {"const": "pro", "title": "Pro"}], "default": "free"},
        "news": {"type": "boolean"},
        "seats": {"type": "integer", "minimum": 1, "maximum": 10},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}}
    }, "required": ["email", "seats"]})
}

#[test]
fn a_form_is_asked_field_by_field_with_buttons_for_choices_and_replies_checked() {
    let mut d = Dialog::form("q1".into(), "shop", "Sign up", signup());
    let q = d.question();
    assert!(q.text.plain_text().contains("shop asks: Sign up"), "{}", q.text.plain_text());
    assert!(q.text.plain_text().contains("Email (1 of 5, required)"));
    assert!(q.text.plain_text().contains("text (email)"));
    assert_eq!(codes(&q), ["x", "q"], "a required text field: only decline and cancel");

    // An invalid reply is refused with the schema's reason; the step stays.
    let Step::Retry { reason } = d.reply("not-an-email") else { panic!() };
    assert!(reason.contains("email"), "{reason}");
    assert_eq!(d.step(), 0);
    assert_eq!(d.reply("ann@example.com"), Step::Next("Email: ann@example.com".into()));

    // A choice with a default: a button per choice, the default offered, skip (optional).
    let q = d.question();
    assert_eq!(q.step, 1);
    assert_eq!(codes(&q), ["c0", "c1", "d", "s", "x", "q"]);
    assert!(q.text.plain_text().contains("Default: free"));
    assert_eq!(d.press_at(0, "c1"), Step::Ignored, "a button of an answered step");
    assert_eq!(d.press_at(1, "c1"), Step::Next("plan: pro".into()));

    // Yes / No; skipped when optional.
    assert_eq!(codes(&d.question()), ["y", "n", "s", "x", "q"]);
    assert_eq!(d.press("s"), Step::Next("news: (skipped)".into()));

    // A number out of range, then in range; "skip" is no button of a required field.
    assert_eq!(d.press("s"), Step::Ignored);
    assert!(matches!(d.reply("12"), Step::Retry { reason } if reason.contains("10")));
    assert!(matches!(d.reply("two"), Step::Retry { reason } if reason.contains("whole number")));
    assert_eq!(d.reply("2"), Step::Next("seats: 2".into()));

    // Several choices by reply.
    assert!(d.question().text.plain_text().contains("1 a, 2 b, 3 c"));
    assert!(matches!(d.reply("a, z"), Step::Retry { .. }));
    let Step::Done(answer) = d.reply("1, c") else { panic!() };
    assert_eq!(
        answer,
        ElicitationAnswer::Accept {
            content: json!({"email": "ann@example.com", "plan": "pro", "seats": 2, "tags": ["a", "c"]})
        }
    );
    assert!(d.summary().contains("tags: a, c"), "{}", d.summary());
}

#[test]
fn defaults_decline_and_cancel() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "number", "default": 2.5}}});
    let mut d = Dialog::form("q2".into(), "s", "m", schema.clone());
    assert!(d.question().text.plain_text().contains("Default: 2.5"));
    assert_eq!(d.press("d"), Step::Done(ElicitationAnswer::Accept { content: json!({"n": 2.5}) }));

    let mut d = Dialog::form("q3".into(), "s", "m", schema.clone());
    assert_eq!(d.press("x"), Step::Done(ElicitationAnswer::Decline { reason: None }));
    let mut d = Dialog::form("q4".into(), "s", "m", schema);
    assert_eq!(d.press("q"), Step::Done(ElicitationAnswer::Cancel));

    let no_default = json!({"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"]});
    let mut d = Dialog::form("q5".into(), "s", "m", no_default);
    assert_eq!(d.press("d"), Step::Ignored, "no default to use");
    assert!(matches!(d.reply("maybe"), Step::Retry { reason } if reason.contains("yes or no")));
    assert_eq!(d.reply("yes"), Step::Done(ElicitationAnswer::Accept { content: json!({"b": true}) }));
}

#[test]
fn a_link_is_opened_and_confirmed() {
    let mut d = Dialog::url("q6".into(), "pay", "Pay the invoice", "https://pay.example/i/1");
    let q = d.question();
    assert!(
        q.buttons.iter().flatten().any(|b| b.action == ButtonAction::Open("https://pay.example/i/1".into()))
    );
    assert_eq!(codes(&q), ["ok", "x", "q"]);
    assert!(matches!(d.reply("done"), Step::Retry { reason } if reason.contains("press Done")));
    assert_eq!(d.press("c0"), Step::Ignored);
    assert_eq!(d.press("ok"), Step::Done(ElicitationAnswer::Accept { content: json!({}) }));
}

#[test]
fn an_empty_form_is_confirmed_and_button_data_fits_telegram() {
    let mut d = Dialog::form("q7".into(), "s", "Go on?", json!({"type": "object", "properties": {}}));
    assert_eq!(codes(&d.question()), ["ok", "x", "q"]);
    assert_eq!(d.press("ok"), Step::Done(ElicitationAnswer::Accept { content: json!({}) }));
    // Many choices: codes stay short (callback data is at most 64 bytes with a UUID id).
    let many: Vec<String> = (0..40).map(|i| format!("option number {i}")).collect();
    let d = Dialog::form(
        "019ac0de-7a1b-7c3d-8e4f-0123456789ab".into(),
        "s",
        "m",
        json!({"type": "object", "properties": {"o": {"type": "string", "enum": many}}}),
    );
    assert!(codes(&d.question()).iter().all(|c| c.len() <= 8));
}

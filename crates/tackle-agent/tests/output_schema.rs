//! Structured final output against the fake model in all three wire formats: asked natively
//! (Chat `response_format`, Responses `text.format`) or through the final-answer tool (Anthropic),
//! validated, repaired once, and failed with a typed failure after that.

use crate::common;

use std::sync::atomic::Ordering;

use common::{FORMATS, Harness};
use serde_json::{Value, json};
use tackle_agent::{FINAL_ANSWER_TOOL, OutputSchema, TurnFailure, TurnInput};
use tackle_protocol::{ErrorCode, TurnEnd};
use tackle_provider::ProviderKind;
use tackle_testkit::{Script, Turn};
use tokio_util::sync::CancellationToken;

fn city_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
        "additionalProperties": false
    })
}

fn schema() -> OutputSchema {
    OutputSchema::new("city", city_schema()).unwrap()
}

/// The model's final answer `json` as the format gives it: text where the API constrains the
/// answer itself, a call of the final-answer tool elsewhere.
fn answer(kind: ProviderKind, json: &str) -> Turn {
    match kind {
        ProviderKind::Anthropic => Turn::call(FINAL_ANSWER_TOOL, json),
        _ => Turn::text(json),
    }
}

/// What the request asks for, per format: the exact field.
fn asked(kind: ProviderKind, body: &Value) -> Value {
    match kind {
        ProviderKind::Openai => body["response_format"].clone(),
        ProviderKind::OpenaiResponses => body["text"].clone(),
        _ => json!({"tools": body["tools"].as_array().unwrap().last(), "tool_choice": body["tool_choice"]}),
    }
}

#[tokio::test]
async fn each_format_asks_natively_calls_tools_first_and_returns_the_json() {
    for kind in FORMATS {
        let script = Script::new(vec![
            Turn::call("count", "{}"),
            answer(kind, r#"{"city": "Paris", "population": 2102650}"#),
        ]);
        let h = Harness::new(kind, script).await;
        let mut session = h.session().await;
        let input = TurnInput::new("Which city?").with_output_schema(schema());
        let outcome = session.run_turn(input, &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Completed, "{kind}: {outcome:?}");
        assert_eq!(outcome.output, Some(json!({"city": "Paris", "population": 2102650})), "{kind}");
        assert_eq!(outcome.text, r#"{"city":"Paris","population":2102650}"#, "{kind}");
        // The tool ran before the final answer.
        assert_eq!(h.counter.load(Ordering::SeqCst), 1, "{kind}");
        let requests = h.fake.requests();
        assert_eq!(requests.len(), 2, "{kind}");
        let expected = match kind {
            ProviderKind::Openai => json!({
                "type": "json_schema",
                "json_schema": {"name": "city", "schema": city_schema(), "strict": true}
            }),
            ProviderKind::OpenaiResponses => json!({
                "format": {"type": "json_schema", "name": "city", "schema": city_schema(), "strict": true}
            }),
            _ => json!({
                "tools": {
                    "name": FINAL_ANSWER_TOOL,
                    "description": requests[0].body["tools"].as_array().unwrap().last().unwrap()["description"],
                    "input_schema": city_schema()
                },
                "tool_choice": {"type": "any"}
            }),
        };
        for request in &requests {
            assert_eq!(asked(kind, &request.body), expected, "{kind}");
        }
        if kind == ProviderKind::Anthropic {
            // The tool list is the same bytes on every step of the turn.
            assert_eq!(requests[0].body["tools"], requests[1].body["tools"]);
        }
    }
}

#[tokio::test]
async fn a_schema_outside_the_strict_subset_is_sent_with_strict_false() {
    let open = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    for kind in [ProviderKind::Openai, ProviderKind::OpenaiResponses] {
        let h = Harness::new(kind, Script::new(vec![Turn::text(r#"{"city": "Oslo"}"#)])).await;
        let mut session = h.session().await;
        let input =
            TurnInput::new("city?").with_output_schema(OutputSchema::new("loose", open.clone()).unwrap());
        let outcome = session.run_turn(input, &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.output, Some(json!({"city": "Oslo"})), "{kind}");
        let body = &h.fake.requests()[0].body;
        let strict = match kind {
            ProviderKind::Openai => &body["response_format"]["json_schema"]["strict"],
            _ => &body["text"]["format"]["strict"],
        };
        assert_eq!(strict, &json!(false), "{kind}");
    }
}

#[tokio::test]
async fn a_first_invalid_answer_is_repaired_with_the_validation_error() {
    for kind in FORMATS {
        let script = Script::new(vec![
            answer(kind, r#"{"city": "Paris", "population": "two million"}"#),
            answer(kind, r#"{"city": "Paris", "population": 2102650}"#),
        ]);
        let h = Harness::new(kind, script).await;
        let mut session = h.session().await;
        let input = TurnInput::new("Which city?").with_output_schema(schema());
        let outcome = session.run_turn(input, &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Completed, "{kind}: {outcome:?}");
        assert_eq!(outcome.output, Some(json!({"city": "Paris", "population": 2102650})), "{kind}");
        let requests = h.fake.requests();
        assert_eq!(requests.len(), 2, "{kind}");
        // The repair request carries the validation error, by JSON pointer.
        let repair = common::conversation(&requests[1].body).to_string();
        assert!(repair.contains("/population"), "{kind}: {repair}");
        assert!(h.event_names().contains(&"warning"), "{kind}");
    }
}

#[tokio::test]
async fn a_second_invalid_answer_fails_the_turn_with_output_invalid() {
    for kind in FORMATS {
        let script = Script::new(vec![
            answer(kind, r#"{"city": "Paris"}"#),
            answer(kind, r#"{"city": 7, "population": 1}"#),
            answer(kind, r#"{"city": "never asked", "population": 1}"#),
        ]);
        let h = Harness::new(kind, script).await;
        let mut session = h.session().await;
        let input = TurnInput::new("Which city?").with_output_schema(schema());
        let outcome = session.run_turn(input, &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Failed, "{kind}: {outcome:?}");
        assert_eq!(outcome.output, None, "{kind}");
        let failure = outcome.error.as_ref().unwrap();
        assert!(
            matches!(failure, TurnFailure::OutputInvalid { error, .. } if error.contains("/city")),
            "{failure}"
        );
        assert_eq!(failure.code(), ErrorCode::OutputInvalid);
        assert_eq!(h.fake.requests().len(), 2, "{kind}: one repair round, no more");
    }
}

#[tokio::test]
async fn the_last_step_forces_the_final_answer_tool() {
    // Anthropic: the step limit's `none` becomes the final-answer tool, so the turn still ends
    // with the structured answer.
    let kind = ProviderKind::Anthropic;
    let script =
        Script::new(vec![Turn::call("count", "{}"), answer(kind, r#"{"city": "Rome", "population": 1}"#)]);
    let h = Harness::new(kind, script).await;
    let mut session = h.session().await;
    let mut input = TurnInput::new("Which city?").with_output_schema(schema());
    input.max_steps = Some(2);
    let outcome = session.run_turn(input, &h.sink(), &CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.end, TurnEnd::Completed, "{outcome:?}");
    let requests = h.fake.requests();
    assert_eq!(requests[1].body["tool_choice"], json!({"type": "tool", "name": FINAL_ANSWER_TOOL}));
}

#[tokio::test]
async fn a_schema_whose_root_is_an_array_works_through_the_final_answer_tool() {
    // Anthropic's tool input must be an object: the answer travels as `value` and comes back bare.
    let kind = ProviderKind::Anthropic;
    let cities = json!({"type": "array", "items": {"type": "string"}, "minItems": 1});
    let script = Script::new(vec![Turn::call(FINAL_ANSWER_TOOL, r#"{"value": ["Paris", "Rome"]}"#)]);
    let h = Harness::new(kind, script).await;
    let mut session = h.session().await;
    let input = TurnInput::new("Which cities?")
        .with_output_schema(OutputSchema::new("cities", cities.clone()).unwrap());
    let outcome = session.run_turn(input, &h.sink(), &CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.end, TurnEnd::Completed, "{outcome:?}");
    assert_eq!(outcome.output, Some(json!(["Paris", "Rome"])));
    let requests = h.fake.requests();
    let tool = requests[0].body["tools"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(tool["input_schema"]["type"], "object", "{tool}");
    assert_eq!(tool["input_schema"]["properties"]["value"], cities, "{tool}");
}

#[tokio::test]
async fn without_a_schema_nothing_is_added_to_the_request() {
    for kind in FORMATS {
        let h = Harness::new(kind, Script::new(vec![Turn::text("plain")])).await;
        let mut session = h.session().await;
        let outcome =
            session.run_turn(TurnInput::new("hi"), &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!((outcome.text.as_str(), outcome.output), ("plain", None));
        let body = &h.fake.requests()[0].body;
        assert!(body.get("response_format").is_none() && body.get("text").is_none(), "{kind}");
        let tools = body["tools"].as_array().unwrap();
        assert!(tools.iter().all(|t| t.to_string().find(FINAL_ANSWER_TOOL).is_none()), "{kind}");
    }
}

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct City {
    city: String,
    population: u64,
}

#[tokio::test]
async fn run_typed_returns_the_typed_value() {
    for kind in FORMATS {
        let script = Script::new(vec![
            Turn::call("count", "{}"),
            answer(kind, r#"{"city": "Lyon", "population": -3}"#),
            answer(kind, r#"{"city": "Lyon", "population": 522250}"#),
        ]);
        let h = Harness::new(kind, script).await;
        let city: City = h.agent.run_typed("Which city?").await.unwrap();
        assert_eq!(city, City { city: "Lyon".into(), population: 522250 }, "{kind}");
        let body = &h.fake.requests()[0].body;
        let name = match kind {
            ProviderKind::Openai => &body["response_format"]["json_schema"]["name"],
            ProviderKind::OpenaiResponses => &body["text"]["format"]["name"],
            _ => &json!("City"),
        };
        assert_eq!(name, "City", "{kind}");
        // `deny_unknown_fields` closes the object and every field is required: strict.
        if kind == ProviderKind::Openai {
            assert_eq!(body["response_format"]["json_schema"]["strict"], true);
        }
        // A negative population fails the derived schema (`minimum: 0`): repaired once.
        assert_eq!(h.fake.requests().len(), 3, "{kind}");
    }
}

#[tokio::test]
async fn run_typed_reports_a_turn_without_a_valid_answer() {
    let kind = ProviderKind::Openai;
    let script = Script::new(vec![Turn::text("no json"), Turn::text("still none")]);
    let h = Harness::new(kind, script).await;
    let err = h.agent.run_typed::<City>("Which city?").await.unwrap_err();
    assert!(
        matches!(&err, tackle_agent::RunTypedError::Turn(o) if o.error.as_ref().map(TurnFailure::code) == Some(ErrorCode::OutputInvalid)),
        "{err}"
    );
    assert!(err.to_string().contains("not valid JSON"), "{err}");
}

/// Arguments of the user's own `final_answer` tool.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct DraftArgs {
    /// A draft.
    draft: String,
}

/// A user's tool that happens to be called `final_answer`: an ordinary tool, run by the executor.
struct UsersFinalAnswer(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

#[async_trait::async_trait]
impl tackle_tools::TypedTool for UsersFinalAnswer {
    type Args = DraftArgs;
    fn name(&self) -> &str {
        "final_answer"
    }
    fn description(&self) -> String {
        "Files a draft (the user's own tool).".into()
    }
    fn annotations(&self) -> tackle_protocol::ToolAnnotations {
        tackle_protocol::ToolAnnotations::read_only()
    }
    async fn run(
        &self,
        args: DraftArgs,
        _: tackle_tools::ToolContext,
    ) -> Result<tackle_tools::ToolOutput, tackle_tools::ToolFailure> {
        self.0.lock().unwrap().push(args.draft.clone());
        Ok(tackle_tools::ToolOutput::text(format!("draft filed: {}", args.draft)))
    }
}

#[tokio::test]
async fn a_catalogue_with_its_own_final_answer_tool_gets_another_name_for_the_loops() {
    let kind = ProviderKind::Anthropic;
    let script = Script::new(vec![
        // The user's tool, by its name: it runs.
        Turn::call("final_answer", r#"{"draft": "Paris, about two million"}"#),
        // The loop's final-answer tool, under the name it was given.
        Turn::call("final_answer_2", r#"{"city": "Paris", "population": 2102650}"#),
    ]);
    let filed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let tool = UsersFinalAnswer(filed.clone());
    let h = Harness::with_config(kind, script, |c| c).await;
    let agent = tackle_agent::Agent::builder(common::provider(kind, &h.fake))
        .model("model-x")
        .store(h.store.clone())
        .workspace(h.workspace.path())
        .tool(tool)
        .build()
        .await
        .unwrap();
    let mut session = agent
        .create_session(tackle_agent::NewSessionOptions {
            workspace: h.workspace.path().to_owned(),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut input = TurnInput::new("Which city?").with_output_schema(schema());
    input.max_steps = Some(2);
    let outcome = session.run_turn(input, &h.sink(), &CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.end, TurnEnd::Completed, "{outcome:?}");
    assert_eq!(outcome.output, Some(json!({"city": "Paris", "population": 2102650})));
    assert_eq!(*filed.lock().unwrap(), ["Paris, about two million"], "the user's tool ran, once");

    let requests = h.fake.requests();
    assert_eq!(requests.len(), 2);
    let tools = requests[0].body["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names.iter().filter(|n| **n == "final_answer").count(), 1, "{names:?}");
    assert_eq!(names.last(), Some(&"final_answer_2"), "{names:?}");
    let users = tools.iter().find(|t| t["name"] == "final_answer").unwrap();
    assert!(users["input_schema"]["properties"]["draft"].is_object(), "{users}");
    assert_eq!(tools.last().unwrap()["input_schema"], city_schema());
    // The same tool bytes on every step; the last step forces the loop's tool by its name.
    assert_eq!(requests[0].body["tools"], requests[1].body["tools"]);
    assert_eq!(requests[1].body["tool_choice"], json!({"type": "tool", "name": "final_answer_2"}));
    // The user's tool answered with its own result, not the loop's.
    let conversation = common::conversation(&requests[1].body).to_string();
    assert!(conversation.contains("draft filed: Paris, about two million"), "{conversation}");
}

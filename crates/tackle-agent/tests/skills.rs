//! Skills per workspace: what a session's system prompt offers is exactly what `activate_skill`
//! accepts in that session, for every workspace of the agent (a server's named workspaces).

use crate::common;

use common::{provider, write_skill};
use serde_json::Value;
use tackle_agent::{Agent, NewSessionOptions, TurnInput};
use tackle_protocol::{AgentEvent, ToolOutcome};
use tackle_provider::ProviderKind;
use tackle_store::Store;
use tackle_testkit::{FakeModel, Script, Turn};
use tackle_tools::{AutoApprove, EventSink};
use tokio_util::sync::CancellationToken;

/// The system prompt of a recorded OpenAI request.
fn system_prompt(body: &Value) -> String {
    body["messages"][0]["content"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_workspace_offers_exactly_the_skills_activate_skill_accepts() {
    let default = tempfile::tempdir().unwrap();
    let docs = tempfile::tempdir().unwrap();
    write_skill(default.path(), "alpha", &[]);
    write_skill(docs.path(), "beta", &[]);
    write_skill(docs.path(), "gamma", &[]);
    // In the docs workspace: beta is offered and activates; alpha (the default workspace's) is
    // neither offered nor accepted.
    let script = Script::new(vec![
        Turn::call("activate_skill", r#"{"name": "beta"}"#),
        Turn::call("activate_skill", r#"{"name": "alpha"}"#),
        Turn::text("done"),
    ]);
    let fake = FakeModel::start(script).await.unwrap();
    let db = tempfile::tempdir().unwrap();
    let store = Store::open(&db.path().join("t.db")).await.unwrap();
    let agent = Agent::builder(provider(ProviderKind::Openai, &fake))
        .model("model-x")
        .store(store)
        .workspace(default.path())
        .workspaces([docs.path().to_owned()])
        .approver(AutoApprove)
        .build()
        .await
        .unwrap();
    let mut session = agent
        .create_session(NewSessionOptions { workspace: docs.path().to_owned(), ..Default::default() })
        .await
        .unwrap();
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = {
        let events = events.clone();
        EventSink::new(move |e| events.lock().unwrap().push(e))
    };
    session.run_turn(TurnInput::new("use the skills"), &sink, &CancellationToken::new()).await.unwrap();

    let prompt = system_prompt(&fake.requests()[0].body);
    let offered: Vec<&str> =
        ["alpha", "beta", "gamma"].into_iter().filter(|s| prompt.contains(&format!("- {s}:"))).collect();
    assert_eq!(offered, ["beta", "gamma"], "{prompt}");

    let outcomes: Vec<(String, bool)> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { name, outcome, .. } if name == "activate_skill" => {
                Some((name.clone(), matches!(outcome, ToolOutcome::Ok { .. })))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        outcomes.iter().map(|o| o.1).collect::<Vec<_>>(),
        [true, false],
        "beta accepted, alpha refused"
    );

    // A session in the default workspace offers alpha only.
    let session = agent.create_session(NewSessionOptions::default()).await.unwrap();
    assert_eq!(session.skills().names(), ["alpha"]);
}

#[tokio::test]
async fn without_skills_anywhere_nothing_is_offered() {
    let fake = FakeModel::start(Script::new(vec![Turn::text("hi")])).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let agent = Agent::builder(provider(ProviderKind::Openai, &fake))
        .model("model-x")
        .in_memory()
        .workspace(workspace.path())
        .build()
        .await
        .unwrap();
    assert!(!agent.catalog().contains("activate_skill"));
    let later = tempfile::tempdir().unwrap();
    write_skill(later.path(), "late", &[]);
    // A workspace with skills that the agent was not told about: the catalog has no
    // activate_skill, so the prompt offers none either.
    let session = agent
        .create_session(NewSessionOptions { workspace: later.path().to_owned(), ..Default::default() })
        .await
        .unwrap();
    assert!(session.skills().is_empty());
}

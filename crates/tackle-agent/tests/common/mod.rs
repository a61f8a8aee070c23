//! A harness running real sessions against the scripted fake model.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tackle_agent::{Agent, AgentConfig, NewSessionOptions, Session};
use tackle_protocol::{AgentEvent, ToolAnnotations};
use tackle_provider::{
    Anthropic, OpenAiChat, OpenAiDialect, OpenAiResponses, Provider, ProviderConfig, ProviderKind,
    RetryPolicy,
};
use tackle_store::Store;
use tackle_testkit::{FakeModel, Script};
use tackle_tools::{AutoApprove, EventSink, ToolContext, ToolFailure, ToolOutput, TypedTool};

/// Every wire format, for tests that must pass in each.
pub const FORMATS: [ProviderKind; 3] =
    [ProviderKind::Openai, ProviderKind::OpenaiResponses, ProviderKind::Anthropic];

/// The conversation of a request body: Chat and Messages `messages`, Responses `input`.
pub fn conversation(body: &serde_json::Value) -> &serde_json::Value {
    body.get("messages").unwrap_or(&body["input"])
}

/// Arguments of `count`.
#[derive(Deserialize, JsonSchema)]
pub struct CountArgs {
    /// Label.
    #[serde(default)]
    pub label: Option<String>,
}

/// A tool counting its runs (to prove calls run at most once).
pub struct Count(pub Arc<AtomicUsize>);

#[async_trait]
impl TypedTool for Count {
    type Args = CountArgs;
    fn name(&self) -> &str {
        "count"
    }
    fn description(&self) -> String {
        "Count.".into()
    }
    async fn run(&self, _: CountArgs, _: ToolContext) -> Result<ToolOutput, ToolFailure> {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(ToolOutput::text(format!("count is {n}")))
    }
}

/// Arguments of `meet`.
#[derive(Deserialize, JsonSchema)]
pub struct MeetArgs {}

/// A read-only tool that only returns once two calls run at the same time.
pub struct Meet(pub Arc<tokio::sync::Barrier>);

#[async_trait]
impl TypedTool for Meet {
    type Args = MeetArgs;
    fn name(&self) -> &str {
        "meet"
    }
    fn description(&self) -> String {
        "Wait for a second concurrent call.".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn run(&self, _: MeetArgs, _: ToolContext) -> Result<ToolOutput, ToolFailure> {
        tokio::time::timeout(Duration::from_secs(5), self.0.wait())
            .await
            .map_err(|_| ToolFailure::timeout("the other call never came: calls ran one after the other"))?;
        Ok("met".into())
    }
}

/// Everything a loop test needs.
pub struct Harness {
    pub fake: FakeModel,
    pub agent: Agent,
    pub store: Store,
    pub workspace: tempfile::TempDir,
    pub db_dir: tempfile::TempDir,
    pub counter: Arc<AtomicUsize>,
    pub events: Arc<Mutex<Vec<AgentEvent>>>,
    pub kind: ProviderKind,
}

pub fn provider(kind: ProviderKind, fake: &FakeModel) -> Arc<dyn Provider> {
    let retry = RetryPolicy {
        max_retries: 2,
        initial_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(10),
        ..RetryPolicy::default()
    };
    match kind {
        ProviderKind::Openai => {
            let c = ProviderConfig::new(kind)
                .with_base_url(format!("{}/v1", fake.base_url()))
                .with_api_key("sk-test")
                .with_retry(retry);
            Arc::new(OpenAiChat::with_dialect(c, OpenAiDialect::OpenAi).unwrap())
        }
        ProviderKind::OpenaiResponses => {
            let c = ProviderConfig::new(kind)
                .with_base_url(format!("{}/v1", fake.base_url()))
                .with_api_key("sk-test")
                .with_retry(retry);
            Arc::new(OpenAiResponses::new(c).unwrap())
        }
        ProviderKind::Anthropic => {
            let c = ProviderConfig::new(kind)
                .with_base_url(fake.base_url())
                .with_api_key("sk-ant-test")
                .with_retry(retry);
            Arc::new(Anthropic::new(c).unwrap())
        }
        ProviderKind::Codex => {
            panic!("the loop harness speaks the HTTP wire formats; Codex has its own tests")
        }
    }
}

impl Harness {
    pub async fn new(kind: ProviderKind, script: Script) -> Self {
        Self::with_config(kind, script, |c| c).await
    }

    pub async fn with_config(
        kind: ProviderKind,
        script: Script,
        config: impl FnOnce(AgentConfig) -> AgentConfig,
    ) -> Self {
        Self::with_workspace(kind, script, config, |_| {}).await
    }

    /// A harness whose workspace is prepared by `setup` before the agent is built (skills are
    /// discovered from it, and `activate_skill` is registered when there are any).
    pub async fn with_workspace(
        kind: ProviderKind,
        script: Script,
        config: impl FnOnce(AgentConfig) -> AgentConfig,
        setup: impl FnOnce(&std::path::Path),
    ) -> Self {
        let workspace = tempfile::tempdir().unwrap();
        setup(workspace.path());
        let fake = FakeModel::start(script).await.unwrap();
        let db_dir = tempfile::tempdir().unwrap();
        let store = Store::open(&db_dir.path().join("tackle.db")).await.unwrap();
        let counter = Arc::new(AtomicUsize::new(0));
        let agent = Self::build_agent(kind, &fake, &store, counter.clone(), workspace.path(), config).await;
        Self { fake, agent, store, workspace, db_dir, counter, events: Arc::default(), kind }
    }

    /// The harness's agent: builtins, `count` and `meet`, skills of `workspace`, offloading,
    /// everything approved.
    pub async fn build_agent(
        kind: ProviderKind,
        fake: &FakeModel,
        store: &Store,
        counter: Arc<AtomicUsize>,
        workspace: &std::path::Path,
        config: impl FnOnce(AgentConfig) -> AgentConfig,
    ) -> Agent {
        Agent::builder(provider(kind, fake))
            .config(config(AgentConfig::new("model-x")))
            .store(store.clone())
            .workspace(workspace)
            .tool(Count(counter))
            .tool(Meet(Arc::new(tokio::sync::Barrier::new(2))))
            .approver(AutoApprove)
            .build()
            .await
            .unwrap()
    }

    pub async fn session(&self) -> Session {
        self.agent
            .create_session(NewSessionOptions {
                workspace: self.workspace.path().to_owned(),
                ..NewSessionOptions::default()
            })
            .await
            .unwrap()
    }

    pub fn sink(&self) -> EventSink {
        let events = self.events.clone();
        EventSink::new(move |e| events.lock().unwrap().push(e))
    }

    pub fn event_names(&self) -> Vec<&'static str> {
        self.events.lock().unwrap().iter().map(AgentEvent::name).collect()
    }

    pub fn events(&self) -> Vec<AgentEvent> {
        self.events.lock().unwrap().clone()
    }
}

/// Writes `skills/<name>/SKILL.md` unlocking `tools`.
pub fn write_skill(workspace: &std::path::Path, name: &str, tools: &[&str]) {
    let dir = workspace.join("skills").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let body = format!(
        "---\nname: {name}\ndescription: The {name} skill.\ntools: [{}]\n---\nInstructions of {name}: be careful.\n",
        tools.join(", ")
    );
    std::fs::write(dir.join("SKILL.md"), body).unwrap();
}

//! `tackle bench cache`: the cache-stability reference scenario against the built-in fake model.
//!
//! About 50 steps over turns whose tool mask changes every time, with two skill activations and
//! two tool errors, run in each wire format (Chat Completions, Responses, Messages). The fake model simulates a provider prompt cache
//! (cache reads follow from the bytes actually sent). Reported: per-step prefix ratios, cache
//! breaks, cache reads, tool success rate and average steps per turn. `--export` writes the
//! OpenAI run as a [`Replay`] for other frameworks (bench/cache runs it through the AI SDK).

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use serde::Serialize;
use tackle_agent::{NewSessionOptions, ToolMask, TurnInput};

use crate::settings::Settings;
use serde_json::Value;
use tackle_protocol::{AgentEvent, ToolOutcome};
use tackle_provider::{
    Anthropic, OpenAiChat, OpenAiDialect, OpenAiResponses, Provider, ProviderConfig, ProviderKind,
    RetryPolicy,
};
use tackle_store::Store;
use tackle_testkit::{FakeModel, RecordedRequest, Script, Turn};
use tackle_tools::{ApprovalMode, EventSink};
use tokio_util::sync::CancellationToken;

use crate::cli::BenchCacheArgs;
use crate::runtime::{Approvals, build_agent};

/// The least share of its parent's request a sub-agent's first request must repeat.
const SUBAGENT_PREFIX_TARGET: f64 = 0.9;

/// One turn of the scenario: the user message, the mask, and what the model does.
struct ScenarioTurn {
    message: String,
    mask: Option<ToolMask>,
    turns: Vec<Turn>,
}

fn masks() -> Vec<Option<ToolMask>> {
    let m = |pairs: &[(&str, bool)]| Some(ToolMask::new(pairs.iter().map(|(n, b)| (n.to_string(), *b))));
    vec![
        None,
        m(&[("shell", false)]),
        m(&[("web_fetch", false)]),
        m(&[("shell", false), ("web_fetch", false)]),
        m(&[("write_file", false), ("edit_file", false)]),
        m(&[("shell", false), ("edit_file", false), ("web_fetch", false)]),
    ]
}

/// The reference scenario: `steps` model steps (at least 12).
fn scenario(steps: usize) -> Vec<ScenarioTurn> {
    let text = |t: &str| {
        Turn::text(t).with_usage(tackle_protocol::Usage { output_tokens: 20, ..Default::default() })
    };
    let mut turns = vec![
        ScenarioTurn {
            message: "What is in this workspace?".into(),
            mask: None,
            turns: vec![Turn::call("list_files", r#"{"path": "."}"#), text("A README and a src directory.")],
        },
        ScenarioTurn {
            message: "Plan the release notes.".into(),
            mask: None,
            turns: vec![
                Turn::call("activate_skill", r#"{"name": "planning"}"#),
                Turn::call("todo", r#"{"action": "add", "text": "draft the release notes"}"#),
                text("Planned."),
            ],
        },
        ScenarioTurn {
            message: "Read the changelog.".into(),
            mask: None,
            turns: vec![
                Turn::call("read_file", r#"{"path": "CHANGELOG.md"}"#),
                text("There is no changelog yet."),
            ],
        },
        ScenarioTurn {
            message: "Write the notes.".into(),
            mask: None,
            turns: vec![
                Turn::call("activate_skill", r#"{"name": "writing"}"#),
                Turn::call("write_file", r##"{"path": "NOTES.md", "content": "# Release notes\n"}"##),
                text("Written."),
            ],
        },
        ScenarioTurn {
            message: "Check src/missing.rs.".into(),
            mask: None,
            turns: vec![
                Turn::call("read_file", r#"{"path": "src/missing.rs"}"#),
                text("That file does not exist."),
            ],
        },
    ];
    let used: usize = turns.iter().map(|t| t.turns.len()).sum();
    for i in 0..steps.saturating_sub(used) {
        turns.push(ScenarioTurn {
            message: format!("Question {i}: anything else?"),
            mask: None,
            turns: vec![text("Nothing else.")],
        });
    }
    for (i, t) in turns.iter_mut().enumerate() {
        t.mask = masks()[i % masks().len()].clone();
    }
    turns
}

/// Figures of one run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CacheReport {
    /// Wire format.
    pub format: String,
    /// Model steps.
    pub steps: usize,
    /// Turns.
    pub turns: usize,
    /// Prefix ratio of every step after the first.
    pub prefix_ratios: Vec<f64>,
    /// Steps whose prefix broke, with the first differing path.
    pub cache_breaks: Vec<String>,
    /// Prompt tokens over all steps.
    pub input_tokens: u64,
    /// Prompt tokens read from the (simulated) cache.
    pub cache_read_tokens: u64,
    /// Each step's prompt and cache-read tokens as the fake model's cache simulation reported
    /// them: an oracle independent of Tackle's own prefix measurement.
    pub step_usage: Vec<StepUsage>,
    /// Always true: the token figures come from the fake model's prompt-cache simulation, not
    /// from a provider (prefix ratios and cache breaks are measured on the bytes sent).
    pub simulated_usage: bool,
    /// Tool calls that succeeded.
    pub tool_ok: usize,
    /// Tool calls that failed.
    pub tool_errors: usize,
    /// A sub-agent's first request against its parent's (the `agent` tool).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent: Option<SubAgentFigure>,
}

/// How much of a sub-agent's first request is its parent's prefix.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct SubAgentFigure {
    /// The child's first request against the parent's request that called `agent`, measured
    /// by Tackle on the bytes sent (the share of the parent's request it repeats from the start).
    pub prefix_ratio: f64,
    /// The child's first request's prompt tokens (simulated).
    pub input_tokens: u64,
    /// Of which the fake model's cache simulation read from its cache (simulated).
    pub cache_read_tokens: u64,
}

/// The simulated usage of one step.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct StepUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Of which read from the simulated cache.
    pub cache_read_tokens: u64,
}

impl CacheReport {
    fn min_ratio(&self) -> f64 {
        self.prefix_ratios.iter().copied().fold(1.0, f64::min)
    }
}

/// The row name of a wire format.
fn format_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenaiResponses => "responses",
        other => other.as_str(),
    }
}

/// One scenario turn of a [`Replay`].
#[derive(Debug, Serialize)]
pub struct ReplayTurn {
    /// The user's message.
    pub message: String,
    /// The tools Tackle allowed at each step of the turn (all of them when no mask applied).
    pub allowed_tools: Vec<Vec<String>>,
}

/// The OpenAI run of the scenario as data, for running it through another framework against
/// the same fake model: the same script, the same system prompt, tool definitions and tool
/// results, with each step's tool availability.
#[derive(Debug, Serialize)]
pub struct Replay {
    /// The fake model's script (simulated prompt cache on).
    pub script: Script,
    /// The system messages of Tackle's requests.
    pub system: Vec<Value>,
    /// The tool definitions Tackle sent (the same every step).
    pub tools: Value,
    /// The turns.
    pub turns: Vec<ReplayTurn>,
    /// Tool results by call id, as Tackle sent them.
    pub tool_results: serde_json::Map<String, Value>,
    /// Tackle's figures of the run.
    pub tackle: CacheReport,
}

/// The replay of a run from the requests the fake model recorded.
fn replay(
    script: Script,
    scenario: &[ScenarioTurn],
    requests: &[RecordedRequest],
    report: CacheReport,
) -> Result<Replay> {
    let first = requests.first().context("the run sent no request")?;
    let tools = first.body.get("tools").cloned().unwrap_or(Value::Null);
    let all: Vec<String> = tools
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    let allowed = |request: &RecordedRequest| -> Vec<String> {
        match request.body["tool_choice"]["allowed_tools"]["tools"].as_array() {
            Some(refs) => {
                refs.iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_owned)).collect()
            }
            None => all.clone(),
        }
    };
    let messages =
        |request: &RecordedRequest| request.body["messages"].as_array().cloned().unwrap_or_default();
    let system =
        messages(first).into_iter().filter(|m| m["role"] == "system" || m["role"] == "developer").collect();
    let mut tool_results = serde_json::Map::new();
    for m in requests.last().map(messages).unwrap_or_default() {
        if let (Some(id), Some(content)) = (m["tool_call_id"].as_str(), m.get("content")) {
            tool_results.insert(id.to_owned(), content.clone());
        }
    }
    let mut steps = requests.iter();
    let turns = scenario
        .iter()
        .map(|t| ReplayTurn {
            message: t.message.clone(),
            allowed_tools: steps.by_ref().take(t.turns.len()).map(allowed).collect(),
        })
        .collect();
    Ok(Replay { script, system, tools, turns, tool_results, tackle: report })
}

/// A provider of `kind` speaking to `fake`.
fn fake_provider(kind: ProviderKind, fake: &FakeModel) -> Result<Arc<dyn Provider>> {
    let retry = RetryPolicy::none();
    let provider: Arc<dyn Provider> = match kind {
        ProviderKind::Openai => {
            let c = ProviderConfig::new(kind)
                .with_base_url(format!("{}/v1", fake.base_url()))
                .with_api_key("bench")
                .with_retry(retry);
            Arc::new(OpenAiChat::with_dialect(c, OpenAiDialect::OpenAi)?)
        }
        ProviderKind::OpenaiResponses => {
            let c = ProviderConfig::new(kind)
                .with_base_url(format!("{}/v1", fake.base_url()))
                .with_api_key("bench")
                .with_retry(retry);
            Arc::new(OpenAiResponses::new(c)?)
        }
        ProviderKind::Anthropic => {
            let c = ProviderConfig::new(kind)
                .with_base_url(fake.base_url())
                .with_api_key("bench")
                .with_retry(retry);
            Arc::new(Anthropic::new(c)?)
        }
        ProviderKind::Codex => anyhow::bail!("tackle bench cache measures the HTTP wire formats, not codex"),
    };
    Ok(provider)
}

/// The events a bench session's turns emitted.
type Events = Arc<Mutex<Vec<AgentEvent>>>;

/// A session of the agent `settings` describe in `workspace` (a throwaway store, calls
/// approved), with a sink that keeps its events.
async fn bench_session(
    settings: &Settings,
    workspace: &std::path::Path,
    provider: Arc<dyn Provider>,
    kind: ProviderKind,
) -> Result<(tackle_agent::Session, Events, EventSink)> {
    let store = Store::open_in_memory().await?;
    let agent =
        build_agent(settings, workspace, provider, kind, store, Approvals::Auto, ApprovalMode::Headless)
            .await?;
    let session = agent
        .create_session(NewSessionOptions { workspace: workspace.to_owned(), ..Default::default() })
        .await?;
    let events: Events = Arc::default();
    let sink = {
        let events = events.clone();
        EventSink::new(move |e| events.lock().unwrap_or_else(|p| p.into_inner()).push(e))
    };
    Ok((session, events, sink))
}

/// A parent whose first step calls `agent` once, for the configured `reader` (its own
/// instructions and a mask of two tools; it answers at once), with the builtins: the child's
/// first request measured against the parent's.
async fn run_subagent(kind: ProviderKind) -> Result<SubAgentFigure> {
    let mut script = Script::new(vec![
        Turn::call(
            "agent",
            r#"{"prompt": "Read README.md and say what the project is.", "agent": "reader"}"#,
        ),
        Turn::text("A project with a README."),
        Turn::text("The sub-agent says it is a project with a README."),
    ]);
    script.simulate_cache = true;
    let fake = FakeModel::start(script).await.context("cannot start the fake model")?;
    let provider = fake_provider(kind, &fake)?;
    let workspace = tempfile::tempdir()?;
    std::fs::write(workspace.path().join("README.md"), "# Project\n")?;
    let mut settings = Settings { model: Some("bench-model".into()), max_steps: 8, ..Settings::default() };
    settings.agents.insert(
        "reader".into(),
        crate::settings::AgentTable {
            description: "Reads files and reports what they say.".into(),
            instructions: "Only read; report what you found.".into(),
            tools: Some(vec!["read_file".into(), "list_files".into()]),
            model: None,
        },
    );
    let (mut session, events, sink) = bench_session(&settings, workspace.path(), provider, kind).await?;
    session.run_turn(TurnInput::new("What is this project?"), &sink, &CancellationToken::new()).await?;
    fake.shutdown().await;
    let events = events.lock().unwrap_or_else(|p| p.into_inner());
    // The child's first `step_finished`, as the parent's stream carries it.
    let step = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::Custom { name, data }
                if name == "subagent" && data["event"]["type"] == "step_finished" =>
            {
                Some(data["event"].clone())
            }
            _ => None,
        })
        .context("the sub-agent took no step")?;
    Ok(SubAgentFigure {
        prefix_ratio: step["metrics"]["prefix_ratio"]
            .as_f64()
            .context("the child's first step has no prefix ratio")?,
        input_tokens: step["usage"]["input_tokens"].as_u64().unwrap_or_default(),
        cache_read_tokens: step["usage"]["cache_read_tokens"].as_u64().unwrap_or_default(),
    })
}

async fn run_format(kind: ProviderKind, steps: usize, export: bool) -> Result<(CacheReport, Option<Replay>)> {
    let scenario = scenario(steps);
    let mut script = Script::new(scenario.iter().flat_map(|t| t.turns.clone()).collect());
    script.simulate_cache = true;
    let fake = FakeModel::start(script.clone()).await.context("cannot start the fake model")?;
    let provider = fake_provider(kind, &fake)?;
    let workspace = tempfile::tempdir()?;
    std::fs::write(workspace.path().join("README.md"), "# Project\n")?;
    std::fs::create_dir_all(workspace.path().join("src"))?;
    for (name, tools) in [("planning", "todo"), ("writing", "write_file")] {
        let dir = workspace.path().join("skills").join(name);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join("SKILL.md"),
            format!(
                "---\nname: {name}\ndescription: The {name} skill.\ntools: [{tools}]\n---\nHow to do {name}.\n"
            ),
        )?;
    }
    let settings = Settings { model: Some("bench-model".into()), max_steps: 8, ..Settings::default() };
    let (mut session, events, sink) = bench_session(&settings, workspace.path(), provider, kind).await?;
    let cancel = CancellationToken::new();
    for turn in &scenario {
        session
            .run_turn(TurnInput::new(turn.message.clone()).with_mask(turn.mask.clone()), &sink, &cancel)
            .await?;
    }
    let requests = if export { fake.requests() } else { Vec::new() };
    fake.shutdown().await;

    let mut report = CacheReport {
        format: format_name(kind).into(),
        turns: scenario.len(),
        simulated_usage: true,
        ..CacheReport::default()
    };
    for event in events.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        match event {
            AgentEvent::StepFinished { usage, metrics, step, .. } => {
                report.steps += 1;
                report.input_tokens += usage.input_tokens;
                report.cache_read_tokens += usage.cache_read_tokens;
                report.step_usage.push(StepUsage {
                    input_tokens: usage.input_tokens,
                    cache_read_tokens: usage.cache_read_tokens,
                });
                if let Some(m) = metrics {
                    if let Some(r) = m.prefix_ratio {
                        report.prefix_ratios.push(r);
                    }
                    if let Some(b) = &m.cache_break {
                        report.cache_breaks.push(format!("step {step}: {b}"));
                    }
                }
            }
            AgentEvent::ToolResult { outcome: ToolOutcome::Ok { .. }, .. } => report.tool_ok += 1,
            AgentEvent::ToolResult { outcome: ToolOutcome::Error { .. }, .. } => report.tool_errors += 1,
            _ => {}
        }
    }
    if !export {
        return Ok((report, None));
    }
    let replay = replay(script, &scenario, &requests, report.clone())?;
    Ok((report, Some(replay)))
}

pub async fn run(args: BenchCacheArgs) -> Result<ExitCode> {
    let steps = args.steps.max(12);
    let mut reports = Vec::new();
    for kind in [ProviderKind::Openai, ProviderKind::OpenaiResponses, ProviderKind::Anthropic] {
        let export = args.export.as_ref().filter(|_| kind == ProviderKind::Openai);
        let (mut report, replay) = run_format(kind, steps, export.is_some()).await?;
        report.subagent = Some(run_subagent(kind).await?);
        if let (Some(path), Some(replay)) = (export, replay) {
            std::fs::write(path, serde_json::to_vec_pretty(&replay)?)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        reports.push(report);
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&reports)?);
    } else {
        for r in &reports {
            outln!(
                "{} — {} steps in {} turns (mask changes every turn, 2 skill activations, 2 tool errors)",
                r.format,
                r.steps,
                r.turns
            );
            let ratios: Vec<String> = r.prefix_ratios.iter().map(|x| format!("{:.2}", x * 100.0)).collect();
            outln!("  prefix ratio per step after the first (%): {}", ratios.join(" "));
            outln!();
        }
        outln!(
            "| format | steps | min prefix ratio | cache breaks | cache read / input tokens (simulated) | tool success | avg steps per turn |"
        );
        outln!("|---|---|---|---|---|---|---|");
        for r in &reports {
            let calls = r.tool_ok + r.tool_errors;
            outln!(
                "| {} | {} | {:.2}% | {} | {} / {} ({:.1}%) | {}/{} ({:.0}%) | {:.2} |",
                r.format,
                r.steps,
                r.min_ratio() * 100.0,
                r.cache_breaks.len(),
                r.cache_read_tokens,
                r.input_tokens,
                100.0 * r.cache_read_tokens as f64 / r.input_tokens.max(1) as f64,
                r.tool_ok,
                calls,
                100.0 * r.tool_ok as f64 / calls.max(1) as f64,
                r.steps as f64 / r.turns.max(1) as f64,
            );
        }
        outln!();
        outln!(
            "| format | sub-agent's first request: prefix ratio vs its parent's | cache read / input tokens (simulated) |"
        );
        outln!("|---|---|---|");
        for r in &reports {
            if let Some(s) = &r.subagent {
                outln!(
                    "| {} | {:.2}% | {} / {} ({:.1}%) |",
                    r.format,
                    s.prefix_ratio * 100.0,
                    s.cache_read_tokens,
                    s.input_tokens,
                    100.0 * s.cache_read_tokens as f64 / s.input_tokens.max(1) as f64
                );
            }
        }
        for r in &reports {
            for b in &r.cache_breaks {
                outln!("cache break ({}): {b}", r.format);
            }
        }
        outln!();
        outln!(
            "Token figures are simulated: no provider was called; the offline model counts each request's bytes / 4 \
             as prompt tokens and reads from its cache the part a request shares with the previous one. Prefix \
             ratios and cache breaks are measured on the bytes Tackle sent."
        );
    }
    let ok = reports.iter().all(|r| {
        r.cache_breaks.is_empty()
            && r.min_ratio() >= 0.995
            && r.subagent.is_some_and(|s| s.prefix_ratio >= SUBAGENT_PREFIX_TARGET)
    });
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

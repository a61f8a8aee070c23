//! `tackle demo`: a fully offline session. A scripted model (the test kit's fake server, spoken
//! to over real HTTP in the OpenAI Chat Completions format) drives the real tools in a
//! temporary workspace, through the same loop, events and SQLite store as any session.

use std::process::ExitCode;

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use tackle_agent::TurnInput;
use tackle_context::TokenCounter;
use tackle_protocol::{AgentEvent, ToolOutcome, TurnEnd, Usage};
use tackle_provider::{OpenAiChat, OpenAiDialect, ProviderConfig, ProviderKind, RetryPolicy};
use tackle_testkit::{FakeModel, Script, ScriptMode, Turn};
use tackle_tools::ApprovalMode;
use tokio_util::sync::CancellationToken;

use crate::cli::DemoArgs;
use crate::render::{JsonSink, TerminalRenderer, TextOutput, events_target, json_lines, sink, thousands};
use crate::runtime::{Approvals, build_agent, open_store};
use crate::screen::Screen;
use crate::style::{Style, color_allowed};

/// The task the scripted model is given.
pub const DEMO_PROMPT: &str = "Create a greeting script greet.sh that prints 'Hello, Tackle!', check it, \
make it greet the world instead, and run it.";

/// The scripted model's turns. Tool results are real: the script only decides the calls. Usage
/// is not scripted: prompt tokens and cache reads come from the fake model's prompt-cache
/// simulation over the requests actually sent, output tokens from counting what each turn
/// writes (see [`output_tokens`]).
pub fn demo_script() -> Script {
    let turns = vec![
        Turn::text("I'll plan the work first.")
            .with_call("todo", r#"{"action":"add","text":"write greet.sh"}"#)
            .with_call("todo", r#"{"action":"add","text":"change the greeting and run it"}"#),
        Turn::call(
            "write_file",
            r##"{"path":"scripts/greet.sh","content":"#!/bin/sh\necho 'Hello, Tackle!'\n"}"##,
        ),
        // A deliberate mistake: the wrong directory. The real error envelope comes back.
        Turn::text("Let me check the file.").with_call("read_file", r#"{"path":"greet.sh"}"#),
        Turn::text("Not there; I'll look at what exists.")
            .with_call("list_files", r#"{"path":".","pattern":"**/*.sh"}"#),
        Turn::call("read_file", r#"{"path":"scripts/greet.sh"}"#)
            .with_call("todo", r#"{"action":"complete","id":1}"#),
        Turn::call(
            "edit_file",
            r#"{"path":"scripts/greet.sh","old_string":"Hello, Tackle!","new_string":"Hello, world!"}"#,
        ),
        Turn::call("shell", r#"{"command":"sh scripts/greet.sh"}"#),
        Turn::call("todo", r#"{"action":"complete","id":2}"#),
        Turn::text(
            "Done. scripts/greet.sh now prints \"Hello, world!\". I first looked for greet.sh at the \
             workspace root, got a not_found error, listed the .sh files, and continued with the right path.",
        ),
    ];
    let turns = turns
        .into_iter()
        .map(|t| {
            let usage = Usage { output_tokens: output_tokens(&t), ..Usage::default() };
            t.with_usage(usage)
        })
        .collect();
    let mut script = Script { turns, mode: ScriptMode::Sequential, ..Script::default() };
    script.simulate_cache = true;
    script
}

/// The tokenizer the demo counts its output with.
const DEMO_ENCODING_MODEL: &str = "gpt-4o";

/// Output tokens of a scripted turn: its text, tool names and arguments counted with the
/// o200k tokenizer.
pub fn output_tokens(turn: &Turn) -> u64 {
    let counter = TokenCounter::for_model(DEMO_ENCODING_MODEL);
    let text = turn.text.as_deref().map(|t| counter.count_text(t)).unwrap_or(0);
    let calls: u64 =
        turn.tool_calls.iter().map(|c| counter.count_text(&c.name) + counter.count_text(&c.arguments)).sum();
    text + calls
}

/// What the run did, as seen in its events: the ground truth the closing text is made from.
#[derive(Debug, Default)]
struct Observed {
    calls: usize,
    failed: Vec<String>,
    shell_output: Option<String>,
}

impl Observed {
    fn see(&mut self, event: &AgentEvent) {
        if let AgentEvent::ToolResult { name, outcome, .. } = event {
            self.calls += 1;
            match outcome {
                ToolOutcome::Ok { preview, .. } if name == "shell" => {
                    let stdout = preview.split_once("stdout:\n").map(|(_, o)| o).unwrap_or(preview);
                    let stdout = stdout.split("\nstderr:").next().unwrap_or(stdout);
                    self.shell_output = Some(stdout.trim_end().to_owned());
                }
                ToolOutcome::Ok { .. } => {}
                ToolOutcome::Error { envelope } => {
                    self.failed.push(format!("{name} ({})", envelope.category));
                }
            }
        }
    }
}

/// How to run this same binary again: `tackle` when that is what PATH finds, else its full
/// path (after `cargo run`, or from an unpacked archive).
fn self_command() -> String {
    let Ok(exe) = std::env::current_exe() else { return "tackle".into() };
    let exe = exe.canonicalize().unwrap_or(exe);
    let on_path = std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths)
            .filter_map(|dir| dir.join("tackle").canonicalize().ok())
            .next()
            .is_some_and(|found| found == exe)
    });
    if on_path { "tackle".into() } else { exe.display().to_string() }
}

pub async fn run(args: DemoArgs) -> Result<ExitCode> {
    if args.serve {
        return serve(args).await;
    }
    let workspace = tempfile::Builder::new()
        .prefix("tackle-demo-")
        .tempdir()
        .context("cannot create a temporary workspace")?;
    let settings = crate::settings::Settings::load(workspace.path())
        .map_err(|e| crate::UsageError(e.to_string()))?
        .settings;
    let fake = FakeModel::start(demo_script()).await.context("cannot start the scripted model")?;
    let config = ProviderConfig::new(ProviderKind::Openai)
        .with_base_url(format!("{}/v1", fake.base_url()))
        .with_api_key("demo")
        .with_retry(RetryPolicy::none());
    let provider = std::sync::Arc::new(OpenAiChat::with_dialect(config, OpenAiDialect::OpenAi)?);
    let store = open_store(&settings).await?;
    let mut settings = settings;
    settings.model = Some("tackle-demo-model".into());
    // The workspace is a throwaway directory: approvals are automatic.
    let agent = build_agent(
        &settings,
        workspace.path(),
        provider,
        ProviderKind::Openai,
        store,
        Approvals::Auto,
        ApprovalMode::Headless,
    )
    .await?;
    let mut session = agent
        .create_session(tackle_agent::NewSessionOptions {
            title: Some("tackle demo".into()),
            workspace: workspace.path().to_owned(),
            ..Default::default()
        })
        .await?;

    let events_to_stdout = args.events.as_deref() == Some("-");
    let json = match &args.events {
        Some(spec) => Some(json_lines(events_target(spec)?)),
        None => None,
    };
    let observed = Arc::new(Mutex::new(Observed::default()));
    let watch: JsonSink = {
        let observed = observed.clone();
        Box::new(move |event: &AgentEvent| {
            observed.lock().unwrap_or_else(|p| p.into_inner()).see(event);
            if let Some(j) = &json {
                j(event);
            }
        })
    };
    let style = Style::stderr();
    let screen = Screen::new(!events_to_stdout && color_allowed(std::io::stderr().is_terminal()));
    let renderer = (!events_to_stdout).then(|| {
        TerminalRenderer::new(TextOutput::Stdout, workspace.path(), screen.clone()).with_simulated_usage()
    });
    let (events, _) = sink(renderer, Some(watch));
    if !events_to_stdout {
        eprintln!(
            "{} a scripted model works in {} (offline; no API key)\n",
            style.bold("tackle demo:"),
            workspace.path().display()
        );
        eprintln!("{} {DEMO_PROMPT}\n", style.bold("you>"));
    }
    let outcome = session.run_turn(TurnInput::new(DEMO_PROMPT), &events, &CancellationToken::new()).await;
    screen.stop();
    let outcome = outcome?;
    fake.shutdown().await;

    let observed = std::mem::take(&mut *observed.lock().unwrap_or_else(|p| p.into_inner()));
    let result = std::fs::read_to_string(workspace.path().join("scripts/greet.sh")).unwrap_or_default();
    let printed = observed.shell_output.clone().unwrap_or_default();
    // The scripted answer claims a not_found error was recovered from and the greeting changed:
    // say so only if this run did that.
    let as_scripted = outcome.end == TurnEnd::Completed
        && observed.failed == ["read_file (not_found)"]
        && printed == "Hello, world!"
        && result.contains("echo 'Hello, world!'");
    if !events_to_stdout {
        eprintln!("\n{}\n{}", style.dim("--- scripts/greet.sh ---"), result.trim_end());
        eprintln!(
            "\n{} {}",
            style.dim("the shell step printed:"),
            if printed.is_empty() { "(nothing)" } else { &printed }
        );
        let failed = match observed.failed.len() {
            0 => "none failed".to_owned(),
            _ => format!(
                "{} failed and the model recovered: {}",
                observed.failed.len(),
                observed.failed.join(", ")
            ),
        };
        eprintln!(
            "{} steps · {} tool calls, {failed} · session {}",
            outcome.steps, observed.calls, outcome.session_id
        );
        let u = &outcome.usage;
        let share =
            if u.input_tokens > 0 { 100.0 * u.cache_read_tokens as f64 / u.input_tokens as f64 } else { 0.0 };
        eprintln!(
            "simulated usage: {} prompt tokens, {} read from the cache ({share:.0}%), {} output tokens",
            thousands(u.input_tokens),
            thousands(u.cache_read_tokens),
            thousands(u.output_tokens)
        );
        eprintln!(
            "{}",
            style.dim(
                "  (no provider was called: the offline model counts each request's bytes / 4 as prompt tokens and\n   \
                 reads from its cache the part each request shares with the previous one, the way OpenAI caches\n   \
                 from 1024 tokens in 128-token steps; output tokens are the script's words counted with o200k)"
            )
        );
        eprintln!("stored in {}", settings.store_display());
        eprintln!("see it again: {} sessions show {}", self_command(), outcome.session_id);
        if !as_scripted {
            eprintln!(
                "{}",
                style.yellow(
                    "note: this run did not go as scripted, so the model's closing words above do not describe it"
                )
            );
        }
    }
    if args.keep {
        let kept = workspace.keep();
        eprintln!("workspace kept at {}", kept.display());
    }
    Ok(if as_scripted { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// `tackle demo --serve`: `tackle serve` with the demo's scripted model in a temporary
/// workspace, so the web page and the API can be tried offline, without a key. Every message
/// replays the script (see [`ScriptMode::Replay`]) with real tools; approvals are automatic.
async fn serve(args: DemoArgs) -> Result<ExitCode> {
    let workspace = tempfile::Builder::new()
        .prefix("tackle-demo-")
        .tempdir()
        .context("cannot create a temporary workspace")?;
    let mut settings = crate::settings::Settings::load(workspace.path())
        .map_err(|e| crate::UsageError(e.to_string()))?
        .settings;
    let config =
        settings.server.to_config(workspace.path(), args.bind.as_deref(), &crate::runtime::env_lookup)?;
    config.validate().map_err(|e| crate::UsageError(e.to_string()))?;
    let mut script = demo_script();
    script.mode = ScriptMode::Replay;
    let fake = FakeModel::start(script).await.context("cannot start the scripted model")?;
    let provider_config = ProviderConfig::new(ProviderKind::Openai)
        .with_base_url(format!("{}/v1", fake.base_url()))
        .with_api_key("demo")
        .with_retry(RetryPolicy::none());
    let provider = Arc::new(OpenAiChat::with_dialect(provider_config, OpenAiDialect::OpenAi)?);
    let store = open_store(&settings).await?;
    settings.model = Some("tackle-demo-model".into());
    // The workspace is a throwaway directory: approvals are automatic.
    let agent = build_agent(
        &settings,
        workspace.path(),
        provider,
        ProviderKind::Openai,
        store,
        Approvals::Auto,
        ApprovalMode::Headless,
    )
    .await?;
    let bind = config.bind;
    let mut state = tackle_server::AppState::new(agent, tackle_tools::ApprovalQueue::default(), config);
    if let Some(metrics) = crate::METRICS.get() {
        state = state.with_metrics(metrics.clone());
    }
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .with_context(|| format!("cannot listen on {bind}; is another server using the port? pass --bind"))?;
    let local = listener.local_addr()?;
    // The first line on stdout is the address, as with `tackle serve`.
    noticeln!("tackle serving on http://{local}");
    let style = Style::stderr();
    eprintln!(
        "{} open http://{local} and send any message: a scripted model (offline; no API key) \
         replays the demo task with real tools in {}. Ctrl-C stops.",
        style.bold("tackle demo:"),
        workspace.path().display()
    );
    tackle_server::serve_on(listener, state, crate::serve::shutdown_signal()).await?;
    fake.shutdown().await;
    if args.keep {
        let kept = workspace.keep();
        eprintln!("workspace kept at {}", kept.display());
    }
    Ok(ExitCode::SUCCESS)
}

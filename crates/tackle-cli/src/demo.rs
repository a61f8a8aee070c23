//! `tackle demo`: a fully offline session. A scripted model (the test kit's fake server, spoken
//! to over real HTTP in the OpenAI Chat Completions format) drives the real tools in a
//! temporary workspace, through the same loop, events and SQLite store as any session.

use std::process::ExitCode;

use anyhow::{Context, Result};
use tackle_agent::TurnInput;
use tackle_protocol::{TurnEnd, Usage};
use tackle_provider::{OpenAiChat, OpenAiDialect, ProviderConfig, ProviderKind, RetryPolicy};
use tackle_testkit::{FakeModel, Script, ScriptMode, Turn};
use tackle_tools::ApprovalMode;
use tokio_util::sync::CancellationToken;

use crate::cli::DemoArgs;
use crate::render::{JsonSink, TerminalRenderer, TextOutput, events_target, json_lines, sink};
use crate::runtime::{Approvals, build_agent, open_store};

/// The task the scripted model is given.
pub const DEMO_PROMPT: &str = "Create a greeting script greet.sh that prints 'Hello, Tackle!', check it, \
make it greet the world instead, and run it.";

/// The scripted model's turns. Tool results are real: the script only decides the calls.
pub fn demo_script() -> Script {
    let usage = |input: u64, cached: u64| Usage {
        input_tokens: input,
        output_tokens: 40,
        cache_read_tokens: cached,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
    };
    let turns = vec![
        Turn::text("I'll plan the work first.")
            .with_call("todo", r#"{"action":"add","text":"write greet.sh"}"#)
            .with_call("todo", r#"{"action":"add","text":"change the greeting and run it"}"#)
            .with_usage(usage(2100, 0)),
        Turn::call(
            "write_file",
            r##"{"path":"scripts/greet.sh","content":"#!/bin/sh\necho 'Hello, Tackle!'\n"}"##,
        )
        .with_usage(usage(2400, 2048)),
        // A deliberate mistake: the wrong directory. The real error envelope comes back.
        Turn::text("Let me check the file.")
            .with_call("read_file", r#"{"path":"greet.sh"}"#)
            .with_usage(usage(2600, 2304)),
        Turn::text("Not there; I'll look at what exists.")
            .with_call("list_files", r#"{"path":".","pattern":"**/*.sh"}"#)
            .with_usage(usage(2900, 2560)),
        Turn::call("read_file", r#"{"path":"scripts/greet.sh"}"#)
            .with_call("todo", r#"{"action":"complete","id":1}"#)
            .with_usage(usage(3100, 2816)),
        Turn::call(
            "edit_file",
            r#"{"path":"scripts/greet.sh","old_string":"Hello, Tackle!","new_string":"Hello, world!"}"#,
        )
        .with_usage(usage(3300, 3072)),
        Turn::call("shell", r#"{"command":"sh scripts/greet.sh"}"#).with_usage(usage(3500, 3328)),
        Turn::call("todo", r#"{"action":"complete","id":2}"#).with_usage(usage(3700, 3584)),
        Turn::text(
            "Done. scripts/greet.sh now prints \"Hello, world!\". I first looked for greet.sh at the \
             workspace root, got a not_found error, listed the .sh files, and continued with the right path.",
        )
        .with_usage(usage(3900, 3584)),
    ];
    Script { turns, mode: ScriptMode::Sequential, ..Script::default() }
}

pub async fn run(args: DemoArgs) -> Result<ExitCode> {
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
        Some(spec) => Some(Box::new(json_lines(events_target(spec)?)) as JsonSink),
        None => None,
    };
    let renderer = (!events_to_stdout).then(|| TerminalRenderer::new(TextOutput::Stdout));
    let (events, _) = sink(renderer, json);
    if !events_to_stdout {
        eprintln!(
            "tackle demo: a scripted model works in {} (offline; no API key)\n",
            workspace.path().display()
        );
        eprintln!("you> {DEMO_PROMPT}\n");
    }
    let outcome = session.run_turn(TurnInput::new(DEMO_PROMPT), &events, &CancellationToken::new()).await?;
    fake.shutdown().await;

    if !events_to_stdout {
        let result = std::fs::read_to_string(workspace.path().join("scripts/greet.sh")).unwrap_or_default();
        eprintln!("\n--- scripts/greet.sh ---\n{}", result.trim_end());
        eprintln!(
            "\n{} steps · {} input tokens ({} from cache) · session {}",
            outcome.steps, outcome.usage.input_tokens, outcome.usage.cache_read_tokens, outcome.session_id
        );
        eprintln!(
            "stored in {}",
            settings.database_path().map(|p| p.display().to_string()).unwrap_or_default()
        );
        eprintln!("see it again: tackle sessions show {}", outcome.session_id);
    }
    if args.keep {
        let kept = workspace.keep();
        eprintln!("workspace kept at {}", kept.display());
    }
    Ok(if outcome.end == TurnEnd::Completed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

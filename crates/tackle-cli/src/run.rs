//! `tackle run`: one prompt, to completion.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use tackle_agent::{OutputSchema, TurnInput};
use tackle_protocol::TurnEnd;
use tackle_tools::{ApprovalMode, ApprovalPolicy};
use tokio_util::sync::CancellationToken;

use crate::UsageError;
use crate::approver::TerminalApprover;
use crate::cli::RunArgs;
use crate::elicitor::TerminalElicitor;
use crate::render::{JsonSink, TerminalRenderer, TextOutput, events_target, json_lines, sink};
use crate::runtime::{
    Approvals, ModelProvider, ServerQuestions, YES_HINT, attach_resources, build_agent_with, open_or_create,
    open_store, provider_for, settings_for, tool_mask, workspace_dir,
};
use crate::screen::Screen;
use crate::style::color_allowed;
use crate::terminal::Terminal;

pub async fn run(args: RunArgs) -> Result<ExitCode> {
    // Everything the user gave is checked before anything is created, stored or sent.
    let prompt = read_prompt(&args.prompt)?;
    let mask = tool_mask(args.turn.tool_mask.as_deref())?;
    if let Some(spec) = &args.events {
        check_events_target(spec)?;
    }
    let output_schema = args.output_schema.as_deref().map(read_output_schema).transpose()?;
    if output_schema.is_some() && args.events.as_deref() == Some("-") {
        return Err(UsageError(
            "--output-schema prints the answer on stdout, so --events cannot write there too: give --events a file"
                .into(),
        )
        .into());
    }
    let workspace = workspace_dir(args.model.workspace.as_ref())?;
    let mut settings = settings_for(&workspace, &args.model)?;
    if let Some(mode) = args.turn.mode {
        settings.permissions.mode = mode;
    }
    let events_to_stdout = args.events.as_deref() == Some("-");
    // No spinner when stdout carries JSON for a program.
    let screen =
        Screen::new(!events_to_stdout && !args.json && color_allowed(std::io::stderr().is_terminal()));
    let terminal = (!args.turn.yes && std::io::stdin().is_terminal()).then(|| Terminal::start(None));
    let approver =
        terminal.clone().map(|t| Arc::new(TerminalApprover::new(t, screen.clone(), workspace.clone())));
    let elicitor = terminal.map(|t| Arc::new(TerminalElicitor::new(t, screen.clone())));
    let approvals = match (&approver, args.turn.yes) {
        (_, true) => Approvals::Auto,
        (Some(a), _) => Approvals::Ask(a.clone()),
        (None, _) => Approvals::Deny,
    };
    // Nobody at a terminal and no --yes: calls that need confirmation are refused without
    // asking anyone (the model is told nobody could confirm, not that someone said no).
    let nobody_to_ask = matches!(approvals, Approvals::Deny);
    let ModelProvider { provider, kind, .. } =
        provider_for(&settings, &workspace, &approvals, ApprovalMode::Headless)?;
    let store = open_store(&settings).await?;
    let mut questions = ServerQuestions::for_approvals(
        &approvals,
        elicitor.clone().map(|e| e as Arc<dyn tackle_tools::Elicitor>),
    );
    questions.sign_in = crate::mcp_sign_in::can_sign_in();
    let attach_ctx = questions.context(&workspace);
    let agent = build_agent_with(
        &settings,
        &workspace,
        provider,
        kind,
        store,
        approvals,
        ApprovalMode::Headless,
        questions,
    )
    .await?;
    let prompt = attach_resources(&agent, prompt, &attach_ctx).await?;
    let mut session = open_or_create(&agent, args.turn.session.as_deref(), &workspace).await?;
    if let Some(mode) = args.turn.mode {
        session.set_mode(mode).await.map_err(|e| UsageError(e.to_string()))?;
    }

    // With an output schema stdout carries only the answer's JSON, written at the end.
    let text = if args.json || events_to_stdout || output_schema.is_some() {
        TextOutput::Hidden
    } else {
        TextOutput::Stdout
    };
    let json = match &args.events {
        Some(spec) => {
            let target =
                events_target(spec).map_err(|e| UsageError(format!("cannot write events to {spec}: {e}")))?;
            Some(Box::new(json_lines(target)) as JsonSink)
        }
        None => None,
    };
    let renderer = (!events_to_stdout).then(|| {
        let r = TerminalRenderer::new(text, &workspace, screen.clone());
        if nobody_to_ask { r.with_unconfirmable_hint(YES_HINT) } else { r }
    });
    let (sink, _) = sink(renderer, json);

    let cancel = CancellationToken::new();
    if let Some(a) = &approver {
        a.set_turn(cancel.clone());
    }
    if let Some(e) = &elicitor {
        e.set_turn(cancel.clone());
    }
    let on_ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let mut input = TurnInput::new(prompt).with_mask(mask);
    input.max_steps = args.model.max_steps;
    input.output_schema = output_schema;
    if nobody_to_ask {
        input.approval = Some(ApprovalPolicy::Deny);
    }
    let outcome = session.run_turn(input, &sink, &cancel).await;
    session.end("other", &sink).await;
    screen.stop();
    // Closing lets SQLite checkpoint and remove the WAL, which the next start would otherwise
    // have to read back whole before its first request (up to 16 MB).
    agent.store().close().await;
    let outcome = outcome?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&outcome)?);
    } else if let Some(value) = &outcome.output {
        outln!("{}", serde_json::to_string(value)?);
    }
    if !args.json && !events_to_stdout {
        eprintln!("session {}", outcome.session_id);
    }
    Ok(match outcome.end {
        TurnEnd::Completed | TurnEnd::MaxSteps => ExitCode::SUCCESS,
        TurnEnd::Cancelled | TurnEnd::Failed => ExitCode::from(1),
    })
}

/// The prompt: the argument, or standard input for `-`; an empty prompt is refused.
fn read_prompt(arg: &str) -> Result<String> {
    let prompt = if arg == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| UsageError(format!("cannot read the prompt from standard input: {e}")))?;
        text
    } else {
        arg.to_owned()
    };
    if prompt.trim().is_empty() {
        let from = if arg == "-" { "standard input was empty" } else { "the prompt is empty" };
        return Err(UsageError(format!(
            "{from}: pass the task as an argument, or pipe it in with `tackle run -`"
        ))
        .into());
    }
    Ok(prompt)
}

/// `--output-schema FILE`: read and checked before anything else happens, so a bad file costs
/// no model call. The schema is named after the file (`verdict.json` → `verdict`).
fn read_output_schema(path: &std::path::Path) -> Result<OutputSchema> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("--output-schema {shown}: cannot read it: {e}")))?;
    let schema: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        UsageError(format!("--output-schema {shown}: not JSON ({e}); give a JSON Schema file"))
    })?;
    let stem = path.file_stem().map(|s| s.to_string_lossy()).unwrap_or_default();
    let name: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(64)
        .collect();
    let name = if name.is_empty() { "output".to_owned() } else { name };
    OutputSchema::new(name, schema).map_err(|e| UsageError(format!("--output-schema {shown}: {e}")).into())
}

/// `--events FILE`: its directory must exist and the path must not be a directory (the file is
/// created only when the run starts).
fn check_events_target(spec: &str) -> Result<()> {
    if spec == "-" {
        return Ok(());
    }
    let path = std::path::Path::new(spec);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(UsageError(format!(
            "--events {spec}: the directory {} does not exist; create it or write the events elsewhere",
            dir.display()
        ))
        .into());
    }
    if path.is_dir() {
        return Err(
            UsageError(format!("--events {spec} is a directory; name a file, or `-` for stdout")).into()
        );
    }
    Ok(())
}

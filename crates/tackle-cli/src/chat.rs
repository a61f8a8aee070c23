//! `tackle chat`: a REPL over one session at a time.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use tackle_agent::{Agent, Session, ToolMask, TurnInput};
use tackle_store::SessionFilter;
use tackle_tools::{ApprovalMode, EventSink};
use tokio_util::sync::CancellationToken;

use crate::approver::TerminalApprover;
use crate::cli::ChatArgs;
use crate::render::{TerminalRenderer, TextOutput, sink};
use crate::runtime::{
    Approvals, build_agent, open_or_create, open_store, provider_for, settings_for, tool_mask, workspace_dir,
};
use crate::terminal::{Input, Terminal};

const HELP: &str = "\
Commands:
  /help          this help
  /tools         the tools, and which are active, masked, waiting for a skill, or deferred
  /mask [JSON]   show or set the tool mask, e.g. /mask {\"shell\": false}; /mask off clears it
  /steps N       steps per turn
  /context       how much of the context window the session uses, by component
  /compact       compact the session now (clear old outputs, summarize the oldest part)
  /session       the current session
  /sessions      recent sessions
  /resume ID     switch to a stored session (id or unique prefix)
  /new           start a new session
  /quit          leave (Ctrl-D too)
Anything else is sent to the model. Ctrl-C cancels a running turn, not the program.";

/// What the REPL carries between turns.
struct ChatState {
    agent: Agent,
    session: Session,
    workspace: std::path::PathBuf,
    max_steps: Option<u32>,
    mask: Option<ToolMask>,
}

pub async fn run(args: ChatArgs) -> Result<ExitCode> {
    let workspace = workspace_dir(args.model.workspace.as_ref())?;
    let settings = settings_for(&workspace, &args.model)?;
    let mask = tool_mask(args.model.tool_mask.as_deref())?;
    let (provider, kind) = provider_for(&settings)?;
    let store = open_store(&settings).await?;
    let history = settings.data_dir().ok().map(|d| d.join("repl_history"));
    let terminal = Terminal::start(history);
    let approvals = if args.model.yes {
        Approvals::Auto
    } else {
        Approvals::Ask(Arc::new(TerminalApprover::new(terminal.clone())))
    };
    let agent =
        build_agent(&settings, &workspace, provider, kind, store, approvals, ApprovalMode::Interactive)
            .await?;
    let session = open_or_create(&agent, args.model.session.as_deref(), &workspace).await?;
    let (events, _) = sink(Some(TerminalRenderer::new(TextOutput::Stdout)), None);
    eprintln!(
        "tackle chat · {} · session {} · /help for commands, Ctrl-D to leave",
        agent.config().model,
        short(session.id())
    );
    let mut state = ChatState { agent, session, workspace, max_steps: args.model.max_steps, mask };

    loop {
        let line = match terminal.read_line("you> ", true).await {
            Input::Line(l) => l,
            Input::Interrupted => {
                eprintln!("(Ctrl-D or /quit to leave)");
                continue;
            }
            Input::Eof => break,
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(command) = line.strip_prefix('/') {
            match slash(command, &mut state).await {
                Ok(Flow::Continue) => continue,
                Ok(Flow::Quit) => break,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    continue;
                }
            }
        }
        run_turn(&mut state, line, &events).await;
    }
    // Closing lets SQLite checkpoint and remove the WAL, which the next start would otherwise
    // have to read back whole.
    state.agent.store().close().await;
    Ok(ExitCode::SUCCESS)
}

enum Flow {
    Continue,
    Quit,
}

async fn run_turn(state: &mut ChatState, line: &str, events: &EventSink) {
    let cancel = CancellationToken::new();
    let mut input = TurnInput::new(line).with_mask(state.mask.clone());
    input.max_steps = state.max_steps;
    let turn = state.session.run_turn(input, events, &cancel);
    tokio::pin!(turn);
    let result = loop {
        tokio::select! {
            r = &mut turn => break r,
            _ = tokio::signal::ctrl_c() => {
                eprintln!("\n(cancelling the turn…)");
                cancel.cancel();
            }
        }
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
    }
}

async fn slash(command: &str, state: &mut ChatState) -> Result<Flow> {
    let (name, arg) =
        command.split_once(char::is_whitespace).map(|(a, b)| (a, b.trim())).unwrap_or((command, ""));
    match name {
        "help" | "?" => eprintln!("{HELP}"),
        "quit" | "exit" | "q" => return Ok(Flow::Quit),
        "tools" => {
            let step = state.session.step_tools(state.mask.as_ref(), false).await?;
            let gated = state.session.skills().gated_tools();
            for spec in state.session.catalog().specs().iter() {
                let status = if step.active.contains(&spec.name) {
                    "active"
                } else if gated.contains(&spec.name) {
                    "needs a skill"
                } else {
                    "masked"
                };
                let first = spec.description.lines().next().unwrap_or("");
                eprintln!("  {:<16} {status:<13} {first}", spec.name);
            }
            if let Some(deferred) = state.agent.deferred() {
                let found: tackle_agent::FoundTools = state
                    .agent
                    .store()
                    .get_state(state.session.id(), tackle_agent::FOUND_TOOLS_KEY)
                    .await?
                    .unwrap_or_default();
                for name in deferred.names() {
                    let status = if found.0.contains(&name) { "found" } else { "deferred" };
                    let first = deferred
                        .get(&name)
                        .and_then(|s| s.description.lines().next().map(str::to_owned))
                        .unwrap_or_default();
                    eprintln!("  {name:<16} {status:<13} {first}");
                }
            }
        }
        "mask" => match arg {
            "" => match &state.mask {
                Some(m) => eprintln!("mask: {}", serde_json::to_string(m)?),
                None => eprintln!("no mask: every tool is active"),
            },
            "off" | "none" | "clear" => {
                state.mask = None;
                eprintln!("mask cleared");
            }
            json => {
                state.mask = tool_mask(Some(json))?;
                eprintln!("mask set; /tools shows the result");
            }
        },
        "session" => {
            let r = state.session.record();
            eprintln!(
                "  id        {}\n  title     {}\n  model     {} ({})\n  workspace {}\n  messages  {}",
                r.id,
                r.title,
                r.model,
                r.provider,
                r.workspace,
                state.session.history().len()
            );
        }
        "sessions" => {
            let filter = SessionFilter { limit: Some(20), ..SessionFilter::default() };
            for s in state.agent.store().list_sessions(filter).await? {
                eprintln!("  {}  {:<40}  {} messages", short(&s.id), s.title, s.message_count);
            }
        }
        "resume" => {
            if arg.is_empty() {
                eprintln!("usage: /resume ID (see /sessions)");
            } else {
                let record = state.agent.store().find_session_by_prefix(arg).await?;
                state.session = state.agent.open_session(&record.id).await?;
                eprintln!(
                    "resumed {} ({} messages)",
                    short(state.session.id()),
                    state.session.history().len()
                );
            }
        }
        "new" => {
            state.session = open_or_create(&state.agent, None, &state.workspace).await?;
            eprintln!("new session {}", short(state.session.id()));
        }
        "context" => {
            let r = state.session.context_report();
            eprintln!(
                "  {} of {} tokens ({:.1}%, {} reserved for the answer, {} left)\n  system {} · skills {} · tools {} · conversation {}",
                r.used,
                r.window,
                r.percent,
                r.reserved_output,
                r.remaining,
                r.system,
                r.skills,
                r.tools,
                r.conversation
            );
        }
        "compact" => {
            let (events, _) = sink(Some(TerminalRenderer::new(TextOutput::Hidden)), None);
            let report = state.session.compact_now(&events).await?;
            if report.strategies.is_empty() {
                eprintln!("nothing to compact");
            } else {
                eprintln!(
                    "compacted: {} → {} tokens, {} → {} messages ({})",
                    report.tokens_before,
                    report.tokens_after,
                    report.messages_before,
                    report.messages_after,
                    report.strategies.join(", ")
                );
            }
        }
        "steps" => match arg.parse::<u32>() {
            Ok(n) if n > 0 => state.max_steps = Some(n),
            _ => eprintln!("usage: /steps N (N >= 1)"),
        },
        other => eprintln!("unknown command /{other}; /help lists them"),
    }
    Ok(Flow::Continue)
}

fn short(id: &str) -> &str {
    id.get(..13).unwrap_or(id)
}

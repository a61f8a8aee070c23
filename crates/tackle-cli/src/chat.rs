//! `tackle chat`: a REPL over one session at a time.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use tackle_agent::{Agent, Session, ToolMask, TurnInput};
use tackle_protocol::ContextReport;
use tackle_store::{SessionFilter, SessionUpdate};
use tackle_tools::{ApprovalMode, ElicitationPolicy, EventSink, ToolContext, TurnElicitor};
use tokio_util::sync::CancellationToken;

use crate::approver::TerminalApprover;
use crate::cli::ChatArgs;
use crate::elicitor::TerminalElicitor;
use crate::render::{TerminalRenderer, TextOutput, sink, thousands};
use crate::runtime::{
    Approvals, ModelProvider, ServerQuestions, build_agent_with, open_or_create, open_store, provider_for,
    settings_for, tool_mask, workspace_dir,
};
use crate::screen::Screen;
use crate::style::{Style, color_allowed};
use crate::terminal::{Input, Terminal};

const HELP: &str = "\
Commands:
  /help          this help
  /tools         the tools, and which are active, masked, waiting for a skill, or deferred
  /mask [JSON]   show or set the tool mask, e.g. /mask {\"shell\": false}; /mask off clears it
  /steps N       steps per turn
  /context       how much of the context window the session uses, by component
  /compact       compact the session now (clear old outputs, summarize the oldest part)
  /model [NAME]  show or switch the model of this session
  /approvals     tools allowed for this session; /approvals clear|auto|ask
  /prompts       the MCP servers' prompts; /SERVER:PROMPT [ARGS] sends one (name=value or in order)
  /resources     the MCP servers' resources; @SERVER:URI in a message attaches one
  /session       the current session
  /sessions      recent sessions
  /resume ID     switch to a stored session (id or unique prefix)
  /new, /clear   start a new, empty session (the old one stays stored: /resume)
  /quit          leave (Ctrl-D too)
Anything else is sent to the model. Ctrl-C cancels a running turn, not the program; at an
approval question it cancels the turn too.";

/// What the REPL carries between turns.
struct ChatState {
    agent: Agent,
    session: Session,
    workspace: std::path::PathBuf,
    max_steps: Option<u32>,
    mask: Option<ToolMask>,
    /// The approver, unless `--yes` approves everything.
    approver: Option<Arc<TerminalApprover>>,
    /// Who answers MCP servers' questions, unless `--yes` takes their defaults.
    elicitor: Option<Arc<TerminalElicitor>>,
    screen: Screen,
    style: Style,
}

pub async fn run(args: ChatArgs) -> Result<ExitCode> {
    let workspace = workspace_dir(args.model.workspace.as_ref())?;
    let settings = settings_for(&workspace, &args.model)?;
    let mask = tool_mask(args.turn.tool_mask.as_deref())?;
    let history = settings.data_dir().ok().map(|d| d.join("repl_history"));
    let terminal = Terminal::start(history);
    let style = Style::stderr();
    let screen = Screen::new(color_allowed(std::io::stderr().is_terminal()));
    let approver = (!args.turn.yes)
        .then(|| Arc::new(TerminalApprover::new(terminal.clone(), screen.clone(), workspace.clone())));
    let approvals = match &approver {
        Some(a) => Approvals::Ask(a.clone()),
        None => Approvals::Auto,
    };
    let elicitor =
        (!args.turn.yes).then(|| Arc::new(TerminalElicitor::new(terminal.clone(), screen.clone())));
    let mut questions = ServerQuestions::for_approvals(
        &approvals,
        elicitor.clone().map(|e| e as Arc<dyn tackle_tools::Elicitor>),
    );
    questions.sign_in = crate::mcp_cmd::can_sign_in();
    let ModelProvider { provider, kind, .. } =
        provider_for(&settings, &workspace, &approvals, ApprovalMode::Interactive)?;
    let store = open_store(&settings).await?;
    let agent = build_agent_with(
        &settings,
        &workspace,
        provider,
        kind,
        store,
        approvals,
        ApprovalMode::Interactive,
        questions,
    )
    .await?;
    let session = open_or_create(&agent, args.turn.session.as_deref(), &workspace).await?;
    let renderer = TerminalRenderer::new(TextOutput::Stdout, &workspace, screen.clone());
    let (events, _) = sink(Some(renderer), None);
    eprintln!(
        "{} · {} · session {} · {}",
        style.bold("tackle chat"),
        agent.config().model,
        short(session.id()),
        style.dim("/help for commands, Ctrl-D to leave")
    );
    let mut interrupts = Interrupts::new()?;
    let mut state = ChatState {
        agent,
        session,
        workspace,
        max_steps: args.model.max_steps,
        mask,
        approver,
        elicitor,
        screen,
        style,
    };

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
                Ok(Flow::Send(message)) => {
                    run_turn(&mut state, &message, &events, &mut interrupts).await;
                    continue;
                }
                Err(e) => {
                    eprintln!("error: {e:#}");
                    continue;
                }
            }
        }
        run_turn(&mut state, line, &events, &mut interrupts).await;
    }
    // Closing lets SQLite checkpoint and remove the WAL, which the next start would otherwise
    // have to read back whole.
    state.agent.store().close().await;
    Ok(ExitCode::SUCCESS)
}

enum Flow {
    Continue,
    Quit,
    /// Send this as the user's message (an MCP prompt).
    Send(String),
}

/// SIGINT, listened to from the REPL's start: a Ctrl-C that lands while a turn is only getting
/// under way must cancel it, never kill the REPL.
struct Interrupts(tokio::signal::unix::Signal);

impl Interrupts {
    fn new() -> Result<Self> {
        let signal = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
            .map_err(|e| anyhow::anyhow!("cannot listen for Ctrl-C: {e}"))?;
        Ok(Self(signal))
    }

    /// Forgets interrupts that arrived between turns (they cancel nothing).
    fn drain(&mut self) {
        use futures::FutureExt;
        while let Some(Some(())) = self.0.recv().now_or_never() {}
    }
}

/// The context of a prompt or resource request made from the REPL: the server's questions are
/// asked at the terminal (or take their defaults with `--yes`).
fn mcp_context(state: &ChatState) -> ToolContext {
    let ctx = ToolContext::new(state.session.id(), "chat", state.workspace.clone());
    match &state.elicitor {
        Some(e) => {
            ctx.turn.insert(ElicitationPolicy::Ask(None));
            ctx.turn.insert(TurnElicitor(e.clone()));
        }
        None => ctx.turn.insert(ElicitationPolicy::Defaults),
    }
    ctx
}

/// `line` with the MCP resources it mentions (`@server:uri`) attached.
async fn with_resources(state: &ChatState, line: &str) -> Result<String> {
    let Some(mcp) = state.agent.mcp() else { return Ok(line.to_owned()) };
    if tackle_mcp::attach::mentions(line, &mcp.server_names()).is_empty() {
        return Ok(line.to_owned());
    }
    let attached = mcp
        .attach_resources(line, &[], &mcp_context(state))
        .await
        .map_err(|(m, e)| anyhow::anyhow!("cannot attach @{}:{}: {e}", m.server, m.uri))?;
    eprintln!(
        "{}",
        state.style.dim(&format!("(attached {} characters of resources)", attached.len() - line.len()))
    );
    Ok(attached)
}

/// `/SERVER:PROMPT ARGS`: the prompt's text, to send as the message.
async fn prompt_message(state: &ChatState, server: &str, prompt: &str, arg: &str) -> Result<String> {
    let Some(mcp) = state.agent.mcp() else { anyhow::bail!("no MCP servers are configured") };
    let prompts = mcp.prompts(server).await?;
    let Some(found) = prompts.iter().find(|p| p.name == prompt) else {
        let names: Vec<String> = prompts.iter().map(|p| format!("/{server}:{}", p.name)).collect();
        anyhow::bail!(
            "`{server}` has no prompt `{prompt}`; it offers: {}",
            if names.is_empty() { "none".to_owned() } else { names.join(", ") }
        );
    };
    let words: Vec<&str> = arg.split_whitespace().collect();
    let arguments = tackle_mcp::attach::prompt_arguments(found, &words).map_err(|e| anyhow::anyhow!(e))?;
    let got = mcp
        .get_prompt(server, prompt, (!arguments.is_empty()).then_some(arguments), &mcp_context(state))
        .await?;
    let text = tackle_mcp::attach::prompt_text(&got);
    if text.trim().is_empty() {
        anyhow::bail!("`{server}:{prompt}` gave an empty prompt");
    }
    eprintln!("{}", state.style.dim(&format!("(prompt {server}:{prompt}, {} characters)", text.len())));
    Ok(text)
}

async fn run_turn(state: &mut ChatState, line: &str, events: &EventSink, interrupts: &mut Interrupts) {
    interrupts.drain();
    let line = match with_resources(state, line).await {
        Ok(text) => text,
        Err(e) => {
            eprintln!("{}", state.style.red(&format!("error: {e:#}")));
            return;
        }
    };
    let line = line.as_str();
    let cancel = CancellationToken::new();
    if let Some(a) = &state.approver {
        a.set_turn(cancel.clone());
    }
    if let Some(e) = &state.elicitor {
        e.set_turn(cancel.clone());
    }
    let mut input = TurnInput::new(line).with_mask(state.mask.clone());
    input.max_steps = state.max_steps;
    let screen = state.screen.clone();
    let style = state.style;
    let turn = state.session.run_turn(input, events, &cancel);
    tokio::pin!(turn);
    let result = loop {
        tokio::select! {
            r = &mut turn => break r,
            _ = interrupts.0.recv() => {
                screen.write(|| eprintln!("\n{}", style.yellow("(cancelling the turn…)")));
                cancel.cancel();
            }
        }
    };
    state.screen.stop();
    if let Err(e) = result {
        eprintln!("{}", state.style.red(&format!("error: {e}")));
    }
}

/// `/context`: the budget of the next request, and what "conversation" means.
fn context_lines(r: &ContextReport, encoding: &str) -> String {
    let mut out = format!(
        "  {} of {} tokens used ({:.1}%), {} reserved for the answer, {} left\n",
        thousands(r.used),
        thousands(r.window),
        r.percent,
        thousands(r.reserved_output),
        thousands(r.remaining)
    );
    out.push_str(&format!(
        "  system {} · skills {} · tools {} · conversation {}\n",
        thousands(r.system),
        thousands(r.skills),
        thousands(r.tools),
        thousands(r.conversation)
    ));
    out.push_str(&format!(
        "  conversation = the session's messages as the next request sends them, counted with {encoding};\n  /compact reports its before and after in the same figure"
    ));
    if let Some(reported) = r.reported_input {
        out.push_str(&format!(
            "\n  used starts from the provider's count of the last request ({} input tokens) plus what\n  was added since, so it can differ from the sum of the parts",
            thousands(reported)
        ));
    }
    out
}

async fn slash(command: &str, state: &mut ChatState) -> Result<Flow> {
    let (name, arg) =
        command.split_once(char::is_whitespace).map(|(a, b)| (a, b.trim())).unwrap_or((command, ""));
    // `/server:prompt args`: an MCP server's prompt as the message.
    if let Some((server, prompt)) = name.split_once(':')
        && state.agent.mcp().is_some_and(|m| m.server_names().contains(&server))
    {
        return Ok(Flow::Send(prompt_message(state, server, prompt, arg).await?));
    }
    match name {
        "prompts" | "resources" => {
            let Some(mcp) = state.agent.mcp() else {
                eprintln!("no MCP servers are configured (tackle mcp add)");
                return Ok(Flow::Continue);
            };
            for server in mcp.server_names() {
                if name == "prompts" {
                    match mcp.prompts(server).await {
                        Ok(prompts) => {
                            for p in prompts {
                                let usage = tackle_mcp::attach::usage(&p);
                                let about =
                                    p.description.as_deref().unwrap_or("").lines().next().unwrap_or("");
                                eprintln!("  /{server}:{}  {usage}  {about}", p.name);
                            }
                        }
                        Err(e) => eprintln!("  {server}: {e}"),
                    }
                } else {
                    match mcp.resources(server).await {
                        Ok(resources) => {
                            for r in resources {
                                eprintln!("  @{server}:{}  {}", r.uri, r.name);
                            }
                        }
                        Err(e) => eprintln!("  {server}: {e}"),
                    }
                }
            }
        }
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
                let found = state.session.found_tools().await?;
                for name in deferred.names() {
                    let status = if found.contains(&name) { "found" } else { "deferred" };
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
                if let Some(a) = &state.approver {
                    a.forget();
                }
                eprintln!(
                    "resumed {} ({} messages)",
                    short(state.session.id()),
                    state.session.history().len()
                );
            }
        }
        "new" | "clear" => {
            let old = state.session.id().to_owned();
            state.session = open_or_create(&state.agent, None, &state.workspace).await?;
            if let Some(a) = &state.approver {
                a.forget();
            }
            if name == "clear" && state.style.is_color() {
                // Clear the screen and the scrollback, cursor home.
                eprint!("\x1b[H\x1b[2J\x1b[3J");
            }
            eprintln!(
                "new session {} · the previous one is stored: /resume {}",
                short(state.session.id()),
                short(&old)
            );
        }
        "model" => {
            if arg.is_empty() {
                eprintln!("model {} ({})", state.agent.config().model, state.agent.provider().name());
            } else {
                let id = state.session.id().to_owned();
                let agent = state.agent.with_model(arg);
                let session = agent.open_session(&id).await?;
                agent
                    .store()
                    .update_session(
                        &id,
                        SessionUpdate { model: Some(arg.to_owned()), ..SessionUpdate::default() },
                    )
                    .await?;
                state.agent = agent;
                state.session = session;
                eprintln!("model {arg} from the next message on (same session)");
            }
        }
        "approvals" => match (&state.approver, arg) {
            (None, _) => eprintln!("every call is approved (--yes)"),
            (Some(a), "") => {
                let always = a.always();
                if a.is_auto() {
                    eprintln!("every call is approved without asking (/approvals ask to be asked again)");
                } else if always.is_empty() {
                    eprintln!("calls that need confirmation are asked about; none is always allowed yet");
                } else {
                    eprintln!(
                        "always allowed in this session: {} (/approvals clear to forget)",
                        always.join(", ")
                    );
                }
            }
            (Some(a), "clear" | "reset") => {
                a.forget();
                eprintln!("approvals forgotten: every call that needs confirmation is asked about again");
            }
            (Some(a), "auto") => {
                a.set_auto(true);
                eprintln!("every call is approved without asking until /approvals ask");
            }
            (Some(a), "ask") => {
                a.set_auto(false);
                eprintln!("calls that need confirmation are asked about");
            }
            (Some(_), _) => eprintln!("usage: /approvals [clear|auto|ask]"),
        },
        "context" => {
            let r = state.session.context_report();
            let encoding = tackle_context::TokenCounter::for_model(&state.agent.config().model).encoding();
            let exact = if tackle_context::is_exact(&state.agent.config().model) {
                "the model's own tokenizer"
            } else {
                "a similar tokenizer, calibrated to the provider's reports"
            };
            eprintln!("{}", context_lines(&r, &format!("{} ({exact})", encoding.name())));
        }
        "compact" => {
            let report = state.session.compact_now(&EventSink::discard()).await?;
            if report.strategies.is_empty() {
                eprintln!("nothing to compact (the last turn is always kept as it is)");
            } else {
                eprintln!(
                    "compacted: conversation {} → {} tokens, {} → {} messages ({}); /context shows the rest",
                    thousands(report.tokens_before),
                    thousands(report.tokens_after),
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

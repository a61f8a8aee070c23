//! `tackle chat`: a REPL over one session at a time.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use tackle_agent::{Agent, Session, ToolMask, TurnInput};
use tackle_protocol::ContextReport;
use tackle_store::{SessionFilter, SessionUpdate};
use tackle_tools::{ApprovalMode, ApprovalPolicy, ElicitationPolicy, EventSink, ToolContext, TurnElicitor};
use tokio_util::sync::CancellationToken;

use crate::approver::TerminalApprover;
use crate::cli::ChatArgs;
use crate::elicitor::TerminalElicitor;
use crate::render::{TerminalRenderer, TextOutput, sink, thousands};
use crate::runtime::{
    Approvals, ModelProvider, ServerQuestions, YES_HINT, build_agent_with, open_or_create, open_store,
    provider_for, settings_for, tool_mask, workspace_dir,
};
use crate::screen::Screen;
use crate::style::{Style, color_allowed, wrap};
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
  /mode [NAME]   show or set the permission mode: default, accept-edits, plan, bypass
                 (Shift-Tab cycles default → accept-edits → plan)
  /hooks         the [[hooks]] rules and script hooks in effect
  /rewind [N]    the session's turns; /rewind N goes back to before turn N (files and
                 conversation; /rewind N files, /rewind N conversation for one of them)
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
    /// Nobody can be asked (input is piped) and --yes was not given: confirmations are refused.
    nobody_to_ask: bool,
    /// Who answers MCP servers' questions, unless `--yes` takes their defaults.
    elicitor: Option<Arc<TerminalElicitor>>,
    screen: Screen,
    style: Style,
    /// The `[[hooks]]` entries, for `/hooks`.
    hooks: Vec<tackle_tools::HookEntry>,
    /// The terminal, for questions asked by commands.
    terminal: Terminal,
}

pub async fn run(args: ChatArgs) -> Result<ExitCode> {
    let workspace = workspace_dir(args.model.workspace.as_ref())?;
    let mut settings = settings_for(&workspace, &args.model)?;
    if let Some(mode) = args.turn.mode {
        settings.permissions.mode = mode;
    }
    let mask = tool_mask(args.turn.tool_mask.as_deref())?;
    let history = settings.data_dir().ok().map(|d| d.join("repl_history"));
    let terminal = Terminal::start(history);
    let style = Style::stderr();
    let screen = Screen::new(color_allowed(std::io::stderr().is_terminal()));
    // Lines piped in are messages and commands, never answers to a question nobody saw: without
    // a terminal, calls that need confirmation are refused without asking (unless --yes).
    let interactive = std::io::stdin().is_terminal();
    let approver = (!args.turn.yes && interactive)
        .then(|| Arc::new(TerminalApprover::new(terminal.clone(), screen.clone(), workspace.clone())));
    let approvals = match (&approver, args.turn.yes) {
        (_, true) => Approvals::Auto,
        (Some(a), _) => Approvals::Ask(a.clone()),
        (None, false) => Approvals::Deny,
    };
    let nobody_to_ask = matches!(approvals, Approvals::Deny);
    // Piped lines never answer a server's question either.
    let elicitor = (!args.turn.yes && interactive)
        .then(|| Arc::new(TerminalElicitor::new(terminal.clone(), screen.clone())));
    let mut questions = ServerQuestions::for_approvals(
        &approvals,
        elicitor.clone().map(|e| e as Arc<dyn tackle_tools::Elicitor>),
    );
    questions.sign_in = crate::mcp_sign_in::can_sign_in();
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
    let mut session = open_or_create(&agent, args.turn.session.as_deref(), &workspace).await?;
    if let Some(mode) = args.turn.mode {
        session.set_mode(mode).await.map_err(|e| crate::UsageError(e.to_string()))?;
    }
    let mut renderer = TerminalRenderer::new(TextOutput::Stdout, &workspace, screen.clone());
    if nobody_to_ask {
        renderer = renderer.with_unconfirmable_hint(YES_HINT);
    }
    let (events, _) = sink(Some(renderer), None);
    eprintln!(
        "{} · {} · session {} · {}",
        style.bold("tackle chat"),
        agent.config().model,
        short(session.id()),
        style.dim("/help for commands, Ctrl-D to leave")
    );
    if nobody_to_ask {
        eprintln!(
            "{}",
            style.yellow(
                "standard input is not a terminal: calls that need confirmation are refused without asking \
                 (pass --yes to allow them)"
            )
        );
    }
    let mut interrupts = Interrupts::new()?;
    let mut state = ChatState {
        agent,
        session,
        workspace,
        max_steps: args.model.max_steps,
        mask,
        approver,
        nobody_to_ask,
        elicitor,
        screen,
        style,
        hooks: settings.hooks.clone(),
        terminal: terminal.clone(),
    };

    let mut typed = String::new();
    let mut reason = "prompt_input_exit";
    loop {
        let prompt = match state.session.mode() {
            tackle_tools::PermissionMode::Default => "you> ".to_owned(),
            mode => format!("you [{mode}]> "),
        };
        let line = match terminal.read_line_with_keys(&prompt, std::mem::take(&mut typed)).await {
            Input::Line(l) => l,
            Input::CycleMode(line) => {
                typed = line;
                let next = state.session.mode().next();
                match state.session.set_mode(next).await {
                    Ok(()) => eprintln!("{}", state.style.dim(&mode_line(next))),
                    Err(e) => eprintln!("error: {e}"),
                }
                continue;
            }
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
            match slash(command, &mut state, &events).await {
                Ok(Flow::Continue) => continue,
                Ok(Flow::Prefill(text)) => {
                    typed = text;
                    continue;
                }
                Ok(Flow::Send(message)) => {
                    run_turn(&mut state, &message, &events, &mut interrupts).await;
                    continue;
                }
                Ok(Flow::Quit) => {
                    reason = "other";
                    break;
                }
                Err(e) => {
                    eprintln!("error: {e:#}");
                    continue;
                }
            }
        }
        run_turn(&mut state, line, &events, &mut interrupts).await;
    }
    state.session.end(reason, &events).await;
    // Closing lets SQLite checkpoint and remove the WAL, which the next start would otherwise
    // have to read back whole.
    state.agent.store().close().await;
    Ok(ExitCode::SUCCESS)
}

/// `/rewind [N [files|conversation]]`.
async fn rewind(state: &mut ChatState, arg: &str) -> Result<Flow> {
    let id = state.session.id().to_string();
    let store = state.agent.store().clone();
    let mut words = arg.split_whitespace();
    let Some(turn) = words.next() else {
        let turns = store.sessions().turns(&id).await?;
        let recorded: Vec<i64> = store.checkpoints().list(&id).await?.into_iter().map(|c| c.turn).collect();
        let mut any = false;
        for t in turns.iter().filter(|t| t.turn > 0 && !t.hidden) {
            any = true;
            let files = if recorded.contains(&t.turn) { "files+conversation" } else { "conversation" };
            let prompt: String =
                crate::style::sanitize(t.prompt.lines().next().unwrap_or("")).chars().take(60).collect();
            eprintln!("  {:>4}  {files:<18}  {prompt}", t.turn);
        }
        if any {
            eprintln!("{}", state.style.dim("/rewind N goes back to before turn N"));
        } else {
            eprintln!("no turns to rewind to yet");
        }
        return Ok(Flow::Continue);
    };
    let turn: i64 = turn.parse().map_err(|_| anyhow::anyhow!("usage: /rewind N [files|conversation]"))?;
    let options = match words.next() {
        None => tackle_agent::RewindOptions::default(),
        Some("files") => tackle_agent::RewindOptions { files: true, conversation: false },
        Some("conversation") => tackle_agent::RewindOptions { files: false, conversation: true },
        Some(_) => anyhow::bail!("usage: /rewind N [files|conversation]"),
    };
    let preview = state.agent.rewind_preview(&id, turn, options).await?;
    if let Some(plan) = &preview.files {
        let (created, modified, deleted, modes, lost) = plan.counts();
        eprintln!(
            "  files: {created} restored, {modified} changed back, {deleted} removed, {modes} modes{}",
            if lost > 0 { format!(", {lost} cannot be restored") } else { String::new() }
        );
        for c in plan.changes.iter().take(12) {
            eprintln!("    {:?} {}", c.change, crate::style::sanitize(&c.path));
        }
        if plan.changes.len() > 12 {
            eprintln!("    … and {} more", plan.changes.len() - 12);
        }
    }
    if let Some((now, after)) = preview.messages {
        eprintln!("  conversation: {now} → {after} messages");
    }
    match state.terminal.read_line(&format!("rewind to before turn {turn}? [y/N] "), false).await {
        Input::Line(l) if matches!(l.trim().to_ascii_lowercase().as_str(), "y" | "yes") => {}
        _ => {
            eprintln!("nothing changed");
            return Ok(Flow::Continue);
        }
    }
    let done = state.agent.rewind(&id, turn, options).await?;
    for (path, why) in &done.leftovers {
        eprintln!(
            "  {} {}: {}",
            state.style.red("not restored"),
            crate::style::sanitize(path),
            crate::style::sanitize(why)
        );
    }
    state.session = state.agent.open_session(&id).await?;
    state.session.mark_continuing();
    eprintln!("rewound to before turn {turn}; its message is back at the prompt (edit it, or clear it)");
    Ok(if options.conversation { Flow::Prefill(done.prompt) } else { Flow::Continue })
}

/// What a permission mode means, in one line.
fn mode_line(mode: tackle_tools::PermissionMode) -> String {
    use tackle_tools::PermissionMode;
    let what = match mode {
        PermissionMode::Default => "calls that need confirmation ask",
        PermissionMode::AcceptEdits => "file edits run without asking; the shell still asks",
        PermissionMode::Plan => "only tools that read run; the model ends with a plan for you to approve",
        PermissionMode::Bypass => "nothing asks (the sandbox still applies)",
    };
    format!("mode {mode}: {what} (Shift-Tab cycles, /mode NAME sets)")
}

/// `/hooks`: the `[[hooks]]` entries, in order.
fn hook_lines(entries: &[tackle_tools::HookEntry]) -> Vec<String> {
    use tackle_tools::HookEntry;
    if entries.is_empty() {
        return vec![
            "no [[hooks]] configured: destructive tools ask, the rest are logged (docs/tools.md)".to_owned(),
        ];
    }
    entries
        .iter()
        .map(|entry| match entry {
            HookEntry::Rule(r) => {
                let what = match (&r.tools, r.annotation) {
                    (Some(t), Some(a)) => format!("tools = {t:?}, annotation = {a:?}"),
                    (Some(t), None) => format!("tools = {t:?}"),
                    (None, Some(a)) => format!("annotation = {a:?}"),
                    (None, None) => "every tool".to_owned(),
                };
                format!("  rule        {what} → {:?}", r.action).to_lowercase()
            }
            HookEntry::Script(h) => {
                let mut which = Vec::new();
                if let Some(t) = &h.tools {
                    which.push(format!("tools = {t:?}"));
                }
                if let Some(a) = h.annotation {
                    which.push(format!("annotation = {a:?}").to_lowercase());
                }
                if let Some(m) = &h.matcher {
                    which.push(format!("matcher = {m:?}"));
                }
                let which = if which.is_empty() { String::new() } else { format!(" ({})", which.join(", ")) };
                format!(
                    "  {:<11} {}{which}, timeout {}s",
                    h.event.as_str(),
                    crate::style::sanitize(&h.command),
                    h.timeout().as_secs()
                )
            }
        })
        .collect()
}

enum Flow {
    Continue,
    /// Continue with this text already typed at the prompt.
    Prefill(String),
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
    if state.nobody_to_ask {
        input.approval = Some(ApprovalPolicy::Deny);
    }
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

/// `/context`: the budget of the next request, and what "conversation" means, each paragraph
/// wrapped at word boundaries to `width`.
fn context_lines(r: &ContextReport, encoding: &str, width: Option<usize>) -> String {
    let mut paragraphs = vec![
        format!(
            "{} of {} tokens used ({:.1}%), {} reserved for the answer, {} left",
            thousands(r.used),
            thousands(r.window),
            r.percent,
            thousands(r.reserved_output),
            thousands(r.remaining)
        ),
        format!(
            "system {} · skills {} · tools {} · conversation {}",
            thousands(r.system),
            thousands(r.skills),
            thousands(r.tools),
            thousands(r.conversation)
        ),
        format!(
            "conversation = the session's messages as the next request sends them, counted with {encoding}; \
             /compact reports its before and after in the same figure"
        ),
    ];
    if let Some(reported) = r.reported_input {
        paragraphs.push(format!(
            "used starts from the provider's count of the last request ({} input tokens) plus what was added \
             since, so it can differ from the sum of the parts",
            thousands(reported)
        ));
    }
    paragraphs.iter().map(|p| wrap("  ", p, width, "  ")).collect::<Vec<_>>().join("\n")
}

/// A `/tools` row: name, status, and the description's first line wrapped under itself.
fn tool_row(name: &str, status: &str, description: &str, width: Option<usize>) -> String {
    let head = format!("  {name:<16} {status:<13} ");
    let indent = match width {
        Some(w) if w < head.chars().count() + 24 => "    ".to_owned(),
        _ => " ".repeat(head.chars().count()),
    };
    wrap(&head, description, width, &indent).trim_end().to_owned()
}

async fn slash(command: &str, state: &mut ChatState, events: &EventSink) -> Result<Flow> {
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
            let width = crate::style::stderr_columns();
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
                eprintln!("{}", tool_row(&spec.name, status, first, width));
            }
            if let Some(deferred) = state.agent.deferred() {
                let found = state.session.found_tools().await?;
                for name in deferred.names() {
                    let status = if found.contains(&name) { "found" } else { "deferred" };
                    let first = deferred
                        .get(&name)
                        .and_then(|s| s.description.lines().next().map(str::to_owned))
                        .unwrap_or_default();
                    eprintln!("{}", tool_row(&name, status, &first, width));
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
            for s in state.agent.store().sessions().list(filter).await? {
                eprintln!("  {}  {:<40}  {} messages", short(&s.id), s.title, s.message_count);
            }
        }
        "resume" => {
            if arg.is_empty() {
                eprintln!("usage: /resume ID (see /sessions)");
            } else {
                let record = state.agent.store().sessions().find_by_prefix(arg).await?;
                let next = state.agent.open_session(&record.id).await?;
                state.session.end("other", events).await;
                state.session = next;
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
            let next = open_or_create(&state.agent, None, &state.workspace).await?;
            state.session.end("clear", events).await;
            state.session = next;
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
                match check_model(state.agent.provider().as_ref(), arg).await {
                    ModelCheck::Listed => {}
                    ModelCheck::NotListed { listed, similar } => {
                        let hint = if similar.is_empty() {
                            String::new()
                        } else {
                            format!(" (did you mean {}?)", similar.join(", "))
                        };
                        eprintln!(
                            "{}",
                            state.style.red(&format!(
                                "unknown model {arg}: {} lists {listed} models, not this one{hint}; the model stays {}",
                                state.agent.provider().name(),
                                state.agent.config().model
                            ))
                        );
                        return Ok(Flow::Continue);
                    }
                    ModelCheck::Unchecked { why, window } => {
                        let window = match window {
                            Some(w) => format!("its context window is {} tokens", thousands(w)),
                            None => format!(
                                "Tackle does not know it, so its context window is taken as {} tokens (set [context] window \
                                 if it differs)",
                                thousands(tackle_context::DEFAULT_WINDOW)
                            ),
                        };
                        eprintln!(
                            "{}",
                            state.style.yellow(&format!("{arg} is not checked ({why}); {window}"))
                        );
                    }
                }
                let id = state.session.id().to_owned();
                let agent = state.agent.with_model(arg);
                let mut session = agent.open_session(&id).await?;
                session.mark_continuing();
                agent
                    .store()
                    .sessions()
                    .update(&id, SessionUpdate { model: Some(arg.to_owned()), ..SessionUpdate::default() })
                    .await?;
                state.agent = agent;
                state.session = session;
                eprintln!("model {arg} from the next message on (same session)");
            }
        }
        "approvals" => match (&state.approver, arg) {
            (None, _) if state.nobody_to_ask => {
                eprintln!(
                    "calls that need confirmation are refused: nobody can be asked (pass --yes to allow them)"
                )
            }
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
            let width = crate::style::stderr_columns();
            eprintln!("{}", context_lines(&r, &format!("{} ({exact})", encoding.name()), width));
        }
        "compact" => {
            // Its own line says what compaction did; a warning (a failed summary) shows as the
            // turn's warnings do.
            let style = state.style;
            let warnings = EventSink::new(move |event| {
                if let tackle_protocol::AgentEvent::Warning { message, .. } = event {
                    eprintln!("{}", style.yellow(&format!("warning: {}", crate::style::sanitize(&message))));
                }
            });
            let report = state.session.compact_now(&warnings).await?;
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
        "mode" => {
            if arg.is_empty() {
                eprintln!("{}", mode_line(state.session.mode()));
            } else {
                let mode: tackle_tools::PermissionMode = arg.parse().map_err(anyhow::Error::msg)?;
                state.session.set_mode(mode).await?;
                eprintln!("{}", mode_line(mode));
            }
        }
        "hooks" => {
            for line in hook_lines(&state.hooks) {
                eprintln!("{line}");
            }
        }
        "rewind" => return rewind(state, arg).await,
        "steps" => match arg.parse::<u32>() {
            Ok(n) if n > 0 => state.max_steps = Some(n),
            _ => eprintln!("usage: /steps N (N >= 1)"),
        },
        other => eprintln!("unknown command /{other}; /help lists them"),
    }
    Ok(Flow::Continue)
}

/// What the provider says of a model name.
enum ModelCheck {
    /// Its listing has the model.
    Listed,
    /// Its listing has `listed` models, not this one; `similar` are names close to it.
    NotListed { listed: usize, similar: Vec<String> },
    /// No listing to check against (`why`); the window Tackle knows for the name, if any.
    Unchecked { why: String, window: Option<u64> },
}

/// Checks `name` against the provider's model listing where it has one.
async fn check_model(provider: &dyn tackle_provider::Provider, name: &str) -> ModelCheck {
    let unchecked =
        |why: String| ModelCheck::Unchecked { why, window: tackle_context::known_context_window(name) };
    let listing = tokio::time::timeout(std::time::Duration::from_secs(15), provider.list_models()).await;
    match listing {
        Ok(Ok(Some(ids))) if ids.iter().any(|id| id == name) => ModelCheck::Listed,
        Ok(Ok(Some(ids))) if ids.is_empty() => unchecked(format!("{} lists no models", provider.name())),
        Ok(Ok(Some(ids))) => ModelCheck::NotListed { listed: ids.len(), similar: similar_names(name, &ids) },
        Ok(Ok(None)) => unchecked(format!("{} has no model listing", provider.name())),
        Ok(Err(e)) => unchecked(format!("listing {}'s models failed: {e}", provider.name())),
        Err(_) => unchecked(format!("{} did not list its models within 15 s", provider.name())),
    }
}

/// At most three listed names close to `name`: containing it, contained in it, or sharing its
/// first word.
fn similar_names(name: &str, ids: &[String]) -> Vec<String> {
    let lower = name.to_ascii_lowercase();
    let stem = lower.split(['-', '.', ':', '/']).next().unwrap_or(&lower);
    let mut close: Vec<&String> = ids
        .iter()
        .filter(|id| {
            let id = id.to_ascii_lowercase();
            id.contains(&lower) || lower.contains(&id) || (stem.len() >= 3 && id.starts_with(stem))
        })
        .collect();
    close.sort_by_key(|id| (id.len().abs_diff(name.len()), id.as_str()));
    close.into_iter().take(3).cloned().collect()
}

fn short(id: &str) -> &str {
    id.get(..13).unwrap_or(id)
}

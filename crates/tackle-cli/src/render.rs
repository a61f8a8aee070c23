//! Showing agent events in a terminal, and writing them as JSON lines.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;
use tackle_protocol::{AgentEvent, ToolCallId, TurnEnd, Usage, WarningCode};
use tackle_tools::EventSink;

use crate::markdown::MarkdownStream;
use crate::screen::Screen;
use crate::style::{Style, sanitize};
use crate::tool_view::{Before, call_label, result_lines, snapshot};

/// Where streamed answer text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextOutput {
    /// Stream text to stdout.
    Stdout,
    /// Do not show text (JSON modes).
    Hidden,
}

/// Warnings about Tackle's own mechanics, shown only with `-v`: the turn goes on unaffected.
const INTERNAL_WARNINGS: &[WarningCode] =
    &[WarningCode::StrategyFallback, WarningCode::ToolNameRepaired, WarningCode::CacheBreak];

/// Renders events for a person: the answer on stdout (markdown styled on a terminal), tool
/// calls, approvals' outcomes, warnings and a closing line per turn on stderr, and a spinner
/// while waiting.
pub struct TerminalRenderer {
    text: TextOutput,
    err: Style,
    markdown: MarkdownStream,
    screen: Screen,
    verbose: bool,
    workspace: PathBuf,
    /// Calls announced and not finished: their label and the file before they ran.
    calls: HashMap<ToolCallId, (String, Option<Before>)>,
    /// Whether the cursor is mid-line on stdout (so a status line starts on a new line).
    mid_line: bool,
    turn_started: Option<Instant>,
}

impl TerminalRenderer {
    /// A renderer for tools working in `workspace`, drawing its spinner on `screen`.
    pub fn new(text: TextOutput, workspace: &Path, screen: Screen) -> Self {
        let out = if text == TextOutput::Stdout { Style::stdout() } else { Style::plain() };
        Self {
            text,
            err: Style::stderr(),
            markdown: MarkdownStream::new(out),
            screen,
            verbose: crate::verbosity() > 0,
            workspace: workspace.to_owned(),
            calls: HashMap::new(),
            mid_line: false,
            turn_started: None,
        }
    }

    /// Writes status lines on stderr, after ending a partial answer line.
    fn status(&mut self, lines: &[String]) {
        let partial = self.markdown.finish();
        let end_line = self.mid_line || !partial.is_empty();
        self.mid_line = false;
        self.screen.write(|| {
            if end_line {
                outln!("{partial}");
            }
            let mut err = std::io::stderr().lock();
            for line in lines {
                let _ = writeln!(err, "{line}");
            }
        });
    }

    fn text(&mut self, text: &str) {
        if self.text != TextOutput::Stdout {
            return;
        }
        let shown = self.markdown.push(text);
        if !shown.is_empty() {
            self.mid_line = !shown.ends_with('\n');
            self.screen.write(|| out!("{shown}"));
        }
        if self.markdown.has_pending() || self.mid_line {
            self.screen.spin("writing");
        }
    }

    fn spin_for_calls(&self) {
        match self.calls.len() {
            0 => self.screen.spin("thinking"),
            1 => {
                let label = self.calls.values().next().map(|(l, _)| l.as_str()).unwrap_or("");
                self.screen.spin(&format!("running {}", crate::style::strip_ansi(label)));
            }
            n => self.screen.spin(&format!("running {n} tools")),
        }
    }

    pub fn render(&mut self, event: &AgentEvent) {
        let s = self.err;
        // The turn's clock starts with its first event.
        self.turn_started.get_or_insert_with(Instant::now);
        match event {
            AgentEvent::StepStarted { .. } => self.screen.spin("thinking"),
            AgentEvent::TextDelta { text } => self.text(text),
            AgentEvent::ToolCall { id, name, args } => {
                let label = call_label(s, name, args);
                let before = snapshot(&self.workspace, name, args);
                self.calls.insert(id.clone(), (label, before));
                if self.mid_line || self.markdown.has_pending() {
                    self.status(&[]);
                }
                self.spin_for_calls();
            }
            AgentEvent::ToolResult { id, name, .. } => {
                let (label, before) = self.calls.remove(id).unwrap_or_else(|| (s.bold(name), None));
                let lines = result_lines(s, &self.workspace, &label, event, before.as_ref());
                self.status(&lines);
                self.spin_for_calls();
            }
            AgentEvent::Retry { attempt, wait_ms, reason } => {
                let line =
                    format!("retry {attempt} in {:.1}s: {}", *wait_ms as f64 / 1000.0, sanitize(reason));
                self.status(&[s.yellow(&line)]);
            }
            AgentEvent::Warning { code, message } => {
                if self.verbose || !INTERNAL_WARNINGS.contains(code) {
                    self.status(&[s.yellow(&format!("warning: {}", sanitize(message)))]);
                } else {
                    tracing::debug!(%code, %message, "internal warning (shown with -v)");
                }
            }
            AgentEvent::CatalogChanged { added, removed, cache_break, .. } => {
                let list =
                    |names: &[String]| if names.is_empty() { "none".to_owned() } else { names.join(", ") };
                let cache = if *cache_break { "; tool definitions changed" } else { "" };
                let line = format!("tools changed: added {}, removed {}{cache}", list(added), list(removed));
                self.status(&[s.dim(&line)]);
            }
            AgentEvent::ContextCompacted { tokens_before, tokens_after, strategies, .. } => {
                let line = format!(
                    "context compacted: conversation {} → {} tokens ({})",
                    thousands(*tokens_before),
                    thousands(*tokens_after),
                    strategies.join(", ")
                );
                self.status(&[s.dim(&line)]);
            }
            AgentEvent::Custom { name, data } if name == "tool_progress" => {
                if let Some(m) = data.get("message").and_then(Value::as_str) {
                    self.screen.spin(&clip_line(&sanitize(m), 60));
                }
            }
            AgentEvent::Error { message, .. } => {
                self.screen.stop();
                self.status(&[s.red(&format!("error: {}", sanitize(message)))]);
            }
            AgentEvent::TurnFinished { steps, usage, reason, .. } => {
                self.screen.stop();
                let elapsed = self.turn_started.take().map(|t| t.elapsed());
                let line = turn_line(*steps, usage, *reason, elapsed);
                self.calls.clear();
                self.status(&[s.dim(&line)]);
            }
            _ => {}
        }
    }
}

/// `─ 4 steps · 12,345 tokens in (85% cached) · 240 out · 4.2s`.
pub fn turn_line(steps: u32, usage: &Usage, end: TurnEnd, elapsed: Option<std::time::Duration>) -> String {
    let mut parts = vec![format!("{steps} step{}", if steps == 1 { "" } else { "s" })];
    if usage.input_tokens == 0 && usage.output_tokens == 0 {
        parts.push("no usage reported".into());
    } else {
        let mut input = format!("{} tokens in", thousands(usage.input_tokens));
        if usage.input_tokens > 0 {
            let share = 100.0 * usage.cache_read_tokens as f64 / usage.input_tokens as f64;
            input.push_str(&format!(" ({share:.0}% cached)"));
        }
        parts.push(input);
        parts.push(format!("{} out", thousands(usage.output_tokens)));
    }
    if let Some(e) = elapsed {
        parts.push(format!("{:.1}s", e.as_secs_f64()));
    }
    match end {
        TurnEnd::Completed => {}
        TurnEnd::MaxSteps => parts.push("step limit reached".into()),
        TurnEnd::Cancelled => parts.push("cancelled".into()),
        TurnEnd::Failed => parts.push("failed".into()),
    }
    format!("─ {}", parts.join(" · "))
}

/// `12345` → `12,345`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn clip_line(s: &str, n: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    match line.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// Where JSON-line events go.
pub enum EventsTarget {
    Stdout,
    File(BufWriter<File>),
}

/// Writes each event as one JSON line, flushed at once so a crash loses nothing written.
pub fn json_lines(target: EventsTarget) -> impl Fn(&AgentEvent) + Send + Sync + 'static {
    let target = Mutex::new(target);
    move |event: &AgentEvent| {
        let Ok(line) = serde_json::to_string(event) else { return };
        let mut t = target.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *t {
            EventsTarget::Stdout => crate::output::write_all(format!("{line}\n").as_bytes()),
            EventsTarget::File(f) => {
                let _ = writeln!(f, "{line}");
                let _ = f.flush();
            }
        }
    }
}

/// Opens the `--events` target: `-` for stdout, else a file (created or truncated).
pub fn events_target(spec: &str) -> std::io::Result<EventsTarget> {
    if spec == "-" {
        return Ok(EventsTarget::Stdout);
    }
    Ok(EventsTarget::File(BufWriter::new(File::create(spec)?)))
}

/// A writer of JSON-line events.
pub type JsonSink = Box<dyn Fn(&AgentEvent) + Send + Sync>;

/// An event sink fanning out to a terminal renderer and an optional JSON-lines writer.
pub fn sink(
    renderer: Option<TerminalRenderer>,
    json: Option<JsonSink>,
) -> (EventSink, Arc<Mutex<Vec<AgentEvent>>>) {
    let renderer = renderer.map(Mutex::new);
    let collected = Arc::new(Mutex::new(Vec::new()));
    let keep = collected.clone();
    let sink = EventSink::new(move |event| {
        if let Some(r) = &renderer {
            r.lock().unwrap_or_else(|p| p.into_inner()).render(&event);
        }
        if let Some(j) = &json {
            j(&event);
        }
        if matches!(
            event,
            AgentEvent::TurnFinished { .. } | AgentEvent::Error { .. } | AgentEvent::Warning { .. }
        ) {
            keep.lock().unwrap_or_else(|p| p.into_inner()).push(event);
        }
    });
    (sink, collected)
}

//! Showing agent events in a terminal, and writing them as JSON lines.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tackle_protocol::{AgentEvent, ToolOutcome};
use tackle_tools::EventSink;

/// Where streamed answer text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextOutput {
    /// Stream text to stdout.
    Stdout,
    /// Do not show text (JSON modes).
    Hidden,
}

/// Renders events for a person: answer text on stdout, tool status lines on stderr.
pub struct TerminalRenderer {
    text: TextOutput,
    color: bool,
    /// Whether the cursor is mid-line on stdout (so a status line starts on a new line).
    mid_line: bool,
}

impl TerminalRenderer {
    pub fn new(text: TextOutput) -> Self {
        Self { text, color: std::io::stderr().is_terminal(), mid_line: false }
    }

    fn status(&mut self, line: &str) {
        if self.mid_line {
            println!();
            self.mid_line = false;
        }
        let _ = std::io::stdout().flush();
        if self.color {
            eprintln!("\x1b[2m{line}\x1b[0m");
        } else {
            eprintln!("{line}");
        }
    }

    pub fn render(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::TextDelta { text } if self.text == TextOutput::Stdout => {
                print!("{text}");
                let _ = std::io::stdout().flush();
                self.mid_line = !text.ends_with('\n');
            }
            AgentEvent::ToolCall { name, args, .. } => {
                self.status(&format!("> {name}  {}", summarize_args(args)));
            }
            AgentEvent::ToolResult { outcome, lines, truncated, locator, .. } => {
                let line = match outcome {
                    ToolOutcome::Ok { preview } => {
                        let first = preview.lines().next().unwrap_or("").trim();
                        let mut s = if *lines <= 1 && !first.is_empty() {
                            let short: String = first.chars().take(80).collect();
                            format!("  ok {short}{}", if first.chars().count() > 80 { "…" } else { "" })
                        } else {
                            format!("  ok {lines} line{}", if *lines == 1 { "" } else { "s" })
                        };
                        if *truncated {
                            s.push_str(" (shortened)");
                        }
                        if let Some(l) = locator {
                            s.push_str(&format!(" [full output: {l}]"));
                        }
                        s
                    }
                    ToolOutcome::Error { envelope } => {
                        format!("  error {} {}", envelope.category, envelope.message)
                    }
                };
                self.status(&line);
            }
            AgentEvent::ApprovalResolved { approved, reason, .. } => {
                let verdict = if *approved { "approved" } else { "denied" };
                self.status(&format!(
                    "  {verdict}{}",
                    reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default()
                ));
            }
            AgentEvent::Retry { attempt, wait_ms, reason } => {
                self.status(&format!("  retry {attempt} in {wait_ms} ms: {reason}"));
            }
            AgentEvent::Warning { message, .. } => self.status(&format!("warning: {message}")),
            AgentEvent::CatalogChanged { added, removed, cache_break, .. } => {
                let list =
                    |names: &[String]| if names.is_empty() { "none".to_owned() } else { names.join(", ") };
                let cache = if *cache_break { "; tool definitions changed" } else { "" };
                self.status(&format!(
                    "tools changed: added {}, removed {}{cache}",
                    list(added),
                    list(removed)
                ));
            }
            AgentEvent::Error { message, .. } => self.status(&format!("error: {message}")),
            AgentEvent::TurnFinished { .. } if self.mid_line => {
                println!();
                self.mid_line = false;
            }
            _ => {}
        }
    }
}

/// One line summarizing tool arguments: a command or path when there is one, else compact JSON.
pub fn summarize_args(args: &Value) -> String {
    let pick = ["command", "path", "url", "pattern", "action", "locator", "query"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str).map(str::to_owned));
    let text = pick.unwrap_or_else(|| args.to_string());
    let one_line = text.replace('\n', " ");
    match one_line.char_indices().nth(100) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
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
            EventsTarget::Stdout => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
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

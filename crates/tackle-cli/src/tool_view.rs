//! How tool calls look in the terminal: one line naming the call, then a short preview of its
//! output (the last lines of shell output, a coloured diff of an edit or a write, the first
//! lines of a read), and what an approval is asked for (the command, the diff, the content).

use std::path::{Component, Path, PathBuf};

use serde_json::Value;
use tackle_protocol::{AgentEvent, ToolOutcome};

use crate::style::{Style, sanitize};

/// Lines of a preview, at most.
const PREVIEW_LINES: usize = 6;
/// Lines of a diff, at most.
const DIFF_LINES: usize = 24;
/// Files larger than this are not read for a diff.
const MAX_DIFF_FILE: u64 = 256 * 1024;

/// `shell  sh greet.sh`: the tool and what it acts on.
pub fn call_label(style: Style, name: &str, args: &Value) -> String {
    let summary = sanitize(&summarize_args(args));
    format!("{} {}", style.bold(name), summary)
}

/// The content of a file before a call changes it, for the diff shown after (and in approvals).
#[derive(Debug, Clone)]
pub struct Before {
    pub path: String,
    /// `None` when the file did not exist.
    pub text: Option<String>,
}

/// Reads the file an `edit_file` or `write_file` call targets, when it lies inside `workspace`
/// (never follows `..` or absolute paths out of it) and is small text.
pub fn snapshot(workspace: &Path, name: &str, args: &Value) -> Option<Before> {
    if !matches!(name, "edit_file" | "write_file") {
        return None;
    }
    let rel = args.get("path").and_then(Value::as_str)?;
    let path = inside(workspace, rel)?;
    let text = match std::fs::metadata(&path) {
        Ok(m) if m.is_file() && m.len() <= MAX_DIFF_FILE => std::fs::read_to_string(&path).ok(),
        Ok(_) => return None,
        Err(_) => None,
    };
    Some(Before { path: rel.to_owned(), text })
}

fn inside(workspace: &Path, rel: &str) -> Option<PathBuf> {
    let rel = Path::new(rel);
    if rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return None;
    }
    let path = workspace.join(rel);
    let root = workspace.canonicalize().ok()?;
    // A symlink may still point out: resolve what exists.
    match path.canonicalize() {
        Ok(real) if real.starts_with(&root) => Some(path),
        Ok(_) => None,
        Err(_) => Some(path),
    }
}

/// What the call will do, for an approval question: the command, the diff, or the content.
pub fn approval_body(style: Style, workspace: &Path, name: &str, args: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match name {
        "shell" => {
            if let Some(cmd) = args.get("command").and_then(Value::as_str) {
                for line in sanitize(cmd).lines() {
                    out.push(format!("    {} {}", style.dim("$"), style.bold(line)));
                }
            }
            if let Some(cwd) = args.get("cwd").and_then(Value::as_str) {
                out.push(style.dim(&format!("    in {}", sanitize(cwd))));
            }
        }
        "write_file" | "edit_file" => {
            let before = snapshot(workspace, name, args);
            let old = before.as_ref().and_then(|b| b.text.clone());
            match planned_text(name, args, old.as_deref()) {
                Some(new) => {
                    let path = args.get("path").and_then(Value::as_str).unwrap_or("?");
                    if old.is_none() {
                        out.push(style.dim(&format!(
                            "    new file {} ({} bytes)",
                            sanitize(path),
                            new.len()
                        )));
                    }
                    out.extend(diff_lines(style, old.as_deref().unwrap_or(""), &new, DIFF_LINES * 2));
                }
                None => out.extend(json_lines(style, args)),
            }
        }
        "propose_plan" => {
            if let Some(plan) = args.get("plan").and_then(Value::as_str) {
                for line in sanitize(plan).lines() {
                    out.push(format!("    {line}"));
                }
            }
            out.push(style.dim("    yes: switch to default mode and carry it out · or type what to change"));
        }
        _ => out.extend(json_lines(style, args)),
    }
    out
}

/// The file text a write or an edit would leave, when it can be known beforehand.
fn planned_text(name: &str, args: &Value, old: Option<&str>) -> Option<String> {
    match name {
        "write_file" => args.get("content").and_then(Value::as_str).map(str::to_owned),
        "edit_file" => {
            let from = args.get("old_string").and_then(Value::as_str)?;
            let to = args.get("new_string").and_then(Value::as_str)?;
            let all = args.get("replace_all").and_then(Value::as_bool) == Some(true);
            let old = old?;
            if from.is_empty() || !old.contains(from) {
                return None;
            }
            Some(if all { old.replace(from, to) } else { old.replacen(from, to, 1) })
        }
        _ => None,
    }
}

fn json_lines(style: Style, args: &Value) -> Vec<String> {
    let text = serde_json::to_string_pretty(args).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> =
        lines.iter().take(DIFF_LINES).map(|l| format!("    {}", style.dim(&sanitize(l)))).collect();
    if lines.len() > DIFF_LINES {
        out.push(style.dim(&format!("    … {} more lines", lines.len() - DIFF_LINES)));
    }
    out
}

/// A unified diff of `old` → `new`, coloured, at most `max` lines.
pub fn diff_lines(style: Style, old: &str, new: &str, max: usize) -> Vec<String> {
    let diff = similar::TextDiff::from_lines(old, new);
    let text = diff.unified_diff().context_radius(2).to_string();
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for line in lines.iter().take(max) {
        let line = sanitize(line);
        let painted = if line.starts_with("@@") {
            style.cyan(&line)
        } else if line.starts_with('+') {
            style.green(&line)
        } else if line.starts_with('-') {
            style.red(&line)
        } else {
            style.dim(&line)
        };
        out.push(format!("    {painted}"));
    }
    if lines.len() > max {
        out.push(style.dim(&format!("    … {} more diff lines", lines.len() - max)));
    }
    out
}

/// The lines shown for a finished call: a status line labelled with the call, then a preview.
pub fn result_lines(
    style: Style,
    workspace: &Path,
    label: &str,
    event: &AgentEvent,
    before: Option<&Before>,
) -> Vec<String> {
    let AgentEvent::ToolResult { name, outcome, lines, truncated, locator, duration_ms, .. } = event else {
        return Vec::new();
    };
    // Quick calls need no timing.
    let took = match *duration_ms {
        0..100 => String::new(),
        100..1000 => format!("{duration_ms} ms"),
        _ => format!("{:.1}s", *duration_ms as f64 / 1000.0),
    };
    let mut out = Vec::new();
    match outcome {
        ToolOutcome::Ok { preview, tail } => {
            out.push(format!("{} {label} {}", style.green("✓"), style.dim(&took)).trim_end().to_owned());
            out.extend(preview_lines(style, workspace, name, preview, tail.as_deref(), *lines, before));
            if let Some(l) = locator {
                out.push(style.dim(&format!("    full output: tackle results show {l}")));
            } else if *truncated {
                out.push(style.dim("    (the model saw a shortened output)"));
            }
        }
        ToolOutcome::Error { envelope } => {
            let what = sanitize(&envelope.message);
            out.push(format!(
                "{} {label} {}",
                style.red("✗"),
                style.red(&format!("{}: {what}", envelope.category))
            ));
            if let Some(hint) = &envelope.hint {
                out.push(style.dim(&format!("    hint: {}", sanitize(hint))));
            }
        }
    }
    out
}

fn preview_lines(
    style: Style,
    workspace: &Path,
    name: &str,
    preview: &str,
    tail: Option<&str>,
    total: u64,
    before: Option<&Before>,
) -> Vec<String> {
    match name {
        "shell" => shell_preview(style, preview, tail, total),
        "edit_file" | "write_file" => match before {
            Some(b) => {
                let now = inside(workspace, &b.path).and_then(|p| std::fs::read_to_string(p).ok());
                match now {
                    Some(now) => diff_lines(style, b.text.as_deref().unwrap_or(""), &now, DIFF_LINES),
                    None => first_lines(style, preview, 1, total),
                }
            }
            None => first_lines(style, preview, 1, total),
        },
        "read_file" => {
            // `     1\tline` → `1  line`; the `[lines a-b of n]` footer is for the model.
            let body: String = preview
                .lines()
                .filter(|l| !l.starts_with("[lines "))
                .map(|l| match l.trim_start().split_once('\t') {
                    Some((n, text)) if n.chars().all(|c| c.is_ascii_digit()) => format!("{n}  {text}\n"),
                    _ => format!("{l}\n"),
                })
                .collect();
            first_lines(style, &body, 4, total.saturating_sub(1))
        }
        _ => match serde_json::from_str::<Value>(preview) {
            Ok(json) => json_preview(style, &json),
            Err(_) => first_lines(style, preview, 3, total),
        },
    }
}

/// A JSON output in one line: its listed entries when it has some, else compact JSON.
fn json_preview(style: Style, json: &Value) -> Vec<String> {
    let entries = json.get("entries").and_then(Value::as_array);
    let text = match entries {
        Some(list) => {
            let total = json.get("total_count").and_then(Value::as_u64).unwrap_or(list.len() as u64);
            let names: Vec<String> = list
                .iter()
                .take(5)
                .map(|e| e.as_str().map(str::to_owned).unwrap_or_else(|| e.to_string()))
                .collect();
            let more = total.saturating_sub(names.len() as u64);
            let more = if more > 0 { format!(" … {more} more") } else { String::new() };
            format!("{total} found: {}{more}", names.join(", "))
        }
        None => json.to_string(),
    };
    vec![format!("    {}", style.dim(&clip(&sanitize(&text), 160)))]
}

fn first_lines(style: Style, preview: &str, n: usize, total: u64) -> Vec<String> {
    let lines: Vec<&str> = preview.lines().collect();
    let mut out: Vec<String> =
        lines.iter().take(n).map(|l| format!("    {}", style.dim(&clip(&sanitize(l), 160)))).collect();
    let shown = out.len() as u64;
    if total > shown {
        out.push(style.dim(&format!("    … {} more lines", total - shown)));
    }
    out
}

/// Shell output (`exit code: N`, `stdout:`, …, `stderr:`, …): its last lines, and the exit
/// code when it is not 0.
fn shell_preview(style: Style, preview: &str, tail: Option<&str>, total: u64) -> Vec<String> {
    let mut out = Vec::new();
    // The first line, or the first of an offloaded output's preview (after the reference's
    // header).
    let code = preview.lines().take(3).find_map(|l| l.strip_prefix("exit code: "));
    match code {
        Some("0") => {}
        Some(code) => out.push(format!("    {}", style.yellow(&format!("exit code {code}")))),
        None => out.push(format!("    {}", style.yellow("exit code not shown"))),
    }
    // An offloaded output: its preview is the reference, whose header counts the real lines.
    let total = preview.lines().next().and_then(offloaded_lines).unwrap_or(total);
    let text = match tail {
        Some(t) => t.to_owned(),
        None => preview.to_owned(),
    };
    let body: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("exit code: ") && *l != "stdout:" && *l != "stderr:")
        .filter(|l| !is_offload_scaffolding(l))
        .filter(|l| !l.trim().is_empty())
        .collect();
    let skipped = if tail.is_some() { total.saturating_sub(body.len() as u64 + 2) } else { 0 };
    if skipped > 0 {
        out.push(style.dim(&format!("    … {skipped} lines above")));
    }
    let start = body.len().saturating_sub(PREVIEW_LINES);
    if start > 0 && skipped == 0 {
        out.push(style.dim(&format!("    … {start} lines above")));
    }
    for line in &body[start..] {
        out.push(format!("    {} {}", style.dim("│"), clip(&sanitize(line), 200)));
    }
    if body.is_empty() {
        out.push(style.dim("    (no output)"));
    }
    out
}

/// The line count in an offloaded output's reference header (`[shell output stored outside the
/// context: 18894 bytes, 3002 lines]`).
fn offloaded_lines(header: &str) -> Option<u64> {
    let (_, counts) = header.split_once(" output stored outside the context: ")?;
    let lines = counts.trim_end_matches(']').split(", ").nth(1)?;
    lines.strip_suffix(" lines")?.parse().ok()
}

/// Lines an offloaded output's reference adds around the output's own (its header, section
/// markers, the locator and how to read more): the result line says where the output is.
fn is_offload_scaffolding(line: &str) -> bool {
    (line.starts_with('[') && line.contains(" output stored outside the context: "))
        || line.starts_with("--- first ")
        || line.starts_with("--- last ")
        || line == "--- preview ---"
        || line.starts_with("locator: ")
        || line.starts_with("To read more, call read_result")
}

fn clip(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// One line summarizing tool arguments: a command or path when there is one, else compact JSON.
pub fn summarize_args(args: &Value) -> String {
    let pick = ["command", "path", "url", "pattern", "action", "locator", "query"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str).map(str::to_owned));
    let mut text = pick.unwrap_or_else(|| args.to_string());
    // An action tool: the action and what it acts on (`add write greet.sh`, `complete 2`).
    if args.get("action").and_then(Value::as_str) == Some(text.as_str()) {
        let detail = ["text", "name", "id"].iter().find_map(|k| match args.get(*k) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        });
        if let Some(d) = detail {
            text = format!("{text} {d}");
        }
    }
    clip(&text.replace('\n', " "), 100)
}

#[cfg(test)]
#[path = "tool_view_tests.rs"]
mod tests;

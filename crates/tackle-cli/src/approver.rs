//! Asking the person at the terminal to approve a tool call: what the call will do (the
//! command, the diff, the content), then yes / no / always for this session / a reason to deny.
//! Ctrl-C at the question cancels the whole turn.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use async_trait::async_trait;
use tackle_tools::{ApprovalDecision, ApprovalRequest, Approver};
use tokio_util::sync::CancellationToken;

use crate::screen::Screen;
use crate::style::Style;
use crate::terminal::{Input, Terminal};
use crate::tool_view::{approval_body, call_label};

/// What the person answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Yes,
    Always,
    No,
    /// No, with this reason for the model.
    NoBecause(String),
}

/// Reads an answer: `y`/`yes`, `a`/`always`, `n`/`no`/empty, anything else is a reason to deny.
pub fn parse_answer(line: &str) -> Answer {
    let line = line.trim();
    match line.to_ascii_lowercase().as_str() {
        "y" | "yes" => Answer::Yes,
        "a" | "always" => Answer::Always,
        "" | "n" | "no" => Answer::No,
        _ => Answer::NoBecause(line.to_owned()),
    }
}

#[derive(Default)]
struct Memory {
    /// Tools approved for the rest of the session.
    always: BTreeSet<String>,
    /// Approve everything (`/approvals auto`).
    auto: bool,
    /// The running turn, cancelled by Ctrl-C at the question.
    turn: Option<CancellationToken>,
}

/// Asks on the terminal; remembers "always" answers until [`TerminalApprover::forget`].
pub struct TerminalApprover {
    terminal: Terminal,
    screen: Screen,
    workspace: PathBuf,
    style: Style,
    memory: Mutex<Memory>,
}

impl TerminalApprover {
    pub fn new(terminal: Terminal, screen: Screen, workspace: PathBuf) -> Self {
        Self { terminal, screen, workspace, style: Style::stderr(), memory: Mutex::default() }
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.memory.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The turn Ctrl-C at a question cancels.
    pub fn set_turn(&self, cancel: CancellationToken) {
        self.memory().turn = Some(cancel);
    }

    /// Forgets "always" answers (a new or resumed session).
    pub fn forget(&self) {
        let mut m = self.memory();
        m.always.clear();
        m.auto = false;
    }

    /// Tools approved for this session.
    pub fn always(&self) -> Vec<String> {
        self.memory().always.iter().cloned().collect()
    }

    /// Whether every call is approved without asking.
    pub fn is_auto(&self) -> bool {
        self.memory().auto
    }

    /// Approve every call without asking (`true`) or ask again (`false`).
    pub fn set_auto(&self, auto: bool) {
        self.memory().auto = auto;
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn decide(&self, request: ApprovalRequest) -> ApprovalDecision {
        let s = self.style;
        let label = call_label(s, &request.tool, &request.args);
        {
            let m = self.memory();
            // Allowed already: the result line shows the call.
            if m.auto || m.always.contains(&request.tool) {
                return ApprovalDecision::approve();
            }
        }
        let body = approval_body(s, &self.workspace, &request.tool, &request.args);
        let _paused = self.screen.pause();
        {
            let mut err = std::io::stderr().lock();
            let question = if request.tool == "propose_plan" { "? approve this plan" } else { "? allow" };
            let _ = writeln!(err, "{} {label}", s.yellow(question));
            for line in &body {
                let _ = writeln!(err, "{line}");
            }
            let _ = err.flush();
        }
        let prompt = format!(
            "  {}es / {}o / {}lways for this session / or type why not: ",
            s.bold("[y]"),
            s.bold("[n]"),
            s.bold("[a]")
        );
        let answer = self.terminal.read_line(&prompt, false).await;
        match answer {
            Input::Line(line) => match parse_answer(&line) {
                Answer::Yes => ApprovalDecision::approve(),
                Answer::Always => {
                    self.memory().always.insert(request.tool.clone());
                    eprintln!(
                        "{}",
                        s.dim(&format!(
                            "  {} is allowed for the rest of this session (/approvals)",
                            request.tool
                        ))
                    );
                    ApprovalDecision::approve()
                }
                Answer::No => ApprovalDecision::deny("denied by the user"),
                Answer::NoBecause(reason) => ApprovalDecision::deny(reason),
            },
            Input::Interrupted => {
                eprintln!("{}", s.yellow("(cancelling the turn…)"));
                if let Some(turn) = &self.memory().turn {
                    turn.cancel();
                }
                ApprovalDecision::deny("the user cancelled the turn")
            }
            Input::Eof | Input::CycleMode(_) => ApprovalDecision::deny("no answer from the user"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        assert_eq!(parse_answer("Y"), Answer::Yes);
        assert_eq!(parse_answer(" always "), Answer::Always);
        assert_eq!(parse_answer("a"), Answer::Always);
        assert_eq!(parse_answer(""), Answer::No);
        assert_eq!(parse_answer("n"), Answer::No);
        assert_eq!(parse_answer("use a temp dir"), Answer::NoBecause("use a temp dir".into()));
    }
}

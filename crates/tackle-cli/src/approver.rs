//! Asking the person at the terminal to approve a tool call.

use async_trait::async_trait;
use tackle_tools::{ApprovalDecision, ApprovalRequest, Approver};

use crate::render::summarize_args;
use crate::terminal::{Input, Terminal};

/// Prompts `Allow <tool> <args>? [y/N]` on the terminal.
pub struct TerminalApprover {
    terminal: Terminal,
}

impl TerminalApprover {
    pub fn new(terminal: Terminal) -> Self {
        Self { terminal }
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn decide(&self, request: ApprovalRequest) -> ApprovalDecision {
        let prompt =
            format!("  allow {} {}? [y/N/reason to deny] ", request.tool, summarize_args(&request.args));
        match self.terminal.read_line(&prompt, false).await {
            Input::Line(answer) => {
                let answer = answer.trim();
                match answer.to_ascii_lowercase().as_str() {
                    "y" | "yes" => ApprovalDecision { approved: true, reason: None },
                    "" | "n" | "no" => {
                        ApprovalDecision { approved: false, reason: Some("denied by the user".into()) }
                    }
                    _ => ApprovalDecision { approved: false, reason: Some(answer.to_owned()) },
                }
            }
            Input::Interrupted | Input::Eof => {
                ApprovalDecision { approved: false, reason: Some("no answer from the user".into()) }
            }
        }
    }
}

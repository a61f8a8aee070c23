//! The compaction chain: (a) clear old tool results behind locators, (b) summarize the oldest
//! part with the model, (c) drop the oldest part. Each step runs only if the previous one did
//! not reach the target; nothing is lost (cleared outputs are stored, summarized and dropped
//! messages stay in the store, hidden), and the compacted conversation is saved as a snapshot
//! that resume starts from.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tackle_context::{SUMMARY_INSTRUCTIONS, cleared_stub, plan_clear, removal_message, summary_message};
use tackle_protocol::{AgentEvent, Message, ModelRequest, ToolChoice};
use tackle_provider::CallOptions;
use tackle_store::NewBlob;
use tackle_tools::EventSink;

use crate::conversation::{Conversation, Prefix};
use crate::session::Change;
use crate::{AgentError, Session};

/// Why compaction ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CompactReason {
    /// The budget crossed the trigger threshold.
    Threshold,
    /// Asked for: the `compact_context` tool, `/compact`, `tackle sessions compact`.
    Forced,
    /// The provider refused the request as too long.
    ContextExceeded,
}

impl CompactReason {
    fn as_str(self) -> &'static str {
        match self {
            Self::Threshold => "threshold",
            Self::Forced => "forced",
            Self::ContextExceeded => "context_exceeded",
        }
    }
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompactionReport {
    /// Why it ran.
    pub reason: CompactReason,
    /// Strategies that ran, in order.
    pub strategies: Vec<String>,
    /// Conversation tokens before and after.
    pub tokens_before: u64,
    /// Conversation tokens after.
    pub tokens_after: u64,
    /// Messages before.
    pub messages_before: usize,
    /// Messages after.
    pub messages_after: usize,
}

impl Session {
    /// Tokens the conversation must get down to: the target share of the window, minus the
    /// fixed parts (system, tools); for forced compaction, and when the provider said the prompt
    /// does not fit, at most half of what it is now.
    fn compaction_target(&mut self, reason: CompactReason) -> u64 {
        let budget = self.context.budget(&self.history);
        let thresholds = self.agent.config().context.thresholds;
        let fixed = budget.components.system + budget.components.skills + budget.components.tools;
        let share = match reason {
            CompactReason::ContextExceeded => thresholds.target * 0.75,
            _ => thresholds.target,
        };
        let target = ((budget.effective_window() as f64 * share) as u64).saturating_sub(fixed);
        match reason {
            // The provider's window can be smaller than the one Tackle knows of: when it says the
            // prompt does not fit, at least halve the conversation, as forced compaction does.
            CompactReason::Forced | CompactReason::ContextExceeded => {
                target.min(self.history.total_tokens() / 2)
            }
            _ => target,
        }
    }

    /// Runs the chain until the conversation fits the target. `protected_from` is the first
    /// message of the current turn: it and everything after it are kept verbatim.
    pub(crate) async fn compact(
        &mut self,
        protected_from: usize,
        reason: CompactReason,
        sink: &EventSink,
    ) -> Result<CompactionReport, AgentError> {
        let store = self.agent.store().clone();
        let sid = self.record.id.clone();
        let tokens_before = self.context.conversation(&self.history);
        let messages_before = self.history.len();
        let hooks = self.agent.executor().script_hooks().clone();
        if hooks.has(tackle_tools::HookEvent::PreCompact) {
            let trigger = if reason == CompactReason::Forced { "manual" } else { "auto" };
            let scope = tackle_tools::HookScope { session_id: &sid, cwd: &self.workspace, mode: self.mode };
            let payload = tackle_tools::HookPayload::PreCompact {
                trigger: trigger.to_owned(),
                custom_instructions: String::new(),
            };
            if let Some(why) = hooks.run_event(&payload, &scope, sink).await.blocked {
                tracing::info!(session = %sid, %why, "compaction blocked by a PreCompact hook");
                return Ok(CompactionReport {
                    reason,
                    strategies: Vec::new(),
                    tokens_before,
                    tokens_after: tokens_before,
                    messages_before,
                    messages_after: messages_before,
                });
            }
        }
        let target = self.compaction_target(reason);
        let mut strategies = Vec::new();
        // Every strategy takes a valid conversation and returns one ([conversation-valid]).
        let mut conversation = self.conversation(sink);
        let mut protected_from = protected_from.min(conversation.len());

        // (a) Clear old tool results; their full text stays restorable by locator.
        let keep = self.agent.config().context.keep_tool_results;
        if let Some(cleared) = self.clear_results(&conversation, protected_from, keep).await? {
            conversation = cleared;
            strategies.push("clear_tool_results".to_owned());
        }

        // (b) Summarize the oldest part with the model, reusing the session's system and tools
        // (so the summary request itself reads the prompt cache).
        if self.history.total_tokens() > target {
            let need = self.history.total_tokens() - target;
            if let Some(prefix) = conversation.prefix(self.history.tokens(), protected_from, need) {
                match self.summarize(&conversation.messages()[prefix.range()]).await {
                    Ok(summary) => {
                        let note = summary_message(&summary, prefix.len());
                        if let Some(summarized) = self.replace_prefix(&conversation, &prefix, note).await? {
                            conversation = summarized;
                            protected_from = protected_from + 1 - prefix.len();
                            strategies.push("summarize".to_owned());
                        }
                    }
                    Err(e) => {
                        tracing::warn!(session = %sid, error = %e, "summarization failed; truncating instead");
                        sink.emit(AgentEvent::Warning { code: tackle_protocol::WarningCode::SummarizationFailed,
                            message: format!("summarizing the conversation failed ({e}); the oldest messages are dropped instead"),
                        });
                    }
                }
            }
        }

        // (a') Still too big: clear results of the current turn too, except the last ones. The
        // turn's messages stay; only outputs move behind their locators, restorable.
        if self.history.total_tokens() > target {
            let keep = self.agent.config().context.keep_tool_results;
            if let Some(cleared) = self.clear_results(&conversation, conversation.len(), keep).await? {
                conversation = cleared;
                strategies.push("clear_current_turn_results".to_owned());
            }
        }

        // (c) Drop the oldest part as the last resort (still kept in the store).
        if self.history.total_tokens() > target {
            let need = self.history.total_tokens() - target;
            if let Some(prefix) = conversation.prefix(self.history.tokens(), protected_from, need) {
                let note = removal_message(prefix.len());
                if self.replace_prefix(&conversation, &prefix, note).await?.is_some() {
                    protected_from = protected_from + 1 - prefix.len();
                    strategies.push("truncate".to_owned());
                }
            }
        }

        self.turn_start = protected_from;
        let report = CompactionReport {
            reason,
            strategies: strategies.clone(),
            tokens_before,
            tokens_after: self.context.conversation(&self.history),
            messages_before,
            messages_after: self.history.len(),
        };
        if !strategies.is_empty() {
            let upto = store.messages().count(&sid).await? - 1;
            let stats = serde_json::to_value(&report).unwrap_or_default();
            store.messages().save_snapshot(&sid, upto, self.history.messages(), &stats).await?;
            self.compacted = true;
        }
        sink.emit(AgentEvent::ContextCompacted {
            reason: reason.as_str().to_owned(),
            strategies,
            tokens_before: report.tokens_before,
            tokens_after: report.tokens_after,
            messages_before: report.messages_before as u64,
            messages_after: report.messages_after as u64,
        });
        Ok(report)
    }

    /// `conversation` with the tool results before `protected_from`, except the last `keep`,
    /// replaced by stubs naming the locator of their stored text; `None` when there is nothing
    /// to clear.
    async fn clear_results(
        &mut self,
        conversation: &Conversation,
        protected_from: usize,
        keep: usize,
    ) -> Result<Option<Conversation>, AgentError> {
        let plan = plan_clear(conversation.messages(), protected_from, keep);
        if plan.is_empty() {
            return Ok(None);
        }
        let store = self.agent.store().clone();
        let ttl = Duration::from_secs(self.agent.config().context.offload_ttl_days * 24 * 3600);
        let mut stubs = Vec::with_capacity(plan.len());
        for target in &plan {
            let Some(tackle_protocol::ContentBlock::ToolResult(r)) =
                conversation.messages().get(target.message).and_then(|m| m.content.get(target.block))
            else {
                continue;
            };
            let meta = store
                .blobs()
                .put(
                    &self.record.id,
                    NewBlob {
                        tool: &target.tool,
                        call_id: &target.tool_use_id,
                        bytes: r.content.as_bytes(),
                        ttl,
                    },
                )
                .await?;
            stubs.push((target.message, target.block, cleared_stub(&target.tool, r, &meta.locator)));
        }
        let cleared = conversation.clear_results(&plan, |t, r| {
            stubs
                .iter()
                .find(|(m, b, _)| *m == t.message && *b == t.block)
                .map_or_else(|| r.content.clone(), |(_, _, s)| s.clone())
        });
        let context = &self.context;
        self.history.adopt(cleared.clone(), Change::InPlace, |m| context.count_message(m));
        self.context.forget_report();
        Ok(Some(cleared))
    }

    /// `conversation` with `prefix` replaced by `note` (a summary or a removal note), the
    /// stored originals hidden (they stay in the store); `None`, with an error logged, if that
    /// would not be a valid conversation (it always is: a prefix ends between units).
    async fn replace_prefix(
        &mut self,
        conversation: &Conversation,
        prefix: &Prefix,
        note: Message,
    ) -> Result<Option<Conversation>, AgentError> {
        let replaced = match conversation.replace_prefix(prefix, note.text()) {
            Ok(replaced) => replaced,
            Err(e) => {
                tracing::error!(session = %self.record.id, error = %e, "compaction skipped a prefix it could not replace");
                return Ok(None);
            }
        };
        let seqs = self.history.seqs_in(prefix.range());
        if !seqs.is_empty() {
            self.agent.store().messages().hide(&self.record.id, &seqs).await?;
        }
        let context = &self.context;
        self.history.adopt(replaced.clone(), Change::PrefixReplaced { len: prefix.len() }, |m| {
            context.count_message(m)
        });
        self.context.forget_report();
        Ok(Some(replaced))
    }

    async fn summarize(&self, messages: &[Message]) -> Result<String, tackle_provider::ProviderError> {
        let config = self.agent.config();
        let mut conversation = messages.to_vec();
        conversation.push(Message::user(SUMMARY_INSTRUCTIONS));
        let mut request = ModelRequest::new(config.model.clone(), conversation);
        request.system = self.system.clone();
        request.tools = self.tools.catalog().specs().clone();
        request.tool_choice = ToolChoice::None;
        request.max_output_tokens = Some(2048);
        request.prompt_cache_key = Some(self.record.id.to_string());
        let response = self.agent.provider().complete(&request, &CallOptions::default()).await?;
        let text = response.text();
        if text.trim().is_empty() {
            return Err(tackle_provider::ProviderError::Protocol {
                message: "the summary came back empty".into(),
            });
        }
        Ok(text)
    }

    /// Compacts now, outside a turn (`/compact`, `tackle sessions compact`): the last turn is
    /// kept verbatim.
    pub async fn compact_now(&mut self, sink: &EventSink) -> Result<CompactionReport, AgentError> {
        let protected = self
            .history
            .messages()
            .iter()
            .rposition(|m| {
                m.role == tackle_protocol::Role::User && !m.text().starts_with(crate::session::NOTE_PREFIX)
            })
            .unwrap_or(0);
        self.compact(protected, CompactReason::Forced, sink).await
    }

    /// The budget of the next request (for `/context` and the server).
    pub fn context_report(&mut self) -> tackle_protocol::ContextReport {
        let budget = self.context.budget(&self.history);
        self.context.report(&budget, &self.history)
    }
}

//! [`Hub`]: one channel's traffic. Inbox items go to a worker per chat that runs one item at a
//! time (messages that arrive during a turn wait in its queue); button presses and `/stop` are
//! handled at once. A turn runs on the chat person's stored session and is shown as one edited
//! message ([`crate::live::LiveView`]) plus the answer; confirmations are sent with buttons and
//! denied when nobody answers in time; an MCP server's questions are asked step by step
//! ([`crate::questions::Dialog`]: buttons or a written reply) and declined when nobody answers
//! in time.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tackle_agent::{Agent, NewSessionOptions, Session, TurnInput};
use tackle_protocol::{AgentEvent, ApprovalId, ElicitationId, TurnEnd};
use tackle_store::{InboxItem, InboxState};
use tackle_tools::{ApprovalQueue, ElicitationAnswer, ElicitationQueue, EventSink};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::live::{LiveView, tool_label};
use crate::questions::{Dialog, Step};
use crate::rich::{Block, Document, Span};
use crate::{
    Attachment, Channel, ChannelError, ChatId, Confirmation, Inbound, InboundKind, MessageRef, UserId,
};

/// A chat's worker exits after this long without work (a new one starts with the next message).
const IDLE: Duration = Duration::from_secs(60);
/// How often the typing indicator is renewed while a turn runs (it lasts about five seconds).
const TYPING_EVERY: Duration = Duration::from_secs(4);

/// Settings a hub needs, from [`crate::ChannelsConfig`] and the server.
#[derive(Debug, Clone)]
pub(crate) struct HubOptions {
    pub(crate) workspace: PathBuf,
    pub(crate) approval_timeout: Duration,
    pub(crate) question_timeout: Duration,
    pub(crate) uploads_dir: PathBuf,
    pub(crate) max_upload_bytes: u64,
    pub(crate) max_queued: usize,
}

/// An inbox item on its way to a chat's worker.
struct Work {
    update_id: i64,
    inbound: Inbound,
}

#[derive(Clone)]
struct RunningTurn {
    user: UserId,
    cancel: CancellationToken,
}

/// A question shown (or waiting to be shown) in a chat.
struct OpenQuestion {
    dialog: Dialog,
    /// Who may answer: the person whose turn asked.
    user: UserId,
    user_name: Option<String>,
    /// The message of its current step, once sent.
    message: Option<MessageRef>,
}

/// What a person did to the question shown in a chat.
enum Input<'a> {
    Press { id: &'a ElicitationId, step: u32, code: &'a str },
    Reply(&'a str),
}

#[derive(Clone)]
struct PendingApproval {
    user: UserId,
    user_name: Option<String>,
}

pub(crate) struct Hub {
    pub(crate) channel: Arc<dyn Channel>,
    name: String,
    agent: Agent,
    approvals: ApprovalQueue,
    /// Where the agent's questions wait (the agent's elicitor); `None`: not answered here.
    elicitations: Option<ElicitationQueue>,
    options: HubOptions,
    chats: Mutex<HashMap<ChatId, mpsc::Sender<Work>>>,
    running: Mutex<HashMap<ChatId, RunningTurn>>,
    pending: Mutex<HashMap<ApprovalId, PendingApproval>>,
    /// Per chat, the questions of its turn, the one shown first.
    questions: Mutex<HashMap<ChatId, Vec<OpenQuestion>>>,
    /// Workers, turns and button presses, waited for at stop.
    pub(crate) tasks: TaskTracker,
    /// Cancelled when stopping begins: no new turn starts; queued items stay in the store.
    pub(crate) stopping: CancellationToken,
    /// Parent of every turn's cancellation (the end of the stop grace period).
    pub(crate) cancel_turns: CancellationToken,
    /// Cancelled when the hub is stopped for good (ends timers).
    pub(crate) finished: CancellationToken,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Hub {
    pub(crate) fn new(
        channel: Arc<dyn Channel>,
        agent: Agent,
        approvals: ApprovalQueue,
        elicitations: Option<ElicitationQueue>,
        options: HubOptions,
    ) -> Self {
        Self {
            name: channel.name().to_owned(),
            channel,
            agent,
            approvals,
            elicitations,
            options,
            chats: Mutex::default(),
            running: Mutex::default(),
            pending: Mutex::default(),
            questions: Mutex::default(),
            tasks: TaskTracker::new(),
            stopping: CancellationToken::new(),
            cancel_turns: CancellationToken::new(),
            finished: CancellationToken::new(),
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn store(&self) -> &tackle_store::Store {
        self.agent.store()
    }

    /// Items left open by the last process: queued ones are handled now; running ones were
    /// interrupted by a crash and are never started again; their chats are told.
    pub(crate) async fn recover(self: &Arc<Self>) -> Result<(), ChannelError> {
        let store = self.agent.store().clone();
        for item in store.channels().open_updates(&self.name).await? {
            match item.state {
                InboxState::Running => {
                    if let Ok(inbound) = serde_json::from_value::<Inbound>(item.payload.clone())
                        && matches!(inbound.kind, InboundKind::Message { .. })
                    {
                        let excerpt = match &inbound.kind {
                            InboundKind::Message { text, .. } => excerpt(text),
                            _ => String::new(),
                        };
                        let notice = format!(
                            "⚠️ Tackle restarted while working on your message “{excerpt}”. That request was stopped \
                             (its tools do not run again); send it again if you still need it."
                        );
                        self.notify(&inbound.chat, &notice).await;
                    }
                    store.channels().finish_update(&self.name, item.update_id).await?;
                }
                _ => self.deliver(item).await,
            }
        }
        Ok(())
    }

    /// Routes one stored item: refusals, button presses and `/stop` at once, the rest to the
    /// chat's worker.
    pub(crate) async fn deliver(self: &Arc<Self>, item: InboxItem) {
        let inbound: Inbound = match serde_json::from_value(item.payload) {
            Ok(i) => i,
            Err(e) => {
                tracing::warn!(channel = %self.name, update = item.update_id, error = %e, "unreadable inbox item skipped");
                self.finish(item.update_id).await;
                return;
            }
        };
        let update_id = item.update_id;
        let control = !self.channel.allows(&inbound.user)
            || matches!(&inbound.kind, InboundKind::Decision { .. } | InboundKind::Answer { .. })
            || (matches!(&inbound.kind, InboundKind::Message { .. }) && self.awaits_reply(&inbound))
            || matches!(&inbound.kind, InboundKind::Command { name, .. } if name == "stop");
        if control {
            let hub = self.clone();
            self.tasks.spawn(async move {
                if hub.start(update_id).await {
                    hub.control(inbound).await;
                    hub.finish(update_id).await;
                }
            });
            return;
        }
        if self.stopping.is_cancelled() {
            // Stays queued in the store; the next start handles it.
            return;
        }
        self.enqueue(Work { update_id, inbound }).await;
    }

    async fn enqueue(self: &Arc<Self>, work: Work) {
        let chat = work.inbound.chat.clone();
        let refused = {
            let mut chats = lock(&self.chats);
            let sender = chats.entry(chat.clone()).or_insert_with(|| self.spawn_worker(chat.clone()));
            match sender.try_send(work) {
                Ok(()) => None,
                Err(mpsc::error::TrySendError::Full(work)) => Some(work),
                Err(mpsc::error::TrySendError::Closed(work)) => {
                    // The worker ended (idle or stopping) between lookup and send: a new one.
                    let sender = self.spawn_worker(chat.clone());
                    let result = sender.try_send(work);
                    chats.insert(chat.clone(), sender);
                    result.err().map(|e| e.into_inner())
                }
            }
        };
        if let Some(work) = refused
            && self.start(work.update_id).await
        {
            let notice = format!(
                "I am still working on {} earlier messages in this chat; this one was not queued. Send it again \
                 when I have answered.",
                self.options.max_queued
            );
            self.notify(&chat, &notice).await;
            self.finish(work.update_id).await;
        }
    }

    fn spawn_worker(self: &Arc<Self>, chat: ChatId) -> mpsc::Sender<Work> {
        let (tx, rx) = mpsc::channel(self.options.max_queued.max(1));
        let hub = self.clone();
        self.tasks.spawn(async move { hub.worker(chat, rx).await });
        tx
    }

    async fn worker(self: Arc<Self>, chat: ChatId, mut rx: mpsc::Receiver<Work>) {
        loop {
            let work = tokio::select! {
                biased;
                () = self.stopping.cancelled() => return,
                w = rx.recv() => match w {
                    Some(w) => w,
                    None => return,
                },
                () = tokio::time::sleep(IDLE) => {
                    let mut chats = lock(&self.chats);
                    if rx.is_empty() {
                        chats.remove(&chat);
                        return;
                    }
                    continue;
                }
            };
            if self.start(work.update_id).await {
                let update_id = work.update_id;
                if let Err(e) = self.handle(work).await {
                    tracing::warn!(channel = %self.name, chat = %chat, error = %e, "handling a message failed");
                    self.notify(&chat, &format!("⚠️ {e}")).await;
                }
                self.finish(update_id).await;
            }
        }
    }

    /// Marks an item started; false when it must not run (started before).
    async fn start(&self, update_id: i64) -> bool {
        match self.agent.store().channels().start_update(&self.name, update_id).await {
            Ok(started) => started,
            Err(e) => {
                tracing::warn!(channel = %self.name, update = update_id, error = %e, "cannot mark an update started");
                false
            }
        }
    }

    async fn finish(&self, update_id: i64) {
        if let Err(e) = self.agent.store().channels().finish_update(&self.name, update_id).await {
            tracing::warn!(channel = %self.name, update = update_id, error = %e, "cannot mark an update done");
        }
    }

    /// Sends a short notice; failures are logged (there is nobody else to tell).
    async fn notify(&self, chat: &ChatId, text: &str) {
        if let Err(e) = self.channel.send(chat, &Document::plain(text)).await {
            tracing::warn!(channel = %self.name, chat = %chat, error = %e, "cannot send a notice");
        }
    }

    async fn control(&self, inbound: Inbound) {
        if !self.channel.allows(&inbound.user) {
            self.refuse(&inbound).await;
            return;
        }
        match inbound.kind {
            InboundKind::Decision { approval_id, approve, callback_id } => {
                let notice = self.decide(&inbound.user, &approval_id, approve);
                if let Err(e) = self.channel.acknowledge(&callback_id, &notice).await {
                    tracing::warn!(channel = %self.name, error = %e, "cannot acknowledge a button press");
                }
            }
            InboundKind::Answer { elicitation_id, step, code, callback_id } => {
                let input = Input::Press { id: &elicitation_id, step, code: &code };
                let notice = self.answer_question(&inbound.chat, &inbound.user, input).await;
                if let Err(e) = self.channel.acknowledge(&callback_id, &notice).await {
                    tracing::warn!(channel = %self.name, error = %e, "cannot acknowledge a button press");
                }
            }
            InboundKind::Message { ref text, .. } => {
                if self.awaits_reply(&inbound) {
                    self.answer_question(&inbound.chat, &inbound.user, Input::Reply(text)).await;
                } else {
                    // The question closed (answered elsewhere, timed out) after this message
                    // was taken for its answer: say so rather than lose it silently.
                    let notice = format!(
                        "The question was already closed when “{}” arrived; send it again if it was meant for me.",
                        excerpt(text)
                    );
                    self.notify(&inbound.chat, &notice).await;
                }
            }
            _ => {
                let running = lock(&self.running).get(&inbound.chat).cloned();
                let notice = match running {
                    Some(turn) if turn.user == inbound.user => {
                        turn.cancel.cancel();
                        "⏹ Stopping…"
                    }
                    Some(_) => "Only the person whose request is running can stop it.",
                    None => "Nothing is running.",
                };
                self.notify(&inbound.chat, notice).await;
            }
        }
    }

    /// Answers a pending approval from a button press; returns the notice for the presser.
    fn decide(&self, user: &UserId, approval_id: &ApprovalId, approve: bool) -> String {
        let Some(pending) = lock(&self.pending).get(approval_id).cloned() else {
            return "This confirmation is no longer pending.".into();
        };
        if &pending.user != user {
            let who = pending.user_name.unwrap_or_else(|| "the person who asked".into());
            return format!("Only {who} can answer this.");
        }
        let reason = (!approve).then(|| format!("denied in {} by the user", self.name));
        match self.approvals.resolve(approval_id, approve, reason) {
            Ok(()) if approve => "Approved".into(),
            Ok(()) => "Denied".into(),
            Err(_) => "This confirmation is no longer pending.".into(),
        }
    }

    /// One polite refusal per person, ever; then silence (button presses are acknowledged
    /// without a word so their spinner stops).
    async fn refuse(&self, inbound: &Inbound) {
        if let InboundKind::Decision { callback_id, .. } = &inbound.kind
            && let Err(e) = self.channel.acknowledge(callback_id, "").await
        {
            tracing::debug!(error = %e, "cannot acknowledge a refused button press");
        }
        let key = format!("refused:{}", inbound.user);
        match self.agent.store().channels().insert_value(&self.name, &key, &tackle_store::now_ms()).await {
            Ok(true) => {
                tracing::info!(channel = %self.name, user = %inbound.user, "refused a user who is not allowed");
                let notice = format!(
                    "Sorry, this bot only talks to the people its owner allowed. Your user id is {}: ask the owner to \
                     add it to allowed_users in [channels.{}] if you should have access.",
                    inbound.user, self.name
                );
                self.notify(&inbound.chat, &notice).await;
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "cannot record a refusal"),
        }
    }

    async fn handle(self: &Arc<Self>, work: Work) -> Result<(), ChannelError> {
        let Work { update_id, inbound } = work;
        match &inbound.kind {
            InboundKind::Message { text, attachments } => {
                let message = self.with_attachments(update_id, &inbound, text, attachments).await?;
                self.turn(&inbound, message).await
            }
            InboundKind::Command { name, .. } => self.command(&inbound, name).await,
            InboundKind::Unsupported { what } => {
                let notice = format!("I cannot read {what}; send text, photos or files.");
                self.notify(&inbound.chat, &notice).await;
                Ok(())
            }
            InboundKind::Decision { .. } | InboundKind::Answer { .. } => Ok(()),
        }
    }

    async fn command(&self, inbound: &Inbound, name: &str) -> Result<(), ChannelError> {
        let text = match name {
            "start" | "help" => {
                let hello = inbound.user_name.as_deref().map(|n| format!("Hi {n}! ")).unwrap_or_default();
                format!(
                    "{hello}I am a Tackle agent: send me a task and I will work on it with my tools.\n\n{HELP}"
                )
            }
            "new" => {
                let session = self.new_session(inbound).await?;
                format!("🆕 New session {} started; the earlier one stays stored.", short_id(session.id()))
            }
            "compact" => match self.existing_session(inbound).await? {
                None => "Nothing to compact yet.".to_owned(),
                Some(mut session) => {
                    let r = session.compact_now(&EventSink::discard()).await?;
                    format!(
                        "🗜 Compacted the conversation: {} → {} tokens, {} → {} messages ({}). Nothing is lost: the \
                         originals stay stored.",
                        r.tokens_before,
                        r.tokens_after,
                        r.messages_before,
                        r.messages_after,
                        r.strategies.join(", ")
                    )
                }
            },
            "context" => {
                let mut session = self.session(inbound).await?;
                let r = session.context_report();
                format!(
                    "📊 Context: {} of {} tokens used ({:.1}%), {} left after {} reserved for the answer.\nSystem {}, \
                     skills {}, tools {}, conversation {}.",
                    r.used,
                    r.window,
                    r.percent,
                    r.remaining,
                    r.reserved_output,
                    r.system,
                    r.skills,
                    r.tools,
                    r.conversation
                )
            }
            "tools" => {
                let names = self.agent.catalog().names();
                format!("🧰 {} tools: {}", names.len(), names.join(", "))
            }
            other => format!("Unknown command /{other}.\n\n{HELP}"),
        };
        self.notify(&inbound.chat, &text).await;
        Ok(())
    }

    /// The person's session in this chat, created on first use.
    async fn session(&self, inbound: &Inbound) -> Result<Session, ChannelError> {
        match self.existing_session(inbound).await? {
            Some(s) => Ok(s),
            None => self.new_session(inbound).await,
        }
    }

    async fn existing_session(&self, inbound: &Inbound) -> Result<Option<Session>, ChannelError> {
        let store = self.agent.store();
        let Some(id) = store.channels().session(&self.name, &inbound.chat.0, &inbound.user.0).await? else {
            return Ok(None);
        };
        match self.agent.open_session(&id).await {
            Ok(s) => Ok(Some(s)),
            Err(tackle_agent::AgentError::Store(tackle_store::StoreError::NotFound { .. })) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn new_session(&self, inbound: &Inbound) -> Result<Session, ChannelError> {
        let session = self
            .agent
            .create_session(NewSessionOptions {
                title: None,
                workspace: self.options.workspace.clone(),
                owner: Some(format!("{}:{}", self.name, inbound.user)),
                history: Vec::new(),
            })
            .await?;
        self.agent
            .store()
            .channels()
            .set_session(&self.name, &inbound.chat.0, &inbound.user.0, session.id())
            .await?;
        tracing::info!(channel = %self.name, chat = %inbound.chat, user = %inbound.user, session = %session.id(), "new channel session");
        Ok(session)
    }

    /// The message for the model: the text, then a line per attachment saying where it was
    /// saved (or why it could not be).
    async fn with_attachments(
        &self,
        update_id: i64,
        inbound: &Inbound,
        text: &str,
        attachments: &[Attachment],
    ) -> Result<String, ChannelError> {
        if attachments.is_empty() {
            return Ok(text.to_owned());
        }
        let relative = self.options.uploads_dir.join(&self.name).join(safe_name(&inbound.chat.0));
        let dir = self.options.workspace.join(&relative);
        tokio::fs::create_dir_all(&dir).await?;
        let mut lines = Vec::new();
        if !text.trim().is_empty() {
            lines.push(text.to_owned());
        }
        for (i, a) in attachments.iter().enumerate() {
            let file =
                format!("{update_id}-{i}-{}", safe_name(a.name.as_deref().unwrap_or(&default_name(a))));
            let shown = relative.join(&file);
            let what =
                a.mime.as_deref().map(|m| format!("{}, {m}", a.kind)).unwrap_or_else(|| a.kind.clone());
            let line = match self.channel.download(a, &dir.join(&file), self.options.max_upload_bytes).await {
                Ok(bytes) => format!(
                    "[attachment: {what}, {bytes} bytes, saved in the workspace as {}]",
                    shown.display()
                ),
                Err(e) => {
                    tracing::warn!(channel = %self.name, error = %e, "an attachment could not be downloaded");
                    format!("[attachment: {what} that could not be downloaded: {e}]")
                }
            };
            lines.push(line);
        }
        Ok(lines.join("\n\n"))
    }

    async fn turn(self: &Arc<Self>, inbound: &Inbound, message: String) -> Result<(), ChannelError> {
        let mut session = self.session(inbound).await?;
        let cancel = self.cancel_turns.child_token();
        let chat = inbound.chat.clone();
        lock(&self.running)
            .insert(chat.clone(), RunningTurn { user: inbound.user.clone(), cancel: cancel.clone() });
        let _running = RunningGuard { hub: self, chat: chat.clone() };
        let (tx, rx) = mpsc::unbounded_channel();
        let sink = EventSink::new(move |e| {
            let _ = tx.send(e);
        });
        let done = CancellationToken::new();
        let renderer = tokio::spawn(self.clone().render(inbound.clone(), rx, done.clone()));
        let outcome = session.run_turn(TurnInput::new(message), &sink, &cancel).await;
        done.cancel();
        let shown = match renderer.await {
            Ok(shown) => shown,
            Err(e) => {
                tracing::warn!(error = %e, "the renderer of a turn failed");
                Shown::new(self.channel.max_message_len())
            }
        };
        self.finish_turn(&chat, shown, outcome).await;
        Ok(())
    }

    /// Shows a turn while it runs: the live message at a bounded rate, confirmations with
    /// buttons (and their timeouts), the typing indicator.
    async fn render(
        self: Arc<Self>,
        inbound: Inbound,
        mut rx: mpsc::UnboundedReceiver<AgentEvent>,
        done: CancellationToken,
    ) -> Shown {
        let chat = inbound.chat.clone();
        let interval = self.channel.edit_interval();
        let mut shown = Shown::new(self.channel.max_message_len());
        let mut dirty = false;
        let mut typing = tokio::time::interval(TYPING_EVERY);
        let mut typing_call: Option<tokio::task::JoinHandle<()>> = None;
        loop {
            tokio::select! {
                biased;
                () = tokio::time::sleep_until(shown.next_edit(interval)), if dirty => {
                    self.flush(&chat, &mut shown).await;
                    dirty = false;
                }
                event = rx.recv() => match event {
                    Some(e) => dirty |= self.on_event(&inbound, &mut shown, e).await,
                    None => break,
                },
                () = done.cancelled() => {
                    while let Ok(e) = rx.try_recv() {
                        self.on_event(&inbound, &mut shown, e).await;
                    }
                    break;
                }
                _ = typing.tick() => {
                    // Beside the turn, never in its way: one indicator call at a time, not awaited.
                    if typing_call.as_ref().is_none_or(|t| t.is_finished()) {
                        let (channel, chat) = (self.channel.clone(), chat.clone());
                        typing_call = Some(tokio::spawn(async move {
                            if let Err(e) = channel.typing(&chat).await {
                                tracing::debug!(error = %e, "typing indicator failed");
                            }
                        }));
                    }
                }
            }
        }
        shown
    }

    /// Folds one event in; true when the live message needs an edit.
    async fn on_event(self: &Arc<Self>, inbound: &Inbound, shown: &mut Shown, event: AgentEvent) -> bool {
        let changed = shown.view.apply(&event);
        match event {
            AgentEvent::ApprovalRequested { approval_id, tool, args, .. } => {
                shown.asked.push(approval_id.clone());
                lock(&self.pending).insert(
                    approval_id.clone(),
                    PendingApproval { user: inbound.user.clone(), user_name: inbound.user_name.clone() },
                );
                let mut text = Document::default();
                text.push(Block::Paragraph(vec![
                    Span::bold("Confirm: "),
                    Span::code(tool_label(&tool, &args)),
                ]));
                text.push(Block::Code { lang: Some("json".into()), text: pretty(&args) });
                text.push(Block::Paragraph(vec![Span::italic(format!(
                    "Denied automatically if not answered within {}.",
                    human(self.options.approval_timeout)
                ))]));
                let text = text.split(self.channel.max_message_len()).into_iter().next().unwrap_or_default();
                match self
                    .channel
                    .confirm(&inbound.chat, &Confirmation { approval_id: approval_id.clone(), text })
                    .await
                {
                    Ok(message) => {
                        shown.confirmations.insert(approval_id.clone(), (message, tool_label(&tool, &args)));
                    }
                    Err(e) => tracing::warn!(channel = %self.name, error = %e, "cannot send a confirmation"),
                }
                self.spawn_timeout(approval_id);
            }
            AgentEvent::ElicitationRequested {
                elicitation_id, server, message, mode, schema, url, ..
            } if self.elicitations.is_some() => {
                let dialog = match (mode.as_str(), schema, url) {
                    ("url", _, Some(url)) => Dialog::url(elicitation_id, &server, &message, &url),
                    (_, Some(schema), _) => Dialog::form(elicitation_id, &server, &message, schema),
                    _ => return changed,
                };
                self.open_question(inbound, dialog).await;
            }
            AgentEvent::ElicitationResolved { elicitation_id, action } => {
                let closing = match action.as_str() {
                    "accept" => "✅ Answered elsewhere.",
                    "cancel" => "⏹ Cancelled.",
                    _ => "🚫 Declined.",
                };
                self.close_question(&inbound.chat, &elicitation_id, closing, None).await;
            }
            AgentEvent::ApprovalResolved { approval_id, approved, reason } => {
                lock(&self.pending).remove(&approval_id);
                if let Some((message, label)) = shown.confirmations.remove(&approval_id) {
                    let text = if approved {
                        format!("✅ Approved: {label}")
                    } else {
                        format!("❌ Denied: {label} ({})", reason.unwrap_or_else(|| "no reason given".into()))
                    };
                    self.edit(&message, &Document::plain(&text)).await;
                }
            }
            _ => {}
        }
        changed
    }

    /// Denies `approval_id` if it is still pending after the timeout; the model sees why.
    fn spawn_timeout(self: &Arc<Self>, approval_id: ApprovalId) {
        let hub = self.clone();
        let timeout = self.options.approval_timeout;
        // Not tracked: a stop must not wait for it; it ends with the hub.
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(timeout) => {}
                () = hub.finished.cancelled() => return,
            }
            if hub.approvals.get(&approval_id).is_some() {
                let reason = format!(
                    "nobody answered the confirmation in {} within {}, so the call was denied; ask the user before \
                     trying it again",
                    hub.name,
                    human(timeout)
                );
                tracing::info!(channel = %hub.name, approval = %approval_id, "confirmation timed out: denied");
                let _ = hub.approvals.resolve(&approval_id, false, Some(reason));
            }
        });
    }

    /// Whether `inbound` (a message) answers the question shown in its chat: the person whose
    /// turn asked writes while it is open (a form's field takes the text; a link says to press
    /// Done).
    fn awaits_reply(&self, inbound: &Inbound) -> bool {
        lock(&self.questions)
            .get(&inbound.chat)
            .and_then(|open| open.first())
            .is_some_and(|q| q.user == inbound.user)
    }

    /// Queues a question in the turn's chat (shown at once when no other is), with its timeout.
    async fn open_question(self: &Arc<Self>, inbound: &Inbound, dialog: Dialog) {
        let id = dialog.id().clone();
        let first = {
            let mut questions = lock(&self.questions);
            let open = questions.entry(inbound.chat.clone()).or_default();
            open.push(OpenQuestion {
                dialog,
                user: inbound.user.clone(),
                user_name: inbound.user_name.clone(),
                message: None,
            });
            open.len() == 1
        };
        if first {
            self.show_question(&inbound.chat, None).await;
        }
        let hub = self.clone();
        let chat = inbound.chat.clone();
        let timeout = self.options.question_timeout;
        // Not tracked: a stop must not wait for it; it ends with the hub.
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(timeout) => {}
                () = hub.finished.cancelled() => return,
            }
            let reason = format!(
                "nobody answered the question in {} within {}, so it was declined; ask the user before trying again",
                hub.name,
                human(timeout)
            );
            let closing = format!("⌛ Not answered within {}: declined.", human(timeout));
            if hub.close_question(&chat, &id, &closing, Some(ElicitationAnswer::decline(reason))).await {
                tracing::info!(channel = %hub.name, elicitation = %id, "question timed out: declined");
            }
        });
    }

    /// Sends the current step of the chat's first question (after `notice`, when given).
    async fn show_question(&self, chat: &ChatId, notice: Option<&str>) {
        let Some(mut question) =
            lock(&self.questions).get(chat).and_then(|open| open.first()).map(|q| q.dialog.question())
        else {
            return;
        };
        if let Some(notice) = notice {
            question.text.blocks.insert(0, Block::Paragraph(vec![Span::plain(format!("⚠️ {notice}"))]));
        }
        match self.channel.ask(chat, &question).await {
            Ok(message) => {
                let mut questions = lock(&self.questions);
                if let Some(q) = questions.get_mut(chat).and_then(|open| open.first_mut())
                    && q.dialog.id() == &question.elicitation_id
                {
                    q.message = Some(message);
                }
            }
            Err(e) => tracing::warn!(channel = %self.name, error = %e, "cannot ask a question"),
        }
    }

    /// Feeds a button press or a reply to the chat's shown question; returns the notice for the
    /// person (a button press's acknowledgement).
    async fn answer_question(&self, chat: &ChatId, user: &UserId, input: Input<'_>) -> String {
        let (step, id, message, summary, asked) = {
            let mut questions = lock(&self.questions);
            let Some(q) = questions.get_mut(chat).and_then(|open| open.first_mut()) else {
                return "This question is no longer open.".into();
            };
            let step = match input {
                Input::Press { id, .. } if id != q.dialog.id() => {
                    return "This question is no longer open.".into();
                }
                _ if &q.user != user => {
                    let who = q.user_name.clone().unwrap_or_else(|| "the person who asked".into());
                    return format!("Only {who} can answer this.");
                }
                Input::Press { step, code, .. } => q.dialog.press_at(step, code),
                Input::Reply(text) => q.dialog.reply(text),
            };
            let asked = matches!(step, Step::Retry { .. }).then(|| q.dialog.question().text);
            (step, q.dialog.id().clone(), q.message.clone(), q.dialog.summary(), asked)
        };
        match step {
            Step::Ignored => "This step was already answered.".into(),
            Step::Retry { reason } => {
                // The step is asked again below; its earlier message keeps the text, not the buttons.
                if let (Some(message), Some(asked)) = (&message, &asked) {
                    self.edit(message, asked).await;
                }
                self.show_question(chat, Some(&format!("{reason}. Try again."))).await;
                reason
            }
            Step::Next(taken) => {
                if let Some(message) = &message {
                    self.edit(message, &Document::plain(&format!("✔ {taken}"))).await;
                }
                self.show_question(chat, None).await;
                "Got it".into()
            }
            Step::Done(answer) => {
                let closing = match &answer {
                    ElicitationAnswer::Accept { .. } if summary.is_empty() => "✅ Sent.".to_owned(),
                    ElicitationAnswer::Accept { .. } => format!("✅ Sent:\n{summary}"),
                    ElicitationAnswer::Decline { reason: Some(r) } => format!("🚫 Declined: {r}"),
                    ElicitationAnswer::Decline { reason: None } => "🚫 Declined.".to_owned(),
                    ElicitationAnswer::Cancel => "⏹ Cancelled.".to_owned(),
                };
                let notice = match &answer {
                    ElicitationAnswer::Accept { .. } => "Sent",
                    ElicitationAnswer::Decline { .. } => "Declined",
                    ElicitationAnswer::Cancel => "Cancelled",
                };
                self.close_question(chat, &id, &closing, Some(answer)).await;
                notice.into()
            }
        }
    }

    /// Closes question `id` of `chat` if it is still open: answers it (when `answer` is given),
    /// shows `closing` in place of its step and asks the chat's next question. False when it was
    /// not open (answered already).
    async fn close_question(
        &self,
        chat: &ChatId,
        id: &ElicitationId,
        closing: &str,
        answer: Option<ElicitationAnswer>,
    ) -> bool {
        let (closed, was_first) = {
            let mut questions = lock(&self.questions);
            let Some(open) = questions.get_mut(chat) else { return false };
            let Some(at) = open.iter().position(|q| q.dialog.id() == id) else { return false };
            let closed = open.remove(at);
            if open.is_empty() {
                questions.remove(chat);
            }
            (closed, at == 0)
        };
        if let (Some(answer), Some(queue)) = (answer, &self.elicitations)
            && let Err(e) = queue.answer(id, answer)
        {
            tracing::info!(channel = %self.name, error = %e, "a question was answered elsewhere first");
        }
        if let Some(message) = &closed.message {
            self.edit(message, &Document::plain(closing)).await;
        }
        if was_first {
            self.show_question(chat, None).await;
        }
        true
    }

    async fn flush(&self, chat: &ChatId, shown: &mut Shown) {
        let doc = shown.view.render();
        if doc.is_blank() || shown.last.as_ref() == Some(&doc) {
            return;
        }
        match &shown.live {
            Some(message) => self.edit(message, &doc).await,
            None => match self.channel.send(chat, &doc).await {
                Ok(mut sent) if !sent.is_empty() => shown.live = Some(sent.remove(0)),
                Ok(_) => {}
                Err(e) => tracing::warn!(channel = %self.name, error = %e, "cannot send the live message"),
            },
        }
        // Counted from when the service answered, so it also sees the edits an interval apart.
        shown.last_edit = Some(Instant::now());
        shown.last = Some(doc);
    }

    async fn edit(&self, message: &MessageRef, doc: &Document) {
        if let Err(e) = self.channel.edit(message, doc).await {
            tracing::warn!(channel = %self.name, error = %e, "cannot edit a message");
        }
    }

    /// The end of a turn: the status lines stay (or the live message becomes the answer when no
    /// tool ran), the answer follows, split as the channel needs, then how it ended if not well.
    async fn finish_turn(
        &self,
        chat: &ChatId,
        mut shown: Shown,
        outcome: Result<tackle_agent::TurnOutcome, tackle_agent::AgentError>,
    ) {
        {
            let mut pending = lock(&self.pending);
            for id in &shown.asked {
                pending.remove(id);
            }
        }
        let left = lock(&self.questions).remove(chat).unwrap_or_default();
        for question in left {
            if let Some(message) = &question.message {
                self.edit(message, &Document::plain("⏹ No longer needed (the turn ended).")).await;
            }
        }
        for (message, label) in std::mem::take(&mut shown.confirmations).into_values() {
            self.edit(&message, &Document::plain(&format!("⏹ No longer needed: {label} (the turn ended)")))
                .await;
        }
        let (answer, ending) = match outcome {
            Ok(o) => {
                let ending = match o.end {
                    TurnEnd::Completed => None,
                    TurnEnd::MaxSteps => Some(format!("⚠️ Stopped at the step limit ({} steps).", o.steps)),
                    TurnEnd::Cancelled => Some("⏹ Stopped.".to_owned()),
                    TurnEnd::Failed => Some(format!(
                        "⚠️ The turn failed: {}",
                        o.error.map_or_else(|| "no reason given".to_owned(), |e| e.to_string())
                    )),
                };
                (Document::markdown(&o.text), ending)
            }
            Err(e) => (Document::default(), Some(format!("⚠️ The turn failed: {e}"))),
        };
        let limit = self.channel.max_message_len();
        let mut parts = answer.split(limit);
        // The bounded edit rate holds for the last edit too.
        tokio::time::sleep_until(shown.next_edit(self.channel.edit_interval())).await;
        if shown.view.has_tools() {
            let status = shown.view.status();
            if let Some(live) = &shown.live {
                if shown.last.as_ref() != Some(&status) {
                    self.edit(live, &status).await;
                }
            } else if let Err(e) = self.channel.send(chat, &status).await {
                tracing::warn!(channel = %self.name, error = %e, "cannot send the tool status");
            }
        } else if let Some(live) = &shown.live {
            // The live message showed the answer streaming: it becomes its first part.
            if parts.is_empty() {
                let text = Document::plain(ending.as_deref().unwrap_or("(no answer)"));
                self.edit(live, &text).await;
                return;
            }
            let first = parts.remove(0);
            if shown.last.as_ref() != Some(&first) {
                self.edit(live, &first).await;
            }
        }
        for part in parts {
            if let Err(e) = self.channel.send(chat, &part).await {
                tracing::warn!(channel = %self.name, error = %e, "cannot send part of an answer");
            }
        }
        if let Some(ending) = ending {
            self.notify(chat, &ending).await;
        }
    }
}

/// What a turn showed: its view, the live message, what it last displayed, open confirmations.
struct Shown {
    view: LiveView,
    /// When the last send or edit of the live message was answered (the next waits an interval).
    last_edit: Option<Instant>,
    live: Option<MessageRef>,
    last: Option<Document>,
    confirmations: HashMap<ApprovalId, (MessageRef, String)>,
    /// Every approval asked in this turn (forgotten when the turn ends, answered or not).
    asked: Vec<ApprovalId>,
}

impl Shown {
    /// When the live message may be edited next.
    fn next_edit(&self, interval: Duration) -> Instant {
        self.last_edit.map_or_else(Instant::now, |t| t + interval)
    }

    fn new(limit: usize) -> Self {
        Self {
            view: LiveView::new(limit),
            last_edit: None,
            live: None,
            last: None,
            confirmations: HashMap::new(),
            asked: Vec::new(),
        }
    }
}

/// Marks a chat free when its turn ends, however it ends.
struct RunningGuard<'a> {
    hub: &'a Hub,
    chat: ChatId,
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        lock(&self.hub.running).remove(&self.chat);
    }
}

const HELP: &str = "Commands:\n/new: start a new session\n/stop: stop what I am doing\n/compact: compact the \
                    conversation\n/context: how full the context window is\n/tools: the tools I can use\n/help: this list";

fn excerpt(text: &str) -> String {
    let t: String = text.chars().take(60).collect();
    if t.len() < text.len() { format!("{t}…") } else { t }
}

fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

fn pretty(args: &serde_json::Value) -> String {
    serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string())
}

/// `300 s` as `5 minutes`.
fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s >= 120 && s % 60 == 0 => format!("{} minutes", s / 60),
        1 => "1 second".into(),
        s => format!("{s} seconds"),
    }
}

/// A file or directory name made safe: letters, digits, `.`, `_`, `-`; no leading dot.
fn safe_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' })
        .take(80)
        .collect();
    let trimmed = cleaned.trim_start_matches('.');
    if trimmed.is_empty() { "file".into() } else { trimmed.to_owned() }
}

fn default_name(a: &Attachment) -> String {
    let ext = match a.mime.as_deref() {
        Some("image/jpeg") => ".jpg",
        Some("image/png") => ".png",
        Some("audio/ogg") => ".ogg",
        Some("video/mp4") => ".mp4",
        Some("application/pdf") => ".pdf",
        _ if a.kind == "photo" => ".jpg",
        _ => "",
    };
    format!("{}{ext}", a.kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_safe() {
        assert_eq!(safe_name("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(safe_name(".bashrc"), "bashrc");
        assert_eq!(safe_name("-100123"), "-100123");
        assert_eq!(safe_name("réport 1.pdf"), "r_port_1.pdf");
        assert_eq!(safe_name(""), "file");
        assert_eq!(human(Duration::from_secs(300)), "5 minutes");
        assert_eq!(human(Duration::from_secs(2)), "2 seconds");
    }
}

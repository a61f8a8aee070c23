//! [`ChannelRegistry`]: the channels a server runs, started and stopped with it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tackle_agent::Agent;
use tackle_tools::{ApprovalQueue, ElicitationQueue};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::hub::{Hub, HubOptions};
use crate::{Channel, ChannelError, ChannelStatus, ChannelsConfig, Inbox};

/// The channels of one agent. Each person in each chat talks to their own stored session
/// (`/new` starts a fresh one); a chat runs one turn at a time and queues what arrives meanwhile;
/// every update is stored before it is acknowledged and handled at most once, across restarts.
///
/// Build it with [`ChannelRegistry::builder`], [`start`](Self::start) it with the server, serve
/// its [`routes`](Self::routes) (webhooks), and [`stop`](Self::stop) it before the store closes.
/// The agent's executor must ask `approvals` for confirmations: the registry answers them from
/// the chat's buttons.
#[derive(Clone)]
pub struct ChannelRegistry {
    inner: Arc<RegistryInner>,
}

struct RegistryInner {
    hubs: Vec<Arc<Hub>>,
    receiving: CancellationToken,
    tasks: TaskTracker,
    started: AtomicBool,
}

impl std::fmt::Debug for ChannelRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.inner.hubs.iter().map(|h| h.name()).collect();
        f.debug_struct("ChannelRegistry").field("channels", &names).finish()
    }
}

/// Builds a [`ChannelRegistry`].
pub struct ChannelRegistryBuilder {
    agent: Agent,
    approvals: ApprovalQueue,
    elicitations: Option<ElicitationQueue>,
    workspace: PathBuf,
    config: ChannelsConfig,
    channels: Vec<Arc<dyn Channel>>,
}

impl ChannelRegistryBuilder {
    /// Generic settings (`[channels]`: approval timeout, uploads); channels are added with
    /// [`channel`](Self::channel).
    pub fn config(mut self, config: ChannelsConfig) -> Self {
        self.config = config;
        self
    }

    /// Asks the questions tools ask in the chats' turns (MCP elicitation): `queue` must be where
    /// the agent's elicitor keeps them (the agent's [`tackle_tools::Elicitor`] is `queue`, or
    /// wraps it). Without it, questions are left to the agent's elicitor alone.
    pub fn elicitations(mut self, queue: ElicitationQueue) -> Self {
        self.elicitations = Some(queue);
        self
    }

    /// Adds a channel.
    pub fn channel(mut self, channel: Arc<dyn Channel>) -> Self {
        self.channels.push(channel);
        self
    }

    /// The registry; fails when two channels share a name.
    pub fn build(self) -> Result<ChannelRegistry, ChannelError> {
        let options = HubOptions {
            workspace: self.workspace,
            approval_timeout: Duration::from_secs(self.config.approval_timeout_secs.max(1)),
            question_timeout: Duration::from_secs(self.config.question_timeout_secs.max(1)),
            uploads_dir: self.config.uploads_dir,
            max_upload_bytes: self.config.max_upload_bytes,
            max_queued: self.config.max_queued.max(1),
        };
        let mut hubs: Vec<Arc<Hub>> = Vec::new();
        for channel in self.channels {
            if hubs.iter().any(|h| h.name() == channel.name()) {
                return Err(ChannelError::Config(format!("two channels are named {:?}", channel.name())));
            }
            hubs.push(Arc::new(Hub::new(
                channel,
                self.agent.clone(),
                self.approvals.clone(),
                self.elicitations.clone(),
                options.clone(),
            )));
        }
        Ok(ChannelRegistry {
            inner: Arc::new(RegistryInner {
                hubs,
                receiving: CancellationToken::new(),
                tasks: TaskTracker::new(),
                started: AtomicBool::new(false),
            }),
        })
    }
}

impl ChannelRegistry {
    /// A builder for channels of `agent`, whose sessions work in `workspace`.
    pub fn builder(agent: Agent, approvals: ApprovalQueue, workspace: PathBuf) -> ChannelRegistryBuilder {
        ChannelRegistryBuilder {
            agent,
            approvals,
            elicitations: None,
            workspace,
            config: ChannelsConfig::default(),
            channels: Vec::new(),
        }
    }

    /// True when no channel is configured.
    pub fn is_empty(&self) -> bool {
        self.inner.hubs.is_empty()
    }

    /// Connects every channel (an error stops the start), handles what the last process left
    /// in the inbox, then receives in the background.
    pub async fn start(&self) -> Result<(), ChannelError> {
        if self.inner.started.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        for hub in &self.inner.hubs {
            hub.channel.connect().await?;
        }
        for hub in &self.inner.hubs {
            let (tx, mut rx) = mpsc::unbounded_channel();
            let inbox = Inbox::new(hub.name().to_owned(), hub_store(hub), tx);
            hub.recover().await?;
            let dispatcher = hub.clone();
            self.inner.tasks.spawn(async move {
                loop {
                    tokio::select! {
                        () = dispatcher.finished.cancelled() => break,
                        item = rx.recv() => match item {
                            Some(item) => dispatcher.deliver(item).await,
                            None => break,
                        },
                    }
                }
            });
            let receiver = hub.clone();
            let stop = self.inner.receiving.child_token();
            self.inner.tasks.spawn(async move {
                if let Err(e) = receiver.channel.receive(inbox, stop).await {
                    tracing::error!(channel = receiver.name(), error = %e, "the channel stopped receiving");
                }
            });
            tracing::info!(channel = hub.name(), "channel started");
        }
        Ok(())
    }

    /// Stops receiving at once; turns running now get `grace` to finish and are then cancelled
    /// (their tool calls are recorded as interrupted). Messages still queued stay in the store
    /// and are handled after the next start.
    pub async fn stop(&self, grace: Duration) {
        self.inner.receiving.cancel();
        for hub in &self.inner.hubs {
            hub.stopping.cancel();
        }
        for hub in &self.inner.hubs {
            hub.tasks.close();
            if tokio::time::timeout(grace, hub.tasks.wait()).await.is_err() {
                tracing::warn!(channel = hub.name(), "stop grace period over: cancelling running turns");
                hub.cancel_turns.cancel();
                hub.tasks.wait().await;
            }
            hub.finished.cancel();
        }
        self.inner.tasks.close();
        self.inner.tasks.wait().await;
        tracing::info!("channels stopped");
    }

    /// HTTP routes of the channels (webhooks), to serve outside bearer authentication.
    pub fn routes(&self) -> axum::Router {
        self.inner
            .hubs
            .iter()
            .filter_map(|h| h.channel.routes())
            .fold(axum::Router::new(), axum::Router::merge)
    }

    /// How each channel is doing.
    pub fn status(&self) -> Vec<ChannelStatus> {
        self.inner.hubs.iter().map(|h| h.channel.status()).collect()
    }
}

fn hub_store(hub: &Hub) -> tackle_store::Store {
    hub.store().clone()
}

//! [`Inbox`]: where a channel puts what it receives.

use tackle_store::{InboxItem, InboxState, NewInboxItem, Store};
use tokio::sync::mpsc;

use crate::{ChannelError, Received};

/// A channel's inbox: [`Inbox::accept`] stores received updates durably (with the next polling
/// offset, in one transaction) and hands the new ones to the registry. A channel acknowledges an
/// update to its service only after `accept` returned, so nothing received is lost, and a
/// redelivered update is recognised and dropped.
#[derive(Clone)]
pub struct Inbox {
    channel: String,
    store: Store,
    deliver: mpsc::UnboundedSender<InboxItem>,
}

impl std::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox").field("channel", &self.channel).finish()
    }
}

impl Inbox {
    pub(crate) fn new(channel: String, store: Store, deliver: mpsc::UnboundedSender<InboxItem>) -> Self {
        Self { channel, store, deliver }
    }

    /// Stores `received` (updates carrying nothing for the bot are only counted in the offset)
    /// and `next_offset`, then hands the updates not seen before to the registry. Returns how
    /// many were new.
    pub async fn accept(
        &self,
        received: &[Received],
        next_offset: Option<i64>,
    ) -> Result<usize, ChannelError> {
        let mut items = Vec::with_capacity(received.len());
        for r in received {
            if let Some(inbound) = &r.inbound {
                items.push(NewInboxItem {
                    update_id: r.update_id,
                    chat: inbound.chat.0.clone(),
                    payload: serde_json::to_value(inbound)
                        .map_err(|e| ChannelError::Config(e.to_string()))?,
                });
            }
        }
        let new = self.store.accept_channel_updates(&self.channel, &items, next_offset).await?;
        for item in items.into_iter().filter(|i| new.contains(&i.update_id)) {
            let item = InboxItem {
                channel: self.channel.clone(),
                update_id: item.update_id,
                chat: item.chat,
                payload: item.payload,
                state: InboxState::Queued,
                received_at: tackle_store::now_ms(),
            };
            // The registry is gone only while stopping: the item stays queued in the store and
            // is handled after the next start.
            let _ = self.deliver.send(item);
        }
        Ok(new.len())
    }

    /// The next update id to poll for, as stored.
    pub async fn offset(&self) -> Result<Option<i64>, ChannelError> {
        Ok(self.store.channel_offset(&self.channel).await?)
    }

    /// Records how the channel is doing, for `tackle channels status` in another process.
    pub async fn record_status(&self, status: &crate::ChannelStatus) -> Result<(), ChannelError> {
        Ok(self.store.set_channel_value(&self.channel, STATUS_KEY, status).await?)
    }
}

/// Key of a channel's recorded [`crate::ChannelStatus`] in the store.
pub const STATUS_KEY: &str = "status";

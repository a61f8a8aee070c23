//! [`Inbox`]: where a channel puts what it receives.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

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
    /// When handled updates were last pruned (ms since the epoch; 0: never).
    pruned_at: Arc<AtomicI64>,
}

/// How long a handled update is kept: long enough to recognise a redelivery (Telegram keeps an
/// unconfirmed update for 24 hours), so that the inbox does not grow without bound.
pub(crate) const KEEP_HANDLED_MS: i64 = 48 * 3600 * 1000;

/// How often handled updates are pruned, at most.
const PRUNE_EVERY_MS: i64 = 3600 * 1000;

impl std::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox").field("channel", &self.channel).finish()
    }
}

impl Inbox {
    pub(crate) fn new(channel: String, store: Store, deliver: mpsc::UnboundedSender<InboxItem>) -> Self {
        Self { channel, store, deliver, pruned_at: Arc::new(AtomicI64::new(0)) }
    }

    /// Deletes the updates handled more than [`KEEP_HANDLED_MS`] before `now_ms`, at most once
    /// every hour; returns how many went. Called by [`Inbox::accept`]: a channel that receives
    /// keeps its inbox bounded.
    pub(crate) async fn prune_if_due(&self, now_ms: i64) -> Result<u64, ChannelError> {
        let last = self.pruned_at.load(Ordering::Relaxed);
        if now_ms - last < PRUNE_EVERY_MS
            || self.pruned_at.compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed).is_err()
        {
            return Ok(0);
        }
        Ok(self.store.channels().prune_updates(&self.channel, now_ms - KEEP_HANDLED_MS).await?)
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
        let new = self.store.channels().accept_updates(&self.channel, &items, next_offset).await?;
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
        if let Err(e) = self.prune_if_due(tackle_store::now_ms()).await {
            tracing::warn!(channel = %self.channel, error = %e, "could not prune handled updates");
        }
        Ok(new.len())
    }

    /// The next update id to poll for, as stored.
    pub async fn offset(&self) -> Result<Option<i64>, ChannelError> {
        Ok(self.store.channels().offset(&self.channel).await?)
    }

    /// Records how the channel is doing, for `tackle channels status` in another process.
    pub async fn record_status(&self, status: &crate::ChannelStatus) -> Result<(), ChannelError> {
        Ok(self.store.channels().set_value(&self.channel, STATUS_KEY, status).await?)
    }
}

/// Key of a channel's recorded [`crate::ChannelStatus`] in the store.
pub const STATUS_KEY: &str = "status";

#[cfg(test)]
mod tests {
    use super::*;

    /// Handled updates go once older than [`KEEP_HANDLED_MS`] (a redelivery before is still
    /// recognised), queued ones never, and pruning runs at most once an hour.
    #[tokio::test]
    async fn handled_updates_are_pruned_after_the_redelivery_window() {
        let store = Store::open_in_memory().await.unwrap();
        let (tx, _rx) = mpsc::unbounded_channel();
        let inbox = Inbox::new("telegram".into(), store.clone(), tx);
        let item = |id: i64| NewInboxItem { update_id: id, chat: "c".into(), payload: serde_json::json!({}) };
        store.channels().accept_updates("telegram", &[item(1), item(2)], Some(3)).await.unwrap();
        store.channels().finish_update("telegram", 1).await.unwrap();
        let now = tackle_store::now_ms();
        assert_eq!(inbox.prune_if_due(now).await.unwrap(), 0, "kept within the window");
        let later = now + KEEP_HANDLED_MS + 1000;
        assert_eq!(inbox.prune_if_due(later).await.unwrap(), 1, "the handled update goes");
        store.channels().finish_update("telegram", 2).await.unwrap();
        let much_later = later + KEEP_HANDLED_MS;
        assert_eq!(inbox.prune_if_due(much_later).await.unwrap(), 1);
        assert_eq!(inbox.prune_if_due(much_later + 1).await.unwrap(), 0, "once an hour at most");
        let redelivered = store.channels().accept_updates("telegram", &[item(1)], Some(3)).await.unwrap();
        assert_eq!(redelivered, vec![1], "after the window an id is new again");
    }
}

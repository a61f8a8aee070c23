//! [`SharedElicitations`]: the elicitor of a server's agents. A question an MCP server asks in a
//! turn waits in the in-process [`ElicitationQueue`] (answered by this instance's routes, the web
//! page and the chat channels) and is recorded in the store, so every instance on the database
//! lists it and can answer it; an answer recorded elsewhere is picked up within [`crate::turns`]'s
//! poll interval.

use async_trait::async_trait;
use tackle_store::{Store, StoredElicitation};
use tackle_tools::{ElicitationAnswer, ElicitationKind, ElicitationQueue, ElicitationRequest, Elicitor};

use crate::turns::POLL;

/// Questions of a server's turns, shared through the store.
#[derive(Clone)]
pub struct SharedElicitations {
    queue: ElicitationQueue,
    store: Store,
}

impl SharedElicitations {
    /// Questions waiting in `queue` (the one given to [`crate::AppState::with_elicitations`]),
    /// shared through `store`.
    pub fn new(queue: ElicitationQueue, store: Store) -> Self {
        Self { queue, store }
    }
}

/// The stored form of a question.
pub(crate) fn stored(request: &ElicitationRequest) -> StoredElicitation {
    let (mode, schema, url) = match &request.kind {
        ElicitationKind::Form { schema } => ("form", Some(schema.clone()), None),
        ElicitationKind::Url { url } => ("url", None, Some(url.clone())),
    };
    StoredElicitation {
        id: request.id.to_string(),
        session_id: request.session_id.to_string(),
        call_id: request.call_id.to_string(),
        tool: request.tool.clone(),
        server: request.server.clone(),
        message: request.message.clone(),
        mode: mode.to_owned(),
        schema,
        url,
    }
}

#[async_trait]
impl Elicitor for SharedElicitations {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        let id = request.id.to_string();
        if let Err(e) = self.store.elicitations().put(&stored(&request)).await {
            tracing::warn!(error = %e, "cannot share a question; only this instance can answer it");
        }
        // Answered here (the queue), or on another instance (the store).
        let elsewhere = async {
            let mut tick = tokio::time::interval(POLL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                match self.store.elicitations().answer_of(&id).await {
                    Ok(Some(record)) => match serde_json::from_value::<ElicitationAnswer>(record.answer) {
                        Ok(answer) => return answer,
                        Err(e) => {
                            tracing::warn!(error = %e, "an answer recorded elsewhere is unreadable");
                            return ElicitationAnswer::decline("the answer could not be read");
                        }
                    },
                    Ok(None) => {}
                    Err(e) => tracing::warn!(error = %e, "cannot read answers to questions"),
                }
            }
        };
        let answer = tokio::select! {
            answer = self.queue.elicit(request) => answer,
            answer = elsewhere => answer,
        };
        if let Err(e) = self.store.elicitations().delete(&id).await {
            tracing::debug!(error = %e, "cannot forget an answered question");
        }
        answer
    }
}

//! Responses made through the server's OpenAI Responses endpoint, kept so a request can name a
//! previous one (`previous_response_id`) instead of resending the conversation.

use std::time::Duration;

use crate::db::DbRow;
use crate::messages::execute_all;
use crate::sql::{Query, Row};
use crate::writer::Placement;
use tackle_protocol::Message;

use crate::db::now_ms;
use crate::{Store, StoreError};

/// How long a stored response can be continued from (OpenAI keeps its own for 30 days).
pub const RESPONSE_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// Longest chain of responses followed back (a guard; real chains are much shorter).
const MAX_CHAIN: i64 = 10_000;

/// A response to keep.
#[derive(Debug, Clone)]
pub struct NewResponse<'a> {
    /// Its id (`resp_…`).
    pub id: &'a str,
    /// The user who made it; only they can continue from it.
    pub owner: &'a str,
    /// The response it continued from, which must be the same owner's.
    pub previous_id: Option<&'a str>,
    /// The session that ran it (agent mode).
    pub session_id: Option<&'a str>,
    /// What its request added to the conversation, then its answer.
    pub messages: &'a [Message],
    /// Its output items as the client saw them (each with an `id`), for `item_reference`.
    pub items: &'a [serde_json::Value],
}

/// A conversation rebuilt from a chain of responses.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseChain {
    /// Every message of the chain, oldest first.
    pub messages: Vec<Message>,
    /// The session of the last response, if it was run by the agent and the session exists.
    pub session_id: Option<String>,
}

/// Responses made through the server's Responses endpoint, kept for `previous_response_id`.
/// From [`Store::responses`]; a borrowed view of the store, free to copy.
#[derive(Debug, Clone, Copy)]
pub struct Responses<'s> {
    pub(crate) store: &'s Store,
}

impl Responses<'_> {
    /// Keeps a response for [`RESPONSE_TTL`], and removes responses whose time has passed.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use tackle_protocol::Message;
    /// use tackle_store::{NewResponse, Store};
    /// let store = Store::open_in_memory().await.unwrap();
    /// let first = [Message::user("hi"), Message::assistant("hello")];
    /// store.responses().put(NewResponse { id: "resp_1", owner: "ann", previous_id: None, session_id: None, messages: &first, items: &[] }).await.unwrap();
    /// let next = [Message::user("and?"), Message::assistant("that's all")];
    /// store.responses().put(NewResponse { id: "resp_2", owner: "ann", previous_id: Some("resp_1"), session_id: None, messages: &next, items: &[] }).await.unwrap();
    /// assert_eq!(store.responses().chain("resp_2", "ann").await.unwrap().messages.len(), 4);
    /// assert!(store.responses().chain("resp_2", "bob").await.is_err(), "other users see nothing");
    /// # });
    /// ```
    pub async fn put(self, response: NewResponse<'_>) -> Result<(), StoreError> {
        let now = now_ms();
        let ttl = i64::try_from(RESPONSE_TTL.as_millis()).unwrap_or(i64::MAX);
        let expire = Query::new("DELETE FROM responses WHERE expires_at <= $1").bind(now);
        let previous = response.previous_id.map(|previous| {
            (previous.to_owned(), Query::new("SELECT owner FROM responses WHERE id = $1").bind(previous))
        });
        let insert = Query::new(
            "INSERT INTO responses (id, owner, previous_id, session_id, messages, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(response.id)
        .bind(response.owner)
        .bind(response.previous_id)
        .bind(response.session_id)
        .bind(serde_json::to_string(response.messages)?)
        .bind(now)
        .bind(now.saturating_add(ttl));
        let items: Vec<Query> = response
            .items
            .iter()
            .filter_map(|item| Some((item.get("id")?.as_str()?, item)))
            .map(|(item_id, item)| {
                // An id seen before keeps its first item (ids are the server's, or the provider's).
                Query::new(
                    "INSERT INTO response_items (owner, id, response_id, item) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (owner, id) DO NOTHING",
                )
                .bind(response.owner)
                .bind(item_id)
                .bind(response.id)
                .bind(item.to_string())
            })
            .collect();
        let owner = response.owner.to_owned();
        self.store
            .db
            .transaction(Placement::InPlace, None, async move |conn| {
                conn.execute(&expire).await?;
                if let Some((previous, query)) = &previous {
                    let found = conn.fetch_optional(query, |r| r.try_get::<String>("owner")).await?;
                    if found.as_deref() != Some(owner.as_str()) {
                        return Err(StoreError::not_found("response", previous.as_str()));
                    }
                }
                conn.execute(&insert).await?;
                execute_all(conn, &items).await?;
                Ok(())
            })
            .await
    }

    /// The output item `id` of a response `owner` made that has not expired, as it was sent
    /// (what `{"type": "item_reference", "id"}` names); `NotFound` otherwise, other users' items
    /// included.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use tackle_protocol::Message;
    /// use tackle_store::{NewResponse, Store};
    /// let store = Store::open_in_memory().await.unwrap();
    /// let items = [serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant", "content": []})];
    /// let messages = [Message::user("hi"), Message::assistant("")];
    /// store.responses().put(NewResponse { id: "resp_1", owner: "ann", previous_id: None, session_id: None, messages: &messages, items: &items }).await.unwrap();
    /// assert_eq!(store.responses().item("msg_1", "ann").await.unwrap(), items[0]);
    /// assert!(store.responses().item("msg_1", "bob").await.is_err(), "other users see nothing");
    /// # });
    /// ```
    pub async fn item(self, id: &str, owner: &str) -> Result<serde_json::Value, StoreError> {
        let query = Query::new(
            "SELECT i.item FROM response_items i JOIN responses r ON r.id = i.response_id
             WHERE i.owner = $1 AND i.id = $2 AND r.expires_at > $3",
        )
        .bind(owner)
        .bind(id)
        .bind(now_ms());
        let item = self
            .store
            .db
            .read_optional(query, |r| Ok(serde_json::from_str(r.try_get::<&str>("item")?)?))
            .await?;
        item.ok_or_else(|| StoreError::not_found("response item", id))
    }

    /// The conversation up to and including response `id`, if `owner` made it and it has not
    /// expired; `NotFound` otherwise (other users' ids are not revealed).
    pub async fn chain(self, id: &str, owner: &str) -> Result<ResponseChain, StoreError> {
        let query = Query::new(
            "WITH RECURSIVE chain (id, previous_id, session_id, messages, depth) AS (
                 SELECT id, previous_id, session_id, messages, CAST(0 AS BIGINT) FROM responses
                 WHERE id = $1 AND owner = $2 AND expires_at > $3
                 UNION ALL
                 SELECT r.id, r.previous_id, r.session_id, r.messages, chain.depth + 1
                 FROM responses r JOIN chain ON r.id = chain.previous_id
                 WHERE r.owner = $2 AND r.expires_at > $3 AND chain.depth < $4
             )
             SELECT previous_id, session_id, messages, depth FROM chain ORDER BY depth DESC",
        )
        .bind(id)
        .bind(owner)
        .bind(now_ms())
        .bind(MAX_CHAIN);
        let rows = self.store.db.read_all(query, |r| ChainRow::read(r)).await?;
        let Some(head) = rows.last() else { return Err(StoreError::not_found("response", id)) };
        // The oldest row must start the conversation: a link that expired breaks the chain.
        if rows.first().is_some_and(|r| r.previous_id.is_some()) {
            return Err(StoreError::not_found("response", id));
        }
        let session_id = head.session_id.clone();
        let messages = rows.into_iter().flat_map(|r| r.messages).collect();
        Ok(ResponseChain { messages, session_id })
    }
}

/// One response of a chain.
struct ChainRow {
    previous_id: Option<String>,
    session_id: Option<String>,
    messages: Vec<Message>,
}

impl ChainRow {
    fn read(row: &dyn Row) -> Result<Self, StoreError> {
        Ok(Self {
            previous_id: row.try_get("previous_id")?,
            session_id: row.try_get("session_id")?,
            messages: serde_json::from_str(row.try_get::<&str>("messages")?)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NewSession;

    fn put<'a>(
        id: &'a str,
        owner: &'a str,
        previous: Option<&'a str>,
        messages: &'a [Message],
    ) -> NewResponse<'a> {
        NewResponse { id, owner, previous_id: previous, session_id: None, messages, items: &[] }
    }

    /// A fresh store of each backend: SQLite in memory, and a database on the PostgreSQL test
    /// server (`tackle_testkit::postgres`; skipped, or failed under `TACKLE_REQUIRE_PEERS`,
    /// without one).
    async fn stores() -> Vec<Store> {
        let mut stores = vec![Store::open_in_memory().await.unwrap()];
        if let Some(url) = tackle_testkit::peers::or_skip(tackle_testkit::postgres::fresh_database().await) {
            stores.push(Store::connect(&url).await.unwrap());
        }
        stores
    }

    #[tokio::test]
    async fn chains_follow_their_owner_and_sessions_are_optional() {
        for store in stores().await {
            let a = [Message::user("one"), Message::assistant("1")];
            let b = [Message::user("two"), Message::assistant("2")];
            store.responses().put(put("r1", "ann", None, &a)).await.unwrap();
            store.responses().put(put("r2", "ann", Some("r1"), &b)).await.unwrap();
            let chain = store.responses().chain("r2", "ann").await.unwrap();
            let texts: Vec<String> = chain.messages.iter().map(Message::text).collect();
            assert_eq!(texts, ["one", "1", "two", "2"]);
            assert_eq!(chain.session_id, None);
            // Another user can neither read the chain nor continue from it.
            assert!(matches!(
                store.responses().chain("r2", "bob").await,
                Err(StoreError::NotFound { what: "response", .. })
            ));
            let err = store.responses().put(put("r3", "bob", Some("r2"), &b)).await.unwrap_err();
            assert!(matches!(err, StoreError::NotFound { .. }), "{err}");
            assert!(store.responses().chain("nope", "ann").await.is_err());
            // Duplicate ids are refused.
            assert!(store.responses().put(put("r1", "ann", None, &a)).await.is_err());

            // An agent response names its session; deleting the session keeps the messages.
            let session = store
                .sessions()
                .create(NewSession { owner: "ann".into(), ..Default::default() })
                .await
                .unwrap();
            let r = NewResponse {
                id: "r4",
                owner: "ann",
                previous_id: Some("r2"),
                session_id: Some(&session.id),
                messages: &a,
                items: &[],
            };
            store.responses().put(r).await.unwrap();
            assert_eq!(
                store.responses().chain("r4", "ann").await.unwrap().session_id.as_deref(),
                Some(session.id.as_str())
            );
            store.sessions().delete(&session.id).await.unwrap();
            let chain = store.responses().chain("r4", "ann").await.unwrap();
            assert_eq!((chain.session_id, chain.messages.len()), (None, 6));
        }
    }

    #[tokio::test]
    async fn output_items_are_found_by_id_for_their_owner_until_the_response_expires() {
        for store in stores().await {
            let a = [Message::user("one"), Message::assistant("1")];
            let items = [
                serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant"}),
                serde_json::json!({"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "f"}),
                serde_json::json!({"type": "reasoning", "summary": []}),
            ];
            let r = NewResponse { items: &items, ..put("r1", "ann", None, &a) };
            store.responses().put(r).await.unwrap();
            assert_eq!(store.responses().item("msg_1", "ann").await.unwrap(), items[0]);
            assert_eq!(store.responses().item("fc_1", "ann").await.unwrap(), items[1]);
            for (id, owner) in [("msg_1", "bob"), ("nope", "ann")] {
                assert!(matches!(
                    store.responses().item(id, owner).await,
                    Err(StoreError::NotFound { what: "response item", .. })
                ));
            }
            // Another user's item of the same id is theirs alone.
            let other =
                [serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant", "by": "bob"})];
            store.responses().put(NewResponse { items: &other, ..put("r2", "bob", None, &a) }).await.unwrap();
            assert_eq!(store.responses().item("msg_1", "bob").await.unwrap(), other[0]);
            assert_eq!(store.responses().item("msg_1", "ann").await.unwrap(), items[0]);
            store
                .db
                .execute(None, Query::new("UPDATE responses SET expires_at = 0 WHERE id = 'r1'"))
                .await
                .unwrap();
            assert!(store.responses().item("msg_1", "ann").await.is_err(), "expired with its response");
            store.responses().put(put("r3", "ann", None, &a)).await.unwrap();
            let count = Query::new("SELECT COUNT(*) AS n FROM response_items");
            let left: i64 = store.db.read_one(count, |r| r.try_get("n")).await.unwrap();
            assert_eq!(left, 1, "the expired response's items were removed with it");
        }
    }

    #[tokio::test]
    async fn expired_responses_break_the_chain_and_are_removed() {
        for store in stores().await {
            let a = [Message::user("old")];
            store.responses().put(put("r1", "ann", None, &a)).await.unwrap();
            store.responses().put(put("r2", "ann", Some("r1"), &a)).await.unwrap();
            store
                .db
                .execute(None, Query::new("UPDATE responses SET expires_at = 0 WHERE id = 'r1'"))
                .await
                .unwrap();
            assert!(store.responses().chain("r2", "ann").await.is_err(), "the beginning expired");
            store.responses().put(put("r3", "ann", None, &a)).await.unwrap();
            let count = Query::new("SELECT COUNT(*) AS n FROM responses");
            let left: i64 = store.db.read_one(count, |r| r.try_get("n")).await.unwrap();
            assert_eq!(left, 1, "the expired row went, and its continuation with it");
        }
    }
}

//! Which tool call a server's question or progress belongs to.
//!
//! A server asks questions (`elicitation/create`) and reports progress while one of the
//! client's requests is in flight. Over Streamable HTTP the request arrives on the response
//! stream of the call that caused it (rmcp marks it with the originating request id); progress
//! carries the call's progress token. Over stdio there is no such mark: a question goes to the
//! only call in flight, or to the calls' common session when several are; when the calls belong
//! to different sessions nobody can tell who was asked, and the question is declined. With
//! revision 2026-07-28 questions come back inside the call's own result (`input_required`) and
//! need no routing at all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ProgressToken, RequestId};
use tackle_tools::ToolContext;

/// How long a question arriving before its call is registered waits for it.
const REGISTER_WAIT: Duration = Duration::from_secs(2);

/// A call in flight: the tool context its questions and progress go to.
#[derive(Clone)]
pub(crate) struct CallRoute {
    /// The call's context (session, turn policy and elicitor, events, progress, wait clock).
    pub ctx: ToolContext,
    /// The tool's name as the model knows it.
    pub tool: String,
    /// What the model should be told besides the result (questions declined and why).
    pub notes: Arc<Mutex<Vec<String>>>,
}

impl CallRoute {
    pub(crate) fn new(ctx: ToolContext, tool: impl Into<String>) -> Self {
        Self { ctx, tool: tool.into(), notes: Arc::default() }
    }

    pub(crate) fn note(&self, text: String) {
        self.notes.lock().unwrap_or_else(|p| p.into_inner()).push(text);
    }

    pub(crate) fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *self.notes.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The calls of one connection in flight.
#[derive(Default)]
pub(crate) struct Routes {
    calls: Mutex<HashMap<RequestId, (ProgressToken, CallRoute)>>,
    registered: tokio::sync::Notify,
}

impl Routes {
    /// Registers the call sent as `id` with progress token `token`; dropping the guard removes it.
    pub(crate) fn register(
        self: &Arc<Self>,
        id: RequestId,
        token: ProgressToken,
        route: CallRoute,
    ) -> RouteGuard {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), (token, route));
        self.registered.notify_waiters();
        RouteGuard { routes: Arc::clone(self), id }
    }

    /// The call a question arriving on the response stream of request `origin` belongs to
    /// (waiting briefly when it arrived before the call was registered), or, without an
    /// origin, the one the calls in flight agree on.
    pub(crate) async fn for_question(&self, origin: Option<&RequestId>) -> Option<CallRoute> {
        match origin {
            Some(id) => {
                let wait = async {
                    loop {
                        let notified = self.registered.notified();
                        if let Some(route) = self.get(id) {
                            return route;
                        }
                        notified.await;
                    }
                };
                tokio::time::timeout(REGISTER_WAIT, wait).await.ok()
            }
            None => self.only_session(),
        }
    }

    /// The call whose progress token is `token`.
    pub(crate) fn for_progress(&self, token: &ProgressToken) -> Option<CallRoute> {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls.values().find(|(t, _)| t == token).map(|(_, route)| route.clone())
    }

    fn get(&self, id: &RequestId) -> Option<CallRoute> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).get(id).map(|(_, route)| route.clone())
    }

    /// The first call in flight when all of them belong to one session.
    fn only_session(&self) -> Option<CallRoute> {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let mut routes = calls.values().map(|(_, route)| route);
        let first = routes.next()?;
        routes.all(|r| r.ctx.session_id == first.ctx.session_id).then(|| first.clone())
    }
}

/// Removes a call's route when the call ends.
pub(crate) struct RouteGuard {
    routes: Arc<Routes>,
    id: RequestId,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.routes.calls.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(session: &str) -> CallRoute {
        CallRoute::new(ToolContext::new(session, "c", std::env::temp_dir()), "t")
    }

    #[tokio::test]
    async fn questions_find_their_call() {
        let routes = Arc::new(Routes::default());
        let id = RequestId::Number(7);
        let token = ProgressToken(RequestId::Number(70));
        assert!(routes.for_question(None).await.is_none());
        let later = {
            let routes = Arc::clone(&routes);
            let id = id.clone();
            tokio::spawn(
                async move { routes.for_question(Some(&id)).await.map(|r| r.ctx.session_id.to_string()) },
            )
        };
        tokio::task::yield_now().await;
        let guard = routes.register(id.clone(), token.clone(), route("s1"));
        assert_eq!(
            later.await.unwrap().as_deref(),
            Some("s1"),
            "a question may arrive before the call is known"
        );
        assert!(routes.for_progress(&token).is_some());
        assert_eq!(routes.for_question(None).await.unwrap().ctx.session_id, "s1");
        let _other = routes.register(RequestId::Number(8), ProgressToken(RequestId::Number(80)), route("s2"));
        assert!(routes.for_question(None).await.is_none(), "two sessions: nobody can tell who was asked");
        drop(guard);
        assert!(routes.for_progress(&token).is_none());
    }
}

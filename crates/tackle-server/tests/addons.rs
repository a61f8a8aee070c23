//! Addons (the chat channels) beside the API: their routes are served without bearer tokens
//! (they authenticate their own callers), and they are shut down with the server, before the
//! store closes.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::{Method, StatusCode};
use axum::routing::get;
use common::{Harness, tokens};
use tackle_server::ServerAddon;
use tackle_store::Store;
use tackle_testkit::Script;

struct Probe {
    store: Store,
    stopped: Mutex<Option<(Duration, bool)>>,
}

#[async_trait::async_trait]
impl ServerAddon for Probe {
    fn routes(&self) -> Router {
        Router::new().route("/channels/probe", get(|| async { "probe" }))
    }

    async fn shutdown(&self, grace: Duration) {
        // The store must still be usable: a channel finishing its turns writes to it.
        let store_open = self.store.channels().summary("probe").await.is_ok();
        *self.stopped.lock().unwrap() = Some((grace, store_open));
    }
}

#[tokio::test]
async fn addon_routes_skip_bearer_auth_and_addons_stop_before_the_store_closes() {
    let h = Harness::with(Script::new(vec![]), tokens()).await;
    let probe = Arc::new(Probe { store: h.store.clone(), stopped: Mutex::new(None) });
    h.state.add_addon(probe.clone());
    let (status, body) = h.call(Method::GET, "/channels/probe", None, None).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, Some("probe")));
    let (status, _) = h.call(Method::GET, "/v1/sessions", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "the API still needs a token");

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(tackle_server::serve_on(listener, h.state.clone(), async move {
        let _ = rx.await;
    }));
    tx.send(()).unwrap();
    server.await.unwrap().unwrap();
    let stopped = *probe.stopped.lock().unwrap();
    assert_eq!(stopped, Some((Duration::from_secs(5), true)), "shut down with the grace period, store open");
    assert!(h.store.channels().summary("probe").await.is_err(), "then the store closed");
}

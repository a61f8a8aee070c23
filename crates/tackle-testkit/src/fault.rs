//! Faults the fake server injects, one per request, in order.

use serde::{Deserialize, Serialize};

/// A fault for the next request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fault {
    /// No fault: answer this request normally (to place later faults on later requests).
    Pass,
    /// Answer with this status instead (a provider-shaped error body unless `body` is given).
    Status {
        /// HTTP status.
        status: u16,
        /// Body text.
        #[serde(default)]
        body: Option<String>,
        /// `retry-after` header value.
        #[serde(default)]
        retry_after: Option<String>,
        /// `retry-after-ms` header value.
        #[serde(default)]
        retry_after_ms: Option<u64>,
        /// `x-should-retry` header value.
        #[serde(default)]
        should_retry: Option<bool>,
    },
    /// An HTML error page instead of JSON (a proxy or CDN in between).
    Html {
        /// HTTP status.
        status: u16,
    },
    /// Wait this long before answering normally.
    Latency {
        /// Milliseconds.
        ms: u64,
    },
    /// Stream slowly: wait this long before each SSE event (a model that is still generating).
    Trickle {
        /// Milliseconds between events.
        ms: u64,
    },
    /// Drop the connection after this many SSE events; a whole (JSON) answer is cut after half
    /// its bytes.
    CutAfter {
        /// Events sent before the cut.
        events: usize,
    },
    /// Send one data line of invalid JSON after this many events, then continue; a whole (JSON)
    /// answer is sent truncated to half its bytes, the response itself complete.
    MalformedChunk {
        /// Events sent before the bad one.
        after_events: usize,
    },
}

impl Fault {
    /// A status fault with a provider-shaped body and no headers.
    pub fn status(status: u16) -> Self {
        Self::Status { status, body: None, retry_after: None, retry_after_ms: None, should_retry: None }
    }
}

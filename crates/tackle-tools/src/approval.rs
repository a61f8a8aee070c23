//! Approvals: who decides whether a call that needs confirmation may run.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_protocol::{ApprovalId, SessionId, ToolCallId};
use thiserror::Error;
use tokio::sync::oneshot;

/// A call waiting for a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// Approval id (UUIDv7).
    pub id: ApprovalId,
    /// Session of the call.
    pub session_id: SessionId,
    /// Call id.
    pub call_id: ToolCallId,
    /// Tool name.
    pub tool: String,
    /// Arguments.
    pub args: Value,
    /// The rule that asked for confirmation.
    pub rule: String,
}

/// A decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalDecision {
    /// Whether the call may run.
    pub approved: bool,
    /// Why (shown to the model on denial).
    pub reason: Option<String>,
}

impl ApprovalDecision {
    /// Approve.
    pub fn approve() -> Self {
        Self { approved: true, reason: None }
    }

    /// Deny with a reason.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self { approved: false, reason: Some(reason.into()) }
    }
}

/// Decides on calls that need confirmation.
#[async_trait]
pub trait Approver: Send + Sync {
    /// Waits for a decision on `request`.
    async fn decide(&self, request: ApprovalRequest) -> ApprovalDecision;
}

/// Approves everything. Use only when explicitly asked (`--yes`).
#[derive(Debug, Clone, Copy, Default)]
pub struct AutoApprove;

#[async_trait]
impl Approver for AutoApprove {
    async fn decide(&self, _request: ApprovalRequest) -> ApprovalDecision {
        ApprovalDecision::approve()
    }
}

/// Denies everything with a hint, for runs where nobody can answer.
#[derive(Debug, Clone)]
pub struct DenyAll {
    hint: String,
}

impl DenyAll {
    /// Denies with this explanation.
    pub fn new(hint: impl Into<String>) -> Self {
        Self { hint: hint.into() }
    }
}

#[async_trait]
impl Approver for DenyAll {
    async fn decide(&self, _request: ApprovalRequest) -> ApprovalDecision {
        ApprovalDecision::deny(self.hint.clone())
    }
}

/// What happens to a call that needs confirmation, chosen per front end (and per turn): a
/// front end where nobody can answer must not wait.
///
/// Written as a string in `tackle.toml` and `TACKLE_*` variables: `deny`, `auto`, `wait`
/// (the default timeout) or `wait:SECONDS`.
///
/// ```
/// use std::time::Duration;
/// use tackle_tools::ApprovalPolicy;
/// assert_eq!("wait:90".parse::<ApprovalPolicy>().unwrap(), ApprovalPolicy::Wait(Duration::from_secs(90)));
/// assert_eq!("deny".parse::<ApprovalPolicy>().unwrap().to_string(), "deny");
/// assert!("maybe".parse::<ApprovalPolicy>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ApprovalPolicy {
    /// Refuse at once: the model gets a `denied` envelope saying nobody can confirm here.
    Deny,
    /// Run without asking (like `--yes`).
    Auto,
    /// Ask the approver and wait at most this long; no decision in time is a denial.
    Wait(Duration),
}

impl ApprovalPolicy {
    /// How long `wait` waits when no timeout is given: 10 minutes.
    pub const DEFAULT_WAIT: Duration = Duration::from_secs(600);
}

impl Default for ApprovalPolicy {
    fn default() -> Self {
        Self::Wait(Self::DEFAULT_WAIT)
    }
}

impl fmt::Display for ApprovalPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Deny => f.write_str("deny"),
            Self::Auto => f.write_str("auto"),
            Self::Wait(t) => write!(f, "wait:{}", t.as_secs()),
        }
    }
}

/// An approval policy that is not `deny`, `auto`, `wait` or `wait:SECONDS`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("approval policy {0:?} is not deny, auto, wait or wait:SECONDS (e.g. wait:300)")]
pub struct InvalidApprovalPolicy(pub String);

impl FromStr for ApprovalPolicy {
    type Err = InvalidApprovalPolicy;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || InvalidApprovalPolicy(text.to_owned());
        match text.trim() {
            "deny" => Ok(Self::Deny),
            "auto" => Ok(Self::Auto),
            "wait" => Ok(Self::default()),
            other => {
                let secs = other.strip_prefix("wait:").ok_or_else(bad)?;
                match secs.trim().parse::<u64>() {
                    Ok(s) if s > 0 => Ok(Self::Wait(Duration::from_secs(s))),
                    _ => Err(bad()),
                }
            }
        }
    }
}

impl TryFrom<String> for ApprovalPolicy {
    type Error = InvalidApprovalPolicy;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl From<ApprovalPolicy> for String {
    fn from(policy: ApprovalPolicy) -> Self {
        policy.to_string()
    }
}

/// Why a decision could not be recorded.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ApprovalError {
    /// No pending approval has this id (decided already, cancelled, or never existed).
    #[error("no pending approval {0}; list pending approvals to see the ids")]
    NotFound(String),
}

struct Pending {
    request: ApprovalRequest,
    reply: oneshot::Sender<ApprovalDecision>,
}

/// Pending approvals that people decide later (the server's approval routes, a web page).
/// The waiting call resumes when its approval is decided.
///
/// ```
/// # tokio_test_block(async {
/// use tackle_tools::{ApprovalQueue, ApprovalRequest, Approver};
/// let queue = ApprovalQueue::default();
/// let waiting = { let q = queue.clone(); tokio::spawn(async move {
///     q.decide(ApprovalRequest { id: "a1".into(), session_id: "s".into(), call_id: "c".into(),
///         tool: "shell".into(), args: serde_json::json!({}), rule: "r".into() }).await
/// }) };
/// while queue.pending(None).is_empty() { tokio::task::yield_now().await; }
/// queue.resolve("a1", true, None).unwrap();
/// assert!(waiting.await.unwrap().approved);
/// # });
/// # fn tokio_test_block<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Clone, Default)]
pub struct ApprovalQueue {
    pending: Arc<Mutex<HashMap<ApprovalId, Pending>>>,
    order: Arc<Mutex<Vec<ApprovalId>>>,
}

impl std::fmt::Debug for ApprovalQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalQueue").field("pending", &self.pending(None).len()).finish()
    }
}

impl ApprovalQueue {
    /// Pending approvals, oldest first, optionally of one session.
    pub fn pending(&self, session_id: Option<&str>) -> Vec<ApprovalRequest> {
        let pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let order = self.order.lock().unwrap_or_else(|p| p.into_inner());
        order
            .iter()
            .filter_map(|id| pending.get(id))
            .filter(|p| session_id.is_none_or(|s| p.request.session_id == s))
            .map(|p| p.request.clone())
            .collect()
    }

    /// The pending approval `id`.
    pub fn get(&self, id: &str) -> Option<ApprovalRequest> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).get(id).map(|p| p.request.clone())
    }

    /// Decides the approval `id`; the waiting call resumes.
    pub fn resolve(&self, id: &str, approved: bool, reason: Option<String>) -> Result<(), ApprovalError> {
        let entry = self.remove(id).ok_or_else(|| ApprovalError::NotFound(id.to_owned()))?;
        // The waiting call may have been cancelled meanwhile; nothing to resume then.
        let _ = entry.reply.send(ApprovalDecision { approved, reason });
        Ok(())
    }

    fn remove(&self, id: &str) -> Option<Pending> {
        let entry = self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
        self.order.lock().unwrap_or_else(|p| p.into_inner()).retain(|i| i.as_str() != id);
        entry
    }
}

/// Removes a pending entry when the waiting future is dropped (the turn was cancelled).
struct PendingGuard<'a> {
    queue: &'a ApprovalQueue,
    id: ApprovalId,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.queue.remove(&self.id);
    }
}

#[async_trait]
impl Approver for ApprovalQueue {
    async fn decide(&self, request: ApprovalRequest) -> ApprovalDecision {
        let (reply, rx) = oneshot::channel();
        let id = request.id.clone();
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), Pending { request, reply });
        self.order.lock().unwrap_or_else(|p| p.into_inner()).push(id.clone());
        let _guard = PendingGuard { queue: self, id };
        rx.await.unwrap_or_else(|_| ApprovalDecision::deny("the approval was withdrawn"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: &str, session: &str) -> ApprovalRequest {
        ApprovalRequest {
            id: id.into(),
            session_id: session.into(),
            call_id: format!("call-{id}").into(),
            tool: "shell".into(),
            args: serde_json::json!({"command": "rm -rf build"}),
            rule: "default for destructive tools".into(),
        }
    }

    async fn wait_pending(q: &ApprovalQueue, n: usize) {
        while q.pending(None).len() < n {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn approve_deny_and_list() {
        let q = ApprovalQueue::default();
        let a = tokio::spawn({
            let q = q.clone();
            async move { q.decide(request("a", "s1")).await }
        });
        let b = tokio::spawn({
            let q = q.clone();
            async move { q.decide(request("b", "s2")).await }
        });
        wait_pending(&q, 2).await;
        assert_eq!(q.pending(Some("s1")).len(), 1);
        assert_eq!(q.pending(None).iter().map(|r| r.id.as_str()).collect::<Vec<_>>().len(), 2);
        q.resolve("a", true, None).unwrap();
        q.resolve("b", false, Some("not in prod".into())).unwrap();
        assert!(a.await.unwrap().approved);
        assert_eq!(b.await.unwrap(), ApprovalDecision::deny("not in prod"));
        assert!(q.pending(None).is_empty());
        assert_eq!(q.resolve("a", true, None), Err(ApprovalError::NotFound("a".into())));
    }

    #[tokio::test]
    async fn a_cancelled_call_leaves_no_pending_entry() {
        let q = ApprovalQueue::default();
        let task = tokio::spawn({
            let q = q.clone();
            async move { q.decide(request("c", "s")).await }
        });
        wait_pending(&q, 1).await;
        task.abort();
        let _ = task.await;
        assert!(q.pending(None).is_empty());
    }
}

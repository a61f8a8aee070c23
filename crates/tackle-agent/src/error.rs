//! Errors of the agent runtime.

use thiserror::Error;

/// Why an agent operation failed. Failures inside a turn (provider errors, doom loops) do not
/// use this type: they end the turn with an `error` event and a [`crate::TurnOutcome`].
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] tackle_store::StoreError),
    /// The provider could not be set up.
    #[error(transparent)]
    Provider(#[from] tackle_provider::ProviderError),
    /// A tool could not be registered.
    #[error("tool setup failed: {0}")]
    Tools(String),
    /// The workspace directory is unusable.
    #[error("workspace {path} is not usable: {message}")]
    Workspace {
        /// The path given.
        path: String,
        /// Why.
        message: String,
    },
    /// The permission mode cannot be used here (the message says why and what to do).
    #[error(transparent)]
    Mode(#[from] ModeUnavailable),
    /// A checkpoint could not be recorded or restored.
    #[error(transparent)]
    Checkpoint(#[from] tackle_checkpoint::CheckpointError),
    /// A rewind or a fork cannot be done as asked (the message says why and what to do).
    #[error("{0}")]
    Rewind(String),
}

/// Why an agent cannot run a permission mode ([`crate::Agent::mode_available`]); each says what
/// to configure instead.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ModeUnavailable {
    /// `bypass` without an enforced sandbox.
    #[error(
        "bypass runs every call without asking, so it needs an enforced sandbox; configure [sandbox] \
         (see `tackle sandbox check`)"
    )]
    BypassNeedsSandbox,
    /// `plan` on an agent built without plan mode.
    #[error("plan mode is off for this agent (AgentBuilder::plan_mode)")]
    PlanModeOff,
}

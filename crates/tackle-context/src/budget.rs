//! The context budget: the model's window, the output reserved, and what each component uses.

use serde::{Deserialize, Serialize};

/// Context windows of known model families, matched by name prefix (longest match wins).
/// Configuration (`context_window`) overrides the table.
const WINDOWS: &[(&str, u64)] = &[
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("claude", 200_000),
];

/// Window used for models not in the table: a conservative common size.
pub const DEFAULT_WINDOW: u64 = 128_000;

/// The context window of `model`.
///
/// ```
/// assert_eq!(tackle_context::context_window("claude-sonnet-4-5"), 200_000);
/// assert_eq!(tackle_context::context_window("gpt-4-0613"), 8_192);
/// assert_eq!(tackle_context::context_window("gpt-4o-mini"), 128_000);
/// assert_eq!(tackle_context::context_window("my-local-llama"), tackle_context::DEFAULT_WINDOW);
/// ```
pub fn context_window(model: &str) -> u64 {
    known_context_window(model).unwrap_or(DEFAULT_WINDOW)
}

/// The context window of `model` when it belongs to a family the table knows.
///
/// ```
/// assert_eq!(tackle_context::known_context_window("gpt-4.1-mini"), Some(1_047_576));
/// assert_eq!(tackle_context::known_context_window("my-local-llama"), None);
/// ```
pub fn known_context_window(model: &str) -> Option<u64> {
    let m = model.to_ascii_lowercase();
    WINDOWS
        .iter()
        .filter(|(prefix, _)| m.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, w)| *w)
}

/// Tokens used by each part of a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Components {
    /// Base prompt, SOUL.md, AGENTS.md.
    pub system: u64,
    /// The skills section of the system prompt.
    pub skills: u64,
    /// Tool definitions.
    pub tools: u64,
    /// Messages.
    pub conversation: u64,
}

impl Components {
    /// Sum of all components.
    pub fn total(&self) -> u64 {
        self.system + self.skills + self.tools + self.conversation
    }
}

/// Where the figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CountSource {
    /// Counted with the model's own tokenizer.
    Exact,
    /// Counted with a similar tokenizer and calibrated against reported usage.
    Estimated,
    /// The provider's reported input tokens of the last request, plus counted new messages.
    Reported,
}

/// The budget of one request.
///
/// ```
/// use tackle_context::{Components, ContextBudget, CountSource};
/// let b = ContextBudget::new(100_000, 4_096, Components { conversation: 90_000, ..Default::default() }, CountSource::Exact);
/// assert_eq!(b.effective_window(), 95_904);
/// assert!(b.percent() > 93.0 && b.percent() < 94.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ContextBudget {
    /// The model's window.
    pub window: u64,
    /// Tokens reserved for the answer.
    pub reserved_output: u64,
    /// What each part uses.
    pub components: Components,
    /// How the figures were obtained.
    pub source: CountSource,
}

impl ContextBudget {
    /// A budget.
    pub fn new(window: u64, reserved_output: u64, components: Components, source: CountSource) -> Self {
        Self { window, reserved_output, components, source }
    }

    /// The window minus the reserved output.
    pub fn effective_window(&self) -> u64 {
        self.window.saturating_sub(self.reserved_output)
    }

    /// Tokens used.
    pub fn used(&self) -> u64 {
        self.components.total()
    }

    /// Tokens left in the effective window.
    pub fn remaining(&self) -> u64 {
        self.effective_window().saturating_sub(self.used())
    }

    /// Used share of the effective window, in percent.
    pub fn percent(&self) -> f64 {
        100.0 * self.used() as f64 / self.effective_window().max(1) as f64
    }

    /// The share of the effective window used, 0..=1 (or above when over).
    pub fn ratio(&self) -> f64 {
        self.used() as f64 / self.effective_window().max(1) as f64
    }
}

/// When compaction runs, when a request is refused, and how far compaction goes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Thresholds {
    /// Compaction starts above this share of the effective window.
    pub trigger: f64,
    /// Requests above this share (after compaction) are refused.
    pub block: f64,
    /// Compaction aims below this share.
    pub target: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self { trigger: 0.95, block: 0.98, target: 0.75 }
    }
}

/// What the budget calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pressure {
    /// Room enough.
    Fine,
    /// Over the trigger: compact.
    Compact,
    /// Over the hard block: compact, and refuse if still over.
    Block,
}

impl Thresholds {
    /// The pressure of `budget`.
    ///
    /// ```
    /// use tackle_context::{Components, ContextBudget, CountSource, Pressure, Thresholds};
    /// let b = |used| ContextBudget::new(1000, 100, Components { conversation: used, ..Default::default() }, CountSource::Exact);
    /// let t = Thresholds::default();
    /// assert_eq!(t.pressure(&b(854)), Pressure::Fine);
    /// assert_eq!(t.pressure(&b(856)), Pressure::Compact);
    /// assert_eq!(t.pressure(&b(883)), Pressure::Block);
    /// ```
    pub fn pressure(&self, budget: &ContextBudget) -> Pressure {
        let r = budget.ratio();
        if r > self.block {
            Pressure::Block
        } else if r > self.trigger {
            Pressure::Compact
        } else {
            Pressure::Fine
        }
    }
}

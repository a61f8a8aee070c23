//! Context economy for Tackle: real token counts, the component budget, and compaction
//! planning.
//!
//! Everything here is pure (no IO): [`TokenCounter`] counts with tiktoken vocabularies,
//! [`ContextBudget`] splits a request into components against the model's window, and the
//! compaction functions choose what to clear, summarize or drop without splitting a tool call
//! from its result. The agent runs the plans and stores what leaves the context.
//!
//! ```
//! use tackle_context::{Components, ContextBudget, CountSource, TokenCounter};
//! let counter = TokenCounter::for_model("gpt-4o");
//! let tokens = counter.count_text("The quick brown fox jumps over the lazy dog.");
//! assert_eq!(tokens, 10);
//! let used = Components { system: 1_000, skills: 0, tools: 2_000, conversation: 90_000 };
//! let budget = ContextBudget::new(128_000, 8_000, used, CountSource::Exact);
//! assert!(budget.percent() > 75.0);
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

mod bpe;
mod budget;
mod compaction;
mod pretokenize;
mod tokens;
mod vocab;
#[allow(dead_code, reason = "shared with build.rs, which builds the tables with the rest")]
mod vocab_table;

pub use budget::{
    Components, ContextBudget, CountSource, DEFAULT_WINDOW, Pressure, Thresholds, context_window,
    known_context_window,
};
pub use compaction::{
    CLEARED_PREFIX, ClearTarget, MIN_CLEAR_BYTES, SUMMARY_INSTRUCTIONS, apply_clear, cleared_stub,
    plan_clear, plan_prefix, removal_message, replace_prefix, summary_message, units,
};
pub use tokens::{Encoding, TOKENS_PER_MESSAGE, TOKENS_PER_TOOL, TokenCounter, is_exact};

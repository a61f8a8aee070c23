//! Which tools a step may call, and how the provider is told — without ever changing the tool
//! definitions it receives.

use std::collections::HashSet;

use tackle_protocol::{AllowedToolsMode, ToolChoice};
use tackle_provider::Capabilities;

use crate::{ToolCatalog, ToolMask};

/// How a step's tool availability is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MaskStrategy {
    /// Every tool is available; nothing to enforce.
    All,
    /// Native restriction (OpenAI `tool_choice: allowed_tools`), plus the executor.
    AllowedTools,
    /// A runtime note at the tail names the available tools; the executor refuses the others.
    /// Used by providers without a native subset (Anthropic, OpenAI-compatible servers).
    TailNote,
    /// No tool may be called (the last step, or an empty active set): `tool_choice: none`.
    NoTools,
    /// Only deferred tools not loaded yet are unavailable, and the provider keeps those out of
    /// the model's context itself (Anthropic `defer_loading`); the executor refuses them.
    DeferLoading,
}

impl MaskStrategy {
    /// The name reported in `tools_resolved` events.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::AllowedTools => "allowed_tools",
            Self::TailNote => "tail_note",
            Self::NoTools => "none",
            Self::DeferLoading => "defer_loading",
        }
    }
}

/// What restricts tools in a session: the request's mask, skill gating, deferral.
#[derive(Debug, Clone, Default)]
pub struct Availability<'a> {
    /// The request's mask.
    pub mask: Option<&'a ToolMask>,
    /// Tools that belong to a skill (callable only while one of their skills is active).
    pub gated: HashSet<String>,
    /// Tools unlocked by active skills.
    pub unlocked: HashSet<String>,
    /// Tools deferred out of the active set (reached through search instead).
    pub deferred: HashSet<String>,
    /// The deferred tools are in the catalog with `defer_loading`: the provider hides them
    /// until loaded, so they need no tail note or `allowed_tools` to stay unused.
    pub native_deferral: bool,
}

/// The tools of one step.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StepTools {
    /// Callable tools, in catalog order.
    pub active: Vec<String>,
    /// Defined but not callable, in catalog order.
    pub inactive: Vec<String>,
    /// How it is enforced.
    pub strategy: MaskStrategy,
    /// The request's tool choice.
    pub tool_choice: ToolChoice,
}

impl StepTools {
    /// The tools the executor accepts, or `None` when every tool is.
    pub fn allowed(&self) -> Option<&[String]> {
        (self.strategy != MaskStrategy::All).then_some(self.active.as_slice())
    }

    /// The active set to state in a tail note, when that is how it is enforced.
    pub fn note(&self) -> Option<Vec<String>> {
        (self.strategy == MaskStrategy::TailNote).then(|| self.active.clone())
    }
}

/// Resolves the tools of a step. Deterministic: catalog order, no dependence on hash order.
///
/// `dynamic` is the kill switch: when false, every tool is active (but the last step still
/// sends `none`).
pub fn resolve_step(
    catalog: &ToolCatalog,
    availability: &Availability<'_>,
    capabilities: &Capabilities,
    last_step: bool,
    dynamic: bool,
) -> StepTools {
    let names = catalog.names();
    if last_step {
        return StepTools {
            active: Vec::new(),
            inactive: names,
            strategy: MaskStrategy::NoTools,
            tool_choice: ToolChoice::None,
        };
    }
    if !dynamic {
        return StepTools {
            active: names,
            inactive: Vec::new(),
            strategy: MaskStrategy::All,
            tool_choice: ToolChoice::Auto,
        };
    }
    let (active, inactive): (Vec<String>, Vec<String>) = names.into_iter().partition(|n| {
        availability.mask.is_none_or(|m| m.allows(n))
            && (!availability.gated.contains(n) || availability.unlocked.contains(n))
            && !availability.deferred.contains(n)
    });
    let hidden_only =
        availability.native_deferral && inactive.iter().all(|n| availability.deferred.contains(n));
    let (strategy, tool_choice) = if inactive.is_empty() {
        (MaskStrategy::All, ToolChoice::Auto)
    } else if hidden_only && !active.is_empty() {
        (MaskStrategy::DeferLoading, ToolChoice::Auto)
    } else if active.is_empty() {
        (MaskStrategy::NoTools, ToolChoice::None)
    } else if capabilities.allowed_tools {
        (
            MaskStrategy::AllowedTools,
            ToolChoice::Allowed { tools: active.clone(), mode: AllowedToolsMode::Auto },
        )
    } else {
        (MaskStrategy::TailNote, ToolChoice::Auto)
    };
    StepTools { active, inactive, strategy, tool_choice }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tackle_protocol::ToolSpec;

    use super::*;

    #[test]
    fn a_mask_becomes_allowed_tools() {
        use serde_json::json;
        let spec = |n: &str| ToolSpec::new(n, "d", json!({"type": "object"}));
        let catalog = ToolCatalog::freeze(vec![spec("read"), spec("shell")], vec![]);
        let mask = ToolMask::new([("shell".into(), false)]);
        let mut caps = Capabilities::default();
        caps.allowed_tools = true;
        let step = resolve_step(
            &catalog,
            &Availability { mask: Some(&mask), ..Default::default() },
            &caps,
            false,
            true,
        );
        assert_eq!(step.active, ["read"]);
        assert_eq!(step.strategy, MaskStrategy::AllowedTools);
    }

    fn catalog() -> ToolCatalog {
        let spec = |n: &str| ToolSpec::new(n, "d", json!({"type": "object"}));
        ToolCatalog::freeze(
            vec![spec("read_file"), spec("shell"), spec("activate_skill"), spec("git_log")],
            vec![],
        )
    }

    fn caps(allowed_tools: bool) -> Capabilities {
        let mut caps = Capabilities::default();
        caps.allowed_tools = allowed_tools;
        caps.max_cache_breakpoints = 4;
        caps.parallel_tool_calls = true;
        caps
    }

    #[test]
    fn no_restriction_means_all() {
        let s = resolve_step(&catalog(), &Availability::default(), &caps(true), false, true);
        assert_eq!(
            (s.strategy, s.tool_choice.clone(), s.allowed()),
            (MaskStrategy::All, ToolChoice::Auto, None)
        );
    }

    #[test]
    fn providers_get_their_strategy() {
        let mask = ToolMask::new([("shell".into(), false)]);
        let a = Availability { mask: Some(&mask), ..Default::default() };
        let openai = resolve_step(&catalog(), &a, &caps(true), false, true);
        assert_eq!(openai.strategy, MaskStrategy::AllowedTools);
        assert!(
            matches!(&openai.tool_choice, ToolChoice::Allowed { tools, .. } if tools == &["read_file", "activate_skill", "git_log"])
        );
        let anthropic = resolve_step(&catalog(), &a, &caps(false), false, true);
        assert_eq!(
            (anthropic.strategy, anthropic.tool_choice.clone()),
            (MaskStrategy::TailNote, ToolChoice::Auto)
        );
        assert_eq!(anthropic.note().unwrap(), ["read_file", "activate_skill", "git_log"]);
        assert_eq!(anthropic.inactive, ["shell"]);
    }

    #[test]
    fn skills_gate_tools_and_the_last_step_allows_none() {
        let a = Availability { gated: ["git_log".to_string()].into(), ..Default::default() };
        let s = resolve_step(&catalog(), &a, &caps(true), false, true);
        assert_eq!(s.inactive, ["git_log"]);
        let a = Availability {
            gated: ["git_log".to_string()].into(),
            unlocked: ["git_log".to_string()].into(),
            ..Default::default()
        };
        assert_eq!(resolve_step(&catalog(), &a, &caps(true), false, true).strategy, MaskStrategy::All);
        let last = resolve_step(&catalog(), &a, &caps(true), true, true);
        assert_eq!(
            (last.strategy, last.tool_choice, last.active.len()),
            (MaskStrategy::NoTools, ToolChoice::None, 0)
        );
    }

    #[test]
    fn the_kill_switch_ignores_masks() {
        let mask = ToolMask::new([("read_file".into(), true)]);
        let a =
            Availability { mask: Some(&mask), gated: ["git_log".to_string()].into(), ..Default::default() };
        let s = resolve_step(&catalog(), &a, &caps(true), false, false);
        assert_eq!((s.strategy, s.active.len()), (MaskStrategy::All, 4));
    }

    #[test]
    fn an_empty_active_set_is_tool_choice_none() {
        let mask = ToolMask::new([("nothing".into(), true)]);
        let s = resolve_step(
            &catalog(),
            &Availability { mask: Some(&mask), ..Default::default() },
            &caps(true),
            false,
            true,
        );
        assert_eq!((s.strategy, s.tool_choice), (MaskStrategy::NoTools, ToolChoice::None));
    }
}

//! Hook policy: per-tool rules deciding whether a call is denied, needs confirmation, is
//! logged, or runs silently.

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};
use tackle_protocol::{ToolAnnotations, ToolSpec};

/// What happens to a call a rule matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookAction {
    /// Refuse the call; the model gets a `denied` envelope naming the rule.
    Deny,
    /// Ask the approver first.
    Confirm,
    /// Run it and log the call (tool, call id, argument size; never argument values).
    Log,
    /// Run it without logging.
    Silent,
}

/// An annotation a rule can match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnnotationMatch {
    /// Tools marked destructive.
    Destructive,
    /// Tools marked read-only.
    ReadOnly,
    /// Tools reaching outside the workspace.
    OpenWorld,
    /// Tools marked idempotent.
    Idempotent,
}

impl AnnotationMatch {
    pub(crate) fn matches(self, a: &ToolAnnotations) -> bool {
        match self {
            Self::Destructive => a.destructive,
            Self::ReadOnly => a.read_only,
            Self::OpenWorld => a.open_world,
            Self::Idempotent => a.idempotent,
        }
    }
}

/// One rule: which tools (a glob on names and/or an annotation) and what to do.
///
/// In `tackle.toml`:
/// ```toml
/// [[hooks]]
/// tools = "shell"
/// action = "confirm"
///
/// [[hooks]]
/// annotation = "destructive"
/// action = "deny"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookRule {
    /// Glob on tool names (`*` for all, `github__*` for one MCP server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<String>,
    /// Annotation the tool must have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation: Option<AnnotationMatch>,
    /// What to do.
    pub action: HookAction,
}

impl HookRule {
    /// A rule for a glob of tool names.
    pub fn tools(glob: impl Into<String>, action: HookAction) -> Self {
        Self { tools: Some(glob.into()), annotation: None, action }
    }

    /// A rule for tools with an annotation.
    pub fn annotated(annotation: AnnotationMatch, action: HookAction) -> Self {
        Self { tools: None, annotation: Some(annotation), action }
    }

    fn describe(&self) -> String {
        match (&self.tools, self.annotation) {
            (Some(t), Some(a)) => format!("tools = {t:?}, annotation = {a:?}"),
            (Some(t), None) => format!("tools = {t:?}"),
            (None, Some(a)) => format!("annotation = {a:?}"),
            (None, None) => "every tool".to_owned(),
        }
    }
}

/// Where the agent runs; front ends pick the approver that fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// A person at a terminal (`tackle chat`).
    Interactive,
    /// A server with approval routes.
    Server,
    /// One-shot runs (`tackle run`): confirmations go to the approver, usually `--yes` or deny.
    Headless,
}

/// The decision for one call, with the rule that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookDecision {
    /// What to do.
    pub action: HookAction,
    /// Which rule decided, for messages (`default for destructive tools` when none matched).
    pub rule: String,
}

/// Ordered hook rules; the first match wins.
#[derive(Debug, Clone)]
pub struct HookPolicy {
    rules: Vec<(HookRule, Option<GlobMatcher>)>,
    mode: ApprovalMode,
}

impl HookPolicy {
    /// A policy from rules; an invalid glob is an error naming it.
    pub fn new(rules: Vec<HookRule>, mode: ApprovalMode) -> Result<Self, HookError> {
        let mut compiled = Vec::with_capacity(rules.len());
        for rule in rules {
            let matcher = match &rule.tools {
                Some(g) => Some(
                    Glob::new(g)
                        .map_err(|e| HookError::InvalidGlob { glob: g.clone(), detail: e.to_string() })?
                        .compile_matcher(),
                ),
                None => None,
            };
            compiled.push((rule, matcher));
        }
        Ok(Self { rules: compiled, mode })
    }

    /// No rules: destructive tools need confirmation, the rest are logged.
    pub fn defaults(mode: ApprovalMode) -> Self {
        Self { rules: Vec::new(), mode }
    }

    /// The mode.
    pub fn mode(&self) -> ApprovalMode {
        self.mode
    }

    /// Decides what to do with a call of `spec`.
    ///
    /// ```
    /// use serde_json::json;
    /// use tackle_protocol::{ToolAnnotations, ToolSpec};
    /// use tackle_tools::{ApprovalMode, HookAction, HookPolicy, HookRule};
    /// let shell = ToolSpec::new("shell", "d", json!({})).with_annotations(ToolAnnotations { destructive: true, ..Default::default() });
    /// let policy = HookPolicy::defaults(ApprovalMode::Interactive);
    /// assert_eq!(policy.decide(&shell).action, HookAction::Confirm);
    /// let policy = HookPolicy::new(vec![HookRule::tools("sh*", HookAction::Silent)], ApprovalMode::Interactive).unwrap();
    /// assert_eq!(policy.decide(&shell).action, HookAction::Silent);
    /// ```
    pub fn decide(&self, spec: &ToolSpec) -> HookDecision {
        for (rule, matcher) in &self.rules {
            let name_ok = matcher.as_ref().is_none_or(|m| m.is_match(&spec.name));
            let annotation_ok = rule.annotation.is_none_or(|a| a.matches(&spec.annotations));
            if name_ok && annotation_ok {
                return HookDecision {
                    action: rule.action,
                    rule: format!("hook rule ({})", rule.describe()),
                };
            }
        }
        // In every mode a destructive call goes to the approver; what "confirm" means is the
        // approver's business (a prompt, the pending queue, `--yes`, or a denial).
        let action = if spec.annotations.destructive { HookAction::Confirm } else { HookAction::Log };
        let rule = if action == HookAction::Confirm { "default for destructive tools" } else { "default" };
        HookDecision { action, rule: rule.to_owned() }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(name: &str, a: ToolAnnotations) -> ToolSpec {
        ToolSpec::new(name, "d", json!({})).with_annotations(a)
    }

    #[test]
    fn first_matching_rule_wins_by_glob_and_annotation() {
        let rules: Vec<HookRule> = toml::from_str::<toml::Table>(
            r#"
            hooks = [
              { tools = "github__*", action = "deny" },
              { annotation = "read_only", action = "silent" },
              { tools = "*", annotation = "destructive", action = "confirm" },
            ]"#,
        )
        .map(|t| t["hooks"].clone().try_into().unwrap())
        .unwrap();
        let p = HookPolicy::new(rules, ApprovalMode::Headless).unwrap();
        let ro = ToolAnnotations::read_only();
        let destructive = ToolAnnotations { destructive: true, ..ToolAnnotations::default() };
        assert_eq!(p.decide(&spec("github__delete_repo", destructive)).action, HookAction::Deny);
        assert_eq!(p.decide(&spec("read_file", ro)).action, HookAction::Silent);
        assert_eq!(p.decide(&spec("write_file", destructive)).action, HookAction::Confirm);
        assert_eq!(p.decide(&spec("todo", ToolAnnotations::default())).action, HookAction::Log);
        assert!(p.decide(&spec("github__x", ro)).rule.contains("github__*"));
    }

    #[test]
    fn bad_globs_are_reported() {
        let err =
            HookPolicy::new(vec![HookRule::tools("[", HookAction::Deny)], ApprovalMode::Server).unwrap_err();
        assert!(err.to_string().contains("invalid hook glob"), "{err}");
    }
}

/// A hook rule that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// The `tools` glob does not compile.
    #[error("invalid hook glob {glob:?}: {detail}; use * and ? wildcards, e.g. \"mcp__github__*\"")]
    InvalidGlob {
        /// The glob as written.
        glob: String,
        /// The parser's message.
        detail: String,
    },
}

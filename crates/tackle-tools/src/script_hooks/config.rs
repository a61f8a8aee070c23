//! `[[hooks]]` entries: the declarative rules (`action`) and script hooks (`event` + `command`)
//! share one list in `tackle.toml`.

use std::fmt;
use std::str::FromStr;

use globset::{Glob, GlobMatcher};
use regex::Regex;
use serde::{Deserialize, Serialize};
use tackle_protocol::ToolSpec;

use super::names::HookToolNames;
use crate::hooks::{AnnotationMatch, HookRule};

/// When a script hook runs. The names are Claude Code's, so its users' configurations read the
/// same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HookEvent {
    /// Before a tool call runs (after its arguments are valid): may allow, deny, ask, or
    /// rewrite the arguments.
    PreToolUse,
    /// After a tool call succeeded: may give the model feedback.
    PostToolUse,
    /// When the user sends a message, before the model sees it: may block it or add context.
    UserPromptSubmit,
    /// When the model is about to end the turn: may make it go on.
    Stop,
    /// At the first turn of a session (new or resumed): may add context.
    SessionStart,
    /// When a front end leaves a session.
    SessionEnd,
    /// Before the conversation is compacted: may block it.
    PreCompact,
    /// When Tackle needs the user (a permission prompt).
    Notification,
}

impl HookEvent {
    /// Every event, in documentation order.
    pub const ALL: [HookEvent; 8] = [
        Self::PreToolUse,
        Self::PostToolUse,
        Self::UserPromptSubmit,
        Self::Stop,
        Self::SessionStart,
        Self::SessionEnd,
        Self::PreCompact,
        Self::Notification,
    ];

    /// The name, as in Claude Code (`PreToolUse`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::Stop => "Stop",
            Self::SessionStart => "SessionStart",
            Self::SessionEnd => "SessionEnd",
            Self::PreCompact => "PreCompact",
            Self::Notification => "Notification",
        }
    }

    /// Whether the event is about a tool call (so `tools` and `annotation` apply).
    pub fn is_tool_event(self) -> bool {
        matches!(self, Self::PreToolUse | Self::PostToolUse)
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A hook `event` that is none of Claude Code's event names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hook event {0:?}; use one of {names}", names = HookEvent::ALL.map(HookEvent::as_str).join(", "))]
pub struct UnknownHookEvent(pub String);

impl FromStr for HookEvent {
    type Err = UnknownHookEvent;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|e| e.as_str() == text.trim())
            .ok_or_else(|| UnknownHookEvent(text.to_owned()))
    }
}

/// Default time a hook may run: 60 seconds, as in Claude Code.
pub const DEFAULT_HOOK_TIMEOUT_SECS: u64 = 60;

/// A script hook: a command run with bash at an event, given the event as JSON on its standard
/// input, answering with its exit code and optionally JSON on its standard output (Claude
/// Code's hook protocol; see docs/tools.md).
///
/// In `tackle.toml`, beside the declarative rules:
/// ```toml
/// [[hooks]]
/// event = "PreToolUse"
/// tools = "shell"
/// command = "python3 .tackle/hooks/no_rm_rf.py"
/// timeout_secs = 10
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptHook {
    /// When it runs.
    pub event: HookEvent,
    /// Glob on tool names (tool events only): `shell`, `*_file`, `github__*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<String>,
    /// Annotation the tool must have (tool events only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation: Option<AnnotationMatch>,
    /// Claude Code's matcher: a tool name, `A|B`, or a regular expression matched against the
    /// whole name (for `SessionStart` the source, `PreCompact` the trigger, `SessionEnd` the
    /// reason, `Notification` the type); empty or `*` matches everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The command, run with `bash -c` in the workspace.
    pub command: String,
    /// Seconds it may run before it is stopped (default 60); a hook that times out is a
    /// non-blocking error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// The tool and argument names the hook sees: `tackle` (default) or `claude-code` (`Bash`,
    /// `Write`, `file_path`, ...: Claude Code's hook scripts run unchanged; `matcher` then
    /// names Claude Code's tools).
    #[serde(default, skip_serializing_if = "is_tackle_names")]
    pub names: HookToolNames,
}

fn is_tackle_names(names: &HookToolNames) -> bool {
    *names == HookToolNames::Tackle
}

impl ScriptHook {
    /// A hook running `command` at `event`, for every tool (tool events).
    pub fn command(event: HookEvent, command: impl Into<String>) -> Self {
        Self {
            event,
            tools: None,
            annotation: None,
            matcher: None,
            command: command.into(),
            timeout_secs: None,
            names: HookToolNames::Tackle,
        }
    }

    /// Shows the hook Claude Code's tool and argument names (`Bash`, `file_path`).
    pub fn claude_code_names(mut self) -> Self {
        self.names = HookToolNames::ClaudeCode;
        self
    }

    /// Only for tools whose name matches `glob`.
    pub fn for_tools(mut self, glob: impl Into<String>) -> Self {
        self.tools = Some(glob.into());
        self
    }

    /// Stopped after `secs` seconds.
    pub fn timeout_secs(mut self, secs: u64) -> Self {
        self.timeout_secs = Some(secs);
        self
    }

    /// The time it may run.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_secs.unwrap_or(DEFAULT_HOOK_TIMEOUT_SECS).max(1))
    }

    /// Its matcher, compiled; an error says what to fix.
    pub fn matcher(&self) -> Result<HookMatcher, ScriptHookError> {
        let event = self.event;
        if self.command.trim().is_empty() {
            return Err(ScriptHookError::EmptyCommand { event });
        }
        if self.timeout_secs == Some(0) {
            return Err(ScriptHookError::ZeroTimeout { event, command: self.command.clone() });
        }
        if !self.event.is_tool_event() && (self.tools.is_some() || self.annotation.is_some()) {
            return Err(ScriptHookError::ToolFiltersOnNonToolEvent { event, command: self.command.clone() });
        }
        let tools = match &self.tools {
            Some(g) => Some(
                Glob::new(g)
                    .map_err(|e| ScriptHookError::Glob { glob: g.clone(), reason: e.to_string() })?
                    .compile_matcher(),
            ),
            None => None,
        };
        let matcher =
            match self.matcher.as_deref().map(str::trim) {
                None | Some("" | "*") => None,
                Some(m) if m.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '|')) => {
                    Some(NameMatcher::Exact(m.split('|').map(str::to_owned).collect()))
                }
                Some(m) => Some(NameMatcher::Regex(Regex::new(&format!("^(?:{m})$")).map_err(|e| {
                    ScriptHookError::Matcher { matcher: m.to_owned(), reason: e.to_string() }
                })?)),
            };
        Ok(HookMatcher { event: self.event, tools, annotation: self.annotation, matcher, names: self.names })
    }
}

/// Why a script hook (`[[hooks]]` with a `command`) cannot be used; each says what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptHookError {
    /// The hook has no command to run.
    #[error("the {event} hook has an empty command")]
    EmptyCommand {
        /// The hook's event.
        event: HookEvent,
    },
    /// `timeout_secs = 0` would stop the hook before it starts.
    #[error("the {event} hook `{command}` has timeout_secs = 0; use at least 1")]
    ZeroTimeout {
        /// The hook's event.
        event: HookEvent,
        /// Its command.
        command: String,
    },
    /// `tools` and `annotation` filter tool calls, which only tool events have.
    #[error(
        "`tools` and `annotation` apply to PreToolUse and PostToolUse hooks only; the {event} hook `{command}` \
         cannot use them (use `matcher`)"
    )]
    ToolFiltersOnNonToolEvent {
        /// The hook's event.
        event: HookEvent,
        /// Its command.
        command: String,
    },
    /// The `tools` glob does not parse.
    #[error("invalid hook glob {glob:?}: {reason}; use * and ? wildcards")]
    Glob {
        /// The glob as written.
        glob: String,
        /// What the glob parser said.
        reason: String,
    },
    /// The `matcher` regular expression does not compile.
    #[error("invalid hook matcher {matcher:?}: {reason}")]
    Matcher {
        /// The matcher as written.
        matcher: String,
        /// What the regex compiler said.
        reason: String,
    },
}

#[derive(Debug, Clone)]
enum NameMatcher {
    Exact(Vec<String>),
    Regex(Regex),
}

impl NameMatcher {
    fn is_match(&self, name: &str) -> bool {
        match self {
            Self::Exact(names) => names.iter().any(|n| n == name),
            Self::Regex(r) => r.is_match(name),
        }
    }
}

/// Which occurrences of an event a hook runs for.
#[derive(Debug, Clone)]
pub struct HookMatcher {
    event: HookEvent,
    tools: Option<GlobMatcher>,
    annotation: Option<AnnotationMatch>,
    matcher: Option<NameMatcher>,
    names: HookToolNames,
}

impl HookMatcher {
    /// Every occurrence of `event`.
    pub fn event(event: HookEvent) -> Self {
        Self { event, tools: None, annotation: None, matcher: None, names: HookToolNames::Tackle }
    }

    /// The tool names its hook sees.
    pub fn names(&self) -> HookToolNames {
        self.names
    }

    /// The event.
    pub fn hook_event(&self) -> HookEvent {
        self.event
    }

    /// Whether a tool event for `spec` matches.
    pub fn matches_tool(&self, spec: &ToolSpec) -> bool {
        self.tools.as_ref().is_none_or(|g| g.is_match(&spec.name))
            && self.annotation.is_none_or(|a| a.matches(&spec.annotations))
            && self.matcher.as_ref().is_none_or(|m| m.is_match(self.names.tool_name(&spec.name)))
    }

    /// Whether an event whose matcher value (source, trigger, reason, type) is `value` matches.
    pub fn matches_value(&self, value: &str) -> bool {
        self.matcher.as_ref().is_none_or(|m| m.is_match(value))
    }
}

/// One `[[hooks]]` entry: a declarative rule (`action = "deny"`) or a script hook
/// (`event = "PreToolUse"`, `command = "..."`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum HookEntry {
    /// A rule: `tools` / `annotation` and an `action`.
    Rule(HookRule),
    /// A command run at an event.
    Script(ScriptHook),
}

impl<'de> Deserialize<'de> for HookEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let value = serde_json::Value::deserialize(deserializer)?;
        let Some(table) = value.as_object() else {
            return Err(D::Error::custom("a [[hooks]] entry is a table"));
        };
        let script = table.contains_key("event") || table.contains_key("command");
        if script && table.contains_key("action") {
            return Err(D::Error::custom(
                "a [[hooks]] entry has either `action` (a rule) or `event` and `command` (a script hook), not both",
            ));
        }
        if script {
            ScriptHook::deserialize(value)
                .map(Self::Script)
                .map_err(|e| D::Error::custom(format!("script hook: {e}")))
        } else {
            HookRule::deserialize(value).map(Self::Rule).map_err(|e| {
                D::Error::custom(format!(
                    "{e} (a rule needs `action`; a script hook needs `event` and `command`)"
                ))
            })
        }
    }
}

impl From<HookRule> for HookEntry {
    fn from(rule: HookRule) -> Self {
        Self::Rule(rule)
    }
}

impl From<ScriptHook> for HookEntry {
    fn from(hook: ScriptHook) -> Self {
        Self::Script(hook)
    }
}

/// Splits `[[hooks]]` entries into the declarative rules and the script hooks, each in order.
pub fn split_hooks(entries: &[HookEntry]) -> (Vec<HookRule>, Vec<ScriptHook>) {
    let mut rules = Vec::new();
    let mut scripts = Vec::new();
    for entry in entries {
        match entry {
            HookEntry::Rule(r) => rules.push(r.clone()),
            HookEntry::Script(s) => scripts.push(s.clone()),
        }
    }
    (rules, scripts)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tackle_protocol::ToolAnnotations;

    use super::*;

    fn entries(text: &str) -> Result<Vec<HookEntry>, String> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
        table["hooks"].clone().try_into::<Vec<HookEntry>>().map_err(|e| e.to_string())
    }

    #[test]
    fn rules_and_scripts_share_the_list_in_order() {
        let list = entries(
            r#"
            [[hooks]]
            tools = "shell"
            action = "confirm"
            [[hooks]]
            event = "PreToolUse"
            tools = "shell"
            command = "./check.sh"
            timeout_secs = 5
            [[hooks]]
            event = "Stop"
            command = "python3 stop.py"
            "#,
        )
        .unwrap();
        let (rules, scripts) = split_hooks(&list);
        assert_eq!(rules.len(), 1);
        assert_eq!(
            scripts.iter().map(|s| s.event).collect::<Vec<_>>(),
            [HookEvent::PreToolUse, HookEvent::Stop]
        );
        assert_eq!(scripts[0].timeout(), std::time::Duration::from_secs(5));
        // Serialized back, each keeps its own shape.
        let back = serde_json::to_value(&list).unwrap();
        assert_eq!(back[0], json!({"tools": "shell", "action": "confirm"}));
        assert_eq!(back[2], json!({"event": "Stop", "command": "python3 stop.py"}));
    }

    #[test]
    fn mistakes_are_named() {
        let both = entries("[[hooks]]\naction = \"deny\"\nevent = \"Stop\"\ncommand = \"x\"\n").unwrap_err();
        assert!(both.contains("not both"), "{both}");
        let event = entries("[[hooks]]\nevent = \"BeforeTool\"\ncommand = \"x\"\n").unwrap_err();
        assert!(event.contains("BeforeTool") && event.contains("PreToolUse"), "{event}");
        let neither = entries("[[hooks]]\ntools = \"x\"\n").unwrap_err();
        assert!(neither.contains("action"), "{neither}");
        let stop_tools =
            ScriptHook { tools: Some("shell".into()), ..ScriptHook::command(HookEvent::Stop, "x") };
        assert!(stop_tools.matcher().unwrap_err().to_string().contains("PreToolUse and PostToolUse"));
        assert!(ScriptHook::command(HookEvent::Stop, " ").matcher().is_err());
        assert!(ScriptHook::command(HookEvent::Stop, "x").timeout_secs(0).matcher().is_err());
    }

    #[test]
    fn matchers_follow_claude_code() {
        let spec = |name: &str| ToolSpec::new(name, "d", json!({}));
        let with = |m: &str| ScriptHook {
            matcher: Some(m.into()),
            ..ScriptHook::command(HookEvent::PreToolUse, "x")
        };
        let exact = with("shell|write_file").matcher().unwrap();
        assert!(exact.matches_tool(&spec("shell")) && exact.matches_tool(&spec("write_file")));
        assert!(!exact.matches_tool(&spec("shell2")), "plain names match exactly");
        let regex = with("mcp__.*").matcher().unwrap();
        assert!(regex.matches_tool(&spec("mcp__github__x")) && !regex.matches_tool(&spec("x_mcp__")));
        assert!(with("*").matcher().unwrap().matches_tool(&spec("anything")));
        let glob = ScriptHook::command(HookEvent::PostToolUse, "x").for_tools("*_file").matcher().unwrap();
        assert!(glob.matches_tool(&spec("write_file")) && !glob.matches_tool(&spec("shell")));
        let ro = ScriptHook {
            annotation: Some(AnnotationMatch::ReadOnly),
            ..ScriptHook::command(HookEvent::PreToolUse, "x")
        };
        let ro = ro.matcher().unwrap();
        assert!(ro.matches_tool(&spec("r").with_annotations(ToolAnnotations::read_only())));
        assert!(!ro.matches_tool(&spec("w")));
        let source = ScriptHook {
            matcher: Some("resume".into()),
            ..ScriptHook::command(HookEvent::SessionStart, "x")
        };
        let source = source.matcher().unwrap();
        assert!(source.matches_value("resume") && !source.matches_value("startup"));
    }
}

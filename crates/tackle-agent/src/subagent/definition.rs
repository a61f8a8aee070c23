//! [`SubAgent`] and [`SubAgentRegistry`]: the sub-agents a session may hand a task to, read from
//! `agents/NAME.md` files (Claude Code's format) or given in code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// A configured sub-agent: what the `agent` tool runs when the model names it.
///
/// ```
/// use tackle_agent::SubAgent;
/// let reviewer = SubAgent::new("reviewer", "Reviews a diff for bugs.")
///     .instructions("You review code. Report bugs with file and line.")
///     .tools(["read_file", "list_files"]);
/// assert_eq!(reviewer.name, "reviewer");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SubAgent {
    /// Name the model passes as `agent` (letters, digits, `_`, `-`).
    pub name: String,
    /// When to use it, shown to the model in the `agent` tool's description.
    pub description: String,
    /// Its instructions: a system section after the parent's (so the parent's prefix is kept).
    pub instructions: String,
    /// The tools it may call (an allowlist over the parent's frozen catalog); `None`: all.
    pub tools: Option<Vec<String>>,
    /// The model it answers with; `None`: the parent's.
    pub model: Option<String>,
    /// Where it was defined (a file, or `tackle.toml [agents.NAME]`), for errors.
    pub source: String,
}

impl SubAgent {
    /// A sub-agent with a name and a description, every tool and the parent's model.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            instructions: String::new(),
            tools: None,
            model: None,
            source: "code".to_owned(),
        }
    }

    /// Its instructions.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = text.into();
        self
    }

    /// The tools it may call.
    pub fn tools<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// The model it answers with.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Where it was defined (shown in errors).
    pub fn source(mut self, source: impl Into<String>) -> Self {
        self.source = source.into();
        self
    }
}

/// Why a sub-agent definition was refused: the file (or table) and the field, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sub-agent {file}: {field}: {message}")]
#[non_exhaustive]
pub struct SubAgentError {
    /// The file or `tackle.toml [agents.NAME]`.
    pub file: String,
    /// The field at fault (`name`, `description`, `tools`, `model`, `front matter`).
    pub field: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl SubAgentError {
    fn new(source: &str, field: &str, message: impl Into<String>) -> Self {
        Self { file: source.to_owned(), field: field.to_owned(), message: message.into() }
    }
}

/// The sub-agents of an agent, by name (listed in name order, so the `agent` tool's
/// description, and with it the tool catalog's bytes, do not depend on discovery order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubAgentRegistry {
    agents: BTreeMap<String, SubAgent>,
}

impl SubAgentRegistry {
    /// No sub-agents (the `agent` tool still runs general-purpose children).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `agent`, replacing one of the same name (a workspace's file overrides the user's).
    pub fn insert(&mut self, agent: SubAgent) -> Result<(), SubAgentError> {
        validate(&agent)?;
        self.agents.insert(agent.name.clone(), agent);
        Ok(())
    }

    /// Adds every `agents/*.md` under `root` (a workspace or the user config dir), in file-name
    /// order; a missing directory adds nothing. The first bad file is an error naming it.
    pub fn load_dir(&mut self, root: &Path) -> Result<(), SubAgentError> {
        let dir = root.join("agents");
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(SubAgentError::new(&dir.display().to_string(), "directory", e.to_string()));
            }
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
            .collect();
        files.sort();
        for path in files {
            let text = std::fs::read_to_string(&path).map_err(|e| {
                SubAgentError::new(&path.display().to_string(), "file", format!("cannot read it: {e}"))
            })?;
            self.insert(parse_file(&path, &text)?)?;
        }
        Ok(())
    }

    /// The sub-agent named `name`.
    pub fn get(&self, name: &str) -> Option<&SubAgent> {
        self.agents.get(name)
    }

    /// Every sub-agent, in name order.
    pub fn iter(&self) -> impl Iterator<Item = &SubAgent> {
        self.agents.values()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }

    /// Checks every sub-agent's `tools` against the tools the agent has (`known`).
    pub(crate) fn check_tools(&self, known: &[String]) -> Result<(), SubAgentError> {
        for agent in self.agents.values() {
            for tool in agent.tools.iter().flatten() {
                if !known.iter().any(|k| k == tool) {
                    return Err(SubAgentError::new(
                        &agent.source,
                        "tools",
                        format!("no tool is named {tool:?}; the agent's tools are: {}", known.join(", ")),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn validate(agent: &SubAgent) -> Result<(), SubAgentError> {
    if !tackle_protocol::is_valid_tool_name(&agent.name) {
        return Err(SubAgentError::new(
            &agent.source,
            "name",
            format!("{:?} must be 1 to 64 letters, digits, `_` or `-`", agent.name),
        ));
    }
    if agent.description.trim().is_empty() {
        return Err(SubAgentError::new(
            &agent.source,
            "description",
            "is required: say when the model should hand a task to this sub-agent",
        ));
    }
    if agent.model.as_ref().is_some_and(|m| m.trim().is_empty()) {
        return Err(SubAgentError::new(&agent.source, "model", "is empty: name a model or leave it out"));
    }
    Ok(())
}

/// Parses one `agents/NAME.md`: YAML front matter (`name`, `description`, `tools` as a
/// comma-separated string or a list, `model`; other keys are ignored, as Claude Code's own
/// are), the body as instructions. The name defaults to the file's stem; `model: inherit` is
/// the parent's model.
pub fn parse_file(path: &Path, text: &str) -> Result<SubAgent, SubAgentError> {
    let source = path.display().to_string();
    let (yaml, body) = tackle_protocol::split_front_matter(text).ok_or_else(|| {
        SubAgentError::new(
            &source,
            "front matter",
            "missing: start the file with ---, then name, description (and tools, model), then ---",
        )
    })?;
    let front: Value = serde_saphyr::from_str(yaml)
        .map_err(|e| SubAgentError::new(&source, "front matter", format!("not valid YAML: {e}")))?;
    let front = match front {
        Value::Object(map) => map,
        Value::Null => serde_json::Map::new(),
        _ => return Err(SubAgentError::new(&source, "front matter", "must be a mapping of keys to values")),
    };
    let text_field = |field: &str| -> Result<Option<String>, SubAgentError> {
        match front.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
            Some(other) => Err(SubAgentError::new(&source, field, format!("must be text, not {other}"))),
        }
    };
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = text_field("name")?.unwrap_or(stem);
    let description = text_field("description")?.unwrap_or_default();
    let model = text_field("model")?.filter(|m| m != "inherit");
    let tools = match front.get("tools") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            Some(s.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned).collect())
        }
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.trim().to_owned()),
                    other => {
                        Err(SubAgentError::new(&source, "tools", format!("each tool is a name, not {other}")))
                    }
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(other) => {
            return Err(SubAgentError::new(
                &source,
                "tools",
                format!("must be a list of tool names or a comma-separated string, not {other}"),
            ));
        }
    };
    let agent = SubAgent { name, description, instructions: body.trim().to_owned(), tools, model, source };
    validate(&agent)?;
    Ok(agent)
}

#[cfg(test)]
#[path = "definition_tests.rs"]
mod tests;

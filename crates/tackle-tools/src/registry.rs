//! [`ToolRegistry`]: the tools an agent can call, in insertion order.

use std::collections::HashMap;
use std::sync::Arc;

use tackle_protocol::{ToolSpec, is_valid_tool_name};
use thiserror::Error;

use crate::Tool;
use crate::validation::ArgsValidator;

/// Why a tool could not be registered.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum RegistryError {
    /// Two tools with one name.
    #[error("a tool named {0:?} is already registered; tool names must be unique")]
    Duplicate(String),
    /// A name providers reject.
    #[error(
        "tool name {0:?} is invalid: use 1 to 64 characters from a-z, A-Z, 0-9, _ and - (no dots or spaces)"
    )]
    InvalidName(String),
    /// A schema that cannot be compiled.
    #[error("the input schema of tool {tool:?} is invalid: {message}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// What is wrong.
        message: String,
    },
}

pub(crate) struct Entry {
    pub(crate) tool: Arc<dyn Tool>,
    pub(crate) validator: ArgsValidator,
}

/// Tools by name, keeping the order they were registered in (which is the order their
/// definitions are sent in).
///
/// ```
/// use serde_json::json;
/// use tackle_tools::{ToolRegistry, RegistryError};
/// # use tackle_tools::{Tool, ToolContext, ToolFailure, ToolOutput};
/// # use tackle_protocol::ToolSpec;
/// # struct T(ToolSpec);
/// # #[async_trait::async_trait]
/// # impl Tool for T {
/// #     fn spec(&self) -> &ToolSpec { &self.0 }
/// #     async fn call(&self, _: serde_json::Value, _: ToolContext) -> Result<ToolOutput, ToolFailure> { Ok("".into()) }
/// # }
/// let mut registry = ToolRegistry::new();
/// let spec = |n: &str| ToolSpec::new(n, "d", json!({"type": "object"}));
/// registry.register(std::sync::Arc::new(T(spec("b")))).unwrap();
/// registry.register(std::sync::Arc::new(T(spec("a")))).unwrap();
/// assert_eq!(registry.names(), ["b", "a"]);
/// assert!(matches!(registry.register(std::sync::Arc::new(T(spec("a")))), Err(RegistryError::Duplicate(_))));
/// assert!(matches!(registry.register(std::sync::Arc::new(T(spec("file.read")))), Err(RegistryError::InvalidName(_))));
/// ```
#[derive(Default)]
pub struct ToolRegistry {
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry").field("tools", &self.names()).finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool after checking its name and compiling its schema.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let spec = tool.spec();
        if !is_valid_tool_name(&spec.name) {
            return Err(RegistryError::InvalidName(spec.name.clone()));
        }
        if self.index.contains_key(&spec.name) {
            return Err(RegistryError::Duplicate(spec.name.clone()));
        }
        let schema = tool.validation_schema().unwrap_or(&spec.input_schema);
        let validator = ArgsValidator::new(schema)
            .map_err(|message| RegistryError::InvalidSchema { tool: spec.name.clone(), message })?;
        self.index.insert(spec.name.clone(), self.entries.len());
        self.entries.push(Entry { tool, validator });
        Ok(())
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.index.get(name).map(|i| &self.entries[*i].tool)
    }

    pub(crate) fn entry(&self, name: &str) -> Option<&Entry> {
        self.index.get(name).map(|i| &self.entries[*i])
    }

    /// Tools in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.entries.iter().map(|e| &e.tool)
    }

    /// Names in registration order.
    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.tool.spec().name.clone()).collect()
    }

    /// Definitions in registration order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.entries.iter().map(|e| e.tool.spec().clone()).collect()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

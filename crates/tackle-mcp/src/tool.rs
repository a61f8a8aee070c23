//! [`McpTool`]: one tool of an MCP server as a Tackle [`Tool`].

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::{Tool as McpToolDef, ToolAnnotations as McpAnnotations};
use serde_json::{Map, Value};
use tackle_protocol::{ErrorCategory, ToolAnnotations, ToolSpec};
use tackle_tools::{Tool, ToolContext, ToolFailure, ToolOutput};

use crate::connection::McpConnection;
use crate::content::map_call_result;
use crate::error::McpError;

/// A tool offered by an MCP server, under its namespaced name (`server__tool`).
///
/// Calls go to the server's [`McpConnection`]; results are mapped by
/// [`crate::map_call_result`], failures to typed [`ToolFailure`]s (a dead server is
/// `unavailable` and retryable while it is reconnected).
pub struct McpTool {
    spec: ToolSpec,
    remote_name: String,
    connection: Arc<McpConnection>,
    /// The tool's `outputSchema`, compiled: `structuredContent` is checked against it.
    output_schema: Option<Arc<jsonschema::Validator>>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.spec.name)
            .field("server", &self.connection.name())
            .field("remote_name", &self.remote_name)
            .finish()
    }
}

impl McpTool {
    /// Wraps the MCP definition `def`, exposed to the model as `name`.
    pub fn new(name: String, def: &McpToolDef, connection: Arc<McpConnection>) -> Self {
        let output_schema = def.output_schema.as_ref().and_then(|schema| {
            match jsonschema::validator_for(&Value::Object((**schema).clone())) {
                Ok(v) => Some(Arc::new(v)),
                Err(e) => {
                    tracing::warn!(server = connection.name(), tool = %def.name, error = %e, "invalid outputSchema ignored");
                    None
                }
            }
        });
        Self {
            spec: spec_from_mcp(name, def, connection.name()),
            remote_name: def.name.to_string(),
            connection,
            output_schema,
        }
    }

    /// The tool's name on its server.
    pub fn remote_name(&self) -> &str {
        &self.remote_name
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        self.connection.name()
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ToolFailure::invalid_args(format!(
                    "arguments must be a JSON object, not {}",
                    json_kind(&other)
                )));
            }
        };
        let outcome = self
            .connection
            .call_tool(&self.remote_name, arguments, &ctx, &self.spec.name)
            .await
            .map_err(|err| failure_from_error(err, self.connection.name()))?;
        if let (Some(validator), Some(structured), false) =
            (&self.output_schema, &outcome.result.structured_content, outcome.result.is_error == Some(true))
        {
            let problems: Vec<String> = validator.iter_errors(structured).map(|e| e.to_string()).collect();
            if !problems.is_empty() {
                return Err(ToolFailure::new(
                    ErrorCategory::Internal,
                    format!(
                        "MCP server `{}` returned a structured result that does not match the tool's outputSchema: {}",
                        self.connection.name(),
                        problems.join("; ")
                    ),
                )
                .with_hint("the server is at fault; try another approach"));
            }
        }
        let notes = outcome.notes;
        let mapped = map_call_result(outcome.result);
        if notes.is_empty() {
            return mapped;
        }
        let note = format!("\n\n[{}]", notes.join("; "));
        match mapped {
            Ok(mut output) => {
                output.text.push_str(&note);
                Ok(output)
            }
            Err(mut failure) => {
                failure.message.push_str(&note);
                Err(failure)
            }
        }
    }
}

/// The failure the model sees for a connection or protocol error of server `server`.
pub fn failure_from_error(err: McpError, server: &str) -> ToolFailure {
    match err {
        McpError::Timeout(limit) => ToolFailure::timeout(format!(
            "MCP server `{server}` did not answer within {}s",
            limit.as_secs_f64()
        ))
        .with_hint("try again with a smaller request, or use another tool"),
        McpError::Unavailable(reason) => ToolFailure::new(
            ErrorCategory::Unavailable,
            format!("MCP server `{server}` is unavailable: {reason}"),
        )
        .with_hint("the server is being reconnected; retry the call in a moment")
        .with_retryable(true),
        McpError::Shutdown => {
            ToolFailure::new(ErrorCategory::Unavailable, format!("MCP server `{server}` was shut down"))
                .with_retryable(false)
        }
        McpError::Cancelled => ToolFailure::new(ErrorCategory::Interrupted, "the call was cancelled"),
        McpError::Auth(message) => ToolFailure::new(ErrorCategory::Denied, message)
            .with_hint("tell the user: the MCP server needs them to sign in")
            .with_retryable(false),
        McpError::Server(message) => ToolFailure::from_message(message),
        other => ToolFailure::internal(format!("MCP server `{server}`: {other}")),
    }
}

/// The Tackle spec of an MCP tool definition.
///
/// Annotations follow MCP's defaults for missing hints: not read-only, destructive unless
/// read-only, not idempotent, open world.
pub fn spec_from_mcp(name: String, def: &McpToolDef, server: &str) -> ToolSpec {
    let description = match (&def.description, &def.title) {
        (Some(d), _) if !d.trim().is_empty() => d.to_string(),
        (_, Some(title)) if !title.trim().is_empty() => title.clone(),
        _ => format!("Tool `{}` of MCP server `{server}`.", def.name),
    };
    let mut schema: Map<String, Value> = (*def.input_schema).clone();
    schema.entry("type").or_insert_with(|| Value::String("object".to_owned()));
    ToolSpec::new(name, description, Value::Object(schema))
        .with_annotations(map_annotations(def.annotations.as_ref()))
}

/// MCP tool annotations as Tackle annotations, with MCP's defaults for missing hints.
pub fn map_annotations(hints: Option<&McpAnnotations>) -> ToolAnnotations {
    let hint = |f: fn(&McpAnnotations) -> Option<bool>| hints.and_then(f);
    let read_only = hint(|a| a.read_only_hint).unwrap_or(false);
    ToolAnnotations {
        read_only,
        destructive: !read_only && hint(|a| a.destructive_hint).unwrap_or(true),
        idempotent: read_only || hint(|a| a.idempotent_hint).unwrap_or(false),
        open_world: hint(|a| a.open_world_hint).unwrap_or(true),
        ..ToolAnnotations::default()
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn def(value: Value) -> McpToolDef {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn annotations_map_with_mcp_defaults() {
        let none = map_annotations(None);
        assert_eq!(
            none,
            ToolAnnotations {
                read_only: false,
                destructive: true,
                idempotent: false,
                open_world: true,
                ..ToolAnnotations::default()
            }
        );
        let read_only = def(json!({"name": "t", "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}}));
        let a = map_annotations(read_only.annotations.as_ref());
        assert_eq!(
            a,
            ToolAnnotations {
                read_only: true,
                destructive: false,
                idempotent: true,
                open_world: false,
                ..ToolAnnotations::default()
            }
        );
        let additive = def(json!({"name": "t", "inputSchema": {"type": "object"},
            "annotations": {"destructiveHint": false, "idempotentHint": true}}));
        let a = map_annotations(additive.annotations.as_ref());
        assert_eq!(
            a,
            ToolAnnotations {
                read_only: false,
                destructive: false,
                idempotent: true,
                open_world: true,
                ..ToolAnnotations::default()
            }
        );
    }

    #[test]
    fn spec_keeps_schema_and_fills_description() {
        let d = def(json!({"name": "get-sum", "description": "Returns the sum",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}}));
        let spec = spec_from_mcp("everything__get-sum".into(), &d, "everything");
        assert_eq!(spec.name, "everything__get-sum");
        assert_eq!(spec.description, "Returns the sum");
        assert_eq!(spec.input_schema["properties"]["a"]["type"], "number");

        let bare = def(json!({"name": "noop", "inputSchema": {}}));
        let spec = spec_from_mcp("s__noop".into(), &bare, "s");
        assert_eq!(spec.description, "Tool `noop` of MCP server `s`.");
        assert_eq!(spec.input_schema, json!({"type": "object"}));
    }

    #[test]
    fn errors_map_to_typed_failures() {
        let f = failure_from_error(McpError::Unavailable("the connection broke".into()), "fs");
        assert_eq!(f.category, ErrorCategory::Unavailable);
        assert!(f.is_retryable());
        assert!(f.hint.as_deref().unwrap().contains("reconnected"));

        let f = failure_from_error(McpError::Timeout(Duration::from_secs(60)), "fs");
        assert_eq!(f.category, ErrorCategory::Timeout);

        let f = failure_from_error(McpError::Server("Unknown tool: nope (not found)".into()), "fs");
        assert_eq!(f.category, ErrorCategory::NotFound);

        let f = failure_from_error(McpError::Shutdown, "fs");
        assert!(!f.is_retryable());
    }
}

//! A 100-tool MCP server over stdio, used by the `tackle-mcp` integration tests.
//!
//! Tools `tool_000` ... `tool_099` are listed in reverse order, 25 per page (so clients must
//! follow cursors and sort). Every tool echoes its name and arguments. Arguments change the
//! behaviour of any tool:
//! - `{"fail": "message"}`: the result has `isError: true` with that text;
//! - `{"sleep_ms": n}`: answers after `n` milliseconds;
//! - `{"add_tool": true}`: adds `tool_100` and sends `notifications/tools/list_changed`;
//! - `{"rich": true}`: answers with an image, a resource link and `structuredContent`;
//! - `{"progress": n}`: sends `n` progress notifications before answering;
//! - `{"report_cancelled": true}`: answers with how many requests the client cancelled so far.
//!
//! `tool_000` declares an `outputSchema` (`{"tool": string, "ok": boolean}`); with
//! `{"rich": true, "break_schema": true}` its structured result does not match it.
//!
//! Run: `cargo run -p tackle-mcp --example mcp_test_server`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, Resource, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;

const TOOLS: usize = 100;
const PAGE: usize = 25;

#[derive(Clone, Default)]
struct TestServer {
    extra_tool: Arc<AtomicBool>,
    cancelled: Arc<std::sync::atomic::AtomicUsize>,
}

impl TestServer {
    fn tool_count(&self) -> usize {
        TOOLS + usize::from(self.extra_tool.load(Ordering::SeqCst))
    }

    /// A definition the size of a typical real MCP tool (~700 bytes: a paragraph of description
    /// and described parameters), so deferral is measured on realistic definitions.
    fn tool(i: usize) -> Tool {
        let topics = ["invoice", "calendar", "weather", "ticket", "payroll"];
        let topic = topics[i % topics.len()];
        let schema = json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "Text to echo back, e.g. a record id or a note for the audit log."},
                "fail": {"type": "string", "description": "Make the call fail with this message (an MCP error result)."},
                "sleep_ms": {"type": "integer", "description": "Wait this many milliseconds before answering."},
                "add_tool": {"type": "boolean", "description": "Add tool_100 and announce it with tools/list_changed."},
                "rich": {"type": "boolean", "description": "Answer with an image, a resource link and structured content."}
            }
        });
        let serde_json::Value::Object(schema) = schema else { unreachable!() };
        let description = format!(
            "Test tool number {i}. Manages the {topic} records of the test service: looks them up, creates them and \
             changes their status. Use it when the user asks about {topic} data. Returns what it was called with."
        );
        let mut tool = Tool::new(format!("tool_{i:03}"), description, schema);
        if i.is_multiple_of(2) {
            tool.annotations = Some(ToolAnnotations::new().read_only(true));
        }
        if i == 0 {
            let schema = json!({"type": "object", "properties": {"tool": {"type": "string"}, "ok": {"type": "boolean"}},
                "required": ["tool", "ok"]});
            let serde_json::Value::Object(schema) = schema else { unreachable!() };
            tool.output_schema = Some(Arc::new(schema));
        }
        tool
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let start: usize = match request.and_then(|r| r.cursor) {
            Some(cursor) => cursor.parse().map_err(|_| ErrorData::invalid_params("bad cursor", None))?,
            None => 0,
        };
        let total = self.tool_count();
        // Reverse order: clients must sort.
        let tools: Vec<Tool> = (start..total.min(start + PAGE)).map(|k| Self::tool(total - 1 - k)).collect();
        let mut result = ListToolsResult::with_all_items(tools);
        if start + PAGE < total {
            result.next_cursor = Some((start + PAGE).to_string());
        }
        Ok(result)
    }

    async fn on_cancelled(
        &self,
        _notification: rmcp::model::CancelledNotificationParam,
        _context: rmcp::service::NotificationContext<RoleServer>,
    ) {
        self.cancelled.fetch_add(1, Ordering::SeqCst);
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let known = name
            .strip_prefix("tool_")
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|n| n < self.tool_count());
        if !known {
            return Err(ErrorData::invalid_params(format!("tool not found: {name}"), None));
        }
        let args = request.arguments.unwrap_or_default();
        if args.get("report_cancelled").and_then(|v| v.as_bool()) == Some(true) {
            let n = self.cancelled.load(Ordering::SeqCst);
            return Ok(CallToolResult::success(vec![ContentBlock::text(format!("cancelled: {n}"))]).into());
        }
        if let (Some(n), Some(token)) =
            (args.get("progress").and_then(|v| v.as_u64()), context.meta.get_progress_token())
        {
            for k in 1..=n {
                let mut params = rmcp::model::ProgressNotificationParam::new(token.clone(), k as f64);
                params.total = Some(n as f64);
                params.message = Some(format!("step {k}"));
                let _ = context.peer.notify_progress(params).await;
            }
        }
        if let Some(ms) = args.get("sleep_ms").and_then(|v| v.as_u64()) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if let Some(message) = args.get("fail").and_then(|v| v.as_str()) {
            return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
        }
        if args.get("add_tool").and_then(|v| v.as_bool()) == Some(true) {
            self.extra_tool.store(true, Ordering::SeqCst);
            let _ = context.peer.notify_tool_list_changed().await;
        }
        if args.get("rich").and_then(|v| v.as_bool()) == Some(true) {
            let mut result = CallToolResult::success(vec![
                ContentBlock::image("iVBORw0KGgo=", "image/png"),
                ContentBlock::ResourceLink(Resource::new("file:///notes.txt", "notes.txt")),
            ]);
            let broken = args.get("break_schema").and_then(|v| v.as_bool()) == Some(true);
            result.structured_content = Some(if broken {
                json!({"tool": name, "ok": "yes"})
            } else {
                json!({"tool": name, "ok": true})
            });
            return Ok(result.into());
        }
        let text = format!("{name} got {}", serde_json::Value::Object(args));
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = TestServer::default().serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}

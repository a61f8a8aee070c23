//! The `todo` builtin: one action-discriminated tool for the session's plan, kept in the store,
//! recited in the tail note while items are open.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tackle_protocol::ToolAnnotations;
use tackle_store::{Store, TodoStatus, TodoUpdate};
use tackle_tools::{ToolContext, ToolDoc, ToolFailure, ToolOutput, TypedTool};

/// Arguments of `todo`, by action.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum TodoArgs {
    /// Add an item at the end of the list.
    Add {
        /// What to do, as one short imperative sentence. Example: "write the parser tests".
        text: String,
    },
    /// Change an item's text or status.
    Update {
        /// Item id, as shown by list. Example: 3.
        id: i64,
        /// New text, if it changes.
        #[serde(default)]
        text: Option<String>,
        /// New status, if it changes: open, in_progress or done.
        #[serde(default)]
        status: Option<TodoStatus>,
    },
    /// Mark an item done.
    Complete {
        /// Item id. Example: 3.
        id: i64,
    },
    /// Delete an item for good (use complete for finished work).
    Remove {
        /// Item id. Example: 3.
        id: i64,
        /// Must be true: removing loses the item.
        confirm: bool,
    },
    /// List items, paginated.
    List {
        /// Items to skip. Defaults to 0.
        #[serde(default)]
        offset: Option<u32>,
        /// Items to return, at most 100. Defaults to 20.
        #[serde(default)]
        limit: Option<u32>,
    },
}

/// The `todo` tool.
#[derive(Debug, Clone)]
pub struct TodoTool {
    store: Store,
}

impl TodoTool {
    /// A todo tool keeping its items in `store`, per session.
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

fn store_failure(e: tackle_store::StoreError) -> ToolFailure {
    match e {
        tackle_store::StoreError::NotFound { .. } => {
            ToolFailure::not_found(e.to_string()).with_hint("call todo with action list to see the ids")
        }
        other => ToolFailure::internal(other.to_string()),
    }
}

/// The tool's name.
pub(crate) const NAME: &str = "todo";

/// The open items the tail note recites (`"<id>. <text>"`), read from `store`; none without a
/// read when the session's `catalog` has no todo tool (nothing else keeps a list).
pub(crate) async fn recited(
    store: &Store,
    session_id: &str,
    catalog: &crate::ToolCatalog,
) -> Result<Vec<String>, tackle_store::StoreError> {
    if !catalog.contains(NAME) {
        return Ok(Vec::new());
    }
    let todos = store.todos().open(session_id).await?;
    Ok(todos.into_iter().map(|t| format!("{}. {}", t.id, t.text)).collect())
}

#[async_trait]
impl TypedTool for TodoTool {
    type Args = TodoArgs;

    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> String {
        ToolDoc::new("Keep the plan of the current task as a todo list that survives the session.")
            .use_when("a task has several steps: add them first, then complete them one by one")
            .use_when("you need to recall what is left (open items are also restated in runtime notes)")
            .does_not("run anything or change files; it only records the plan")
            .arg("action", "One of add, update, complete, remove, list. Example: \"add\"")
            .arg("text", "Item text (add, update). Example: \"run the tests\"")
            .arg("id", "Item id (update, complete, remove). Example: 2")
            .arg("status", "open, in_progress or done (update)")
            .arg("confirm", "Must be true to remove an item")
            .arg("offset, limit", "Pagination of list. Defaults 0 and 20")
            .returns("The affected item, or for list: items with total_count and has_more.")
            .example(r#"{"action": "add", "text": "read the failing test"}"#)
            .example(r#"{"action": "complete", "id": 1}"#)
            .example(r#"{"action": "list", "offset": 0, "limit": 20}"#)
            .render()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::session_only()
    }

    async fn run(&self, args: TodoArgs, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        if !matches!(args, TodoArgs::List { .. }) {
            // The tail note recites the open items: they are read again after this step.
            super::LoopRequests::ask(&ctx, |r| r.tail_state_changed = true);
        }
        let sid = &ctx.session_id;
        let store = super::store_for(&ctx, &self.store);
        let line = |verb: &str, item: &tackle_store::TodoItem| {
            format!("{verb} {}. {} [{}]", item.id, item.text, status_name(item.status))
        };
        let item = match args {
            TodoArgs::Add { text } => {
                if text.trim().is_empty() {
                    return Err(ToolFailure::invalid_args("text is empty; describe the item"));
                }
                let item = store.todos().add(sid, text.trim()).await.map_err(store_failure)?;
                return Ok(ToolOutput::text(line("added", &item)));
            }
            TodoArgs::Update { id, text, status } => {
                if text.is_none() && status.is_none() {
                    return Err(ToolFailure::invalid_args("update needs text or status"));
                }
                store.todos().update(sid, id, TodoUpdate { text, status }).await.map_err(store_failure)?
            }
            TodoArgs::Complete { id } => store
                .todos()
                .update(sid, id, TodoUpdate { text: None, status: Some(TodoStatus::Done) })
                .await
                .map_err(store_failure)?,
            TodoArgs::Remove { id, confirm } => {
                if !confirm {
                    return Err(ToolFailure::invalid_args(
                        "remove needs confirm: true; removing loses the item",
                    )
                    .with_hint("use action complete for finished items"));
                }
                let item = store.todos().remove(sid, id).await.map_err(store_failure)?;
                return Ok(ToolOutput::text(line("removed", &item)));
            }
            TodoArgs::List { offset, limit } => {
                let offset = offset.unwrap_or(0);
                let limit = limit.unwrap_or(20).clamp(1, 100);
                let page = store.todos().list(sid, offset, limit).await.map_err(store_failure)?;
                let has_more = u64::from(offset) + (page.items.len() as u64) < page.total_count;
                return Ok(ToolOutput::text(
                    json!({ "items": page.items, "total_count": page.total_count, "has_more": has_more })
                        .to_string(),
                ));
            }
        };
        Ok(ToolOutput::text(line("updated", &item)))
    }
}

fn status_name(status: TodoStatus) -> &'static str {
    match status {
        TodoStatus::Open => "open",
        TodoStatus::InProgress => "in_progress",
        TodoStatus::Done => "done",
    }
}

#[cfg(test)]
#[path = "todo_tests.rs"]
mod tests;

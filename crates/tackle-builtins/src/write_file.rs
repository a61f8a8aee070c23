//! `write_file`: create or replace a file atomically.

use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tackle_protocol::ToolAnnotations;
use tackle_tools::{ToolContext, ToolDoc, ToolFailure, ToolOutput, TypedTool};

use crate::WorkspaceJail;

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// File path relative to the workspace root; missing directories are created. Example: "notes/todo.md".
    pub path: String,
    /// The whole new content of the file.
    pub content: String,
}

/// The `write_file` tool.
#[derive(Debug, Clone, Default)]
pub struct WriteFile;

/// Writes `bytes` to `path` through a temporary file in the same directory, synced, then renamed
/// over the target: readers see the old or the new file, never a half-written one. An existing
/// file's permissions are kept.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new().prefix(".tackle-write-").tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(tmp.path(), meta.permissions())?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[async_trait]
impl TypedTool for WriteFile {
    type Args = WriteFileArgs;

    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> String {
        ToolDoc::new("Create a file, or replace a file's whole content, in the workspace.")
            .use_when("you create a new file")
            .use_when("you rewrite most of a file; for small changes use edit_file")
            .does_not("append or patch: it replaces everything (use edit_file to change part of a file)")
            .arg("path", "Path relative to the workspace root; parent directories are created. Example: \"src/util.rs\"")
            .arg("content", "The complete new content. Example: \"fn main() {}\\n\"")
            .returns("Whether the file was created or replaced, and its size.")
            .example(r#"{"path": "hello.txt", "content": "hello\n"}"#)
            .render()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: false,
            ..ToolAnnotations::default()
        }
    }

    async fn run(&self, args: WriteFileArgs, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        let jail = WorkspaceJail::new(&ctx.workspace)?;
        let path = jail.resolve(&args.path)?;
        let shown = jail.display(&path);
        if path.is_dir() {
            return Err(ToolFailure::invalid_args(format!("{shown} is a directory")));
        }
        let previous = std::fs::metadata(&path).ok().map(|m| m.len());
        let bytes = args.content.into_bytes();
        let n = bytes.len();
        let target = path.clone();
        tokio::task::spawn_blocking(move || write_atomic(&target, &bytes))
            .await
            .map_err(|e| ToolFailure::internal(format!("write task failed: {e}")))??;
        Ok(ToolOutput::text(match previous {
            Some(old) => format!("replaced {shown} ({n} bytes; was {old} bytes)"),
            None => format!("created {shown} ({n} bytes)"),
        }))
    }
}

//! `read_file`: numbered lines of a text file.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tackle_protocol::ToolAnnotations;
use tackle_tools::{ToolContext, ToolDoc, ToolFailure, ToolOutput, TypedTool};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use crate::{BuiltinConfig, WorkspaceJail};

/// Bytes inspected for NUL to tell binary files apart.
const SNIFF_BYTES: usize = 8 * 1024;
/// Characters of one line shown before it is cut.
const MAX_LINE_CHARS: usize = 2000;

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// File path relative to the workspace root. Example: "src/main.rs".
    pub path: String,
    /// First line to return, counting from 1. Defaults to 1.
    #[serde(default)]
    pub offset: Option<u64>,
    /// Most lines to return. Defaults to 1000.
    #[serde(default)]
    pub limit: Option<u64>,
}

/// The `read_file` tool.
#[derive(Debug, Clone)]
pub struct ReadFile {
    config: BuiltinConfig,
}

impl ReadFile {
    /// A reader with these limits.
    pub fn new(config: BuiltinConfig) -> Self {
        Self { config }
    }
}

#[async_trait]
impl TypedTool for ReadFile {
    type Args = ReadFileArgs;

    fn name(&self) -> &str {
        "read_file"
    }

    fn description(&self) -> String {
        ToolDoc::new("Read a text file of the workspace as numbered lines.")
            .use_when("you need the contents of a file whose path you know")
            .use_when("a file is long: read it in parts with offset and limit")
            .does_not("list directories (use list_files) or search many files (use shell with grep or rg)")
            .does_not("read binary files")
            .arg("path", "Path relative to the workspace root. Example: \"src/lib.rs\"")
            .arg("offset", "First line, from 1. Example: 200")
            .arg("limit", "Most lines to return, default 1000. Example: 100")
            .returns("Lines as \"<number>\\t<text>\", then a line saying which lines were shown of how many and how to read more.")
            .example(r#"{"path": "README.md"}"#)
            .example(r#"{"path": "src/parser.rs", "offset": 120, "limit": 60}"#)
            .render()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }

    async fn run(&self, args: ReadFileArgs, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        let jail = WorkspaceJail::new(&ctx.workspace)?;
        let path = jail.resolve(&args.path)?;
        let shown = jail.display(&path);
        let meta = tokio::fs::metadata(&path).await.map_err(|e| {
            let f = ToolFailure::from(e);
            if f.category == tackle_protocol::ErrorCategory::NotFound {
                ToolFailure::not_found(format!("no file {shown} in the workspace"))
                    .with_hint("list_files shows what exists; paths are relative to the workspace root")
            } else {
                f
            }
        })?;
        if meta.is_dir() {
            return Err(ToolFailure::invalid_args(format!("{shown} is a directory"))
                .with_hint("use list_files for directories"));
        }
        let ranged = args.offset.is_some() || args.limit.is_some();
        if meta.len() > self.config.read_max_bytes && !ranged {
            return Err(ToolFailure::invalid_args(format!(
                "{shown} is {} bytes, more than the {} bytes read at once",
                meta.len(),
                self.config.read_max_bytes
            ))
            .with_hint("read it in parts: offset 1, limit 500; or search it with shell and grep"));
        }
        let mut file = tokio::fs::File::open(&path).await?;
        let mut head = vec![0u8; SNIFF_BYTES];
        let n = file.read(&mut head).await?;
        if head[..n].contains(&0) {
            return Err(ToolFailure::invalid_args(format!("{shown} looks binary (it contains NUL bytes)"))
                .with_hint("inspect binary files with shell tools such as file, xxd or strings"));
        }
        drop(file);

        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(self.config.read_default_lines).max(1);
        let reader = BufReader::new(tokio::fs::File::open(&path).await?);
        let mut lines = reader.split(b'\n');
        let mut out = String::new();
        let mut number = 0u64;
        let mut last_shown = 0u64;
        while let Some(raw) = lines.next_segment().await? {
            number += 1;
            if number < offset || number >= offset + limit {
                continue;
            }
            let text = String::from_utf8_lossy(&raw);
            let text = text.strip_suffix('\r').unwrap_or(&text);
            let text = match text.char_indices().nth(MAX_LINE_CHARS) {
                Some((i, _)) => format!("{}… [line cut at {MAX_LINE_CHARS} characters]", &text[..i]),
                None => text.to_owned(),
            };
            out.push_str(&format!("{number:>6}\t{text}\n"));
            last_shown = number;
        }
        let total = number;
        if total == 0 {
            return Ok(ToolOutput::text(format!("{shown} is empty")));
        }
        if offset > total {
            return Err(ToolFailure::invalid_args(format!(
                "offset {offset} is past the end: {shown} has {total} lines"
            )));
        }
        if last_shown < total {
            out.push_str(&format!(
                "[lines {offset}-{last_shown} of {total}; read more with offset {}]\n",
                last_shown + 1
            ));
        } else {
            out.push_str(&format!("[lines {offset}-{last_shown} of {total}]\n"));
        }
        Ok(ToolOutput::text(out))
    }
}

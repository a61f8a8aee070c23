//! `edit_file`: replace an exact string in a file and show the diff.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tackle_protocol::ToolAnnotations;
use tackle_tools::{ToolContext, ToolDoc, ToolFailure, ToolOutput, TypedTool};

use crate::WorkspaceJail;
use crate::write_file::write_atomic;

/// Largest diff returned, in bytes.
const MAX_DIFF_BYTES: usize = 4 * 1024;

/// Arguments of `edit_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    /// File path relative to the workspace root. Example: "src/lib.rs".
    pub path: String,
    /// Exact text to replace, including whitespace and indentation; must occur once unless replace_all.
    pub old_string: String,
    /// Replacement text.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one. Defaults to false.
    #[serde(default)]
    pub replace_all: Option<bool>,
}

/// The `edit_file` tool.
#[derive(Debug, Clone, Default)]
pub struct EditFile;

/// The line most similar to the first line of `needle`, for "not found" hints.
fn closest_line(haystack: &str, needle: &str) -> Option<(usize, String)> {
    let first = needle.lines().map(str::trim).find(|l| !l.is_empty())?;
    let words: Vec<&str> = first.split_whitespace().collect();
    haystack
        .lines()
        .enumerate()
        .map(|(i, l)| (words.iter().filter(|w| l.contains(**w)).count(), i, l))
        .filter(|(score, _, _)| *score > 0)
        .max_by_key(|(score, i, _)| (*score, std::cmp::Reverse(*i)))
        .map(|(_, i, l)| (i + 1, l.trim_end().to_owned()))
}

#[async_trait]
impl TypedTool for EditFile {
    type Args = EditFileArgs;

    fn name(&self) -> &str {
        "edit_file"
    }

    fn description(&self) -> String {
        ToolDoc::new("Replace an exact piece of text in a file of the workspace and return the diff.")
            .prerequisite("read the file first, so old_string matches exactly")
            .use_when("you change part of an existing file")
            .does_not("create files (use write_file) or match patterns: old_string is literal text")
            .arg("path", "Path relative to the workspace root. Example: \"src/lib.rs\"")
            .arg("old_string", "Exact text to replace, with its indentation; include surrounding lines to make it unique. Example: \"let x = 1;\"")
            .arg("new_string", "Replacement text. Example: \"let x = 2;\"")
            .arg("replace_all", "Replace every occurrence. Default false. Example: true")
            .returns("The number of replacements and a unified diff of the change.")
            .example(r#"{"path": "src/lib.rs", "old_string": "fn old()", "new_string": "fn new()"}"#)
            .render()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
            ..ToolAnnotations::default()
        }
    }

    async fn run(&self, args: EditFileArgs, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        if args.old_string.is_empty() {
            return Err(ToolFailure::invalid_args("old_string is empty")
                .with_hint("to create or overwrite a file use write_file"));
        }
        if args.old_string == args.new_string {
            return Err(ToolFailure::invalid_args(
                "old_string and new_string are identical; nothing would change",
            ));
        }
        let jail = WorkspaceJail::new(&ctx.workspace)?;
        let path = jail.resolve(&args.path)?;
        let shown = jail.display(&path);
        let bytes = std::fs::read(&path).map_err(|e| {
            let f = ToolFailure::from(e);
            if f.category == tackle_protocol::ErrorCategory::NotFound {
                ToolFailure::not_found(format!("no file {shown} in the workspace"))
                    .with_hint("create it with write_file")
            } else {
                f
            }
        })?;
        let text = String::from_utf8(bytes)
            .map_err(|_| ToolFailure::invalid_args(format!("{shown} is not UTF-8 text")))?;
        let count = text.matches(&args.old_string).count();
        let replace_all = args.replace_all.unwrap_or(false);
        match count {
            0 => {
                let mut failure = ToolFailure::not_found(format!("old_string was not found in {shown}"));
                let mut hint =
                    "read the file again and copy the text exactly, including whitespace and indentation"
                        .to_owned();
                if let Some((n, line)) = closest_line(&text, &args.old_string) {
                    hint.push_str(&format!("; the closest line is {n}: {line:?}"));
                }
                failure = failure.with_hint(hint);
                return Err(failure);
            }
            n if n > 1 && !replace_all => {
                return Err(ToolFailure::conflict(format!("old_string was found {n} times in {shown}"))
                    .with_hint(
                        "include more surrounding lines to make it unique, or set replace_all: true",
                    ));
            }
            _ => {}
        }
        let updated = if replace_all {
            text.replace(&args.old_string, &args.new_string)
        } else {
            text.replacen(&args.old_string, &args.new_string, 1)
        };
        let target = path.clone();
        let data = updated.clone().into_bytes();
        tokio::task::spawn_blocking(move || write_atomic(&target, &data))
            .await
            .map_err(|e| ToolFailure::internal(format!("write task failed: {e}")))??;
        let diff = similar::TextDiff::from_lines(&text, &updated)
            .unified_diff()
            .context_radius(2)
            .header(&format!("a/{shown}"), &format!("b/{shown}"))
            .to_string();
        let diff = if diff.len() > MAX_DIFF_BYTES {
            let mut cut = MAX_DIFF_BYTES;
            while !diff.is_char_boundary(cut) {
                cut -= 1;
            }
            format!("{}\n[diff cut at {MAX_DIFF_BYTES} bytes]\n", &diff[..cut])
        } else {
            diff
        };
        let n = if replace_all { count } else { 1 };
        Ok(ToolOutput::text(format!(
            "edited {shown}: {n} replacement{}\n{diff}",
            if n == 1 { "" } else { "s" }
        )))
    }
}

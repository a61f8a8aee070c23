//! `list_files`: a .gitignore-aware, paginated listing.

use async_trait::async_trait;
use globset::GlobBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tackle_protocol::ToolAnnotations;
use tackle_tools::{ToolContext, ToolDoc, ToolFailure, ToolOutput, TypedTool};

use crate::{BuiltinConfig, WorkspaceJail};

/// Arguments of `list_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListFilesArgs {
    /// Directory relative to the workspace root. Defaults to the root. Example: "src".
    #[serde(default)]
    pub path: Option<String>,
    /// Glob on paths relative to that directory. Example: "**/*.rs".
    #[serde(default)]
    pub pattern: Option<String>,
    /// Include hidden files (names starting with a dot). Defaults to false.
    #[serde(default)]
    pub include_hidden: Option<bool>,
    /// Entries to skip, for pagination. Defaults to 0.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Most entries to return, at most 1000. Defaults to 200.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The `list_files` tool.
#[derive(Debug, Clone)]
pub struct ListFiles {
    config: BuiltinConfig,
}

impl ListFiles {
    /// A lister with these limits.
    pub fn new(config: BuiltinConfig) -> Self {
        Self { config }
    }
}

#[async_trait]
impl TypedTool for ListFiles {
    type Args = ListFilesArgs;

    fn name(&self) -> &str {
        "list_files"
    }

    fn description(&self) -> String {
        ToolDoc::new(
            "List files and directories of the workspace, recursively, skipping what .gitignore ignores.",
        )
        .use_when("you need to know which files exist, or find files by name pattern")
        .does_not("search file contents (use shell with grep or rg) or read files (use read_file)")
        .arg("path", "Directory relative to the workspace root, default the root. Example: \"src\"")
        .arg("pattern", "Glob on paths relative to that directory. Example: \"**/*.rs\"")
        .arg("include_hidden", "Include dot files. Default false. Example: true")
        .arg("offset", "Entries to skip. Default 0. Example: 200")
        .arg("limit", "Most entries, default 200, at most 1000. Example: 50")
        .returns("JSON: {path, total_count, offset, has_more, entries}; directories end with /.")
        .example(r#"{"pattern": "**/*.md"}"#)
        .example(r#"{"path": "src", "offset": 200, "limit": 200}"#)
        .render()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }

    async fn run(&self, args: ListFilesArgs, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        let jail = WorkspaceJail::new(&ctx.workspace)?;
        let dir = jail.resolve(args.path.as_deref().unwrap_or("."))?;
        let shown = jail.display(&dir);
        if !dir.is_dir() {
            return Err(ToolFailure::not_found(format!("{shown} is not a directory in the workspace")));
        }
        let matcher = match &args.pattern {
            Some(p) => Some(
                GlobBuilder::new(p)
                    .literal_separator(true)
                    .build()
                    .map_err(|e| ToolFailure::invalid_args(format!("invalid pattern {p:?}: {e}")))?
                    .compile_matcher(),
            ),
            None => None,
        };
        let include_hidden = args.include_hidden.unwrap_or(false);
        let offset = args.offset.unwrap_or(0);
        let limit = args.limit.unwrap_or(200).clamp(1, 1000);
        let max_scanned = self.config.list_max_scanned;
        let root = dir.clone();
        let (entries, scanned_all) = tokio::task::spawn_blocking(move || {
            let walker = ignore::WalkBuilder::new(&root)
                .hidden(!include_hidden)
                .git_ignore(true)
                .git_exclude(true)
                .ignore(true)
                .require_git(false)
                .follow_links(false)
                .sort_by_file_path(|a, b| a.cmp(b))
                .build();
            let mut entries = Vec::new();
            let mut scanned = 0usize;
            for entry in walker.flatten() {
                scanned += 1;
                if scanned > max_scanned {
                    return (entries, false);
                }
                let Ok(rel) = entry.path().strip_prefix(&root) else { continue };
                if rel.as_os_str().is_empty() {
                    continue;
                }
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                if let Some(m) = &matcher
                    && !m.is_match(rel)
                {
                    continue;
                }
                let mut name = rel.to_string_lossy().into_owned();
                if is_dir {
                    name.push('/');
                }
                entries.push(name);
            }
            (entries, true)
        })
        .await
        .map_err(|e| ToolFailure::internal(format!("listing failed: {e}")))?;
        let total = entries.len();
        let page: Vec<&String> = entries.iter().skip(offset).take(limit).collect();
        let has_more = offset + page.len() < total;
        let mut value = json!({
            "path": shown,
            "total_count": total,
            "offset": offset,
            "has_more": has_more,
            "entries": page,
        });
        if !scanned_all {
            value["note"] = json!(format!("stopped after {max_scanned} entries; narrow path or pattern"));
        }
        Ok(ToolOutput::text(serde_json::to_string_pretty(&value).unwrap_or_default()))
    }
}

//! `tackle config init`: writes a commented `tackle.toml` with every setting at its default.
//!
//! The values come from `Settings::default()` serialized, so the file never drifts from the
//! code: uncommenting any line gives a file that loads (a test uncomments all of them).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::settings::{Settings, user_config_dir};
use anyhow::{Context, Result};

use crate::UsageError;
use crate::cli::ConfigInitArgs;
use crate::runtime::workspace_dir;

/// What each top-level key and section is for, shown above it.
const NOTES: &[(&str, &str)] = &[
    (
        "provider",
        "Model provider: \"openai\", \"openai-responses\", \"anthropic\" or \"codex\". Unset: the one whose API key is set (OPENAI_API_KEY, ANTHROPIC_API_KEY). Env: TACKLE_PROVIDER.",
    ),
    ("model", "Model name; unset, a default per provider. Env: TACKLE_MODEL."),
    (
        "base_url",
        "Base URL of an OpenAI-compatible server (e.g. http://localhost:11434/v1 for Ollama). Env: OPENAI_BASE_URL / ANTHROPIC_BASE_URL.",
    ),
    ("openai_dialect", "Chat Completions dialect of that server; detected from the base URL when unset."),
    ("max_steps", "Steps (model calls) per turn; the last one runs without tools."),
    (
        "max_output_tokens",
        "Output token limit per model call (also the answer's reserve in the context window).",
    ),
    ("max_retries", "Retries of a failed model request."),
    (
        "streaming",
        "Whether model answers stream: \"auto\" (the default: when someone watches the turn, as every tackle front end does), \"always\", or \"never\" (whole JSON answers). Env: TACKLE_STREAMING.",
    ),
    (
        "whole_answer_timeout_secs",
        "Seconds a whole (non-streamed) answer may take, request to last byte (a streamed one is limited per read by read_timeout_secs). Env: TACKLE_WHOLE_ANSWER_TIMEOUT_SECS.",
    ),
    ("data_dir", "Where sessions are stored. Env: TACKLE_HOME."),
    (
        "dynamic_tools",
        "Per-step tool availability (masks, skills); false keeps every tool active. Env: TACKLE_DYNAMIC_TOOLS=off.",
    ),
    (
        "recoverable_compression",
        "Offload large tool outputs to the store behind a locator (false: cap them). Env: TACKLE_RECOVERABLE_COMPRESSION=off.",
    ),
    (
        "hooks",
        "Hook rules, first match wins, as [[hooks]] tables (docs/tools.md): allow, deny or ask before a tool runs.",
    ),
    (
        "permissions",
        "Permission modes (docs/tools.md): the mode of new sessions (default, accept-edits, plan, bypass) and what counts as a file edit.",
    ),
    (
        "checkpoints",
        "The workspace recorded before each turn, for `tackle rewind` (docs/sessions.md): what is ignored, size limits.",
    ),
    ("tools", "Limits of every tool call: time, and how much output the model sees."),
    ("builtins", "The builtin tools: shell, files, web fetch."),
    ("loop", "Doom-loop guard: when repeated failures stop a turn."),
    ("context", "Context window: its size, the answer's reserve, compaction thresholds, offloading."),
    ("server", "tackle serve: address, tokens (TACKLE_SERVER_TOKENS), limits."),
    (
        "mcp",
        "MCP servers as tool sources, e.g. [mcp.servers.files] command = \"npx\" args = [\"-y\", \"@modelcontextprotocol/server-filesystem\", \".\"].",
    ),
    (
        "deferral",
        "Deferring MCP tools behind tool_search when their definitions take too much of the window.",
    ),
];

/// Example values of settings that are unset by default.
const EXAMPLES: &[(&str, &str)] = &[
    ("provider", "\"openai\""),
    ("base_url", "\"http://localhost:11434/v1\""),
    ("openai_dialect", "\"compatible\""),
    ("max_output_tokens", "8192"),
    ("data_dir", "\"~/.local/share/tackle\""),
];

/// The commented file.
pub fn template() -> Result<String> {
    let defaults = toml::to_string(&Settings::default()).context("cannot render the default settings")?;
    let mut out = String::from(
        "# tackle.toml: Tackle's configuration, every setting at its default (commented out).\n\
         # Uncomment and change what you need. Read from the user config dir, then the workspace;\n\
         # TACKLE_* and the SDK variables override it. `tackle config` prints what is in effect.\n",
    );
    let note = |key: &str| NOTES.iter().find(|(k, _)| *k == key).map(|(_, n)| *n);
    // Top-level keys unset by default do not serialize: show an example.
    let mut top = Vec::new();
    let model = crate::settings::default_model(tackle_provider::ProviderKind::Openai);
    top.push(("model".to_owned(), format!("model = \"{model}\"")));
    for (key, example) in EXAMPLES {
        top.push((key.to_string(), format!("{key} = {example}")));
    }
    let mut in_table = false;
    for line in defaults.lines() {
        if line.starts_with('[') {
            in_table = true;
        }
        if in_table {
            break;
        }
        if let Some((key, _)) = line.split_once(" = ") {
            top.push((key.trim().to_owned(), line.to_owned()));
        }
    }
    let order = [
        "provider",
        "model",
        "base_url",
        "openai_dialect",
        "max_steps",
        "max_output_tokens",
        "max_retries",
        "streaming",
        "data_dir",
        "dynamic_tools",
        "recoverable_compression",
    ];
    top.sort_by_key(|(k, _)| order.iter().position(|o| o == k).unwrap_or(order.len()));
    for (key, line) in &top {
        out.push('\n');
        if let Some(n) = note(key) {
            out.push_str(&format!("# {n}\n"));
        }
        out.push_str(&format!("# {line}\n"));
    }
    // Tables, as serialized, each with its note.
    let mut tables = false;
    for line in defaults.lines() {
        if line.starts_with('[') {
            tables = true;
            let name = line.trim_matches(|c| c == '[' || c == ']');
            let root = name.split('.').next().unwrap_or(name);
            out.push('\n');
            if !name.contains('.')
                && let Some(n) = note(root)
            {
                out.push_str(&format!("# {n}\n"));
            }
        }
        if !tables || line.is_empty() {
            continue;
        }
        out.push_str(&format!("# {line}\n"));
    }
    Ok(out)
}

/// Where the file goes: `--user` → the user config dir, else the workspace.
fn target(args: &ConfigInitArgs) -> Result<PathBuf> {
    if args.user {
        let dir = user_config_dir().ok_or_else(|| {
            UsageError("no user config directory here; pass --workspace DIR instead".into())
        })?;
        return Ok(dir.join("tackle.toml"));
    }
    Ok(workspace_dir(args.workspace.as_ref())?.join("tackle.toml"))
}

pub async fn run(args: ConfigInitArgs) -> Result<ExitCode> {
    let text = template()?;
    if args.stdout {
        out!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let path = target(&args)?;
    write_new(&path, &text, args.force)?;
    eprintln!("wrote {} (every setting commented out at its default)", path.display());
    Ok(ExitCode::SUCCESS)
}

fn write_new(path: &Path, text: &str, force: bool) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(UsageError(format!(
                "{} exists; keep it, or pass --force to replace it (or --stdout to print the template)",
                path.display()
            ))
            .into());
        }
        Err(e) => return Err(e).with_context(|| format!("cannot write {}", path.display())),
    };
    file.write_all(text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tackle_provider::ProviderKind;

    /// Uncommenting every setting line gives a file that loads, with the defaults: every key in
    /// the template is real (settings deny unknown fields) and no default is misstated.
    #[test]
    fn the_template_uncommented_loads_as_the_defaults() {
        let text = template().unwrap();
        let mut skip_examples: Vec<String> = EXAMPLES.iter().map(|(k, v)| format!("# {k} = {v}")).collect();
        skip_examples.push(format!("# model = \"{}\"", crate::settings::default_model(ProviderKind::Openai)));
        let uncommented: String = text
            .lines()
            .filter(|l| !skip_examples.iter().any(|e| e == l))
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| l.starts_with('[') || l.contains(" = "))
            .filter(|l| !NOTES.iter().any(|(_, n)| l == n))
            .map(|l| format!("{l}\n"))
            .collect();
        let parsed: Settings = toml::from_str(&uncommented).unwrap_or_else(|e| panic!("{e}\n{uncommented}"));
        assert_eq!(parsed, Settings::default());
        // The examples of unset settings are valid too.
        let examples: String = EXAMPLES.iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
        toml::from_str::<Settings>(&examples).unwrap();
        // As written, the file is all comments: it changes nothing.
        assert_eq!(toml::from_str::<Settings>(&text).unwrap(), Settings::default());
    }

    #[test]
    fn an_existing_file_is_kept_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tackle.toml");
        std::fs::write(&path, "max_steps = 3\n").unwrap();
        let err = write_new(&path, "x", false).unwrap_err();
        assert!(err.to_string().contains("--force"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "max_steps = 3\n");
        write_new(&path, "x", true).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "x");
    }
}

//! Command-line interface definition.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use tackle_provider::ProviderKind;

/// Tackle: a runtime for tool-using LLM agents.
#[derive(Debug, Parser)]
#[command(name = "tackle", version, propagate_version = true)]
pub struct Cli {
    /// More logging on stderr (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one prompt to completion and exit.
    Run(RunArgs),
    /// Chat in a REPL (/help lists the commands).
    Chat(ChatArgs),
    /// List, show or delete stored sessions.
    Sessions {
        /// What to do.
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Serve the chat API, the OpenAI-compatible endpoint and the web chat page over HTTP.
    Serve(ServeArgs),
    /// MCP servers configured as tool sources.
    Mcp {
        /// What to do.
        #[command(subcommand)]
        command: McpCommand,
    },
    /// An offline demo: a scripted model drives real tools in a temporary workspace.
    Demo(DemoArgs),
    /// Print the effective configuration (secrets masked).
    Config(ConfigArgs),
    /// Built-in benchmarks.
    Bench {
        /// Which benchmark.
        #[command(subcommand)]
        command: BenchCommand,
    },
}

/// `tackle bench ...`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Prompt-cache stability of the reference scenario in both wire formats (offline).
    Cache(BenchCacheArgs),
}

/// `tackle bench cache`.
#[derive(Debug, Args)]
pub struct BenchCacheArgs {
    /// Model steps in the scenario (at least 12).
    #[arg(long, default_value_t = 50)]
    pub steps: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the OpenAI run as a replay file (the fake model's script, the system
    /// messages, tool definitions, per-step allowed tools and tool results Tackle sent), so
    /// another framework can run the same scenario (bench/cache).
    #[arg(long, value_name = "FILE")]
    pub export: Option<std::path::PathBuf>,
}

/// Options shared by commands that talk to a model.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// Model provider (default: the one whose API key is set).
    #[arg(long, value_parser = parse_provider)]
    pub provider: Option<ProviderKind>,
    /// Model name.
    #[arg(long)]
    pub model: Option<String>,
    /// Base URL of the provider (e.g. http://localhost:11434/v1 for Ollama).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Workspace directory the tools work in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Resume this session (id or unique prefix) instead of starting a new one.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Steps (model calls) per turn; the last one runs without tools.
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// Approve every tool call that would ask for confirmation.
    #[arg(long)]
    pub yes: bool,
    /// Tools the model may call, as JSON: {"shell": false} masks shell; with any true entry only
    /// the true ones are active. The definitions sent never change.
    #[arg(long, value_name = "JSON")]
    pub tool_mask: Option<String>,
}

fn parse_provider(s: &str) -> Result<ProviderKind, String> {
    s.parse()
}

/// `tackle run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The prompt.
    pub prompt: String,
    /// Model and session options.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Write every event as JSON lines to FILE, or to stdout with `-`.
    #[arg(long, value_name = "FILE|-")]
    pub events: Option<String>,
    /// Print the final result as JSON on stdout instead of streaming text.
    #[arg(long)]
    pub json: bool,
}

/// `tackle chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Model and session options.
    #[command(flatten)]
    pub model: ModelArgs,
}

/// `tackle sessions ...`.
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List sessions, newest first.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Most sessions shown.
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Show one session: its record, messages and tool calls.
    Show {
        /// Session id or unique prefix.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Compact a session now: clear old tool outputs, summarize the oldest part (with the
    /// configured model), keep the last turn.
    Compact {
        /// Session id or unique prefix.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete a session and everything stored with it.
    Rm {
        /// Session id or unique prefix.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `tackle serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on, HOST:PORT (default 127.0.0.1:8787, or `[server] bind`). Without
    /// configured tokens only loopback addresses are allowed.
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<String>,
    /// Model and workspace options (--session and --tool-mask are per request here).
    #[command(flatten)]
    pub model: ModelArgs,
}

/// `tackle mcp ...`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Connect every configured server and list its state, tools and definition tokens.
    List(McpListArgs),
}

/// `tackle mcp list`.
#[derive(Debug, Args)]
pub struct McpListArgs {
    /// Model and workspace options (the workspace's tackle.toml is read).
    #[command(flatten)]
    pub model: ModelArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `tackle demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Write every event as JSON lines to FILE, or to stdout with `-`.
    #[arg(long, value_name = "FILE|-")]
    pub events: Option<String>,
    /// Keep the temporary workspace and print its path.
    #[arg(long)]
    pub keep: bool,
}

/// `tackle config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Workspace whose tackle.toml is read (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

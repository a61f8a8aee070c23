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
    /// Stored sessions: list, show, compact, export, import or delete them.
    Sessions {
        /// What to do.
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Serve the chat API, the OpenAI-compatible endpoint and the web chat page over HTTP.
    Serve(ServeArgs),
    /// A session's turns, or going back to before one: the workspace's files as they were
    /// (shell writes included) and/or the conversation.
    Rewind(RewindArgs),
    /// MCP servers configured as tool sources.
    Mcp {
        /// What to do.
        #[command(subcommand)]
        command: McpCommand,
    },
    /// An offline demo: a scripted model drives real tools in a temporary workspace.
    Demo(DemoArgs),
    /// Print the effective configuration (secrets masked); `config init` writes a tackle.toml.
    Config(ConfigArgs),
    /// Stored tool outputs that were offloaded behind a locator.
    Results {
        /// What to do.
        #[command(subcommand)]
        command: ResultsCommand,
    },
    /// Print a shell completion script: `tackle completions bash > /etc/bash_completion.d/tackle`,
    /// `tackle completions zsh > "${fpath[1]}/_tackle"`, `tackle completions fish > ~/.config/fish/completions/tackle.fish`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// The sandbox shell commands run in.
    Sandbox {
        /// What to do.
        #[command(subcommand)]
        command: SandboxCommand,
    },
    /// Chat channels (the Telegram bot) that `tackle serve` runs.
    Channels {
        /// What to do.
        #[command(subcommand)]
        command: ChannelsCommand,
    },
    /// Built-in benchmarks.
    Bench {
        /// Which benchmark.
        #[command(subcommand)]
        command: BenchCommand,
    },
}

/// `tackle sandbox ...`.
#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Try each sandbox backend on this machine and say which one commands would run in.
    Check(SandboxCheckArgs),
}

/// `tackle sandbox check`.
#[derive(Debug, Args)]
pub struct SandboxCheckArgs {
    /// Workspace whose tackle.toml is read (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `tackle bench ...`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Prompt-cache stability of the reference scenario in each wire format (offline).
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
    /// Model provider: openai (Chat Completions), openai-responses (the Responses API),
    /// anthropic, or codex (Codex as the model) (default: the one whose API key is set).
    #[arg(long, value_parser = provider_parser(), ignore_case = true)]
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
    /// Steps (model calls) per turn; the last one runs without tools.
    #[arg(long)]
    pub max_steps: Option<u32>,
}

/// Flags of commands that run turns in the terminal (`run`, `chat`); `serve` takes these per
/// request instead.
#[derive(Debug, Clone, Args)]
pub struct TurnArgs {
    /// Resume this session (id or unique prefix) instead of starting a new one.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Approve every tool call that would ask for confirmation.
    #[arg(long)]
    pub yes: bool,
    /// Tools the model may call, as JSON: {"shell": false} masks shell; with any true entry only
    /// the true ones are active. The definitions sent never change.
    #[arg(long, value_name = "JSON")]
    pub tool_mask: Option<String>,
    /// Permission mode of the session: default, accept-edits (file edits run without asking),
    /// plan (only tools that read, until you approve the model's plan) or bypass (nothing asks;
    /// needs the sandbox). Default: `[permissions] mode`, or the resumed session's.
    #[arg(long, value_name = "MODE", value_parser = parse_mode)]
    pub mode: Option<tackle_tools::PermissionMode>,
}

fn parse_mode(s: &str) -> Result<tackle_tools::PermissionMode, tackle_tools::ModeError> {
    s.parse()
}

/// The `--provider` values, listed in `--help` and offered by shell completion.
fn provider_parser() -> impl clap::builder::TypedValueParser<Value = ProviderKind> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
    PossibleValuesParser::new([
        PossibleValue::new("openai").help("OpenAI Chat Completions, or any compatible server"),
        PossibleValue::new("openai-responses")
            .alias("openai_responses")
            .help("OpenAI's Responses API (reasoning models)"),
        PossibleValue::new("anthropic").help("Anthropic Messages"),
        PossibleValue::new("codex").help("Codex's app-server as the model, with Codex's login"),
    ])
    .try_map(|s| s.parse::<ProviderKind>())
}

/// `tackle run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The prompt; `-` reads it from standard input.
    pub prompt: String,
    /// Model options.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Session and tool options.
    #[command(flatten)]
    pub turn: TurnArgs,
    /// Write every event as JSON lines to FILE, or to stdout with `-`.
    #[arg(long, value_name = "FILE|-")]
    pub events: Option<String>,
    /// Print the final result as JSON on stdout instead of streaming text.
    #[arg(long)]
    pub json: bool,
    /// The final answer must be JSON matching the JSON Schema in FILE: stdout is exactly that
    /// JSON (progress goes to stderr); the model is shown a validation error once, then the run
    /// fails (`output_invalid`).
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<std::path::PathBuf>,
}

/// `tackle chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Model options.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Session and tool options.
    #[command(flatten)]
    pub turn: TurnArgs,
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
    /// Write a session as Markdown (to read) or JSON (to import again).
    Export {
        /// Session id or unique prefix.
        id: String,
        /// `md` or `json`.
        #[arg(long, value_enum, default_value_t = ExportFormat::Md)]
        format: ExportFormat,
        /// Write to FILE instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Create a session from a JSON export (`tackle sessions export ID --format json`). An
    /// export imported before is refused (the message names the session it became) unless
    /// --duplicate asks for another copy.
    Import {
        /// The export file, or `-` for stdin.
        file: String,
        /// Import it even though it was imported before, as one more session.
        #[arg(long)]
        duplicate: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// A new session with the history up to a turn (optionally with its own copy of the files
    /// as they were then); the original is untouched.
    Fork(ForkArgs),
    /// Delete a session and everything stored with it.
    Rm {
        /// Session id or unique prefix.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `tackle rewind`.
#[derive(Debug, Args)]
pub struct RewindArgs {
    /// Session id or unique prefix.
    pub session: String,
    /// Go back to before this turn; without it, the session's turns are listed.
    pub turn: Option<i64>,
    /// Restore the files only; the conversation stays.
    #[arg(long)]
    pub files_only: bool,
    /// Rewind the conversation only; the files stay.
    #[arg(long)]
    pub conversation_only: bool,
    /// Only show what would change.
    #[arg(long)]
    pub dry_run: bool,
    /// Do it without asking.
    #[arg(long, short)]
    pub yes: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `tackle sessions fork`.
#[derive(Debug, Args)]
pub struct ForkArgs {
    /// Session id or unique prefix.
    pub id: String,
    /// The last turn the fork keeps (default: every turn).
    #[arg(long)]
    pub turn: Option<i64>,
    /// Give the fork its own copy of the workspace, as it was after that turn, in DIR (new or
    /// empty); without it, the fork works in the same workspace.
    #[arg(long, value_name = "DIR")]
    pub files: Option<PathBuf>,
    /// Title of the fork.
    #[arg(long)]
    pub title: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Formats of `tackle sessions export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Markdown, to read.
    Md,
    /// JSON, to import again.
    Json,
}

/// `tackle results ...`.
#[derive(Debug, Subcommand)]
pub enum ResultsCommand {
    /// Print the full text of an offloaded output (the locator from a tool result, `out_…`).
    Show {
        /// The locator.
        locator: String,
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
    /// Connect every configured server and list its state, protocol, tools and definition tokens.
    List(McpListArgs),
    /// Add a server to tackle.toml: `--url URL` (Streamable HTTP) or `-- COMMAND ARGS...` (stdio).
    Add(Box<McpAddArgs>),
    /// Remove a server from tackle.toml.
    Remove(McpNameArgs),
    /// One server: its settings (secrets masked), state, protocol, what it offers, and its
    /// stored sign-in (never the tokens).
    Get(McpNameArgs),
    /// A server's tools: names, descriptions and input schemas.
    Tools(McpNameArgs),
    /// Call one tool of a server and print the result (to try a server).
    Call(McpCallArgs),
    /// A server's resources and resource templates, or one resource's contents with `--read`.
    Resources(McpResourcesArgs),
    /// A server's prompts, or one prompt's messages with `--get`.
    Prompts(McpPromptsArgs),
    /// A server's skills (the skills extension): names, descriptions and files, as listed; no
    /// skill file is read (a skill is read when the model activates it).
    Skills(McpNameArgs),
    /// Sign in to a server that uses OAuth: opens the sign-in page with $BROWSER (or prints
    /// it) and receives the code on a loopback redirect; the credentials are stored (0600).
    Login(McpNameArgs),
    /// Forget a server's stored OAuth credentials.
    Logout(McpNameArgs),
    /// Serve Tackle itself as an MCP server (tools `tackle` and `tackle_reply`, with `--tools`
    /// its own tools too) over stdio, or over Streamable HTTP at http://ADDR/mcp with `--http`.
    Serve(Box<McpServeArgs>),
}

/// `tackle mcp serve`.
#[derive(Debug, Args)]
pub struct McpServeArgs {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (ADDR: `[mcp_serve] bind`,
    /// 127.0.0.1:8788, when left out). Without `[server]` tokens only loopback addresses are
    /// allowed.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "")]
    pub http: Option<String>,
    /// Also list Tackle's own tools, each call through the same executor as in a run (hooks,
    /// approvals, sandbox, output caps).
    #[arg(long)]
    pub tools: bool,
    /// Model and workspace options.
    #[command(flatten)]
    pub model: ModelArgs,
}

/// Where `tackle mcp` reads and writes tackle.toml.
#[derive(Debug, Clone, Args)]
pub struct McpWhere {
    /// Workspace whose tackle.toml is read (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

/// `tackle mcp get|tools|login|logout|remove NAME`.
#[derive(Debug, Args)]
pub struct McpNameArgs {
    /// The server's name (`[mcp.servers.NAME]`).
    pub name: String,
    /// Where tackle.toml is.
    #[command(flatten)]
    pub place: McpWhere,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// `remove`: remove it from the user's tackle.toml instead of the workspace's.
    #[arg(long)]
    pub user: bool,
}

/// `tackle mcp add`.
#[derive(Debug, Args)]
pub struct McpAddArgs {
    /// The server's name, the namespace of its tools (`NAME__tool`).
    pub name: String,
    /// A Streamable HTTP endpoint (instead of a command).
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub url: Option<String>,
    /// An HTTP header sent with every request, `NAME=VALUE` (repeatable; HTTP servers).
    #[arg(long = "header", value_name = "NAME=VALUE")]
    pub headers: Vec<String>,
    /// A variable set for the server process, `NAME=VALUE` (repeatable; stdio servers).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// The protocol revision: auto (default), 2026-07-28, 2025-11-25 or 2025-06-18.
    #[arg(long, value_name = "REVISION")]
    pub protocol: Option<String>,
    /// OAuth: a client ID registered with the server's authorization server.
    #[arg(long, value_name = "ID")]
    pub client_id: Option<String>,
    /// OAuth: the environment variable holding the client secret.
    #[arg(long, value_name = "VAR", requires = "client_id")]
    pub client_secret_env: Option<String>,
    /// OAuth: a scope to ask for (repeatable).
    #[arg(long = "scope", value_name = "SCOPE")]
    pub scopes: Vec<String>,
    /// OAuth: the HTTPS URL of a client ID metadata document describing this client, used as
    /// the client ID by authorization servers that accept them.
    #[arg(long, value_name = "URL")]
    pub client_metadata_url: Option<String>,
    /// OAuth: `authorization-code` (a person signs in; default), `client-credentials` (the
    /// client's own secret or key, no person), `enterprise-managed` (the user's ID token from
    /// the enterprise identity provider, exchanged; no browser) or `jwt-bearer` (workload
    /// identity: the platform's JWT for this workload; no person).
    #[arg(long, value_name = "GRANT",
          value_parser = ["authorization-code", "client-credentials", "enterprise-managed", "jwt-bearer"])]
    pub grant: Option<String>,
    /// Workload identity (`--grant jwt-bearer`): the variable holding the workload's JWT.
    #[arg(long, value_name = "VAR", requires = "client_id")]
    pub assertion_env: Option<String>,
    /// Workload identity: a file holding the workload's JWT (read at each exchange).
    #[arg(long, value_name = "PATH", requires = "client_id", conflicts_with = "assertion_env")]
    pub assertion_file: Option<String>,
    /// Enterprise-managed: the identity provider's issuer.
    #[arg(long, value_name = "URL", requires = "client_id")]
    pub idp_issuer: Option<String>,
    /// Enterprise-managed: the identity provider's token endpoint (default: from its OpenID
    /// configuration).
    #[arg(long, value_name = "URL", requires = "idp_issuer")]
    pub idp_token_endpoint: Option<String>,
    /// Enterprise-managed: this client's ID at the identity provider.
    #[arg(long, value_name = "ID", requires = "idp_issuer")]
    pub idp_client_id: Option<String>,
    /// Enterprise-managed: the variable holding this client's secret at the identity provider.
    #[arg(long, value_name = "VAR", requires = "idp_client_id")]
    pub idp_client_secret_env: Option<String>,
    /// Enterprise-managed: the variable holding the user's ID token from the identity provider.
    #[arg(long, value_name = "VAR", requires = "idp_issuer")]
    pub id_token_env: Option<String>,
    /// OAuth client credentials with `private_key_jwt`: the variable holding the PEM key.
    #[arg(long, value_name = "VAR", requires = "client_id")]
    pub private_key_env: Option<String>,
    /// The key's algorithm: ES256 (default), ES384, RS256, RS384, RS512.
    #[arg(long, value_name = "ALG", requires = "private_key_env",
          value_parser = ["ES256", "ES384", "RS256", "RS384", "RS512"])]
    pub signing_algorithm: Option<String>,
    /// Write to the user's tackle.toml instead of the workspace's.
    #[arg(long)]
    pub user: bool,
    /// Replace a server of the same name.
    #[arg(long)]
    pub force: bool,
    /// Where tackle.toml is.
    #[command(flatten)]
    pub place: McpWhere,
    /// The command and its arguments, after `--` (a stdio server).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `tackle mcp call`.
#[derive(Debug, Args)]
pub struct McpCallArgs {
    /// The server's name.
    pub name: String,
    /// The tool's name on the server.
    pub tool: String,
    /// The arguments as a JSON object (default `{}`); `-` reads them from standard input.
    pub arguments: Option<String>,
    /// Answer the server's questions with their defaults (decline when a required field has
    /// none) instead of asking.
    #[arg(long)]
    pub yes: bool,
    /// Print the server's whole result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Where tackle.toml is.
    #[command(flatten)]
    pub place: McpWhere,
}

/// `tackle mcp resources`.
#[derive(Debug, Args)]
pub struct McpResourcesArgs {
    /// The server's name.
    pub name: String,
    /// Print this resource's contents instead of the list.
    #[arg(long, value_name = "URI")]
    pub read: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Where tackle.toml is.
    #[command(flatten)]
    pub place: McpWhere,
}

/// `tackle mcp prompts`.
#[derive(Debug, Args)]
pub struct McpPromptsArgs {
    /// The server's name.
    pub name: String,
    /// Print this prompt's messages instead of the list.
    #[arg(long, value_name = "PROMPT")]
    pub get: Option<String>,
    /// An argument of the prompt, `NAME=VALUE` (repeatable).
    #[arg(long = "arg", value_name = "NAME=VALUE", requires = "get")]
    pub args: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Where tackle.toml is.
    #[command(flatten)]
    pub place: McpWhere,
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
    #[arg(long, value_name = "FILE|-", conflicts_with = "serve")]
    pub events: Option<String>,
    /// Keep the temporary workspace and print its path.
    #[arg(long)]
    pub keep: bool,
    /// Serve the web page and the HTTP API (as `tackle serve` does) with the scripted model
    /// instead of running once in the terminal: every message you send replays the demo.
    #[arg(long)]
    pub serve: bool,
    /// Address to listen on with --serve (default: [server] bind, 127.0.0.1:8787).
    #[arg(long, value_name = "ADDR", requires = "serve")]
    pub bind: Option<String>,
}

/// `tackle config init`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Write a commented tackle.toml with every setting at its default.
    Init(ConfigInitArgs),
}

/// `tackle config init`.
#[derive(Debug, Args)]
pub struct ConfigInitArgs {
    /// Directory to write tackle.toml in (default: the current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    pub workspace: Option<PathBuf>,
    /// Write the user's tackle.toml (in the user config dir) instead.
    #[arg(long)]
    pub user: bool,
    /// Replace an existing file.
    #[arg(long)]
    pub force: bool,
    /// Print the template instead of writing it.
    #[arg(long)]
    pub stdout: bool,
}

/// `tackle channels ...`.
#[derive(Debug, Subcommand)]
pub enum ChannelsCommand {
    /// Each configured channel: its settings, its token (masked) checked live, and what the store
    /// knows (offset, queued and handled updates, chats, when `tackle serve` last heard from it).
    Status(ChannelsStatusArgs),
}

/// `tackle channels status`.
#[derive(Debug, Args)]
pub struct ChannelsStatusArgs {
    /// Workspace whose tackle.toml is read (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Do not check the token with the service.
    #[arg(long)]
    pub offline: bool,
}

/// `tackle config`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ConfigArgs {
    /// `init` writes a tackle.toml; without a subcommand the effective configuration is printed.
    #[command(subcommand)]
    pub command: Option<ConfigCommand>,
    /// Workspace whose tackle.toml is read (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print JSON instead of TOML.
    #[arg(long)]
    pub json: bool,
    /// Print secrets (API keys, tokens, header and environment values) instead of masking them.
    #[arg(long)]
    pub show_secrets: bool,
}

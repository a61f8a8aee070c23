//! The `tackle` command.

mod approver;
mod bench;
mod channels_cmd;
mod chat;
mod cli;
mod config_cmd;
mod config_init;
mod demo;
mod export;
mod markdown;
mod mcp_cmd;
mod render;
mod run;
mod runtime;
mod screen;
mod serve;
mod sessions;
mod settings;
mod style;
mod terminal;
mod tool_view;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};

use clap::Parser;
use tracing_subscriber::EnvFilter;

use crate::cli::{Cli, Command};

/// A usage or configuration error: exit code 2, and the message says what to do.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// How many `-v` were given: internal warnings show from 1.
static VERBOSITY: AtomicU8 = AtomicU8::new(0);

/// The `-v` count of this run.
pub fn verbosity() -> u8 {
    VERBOSITY.load(Ordering::Relaxed)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    VERBOSITY.store(cli.verbose, Ordering::Relaxed);
    init_logging(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Run(args) => run::run(args).await,
            Command::Chat(args) => chat::run(args).await,
            Command::Sessions { command } => sessions::run(command).await,
            Command::Serve(args) => serve::run(args).await,
            Command::Mcp { command: cli::McpCommand::List(args) } => mcp_cmd::list(args).await,
            Command::Demo(args) => demo::run(args).await,
            Command::Config(cli::ConfigArgs { command: Some(cli::ConfigCommand::Init(init)), .. }) => {
                config_init::run(init).await
            }
            Command::Config(args) => config_cmd::run(args).await,
            Command::Results { command: cli::ResultsCommand::Show { locator } } => {
                sessions::show_result(&locator).await
            }
            Command::Completions { shell } => {
                let mut command = <Cli as clap::CommandFactory>::command();
                clap_complete::generate(shell, &mut command, "tackle", &mut std::io::stdout());
                Ok(ExitCode::SUCCESS)
            }
            Command::Channels { command: cli::ChannelsCommand::Status(args) } => {
                channels_cmd::status(args).await
            }
            Command::Bench { command: cli::BenchCommand::Cache(args) } => bench::run(args).await,
        }
    });
    // Don't wait for lingering tasks (e.g. a Ctrl-C listener) on the way out.
    runtime.shutdown_background();
    match result {
        Ok(code) => code,
        Err(e) => {
            let usage = e.chain().any(|c| {
                c.is::<UsageError>()
                    || c.is::<settings::SettingsError>()
                    || matches!(
                        c.downcast_ref::<tackle_agent::AgentError>(),
                        Some(tackle_agent::AgentError::Workspace { .. })
                    )
            });
            eprintln!("error: {e:#}");
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info,tackle=info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // A log file or a pipe gets plain text: colour codes only on a terminal.
        .with_ansi(style::color_allowed(std::io::stderr().is_terminal()))
        .with_target(false)
        .try_init();
}

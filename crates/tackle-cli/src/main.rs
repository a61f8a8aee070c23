//! The `tackle` command.

#[macro_use]
mod output;

mod approver;
mod bench;
mod channels_cmd;
mod chat;
mod cli;
mod config_cmd;
mod config_init;
mod demo;
mod elicitor;
mod export;
mod markdown;
mod mcp_cmd;
mod mcp_serve;
mod mcp_sign_in;
mod render;
mod rewind_cmd;
mod run;
mod runtime;
mod sandbox_cmd;
mod screen;
mod serve;
mod sessions;
mod settings;
mod style;
mod terminal;
mod tool_view;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

use clap::Parser;
use tackle_telemetry::Metrics;
use tackle_telemetry::otlp::TraceExporter;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

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

/// What `tackle serve` serves at `/metrics`, fed by the GenAI spans; set only for `serve`.
pub(crate) static METRICS: OnceLock<Metrics> = OnceLock::new();

/// How many `-v` were given: internal warnings show from 1.
static VERBOSITY: AtomicU8 = AtomicU8::new(0);

/// The `-v` count of this run.
pub fn verbosity() -> u8 {
    VERBOSITY.load(Ordering::Relaxed)
}

fn main() -> ExitCode {
    // `tackle` re-executed as the sandbox helper: this must come first, while the process has a
    // single thread (entering a user namespace requires it).
    if let Some(code) = tackle_sandbox::run_helper_if_requested() {
        return ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX));
    }
    // Nothing running as this user (a command run with the sandbox off, any other program) may
    // read this process: /proc/<pid>/environ, mem, and ptrace need CAP_SYS_PTRACE once it is not
    // dumpable. Children get back the default when they execute a program.
    #[cfg(target_os = "linux")]
    let hardened = nix::sys::prctl::set_dumpable(false);
    #[cfg(not(target_os = "linux"))]
    let hardened: Result<(), &str> = Err("not supported on this platform");
    let cli = Cli::parse();
    VERBOSITY.store(cli.verbose, Ordering::Relaxed);
    // Commands that build an agent try the sandbox first: start that now, while the rest starts.
    if matches!(
        cli.command,
        Command::Run(_) | Command::Chat(_) | Command::Serve(_) | Command::Demo(_) | Command::Config(_)
    ) && let Ok(exe) = std::env::current_exe()
    {
        tackle_sandbox::prefetch(exe);
    }
    // One thread runs a command's loop: a turn is sequential (model call, tools, store), and on
    // one thread its tasks wake each other without crossing threads, which keeps context
    // switches and memory (thread stacks, allocator arenas) down. The servers (`serve`, `mcp
    // serve`), which run many sessions at once, get a worker per core.
    let serves_many = matches!(cli.command, Command::Serve(_))
        || matches!(&cli.command, Command::Mcp { command: cli::McpCommand::Serve(_) });
    let mut builder = if serves_many {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    if matches!(cli.command, Command::Serve(_)) {
        let _ = METRICS.set(Metrics::new());
    }
    // The server's log is its operators' view: warnings show. A terminal front end shows what
    // matters as its own lines (a retry, a compaction), so its raw log lines wait for `-v`.
    let quiet = if matches!(cli.command, Command::Serve(_)) { "warn" } else { "error" };
    let exporter = match init_logging(cli.verbose, quiet, runtime.handle()) {
        Ok(exporter) => exporter,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = hardened {
        tracing::warn!(error = %e, "cannot make the process non-dumpable; same-user processes can read it");
    }
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Run(args) => run::run(args).await,
            Command::Chat(args) => chat::run(args).await,
            Command::Sessions { command } => sessions::run(command).await,
            Command::Serve(args) => serve::run(args).await,
            Command::Rewind(args) => rewind_cmd::rewind(args).await,
            Command::Mcp { command } => mcp_cmd::run(command).await,
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
                // Generated whole, then written: clap_complete panics when its writer fails.
                let mut script = Vec::new();
                clap_complete::generate(shell, &mut command, "tackle", &mut script);
                output::write_all(&script);
                Ok(ExitCode::SUCCESS)
            }
            Command::Sandbox { command: cli::SandboxCommand::Check(args) } => sandbox_cmd::check(args).await,
            Command::Channels { command: cli::ChannelsCommand::Status(args) } => {
                channels_cmd::status(args).await
            }
            Command::Bench { command: cli::BenchCommand::Cache(args) } => bench::run(args).await,
        }
    });
    // The last spans go out while the runtime that posts them still runs: the exporter waits on a
    // blocking thread while `block_on` drives the runtime (on one thread, nothing else would).
    if let Some(exporter) = exporter {
        let _ =
            runtime.block_on(async move { tokio::task::spawn_blocking(move || exporter.shutdown()).await });
    }
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

/// Logs to stderr (`RUST_LOG`, `-v`; `quiet` is the level without them), plus, each with its own filter: OTLP trace export when
/// `OTEL_EXPORTER_OTLP_ENDPOINT` is set, and the `/metrics` registry of `tackle serve`. Without
/// either, the GenAI spans stay disabled and cost nothing. An unusable `OTEL_*` setting is an error.
fn init_logging(
    verbose: u8,
    quiet: &str,
    runtime: &tokio::runtime::Handle,
) -> Result<Option<TraceExporter>, tackle_telemetry::otlp::TelemetryError> {
    let default = match verbose {
        0 => quiet,
        1 => "info,tackle=info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let env = |k: &str| std::env::var(k).ok();
    let exporter = TraceExporter::from_env(&env, runtime.clone())?;
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // A log file or a pipe gets plain text: colour codes only on a terminal.
        .with_ansi(style::color_allowed(std::io::stderr().is_terminal()))
        .with_target(false)
        .with_filter(filter);
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(exporter.as_ref().map(|e| e.layer()))
        .with(METRICS.get().map(|m| m.layer()))
        .try_init();
    Ok(exporter)
}

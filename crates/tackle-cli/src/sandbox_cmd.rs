//! `tackle sandbox check`: what this machine supports, and the sandbox commands would run in.

use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::json;
use tackle_sandbox::{SandboxStatus, Support};

use crate::UsageError;
use crate::cli::SandboxCheckArgs;
use crate::runtime::{sandbox_for, workspace_dir};
use crate::settings::Settings;

pub async fn check(args: SandboxCheckArgs) -> Result<ExitCode> {
    let workspace = workspace_dir(args.workspace.as_ref())?;
    let settings = Settings::load(&workspace).map_err(|e| UsageError(e.to_string()))?.settings;
    let helper = std::env::current_exe().context("cannot locate the tackle executable")?;
    let (support, sandbox) = tokio::task::spawn_blocking(move || {
        let support = Support::probe(&helper);
        (support, sandbox_for(&settings, &workspace))
    })
    .await?;
    let config = &sandbox;
    let usable = !matches!(sandbox.status(), SandboxStatus::Unavailable { .. });
    // What blocks a UNIX socket out of the sandbox (a database's socket directory, /run): on
    // both backends, seccomp refuses to create one while the network is off.
    let unix_sockets = if config.network() {
        "allowed (the network is on)"
    } else {
        "refused by seccomp: socket(AF_UNIX) fails with EACCES, pathname and abstract alike (socketpair stays allowed)"
    };
    if args.json {
        let value = json!({
            "namespaces": { "available": support.namespaces.is_ok(), "reason": support.namespaces.as_ref().err() },
            "landlock": {
                "available": support.landlock.is_ok(),
                "abi": support.landlock.as_ref().ok(),
                "reason": support.landlock.as_ref().err(),
            },
            "mode": config.mode(),
            "network": config.network(),
            "status": sandbox.status(),
            "in_force": sandbox.describe(),
            "hidden": sandbox.hidden(),
            "unix_sockets": unix_sockets,
        });
        outln!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        let line = |ok: bool, what: String| format!("{} {what}", if ok { "yes" } else { "no " });
        outln!(
            "{}",
            line(
                support.namespaces.is_ok(),
                match &support.namespaces {
                    Ok(()) => "user namespaces (user, mount, PID, network; a fresh /proc)".to_owned(),
                    Err(e) => format!("user namespaces: {e}"),
                }
            )
        );
        outln!(
            "{}",
            line(
                support.landlock.is_ok(),
                match &support.landlock {
                    Ok(abi) => format!("Landlock ABI {abi} + seccomp"),
                    Err(e) => format!("Landlock: {e}"),
                }
            )
        );
        outln!("sandbox: {}", sandbox.describe());
        outln!("UNIX sockets: {unix_sockets}");
        for path in sandbox.hidden() {
            outln!("hidden from commands: {}", path.display());
        }
    }
    Ok(if usable { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

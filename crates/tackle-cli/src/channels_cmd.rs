//! `tackle channels status`: the configured chat channels, their tokens checked live, and what
//! the store knows about them.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use serde_json::{Value, json};
use tackle_channels::ChannelStatus;
use tackle_channels::telegram::{TelegramChannel, TelegramConfig, TelegramMode};

use crate::UsageError;
use crate::cli::ChannelsStatusArgs;
use crate::runtime::{env_lookup, open_store, workspace_dir};
use crate::settings::Settings;

/// How long the live check of a token may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

pub async fn status(args: ChannelsStatusArgs) -> Result<ExitCode> {
    let workspace = workspace_dir(args.workspace.as_ref())?;
    let settings = Settings::load(&workspace).map_err(|e| UsageError(e.to_string()))?.settings;
    let Some(telegram) = &settings.channels.telegram else {
        if args.json {
            outln!("[]");
        } else {
            eprintln!(
                "no channels configured: add [channels.telegram] with token_file and allowed_users to tackle.toml \
                 (docs/channels.md)"
            );
        }
        return Ok(ExitCode::SUCCESS);
    };
    let store = open_store(&settings).await?;
    let summary = store.channels().summary("telegram").await?;
    let recorded: Option<ChannelStatus> =
        store.channels().value("telegram", tackle_channels::STATUS_KEY).await?;
    store.close().await;
    let token = telegram.token(&workspace, &env_lookup);
    let check: Option<Result<String, String>> = match (&token, args.offline) {
        (_, true) => None,
        (Err(e), false) => Some(Err(e.to_string())),
        (Ok(token), false) => Some(check(telegram, token.clone()).await),
    };
    let healthy = token.is_ok() && !matches!(check, Some(Err(_)));
    let row = json!({
        "channel": "telegram",
        "mode": telegram.mode,
        "api_url": telegram.api_url,
        "webhook_url": telegram.webhook_url,
        "token": match &token { Ok(t) => Value::from(t.masked()), Err(e) => Value::from(format!("unavailable: {e}")) },
        "token_file": telegram.token_path(&workspace, &env_lookup),
        "allowed_users": telegram.allowed_users,
        "check": check.as_ref().map(|c| match c { Ok(bot) => json!({"ok": true, "bot": bot}), Err(e) => json!({"ok": false, "error": e}) }),
        "store": summary,
        "server": recorded,
    });
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&json!([row]))?);
    } else {
        print_text(telegram, &row, check.as_ref(), recorded.as_ref());
    }
    Ok(if healthy { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// `getMe` with the configured token, without retries, within [`CHECK_TIMEOUT`].
async fn check(
    config: &TelegramConfig,
    token: tackle_channels::telegram::BotToken,
) -> Result<String, String> {
    let config = TelegramConfig { max_retries: 0, ..config.clone() };
    let bot = TelegramChannel::new(config, token).map_err(|e| e.to_string())?;
    match tokio::time::timeout(CHECK_TIMEOUT, bot.get_me()).await {
        Ok(Ok(name)) => Ok(name),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {} s", CHECK_TIMEOUT.as_secs())),
    }
}

fn print_text(
    telegram: &TelegramConfig,
    row: &Value,
    check: Option<&Result<String, String>>,
    recorded: Option<&ChannelStatus>,
) {
    let mode = match telegram.mode {
        TelegramMode::Polling => "polling".to_owned(),
        TelegramMode::Webhook => {
            format!("webhook {}", telegram.webhook_url.as_deref().unwrap_or("(no webhook_url)"))
        }
    };
    outln!("telegram  {mode}  {}", telegram.api_url);
    outln!("  token          {}", row["token"].as_str().unwrap_or_default());
    match check {
        Some(Ok(bot)) => outln!("  check          ok: @{bot}"),
        Some(Err(e)) => outln!("  check          FAILED: {e}"),
        None => outln!("  check          skipped (--offline)"),
    }
    let users: Vec<String> = telegram.allowed_users.iter().map(i64::to_string).collect();
    outln!(
        "  allowed users  {}",
        if users.is_empty() { "none (everyone is refused)".into() } else { users.join(", ") }
    );
    let s = &row["store"];
    outln!(
        "  store          offset {}, {} queued, {} running, {} handled, {} chat sessions, last update {}",
        s["offset"].as_i64().map_or("none".into(), |o| o.to_string()),
        s["queued"],
        s["running"],
        s["done"],
        s["sessions"],
        ago(s["last_received_at"].as_i64())
    );
    match recorded {
        Some(r) => outln!(
            "  server         {}, last contact {}{}",
            if r.running { "receiving" } else { "stopped" },
            ago(r.last_contact_at),
            r.last_error.as_deref().map(|e| format!(", last error: {e}")).unwrap_or_default()
        ),
        None => outln!("  server         never ran (`tackle serve` starts the channels)"),
    }
}

fn ago(ms: Option<i64>) -> String {
    let Some(ms) = ms else { return "never".into() };
    let secs = (tackle_store::now_ms() - ms).max(0) / 1000;
    match secs {
        s if s < 120 => format!("{s} s ago"),
        s if s < 7200 => format!("{} min ago", s / 60),
        s => format!("{} h ago", s / 3600),
    }
}

//! `tackle config`: the effective configuration, secrets masked.

use std::process::ExitCode;

use crate::settings::Settings;
use anyhow::Result;
use serde_json::json;
use tackle_provider::ApiKey;

use crate::UsageError;
use crate::cli::ConfigArgs;
use crate::runtime::{env_lookup, workspace_dir};

pub async fn run(args: ConfigArgs) -> Result<ExitCode> {
    let workspace = workspace_dir(args.workspace.as_ref())?;
    let loaded = Settings::load(&workspace).map_err(|e| UsageError(e.to_string()))?;
    let settings = &loaded.settings;
    let provider = match settings.provider_config(&env_lookup) {
        Ok(c) => json!({
            "kind": c.kind,
            "base_url": c.base_url,
            "api_key": c.api_key.as_ref().map(ApiKey::masked),
            "model": settings.model_for(c.kind),
            "max_retries": c.retry.max_retries,
        }),
        Err(e) => json!({ "error": e.to_string() }),
    };
    // Channel tokens are read from files or the environment, never kept in the settings: shown
    // masked, so a wrong file is visible without printing the secret.
    let channels = settings.channels.telegram.as_ref().map(|t| {
        let token = match t.token(&workspace, &env_lookup) {
            Ok(token) => token.masked(),
            Err(e) => format!("unavailable: {e}"),
        };
        json!({ "telegram": { "token": token } })
    });
    let value = json!({
        "sources": loaded.sources,
        "channel_tokens": channels,
        "data_dir": settings.data_dir().ok(),
        "database": settings.database_path().ok(),
        "provider": provider,
        "settings": settings,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        let text = toml::to_string_pretty(&value).unwrap_or_else(|_| value.to_string());
        println!("{text}");
    }
    Ok(ExitCode::SUCCESS)
}

//! `tackle config`: the effective configuration as TOML (or JSON), every secret masked unless
//! `--show-secrets`.
//!
//! What counts as a secret is decided by shape rather than by field: every value under
//! `headers` or `env` (this module), every string whose key names a secret (token, key, secret,
//! password, credential, ...; [`tackle_protocol::is_secret_key`]), and the user info and
//! secret-named parameters of every URL ([`tackle_protocol::mask_url`], the masker every error
//! message uses too). The TOML printed is a valid `tackle.toml` (unset options are left out: TOML has no
//! null), preceded by comments saying where it came from and what is in force.

use std::process::ExitCode;

use anyhow::Result;
use serde_json::{Map, Value, json};
use tackle_protocol::{MASK, is_secret_key, mask_url};
use tackle_provider::ApiKey;

use crate::UsageError;
use crate::cli::ConfigArgs;
use crate::runtime::{env_lookup, sandbox_for, workspace_dir};
use crate::settings::Settings;

/// Object keys whose every value is a secret (HTTP headers, environment variables).
const SECRET_MAPS: [&str; 3] = ["headers", "env", "shell_env"];

/// Masks every secret in `value` in place (see the module documentation).
pub fn mask_secrets(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if SECRET_MAPS.contains(&key.as_str()) && v.is_object() {
                    mask_all_strings(v);
                } else if is_secret_key(key) {
                    mask_secret_value(v);
                } else {
                    mask_secrets(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_secrets),
        Value::String(s) if s.contains("://") => *s = mask_url(s),
        _ => {}
    }
}

/// The value of a secret-named key: strings (alone or in a list) are masked; tables in it (a
/// list of `[[server.tokens]]`) are searched like any other.
fn mask_secret_value(value: &mut Value) {
    match value {
        Value::String(s) => *s = MASK.to_owned(),
        Value::Array(items) => items.iter_mut().for_each(mask_secret_value),
        other => mask_secrets(other),
    }
}

/// Replaces every string in `value` with [`MASK`] (numbers and booleans are not secrets: a
/// `max_tokens` stays readable).
fn mask_all_strings(value: &mut Value) {
    match value {
        Value::String(s) => *s = MASK.to_owned(),
        Value::Array(items) => items.iter_mut().for_each(mask_all_strings),
        Value::Object(map) => map.values_mut().for_each(mask_all_strings),
        _ => {}
    }
}

/// `value` as TOML: nulls (unset options) are left out, since TOML has none.
fn to_toml(value: &Value) -> Option<toml::Value> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => toml::Value::Integer(i),
            (None, Some(f)) => toml::Value::Float(f),
            (None, None) => toml::Value::String(n.to_string()),
        },
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(items) => toml::Value::Array(items.iter().filter_map(to_toml).collect()),
        Value::Object(map) => toml::Value::Table(to_table(map)),
    })
}

fn to_table(map: &Map<String, Value>) -> toml::Table {
    map.iter().filter_map(|(k, v)| to_toml(v).map(|v| (k.clone(), v))).collect()
}

/// One comment line (no line breaks can escape into the TOML).
fn comment(text: &str) -> String {
    format!("# {}\n", text.replace(['\n', '\r'], " "))
}

pub async fn run(args: ConfigArgs) -> Result<ExitCode> {
    let workspace = workspace_dir(args.workspace.as_ref())?;
    let loaded = Settings::load(&workspace).map_err(|e| UsageError(e.to_string()))?;
    // Channel tokens are read from files or the environment, never kept in the settings: shown
    // masked, so a wrong file is visible without printing the secret.
    let channel_token =
        loaded.settings.channels.telegram.as_ref().map(|t| match t.token(&workspace, &env_lookup) {
            Ok(token) => token.masked(),
            Err(e) => format!("unavailable: {e}"),
        });
    let settings = loaded.settings.clone();
    let sandbox = tokio::task::spawn_blocking(move || sandbox_for(&settings, &workspace)).await?;
    let settings = &loaded.settings;
    let show = args.show_secrets;
    let secret_url = |url: &str| if show { url.to_owned() } else { mask_url(url) };
    let provider = match settings.provider_config(&env_lookup) {
        Ok(c) => json!({
            "kind": c.kind,
            "base_url": secret_url(&c.base_url),
            "api_key": c.api_key.as_ref().map(|k| if show { k.expose().to_owned() } else { ApiKey::masked(k) }),
            "model": settings.model_for(c.kind),
            "max_retries": c.retry.max_retries,
        }),
        Err(e) => json!({ "error": e.to_string() }),
    };
    let mut settings_value = serde_json::to_value(settings)?;
    if !show {
        mask_secrets(&mut settings_value);
    }
    if args.json {
        let value = json!({
            "sources": loaded.sources,
            "data_dir": settings.data_dir().ok(),
            "database": settings.store_display(),
            "provider": provider,
            "channel_tokens": channel_token.as_ref().map(|t| json!({"telegram": {"token": t}})),
            "sandbox": {
                "mode": sandbox.mode(),
                "network": sandbox.network(),
                "status": sandbox.status(),
                "in_force": sandbox.describe(),
                "hidden": sandbox.hidden(),
                "limits": sandbox.limits(),
            },
            "settings": settings_value,
        });
        outln!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = comment(&format!(
        "tackle config: the effective configuration, a valid tackle.toml. {}",
        if show { "SECRETS ARE SHOWN." } else { "Secrets are masked (--show-secrets shows them)." }
    ));
    let sources: Vec<String> = loaded.sources.iter().map(|p| p.display().to_string()).collect();
    out += &comment(&format!(
        "read from: {}",
        if sources.is_empty() { "no file (defaults and environment)".to_owned() } else { sources.join(", ") }
    ));
    out += &comment(&format!("sessions are stored in {}", settings.store_display()));
    let provider_line = match (&provider["kind"], &provider["error"]) {
        (Value::String(kind), _) => format!(
            "provider: {kind}, model {}, {}, api key {}",
            provider["model"].as_str().unwrap_or_default(),
            provider["base_url"].as_str().unwrap_or_default(),
            provider["api_key"].as_str().unwrap_or("none"),
        ),
        (_, error) => format!("provider: {}", error.as_str().unwrap_or("none")),
    };
    out += &comment(&provider_line);
    out += &comment(&format!("sandbox in force: {}", sandbox.describe()));
    if let Some(token) = &channel_token {
        out += &comment(&format!("telegram bot token: {token}"));
    }
    out.push('\n');
    let table = match &settings_value {
        Value::Object(map) => to_table(map),
        _ => toml::Table::new(),
    };
    out += &toml::to_string_pretty(&table)?;
    out!("{out}");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_shape_is_masked_and_nothing_else() {
        let mut value = json!({
            "model": "gpt",
            "max_output_tokens": 100,
            "base_url": "https://u:p4ss@h/v1?key=k3y",
            "mcp": {"servers": {
                "a": {"command": "srv", "env": {"PLAIN_NAME": "e-value"}, "env_allow": ["HOME"]},
                "b": {"url": "https://h/mcp?token=q-value", "headers": {"X-Custom": "h-value"}},
            }},
            "server": {"tokens": [{"user": "alice", "token": "t-value", "token_env": "ALICE_TOKEN"}],
                       "tokens_file": "/etc/tackle/tokens"},
            "builtins": {"shell_env": {"X": "s-value"}},
            "hooks": [{"tool": "shell", "password": ["l-value"]}],
        });
        mask_secrets(&mut value);
        let text = value.to_string();
        for secret in ["p4ss", "k3y", "e-value", "q-value", "h-value", "t-value", "s-value", "l-value"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        for kept in
            ["gpt", "100", "PLAIN_NAME", "X-Custom", "HOME", "alice", "ALICE_TOKEN", "/etc/tackle/tokens"]
        {
            assert!(text.contains(kept), "{kept} masked in {text}");
        }
    }

    #[test]
    fn toml_leaves_out_nulls_and_parses_back() {
        let value = json!({"a": null, "b": 1, "c": {"d": null, "e": [1, null, 2]}, "f": 1.5, "g": "x"});
        let Value::Object(map) = value else { unreachable!() };
        let text = toml::to_string_pretty(&to_table(&map)).unwrap();
        let back: toml::Table = text.parse().unwrap();
        assert!(!back.contains_key("a"));
        assert_eq!(back["c"]["e"].as_array().unwrap().len(), 2);
        assert_eq!(back["f"].as_float(), Some(1.5));
    }

    #[test]
    fn comments_cannot_break_out_of_their_line() {
        assert_eq!(comment("a\nb = 1"), "# a b = 1\n");
    }
}

//! `TACKLE_*` variables: every setting of `tackle.toml` has one, named after its path.
//!
//! `[context] offload_ttl_days` is `TACKLE_CONTEXT_OFFLOAD_TTL_DAYS`, `max_steps` is
//! `TACKLE_MAX_STEPS`. Switches read on/off (true/false, 1/0, yes/no), numbers as numbers, lists
//! as JSON arrays or comma-separated, tables (`[mcp.servers]`, `[server.workspaces]`, `[[hooks]]`)
//! as JSON. The variables are found by walking the settings' own shape, so a new setting gets its
//! variable without anyone writing code for it; `tests::every_setting_is_reachable` fails
//! when one cannot be reached.

use serde_json::Value;

use super::{EnvLookup, SettingsError};

/// Setting paths without a variable of their own: `[[server.tokens]]` holds secrets and is set
/// through `TACKLE_SERVER_TOKENS=user:token,...` (see [`super::ServerSettings`]).
const OWN_FORMAT: &[&str] = &["server.tokens"];

/// Extra names kept for settings that had a variable before the naming rule.
pub(crate) const ALIASES: &[(&str, &str)] =
    &[("TACKLE_HOME", "data_dir"), ("TACKLE_DATABASE_URL", "store.url")];

/// How a variable's text becomes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// on/off.
    Switch,
    /// A whole number.
    Integer,
    /// A number.
    Number,
    /// Text.
    Text,
    /// A list: a JSON array or comma-separated text.
    List,
    /// JSON (tables, and settings unset by default whose type the shape does not show).
    Json,
}

/// One setting reachable from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Variable {
    /// Dotted path in `tackle.toml` (`context.offload_ttl_days`).
    pub(crate) path: String,
    /// The variable (`TACKLE_CONTEXT_OFFLOAD_TTL_DAYS`).
    pub(crate) name: String,
    /// How its text is read.
    pub(crate) kind: Kind,
}

/// Every variable, from the shape of the default settings serialized as JSON.
pub(crate) fn variables(shape: &Value) -> Vec<Variable> {
    let mut out = Vec::new();
    walk(shape, &mut Vec::new(), &mut out);
    out
}

fn walk(value: &Value, path: &mut Vec<String>, out: &mut Vec<Variable>) {
    let dotted = path.join(".");
    if OWN_FORMAT.contains(&dotted.as_str()) {
        return;
    }
    let kind = match value {
        // A struct: each field has its own variable. (An empty object is a table of entries.)
        Value::Object(fields) if !fields.is_empty() => {
            for (key, field) in fields {
                path.push(key.clone());
                walk(field, path, out);
                path.pop();
            }
            return;
        }
        Value::Object(_) => Kind::Json,
        Value::Bool(_) => Kind::Switch,
        Value::Number(n) if n.is_f64() => Kind::Number,
        Value::Number(_) => Kind::Integer,
        Value::String(_) => Kind::Text,
        Value::Array(items) if items.iter().all(Value::is_string) => Kind::List,
        Value::Array(_) | Value::Null => Kind::Json,
    };
    let name = format!("TACKLE_{}", dotted.replace('.', "_").to_ascii_uppercase());
    out.push(Variable { path: dotted, name, kind });
}

/// Reads on/off: on, true, 1, yes / off, false, 0, no.
pub(crate) fn parse_switch(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "yes" => Some(true),
        "off" | "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// The values a variable's text may stand for, most specific first (a setting unset by default
/// may be a number or text: `5` is tried as a number, then as text).
fn candidates(var: &Variable, text: &str) -> Result<Vec<Value>, String> {
    let text = text.trim();
    Ok(match var.kind {
        Kind::Switch => {
            vec![Value::Bool(parse_switch(text).ok_or_else(|| format!("{text:?} is not on or off"))?)]
        }
        Kind::Integer => {
            vec![Value::from(text.parse::<i64>().map_err(|_| format!("{text:?} is not a whole number"))?)]
        }
        Kind::Number => {
            vec![Value::from(text.parse::<f64>().map_err(|_| format!("{text:?} is not a number"))?)]
        }
        Kind::Text => vec![Value::String(text.to_owned())],
        Kind::List if text.starts_with('[') => {
            vec![serde_json::from_str(text).map_err(|e| format!("not a JSON array: {e}"))?]
        }
        Kind::List => vec![Value::Array(
            text.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| Value::String(s.to_owned()))
                .collect(),
        )],
        Kind::Json => match serde_json::from_str::<Value>(text) {
            Ok(v) => vec![v, Value::String(text.to_owned())],
            Err(_) if text.starts_with(['{', '[']) => return Err("not valid JSON".to_owned()),
            Err(_) => vec![Value::String(text.to_owned())],
        },
    })
}

/// Sets `value` at the dotted `path` of `table`, creating tables on the way.
fn set(table: &mut toml::Table, path: &str, value: toml::Value) {
    let mut keys: Vec<&str> = path.split('.').collect();
    let Some(last) = keys.pop() else { return };
    let mut at = table;
    for key in keys {
        let entry = at.entry(key.to_owned()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        let toml::Value::Table(next) = entry else { return };
        at = next;
    }
    at.insert(last.to_owned(), value);
}

/// Applies every `TACKLE_*` variable that is set to `merged` (the files' settings), checking each
/// on its own so an error names the variable and what it accepts. `accepts` deserializes a
/// candidate table as the settings.
pub(crate) fn apply(
    merged: &mut toml::Table,
    shape: &Value,
    env: EnvLookup<'_>,
    accepts: &dyn Fn(&toml::Table) -> Result<(), String>,
) -> Result<(), SettingsError> {
    let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    let vars = variables(shape);
    let aliases = ALIASES.iter().filter_map(|(name, path)| {
        let var = vars.iter().find(|v| v.path == *path)?;
        Some(Variable { name: (*name).to_owned(), ..var.clone() })
    });
    // Aliases first, so the variable named by the rule wins when both are set.
    for var in aliases.chain(vars.iter().cloned()) {
        let Some(text) = get(&var.name) else { continue };
        let invalid = |message: String| SettingsError::InvalidEnv { var: var.name.clone(), message };
        let mut last_error = String::new();
        let mut applied = false;
        for value in candidates(&var, &text).map_err(invalid)? {
            let value = match toml::Value::try_from(&value) {
                Ok(v) => v,
                Err(e) => {
                    last_error = e.to_string();
                    continue;
                }
            };
            let mut trial = merged.clone();
            set(&mut trial, &var.path, value);
            match accepts(&trial) {
                Ok(()) => {
                    *merged = trial;
                    applied = true;
                    break;
                }
                Err(e) => last_error = e,
            }
        }
        if !applied {
            return Err(invalid(format!("{last_error} (it sets `{}` of tackle.toml)", var.path)));
        }
    }
    Ok(())
}

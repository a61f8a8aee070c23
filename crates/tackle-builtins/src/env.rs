//! The environment a shell child gets: the parent's, without secrets.

use std::ffi::OsString;

/// Variable name fragments that mark a secret (case-insensitive): any variable whose name
/// contains one is dropped.
pub const SECRET_FRAGMENTS: [&str; 8] =
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE"];

/// Variable name prefixes dropped whatever follows (provider and cloud credentials).
pub const SECRET_PREFIXES: [&str; 7] =
    ["OPENAI_", "ANTHROPIC_", "AWS_", "AZURE_", "GOOGLE_", "GCP_", "TACKLE_"];

/// Whether a variable should be kept from child processes.
///
/// ```
/// assert!(tackle_builtins::is_secret_var("OPENAI_API_KEY"));
/// assert!(tackle_builtins::is_secret_var("github_token"));
/// assert!(!tackle_builtins::is_secret_var("PATH"));
/// ```
pub fn is_secret_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_FRAGMENTS.iter().any(|f| upper.contains(f)) || SECRET_PREFIXES.iter().any(|p| upper.starts_with(p))
}

/// `vars` without secrets (and without names that are not UTF-8, which cannot be checked).
pub fn without_secrets(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
    vars.into_iter().filter(|(k, _)| k.to_str().is_some_and(|k| !is_secret_var(k))).collect()
}

//! The environment a stdio MCP server gets: the parent's without secrets, plus its own `env`.
//!
//! MCP servers are third-party programs: provider keys and tokens of the Tackle process are not
//! theirs. Variables that look like secrets are dropped (the same rule as the shell tool's in
//! `tackle-builtins`); a server that needs a secret gets it through its configured `env`.

use std::collections::BTreeMap;
use std::ffi::OsString;

/// Variable name fragments that mark a secret (case-insensitive).
const SECRET_FRAGMENTS: [&str; 8] =
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE"];

/// Variable name prefixes dropped whatever follows (provider and cloud credentials).
const SECRET_PREFIXES: [&str; 7] = ["OPENAI_", "ANTHROPIC_", "AWS_", "AZURE_", "GOOGLE_", "GCP_", "TACKLE_"];

/// Whether an inherited variable is kept from MCP servers.
pub(crate) fn is_secret_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_FRAGMENTS.iter().any(|f| upper.contains(f)) || SECRET_PREFIXES.iter().any(|p| upper.starts_with(p))
}

/// `inherited` without secrets (and without non-UTF-8 names), then `configured` on top.
pub(crate) fn server_env(
    inherited: impl IntoIterator<Item = (OsString, OsString)>,
    configured: &BTreeMap<String, String>,
) -> Vec<(OsString, OsString)> {
    let mut vars: Vec<(OsString, OsString)> = inherited
        .into_iter()
        .filter(|(k, _)| k.to_str().is_some_and(|k| !is_secret_var(k) && !configured.contains_key(k)))
        .collect();
    vars.extend(configured.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))));
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_dropped_and_configured_values_win() {
        let inherited = [
            ("PATH", "/bin"),
            ("OPENAI_API_KEY", "sk"),
            ("github_token", "t"),
            ("HOME", "/h"),
            ("LANG", "C"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let configured = BTreeMap::from([
            ("GITHUB_TOKEN".to_owned(), "mine".to_owned()),
            ("LANG".to_owned(), "fr".to_owned()),
        ]);
        let env = server_env(inherited, &configured);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.to_str().unwrap().to_owned());
        assert_eq!(get("PATH").as_deref(), Some("/bin"));
        assert_eq!(get("HOME").as_deref(), Some("/h"));
        assert_eq!(get("OPENAI_API_KEY"), None);
        assert_eq!(get("github_token"), None);
        assert_eq!(get("GITHUB_TOKEN").as_deref(), Some("mine"), "configured secrets pass");
        assert_eq!(get("LANG").as_deref(), Some("fr"));
        assert_eq!(env.iter().filter(|(n, _)| n == "LANG").count(), 1);
    }
}

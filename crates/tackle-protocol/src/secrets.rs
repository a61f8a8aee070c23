//! What counts as a secret in text Tackle shows (configuration, error messages, logs), decided
//! once for every crate: keys that name a secret ([`is_secret_key`]) and the parts of a URL
//! that carry one ([`mask_url`]).
//!
//! ```
//! use tackle_protocol::{MASK, mask_url};
//! assert_eq!(mask_url("postgres://app:pw@db/app?sslmode=require"), format!("postgres://app:{MASK}@db/app?sslmode=require"));
//! ```

/// What a masked secret is replaced with.
pub const MASK: &str = "********";

/// Words of a key that name a secret.
const SECRET_WORDS: [&str; 13] = [
    "token",
    "tokens",
    "key",
    "apikey",
    "secret",
    "secrets",
    "password",
    "passwd",
    "credential",
    "credentials",
    "authorization",
    "cookie",
    "auth",
];

/// Last words of a key that say it names where a secret is, not the secret itself
/// (`token_env`, `tokens_file`, `env_allow`).
const REFERENCE_WORDS: [&str; 8] = ["env", "file", "path", "dir", "name", "names", "allow", "var"];

/// Query parameters that carry credentials besides those [`is_secret_key`] recognizes.
const SECRET_PARAMS: [&str; 4] = ["sig", "signature", "code", "x-amz-signature"];

/// Parts of a query parameter's name that make it a secret even inside one word
/// (PostgreSQL's `sslpassword`, `accesstoken`, `clientsecret`).
const SECRET_PARTS: [&str; 6] = ["password", "passwd", "secret", "token", "apikey", "credential"];

/// The words of a key: split at `_`, `-`, `.`, spaces and lower-to-upper case changes, lowercased.
fn words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in key.chars() {
        if matches!(c, '_' | '-' | '.' | ' ') {
            words.extend((!current.is_empty()).then(|| std::mem::take(&mut current)));
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    words.extend((!current.is_empty()).then_some(current));
    words
}

/// Whether the value of `key` is a secret: a word of it names one, and it does not merely
/// name where one is kept: `api_key`, `clientSecret` and `DB_PASSWORD` are secrets; `token_env`,
/// `tokens_file` and `monkey` are not.
///
/// ```
/// use tackle_protocol::is_secret_key;
/// assert!(is_secret_key("clientSecret") && !is_secret_key("token_env"));
/// ```
pub fn is_secret_key(key: &str) -> bool {
    let words = words(key);
    let names_a_secret = words.iter().any(|w| SECRET_WORDS.contains(&w.as_str()));
    let reference = words.last().is_some_and(|w| REFERENCE_WORDS.contains(&w.as_str()));
    names_a_secret && !reference
}

/// Whether the value of the query parameter `name` may be a credential.
fn is_secret_param(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    is_secret_key(name)
        || SECRET_PARAMS.contains(&lower.as_str())
        || SECRET_PARTS.iter().any(|part| lower.contains(part))
}

/// A query, `name=value&...`, with the values of secret-named parameters masked.
fn mask_query(query: &str) -> String {
    query
        .split('&')
        .map(|param| match param.split_once('=') {
            Some((name, _)) if is_secret_param(name) => format!("{name}={MASK}"),
            _ => param.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// `url` as Tackle shows it anywhere (`tackle config`, error messages, `Debug`): the user info
/// masked (a password as `user:********`, a lone user as `********`, since a token is often
/// sent as the user name), the values of credential-named query parameters masked, and a
/// fragment masked whole (it never reaches a server, and OAuth returns tokens in it); scheme,
/// host, port, path and every other query parameter stay readable. Text that is not a
/// `scheme://` URL is returned as is.
///
/// ```
/// use tackle_protocol::{MASK, mask_url};
/// assert_eq!(mask_url("https://ghp_abc@github.com/x.git"), format!("https://{MASK}@github.com/x.git"));
/// assert_eq!(mask_url("https://h/mcp?key=k&page=2"), format!("https://h/mcp?key={MASK}&page=2"));
/// assert_eq!(mask_url("not a url"), "not a url");
/// ```
pub fn mask_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
        return url.to_owned();
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{user}:{MASK}@{host}"),
            None => format!("{MASK}@{host}"),
        },
        None => authority.to_owned(),
    };
    let (before_fragment, fragment) = match tail.split_once('#') {
        Some((t, f)) => (t, Some(f)),
        None => (tail, None),
    };
    let tail = match before_fragment.split_once('?') {
        Some((path, query)) => format!("{path}?{}", mask_query(query)),
        None => before_fragment.to_owned(),
    };
    let fragment = match fragment {
        Some("") => "#".to_owned(),
        Some(_) => format!("#{MASK}"),
        None => String::new(),
    };
    format!("{scheme}://{authority}{tail}{fragment}")
}

#[cfg(test)]
#[path = "secrets_tests.rs"]
mod tests;

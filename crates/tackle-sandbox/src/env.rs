//! The environment of a child process: an allowlist of Tackle's own variables, plus what the
//! user configured for that tool or server.
//!
//! Tackle's environment holds provider keys, server tokens and whatever else the user exported
//! (`DATABASE_URL=postgres://app:pw@...` has an innocent name). A denylist of secret-looking
//! names cannot know them all, so children get only the names below (and the names the user
//! adds), never "everything but".

use std::collections::BTreeMap;
use std::ffi::OsString;

/// Variables every child may inherit when Tackle has them: what a shell and the common
/// command-line tools need to find programs, the user's home, the language and the terminal.
/// `LC_*` stands for every locale category.
pub const BASE_ENV_ALLOWLIST: [&str; 13] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "TMPDIR",
];

/// Whether `name` matches an allowlist entry: the exact name (case-sensitive, as the OS is), or
/// a prefix when the entry ends with `*`.
///
/// ```
/// use tackle_sandbox::env_name_allowed;
/// assert!(env_name_allowed("LC_ALL", &[]));
/// assert!(env_name_allowed("CARGO_HOME", &["CARGO_*".to_owned()]));
/// assert!(!env_name_allowed("DATABASE_URL", &[]));
/// assert!(!env_name_allowed("OPENAI_API_KEY", &[]));
/// ```
pub fn env_name_allowed(name: &str, extra: &[String]) -> bool {
    let matches = |pattern: &str| match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    };
    BASE_ENV_ALLOWLIST.iter().any(|p| matches(p)) || extra.iter().any(|p| matches(p))
}

/// The environment of a child: the variables of `inherited` whose names are allowed
/// ([`BASE_ENV_ALLOWLIST`] and `allow`), then `set` on top (configured values win).
///
/// Names that are not UTF-8 are dropped: they cannot be matched against the list.
///
/// ```
/// use std::collections::BTreeMap;
/// use std::ffi::OsString;
/// let inherited = [("PATH", "/bin"), ("DATABASE_URL", "postgres://app:pw@db/app"), ("GOPATH", "/go")]
///     .map(|(k, v)| (OsString::from(k), OsString::from(v)));
/// let set = BTreeMap::from([("LOG".to_owned(), "warn".to_owned())]);
/// let env = tackle_sandbox::child_env(inherited, &["GOPATH".to_owned()], &set);
/// let names: Vec<_> = env.iter().map(|(k, _)| k.to_str().unwrap()).collect();
/// assert_eq!(names, ["PATH", "GOPATH", "LOG"]);
/// ```
pub fn child_env(
    inherited: impl IntoIterator<Item = (OsString, OsString)>,
    allow: &[String],
    set: &BTreeMap<String, String>,
) -> Vec<(OsString, OsString)> {
    let mut vars: Vec<(OsString, OsString)> = inherited
        .into_iter()
        .filter(|(k, _)| k.to_str().is_some_and(|k| env_name_allowed(k, allow) && !set.contains_key(k)))
        .collect();
    vars.extend(set.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))));
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))).collect()
    }

    fn get<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a str> {
        env.iter().find(|(k, _)| k == name).and_then(|(_, v)| v.to_str())
    }

    #[test]
    fn only_allowed_names_pass_whatever_they_look_like() {
        let inherited = vars(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("LC_CTYPE", "C.UTF-8"),
            ("OPENAI_API_KEY", "sk-canary"),
            ("TACKLE_SERVER_TOKENS", "alice:canary"),
            ("DATABASE_URL", "postgres://app:canary@db/app"),
            ("MY_PLAIN_SETTING", "canary"),
            ("path", "lowercase is another name"),
        ]);
        let env = child_env(inherited, &[], &BTreeMap::new());
        let names: Vec<&str> = env.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        assert_eq!(names, ["PATH", "HOME", "LC_CTYPE"]);
        assert!(env.iter().all(|(_, v)| !v.to_str().unwrap().contains("canary")));
    }

    #[test]
    fn configured_names_pass_and_configured_values_win() {
        let inherited = vars(&[("GITHUB_TOKEN", "inherited"), ("LANG", "C"), ("CARGO_HOME", "/c")]);
        let allow = ["GITHUB_TOKEN".to_owned(), "CARGO_*".to_owned()];
        let set = BTreeMap::from([("LANG".to_owned(), "fr_FR.UTF-8".to_owned())]);
        let env = child_env(inherited, &allow, &set);
        assert_eq!(get(&env, "GITHUB_TOKEN"), Some("inherited"), "the user chose to pass it");
        assert_eq!(get(&env, "CARGO_HOME"), Some("/c"));
        assert_eq!(get(&env, "LANG"), Some("fr_FR.UTF-8"));
        assert_eq!(env.iter().filter(|(k, _)| k == "LANG").count(), 1);
    }

    #[test]
    fn non_utf8_names_are_dropped() {
        use std::os::unix::ffi::OsStringExt;
        let inherited = vec![(OsString::from_vec(vec![b'P', 0xff]), OsString::from("x"))];
        assert!(child_env(inherited, &["*".to_owned()], &BTreeMap::new()).is_empty());
    }
}

//! Namespaced tool names: `server__tool`, valid for every provider (`^[a-zA-Z0-9_-]{1,64}$`).
//!
//! Characters outside `[a-zA-Z0-9_-]` become `_`. A name that is too long is cut and ends with a
//! short hash of the original `server`/`tool` pair, so two long names that share a prefix stay
//! distinct. Two pairs whose sanitized names collide (`a.b` and `a_b`) both get the hash suffix.
//! The result depends only on the pairs, never on their order.

use std::collections::HashMap;

/// Longest tool name every supported provider accepts.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Separator between the server namespace and the tool name.
pub const NAMESPACE_SEPARATOR: &str = "__";

/// Hex digits of the hash suffix.
const HASH_LEN: usize = 8;

/// The namespaced name of `tool` on `server`, without collision handling (see
/// [`namespace_all`] for a whole catalog).
///
/// ```
/// use tackle_mcp::namespaced_name;
/// assert_eq!(namespaced_name("everything", "get-sum"), "everything__get-sum");
/// assert_eq!(namespaced_name("fs", "read.file"), "fs__read_file");
/// assert_eq!(namespaced_name("s", &"x".repeat(100)).len(), 64);
/// ```
pub fn namespaced_name(server: &str, tool: &str) -> String {
    let sanitized = sanitize(&format!("{server}{NAMESPACE_SEPARATOR}{tool}"));
    if sanitized.len() <= MAX_TOOL_NAME_LEN { sanitized } else { with_hash_suffix(&sanitized, server, tool) }
}

/// Namespaced names of many `(server, tool)` pairs, in the same order as `pairs`, all distinct
/// when the pairs are distinct.
///
/// ```
/// use tackle_mcp::namespace_all;
/// let names = namespace_all(&[("s", "a.b"), ("s", "a_b"), ("s", "c")]);
/// assert_ne!(names[0], names[1]);
/// assert_eq!(names[2], "s__c");
/// ```
pub fn namespace_all<S: AsRef<str>, T: AsRef<str>>(pairs: &[(S, T)]) -> Vec<String> {
    let names: Vec<String> = pairs.iter().map(|(s, t)| namespaced_name(s.as_ref(), t.as_ref())).collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for name in &names {
        *counts.entry(name.as_str()).or_default() += 1;
    }
    let collided: Vec<bool> =
        names.iter().map(|n| counts.get(n.as_str()).copied().unwrap_or(0) > 1).collect();
    names
        .iter()
        .zip(pairs)
        .zip(collided)
        .map(
            |((name, (s, t)), collided)| {
                if collided { with_hash_suffix(name, s.as_ref(), t.as_ref()) } else { name.clone() }
            },
        )
        .collect()
}

/// Replaces every character outside `[a-zA-Z0-9_-]` with `_`; an empty name becomes `_`.
pub fn sanitize(name: &str) -> String {
    let out: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    if out.is_empty() { "_".to_owned() } else { out }
}

/// `name` cut to leave room for `_` + hash of the original pair, at most 64 characters.
fn with_hash_suffix(name: &str, server: &str, tool: &str) -> String {
    let hash = fnv1a(server.as_bytes(), tool.as_bytes());
    let keep = MAX_TOOL_NAME_LEN - HASH_LEN - 1;
    // `name` is ASCII after sanitizing, so byte slicing is safe.
    let prefix = &name[..name.len().min(keep)];
    format!("{prefix}_{:0width$x}", hash >> (64 - 4 * HASH_LEN), width = HASH_LEN)
}

/// FNV-1a over `server`, a 0 byte, and `tool`: stable across runs and platforms.
fn fnv1a(server: &[u8], tool: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in server.iter().chain(&[0u8]).chain(tool) {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use tackle_protocol::is_valid_tool_name;

    use super::*;

    #[test]
    fn plain_names_are_kept() {
        assert_eq!(namespaced_name("github", "create_issue"), "github__create_issue");
        assert_eq!(namespaced_name("ever-thing", "get-sum"), "ever-thing__get-sum");
    }

    #[test]
    fn invalid_characters_become_underscores() {
        assert_eq!(namespaced_name("my server", "tools/list.v2"), "my_server__tools_list_v2");
        assert_eq!(namespaced_name("ünï", "çödé"), "_n_____d_");
        assert_eq!(sanitize(""), "_");
        assert!(is_valid_tool_name(&namespaced_name("", "")));
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let a = namespaced_name("server", &format!("{}_alpha", "x".repeat(80)));
        let b = namespaced_name("server", &format!("{}_beta", "x".repeat(80)));
        assert_eq!(a.len(), MAX_TOOL_NAME_LEN);
        assert_eq!(b.len(), MAX_TOOL_NAME_LEN);
        assert_ne!(a, b);
        assert!(is_valid_tool_name(&a) && is_valid_tool_name(&b));
        assert_eq!(a, namespaced_name("server", &format!("{}_alpha", "x".repeat(80))), "deterministic");
        // Exactly 64 characters is not cut.
        let exact = namespaced_name("s", &"y".repeat(61));
        assert_eq!(exact, format!("s__{}", "y".repeat(61)));
    }

    #[test]
    fn collisions_get_distinct_suffixes_in_any_order() {
        let pairs = [("s", "a.b"), ("s", "a_b"), ("s", "a b"), ("t", "x")];
        let names = namespace_all(&pairs);
        let unique: HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), 4, "{names:?}");
        assert_eq!(names[3], "t__x");
        assert!(names.iter().all(|n| is_valid_tool_name(n)));
        let reversed: Vec<_> = pairs.iter().rev().copied().collect();
        let mut names_rev = namespace_all(&reversed);
        names_rev.reverse();
        assert_eq!(names, names_rev);
    }

    #[test]
    fn many_long_names_stay_unique() {
        let tools: Vec<String> = (0..500).map(|i| format!("{}{i}", "t".repeat(70))).collect();
        let pairs: Vec<(&str, &str)> = tools.iter().map(|t| ("srv", t.as_str())).collect();
        let names = namespace_all(&pairs);
        let unique: HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), 500);
        assert!(names.iter().all(|n| is_valid_tool_name(n)));
    }
}

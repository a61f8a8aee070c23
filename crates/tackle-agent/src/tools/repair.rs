//! Repair of tool names a model got slightly wrong (`Read_File`, `functions.read_file`).

/// The registered name a model most likely meant by `name`, when the match is unambiguous:
/// the same name ignoring case, or with a namespace prefix some models add (`functions.`,
/// `tools.`, `default_api.`) or `.`/`-` in place of `_`. Returns `None` for an exact match (no
/// repair needed) or when nothing or several things match.
pub fn repair_tool_name<'a>(name: &str, registered: &'a [String]) -> Option<&'a str> {
    if registered.iter().any(|n| n == name) {
        return None;
    }
    let stripped = ["functions.", "functions:", "tools.", "tool.", "default_api.", "default_api:"]
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .unwrap_or(name);
    let normalize = |s: &str| s.to_ascii_lowercase().replace(['.', '-', ' '], "_");
    let wanted = normalize(stripped);
    let mut matches = registered.iter().filter(|n| normalize(n) == wanted);
    let first = matches.next()?;
    if matches.next().is_some() {
        return None;
    }
    Some(first.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixed_and_cased_names_are_repaired() {
        let names = ["read_file".to_string(), "shell".to_string()];
        assert_eq!(repair_tool_name("functions.read_file", &names), Some("read_file"));
        assert_eq!(repair_tool_name("SHELL", &names), Some("shell"));
        assert_eq!(repair_tool_name("shell", &names), None);
        assert_eq!(repair_tool_name("write", &names), None);
    }
}

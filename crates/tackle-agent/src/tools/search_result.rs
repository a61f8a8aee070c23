//! What `tool_search` shows the model: each found tool in a compact form (its name, the first
//! sentence of its description, and its parameters with types, required marks and enum values),
//! the whole answer within [`SEARCH_RESULT_TOKENS`], so it is never offloaded or cut and always
//! reaches the model whole. The full schema stays where it is used: the provider gets it when a
//! tool is loaded natively, and `call_tool` validates arguments against it.
//!
//! When the answer would be over budget, the largest tool is shown with less detail first
//! ([`CompactDetail`]), step by step; only when every tool is down to its parameter names are tools
//! dropped from the end, and the answer says which.

use serde_json::Value;
use tackle_context::TokenCounter;
use tackle_protocol::ToolSpec;

use super::DeferralMode;

/// Most tokens of one `tool_search` answer (header included). Five typical MCP tools take 500
/// to 1,500 tokens in the compact form, and the largest real ones fit in 400 each at the
/// second level of detail; 2,000 tokens is 1% of a 200k window, so a search is affordable
/// several times a session and the answer never needs offloading.
pub const SEARCH_RESULT_TOKENS: u64 = 2_000;

/// Most lines of one answer: far under the executor's output cap (400 lines by default), so a
/// tool with a hundred parameters is shown on one line rather than cut.
pub(crate) const SEARCH_RESULT_LINES: usize = 200;

/// Longest first sentence of a description shown.
const DESCRIPTION_CHARS: usize = 240;
/// Longest parameter description shown.
const PARAMETER_DOC_CHARS: usize = 120;
/// Most enum values listed for one parameter.
const ENUM_VALUES: usize = 12;
/// Deepest nesting shown inline (`{a: string, b?: {c: integer}}`).
const INLINE_DEPTH: usize = 2;

/// How much of a tool the compact form shows, from most to least.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CompactDetail {
    /// A line per parameter: type (nested objects inline), required mark, enum values, and the
    /// first sentence of its description.
    Full,
    /// The same lines without parameter descriptions.
    Types,
    /// One line of parameter names, required ones marked with `*`.
    Names,
}

impl CompactDetail {
    fn less(self) -> Option<Self> {
        match self {
            CompactDetail::Full => Some(CompactDetail::Types),
            CompactDetail::Types => Some(CompactDetail::Names),
            CompactDetail::Names => None,
        }
    }
}

/// The compact form of `spec`.
///
/// ```ignore
/// get_weather: Current weather for a city.
///   city (string, required): City name, e.g. Paris.
///   unit ("celsius" | "fahrenheit")
/// ```
pub(crate) fn compact_tool(spec: &ToolSpec, detail: CompactDetail) -> String {
    let mut out = spec.name.clone();
    let sentence = first_sentence(&spec.description, DESCRIPTION_CHARS);
    if !sentence.is_empty() {
        out.push_str(": ");
        out.push_str(&sentence);
    }
    let schema = &spec.input_schema;
    let required = required_of(schema);
    let props = schema.get("properties").and_then(Value::as_object);
    let Some(props) = props.filter(|p| !p.is_empty()) else {
        out.push_str("\n  (no parameters)");
        return out;
    };
    if detail == CompactDetail::Names {
        let names: Vec<String> = props
            .keys()
            .map(|k| if required.contains(&k.as_str()) { format!("{k}*") } else { k.clone() })
            .collect();
        out.push_str(&format!("\n  parameters (* required): {}", names.join(", ")));
        return out;
    }
    for (name, prop) in props {
        out.push_str(&format!("\n  {name} ({}", type_of(prop, 0)));
        if required.contains(&name.as_str()) {
            out.push_str(", required");
        }
        out.push(')');
        if detail == CompactDetail::Full
            && let Some(doc) = prop.get("description").and_then(Value::as_str)
        {
            let doc = first_sentence(doc, PARAMETER_DOC_CHARS);
            if !doc.is_empty() {
                out.push_str(": ");
                out.push_str(&doc);
            }
        }
    }
    out
}

/// The answer to a search for `query` that found `hits`, within `budget` tokens as `counter`
/// counts them.
pub fn render_results(
    query: &str,
    hits: &[ToolSpec],
    mode: DeferralMode,
    counter: &TokenCounter,
    budget: u64,
) -> String {
    let header = match mode {
        DeferralMode::Proxy => format!(
            "Found {} tools for {}. Call one with call_tool {{\"name\": \"<name>\", \"arguments\": {{...}}}}; \
             the arguments are checked against its full schema.",
            hits.len(),
            quote(query)
        ),
        DeferralMode::Native => format!(
            "Loaded {} tools for {}: call them directly by name; their full definitions are loaded.",
            hits.len(),
            quote(query)
        ),
    };
    let mut levels: Vec<CompactDetail> = vec![CompactDetail::Full; hits.len()];
    let mut forms: Vec<String> = hits.iter().map(|h| compact_tool(h, CompactDetail::Full)).collect();
    let mut tokens: Vec<u64> = forms.iter().map(|f| counter.count_text(f) + 2).collect();
    let fixed = counter.count_text(&header) + 1;
    let lines = |forms: &[String]| 1 + forms.iter().map(|f| f.lines().count() + 1).sum::<usize>();
    // Less detail for the largest tool first, until the answer fits.
    while fixed + tokens.iter().sum::<u64>() > budget || lines(&forms) > SEARCH_RESULT_LINES {
        let largest = (0..hits.len())
            .filter(|&i| levels[i].less().is_some())
            .max_by_key(|&i| (tokens[i], std::cmp::Reverse(i)));
        let Some(i) = largest else { break };
        if let Some(less) = levels[i].less() {
            levels[i] = less;
            forms[i] = compact_tool(&hits[i], less);
            tokens[i] = counter.count_text(&forms[i]) + 2;
        }
    }
    // Still over: the last tools go, and the answer names them.
    let mut shown = hits.len();
    let dropped_note = |from: usize| {
        let names: Vec<&str> = hits[from..].iter().map(|h| h.name.as_str()).collect();
        format!("\n\nAlso found, not shown to stay within {budget} tokens: {}.", names.join(", "))
    };
    while shown > 1
        && (fixed + tokens[..shown].iter().sum::<u64>() + counter.count_text(&dropped_note(shown)) > budget
            || lines(&forms[..shown]) + 2 > SEARCH_RESULT_LINES)
    {
        shown -= 1;
    }
    let mut out = header;
    for form in &forms[..shown] {
        out.push_str("\n\n");
        out.push_str(form);
    }
    if shown < hits.len() {
        out.push_str(&dropped_note(shown));
    }
    out
}

fn quote(query: &str) -> String {
    let clipped = first_chars(query.trim(), 120);
    serde_json::to_string(&clipped).unwrap_or_default()
}

/// The type of a parameter, compactly: `string`, `integer[]`, `"a" | "b"`, `{x: number, y?:
/// string}`.
fn type_of(schema: &Value, depth: usize) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let mut shown: Vec<String> = values.iter().take(ENUM_VALUES).map(|v| v.to_string()).collect();
        if values.len() > ENUM_VALUES {
            shown.push(format!("… {} more", values.len() - ENUM_VALUES));
        }
        return shown.join(" | ");
    }
    if let Some(c) = schema.get("const") {
        return c.to_string();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(variants) = schema.get(key).and_then(Value::as_array) {
            let types: Vec<String> = variants.iter().map(|v| type_of(v, depth + 1)).collect();
            return types.join(" | ");
        }
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" | "),
        _ if schema.get("properties").is_some() => "object".to_owned(),
        _ => "any".to_owned(),
    };
    match ty.as_str() {
        "array" => match schema.get("items") {
            Some(items) if items.is_object() => {
                let inner = type_of(items, depth + 1);
                if inner.contains(' ') && !inner.starts_with('{') {
                    format!("({inner})[]")
                } else {
                    format!("{inner}[]")
                }
            }
            _ => "array".to_owned(),
        },
        "object" => match schema.get("properties").and_then(Value::as_object) {
            Some(props) if !props.is_empty() && depth < INLINE_DEPTH => {
                let required = required_of(schema);
                let fields: Vec<String> = props
                    .iter()
                    .map(|(k, v)| {
                        let mark = if required.contains(&k.as_str()) { "" } else { "?" };
                        format!("{k}{mark}: {}", type_of(v, depth + 1))
                    })
                    .collect();
                format!("{{{}}}", fields.join(", "))
            }
            _ => "object".to_owned(),
        },
        _ => ty,
    }
}

fn required_of(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The first sentence of `text` (up to `. `, `.\n` or a blank line), whitespace collapsed, at most
/// `max` characters.
fn first_sentence(text: &str, max: usize) -> String {
    let text = text.trim();
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        if c == '\n' && text[i + 1..].starts_with('\n') {
            end = i;
            break;
        }
        if matches!(c, '.' | '!' | '?' | '。') {
            let rest = &text[i + c.len_utf8()..];
            if (rest.is_empty() || rest.starts_with(char::is_whitespace))
                && !(c == '.' && abbreviation(&text[..i]))
            {
                end = i + c.len_utf8();
                break;
            }
        }
    }
    let sentence: String = text[..end].split_whitespace().collect::<Vec<_>>().join(" ");
    first_chars(&sentence, max)
}

/// Whether the word before a period is an abbreviation (`e.g.`, `i.e.`, `etc.`, `vs.`), not
/// the end of a sentence.
fn abbreviation(before: &str) -> bool {
    let word = before.rsplit(char::is_whitespace).next().unwrap_or_default();
    let word = word.trim_start_matches(|c: char| !c.is_alphanumeric());
    word.contains('.')
        || ["etc", "vs", "approx", "incl", "e", "i", "ca", "cf"].contains(&word.to_lowercase().as_str())
}

fn first_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", text[..i].trim_end()),
        None => text.to_owned(),
    }
}

#[cfg(test)]
#[path = "search_result_tests.rs"]
mod tests;

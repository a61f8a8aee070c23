//! Prompts and resources of MCP servers in a conversation: a prompt (`/server:prompt`) becomes the
//! user's message; resources mentioned as `@server:uri` (or named by the sessions API) are read
//! and attached after the message, text inline, binary contents described and never inlined.
//!
//! ```
//! use tackle_mcp::attach::{ResourceMention, mentions};
//! let found = mentions("compare @docs:file:///a.md with @docs:file:///b.md, not @bob", &["docs"]);
//! assert_eq!(found, vec![
//!     ResourceMention { server: "docs".into(), uri: "file:///a.md".into() },
//!     ResourceMention { server: "docs".into(), uri: "file:///b.md".into() },
//! ]);
//! ```

use rmcp::model::{GetPromptResult, Prompt, ReadResourceResult, Role};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::content::{block_text, resource_text};

/// A resource named in a message: `@server:uri`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceMention {
    /// The MCP server's configured name.
    pub server: String,
    /// The resource's URI on that server.
    pub uri: String,
}

/// Characters that end a mention when they close a sentence (`@docs:file:///a.md.` ends at `md`).
const TRAILING: &[char] = &['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\''];

/// The `@server:uri` mentions in `text` whose server is one of `servers`, in order, each once.
pub fn mentions(text: &str, servers: &[&str]) -> Vec<ResourceMention> {
    let mut found: Vec<ResourceMention> = Vec::new();
    for word in text.split_whitespace() {
        let Some(rest) = word.strip_prefix('@') else { continue };
        let Some((server, uri)) = rest.split_once(':') else { continue };
        let uri = uri.trim_end_matches(TRAILING);
        if uri.is_empty() || !servers.contains(&server) {
            continue;
        }
        let mention = ResourceMention { server: server.to_owned(), uri: uri.to_owned() };
        if !found.contains(&mention) {
            found.push(mention);
        }
    }
    found
}

/// `message` with the contents of `resources` attached after it, as the model reads them.
pub fn attach(message: &str, resources: &[(ResourceMention, ReadResourceResult)]) -> String {
    let mut out = message.to_owned();
    for (mention, read) in resources {
        out.push_str(&format!("\n\n[Attached resource @{}:{}]\n", mention.server, mention.uri));
        let parts: Vec<String> = read.contents.iter().map(resource_text).collect();
        out.push_str(&parts.join("\n"));
    }
    out
}

/// A prompt's arguments from what follows `/server:prompt`: `name=value` words, and the others
/// given in the order the prompt declares its arguments. Errors name what is wrong: an unknown
/// argument, too many values, a required argument missing.
pub fn prompt_arguments(prompt: &Prompt, words: &[&str]) -> Result<Map<String, Value>, PromptArgumentsError> {
    let declared: Vec<&str> = prompt.arguments.iter().flatten().map(|a| a.name.as_str()).collect();
    let mut args = Map::new();
    let mut positional = declared.iter();
    for word in words {
        match word.split_once('=').filter(|(name, _)| declared.contains(name)) {
            Some((name, value)) => {
                args.insert(name.to_owned(), Value::String(value.to_owned()));
            }
            None => {
                let name = positional.by_ref().find(|n| !args.contains_key(**n)).ok_or_else(|| {
                    PromptArgumentsError::TooMany { prompt: prompt.name.clone(), usage: usage(prompt) }
                })?;
                args.insert((*name).to_owned(), Value::String((*word).to_owned()));
            }
        }
    }
    let missing: Vec<&str> = prompt
        .arguments
        .iter()
        .flatten()
        .filter(|a| a.required == Some(true) && !args.contains_key(&a.name))
        .map(|a| a.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(PromptArgumentsError::Missing {
            prompt: prompt.name.clone(),
            missing: missing.into_iter().map(str::to_owned).collect(),
            usage: usage(prompt),
        });
    }
    Ok(args)
}

/// Why the words after `/server:prompt` do not fit the prompt; each message shows its usage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PromptArgumentsError {
    /// More values than the prompt declares arguments.
    #[error("too many arguments: `{prompt}` takes {usage}")]
    TooMany {
        /// The prompt's name.
        prompt: String,
        /// Its arguments, as [`usage`] writes them.
        usage: String,
    },
    /// Required arguments without a value.
    #[error("`{prompt}` needs {}; it takes {usage}", .missing.join(", "))]
    Missing {
        /// The prompt's name.
        prompt: String,
        /// The required arguments left out.
        missing: Vec<String>,
        /// Its arguments, as [`usage`] writes them.
        usage: String,
    },
}

/// `name* [optional]` of a prompt's arguments.
pub fn usage(prompt: &Prompt) -> String {
    let parts: Vec<String> = prompt
        .arguments
        .iter()
        .flatten()
        .map(|a| if a.required == Some(true) { a.name.clone() } else { format!("[{}]", a.name) })
        .collect();
    if parts.is_empty() { "no arguments".to_owned() } else { parts.join(" ") }
}

/// What a prompt contributes as the user's message: its user messages' text; when it also holds
/// assistant messages, the whole exchange with each message's role.
pub fn prompt_text(result: &GetPromptResult) -> String {
    let only_user = result.messages.iter().all(|m| m.role == Role::User);
    let parts: Vec<String> = result
        .messages
        .iter()
        .map(|m| {
            let text = block_text(&m.content);
            if only_user {
                text
            } else {
                let role = if m.role == Role::User { "user" } else { "assistant" };
                format!("{role}: {text}")
            }
        })
        .collect();
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn prompt(value: Value) -> Prompt {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn mentions_need_a_known_server_and_lose_trailing_punctuation() {
        let found = mentions("see @files:notes/a.md. And @x:y, @files: and @files:b?", &["files"]);
        assert_eq!(
            found,
            vec![
                ResourceMention { server: "files".into(), uri: "notes/a.md".into() },
                ResourceMention { server: "files".into(), uri: "b".into() },
            ]
        );
        assert!(mentions("mail me at ada@example.com", &["example.com"]).is_empty());
    }

    #[test]
    fn attached_resources_follow_the_message_and_blobs_stay_out() {
        let read: ReadResourceResult = serde_json::from_value(json!({"contents": [
            {"uri": "file:///a.md", "text": "# A"},
            {"uri": "file:///b.png", "mimeType": "image/png", "blob": "AAAA"}
        ]}))
        .unwrap();
        let mention = ResourceMention { server: "files".into(), uri: "file:///a.md".into() };
        let text = attach("summarize", &[(mention, read)]);
        assert_eq!(
            text,
            "summarize\n\n[Attached resource @files:file:///a.md]\n# A\n[image/png, 3 bytes: file:///b.png]"
        );
    }

    #[test]
    fn prompt_arguments_by_name_and_position() {
        let p = prompt(json!({"name": "review", "arguments": [
            {"name": "path", "required": true}, {"name": "focus"}]}));
        assert_eq!(
            prompt_arguments(&p, &["src/x.rs", "speed"]).unwrap(),
            json!({"path": "src/x.rs", "focus": "speed"}).as_object().unwrap().clone()
        );
        assert_eq!(prompt_arguments(&p, &["focus=docs", "a.rs"]).unwrap()["path"], "a.rs");
        assert!(prompt_arguments(&p, &[]).unwrap_err().to_string().contains("needs path"));
        assert!(prompt_arguments(&p, &["a", "b", "c"]).unwrap_err().to_string().contains("too many"));
        assert_eq!(usage(&p), "path [focus]");
    }

    #[test]
    fn prompt_text_keeps_roles_only_for_exchanges() {
        let single: GetPromptResult = serde_json::from_value(json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "Review x"}}]}))
        .unwrap();
        assert_eq!(prompt_text(&single), "Review x");
        let exchange: GetPromptResult = serde_json::from_value(json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "Hi"}},
            {"role": "assistant", "content": {"type": "text", "text": "Hello"}}]}))
        .unwrap();
        assert_eq!(prompt_text(&exchange), "user: Hi\n\nassistant: Hello");
    }
}

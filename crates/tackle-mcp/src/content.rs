//! Turning an MCP `CallToolResult` into what the model reads.
//!
//! - text blocks and embedded text resources are inlined, one block per line;
//! - images, audio and binary resources are never inlined: the text says
//!   `[image/png, 12345 bytes]`, the raw blocks are kept in [`ToolOutput::data`], and their
//!   contents go into the output's full form ([`ToolOutput::full`]), which the executor offloads
//!   to the store when it is large (restorable by locator, never in the model's context);
//! - resource links become `resource: <uri> (<name>)` lines;
//! - `structuredContent` is kept in `data` and shown to the model as JSON: alone when nothing
//!   else is text, after the text unless a text block already is that JSON;
//! - `isError: true` becomes a [`ToolFailure`] classified from its text.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Map, Value};
use tackle_tools::{ToolFailure, ToolOutput};

/// Maps a tool result to the output the model sees, or to a failure when the server flagged
/// it as an error.
///
/// `data`, when present, is an object with `structuredContent` (as sent) and/or `content` (the
/// raw blocks that were not inlined: images, audio, binary resources).
pub fn map_call_result(result: CallToolResult) -> Result<ToolOutput, ToolFailure> {
    let mut lines: Vec<String> = Vec::new();
    let mut has_text = false;
    let mut kept: Vec<Value> = Vec::new();
    // Binary contents as `[description]\nbase64`, for the full (offloadable) output.
    let mut blobs: Vec<String> = Vec::new();

    for block in &result.content {
        match block {
            ContentBlock::Text(text) => {
                has_text = true;
                lines.push(text.text.clone());
            }
            ContentBlock::Image(image) => {
                let line = describe_blob(&image.mime_type, &image.data, None);
                blobs.push(format!("{line}\n{}", image.data));
                lines.push(line);
                keep(&mut kept, block);
            }
            ContentBlock::Audio(audio) => {
                let line = describe_blob(&audio.mime_type, &audio.data, None);
                blobs.push(format!("{line}\n{}", audio.data));
                lines.push(line);
                keep(&mut kept, block);
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { text, .. } => {
                    has_text = true;
                    lines.push(text.clone());
                }
                ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                    let mime = mime_type.as_deref().unwrap_or("application/octet-stream");
                    let line = describe_blob(mime, blob, Some(uri));
                    blobs.push(format!("{line}\n{blob}"));
                    lines.push(line);
                    keep(&mut kept, block);
                }
                _ => {
                    lines.push("[unsupported resource contents]".to_owned());
                    keep(&mut kept, block);
                }
            },
            ContentBlock::ResourceLink(link) => {
                lines.push(format!("resource: {} ({})", link.uri, link.name));
            }
            // Content kinds newer than this client: keep them for front ends, say so in text.
            other => {
                lines.push("[unsupported content block]".to_owned());
                keep(&mut kept, other);
            }
        }
    }

    let structured = result.structured_content;
    if let Some(value) = &structured {
        let json = serde_json::to_string(value).unwrap_or_else(|_| value.to_string());
        let echoed = result.content.iter().any(|b| match b {
            ContentBlock::Text(t) => serde_json::from_str::<Value>(&t.text).is_ok_and(|v| &v == value),
            _ => false,
        });
        if !has_text {
            lines.insert(0, json);
        } else if !echoed {
            lines.push(format!("structuredContent: {json}"));
        }
    }
    let text = lines.join("\n");

    if result.is_error == Some(true) {
        let message = if text.trim().is_empty() { "the tool reported an error".to_owned() } else { text };
        return Err(ToolFailure::from_message(message));
    }

    let mut data = Map::new();
    if let Some(value) = structured {
        data.insert("structuredContent".to_owned(), value);
    }
    if !kept.is_empty() {
        data.insert("content".to_owned(), Value::Array(kept));
    }
    let full = (!blobs.is_empty()).then(|| tackle_tools::FullOutput {
        parts: vec![tackle_tools::FullPart::Text(format!("{text}\n\n{}", blobs.join("\n\n")))],
        dropped_bytes: 0,
        cap_bytes: u64::MAX,
    });
    let mut output = ToolOutput::text(text);
    if let Some(full) = full {
        output = output.with_full(full);
    }
    Ok(if data.is_empty() { output } else { output.with_data(Value::Object(data)) })
}

/// What a person (or the model) reads of a resource's contents: its text, or a description of a
/// binary blob (`[mime, N bytes: uri]`), never the blob itself.
pub fn resource_text(contents: &ResourceContents) -> String {
    match contents {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
            describe_blob(mime_type.as_deref().unwrap_or("application/octet-stream"), blob, Some(uri))
        }
        _ => "[unsupported resource contents]".to_owned(),
    }
}

/// One content block as text: text as is, embedded resources by [`resource_text`], links and
/// media described.
pub fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => describe_blob(&image.mime_type, &image.data, None),
        ContentBlock::Audio(audio) => describe_blob(&audio.mime_type, &audio.data, None),
        ContentBlock::Resource(embedded) => resource_text(&embedded.resource),
        ContentBlock::ResourceLink(link) => format!("resource: {} ({})", link.uri, link.name),
        _ => "[unsupported content block]".to_owned(),
    }
}

/// A prompt message as `role: text`.
pub fn prompt_message_text(message: &rmcp::model::PromptMessage) -> String {
    let role = match message.role {
        rmcp::model::Role::User => "user",
        rmcp::model::Role::Assistant => "assistant",
        #[allow(unreachable_patterns)]
        _ => "other",
    };
    format!("{role}: {}", block_text(&message.content))
}

fn keep(kept: &mut Vec<Value>, block: &ContentBlock) {
    match serde_json::to_value(block) {
        Ok(value) => kept.push(value),
        Err(err) => tracing::warn!(error = %err, "could not keep an MCP content block"),
    }
}

/// `[mime, N bytes]` or `[mime, N bytes: uri]`, with N decoded from the base64 length.
fn describe_blob(mime: &str, base64: &str, uri: Option<&str>) -> String {
    let bytes = base64_decoded_len(base64);
    match uri {
        Some(uri) => format!("[{mime}, {bytes} bytes: {uri}]"),
        None => format!("[{mime}, {bytes} bytes]"),
    }
}

/// Length of the bytes a base64 string decodes to (ignoring whitespace), without decoding.
pub(crate) fn base64_decoded_len(data: &str) -> usize {
    let bytes = data.bytes().filter(|b| !b.is_ascii_whitespace());
    let (mut len, mut padding) = (0usize, 0usize);
    for b in bytes {
        len += 1;
        if b == b'=' {
            padding += 1;
        }
    }
    let payload = len - padding;
    payload * 3 / 4
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tackle_protocol::ErrorCategory;

    use super::*;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_blocks_are_joined() {
        let out = map_call_result(result(json!({
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
        })))
        .unwrap();
        assert_eq!(out.text, "one\ntwo");
        assert_eq!(out.data, None);
    }

    #[test]
    fn binary_content_is_described_and_kept_in_data() {
        // 12 bytes of payload: "AAAAAAAAAAAAAAAA" is 16 chars -> 12 bytes.
        let out = map_call_result(result(json!({
            "content": [
                {"type": "text", "text": "here"},
                {"type": "image", "data": "AAAAAAAAAAAAAAAA", "mimeType": "image/png"},
                {"type": "audio", "data": "AAA=", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "file:///x.gz", "mimeType": "application/gzip", "blob": "AA=="}}
            ]
        })))
        .unwrap();
        assert_eq!(
            out.text,
            "here\n[image/png, 12 bytes]\n[audio/wav, 2 bytes]\n[application/gzip, 1 bytes: file:///x.gz]"
        );
        let full = out.full.as_ref().unwrap().to_text().unwrap();
        assert!(full.starts_with(&out.text) && full.contains("[image/png, 12 bytes]\nAAAAAAAAAAAAAAAA"));
        let data = out.data.unwrap();
        let kept = data["content"].as_array().unwrap();
        assert_eq!(kept.len(), 3);
        assert_eq!(kept[0]["type"], "image");
        assert_eq!(kept[0]["data"], "AAAAAAAAAAAAAAAA");
        assert!(!out.text.contains("AAAA"), "blobs are never inlined");
    }

    #[test]
    fn resources_links_and_embedded_text() {
        let out = map_call_result(result(json!({
            "content": [
                {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"},
                {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "inline body"}}
            ]
        })))
        .unwrap();
        assert_eq!(out.text, "resource: file:///a.txt (a.txt)\ninline body");
        assert_eq!(out.data, None);
    }

    #[test]
    fn structured_content_is_kept_and_rendered_without_text() {
        let out = map_call_result(result(json!({
            "content": [],
            "structuredContent": {"temperature": 21.5, "unit": "C"}
        })))
        .unwrap();
        assert_eq!(out.text, r#"{"temperature":21.5,"unit":"C"}"#);
        assert_eq!(out.data.unwrap()["structuredContent"]["unit"], "C");

        let out = map_call_result(result(json!({
            "content": [{"type": "text", "text": "21.5 C"}],
            "structuredContent": {"temperature": 21.5}
        })))
        .unwrap();
        assert_eq!(out.text, "21.5 C\nstructuredContent: {\"temperature\":21.5}", "the model sees both");
        assert_eq!(out.data.unwrap()["structuredContent"]["temperature"], 21.5);

        let out = map_call_result(result(json!({
            "content": [{"type": "text", "text": "{\"temperature\": 21.5}"}],
            "structuredContent": {"temperature": 21.5}
        })))
        .unwrap();
        assert_eq!(out.text, "{\"temperature\": 21.5}", "a text block that is the JSON is not repeated");
    }

    #[test]
    fn is_error_becomes_a_classified_failure() {
        let err = map_call_result(result(json!({
            "content": [{"type": "text", "text": "ENOENT: no such file or directory, open 'x'"}],
            "isError": true
        })))
        .unwrap_err();
        assert_eq!(err.category, ErrorCategory::NotFound);
        assert!(err.message.contains("ENOENT"));

        let err = map_call_result(result(json!({"content": [], "isError": true}))).unwrap_err();
        assert_eq!(err.category, ErrorCategory::Internal);
        assert_eq!(err.message, "the tool reported an error");
    }

    #[test]
    fn empty_result_is_empty_text() {
        let out = map_call_result(result(json!({"content": []}))).unwrap();
        assert_eq!(out, ToolOutput::text(""));
    }

    #[test]
    fn base64_lengths() {
        assert_eq!(base64_decoded_len(""), 0);
        assert_eq!(base64_decoded_len("AA=="), 1);
        assert_eq!(base64_decoded_len("AAA="), 2);
        assert_eq!(base64_decoded_len("AAAA"), 3);
        assert_eq!(base64_decoded_len("AAAA\nAAAA"), 6);
    }
}

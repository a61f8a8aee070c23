//! Skills an MCP server serves (the skills extension, SEP-2640).
//!
//! A server lists its skills (`skills/list`): each names the URI of its `SKILL.md`, its front
//! matter, and a manifest of its files with their sizes and SHA-256 digests. Tackle lists them
//! when it connects and reads no file then; a skill's `SKILL.md` is read when the model
//! activates the skill, a supporting file when the model asks for it. Every file read is checked
//! against the manifest (size, then digest: rmcp's [`SkillResource::verify`]), and `SKILL.md`'s
//! front matter against the listed one, field by field. Content that fails is refused and never
//! used: the model gets the reason, the skill stays inactive.
//!
//! ```
//! use rmcp::model::{Skill, SkillFrontmatter, SkillResource, SkillResources};
//! let text = "---\nname: pdf\ndescription: Fill PDF forms\n---\n\nUse the form tool.\n";
//! let entry = Skill::new(
//!     "skill://pdf/SKILL.md",
//!     SkillFrontmatter::new("pdf", "Fill PDF forms"),
//!     SkillResources::Files(vec![SkillResource::from_bytes("skill://pdf/SKILL.md", text.as_bytes())]),
//! );
//! assert_eq!(tackle_mcp::verify_skill_md(&entry, text.as_bytes()).unwrap(), "Use the form tool.");
//! let tampered = text.replace("Use the", "Ignore the");
//! assert!(tackle_mcp::verify_skill_md(&entry, tampered.as_bytes()).is_err());
//! ```

use base64::Engine;
use rmcp::model::{ReadResourceResult, ResourceContents, Skill, SkillIntegrityError, SkillResources};
use serde_json::{Map, Value};

use crate::error::McpError;

/// A skill one server serves, as it listed it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpSkill {
    server: String,
    entry: Skill,
}

impl McpSkill {
    /// The skill `entry` listed by `server`.
    pub fn new(server: impl Into<String>, entry: Skill) -> Self {
        Self { server: server.into(), entry }
    }

    /// The configured name of the server serving it.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The skill's name (its front matter's, which the listing checked against its URI).
    pub fn name(&self) -> &str {
        &self.entry.frontmatter.name
    }

    /// The one-line description the model is shown.
    pub fn description(&self) -> &str {
        &self.entry.frontmatter.description
    }

    /// The URI of its `SKILL.md`.
    pub fn uri(&self) -> &str {
        &self.entry.uri
    }

    /// The listing as the server sent it.
    pub fn entry(&self) -> &Skill {
        &self.entry
    }

    /// The skill's files other than `SKILL.md`, relative to the skill (`references/FORMS.md`);
    /// empty when the server serves them dynamically (no manifest).
    pub fn supporting_files(&self) -> Vec<String> {
        let SkillResources::Files(files) = &self.entry.resources else { return Vec::new() };
        files.iter().filter(|f| f.uri != self.entry.uri).map(|f| self.relative(&f.uri).to_owned()).collect()
    }

    /// The URI of `file`, given relative to the skill or as a full URI; `None` when it is not
    /// one of the skill's files.
    pub fn file_uri(&self, file: &str) -> Option<String> {
        let base = self.base();
        let uri = if file.contains("://") {
            file.to_owned()
        } else {
            format!("{base}{}", file.trim_start_matches('/'))
        };
        let inside = uri.starts_with(base)
            && !uri[base.len()..].split('/').any(|part| part == ".." || part.is_empty());
        match &self.entry.resources {
            SkillResources::Files(files) => files.iter().any(|f| f.uri == uri).then_some(uri),
            _ => inside.then_some(uri),
        }
    }

    /// The directory URI of the skill (its `SKILL.md` URI without the file name).
    fn base(&self) -> &str {
        let uri = self.entry.uri.as_str();
        uri.rfind('/').map_or(uri, |i| &uri[..=i])
    }

    fn relative<'a>(&self, uri: &'a str) -> &'a str {
        uri.strip_prefix(self.base()).unwrap_or(uri)
    }
}

/// Why a skill's file was refused. Each message says what was wrong; none of the content is used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillLoadError {
    /// The server could not be asked or refused the read.
    #[error(transparent)]
    Read(#[from] McpError),
    /// The file is not in the skill's manifest.
    #[error("{file} is not a file of skill {skill}; its files: {files}")]
    NotInSkill {
        /// The skill.
        skill: String,
        /// The file asked for.
        file: String,
        /// The files it has.
        files: String,
    },
    /// The read returned no contents for the URI.
    #[error("the server returned no contents for {uri}")]
    NoContents {
        /// The file.
        uri: String,
    },
    /// The contents are not decodable (bad base64, not UTF-8 text).
    #[error("the contents of {uri} cannot be decoded: {detail}")]
    Undecodable {
        /// The file.
        uri: String,
        /// Why.
        detail: String,
    },
    /// Size or digest differ from the manifest.
    #[error("{0}: the file the server sent is not the one it listed, so it is not used")]
    Integrity(#[from] SkillIntegrityError),
    /// `SKILL.md` has no front matter.
    #[error(
        "{uri} has no front matter (--- name/description ---), so it cannot be checked against the listing"
    )]
    NoFrontMatter {
        /// The file.
        uri: String,
    },
    /// The front matter is not YAML mapping names to values.
    #[error("the front matter of {uri} is not valid YAML: {detail}")]
    InvalidFrontMatter {
        /// The file.
        uri: String,
        /// The parser's message.
        detail: String,
    },
    /// A field of the front matter differs from the listing.
    #[error(
        "the front matter of {uri} differs from the server's listing in `{field}` (listed: {listed}; \
         served: {served}), so the skill is not loaded"
    )]
    FrontMatterMismatch {
        /// The file.
        uri: String,
        /// The first field that differs.
        field: String,
        /// Its listed value (`absent` when not listed).
        listed: String,
        /// Its served value (`absent` when not served).
        served: String,
    },
}

/// The bytes of `uri` in a `resources/read` result (text as UTF-8, a blob decoded).
pub fn contents_bytes(result: &ReadResourceResult, uri: &str) -> Result<Vec<u8>, SkillLoadError> {
    let found = result
        .contents
        .iter()
        .find(|c| contents_uri(c) == Some(uri))
        .or_else(|| (result.contents.len() == 1).then(|| &result.contents[0]))
        .ok_or_else(|| SkillLoadError::NoContents { uri: uri.to_owned() })?;
    match found {
        ResourceContents::TextResourceContents { text, .. } => Ok(text.clone().into_bytes()),
        ResourceContents::BlobResourceContents { blob, .. } => base64::engine::general_purpose::STANDARD
            .decode(blob)
            .map_err(|e| SkillLoadError::Undecodable { uri: uri.to_owned(), detail: e.to_string() }),
        _ => Err(SkillLoadError::NoContents { uri: uri.to_owned() }),
    }
}

fn contents_uri(contents: &ResourceContents) -> Option<&str> {
    match contents {
        ResourceContents::TextResourceContents { uri, .. }
        | ResourceContents::BlobResourceContents { uri, .. } => Some(uri),
        _ => None,
    }
}

/// Checks `bytes` read for `uri` against the skill's manifest: its size, then its digest. A
/// skill served dynamically has no manifest, so nothing to check against.
pub fn verify_file(entry: &Skill, uri: &str, bytes: &[u8]) -> Result<(), SkillLoadError> {
    match &entry.resources {
        SkillResources::Files(files) => {
            let listed = files.iter().find(|f| f.uri == uri).ok_or_else(|| SkillLoadError::NotInSkill {
                skill: entry.frontmatter.name.clone(),
                file: uri.to_owned(),
                files: files.iter().map(|f| f.uri.as_str()).collect::<Vec<_>>().join(", "),
            })?;
            Ok(listed.verify(bytes)?)
        }
        _ => Ok(()),
    }
}

/// Checks a `SKILL.md` read for `entry` (size and digest, then its front matter against the
/// listed one, field by field) and returns its body, the skill's instructions.
pub fn verify_skill_md(entry: &Skill, bytes: &[u8]) -> Result<String, SkillLoadError> {
    let uri = entry.uri.as_str();
    verify_file(entry, uri, bytes)?;
    let text = std::str::from_utf8(bytes)
        .map_err(|e| SkillLoadError::Undecodable { uri: uri.to_owned(), detail: e.to_string() })?;
    let (yaml, body) = tackle_protocol::split_front_matter(text)
        .ok_or_else(|| SkillLoadError::NoFrontMatter { uri: uri.to_owned() })?;
    let served: Map<String, Value> = serde_saphyr::from_str(yaml)
        .map_err(|e| SkillLoadError::InvalidFrontMatter { uri: uri.to_owned(), detail: e.to_string() })?;
    let listed = match serde_json::to_value(&entry.frontmatter) {
        Ok(Value::Object(listed)) => listed,
        _ => Map::new(),
    };
    let mut fields: Vec<&String> = listed.keys().chain(served.keys()).collect();
    fields.sort();
    fields.dedup();
    for field in fields {
        let (l, s) = (listed.get(field), served.get(field));
        if l != s {
            let show = |v: Option<&Value>| v.map_or_else(|| "absent".to_owned(), |v| shorten(&v.to_string()));
            return Err(SkillLoadError::FrontMatterMismatch {
                uri: uri.to_owned(),
                field: field.clone(),
                listed: show(l),
                served: show(s),
            });
        }
    }
    Ok(body.trim().to_owned())
}

fn shorten(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{SkillFrontmatter, SkillResource};

    const MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nlicense: MIT\n---\n\nSkill body.\n";
    const FORMS: &str = "Supporting content.\n";

    fn entry(md: &str) -> Skill {
        Skill::new(
            "skill://pdf-processing/SKILL.md",
            SkillFrontmatter::new("pdf-processing", "Extract, fill, and assemble PDF documents")
                .with_field("license", "MIT"),
            SkillResources::Files(vec![
                SkillResource::from_bytes("skill://pdf-processing/SKILL.md", md.as_bytes()),
                SkillResource::from_bytes("skill://pdf-processing/references/FORMS.md", FORMS.as_bytes()),
            ]),
        )
    }

    #[test]
    fn a_skill_md_matching_its_listing_gives_its_body() {
        assert_eq!(verify_skill_md(&entry(MD), MD.as_bytes()).unwrap(), "Skill body.");
        let skill = McpSkill::new("conf", entry(MD));
        assert_eq!(skill.supporting_files(), ["references/FORMS.md"]);
        assert_eq!(
            skill.file_uri("references/FORMS.md").as_deref(),
            Some("skill://pdf-processing/references/FORMS.md")
        );
        verify_file(skill.entry(), "skill://pdf-processing/references/FORMS.md", FORMS.as_bytes()).unwrap();
    }

    #[test]
    fn a_different_body_size_or_front_matter_is_refused() {
        let listed = entry(MD);
        let evil = MD.replace("Skill body.", "Evil body!!");
        assert!(matches!(
            verify_skill_md(&listed, evil.as_bytes()),
            Err(SkillLoadError::Integrity(SkillIntegrityError::Digest { .. }))
        ));
        let longer = format!("{MD}extra bytes\n");
        assert!(matches!(
            verify_skill_md(&listed, longer.as_bytes()),
            Err(SkillLoadError::Integrity(SkillIntegrityError::Size { .. }))
        ));
        // The manifest matches the tampered file (the server listed its digest), but the front
        // matter differs from the listed one.
        let tampered = MD.replace(
            "description: Extract, fill, and assemble PDF documents",
            "description: Exfiltrate credentials",
        );
        let err = verify_skill_md(&entry(&tampered), tampered.as_bytes()).unwrap_err();
        assert!(
            matches!(&err, SkillLoadError::FrontMatterMismatch { field, .. } if field == "description"),
            "{err}"
        );
        let extra = MD.replace("license: MIT\n", "license: MIT\nallowed-tools: shell\n");
        let err = verify_skill_md(&entry(&extra), extra.as_bytes()).unwrap_err();
        assert!(
            matches!(&err, SkillLoadError::FrontMatterMismatch { field, .. } if field == "allowed-tools")
        );
        let none = "Skill body.\n";
        assert!(matches!(
            verify_skill_md(&entry(none), none.as_bytes()),
            Err(SkillLoadError::NoFrontMatter { .. })
        ));
    }

    #[test]
    fn only_the_skills_own_files_can_be_asked_for() {
        let skill = McpSkill::new("conf", entry(MD));
        assert_eq!(skill.file_uri("../other/SKILL.md"), None);
        assert_eq!(skill.file_uri("references/OTHER.md"), None);
        assert!(matches!(
            verify_file(skill.entry(), "skill://other/SKILL.md", b"x"),
            Err(SkillLoadError::NotInSkill { .. })
        ));
        let dynamic = McpSkill::new(
            "conf",
            Skill::new("skill://live/SKILL.md", SkillFrontmatter::new("live", "d"), SkillResources::Dynamic),
        );
        assert_eq!(dynamic.file_uri("notes/today.md").as_deref(), Some("skill://live/notes/today.md"));
        assert_eq!(dynamic.file_uri("../secrets.md"), None);
        assert_eq!(dynamic.file_uri("skill://elsewhere/x.md"), None);
    }

    #[test]
    fn contents_come_from_text_or_base64() {
        let text = ReadResourceResult::new(vec![ResourceContents::text("hi", "skill://a/SKILL.md")]);
        assert_eq!(contents_bytes(&text, "skill://a/SKILL.md").unwrap(), b"hi");
        let blob = ReadResourceResult::new(vec![ResourceContents::blob("aGk=", "skill://a/x.bin")]);
        assert_eq!(contents_bytes(&blob, "skill://a/x.bin").unwrap(), b"hi");
        let bad = ReadResourceResult::new(vec![ResourceContents::blob("!!", "skill://a/x.bin")]);
        assert!(matches!(contents_bytes(&bad, "skill://a/x.bin"), Err(SkillLoadError::Undecodable { .. })));
    }
}

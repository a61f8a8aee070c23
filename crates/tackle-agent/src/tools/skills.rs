//! Skills: `skills/<name>/SKILL.md` files that describe a capability and unlock a group of tools,
//! and the skills MCP servers serve (the skills extension, SEP-2640).
//!
//! Skill names and descriptions are listed in a cacheable system section; the instructions only
//! enter the conversation when the model calls `activate_skill`, and the skill's tools become
//! callable from the next step. At most [`MAX_ACTIVE_SKILLS`] are active; activating another
//! evicts the oldest (FIFO), masking its tools again. The active list is stored per session.
//!
//! A server's skill is read only when it is activated: its `SKILL.md` is fetched then and used
//! only when its size, digest and front matter match what the server listed (see
//! `tackle_mcp::skills`); otherwise the model is told why and the skill stays inactive. An
//! active skill's other files are read with `activate_skill` and `file`, checked the same way.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle_protocol::{ErrorCategory, SystemSection, ToolAnnotations};
use tackle_store::Store;
use tackle_tools::{ToolContext, ToolDoc, ToolFailure, ToolOutput, TypedTool};

/// Most skills active at once.
pub const MAX_ACTIVE_SKILLS: usize = 3;

/// Name of the tool that activates skills.
pub const ACTIVATE_SKILL: &str = "activate_skill";

/// Session-state key of the active skill list.
pub const ACTIVE_SKILLS_KEY: &str = "skills.active";

/// A discovered skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Skill {
    /// Name (the directory name unless the front matter says otherwise).
    pub name: String,
    /// One-line description shown in the system prompt.
    pub description: String,
    /// Tools the skill unlocks.
    pub tools: Vec<String>,
    /// Where its instructions come from.
    pub source: SkillSource,
}

/// Where a skill's instructions come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SkillSource {
    /// A `SKILL.md` on disk, read when the skill was discovered.
    File {
        /// The file.
        path: PathBuf,
        /// Its body, returned on activation.
        instructions: String,
    },
    /// Served by an MCP server: its `SKILL.md` is read on activation and checked against the
    /// server's listing.
    Mcp {
        /// The configured server name.
        server: String,
        /// The URI of its `SKILL.md`.
        uri: String,
    },
}

impl Skill {
    /// The skill an MCP server listed.
    #[cfg(feature = "mcp")]
    pub fn from_mcp(skill: &tackle_mcp::McpSkill) -> Self {
        Self {
            name: skill.name().to_owned(),
            description: skill.description().trim().to_owned(),
            tools: Vec::new(),
            source: SkillSource::Mcp { server: skill.server().to_owned(), uri: skill.uri().to_owned() },
        }
    }
}

#[derive(Debug, Deserialize)]
struct FrontMatter {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    tools: Vec<String>,
}

/// Why a SKILL.md was skipped; each message says what to fix in the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum SkillError {
    /// The file does not start with front matter.
    #[error("missing YAML front matter (--- name/description/tools ---)")]
    NoFrontMatter,
    /// The front matter is not valid YAML of the expected shape.
    #[error("invalid front matter: {0}")]
    InvalidFrontMatter(String),
    /// The name is not usable.
    #[error("skill name {0:?} must match ^[a-zA-Z0-9_-]{{1,64}}$")]
    InvalidName(String),
    /// No description.
    #[error("front matter needs a description")]
    NoDescription,
}

/// Parses one SKILL.md.
pub(crate) fn parse_skill(dir_name: &str, path: &Path, text: &str) -> Result<Skill, SkillError> {
    let (yaml, body) = tackle_protocol::split_front_matter(text).ok_or(SkillError::NoFrontMatter)?;
    let front: FrontMatter =
        serde_saphyr::from_str(yaml).map_err(|e| SkillError::InvalidFrontMatter(e.to_string()))?;
    let name = front.name.unwrap_or_else(|| dir_name.to_owned());
    if !tackle_protocol::is_valid_tool_name(&name) {
        return Err(SkillError::InvalidName(name));
    }
    let description = front.description.unwrap_or_default().trim().to_owned();
    if description.is_empty() {
        return Err(SkillError::NoDescription);
    }
    Ok(Skill {
        name,
        description,
        tools: front.tools,
        source: SkillSource::File { path: path.to_owned(), instructions: body.trim().to_owned() },
    })
}

/// The skills available to a session.
#[derive(Debug, Clone, Default)]
pub struct SkillSet {
    skills: BTreeMap<String, Skill>,
}

impl SkillSet {
    /// Skills from `skills/*/SKILL.md` under each root, earlier roots winning on name clashes
    /// (pass the workspace first, then the user config dir). Unreadable or malformed files are
    /// skipped and reported in the returned warnings.
    pub fn discover(roots: &[PathBuf]) -> (Self, Vec<String>) {
        let mut set = Self::default();
        let mut warnings = Vec::new();
        for root in roots {
            let Ok(entries) = std::fs::read_dir(root.join("skills")) else { continue };
            let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
            dirs.sort();
            for dir in dirs {
                let path = dir.join("SKILL.md");
                let Ok(text) = std::fs::read_to_string(&path) else { continue };
                let dir_name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                match parse_skill(&dir_name, &path, &text) {
                    Ok(skill) => {
                        set.skills.entry(skill.name.clone()).or_insert(skill);
                    }
                    Err(e) => warnings.push(format!("skill {}: {e}", path.display())),
                }
            }
        }
        (set, warnings)
    }

    /// Adds `skills` (an MCP server's) after those found on disk: a name already taken keeps
    /// the earlier skill, and the clash is reported in `warnings`.
    pub fn add(&mut self, skills: impl IntoIterator<Item = Skill>, warnings: &mut Vec<String>) {
        for skill in skills {
            if !tackle_protocol::is_valid_tool_name(&skill.name) {
                warnings.push(format!("skill {:?}: the name must match ^[a-zA-Z0-9_-]{{1,64}}$", skill.name));
                continue;
            }
            match self.skills.get(&skill.name) {
                Some(kept) => warnings.push(format!(
                    "skill {} from {} is hidden by the skill of the same name from {}",
                    skill.name,
                    skill.origin(),
                    kept.origin()
                )),
                None => {
                    self.skills.insert(skill.name.clone(), skill);
                }
            }
        }
    }

    /// A set from skills (tests, embedding).
    pub fn from_skills(skills: impl IntoIterator<Item = Skill>) -> Self {
        Self { skills: skills.into_iter().map(|s| (s.name.clone(), s)).collect() }
    }

    /// Whether there are no skills.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The skill `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    /// Skill names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.skills.keys().cloned().collect()
    }

    /// Tools that belong to some skill: callable only while one of their skills is active.
    pub fn gated_tools(&self) -> HashSet<String> {
        self.skills.values().flat_map(|s| s.tools.iter().cloned()).collect()
    }

    /// Tools unlocked by the `active` skills.
    pub fn unlocked_tools<'a>(&'a self, active: impl IntoIterator<Item = &'a String>) -> HashSet<String> {
        active.into_iter().filter_map(|n| self.skills.get(n)).flat_map(|s| s.tools.iter().cloned()).collect()
    }

    /// The cacheable system section listing the skills (sorted, so it never changes order).
    pub fn system_section(&self) -> Option<SystemSection> {
        if self.skills.is_empty() {
            return None;
        }
        let mut text = String::from(
            "# Skills\n\nCall activate_skill with a name to get its instructions and unlock its tools \
             (at most 3 active; activating a fourth deactivates the oldest).\n",
        );
        for s in self.skills.values() {
            text.push_str(&format!("\n- {}: {}", s.name, s.description));
        }
        Some(SystemSection::cacheable("skills", text))
    }
}

/// Skills found for one workspace, with the problems met while reading them.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct DiscoveredSkills {
    /// The skills.
    pub skills: SkillSet,
    /// Unreadable or malformed skill files, one message each.
    pub warnings: Vec<String>,
}

/// The skills of every workspace an agent's sessions use, discovered once per workspace.
///
/// A workspace's skills are its own `skills/` directory, then those of the extra roots (the
/// user's config directory). The session's system prompt and `activate_skill` both ask this
/// library, so a skill the prompt offers is a skill the tool accepts, in every workspace.
/// Skills added to disk later are seen by a new agent (a new process), not by a running one.
#[derive(Debug, Default)]
pub struct SkillLibrary {
    extra_roots: Vec<PathBuf>,
    /// Skills MCP servers serve: offered in every workspace, after the workspace's own.
    served: Vec<Skill>,
    found: Mutex<HashMap<PathBuf, Arc<DiscoveredSkills>>>,
}

impl SkillLibrary {
    /// A library searching each workspace, then `extra_roots` (e.g. `~/.config/tackle`).
    pub fn new(extra_roots: Vec<PathBuf>) -> Self {
        Self { extra_roots, served: Vec::new(), found: Mutex::default() }
    }

    /// The same library also offering `skills` served by MCP servers (after the skills found on
    /// disk, which win a name clash).
    pub fn with_served(mut self, skills: Vec<Skill>) -> Self {
        self.served = skills;
        self
    }

    /// A library with these skills for `workspace` (embedding and tests).
    pub fn with_skills(workspace: &Path, skills: SkillSet) -> Self {
        let library = Self::default();
        let discovered = Arc::new(DiscoveredSkills { skills, warnings: Vec::new() });
        library.lock().insert(workspace.to_owned(), discovered);
        library
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Arc<DiscoveredSkills>>> {
        self.found.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The skills of `workspace` (a canonical path), discovered on first use.
    pub fn for_workspace(&self, workspace: &Path) -> Arc<DiscoveredSkills> {
        if let Some(found) = self.lock().get(workspace) {
            return found.clone();
        }
        let mut roots = vec![workspace.to_owned()];
        roots.extend(self.extra_roots.iter().cloned());
        let (mut skills, mut warnings) = SkillSet::discover(&roots);
        skills.add(self.served.iter().cloned(), &mut warnings);
        let discovered = Arc::new(DiscoveredSkills { skills, warnings });
        self.lock().entry(workspace.to_owned()).or_insert(discovered).clone()
    }
}

impl Skill {
    /// Where the skill comes from, for messages (`/ws/skills/git/SKILL.md`, `MCP server docs`).
    pub fn origin(&self) -> String {
        match &self.source {
            SkillSource::File { path, .. } => path.display().to_string(),
            SkillSource::Mcp { server, .. } => format!("MCP server {server}"),
        }
    }
}

/// The active skills of a session, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ActiveSkills(pub VecDeque<String>);

impl ActiveSkills {
    /// Activates `name`; returns the skill evicted to stay within the limit, if any.
    /// Re-activating an active skill changes nothing.
    pub fn activate(&mut self, name: &str) -> Option<String> {
        if self.0.iter().any(|n| n == name) {
            return None;
        }
        self.0.push_back(name.to_owned());
        if self.0.len() > MAX_ACTIVE_SKILLS { self.0.pop_front() } else { None }
    }
}

/// Arguments of `activate_skill`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ActivateSkillArgs {
    /// The skill to activate, as listed in the Skills section. Example: "git".
    pub name: String,
    /// A file of the (already active) skill to read instead, relative to the skill, as its
    /// instructions name it. Example: "references/FORMS.md".
    #[serde(default)]
    pub file: Option<String>,
}

/// The `activate_skill` tool.
#[derive(Debug, Clone)]
pub struct ActivateSkill {
    library: Arc<SkillLibrary>,
    store: Store,
    #[cfg(feature = "mcp")]
    mcp: Option<Arc<tackle_mcp::McpManager>>,
}

impl ActivateSkill {
    /// A tool activating the skills `library` holds for the calling session's workspace,
    /// keeping the active list in `store`.
    pub fn new(library: Arc<SkillLibrary>, store: Store) -> Self {
        Self {
            library,
            store,
            #[cfg(feature = "mcp")]
            mcp: None,
        }
    }

    /// The same tool reading the skills MCP servers serve through `mcp`.
    #[cfg(feature = "mcp")]
    pub fn with_mcp(mut self, mcp: Option<Arc<tackle_mcp::McpManager>>) -> Self {
        self.mcp = mcp;
        self
    }

    /// The server's listing of an MCP skill.
    #[cfg(feature = "mcp")]
    fn served(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<(Arc<tackle_mcp::McpManager>, tackle_mcp::McpSkill), ToolFailure> {
        let unavailable = || {
            ToolFailure::new(
                ErrorCategory::Unavailable,
                format!("the MCP server {server} no longer offers {uri}"),
            )
        };
        let mcp = self.mcp.clone().ok_or_else(unavailable)?;
        let skill = mcp.skill(server, uri).ok_or_else(unavailable)?;
        Ok((mcp, skill))
    }

    /// The skill's instructions: read now (and verified) for a server's skill.
    async fn instructions(&self, skill: &Skill, ctx: &ToolContext) -> Result<String, ToolFailure> {
        match &skill.source {
            SkillSource::File { instructions, .. } => Ok(instructions.clone()),
            SkillSource::Mcp { server, uri } => self.read_served(skill, server, uri, None, ctx).await,
        }
    }

    /// `file` of the active skill `skill`.
    async fn read_file(&self, skill: &Skill, file: &str, ctx: &ToolContext) -> Result<String, ToolFailure> {
        match &skill.source {
            SkillSource::Mcp { server, uri } => self.read_served(skill, server, uri, Some(file), ctx).await,
            SkillSource::File { path, .. } => {
                let dir = path.parent().unwrap_or(Path::new("."));
                let wanted = dir.join(file);
                let inside = std::path::Path::new(file)
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir));
                let text = inside.then(|| std::fs::read_to_string(&wanted).ok()).flatten();
                text.ok_or_else(|| {
                    ToolFailure::new(
                        ErrorCategory::NotFound,
                        format!("skill {} has no file {file:?}", skill.name),
                    )
                    .with_hint(format!("its files are under {}", dir.display()))
                })
            }
        }
    }
}

impl ActivateSkill {
    /// A served skill's `SKILL.md` body (`file` `None`) or another of its files, checked
    /// against the server's listing.
    #[cfg(feature = "mcp")]
    async fn read_served(
        &self,
        skill: &Skill,
        server: &str,
        uri: &str,
        file: Option<&str>,
        ctx: &ToolContext,
    ) -> Result<String, ToolFailure> {
        let (mcp, served) = self.served(server, uri)?;
        let read = match file {
            None => mcp.load_skill(&served, ctx).await,
            Some(file) => mcp.read_skill_file(&served, file, ctx).await,
        };
        read.map_err(|e| refused(&skill.name, e))
    }

    /// Without the `mcp` feature no server is connected, so no served skill can be read.
    #[cfg(not(feature = "mcp"))]
    async fn read_served(
        &self,
        _skill: &Skill,
        server: &str,
        uri: &str,
        _file: Option<&str>,
        _ctx: &ToolContext,
    ) -> Result<String, ToolFailure> {
        Err(ToolFailure::new(
            ErrorCategory::Unavailable,
            format!(
                "{uri} of MCP server {server} cannot be read: this build has no MCP client (feature `mcp`)"
            ),
        ))
    }
}

/// A server's skill file that could not be used.
#[cfg(feature = "mcp")]
fn refused(name: &str, e: tackle_mcp::SkillLoadError) -> ToolFailure {
    let category = match &e {
        tackle_mcp::SkillLoadError::Read(_) => ErrorCategory::Unavailable,
        tackle_mcp::SkillLoadError::NotInSkill { .. } => ErrorCategory::NotFound,
        _ => ErrorCategory::Conflict,
    };
    ToolFailure::new(category, format!("skill {name} was not loaded: {e}")).with_hint(
        "do not rely on this skill; carry on without it or tell the user the server's skill failed its check",
    )
}

#[async_trait]
impl TypedTool for ActivateSkill {
    type Args = ActivateSkillArgs;

    fn name(&self) -> &str {
        ACTIVATE_SKILL
    }

    fn description(&self) -> String {
        ToolDoc::new("Activate a skill: get its instructions and unlock its tools from the next step on.")
            .use_when("a task matches a skill listed in the Skills section of the system prompt")
            .does_not("run the skill's tools itself; call them after activation")
            .does_not("keep more than 3 skills active: a fourth deactivates the oldest")
            .arg("name", "A skill name from the Skills section. Example: \"git\"")
            .arg("file", "Optional: a file of an active skill to read, as its instructions name it. Example: \"references/FORMS.md\"")
            .returns("The skill's instructions and the tools it unlocked (and which skill was deactivated, if any).")
            .example(r#"{"name": "git"}"#)
            .render()
    }

    fn annotations(&self) -> ToolAnnotations {
        // Not marked idempotent: two activations in one step must run in call order, since each
        // reads and rewrites the session's active list (and the order decides FIFO eviction).
        ToolAnnotations::session_only()
    }

    async fn run(&self, args: ActivateSkillArgs, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        let discovered = self.library.for_workspace(&ctx.workspace);
        let skills = &discovered.skills;
        let Some(skill) = skills.get(&args.name) else {
            let names = skills.names();
            let list = if names.is_empty() { "none".to_owned() } else { names.join(", ") };
            return Err(ToolFailure::new(
                ErrorCategory::NotFound,
                format!("there is no skill named {:?}", args.name),
            )
            .with_hint(format!("available skills: {list}")));
        };
        let internal = |e: tackle_store::StoreError| ToolFailure::internal(e.to_string());
        let store = super::store_for(&ctx, &self.store);
        let mut active: ActiveSkills = store
            .sessions()
            .get_state(&ctx.session_id, ACTIVE_SKILLS_KEY)
            .await
            .map_err(internal)?
            .unwrap_or_default();
        if let Some(file) = &args.file {
            if !active.0.contains(&skill.name) {
                return Err(ToolFailure::new(
                    ErrorCategory::InvalidArgs,
                    format!("skill {} is not active, so its files are not read", skill.name),
                )
                .with_hint(format!("activate it first: {{\"name\": \"{}\"}}", skill.name)));
            }
            return Ok(ToolOutput::text(self.read_file(skill, file, &ctx).await?));
        }
        // A server's skill is read and checked before it counts as active.
        let instructions = self.instructions(skill, &ctx).await?;
        let evicted = active.activate(&skill.name);
        store.sessions().set_state(&ctx.session_id, ACTIVE_SKILLS_KEY, &active).await.map_err(internal)?;
        let mut out = format!("Skill {} is active.", skill.name);
        if !skill.tools.is_empty() {
            out.push_str(&format!(" Tools available from the next step: {}.", skill.tools.join(", ")));
        }
        if let Some(e) = evicted {
            out.push_str(&format!(" Skill {e} was deactivated (at most {MAX_ACTIVE_SKILLS} are active)."));
        }
        out.push_str("\n\n");
        out.push_str(&instructions);
        Ok(ToolOutput::text(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_parses() {
        let text = "---\nname: git\ndescription: Work with git history.\ntools: [git_log, git_diff]\n---\n\nUse git_log first.\n";
        let s = parse_skill("dir", Path::new("x"), text).unwrap();
        assert_eq!((s.name.as_str(), s.tools.len()), ("git", 2));
        assert!(
            matches!(&s.source, SkillSource::File { instructions, .. } if instructions == "Use git_log first.")
        );
        let list = "---\ndescription: d\ntools:\n  - a\n  - b\n---\nbody";
        assert_eq!(parse_skill("fallback", Path::new("x"), list).unwrap().name, "fallback");
        assert!(parse_skill("d", Path::new("x"), "no front matter").is_err());
        assert!(parse_skill("d", Path::new("x"), "---\nname: [unclosed\n---\n").is_err());
        assert!(
            parse_skill("d", Path::new("x"), "---\nname: x\n---\nbody")
                .unwrap_err()
                .to_string()
                .contains("description")
        );
    }

    #[test]
    fn fifo_eviction_keeps_three() {
        let mut a = ActiveSkills::default();
        assert_eq!(a.activate("a"), None);
        assert_eq!(a.activate("b"), None);
        assert_eq!(a.activate("c"), None);
        assert_eq!(a.activate("b"), None, "re-activation is a no-op");
        assert_eq!(a.activate("d"), Some("a".into()));
        assert_eq!(a.0, ["b", "c", "d"]);
    }
}

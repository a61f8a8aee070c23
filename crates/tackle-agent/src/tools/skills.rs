//! Skills: `skills/<name>/SKILL.md` files that describe a capability and unlock a group of tools.
//!
//! Skill names and descriptions are listed in a cacheable system section; the instructions only
//! enter the conversation when the model calls `activate_skill`, and the skill's tools become
//! callable from the next step. At most [`MAX_ACTIVE_SKILLS`] are active; activating another
//! evicts the oldest (FIFO), masking its tools again. The active list is stored per session.

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
    /// The body of SKILL.md, returned on activation.
    pub instructions: String,
    /// Where it was found.
    pub path: PathBuf,
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

/// Splits `---\nyaml\n---\nbody`; `None` without front matter.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let rest =
        text.strip_prefix("---").map(|r| r.trim_start_matches(['\r']).strip_prefix('\n').unwrap_or(r))?;
    let end = rest.find("\n---")?;
    let yaml = &rest[..end];
    let body = rest[end + 4..].trim_start_matches(['-']);
    Some((yaml, body.trim_start_matches(['\r', '\n'])))
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
    let (yaml, body) = split_front_matter(text).ok_or(SkillError::NoFrontMatter)?;
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
        instructions: body.trim().to_owned(),
        path: path.to_owned(),
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
    found: Mutex<HashMap<PathBuf, Arc<DiscoveredSkills>>>,
}

impl SkillLibrary {
    /// A library searching each workspace, then `extra_roots` (e.g. `~/.config/tackle`).
    pub fn new(extra_roots: Vec<PathBuf>) -> Self {
        Self { extra_roots, found: Mutex::default() }
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
        let (skills, warnings) = SkillSet::discover(&roots);
        let discovered = Arc::new(DiscoveredSkills { skills, warnings });
        self.lock().entry(workspace.to_owned()).or_insert(discovered).clone()
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
}

/// The `activate_skill` tool.
#[derive(Debug, Clone)]
pub struct ActivateSkill {
    library: Arc<SkillLibrary>,
    store: Store,
}

impl ActivateSkill {
    /// A tool activating the skills `library` holds for the calling session's workspace,
    /// keeping the active list in `store`.
    pub fn new(library: Arc<SkillLibrary>, store: Store) -> Self {
        Self { library, store }
    }
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
            .returns("The skill's instructions and the tools it unlocked (and which skill was deactivated, if any).")
            .example(r#"{"name": "git"}"#)
            .render()
    }

    fn annotations(&self) -> ToolAnnotations {
        // Not marked idempotent: two activations in one step must run in call order, since each
        // reads and rewrites the session's active list (and the order decides FIFO eviction).
        ToolAnnotations::default()
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
        let mut active: ActiveSkills =
            store.get_state(&ctx.session_id, ACTIVE_SKILLS_KEY).await.map_err(internal)?.unwrap_or_default();
        let evicted = active.activate(&skill.name);
        store.set_state(&ctx.session_id, ACTIVE_SKILLS_KEY, &active).await.map_err(internal)?;
        let mut out = format!("Skill {} is active.", skill.name);
        if !skill.tools.is_empty() {
            out.push_str(&format!(" Tools available from the next step: {}.", skill.tools.join(", ")));
        }
        if let Some(e) = evicted {
            out.push_str(&format!(" Skill {e} was deactivated (at most {MAX_ACTIVE_SKILLS} are active)."));
        }
        out.push_str("\n\n");
        out.push_str(&skill.instructions);
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
        assert_eq!(s.instructions, "Use git_log first.");
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

//! [`McpManager`]: every configured MCP server as one source of tools.
//!
//! Servers start in parallel, each within its own start timeout. A server that fails to start
//! is reported and skipped, never fatal. Tools come out in a deterministic order (servers by
//! name, then tools by name) under namespaced names (`server__tool`). Tool-list changes are
//! applied only when the runtime asks ([`McpManager::refresh_if_changed`]), at a turn boundary.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use futures::future::join_all;
use rmcp::model::Tool as McpToolDef;
use serde::Serialize;
use tackle_tools::Tool;

use crate::config::McpServerConfig;
use crate::connection::McpConnection;
use crate::error::McpError;
use crate::naming::namespace_all;
use crate::options::McpOptions;
use crate::skills::{McpSkill, SkillLoadError, contents_bytes, verify_file, verify_skill_md};
use crate::tool::McpTool;
use tackle_tools::ToolSearchIndex;

/// State of one configured server, for `tackle mcp list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum McpServerStatus {
    /// Connected, offering `tools` tools.
    Connected {
        /// Number of tools.
        tools: usize,
    },
    /// Was connected but is down now; it is reconnected on the next call. Its `tools` tools stay
    /// in the catalog and fail as `unavailable` meanwhile.
    Unavailable {
        /// Number of tools it offered.
        tools: usize,
        /// Why it is down.
        error: String,
    },
    /// Could not be started (or its tools could not be listed); its tools are absent.
    Failed {
        /// Why.
        error: String,
    },
    /// `enabled = false` in the configuration.
    Disabled,
}

/// One row of `tackle mcp list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpServerInfo {
    /// Configured name (the tools' namespace).
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// The command or URL, without arguments, credentials or query.
    pub target: String,
    /// Current state.
    pub status: McpServerStatus,
    /// Tools in the catalog from this server.
    pub tool_count: usize,
    /// Bytes of the JSON of those tools' definitions (name, description, input schema): what
    /// they cost in every request's context.
    pub definitions_bytes: usize,
    /// The protocol revision spoken with the server (`2026-07-28`, `2025-11-25`, ...) while it
    /// is connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
}

/// All configured MCP servers and the catalog of their tools.
pub struct McpManager {
    servers: Vec<Server>,
    catalog: RwLock<Vec<Arc<McpTool>>>,
}

struct Server {
    name: String,
    config: McpServerConfig,
    connection: Option<Arc<McpConnection>>,
    state: Mutex<ServerState>,
}

struct ServerState {
    /// Tool definitions sorted by name (empty when the server failed or is disabled).
    tools: Vec<McpToolDef>,
    /// The skills it listed when it started (skills extension), by name.
    skills: Vec<rmcp::model::Skill>,
    /// Why the server failed to start.
    failure: Option<String>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager")
            .field("servers", &self.servers.iter().map(|s| s.name.as_str()).collect::<Vec<_>>())
            .field("tools", &self.read_catalog().len())
            .finish()
    }
}

impl McpManager {
    /// Starts every enabled server in parallel (each within its start timeout) and lists its
    /// tools. Servers that fail are reported in [`Self::statuses`] and skipped.
    pub async fn connect(configs: &BTreeMap<String, McpServerConfig>) -> Self {
        Self::connect_with(configs, &McpOptions::default()).await
    }

    /// Like [`Self::connect`], with where OAuth credentials live and how a person signs in.
    pub async fn connect_with(configs: &BTreeMap<String, McpServerConfig>, options: &McpOptions) -> Self {
        let starts = configs.iter().map(|(name, config)| async move {
            let outcome = if config.enabled { Some(start(name, config, options).await) } else { None };
            (name.clone(), config.clone(), outcome)
        });
        let servers = join_all(starts)
            .await
            .into_iter()
            .map(|(name, config, outcome)| {
                let (connection, tools, skills, failure) = match outcome {
                    None => (None, Vec::new(), Vec::new(), None),
                    Some(Ok(Started { connection, tools, skills })) => {
                        (Some(connection), tools, skills, None)
                    }
                    Some(Err(err)) => {
                        tracing::warn!(server = %name, error = %err, "MCP server failed to start; skipped");
                        (None, Vec::new(), Vec::new(), Some(err.to_string()))
                    }
                };
                let state = ServerState { tools, skills, failure };
                Server { name, config, connection, state: Mutex::new(state) }
            })
            .collect();
        let manager = Self { servers, catalog: RwLock::new(Vec::new()) };
        manager.rebuild_catalog();
        manager
    }

    /// Every tool of every connected server: servers by name, tools by name.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.read_catalog().iter().map(|t| Arc::clone(t) as Arc<dyn Tool>).collect()
    }

    /// The same tools with their concrete type (server, remote name).
    pub fn mcp_tools(&self) -> Vec<Arc<McpTool>> {
        self.read_catalog().clone()
    }

    /// A search index over the current tools.
    pub fn search_index(&self) -> ToolSearchIndex {
        let catalog = self.read_catalog();
        ToolSearchIndex::new(catalog.iter().map(|t| t.spec()))
    }

    /// The connection to `server`, when it was started.
    pub fn connection(&self, server: &str) -> Option<Arc<McpConnection>> {
        self.servers.iter().find(|s| s.name == server).and_then(|s| s.connection.clone())
    }

    /// The names of the configured servers, in order.
    pub fn server_names(&self) -> Vec<&str> {
        self.servers.iter().map(|s| s.name.as_str()).collect()
    }

    /// The connection to `server`, or why there is none.
    fn live(&self, server: &str) -> Result<Arc<McpConnection>, McpError> {
        let found = self
            .servers
            .iter()
            .find(|s| s.name == server)
            .ok_or_else(|| McpError::Unavailable(format!("no MCP server `{server}` is configured")))?;
        match (&found.connection, &lock(&found.state).failure) {
            (Some(connection), _) => Ok(Arc::clone(connection)),
            (None, Some(failure)) => {
                Err(McpError::Unavailable(format!("`{server}` did not start: {failure}")))
            }
            (None, None) => Err(McpError::Unavailable(format!("`{server}` is disabled"))),
        }
    }

    /// The skills every started server listed (skills extension, SEP-2640): servers by name,
    /// skills by name. No skill file has been read: see [`Self::load_skill`].
    pub fn skills(&self) -> Vec<McpSkill> {
        self.servers
            .iter()
            .filter(|s| s.connection.is_some())
            .flat_map(|s| {
                lock(&s.state).skills.iter().map(|e| McpSkill::new(&s.name, e.clone())).collect::<Vec<_>>()
            })
            .collect()
    }

    /// The skill `uri` that server `server` lists now, if it still does (only that one is
    /// copied out of the listing).
    pub fn skill(&self, server: &str, uri: &str) -> Option<McpSkill> {
        let s = self.servers.iter().find(|s| s.name == server && s.connection.is_some())?;
        let state = lock(&s.state);
        let entry = state.skills.iter().find(|e| e.uri == uri)?;
        Some(McpSkill::new(&s.name, entry.clone()))
    }

    /// Reads `skill`'s `SKILL.md` and returns its instructions, once its size, digest and front
    /// matter match the listing (else the reason, and nothing of the content).
    pub async fn load_skill(
        &self,
        skill: &McpSkill,
        ctx: &tackle_tools::ToolContext,
    ) -> Result<String, SkillLoadError> {
        let read = self.read_resource(skill.server(), skill.uri(), ctx).await?;
        verify_skill_md(skill.entry(), &contents_bytes(&read, skill.uri())?)
    }

    /// Reads `file` of `skill` (relative to the skill, `references/FORMS.md`, or its URI),
    /// checked against the manifest; text as is, other bytes refused as undecodable.
    pub async fn read_skill_file(
        &self,
        skill: &McpSkill,
        file: &str,
        ctx: &tackle_tools::ToolContext,
    ) -> Result<String, SkillLoadError> {
        let uri = skill.file_uri(file).ok_or_else(|| SkillLoadError::NotInSkill {
            skill: skill.name().to_owned(),
            file: file.to_owned(),
            files: skill.supporting_files().join(", "),
        })?;
        let read = self.read_resource(skill.server(), &uri, ctx).await?;
        let bytes = contents_bytes(&read, &uri)?;
        verify_file(skill.entry(), &uri, &bytes)?;
        String::from_utf8(bytes).map_err(|e| SkillLoadError::Undecodable { uri, detail: e.to_string() })
    }

    /// The prompts of `server`.
    pub async fn prompts(&self, server: &str) -> Result<Vec<rmcp::model::Prompt>, McpError> {
        self.live(server)?.list_prompts().await
    }

    /// The resources of `server`.
    pub async fn resources(&self, server: &str) -> Result<Vec<rmcp::model::Resource>, McpError> {
        self.live(server)?.list_resources().await
    }

    /// Prompt `name` of `server` with `arguments`; the server's questions go through `ctx`.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
        ctx: &tackle_tools::ToolContext,
    ) -> Result<rmcp::model::GetPromptResult, McpError> {
        self.live(server)?.get_prompt(name, arguments, ctx).await
    }

    /// Reads `uri` of `server`; the server's questions go through `ctx`.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        ctx: &tackle_tools::ToolContext,
    ) -> Result<rmcp::model::ReadResourceResult, McpError> {
        self.live(server)?.read_resource(uri, ctx).await
    }

    /// `message` with the resources it mentions (`@server:uri`) and `more` attached after it
    /// (see [`crate::attach`]); the first resource that cannot be read is the error.
    pub async fn attach_resources(
        &self,
        message: &str,
        more: &[crate::attach::ResourceMention],
        ctx: &tackle_tools::ToolContext,
    ) -> Result<String, (crate::attach::ResourceMention, McpError)> {
        let mut wanted = crate::attach::mentions(message, &self.server_names());
        for m in more {
            if !wanted.contains(m) {
                wanted.push(m.clone());
            }
        }
        let mut read = Vec::with_capacity(wanted.len());
        for mention in wanted {
            match self.read_resource(&mention.server, &mention.uri, ctx).await {
                Ok(contents) => read.push((mention, contents)),
                Err(e) => return Err((mention, e)),
            }
        }
        Ok(crate::attach::attach(message, &read))
    }

    /// One row per configured server, by name.
    pub fn statuses(&self) -> Vec<McpServerInfo> {
        let catalog = self.read_catalog();
        self.servers
            .iter()
            .map(|server| {
                let state = lock(&server.state);
                let tools: Vec<&Arc<McpTool>> =
                    catalog.iter().filter(|t| t.server() == server.name).collect();
                let definitions_bytes = tools.iter().map(|t| definition_bytes(t.spec())).sum();
                let status = match (&server.connection, &state.failure) {
                    (_, Some(error)) => McpServerStatus::Failed { error: error.clone() },
                    (None, None) => McpServerStatus::Disabled,
                    (Some(connection), None) => match connection.down_reason() {
                        None => McpServerStatus::Connected { tools: tools.len() },
                        Some(error) => McpServerStatus::Unavailable { tools: tools.len(), error },
                    },
                };
                McpServerInfo {
                    name: server.name.clone(),
                    transport: server.config.transport.kind(),
                    target: server.config.transport.display_target(),
                    status,
                    tool_count: tools.len(),
                    definitions_bytes,
                    protocol: server.connection.as_ref().and_then(|c| c.protocol()),
                }
            })
            .collect()
    }

    /// Re-lists the tools of servers that announced a change (or were reconnected) since the
    /// last refresh, in parallel. Returns whether the catalog changed. Call it between turns,
    /// never in the middle of one. A server that cannot be listed keeps its tools and is tried
    /// again on the next refresh.
    pub async fn refresh_if_changed(&self) -> bool {
        let relists = self.servers.iter().filter_map(|server| {
            let connection = server.connection.as_ref()?;
            connection.take_list_changed().then_some(async move { (server, connection.list_tools().await) })
        });
        let mut changed = false;
        for (server, listed) in join_all(relists).await {
            match listed {
                Ok(mut tools) => {
                    tools.sort_by(|a, b| a.name.cmp(&b.name));
                    let mut state = lock(&server.state);
                    if state.tools != tools {
                        tracing::info!(server = %server.name, tools = tools.len(), "MCP tool list changed");
                        state.tools = tools;
                        changed = true;
                    }
                }
                Err(err) => {
                    tracing::warn!(server = %server.name, error = %err, "re-listing MCP tools failed");
                    if let Some(connection) = &server.connection {
                        connection.mark_list_changed();
                    }
                }
            }
        }
        if changed {
            self.rebuild_catalog();
        }
        changed
    }

    /// Closes every connection. The catalog is emptied.
    pub async fn shutdown(&self) {
        join_all(self.servers.iter().filter_map(|s| s.connection.as_ref()).map(|c| c.shutdown())).await;
        self.write_catalog().clear();
    }

    fn rebuild_catalog(&self) {
        let mut entries: Vec<(Arc<McpConnection>, McpToolDef)> = Vec::new();
        for server in &self.servers {
            if let Some(connection) = &server.connection {
                let state = lock(&server.state);
                entries.extend(state.tools.iter().map(|def| (Arc::clone(connection), def.clone())));
            }
        }
        let pairs: Vec<(&str, &str)> = entries.iter().map(|(c, d)| (c.name(), d.name.as_ref())).collect();
        let names = namespace_all(&pairs);
        let tools = entries
            .iter()
            .zip(names)
            .map(|((connection, def), name)| Arc::new(McpTool::new(name, def, Arc::clone(connection))))
            .collect();
        *self.write_catalog() = tools;
    }

    fn read_catalog(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<McpTool>>> {
        self.catalog.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write_catalog(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Arc<McpTool>>> {
        self.catalog.write().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The MCP servers as one tool source: `notifications/tools/list_changed` is applied when the
/// agent refreshes its tools at a turn boundary.
#[async_trait::async_trait]
impl tackle_tools::ToolSource for McpManager {
    fn name(&self) -> &str {
        "mcp"
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        McpManager::tools(self)
    }

    async fn refresh(&self) -> bool {
        self.refresh_if_changed().await
    }
}

/// A started server: its connection, tools (sorted by name) and skills (sorted by name).
struct Started {
    connection: Arc<McpConnection>,
    tools: Vec<McpToolDef>,
    skills: Vec<rmcp::model::Skill>,
}

/// Connects and lists the tools (sorted by name) and skills; a server whose tools cannot be
/// listed is closed again. Skills that cannot be listed, or whose entries break the extension's
/// rules, are left out with a warning: the tools still work.
async fn start(name: &str, config: &McpServerConfig, options: &McpOptions) -> Result<Started, McpError> {
    let connection = McpConnection::connect_with(name, config.clone(), options).await?;
    match connection.list_tools().await {
        Ok(mut tools) => {
            tools.sort_by(|a, b| a.name.cmp(&b.name));
            // The initial listing is what the catalog holds; a notification sent during start
            // is already reflected in it.
            connection.take_list_changed();
            let mut skills = match connection.list_skills().await {
                Ok(skills) => skills,
                Err(err) => {
                    tracing::warn!(server = %name, error = %err, "cannot list the server's skills; none offered");
                    Vec::new()
                }
            };
            skills.retain(|skill| match skill.validate() {
                Ok(()) => true,
                Err(err) => {
                    tracing::warn!(server = %name, skill = %skill.uri, error = %err, "skill left out");
                    false
                }
            });
            skills.sort_by(|a, b| a.frontmatter.name.cmp(&b.frontmatter.name));
            Ok(Started { connection, tools, skills })
        }
        Err(err) => {
            connection.shutdown().await;
            Err(err)
        }
    }
}

/// Bytes of the JSON the model is sent for a tool: name, description and input schema.
fn definition_bytes(spec: &tackle_protocol::ToolSpec) -> usize {
    let json = serde_json::json!({
        "name": spec.name,
        "description": spec.description,
        "input_schema": spec.input_schema,
    });
    serde_json::to_vec(&json).map(|v| v.len()).unwrap_or(0)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn failed_and_disabled_servers_are_reported_not_fatal() {
        let mut configs = BTreeMap::new();
        configs.insert("b-missing".to_owned(), McpServerConfig::stdio("/nonexistent/mcp-server", ["x"]));
        let mut off = McpServerConfig::stdio("/nonexistent/other", Vec::<String>::new());
        off.enabled = false;
        configs.insert("a-off".to_owned(), off);
        let manager = McpManager::connect(&configs).await;
        assert!(manager.tools().is_empty());
        let statuses = manager.statuses();
        assert_eq!(statuses.len(), 2);
        assert_eq!(statuses[0].name, "a-off");
        assert_eq!(statuses[0].status, McpServerStatus::Disabled);
        assert_eq!(statuses[1].name, "b-missing");
        assert_eq!(statuses[1].transport, "stdio");
        assert!(
            matches!(&statuses[1].status, McpServerStatus::Failed { error } if error.contains("could not start"))
        );
        assert!(!manager.refresh_if_changed().await);
        manager.shutdown().await;
    }

    #[test]
    fn definition_bytes_counts_the_json() {
        let spec = tackle_protocol::ToolSpec::new("a", "b", serde_json::json!({}));
        assert_eq!(definition_bytes(&spec), r#"{"name":"a","description":"b","input_schema":{}}"#.len());
    }
}

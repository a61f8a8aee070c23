//! `tackle mcp get|tools|call|resources|prompts NAME`: one server at a time.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use serde_json::{Value, json};
use tackle_mcp::oauth::store::CredentialFile;
use tackle_mcp::{McpConnection, McpServerConfig, McpTransportConfig};
use tackle_tools::{ElicitationPolicy, ProgressSink, ToolContext, TurnElicitor};

use super::{load, pairs, server};
use crate::UsageError;
use crate::cli::{McpCallArgs, McpNameArgs, McpPromptsArgs, McpResourcesArgs};
use crate::config_cmd::mask_secrets;
use crate::elicitor::TerminalElicitor;
use crate::mcp_sign_in::{can_sign_in, credentials_dir, mcp_options};
use crate::screen::Screen;
use crate::settings::Settings;
use crate::terminal::Terminal;

async fn connect(settings: &Settings, name: &str, config: &McpServerConfig) -> Result<Arc<McpConnection>> {
    let options = mcp_options(settings, can_sign_in());
    Ok(McpConnection::connect_with(name, config.clone(), &options).await?)
}

pub async fn get(args: McpNameArgs) -> Result<ExitCode> {
    let (_, settings) = load(&args.place)?;
    let config = server(&settings, &args.name)?.clone();
    let mut shown = serde_json::to_value(&config)?;
    mask_secrets(&mut shown);
    let sign_in = match (&config.transport, credentials_dir(&settings)) {
        (McpTransportConfig::Http { url, .. }, Some(dir)) => {
            CredentialFile::new(&dir, &args.name, url).summary()?
        }
        _ => None,
    };
    let (state, details) = if !config.enabled {
        ("disabled".to_owned(), Value::Null)
    } else {
        match connect(&settings, &args.name, &config).await {
            Err(e) => (format!("failed: {e:#}"), Value::Null),
            Ok(connection) => {
                let tools = connection.list_tools().await;
                let resources = connection.list_resources().await;
                let prompts = connection.list_prompts().await;
                let details = json!({
                    "protocol": connection.protocol(),
                    "server": connection.server_info().map(|(n, v)| json!({"name": n, "version": v})),
                    "instructions": connection.instructions(),
                    "tools": tools.as_ref().map(Vec::len).map_err(|e| e.to_string()),
                    "resources": resources.as_ref().map(Vec::len).map_err(|e| e.to_string()),
                    "prompts": prompts.as_ref().map(Vec::len).map_err(|e| e.to_string()),
                });
                connection.shutdown().await;
                ("connected".to_owned(), details)
            }
        }
    };
    if args.json {
        let out = json!({"name": args.name, "config": shown, "state": state, "details": details, "sign_in": sign_in});
        outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{}", args.name);
    outln!("  transport  {} {}", config.transport.kind(), config.transport.display_target());
    outln!("  state      {state}");
    let count = |v: &Value| match v {
        Value::Object(m) if m.contains_key("Ok") => m["Ok"].to_string(),
        Value::Object(m) if m.contains_key("Err") => format!("error: {}", m["Err"].as_str().unwrap_or("")),
        other => other.to_string(),
    };
    if let Value::Object(d) = &details {
        outln!("  protocol   {}", d["protocol"].as_str().unwrap_or("-"));
        if let Some(s) = d["server"].as_object() {
            outln!(
                "  server     {} {}",
                s["name"].as_str().unwrap_or(""),
                s["version"].as_str().unwrap_or("")
            );
        }
        outln!("  tools      {}", count(&d["tools"]));
        outln!("  resources  {}", count(&d["resources"]));
        outln!("  prompts    {}", count(&d["prompts"]));
    } else {
        outln!("  protocol   {} (configured)", config.protocol);
    }
    match &sign_in {
        Some(s) => outln!(
            "  sign-in    {} as {}{}{}",
            s.issuer.as_deref().unwrap_or("stored"),
            s.client_id,
            if s.scopes.is_empty() { String::new() } else { format!(", scopes {}", s.scopes.join(" ")) },
            if s.refreshable { ", refreshable" } else { "" }
        ),
        None if matches!(config.transport, McpTransportConfig::Http { .. }) => {
            outln!("  sign-in    none stored")
        }
        None => {}
    }
    outln!(
        "  settings   {}",
        toml::to_string(&shown).unwrap_or_default().trim().replace('\n', "\n             ")
    );
    Ok(ExitCode::SUCCESS)
}

pub async fn tools(args: McpNameArgs) -> Result<ExitCode> {
    let (_, settings) = load(&args.place)?;
    let config = server(&settings, &args.name)?.clone();
    let connection = connect(&settings, &args.name, &config).await?;
    let listed = connection.list_tools().await;
    connection.shutdown().await;
    let mut tools = listed?;
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&tools)?);
        return Ok(ExitCode::SUCCESS);
    }
    for tool in &tools {
        let description = tool.description.as_deref().unwrap_or("").lines().next().unwrap_or("");
        outln!("{}  {}", tool.name, description);
        let schema = Value::Object((*tool.input_schema).clone());
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for (name, p) in props {
                let kind = p
                    .get("type")
                    .map(|t| t.as_str().map(str::to_owned).unwrap_or_else(|| t.to_string()))
                    .unwrap_or_default();
                let mark = if required.contains(&name.as_str()) { "*" } else { "" };
                outln!("    {name}{mark}: {kind}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `tackle mcp skills NAME`: the skills the server lists. Listing reads no skill file.
pub async fn skills(args: McpNameArgs) -> Result<ExitCode> {
    let (_, settings) = load(&args.place)?;
    let config = server(&settings, &args.name)?.clone();
    let connection = connect(&settings, &args.name, &config).await?;
    let listed = connection.list_skills().await;
    connection.shutdown().await;
    let mut skills = listed?;
    skills.sort_by(|a, b| a.frontmatter.name.cmp(&b.frontmatter.name));
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&skills)?);
        return Ok(ExitCode::SUCCESS);
    }
    for entry in &skills {
        let skill = tackle_mcp::McpSkill::new(&args.name, entry.clone());
        let invalid = entry.validate().err().map(|e| format!("  (left out: {e})")).unwrap_or_default();
        outln!("{}  {}{invalid}", skill.name(), skill.description().lines().next().unwrap_or(""));
        for file in skill.supporting_files() {
            outln!("    {file}");
        }
    }
    if skills.is_empty() {
        eprintln!("`{}` serves no skills", args.name);
    }
    Ok(ExitCode::SUCCESS)
}

/// The context of a call made from the command line: the server's questions are answered with
/// defaults (`yes`), at the terminal, or declined when nobody is there; progress goes to stderr.
fn call_context(workspace: &std::path::Path, yes: bool) -> ToolContext {
    let mut ctx = ToolContext::new("mcp-cli", "call", workspace.to_owned());
    if yes {
        ctx.turn.insert(ElicitationPolicy::Defaults);
    } else if std::io::stdin().is_terminal() {
        let elicitor = TerminalElicitor::new(Terminal::start(None), Screen::new(false));
        elicitor.set_turn(ctx.cancel.clone());
        ctx.turn.insert(ElicitationPolicy::Ask(None));
        ctx.turn.insert(TurnElicitor(Arc::new(elicitor)));
    } else {
        ctx.turn.insert(ElicitationPolicy::Decline(
            "the server asked a question and nobody is at a terminal to answer; pass --yes to take its defaults"
                .to_owned(),
        ));
    }
    ctx.progress = ProgressSink::new(|p| eprintln!("  … {}", crate::style::sanitize(&p.message)));
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });
    ctx
}

fn read_arguments(text: Option<&str>) -> Result<Option<serde_json::Map<String, Value>>> {
    let text = match text {
        None => return Ok(None),
        Some("-") => {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
            s
        }
        Some(t) => t.to_owned(),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(other) => Err(UsageError(format!("the arguments must be a JSON object, not {other}")).into()),
        Err(e) => Err(UsageError(format!("the arguments are not valid JSON: {e}")).into()),
    }
}

pub async fn call(args: McpCallArgs) -> Result<ExitCode> {
    let arguments = read_arguments(args.arguments.as_deref())?;
    let (workspace, settings) = load(&args.place)?;
    let config = server(&settings, &args.name)?.clone();
    let connection = connect(&settings, &args.name, &config).await?;
    // The tool must exist; listing also tells the transport which arguments the server wants
    // mirrored into headers (`x-mcp-header`, revision 2026-07-28).
    let listed = match connection.list_tools().await {
        Ok(tools) => tools,
        Err(e) => {
            connection.shutdown().await;
            return Err(e.into());
        }
    };
    if !listed.iter().any(|t| t.name == args.tool) {
        connection.shutdown().await;
        let mut names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
        names.sort_unstable();
        return Err(UsageError(format!(
            "`{}` has no tool `{}`; it offers: {}",
            args.name,
            args.tool,
            if names.is_empty() { "none".to_owned() } else { names.join(", ") }
        ))
        .into());
    }
    let ctx = call_context(&workspace, args.yes);
    let display = tackle_mcp::namespaced_name(&args.name, &args.tool);
    let outcome = connection.call_tool(&args.tool, arguments, &ctx, &display).await;
    connection.shutdown().await;
    let outcome = outcome?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&outcome.result)?);
    } else {
        match tackle_mcp::map_call_result(outcome.result.clone()) {
            Ok(out) => outln!("{}", out.text),
            Err(failure) => eprintln!("the tool failed: {}", failure.message),
        }
    }
    for note in &outcome.notes {
        eprintln!("note: {note}");
    }
    Ok(if outcome.result.is_error == Some(true) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

pub async fn resources(args: McpResourcesArgs) -> Result<ExitCode> {
    let (workspace, settings) = load(&args.place)?;
    let config = server(&settings, &args.name)?.clone();
    let connection = connect(&settings, &args.name, &config).await?;
    let result = async {
        if let Some(uri) = &args.read {
            let ctx = call_context(&workspace, false);
            let read = connection.read_resource(uri, &ctx).await?;
            if args.json {
                outln!("{}", serde_json::to_string_pretty(&read)?);
            } else {
                for contents in &read.contents {
                    outln!("{}", tackle_mcp::resource_text(contents));
                }
            }
            return Ok::<_, anyhow::Error>(());
        }
        let resources = connection.list_resources().await?;
        let templates = connection.list_resource_templates().await?;
        if args.json {
            outln!(
                "{}",
                serde_json::to_string_pretty(&json!({"resources": resources, "templates": templates}))?
            );
            return Ok(());
        }
        for r in &resources {
            let mime = r.mime_type.as_deref().unwrap_or("");
            outln!("{}  {}  {mime}", r.uri, r.name);
        }
        for t in &templates {
            outln!("{}  {}  (template)", t.uri_template, t.name);
        }
        if resources.is_empty() && templates.is_empty() {
            eprintln!("`{}` offers no resources", args.name);
        }
        Ok(())
    }
    .await;
    connection.shutdown().await;
    result?;
    Ok(ExitCode::SUCCESS)
}

pub async fn prompts(args: McpPromptsArgs) -> Result<ExitCode> {
    let arguments = pairs("--arg", &args.args)?;
    let (workspace, settings) = load(&args.place)?;
    let config = server(&settings, &args.name)?.clone();
    let connection = connect(&settings, &args.name, &config).await?;
    let result = async {
        if let Some(name) = &args.get {
            let ctx = call_context(&workspace, false);
            let map: serde_json::Map<String, Value> =
                arguments.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
            let got = connection.get_prompt(name, (!map.is_empty()).then_some(map), &ctx).await?;
            if args.json {
                outln!("{}", serde_json::to_string_pretty(&got)?);
            } else {
                for message in &got.messages {
                    outln!("{}", tackle_mcp::prompt_message_text(message));
                }
            }
            return Ok::<_, anyhow::Error>(());
        }
        let prompts = connection.list_prompts().await?;
        if args.json {
            outln!("{}", serde_json::to_string_pretty(&prompts)?);
            return Ok(());
        }
        for p in &prompts {
            let arguments: Vec<String> = p
                .arguments
                .iter()
                .flatten()
                .map(|a| if a.required == Some(true) { format!("{}*", a.name) } else { a.name.clone() })
                .collect();
            outln!(
                "/{}:{}  {}  {}",
                args.name,
                p.name,
                arguments.join(" "),
                p.description.as_deref().unwrap_or("")
            );
        }
        if prompts.is_empty() {
            eprintln!("`{}` offers no prompts", args.name);
        }
        Ok(())
    }
    .await;
    connection.shutdown().await;
    result?;
    Ok(ExitCode::SUCCESS)
}

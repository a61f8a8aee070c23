use std::path::Path;

use super::*;

#[test]
fn claude_code_files_parse_with_tools_as_a_string_or_a_list() {
    let text = "---\nname: code-reviewer\ndescription: Reviews code.\ntools: read_file, list_files\nmodel: inherit\ncolor: red\n---\nYou review code.\n";
    let agent = parse_file(Path::new("agents/code-reviewer.md"), text).unwrap();
    assert_eq!(agent.name, "code-reviewer");
    assert_eq!(agent.tools, Some(vec!["read_file".to_owned(), "list_files".to_owned()]));
    assert_eq!(agent.model, None);
    assert_eq!(agent.instructions, "You review code.");
    let text = "---\ndescription: Tests.\ntools: [shell]\nmodel: gpt-4.1-mini\n---\nRun tests.\n";
    let agent = parse_file(Path::new("agents/tester.md"), text).unwrap();
    assert_eq!(agent.name, "tester");
    assert_eq!(agent.tools, Some(vec!["shell".to_owned()]));
    assert_eq!(agent.model.as_deref(), Some("gpt-4.1-mini"));
}

#[test]
fn bad_files_name_the_file_and_the_field() {
    let path = Path::new("ws/agents/bad.md");
    let e = parse_file(path, "no front matter").unwrap_err();
    assert_eq!((e.file.as_str(), e.field.as_str()), ("ws/agents/bad.md", "front matter"));
    let e = parse_file(path, "---\nname: bad\n---\nbody").unwrap_err();
    assert_eq!(e.field, "description");
    let e = parse_file(path, "---\ndescription: d\ntools: 3\n---\n").unwrap_err();
    assert_eq!(e.field, "tools");
    assert!(e.to_string().contains("ws/agents/bad.md") && e.to_string().contains("tools"), "{e}");
    let e = parse_file(path, "---\nname: has space\ndescription: d\n---\n").unwrap_err();
    assert_eq!(e.field, "name");
}

#[test]
fn the_registry_lists_in_name_order_and_checks_tools() {
    let mut registry = SubAgentRegistry::new();
    registry.insert(SubAgent::new("zeta", "z")).unwrap();
    registry.insert(SubAgent::new("alpha", "a").tools(["nope"])).unwrap();
    let names: Vec<&str> = registry.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["alpha", "zeta"]);
    let e = registry.check_tools(&["shell".to_owned()]).unwrap_err();
    assert_eq!(e.field, "tools");
    assert!(e.message.contains("\"nope\""), "{e}");
}

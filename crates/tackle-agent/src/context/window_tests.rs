use serde_json::json;

use super::*;

fn spec(name: &str, defer_loading: bool) -> ToolSpec {
    let mut s = ToolSpec::new(
        name,
        format!("Does {name} things."),
        json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    );
    s.defer_loading = defer_loading;
    s
}

fn fingerprint(specs: &[ToolSpec]) -> String {
    blake3::hash(&serde_json::to_vec(specs).unwrap()).to_hex().to_string()
}

/// What `ContextState::new` counts for these parts, through `memo`.
fn counted(memo: &FixedCounts, system: &[SystemSection], tools: &[ToolSpec]) -> Components {
    let state =
        ContextState::new("gpt-4o", &ContextConfig::default(), system, (tools, &fingerprint(tools)), memo);
    state.fixed
}

#[test]
fn remembered_counts_equal_fresh_counts() {
    let system = vec![
        SystemSection::cacheable("base", "You are a careful agent."),
        SystemSection::cacheable("skills", "skill: deploy"),
    ];
    let tools = vec![spec("read", false), spec("write", false)];
    let memo = FixedCounts::default();
    let first = counted(&memo, &system, &tools);
    assert!(first.system > 0 && first.skills > 0 && first.tools > 0, "{first:?}");
    assert_eq!(counted(&memo, &system, &tools), first, "a remembered count is the count");
    assert_eq!(counted(&FixedCounts::default(), &system, &tools), first);
}

#[test]
fn every_part_of_the_key_separates_sessions() {
    // Sessions of one agent differ by workspace (AGENTS.md, skills) and by catalog: none may be
    // given another's counts.
    let memo = FixedCounts::default();
    let base = vec![SystemSection::cacheable("base", "You are a careful agent.")];
    let longer =
        vec![SystemSection::cacheable("base", "You are a careful agent. Always explain yourself at length.")];
    let tools = vec![spec("read", false)];
    let more_tools = vec![spec("read", false), spec("write", false)];
    let deferred = vec![spec("read", false), spec("write", true)];
    let a = counted(&memo, &base, &tools);
    assert!(counted(&memo, &longer, &tools).system > a.system, "the system text is part of the key");
    assert!(counted(&memo, &base, &more_tools).tools > a.tools, "the catalog is part of the key");
    assert_eq!(
        counted(&memo, &base, &deferred).tools,
        a.tools,
        "a deferred definition is not loaded up front"
    );
    // A section's name decides whether it counts as skills.
    let as_skills = vec![SystemSection::cacheable("skills", "You are a careful agent.")];
    let s = counted(&memo, &as_skills, &tools);
    assert_eq!((s.system, s.skills > 0), (0, true), "{s:?}");
}

#[test]
fn the_memo_starts_over_when_full() {
    let memo = FixedCounts::default();
    let tools = vec![spec("read", false)];
    for i in 0..FIXED_COUNTS_KEPT + 3 {
        counted(&memo, &[SystemSection::cacheable("base", format!("prompt {i}"))], &tools);
    }
    assert!(memo.0.lock().unwrap().len() <= FIXED_COUNTS_KEPT);
}

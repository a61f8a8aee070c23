use serde_json::json;
use tackle_protocol::ToolSpec;

use super::*;

fn spec(name: &str) -> ToolSpec {
    let description = format!("{name} does something with records of the service, at length. ").repeat(20);
    ToolSpec::new(name, description, json!({"type": "object", "properties": {"path": {"type": "string"}}}))
}

/// Forty big source tools and the two deferral tools, in a 20k window: over any share.
fn plan(native: bool, provider_has_native: bool) -> (Vec<ToolSpec>, Deferral) {
    let mut specs: Vec<ToolSpec> = vec![spec("shell")];
    let deferrable: Vec<String> = (0..40).map(|i| format!("svc{i:02}__op")).collect();
    specs.extend(deferrable.iter().map(|n| spec(n)));
    specs.push(spec(TOOL_SEARCH));
    specs.push(spec(CALL_TOOL));
    let context = crate::ContextConfig { window: Some(20_000), ..crate::ContextConfig::default() };
    let config = DeferralConfig { native, ..DeferralConfig::default() };
    let deferral = Deferral::plan(&specs, &deferrable, "gpt-4o", &context, &config, provider_has_native);
    (specs, deferral)
}

#[test]
fn the_mode_is_decided_once_from_the_config_and_the_provider() {
    let (_, proxy) = plan(false, true);
    assert!(matches!(proxy, Deferral::Proxy { native_unavailable: false, .. }), "{proxy:?}");
    assert_eq!(proxy.tools().map(|t| t.mode()), Some(DeferralMode::Proxy));
    assert!(proxy.fallback_warning("openai").is_none());

    let (_, native) = plan(true, true);
    assert!(matches!(native, Deferral::Native(_)), "{native:?}");
    assert_eq!(native.tools().map(|t| t.mode()), Some(DeferralMode::Native), "search answers by reference");

    let (_, fell_back) = plan(true, false);
    assert!(matches!(fell_back, Deferral::Proxy { native_unavailable: true, .. }), "{fell_back:?}");
    assert_eq!(fell_back.tools().map(|t| t.mode()), Some(DeferralMode::Proxy));
    let warning = serde_json::to_string(&fell_back.fallback_warning("openai")).unwrap();
    assert!(warning.contains("strategy_fallback") && warning.contains("openai"), "{warning}");

    let context = crate::ContextConfig::default();
    let off = Deferral::plan(
        &[spec("shell")],
        &["shell".into()],
        "gpt-4o",
        &context,
        &DeferralConfig::default(),
        true,
    );
    assert!(matches!(off, Deferral::Off), "one tool fits a 128k window");
}

#[test]
fn each_mode_owns_its_catalog_and_tail_note() {
    let names = |d: &Deferral, specs: &[ToolSpec]| d.catalog(specs.to_vec()).names();
    let (specs, proxy) = plan(false, false);
    assert_eq!(names(&proxy, &specs), ["shell", TOOL_SEARCH, CALL_TOOL], "deferred tools leave the catalog");
    assert_eq!(
        proxy.tail_note(&FoundTools::default()).unwrap(),
        "40 more tools are available through tool_search, then call_tool."
    );
    let found = FoundTools(vec!["svc03__op".into()]);
    assert!(
        proxy
            .tail_note(&found)
            .unwrap()
            .starts_with("Found with tool_search, call them with call_tool: svc03__op.")
    );

    let (specs, native) = plan(true, true);
    let catalog = native.catalog(specs.clone());
    assert_eq!(catalog.names().len(), 42, "every definition but call_tool");
    assert!(!catalog.contains(CALL_TOOL) && catalog.get("svc03__op").unwrap().defer_loading);
    assert_eq!(
        native.tail_note(&found).unwrap(),
        "39 more tools can be loaded with tool_search, then called directly."
    );
    let mut availability = Availability::default();
    native.restrict(&found, &mut availability);
    assert!(availability.native_deferral && availability.deferred.len() == 39);
    assert!(!availability.deferred.contains("svc03__op"), "a found tool is callable");

    let all: Vec<String> =
        std::iter::once("shell".to_owned()).chain((0..40).map(|i| format!("svc{i:02}__op"))).collect();
    assert_eq!(names(&Deferral::Off, &specs), all, "nothing deferred: no deferral tools");
    assert!(Deferral::Off.tail_note(&found).is_none());
}

#[test]
fn calls_of_deferred_tools_are_planned_by_the_mode() {
    let call = |name: &str, input: serde_json::Value| ToolUse {
        id: "c1".into(),
        name: name.into(),
        input: input.into(),
    };
    let found = FoundTools(vec!["svc03__op".into()]);
    let (_, proxy) = plan(false, false);
    let planned = proxy.plan_calls(
        &found,
        None,
        vec![
            call(CALL_TOOL, json!({"name": "svc03__op", "arguments": {"path": "a"}})),
            call("svc04__op", json!({})),
            call("shell", json!({})),
        ],
    );
    assert!(matches!(&planned[0], Planned::Run { call, unwrapped: true } if call.name == "svc03__op"));
    assert!(matches!(&planned[1], Planned::Refuse { error, .. } if error.category == ErrorCategory::Denied));
    assert!(matches!(&planned[2], Planned::Run { unwrapped: false, .. }));
    let masked = proxy.plan_calls(
        &found,
        Some(&["shell".to_owned()]),
        vec![call(CALL_TOOL, json!({"name": "svc03__op"}))],
    );
    assert!(matches!(&masked[0], Planned::Refuse { .. }), "a mask without call_tool refuses it");

    let (_, native) = plan(true, true);
    let planned =
        native.plan_calls(&found, None, vec![call("svc03__op", json!({})), call("svc04__op", json!({}))]);
    assert!(matches!(&planned[0], Planned::Run { call, unwrapped: false } if call.name == "svc03__op"));
    assert!(matches!(&planned[1], Planned::Refuse { .. }), "not loaded yet");
}

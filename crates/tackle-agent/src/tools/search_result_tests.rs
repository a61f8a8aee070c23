use serde_json::json;

use super::*;

fn counter() -> TokenCounter {
    TokenCounter::for_model("gpt-4o")
}

fn weather() -> ToolSpec {
    ToolSpec::new(
        "api__get_weather",
        "Retrieves the current weather for a city. The data comes from a public service.\n\nMore text.",
        json!({"type": "object", "required": ["city"], "properties": {
            "city": {"type": "string", "description": "City name, e.g. Paris. Ignored when coords are set."},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Unit."},
            "days": {"type": "array", "items": {"type": "integer"}},
            "coords": {"type": "object", "required": ["lat"], "properties": {
                "lat": {"type": "number"}, "lon": {"type": "number"}}},
            "mode": {"anyOf": [{"type": "string"}, {"type": "null"}]}
        }}),
    )
}

#[test]
fn the_compact_form_has_what_a_call_needs() {
    let full = compact_tool(&weather(), CompactDetail::Full);
    assert_eq!(
        full,
        "api__get_weather: Retrieves the current weather for a city.\n  \
         city (string, required): City name, e.g. Paris.\n  \
         unit (\"celsius\" | \"fahrenheit\"): Unit.\n  \
         days (integer[])\n  \
         coords ({lat: number, lon?: number})\n  \
         mode (string | null)"
    );
    let types = compact_tool(&weather(), CompactDetail::Types);
    assert!(types.contains("city (string, required)\n") && !types.contains("Paris"), "{types}");
    let names = compact_tool(&weather(), CompactDetail::Names);
    assert_eq!(
        names,
        "api__get_weather: Retrieves the current weather for a city.\n  parameters (* required): city*, unit, days, coords, mode"
    );
    let bare = ToolSpec::new("x__noop", "", json!({"type": "object"}));
    assert_eq!(compact_tool(&bare, CompactDetail::Full), "x__noop\n  (no parameters)");
}

#[test]
fn first_sentences_skip_abbreviations_and_clip() {
    assert_eq!(first_sentence("Find it, e.g. a file. Then more.", 100), "Find it, e.g. a file.");
    assert_eq!(first_sentence("Uses i.e. this one. Next", 100), "Uses i.e. this one.");
    assert_eq!(first_sentence("Version 2.5 is used. x", 100), "Version 2.5 is used.");
    assert_eq!(first_sentence("  no   period \n at all  ", 100), "no period at all");
    assert_eq!(first_sentence("first para\n\nsecond", 100), "first para");
    assert_eq!(first_sentence(&"word ".repeat(100), 10), "word word…");
}

/// A tool as large as the largest real ones: many described parameters and long enums.
fn huge(n: usize) -> ToolSpec {
    let props: serde_json::Map<String, Value> = (0..60)
        .map(|i| {
            (
                format!("parameter_number_{i}"),
                json!({"type": "string", "description": "A long description of this parameter that goes on. ".repeat(4),
                    "enum": (0..40).map(|v| format!("value_{v}")).collect::<Vec<_>>()}),
            )
        })
        .collect();
    ToolSpec::new(
        format!("srv__huge_tool_{n}"),
        "A tool with very many parameters, as generated from an OpenAPI document. ".repeat(5),
        json!({"type": "object", "properties": props, "required": ["parameter_number_0"]}),
    )
}

#[test]
fn an_answer_stays_within_its_budget_and_names_every_tool() {
    let c = counter();
    for n in [1, 5, 20] {
        let hits: Vec<ToolSpec> = (0..n).map(huge).collect();
        let text = render_results("huge tools", &hits, DeferralMode::Proxy, &c, SEARCH_RESULT_TOKENS);
        assert!(c.count_text(&text) <= SEARCH_RESULT_TOKENS, "{n} tools: {} tokens", c.count_text(&text));
        assert!(text.lines().count() <= SEARCH_RESULT_LINES, "{n} tools: {} lines", text.lines().count());
        for h in &hits {
            assert!(text.contains(&h.name), "{n} tools: {} is named", h.name);
        }
        assert!(text.starts_with(&format!("Found {n} tools for \"huge tools\". Call one with call_tool")));
    }
    // Small tools are shown in full.
    let hits = vec![weather()];
    let text = render_results("weather", &hits, DeferralMode::Native, &c, SEARCH_RESULT_TOKENS);
    assert!(text.starts_with("Loaded 1 tools for \"weather\": call them directly"), "{text}");
    assert!(text.ends_with(&compact_tool(&weather(), CompactDetail::Full)), "{text}");
}

#[test]
fn the_largest_tool_loses_detail_first_and_tools_drop_last() {
    let c = counter();
    let hits = vec![weather(), huge(0)];
    let text = render_results("q", &hits, DeferralMode::Proxy, &c, 700);
    assert!(
        text.contains(&compact_tool(&weather(), CompactDetail::Full)),
        "the small tool keeps its detail: {text}"
    );
    assert!(c.count_text(&text) <= 700);
    // A budget too small for both: the second is named, not shown.
    let tight = render_results("q", &hits, DeferralMode::Proxy, &c, 150);
    assert!(tight.contains("api__get_weather:"), "{tight}");
    assert!(tight.contains("Also found, not shown to stay within 150 tokens: srv__huge_tool_0."), "{tight}");
}

//! Prefix stability: how much of each request is byte-identical to the previous one, measured
//! the way providers cache (tools, then system, then messages), and where it broke.

use serde_json::Value;

/// Cache-relevant view of a request body: what the provider hashes for its prompt cache, in
/// the order it does, without what only steers caching, as compact JSON bytes.
///
/// Runs on every step, so it avoids building a JSON tree, and even parsing the body: the
/// top-level fields are located by [`top_level_fields`] and taken as the exact bytes sent, and
/// only a field that carries `cache_control` is parsed to strip it (the encoder writes compact
/// serde_json, so re-serializing a field gives back its bytes).
fn cache_view(order: &[&str], body: &[u8]) -> Option<Vec<u8>> {
    let fields = top_level_fields(body)?;
    let mut view = Vec::with_capacity(body.len());
    view.push(b'{');
    for (i, key) in order.iter().enumerate() {
        if i > 0 {
            view.push(b',');
        }
        view.push(b'"');
        view.extend_from_slice(key.as_bytes());
        view.extend_from_slice(b"\":");
        // The last occurrence of a key counts, as when the body is parsed into a map.
        match fields.iter().rev().find(|(k, _)| *k == key.as_bytes()).map(|(_, v)| *v) {
            None => view.extend_from_slice(b"null"),
            Some(text) if memchr::memmem::find(text, b"\"cache_control\"").is_some() => {
                let mut value: Value = serde_json::from_slice(text).ok()?;
                strip_cache_control(&mut value);
                serde_json::to_writer(&mut view, &value).ok()?;
            }
            Some(text) => view.extend_from_slice(text),
        }
    }
    view.push(b'}');
    Some(view)
}

/// The top-level members of the JSON object `body`: each key's raw bytes (between its quotes)
/// and its value's exact bytes. `None` when `body` is not an object.
///
/// A structural scan, not a parse: strings are skipped with `memchr` (a request body is mostly
/// string content: the conversation), nothing is decoded or validated beyond the nesting. The
/// body comes from the encoder's own serializer; a malformed one yields `None` or spans that
/// only make the prefix metric shorter, never a panic. Parsing the whole body into a map of raw
/// values per step cost ~3M instructions on a 245 KB request (a third of the loop's work).
fn top_level_fields(body: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    let mut fields = Vec::new();
    let mut at = skip_ws(body, 0);
    if body.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_ws(body, at + 1);
    if body.get(at) == Some(&b'}') {
        return (skip_ws(body, at + 1) == body.len()).then_some(fields);
    }
    loop {
        if body.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(body, at + 1)?;
        let key = &body[at + 1..key_end - 1];
        at = skip_ws(body, key_end);
        if body.get(at) != Some(&b':') {
            return None;
        }
        let start = skip_ws(body, at + 1);
        let end = value_end(body, start)?;
        fields.push((key, &body[start..end]));
        at = skip_ws(body, end);
        match body.get(at) {
            Some(b',') => at = skip_ws(body, at + 1),
            Some(b'}') => return (skip_ws(body, at + 1) == body.len()).then_some(fields),
            _ => return None,
        }
    }
}

fn skip_ws(body: &[u8], mut at: usize) -> usize {
    while body.get(at).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// The index just past the closing quote of the string whose content starts at `at`.
fn string_end(body: &[u8], mut at: usize) -> Option<usize> {
    loop {
        at += memchr::memchr2(b'"', b'\\', body.get(at..)?)?;
        if body[at] == b'"' {
            return Some(at + 1);
        }
        // A backslash escapes the next byte (`\"`, `\\`; a `\uXXXX` goes on as plain bytes).
        at += 2;
    }
}

/// The index just past the value that starts at `at`.
fn value_end(body: &[u8], mut at: usize) -> Option<usize> {
    match body.get(at)? {
        b'"' => string_end(body, at + 1),
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                match body.get(at)? {
                    b'"' => {
                        at = string_end(body, at + 1)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
        }
        b'}' | b']' | b',' | b':' => None,
        // A number, `true`, `false` or `null`: up to the next delimiter.
        _ => {
            let len = body[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(body.len() - at);
            Some(at + len)
        }
    }
}

fn strip_cache_control(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("cache_control");
            m.values_mut().for_each(strip_cache_control);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}

/// Prefix measurement of one request against the previous one.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixStats {
    /// Bytes of the cache view shared with the previous request, from the start.
    pub prefix_bytes: u64,
    /// `prefix_bytes` over the previous request's cache-view size (1.0 when nothing broke).
    pub ratio: f64,
    /// Size of this request's cache view.
    pub request_bytes: u64,
    /// First JSON path that differs, when the shared prefix ends before the previous request's
    /// end (a cache break).
    pub cache_break: Option<String>,
}

/// Where the request a tracker measures against came from.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Baseline {
    /// The session's own previous request: a prefix that ends early is a cache break.
    #[default]
    Own,
    /// The parent's request that started this sub-agent's session: its first request repeats
    /// the parent's prefix (tools, system sections) and then differs by design (another
    /// conversation), so the shared share is measured but no cache break is reported.
    Parent,
}

/// Remembers the previous request of a session and measures each new one against it.
#[derive(Debug, Default, Clone)]
pub struct PrefixTracker {
    /// Cache view of the previous request (shared: a sub-agent's first request is measured
    /// against its parent's, without a copy).
    previous: Option<std::sync::Arc<Vec<u8>>>,
    /// Whose request `previous` is.
    baseline: Baseline,
}

impl PrefixTracker {
    /// A tracker for a sub-agent's session started during the step whose request `parent`
    /// observed last: its first request is measured against that one ([`Baseline::Parent`]),
    /// its later requests against its own.
    pub fn child_of(parent: &PrefixTracker) -> Self {
        Self { previous: parent.previous.clone(), baseline: Baseline::Parent }
    }

    /// Measures `body` (the exact bytes sent) against the previous request, comparing the
    /// top-level fields in `cache_order` (the provider's, from its encoded request), and keeps it
    /// as the new previous (the session's own from then on). `None` for the first request or an
    /// unparseable body. Against a [`Baseline::Parent`] the stats never name a cache break.
    pub fn observe(&mut self, cache_order: &[&str], body: &[u8]) -> Option<PrefixStats> {
        let bytes = cache_view(cache_order, body)?;
        let against_parent = std::mem::take(&mut self.baseline) == Baseline::Parent;
        let stats = self.previous.as_ref().map(|prev_bytes| {
            let shared = common_prefix(prev_bytes, &bytes);
            // The view ends with `]}` (the messages array, then the view object), which any
            // appended message moves; the prefix is unbroken when everything before is shared.
            let prev_open = if prev_bytes.ends_with(b"]}") { prev_bytes.len() - 2 } else { prev_bytes.len() };
            let unbroken = shared >= prev_open;
            PrefixStats {
                prefix_bytes: if unbroken { prev_bytes.len() as u64 } else { shared as u64 },
                ratio: if unbroken || prev_bytes.is_empty() {
                    1.0
                } else {
                    shared as f64 / prev_bytes.len() as f64
                },
                request_bytes: bytes.len() as u64,
                // Only a break (rare) pays for parsing both views to name where it happened.
                cache_break: (!unbroken && !against_parent)
                    .then(|| break_path(prev_bytes, &bytes, cache_order.last().copied()))
                    .flatten(),
            }
        });
        self.previous = Some(std::sync::Arc::new(bytes));
        stats
    }
}

/// Where two cache views first differ, as a JSON path; `growing` names the conversation (the
/// last cached field), the one list that may be longer in the new request.
fn break_path(previous: &[u8], current: &[u8], growing: Option<&str>) -> Option<String> {
    let a: Value = serde_json::from_slice(previous).ok()?;
    let b: Value = serde_json::from_slice(current).ok()?;
    first_difference(&a, &b, String::new(), growing.unwrap_or(""))
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    // Compare in blocks first (memcmp), then bytes within the first differing block.
    const BLOCK: usize = 4096;
    let n = a.len().min(b.len());
    let mut at = 0;
    while at + BLOCK <= n && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    at + a[at..n].iter().zip(&b[at..n]).take_while(|(x, y)| x == y).count()
}

/// The first path (in serialization order) where `a` and `b` differ; `None` if `a` is a prefix
/// of `b` (only items appended to the `growing` list).
fn first_difference(a: &Value, b: &Value, path: String, growing: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for ((ka, va), (kb, vb)) in x.iter().zip(y.iter()) {
                if ka != kb {
                    return Some(join(&path, ka));
                }
                if let Some(p) = first_difference(va, vb, join(&path, ka), growing) {
                    return Some(p);
                }
            }
            (x.len() != y.len()).then(|| {
                let longer = if x.len() > y.len() { x } else { y };
                join(&path, longer.keys().nth(x.len().min(y.len())).map(String::as_str).unwrap_or(""))
            })
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (va, vb)) in x.iter().zip(y.iter()).enumerate() {
                if let Some(p) = first_difference(va, vb, format!("{path}[{i}]"), growing) {
                    return Some(p);
                }
            }
            // A longer array in the new request is fine only for the conversation itself.
            let appended_ok = path == growing;
            (x.len() > y.len() || (x.len() < y.len() && !appended_ok))
                .then(|| format!("{path}[{}]", x.len().min(y.len())))
        }
        _ if a == b => None,
        _ => Some(if path.is_empty() { "(root)".to_owned() } else { path }),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The cache orders the two providers declare in their encoded requests.
    const OPENAI: &[&str] = &["tools", "messages"];
    const ANTHROPIC: &[&str] = &["tools", "system", "tool_choice", "messages"];
    const RESPONSES: &[&str] = &["tools", "instructions", "input"];

    fn body(tools: Value, messages: Value, tool_choice: Value) -> Vec<u8> {
        serde_json::to_vec(
            &json!({"model": "m", "tools": tools, "messages": messages, "tool_choice": tool_choice}),
        )
        .unwrap()
    }

    /// The view built as a JSON tree, the straightforward (slow) way.
    fn tree_view(keys: &[&str], body: &[u8]) -> Vec<u8> {
        let body: Value = serde_json::from_slice(body).unwrap();
        let mut view = serde_json::Map::new();
        for k in keys {
            view.insert((*k).into(), body.get(*k).cloned().unwrap_or(Value::Null));
        }
        let mut view = Value::Object(view);
        strip_cache_control(&mut view);
        serde_json::to_vec(&view).unwrap()
    }

    #[test]
    fn the_byte_view_equals_the_tree_view() {
        let bodies = [
            (
                ANTHROPIC,
                json!({"model": "m", "max_tokens": 5, "system": [{"type": "text", "text": "s \"q\" é\n", "cache_control": {"type": "ephemeral"}}],
                "tools": [{"name": "a", "input_schema": {"type": "object"}}], "tool_choice": {"type": "auto"},
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi 🎉", "cache_control": {"type": "ephemeral"}}]}]}),
            ),
            (ANTHROPIC, json!({"model": "m", "messages": [{"role": "user", "content": "x"}]})),
            (
                RESPONSES,
                json!({"model": "m", "tools": [{"type": "function", "name": "a", "strict": false}], "instructions": "s",
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "é"}]}], "store": false}),
            ),
            (
                OPENAI,
                json!({"model": "m", "tools": [{"type": "function", "function": {"name": "a", "parameters": {"x": 1.5}}}],
                "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u\u{1}"}], "prompt_cache_key": "k"}),
            ),
        ];
        for (order, body) in bodies {
            let bytes = serde_json::to_vec(&body).unwrap();
            assert_eq!(
                String::from_utf8(cache_view(order, &bytes).unwrap()).unwrap(),
                String::from_utf8(tree_view(order, &bytes)).unwrap()
            );
        }
        assert!(cache_view(OPENAI, b"not json").is_none());
    }

    /// The members serde_json finds, as raw text, by key (the oracle of the scan).
    fn parsed_fields(body: &[u8]) -> Option<std::collections::BTreeMap<String, String>> {
        let map: std::collections::BTreeMap<String, Box<serde_json::value::RawValue>> =
            serde_json::from_slice(body).ok()?;
        Some(map.into_iter().map(|(k, v)| (k, v.get().to_owned())).collect())
    }

    /// The scan's members by decoded key, the last occurrence winning.
    fn scanned_fields(body: &[u8]) -> Option<std::collections::BTreeMap<String, String>> {
        let fields = top_level_fields(body)?;
        Some(
            fields
                .into_iter()
                .map(|(k, v)| {
                    let key: String = serde_json::from_slice(&[b"\"", k, b"\""].concat()).unwrap();
                    (key, String::from_utf8(v.to_vec()).unwrap())
                })
                .collect(),
        )
    }

    #[test]
    fn the_scan_finds_the_members_serde_finds() {
        let bodies: Vec<Vec<u8>> = vec![
            br#"{}"#.to_vec(),
            br#" { } "#.to_vec(),
            br#"{"a":1}"#.to_vec(),
            br#"{"a":"}]{[,:","b":[1,{"c":"\"}"},[]],"d":null,"e":true,"f":-1.5e3}"#.to_vec(),
            br#"{"k\"ey":"x\\","tail\\":"\\\"","u":"\u007b\ud83c\udf89"}"#.to_vec(),
            b"{\n  \"messages\" : [ {\"role\": \"user\"} ] ,\n  \"tools\":\t{}\r\n}\n".to_vec(),
            r#"{"t":"é 🎉 \n","n":[[[[]]]],"o":{"p":{"q":{}}}}"#.as_bytes().to_vec(),
            br#"{"a":1,"a":2}"#.to_vec(),
        ];
        for body in &bodies {
            let text = String::from_utf8_lossy(body);
            assert_eq!(scanned_fields(body), parsed_fields(body), "{text}");
            assert!(parsed_fields(body).is_some(), "{text}");
        }
        for bad in [
            &b""[..],
            b"[]",
            b"not json",
            b"{\"a\":1",
            b"{\"a\" 1}",
            b"{\"a\":\"x}",
            b"{\"a\":1}x",
            b"{\"a\":[1}",
        ] {
            assert_eq!(top_level_fields(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e9f64..1e9).prop_map(Value::from),
            // Quotes, backslashes, brackets and control characters in strings.
            "[\"\\\\{}\\[\\],: a-zé🎉\\n\\t\\x00-\\x1f]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map("[\"\\\\a-z{]{0,6}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn the_scan_agrees_with_serde_on_any_object(
            members in proptest::collection::btree_map("[\"\\\\a-z{]{0,6}", any_json(), 0..8),
            pretty in proptest::prelude::any::<bool>(),
        ) {
            let object = Value::Object(members.into_iter().collect());
            let body = if pretty { serde_json::to_vec_pretty(&object) } else { serde_json::to_vec(&object) }.unwrap();
            proptest::prop_assert_eq!(scanned_fields(&body), parsed_fields(&body));
        }
    }

    #[test]
    fn common_prefix_across_blocks() {
        let a: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        for cut in [0, 1, 4095, 4096, 4097, 12_345, 19_999] {
            let mut b = a.clone();
            b[cut] ^= 0xff;
            assert_eq!(common_prefix(&a, &b), cut);
        }
        assert_eq!(common_prefix(&a, &a[..7000]), 7000);
    }

    #[test]
    fn a_childs_first_request_is_measured_against_its_parent_and_only_its_own_breaks() {
        let tools = json!([{"name": "a"}, {"name": "b"}]);
        let mut parent = PrefixTracker::default();
        let parents =
            body(tools.clone(), json!([{"role": "user", "content": "the parent's task"}]), json!("auto"));
        parent.observe(OPENAI, &parents);
        let mut child = PrefixTracker::child_of(&parent);
        // Another conversation after the same tools: measured, and no break.
        let first = json!([{"role": "user", "content": "the child's task"}]);
        let s = child.observe(OPENAI, &body(tools.clone(), first.clone(), json!("auto"))).unwrap();
        assert!(s.ratio > 0.5 && s.ratio < 1.0, "{s:?}");
        assert_eq!(s.cache_break, None, "a first request measured against the parent is no break");
        // Its later requests are measured against its own, and a changed prefix breaks.
        let grown = json!([{"role": "user", "content": "the child's task"}, {"role": "assistant"}]);
        let s = child.observe(OPENAI, &body(tools, grown.clone(), json!("auto"))).unwrap();
        assert_eq!((s.ratio, s.cache_break.clone()), (1.0, None));
        let s = child.observe(OPENAI, &body(json!([{"name": "a"}]), grown, json!("auto"))).unwrap();
        assert_eq!(s.cache_break.as_deref(), Some("tools[1]"));
        // The parent's own tracker is untouched by its child's requests.
        let s = parent.observe(OPENAI, &parents).unwrap();
        assert_eq!((s.ratio, s.cache_break), (1.0, None));
    }

    #[test]
    fn appended_messages_keep_the_whole_prefix() {
        let mut t = PrefixTracker::default();
        let tools = json!([{"name": "a"}]);
        assert_eq!(t.observe(OPENAI, &body(tools.clone(), json!([{"role": "user"}]), json!("auto"))), None);
        let s = t
            .observe(OPENAI, &body(tools, json!([{"role": "user"}, {"role": "assistant"}]), json!("none")))
            .unwrap();
        assert_eq!(s.ratio, 1.0, "OpenAI tool_choice is not in the cached prefix");
        assert_eq!(s.cache_break, None);
    }

    #[test]
    fn a_changed_tool_is_named() {
        let mut t = PrefixTracker::default();
        let m = json!([{"role": "user", "content": "hi"}]);
        t.observe(
            OPENAI,
            &body(json!([{"name": "a", "description": "x"}, {"name": "b"}]), m.clone(), json!(null)),
        );
        let s = t
            .observe(OPENAI, &body(json!([{"name": "a", "description": "y"}, {"name": "b"}]), m, json!(null)))
            .unwrap();
        assert!(s.ratio < 0.5);
        assert_eq!(s.cache_break.as_deref(), Some("tools[0].description"));
    }

    #[test]
    fn anthropic_tool_choice_breaks_at_the_messages_and_cache_control_is_ignored() {
        let mut t = PrefixTracker::default();
        let sys = |cc: bool| {
            if cc {
                json!([{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}])
            } else {
                json!([{"type": "text", "text": "s"}])
            }
        };
        let b = |choice: Value, cc: bool| {
            serde_json::to_vec(&json!({"tools": [], "system": sys(cc), "messages": [{"role": "user"}], "tool_choice": choice})).unwrap()
        };
        t.observe(ANTHROPIC, &b(json!({"type": "auto"}), true));
        let s = t.observe(ANTHROPIC, &b(json!({"type": "auto"}), false)).unwrap();
        assert_eq!((s.ratio, s.cache_break.clone()), (1.0, None), "cache_control does not count");
        let s = t.observe(ANTHROPIC, &b(json!({"type": "none"}), false)).unwrap();
        assert_eq!(s.cache_break.as_deref(), Some("tool_choice.type"));
    }

    #[test]
    fn responses_input_grows_and_instructions_or_tools_break() {
        let mut t = PrefixTracker::default();
        let b = |instructions: &str, input: Value, choice: Value| {
            serde_json::to_vec(&json!({"model": "m", "tools": [{"type": "function", "name": "a"}],
                "instructions": instructions, "input": input, "tool_choice": choice}))
            .unwrap()
        };
        let one = json!([{"role": "user", "content": "hi"}]);
        let two = json!([{"role": "user", "content": "hi"}, {"type": "function_call", "call_id": "c", "name": "a", "arguments": "{}"}]);
        t.observe(RESPONSES, &b("s", one.clone(), json!("auto")));
        let s = t.observe(RESPONSES, &b("s", two.clone(), json!("none"))).unwrap();
        assert_eq!(
            (s.ratio, s.cache_break.clone()),
            (1.0, None),
            "an appended item and tool_choice do not break"
        );
        let s = t.observe(RESPONSES, &b("other", two, json!("none"))).unwrap();
        assert_eq!(s.cache_break.as_deref(), Some("instructions"));
        // The conversation may only grow at its end: a shorter input is a break.
        let s = t.observe(RESPONSES, &b("other", one, json!("none"))).unwrap();
        assert_eq!(s.cache_break.as_deref(), Some("input[1]"));
    }
}

//! `tool_choice` as both OpenAI formats spell it: a mode string (`"auto"`) or an object.

use serde::de::{IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// A `tool_choice` read as either of its two shapes, before each format names them.
pub(crate) enum ModeOrObject<M, O> {
    /// A string: `none`, `auto` or `required`.
    Mode(M),
    /// An object.
    Object(O),
}

impl<'de, M: Deserialize<'de>, O: Deserialize<'de>> Deserialize<'de> for ModeOrObject<M, O> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ChoiceVisitor<M, O>(std::marker::PhantomData<(M, O)>);
        impl<'de, M: Deserialize<'de>, O: Deserialize<'de>> Visitor<'de> for ChoiceVisitor<M, O> {
            type Value = ModeOrObject<M, O>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("`none`, `auto`, `required` or a tool choice object")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                M::deserialize(v.into_deserializer()).map(ModeOrObject::Mode)
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                O::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(ModeOrObject::Object)
            }
        }
        d.deserialize_any(ChoiceVisitor(std::marker::PhantomData))
    }
}

/// The string forms of `tool_choice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoiceMode {
    /// No tool may be called.
    None,
    /// The model decides.
    Auto,
    /// Some tool must be called.
    Required,
}

/// How a `tool_choice` object is spelled, read from its keys before its fields are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A `type` of the API being read, in its own spelling.
    Own,
    /// The other OpenAI API's `function` or `allowed_tools` spelling.
    Foreign,
    /// No `type`, or one neither API documents here.
    Unknown,
}

/// The spelling of `value`, an object whose `type` is one of `known` for the API being read;
/// `nested` says whether that API nests a function's name (`{"function": {"name"}}`, Chat
/// Completions) or not (`{"name"}`, Responses).
pub(crate) fn shape(value: &Value, known: &[&str], nested: bool) -> Shape {
    let has = |key: &str| value.get(key).is_some();
    // Each API's spelling of the two shared types, told apart by a key only one of them has.
    let chat_spelling = match value.get("type").and_then(Value::as_str) {
        Some("function") if has("function") || has("name") => has("function"),
        Some("allowed_tools") if has("allowed_tools") || has("mode") || has("tools") => has("allowed_tools"),
        Some(kind) if known.contains(&kind) => return Shape::Own,
        _ => return Shape::Unknown,
    };
    if chat_spelling == nested { Shape::Own } else { Shape::Foreign }
}

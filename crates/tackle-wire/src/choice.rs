//! `tool_choice` as both OpenAI formats spell it: a mode string (`"auto"`) or an object.

use serde::de::{IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

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

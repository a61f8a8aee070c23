//! JSON Schemas for tool inputs that every provider accepts.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The input schema of a tool whose arguments are `T`.
///
/// Subschemas are inlined (no `$ref`/`$defs`, which some providers reject), and the root's
/// `$schema` and `title` are dropped: they cost tokens and tell the model nothing.
pub fn input_schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .for_deserialize()
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut value {
        map.remove("title");
        map.remove("$schema");
    }
    value
}

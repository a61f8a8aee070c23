//! JSON Schemas for tool inputs that every provider accepts.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

/// The schema schemars derives for `T`: subschemas inlined (no `$ref`/`$defs`, which some
/// providers reject), without the root's `$schema` and `title` (tokens that tell the model
/// nothing). Tagged enums stay a root `oneOf`; see [`input_schema_for`] for what is sent.
pub fn derived_schema_for<T: JsonSchema>() -> Value {
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

/// The input schema sent to providers for arguments of type `T`: the derived schema, with an
/// action-discriminated enum flattened into one object (see [`flatten_tagged_union`]).
pub fn input_schema_for<T: JsonSchema>() -> Value {
    let derived = derived_schema_for::<T>();
    flatten_tagged_union(&derived).unwrap_or(derived)
}

/// One variant of a tagged union: its discriminator value and schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// Value of the discriminator (e.g. `create`).
    pub tag: String,
    /// The variant's full object schema.
    pub schema: Value,
}

/// A root `oneOf`/`anyOf` of object schemas that share a discriminator property with a
/// constant value in each (schemars' shape for `#[serde(tag = "...")]` enums).
#[derive(Debug, Clone, PartialEq)]
pub struct TaggedUnion {
    /// The discriminator property (e.g. `action`).
    pub discriminator: String,
    /// The variants, in order.
    pub variants: Vec<Variant>,
}

fn const_of(schema: &Value) -> Option<String> {
    if let Some(c) = schema.get("const").and_then(Value::as_str) {
        return Some(c.to_owned());
    }
    match schema.get("enum").and_then(Value::as_array).map(Vec::as_slice) {
        Some([Value::String(s)]) => Some(s.clone()),
        _ => None,
    }
}

/// Recognizes a tagged union at the root of `schema`.
pub fn tagged_union(schema: &Value) -> Option<TaggedUnion> {
    let variants = schema.get("oneOf").or_else(|| schema.get("anyOf"))?.as_array()?;
    let first = variants.first()?.get("properties")?.as_object()?;
    let discriminator = first.iter().find(|(_, p)| const_of(p).is_some()).map(|(k, _)| k.clone())?;
    let mut out = Vec::new();
    for v in variants {
        let tag = const_of(v.get("properties")?.get(&discriminator)?)?;
        out.push(Variant { tag, schema: v.clone() });
    }
    Some(TaggedUnion { discriminator, variants: out })
}

/// Flattens a tagged union into one `type: object` schema: the discriminator becomes an `enum`,
/// properties are merged, only properties every variant requires stay `required`, and each other
/// required property's description says which values of the discriminator require it. Variant
/// descriptions are listed in the schema's description. `None` when `schema` is not a tagged
/// union.
pub fn flatten_tagged_union(schema: &Value) -> Option<Value> {
    let union = tagged_union(schema)?;
    let d = &union.discriminator;
    let mut properties: Map<String, Value> = Map::new();
    let tags: Vec<&str> = union.variants.iter().map(|v| v.tag.as_str()).collect();
    let mut disc_doc = Vec::new();
    for v in &union.variants {
        if let Some(doc) = v.schema.get("description").and_then(Value::as_str) {
            disc_doc.push(format!("{}: {}", v.tag, doc.trim()));
        }
    }
    let mut disc = json!({ "type": "string", "enum": tags });
    let disc_description = if disc_doc.is_empty() {
        format!("Which operation to perform: one of {}.", tags.join(", "))
    } else {
        format!("Which operation to perform. {}", disc_doc.join(" "))
    };
    disc["description"] = Value::String(disc_description);
    properties.insert(d.clone(), disc);

    let mut required_by: Vec<(String, Vec<&str>)> = Vec::new();
    for v in &union.variants {
        if let Some(props) = v.schema.get("properties").and_then(Value::as_object) {
            for (name, prop) in props {
                if name != d && !properties.contains_key(name) {
                    properties.insert(name.clone(), prop.clone());
                }
            }
        }
        let required = v.schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
        for name in required.iter().filter_map(Value::as_str).filter(|n| *n != d) {
            match required_by.iter_mut().find(|(n, _)| n == name) {
                Some((_, list)) => list.push(&v.tag),
                None => required_by.push((name.to_owned(), vec![&v.tag])),
            }
        }
    }
    let mut required = vec![Value::String(d.clone())];
    for (name, by) in &required_by {
        if by.len() == union.variants.len() {
            required.push(Value::String(name.clone()));
        } else if let Some(Value::Object(prop)) = properties.get_mut(name) {
            let note = format!("Required for {d} {}.", by.join(", "));
            let text = match prop.get("description").and_then(Value::as_str) {
                Some(existing) => format!("{} {note}", existing.trim_end()),
                None => note,
            };
            prop.insert("description".into(), Value::String(text));
        }
    }
    let mut flat = json!({ "type": "object", "properties": properties, "required": required });
    if let Some(desc) = schema.get("description") {
        flat["description"] = desc.clone();
    }
    Some(flat)
}

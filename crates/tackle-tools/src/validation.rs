//! Argument validation against a tool's schema, with messages a model can act on.

use jsonschema::Validator;
use serde_json::Value;

use crate::schema::tagged_union;

/// Most schema errors listed in one message.
const MAX_ERRORS: usize = 5;

/// A compiled input schema. Tagged unions validate against the variant the discriminator
/// selects, so an error says `action "update" requires "id"` rather than "not valid under any
/// of the schemas". Also what a turn's final answer is checked with (structured output).
pub struct ArgsValidator {
    whole: Validator,
    union: Option<(String, Vec<(String, Validator)>)>,
}

impl ArgsValidator {
    /// Compiles `schema`; the error says what is wrong with it.
    pub fn new(schema: &Value) -> Result<Self, String> {
        let whole = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
        let union = match tagged_union(schema) {
            Some(u) => {
                let mut variants = Vec::with_capacity(u.variants.len());
                for v in u.variants {
                    variants.push((v.tag, jsonschema::validator_for(&v.schema).map_err(|e| e.to_string())?));
                }
                Some((u.discriminator, variants))
            }
            None => None,
        };
        Ok(Self { whole, union })
    }

    /// `Ok` when `args` is valid; else a message listing what is wrong, by JSON pointer.
    pub fn validate(&self, args: &Value) -> Result<(), String> {
        if let Some((disc, variants)) = &self.union {
            let tags: Vec<&str> = variants.iter().map(|(t, _)| t.as_str()).collect();
            let Some(tag) = args.get(disc) else {
                return Err(format!("missing required property \"{disc}\": one of {}", quoted(&tags)));
            };
            let Some(tag) = tag.as_str() else {
                return Err(format!("/{disc}: expected a string, one of {}", quoted(&tags)));
            };
            let Some((_, validator)) = variants.iter().find(|(t, _)| t == tag) else {
                return Err(format!("/{disc}: unknown {disc} \"{tag}\"; valid values are {}", quoted(&tags)));
            };
            return collect(validator, args).map_err(|errors| format!("{disc} \"{tag}\": {errors}"));
        }
        collect(&self.whole, args)
    }
}

fn quoted(items: &[&str]) -> String {
    items.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(", ")
}

fn collect(validator: &Validator, args: &Value) -> Result<(), String> {
    let mut messages = Vec::new();
    let mut total = 0;
    for error in validator.iter_errors(args) {
        total += 1;
        if messages.len() < MAX_ERRORS {
            let path = error.instance_path().as_str().to_owned();
            let at = if path.is_empty() { "(root)".to_owned() } else { path };
            messages.push(format!("{at}: {}", describe(&error)));
        }
    }
    if messages.is_empty() {
        return Ok(());
    }
    if total > messages.len() {
        messages.push(format!("and {} more", total - messages.len()));
    }
    Err(messages.join("; "))
}

/// The validator's message, shortened where it would quote a whole (possibly huge) value.
fn describe(error: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind as K;
    match error.kind() {
        K::Required { property } => format!("missing required property {property}"),
        K::Type { kind } => {
            format!("expected {}, got {}", type_name(kind), short(&error.instance().to_string()))
        }
        K::AdditionalProperties { unexpected } => {
            format!(
                "unexpected properties {}",
                unexpected.iter().map(|u| format!("\"{u}\"")).collect::<Vec<_>>().join(", ")
            )
        }
        _ => short(&error.to_string()),
    }
}

fn type_name(kind: &jsonschema::error::TypeKind) -> String {
    use jsonschema::error::TypeKind;
    match kind {
        TypeKind::Single(t) => t.to_string(),
        TypeKind::Multiple(ts) => {
            let names: Vec<String> = ts.iter().map(|t| t.to_string()).collect();
            format!("one of {}", names.join(", "))
        }
    }
}

fn short(text: &str) -> String {
    match text.char_indices().nth(120) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
#[path = "validation_tests.rs"]
mod tests;

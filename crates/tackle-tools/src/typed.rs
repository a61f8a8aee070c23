//! Tools whose input schema is derived from a Rust type.

use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tackle_protocol::{ToolAnnotations, ToolSpec};

use crate::{Tool, ToolContext, ToolFailure, ToolOutput, schema};

/// A tool with typed arguments; wrap it with [`typed`] to get a [`Tool`].
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use tackle_tools::{TypedTool, ToolContext, ToolFailure, ToolOutput, typed};
///
/// /// Arguments of `echo`.
/// #[derive(Deserialize, JsonSchema)]
/// struct EchoArgs {
///     /// Text to send back.
///     text: String,
/// }
///
/// struct Echo;
///
/// #[async_trait::async_trait]
/// impl TypedTool for Echo {
///     type Args = EchoArgs;
///     fn name(&self) -> &str { "echo" }
///     fn description(&self) -> String { "Echo the text back.".into() }
///     async fn run(&self, args: EchoArgs, _ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
///         Ok(ToolOutput::text(args.text))
///     }
/// }
///
/// let tool = typed(Echo);
/// assert_eq!(tool.spec().name, "echo");
/// assert_eq!(tool.spec().input_schema["required"][0], "text");
/// ```
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// Argument type; its doc comments become the schema's descriptions.
    type Args: JsonSchema + DeserializeOwned + Send + 'static;

    /// Tool name.
    fn name(&self) -> &str;

    /// Description shown to the model.
    fn description(&self) -> String;

    /// Behaviour hints.
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }

    /// Runs the call with decoded arguments.
    async fn run(&self, args: Self::Args, ctx: ToolContext) -> Result<ToolOutput, ToolFailure>;
}

/// Wraps a [`TypedTool`] as a [`Tool`], deriving its input schema once.
pub fn typed<T: TypedTool>(tool: T) -> Arc<dyn Tool> {
    let derived = schema::derived_schema_for::<T::Args>();
    let flat = schema::flatten_tagged_union(&derived);
    let (input_schema, validation) = match flat {
        Some(flat) => (flat, Some(derived)),
        None => (derived, None),
    };
    let spec = ToolSpec {
        name: tool.name().to_owned(),
        description: tool.description(),
        input_schema,
        annotations: tool.annotations(),
        defer_loading: false,
    };
    Arc::new(Typed { tool, spec, validation, _args: PhantomData })
}

struct Typed<T: TypedTool> {
    tool: T,
    spec: ToolSpec,
    validation: Option<Value>,
    _args: PhantomData<fn() -> T::Args>,
}

#[async_trait]
impl<T: TypedTool> Tool for Typed<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validation_schema(&self) -> Option<&Value> {
        self.validation.as_ref()
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        let args = serde_json::from_value::<T::Args>(args)
            .map_err(|e| ToolFailure::invalid_args(format!("arguments do not match the schema: {e}")))?;
        self.tool.run(args, ctx).await
    }
}

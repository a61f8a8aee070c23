//! Tools from async closures ([`tool_fn`]), and [`IntoTool`]: anything that can be registered.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tackle_protocol::ToolAnnotations;

use crate::{Tool, ToolContext, ToolFailure, ToolOutput, TypedTool, typed};

/// A tool made of a name, a description and an async closure over typed arguments; see
/// [`tool_fn`].
pub struct FnTool<A, F> {
    name: String,
    description: String,
    annotations: ToolAnnotations,
    run: F,
    _args: PhantomData<fn() -> A>,
}

/// A tool from an async closure. The argument type's doc comments become the schema the model
/// sees, exactly as for a [`TypedTool`].
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use tackle_tools::{IntoTool, ToolFailure, tool_fn};
///
/// /// Arguments of `add`.
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs {
///     /// First term.
///     a: i64,
///     /// Second term.
///     b: i64,
/// }
///
/// let add = tool_fn("add", "Add two integers.", |args: AddArgs| async move { (args.a + args.b).to_string() });
/// // A closure that can fail returns a Result with a ToolFailure, which the model sees.
/// let div = tool_fn("div", "Divide two integers.", |args: AddArgs| async move {
///     match args.a.checked_div(args.b) {
///         Some(q) => Ok(q.to_string()),
///         None => Err(ToolFailure::invalid_args("b must not be 0")),
///     }
/// });
/// assert_eq!(div.into_tool().spec().name, "div");
/// let tool = add.into_tool();
/// assert_eq!(tool.spec().name, "add");
/// assert_eq!(tool.spec().input_schema["required"], serde_json::json!(["a", "b"]));
/// ```
pub fn tool_fn<A, F, Fut>(name: impl Into<String>, description: impl Into<String>, run: F) -> FnTool<A, F>
where
    A: JsonSchema + DeserializeOwned + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoToolResult,
{
    FnTool {
        name: name.into(),
        description: description.into(),
        annotations: ToolAnnotations::default(),
        run,
        _args: PhantomData,
    }
}

impl<A, F> FnTool<A, F> {
    /// The same tool with these behaviour hints (read-only, destructive, ...), which decide
    /// hooks, approvals and whether calls may run concurrently.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }
}

#[async_trait]
impl<A, F, Fut> TypedTool for FnTool<A, F>
where
    A: JsonSchema + DeserializeOwned + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoToolResult,
{
    type Args = A;

    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn annotations(&self) -> ToolAnnotations {
        self.annotations
    }

    async fn run(&self, args: A, _ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        (self.run)(args).await.into_tool_result()
    }
}

/// What a [`tool_fn`] closure may return: text or a [`ToolOutput`] (it cannot fail), or a
/// `Result` whose error is a [`ToolFailure`] (the model gets its envelope).
pub trait IntoToolResult {
    /// The result as the executor takes it.
    fn into_tool_result(self) -> Result<ToolOutput, ToolFailure>;
}

impl<O: Into<ToolOutput>> IntoToolResult for Result<O, ToolFailure> {
    fn into_tool_result(self) -> Result<ToolOutput, ToolFailure> {
        self.map(Into::into)
    }
}

impl IntoToolResult for ToolOutput {
    fn into_tool_result(self) -> Result<ToolOutput, ToolFailure> {
        Ok(self)
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> Result<ToolOutput, ToolFailure> {
        Ok(self.into())
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> Result<ToolOutput, ToolFailure> {
        Ok(self.into())
    }
}

/// Anything that can be registered as a tool: a [`Tool`] behind an `Arc`, or a [`TypedTool`]
/// (including [`tool_fn`] closures), whose schema is derived once.
pub trait IntoTool {
    /// The tool, ready for a registry.
    fn into_tool(self) -> Arc<dyn Tool>;
}

impl IntoTool for Arc<dyn Tool> {
    fn into_tool(self) -> Arc<dyn Tool> {
        self
    }
}

impl<T: TypedTool> IntoTool for T {
    fn into_tool(self) -> Arc<dyn Tool> {
        typed(self)
    }
}

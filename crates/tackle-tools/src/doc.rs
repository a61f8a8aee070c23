//! The description template every tool follows, so models pick the right tool.

/// Builder of a tool description in Tackle's template: purpose; when to use it; what it does not
/// do; arguments with examples; what it returns; examples of calls.
///
/// ```
/// use tackle_tools::ToolDoc;
/// let text = ToolDoc::new("Read a text file from the workspace.")
///     .use_when("you need the contents of a file you know the path of")
///     .does_not("list directories (use list_files)")
///     .arg("path", "Path relative to the workspace root. Example: \"src/main.rs\"")
///     .returns("The lines, numbered from 1.")
///     .example(r#"{"path": "README.md"}"#)
///     .render();
/// assert!(text.starts_with("Read a text file"));
/// assert!(text.contains("\nUse when:\n- you need"));
/// assert!(tackle_tools::lint::missing_sections(&text).is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolDoc {
    purpose: String,
    prerequisite: Option<String>,
    use_when: Vec<String>,
    does_not: Vec<String>,
    args: Vec<(String, String)>,
    returns: String,
    examples: Vec<String>,
}

/// Section headings of the template, in order, as rendered.
pub const SECTIONS: [&str; 5] = ["Use when:", "Does not:", "Arguments:", "Returns:", "Examples:"];

impl ToolDoc {
    /// Starts a description with its one-sentence purpose.
    pub fn new(purpose: impl Into<String>) -> Self {
        Self { purpose: purpose.into(), ..Self::default() }
    }

    /// State or calls required before this tool is useful.
    pub fn prerequisite(mut self, text: impl Into<String>) -> Self {
        self.prerequisite = Some(text.into());
        self
    }

    /// A situation in which to use the tool.
    pub fn use_when(mut self, text: impl Into<String>) -> Self {
        self.use_when.push(text.into());
        self
    }

    /// Something the tool does not do, ideally naming the tool that does.
    pub fn does_not(mut self, text: impl Into<String>) -> Self {
        self.does_not.push(text.into());
        self
    }

    /// An argument with its constraints and an example.
    pub fn arg(mut self, name: impl Into<String>, text: impl Into<String>) -> Self {
        self.args.push((name.into(), text.into()));
        self
    }

    /// What a successful call returns.
    pub fn returns(mut self, text: impl Into<String>) -> Self {
        self.returns = text.into();
        self
    }

    /// An example call (the arguments as JSON, optionally followed by a comment).
    pub fn example(mut self, text: impl Into<String>) -> Self {
        self.examples.push(text.into());
        self
    }

    /// The description text.
    pub fn render(&self) -> String {
        let mut out = self.purpose.trim().to_owned();
        if let Some(p) = &self.prerequisite {
            out.push_str("\n\nPrerequisite: ");
            out.push_str(p);
        }
        let list = |out: &mut String, heading: &str, items: &[String]| {
            out.push_str("\n\n");
            out.push_str(heading);
            for item in items {
                out.push_str("\n- ");
                out.push_str(item);
            }
        };
        list(&mut out, SECTIONS[0], &self.use_when);
        list(&mut out, SECTIONS[1], &self.does_not);
        let args: Vec<String> = self.args.iter().map(|(n, t)| format!("{n}: {t}")).collect();
        list(&mut out, SECTIONS[2], &args);
        out.push_str("\n\n");
        out.push_str(SECTIONS[3]);
        out.push(' ');
        out.push_str(&self.returns);
        list(&mut out, SECTIONS[4], &self.examples);
        out
    }
}

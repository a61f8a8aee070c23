//! Rendering scripted turns in each provider's wire format.

pub(crate) mod anthropic;
pub(crate) mod openai_chat;
pub(crate) mod responses;

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Frame {
    pub(crate) event: Option<&'static str>,
    pub(crate) data: String,
}

impl Frame {
    /// An unnamed event whose data is a typed wire value.
    pub(crate) fn json(value: &impl serde::Serialize) -> Self {
        // Wire types serialize infallibly (string keys, no non-finite floats).
        Self { event: None, data: serde_json::to_string(value).unwrap_or_default() }
    }

    /// A named event whose data is a typed wire value.
    pub(crate) fn typed(event: &'static str, value: &impl serde::Serialize) -> Self {
        // Wire types serialize infallibly (string keys, no non-finite floats).
        Self { event: Some(event), data: serde_json::to_string(value).unwrap_or_default() }
    }

    pub(crate) fn render(&self) -> String {
        match self.event {
            Some(e) => format!("event: {e}\ndata: {}\n\n", self.data),
            None => format!("data: {}\n\n", self.data),
        }
    }
}

/// Everything a renderer needs besides the turn.
#[derive(Debug, Clone)]
pub(crate) struct RenderCtx {
    /// Index of the turn in the script (for deterministic ids).
    pub(crate) turn: usize,
    /// Model name to report.
    pub(crate) model: String,
    /// Fragment size.
    pub(crate) chunk: usize,
    /// OpenAI: whether the request asked for the usage chunk.
    pub(crate) include_usage: bool,
}

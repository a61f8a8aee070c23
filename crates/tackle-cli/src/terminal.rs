//! The terminal's input, owned by one thread: the REPL and approval prompts both read lines
//! through it, so they never fight over stdin.

use std::path::PathBuf;

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use tokio::sync::{mpsc, oneshot};

/// What a line read produced.
#[derive(Debug)]
pub enum Input {
    /// A line (without its newline).
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// End of input (Ctrl-D, or stdin closed).
    Eof,
}

struct Request {
    prompt: String,
    history: bool,
    reply: oneshot::Sender<Input>,
}

/// Handle to the terminal thread. Cheap to clone.
#[derive(Clone)]
pub struct Terminal {
    requests: mpsc::UnboundedSender<Request>,
}

impl Terminal {
    /// Starts the terminal thread; `history_file` keeps REPL history across runs.
    pub fn start(history_file: Option<PathBuf>) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Request>();
        std::thread::spawn(move || {
            let mut editor = match DefaultEditor::new() {
                Ok(e) => Some(e),
                Err(e) => {
                    tracing::warn!(error = %e, "line editor unavailable; reading plain lines");
                    None
                }
            };
            if let (Some(ed), Some(h)) = (editor.as_mut(), history_file.as_ref()) {
                let _ = ed.load_history(h);
            }
            while let Some(req) = rx.blocking_recv() {
                let input = match editor.as_mut() {
                    Some(ed) => match ed.readline(&req.prompt) {
                        Ok(line) => {
                            if req.history && !line.trim().is_empty() {
                                let _ = ed.add_history_entry(line.as_str());
                                if let Some(h) = &history_file {
                                    let _ = ed.save_history(h);
                                }
                            }
                            Input::Line(line)
                        }
                        Err(ReadlineError::Interrupted) => Input::Interrupted,
                        Err(_) => Input::Eof,
                    },
                    None => read_plain(&req.prompt),
                };
                let _ = req.reply.send(input);
            }
        });
        Self { requests: tx }
    }

    /// Reads one line after showing `prompt`.
    pub async fn read_line(&self, prompt: &str, history: bool) -> Input {
        let (reply, rx) = oneshot::channel();
        if self.requests.send(Request { prompt: prompt.to_owned(), history, reply }).is_err() {
            return Input::Eof;
        }
        rx.await.unwrap_or(Input::Eof)
    }
}

fn read_plain(prompt: &str) -> Input {
    use std::io::{BufRead, Write};
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => Input::Eof,
        Ok(_) => Input::Line(line.trim_end_matches(['\n', '\r']).to_owned()),
    }
}

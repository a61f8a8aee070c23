//! The terminal's input, owned by one thread: the REPL and approval prompts both read lines
//! through it, so they never fight over stdin.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rustyline::error::ReadlineError;
use rustyline::{
    Cmd, ConditionalEventHandler, DefaultEditor, Event, EventContext, EventHandler, KeyCode, KeyEvent,
    Modifiers, RepeatCount,
};
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
    /// Shift-Tab at a prompt read with [`Terminal::read_line_with_keys`]: the text typed so far.
    CycleMode(String),
}

struct Request {
    prompt: String,
    history: bool,
    /// Shift-Tab ends the read with [`Input::CycleMode`].
    mode_key: bool,
    /// Text already on the line.
    initial: String,
    reply: oneshot::Sender<Input>,
}

/// Shift-Tab: remembers the line and interrupts the read, when the read asked for it.
#[derive(Default)]
struct ModeKey {
    armed: AtomicBool,
    pressed: AtomicBool,
    line: Mutex<String>,
}

struct ModeKeyHandler(Arc<ModeKey>);

impl ConditionalEventHandler for ModeKeyHandler {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext<'_>) -> Option<Cmd> {
        if !self.0.armed.load(Ordering::SeqCst) {
            return None;
        }
        *self.0.line.lock().unwrap_or_else(|p| p.into_inner()) = ctx.line().to_owned();
        self.0.pressed.store(true, Ordering::SeqCst);
        Some(Cmd::Interrupt)
    }
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
            let mode_key = Arc::new(ModeKey::default());
            if let Some(ed) = editor.as_mut() {
                ed.bind_sequence(
                    KeyEvent(KeyCode::BackTab, Modifiers::NONE),
                    EventHandler::Conditional(Box::new(ModeKeyHandler(mode_key.clone()))),
                );
            }
            while let Some(req) = rx.blocking_recv() {
                mode_key.armed.store(req.mode_key, Ordering::SeqCst);
                mode_key.pressed.store(false, Ordering::SeqCst);
                let input = match editor.as_mut() {
                    Some(ed) => match ed.readline_with_initial(&req.prompt, (&req.initial, "")) {
                        Ok(line) => {
                            if req.history && !line.trim().is_empty() {
                                let _ = ed.add_history_entry(line.as_str());
                                if let Some(h) = &history_file {
                                    let _ = ed.save_history(h);
                                }
                            }
                            Input::Line(line)
                        }
                        Err(ReadlineError::Interrupted) if mode_key.pressed.load(Ordering::SeqCst) => {
                            Input::CycleMode(std::mem::take(
                                &mut *mode_key.line.lock().unwrap_or_else(|p| p.into_inner()),
                            ))
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
        self.request(prompt, history, false, String::new()).await
    }

    /// Reads one line starting with `initial`; Shift-Tab ends it with [`Input::CycleMode`].
    pub async fn read_line_with_keys(&self, prompt: &str, initial: String) -> Input {
        self.request(prompt, true, true, initial).await
    }

    async fn request(&self, prompt: &str, history: bool, mode_key: bool, initial: String) -> Input {
        let (reply, rx) = oneshot::channel();
        let request = Request { prompt: prompt.to_owned(), history, mode_key, initial, reply };
        if self.requests.send(request).is_err() {
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

//! The status area of the terminal: a spinner with the elapsed time and how to interrupt,
//! drawn on stderr while Tackle waits (for the model, for a tool), and erased before anything
//! else is written. Everything that writes to the terminal during a turn goes through
//! [`Screen::write`], so the spinner never tears a line.

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const TICK: Duration = Duration::from_millis(100);

#[derive(Debug)]
struct Spinner {
    label: String,
    since: Instant,
}

#[derive(Debug, Default)]
struct State {
    /// Only a terminal gets a spinner.
    live: bool,
    spinner: Option<Spinner>,
    /// The spinner is on screen (the cursor is at the end of its line).
    drawn: bool,
    /// A prompt owns the terminal (an approval question): nothing is drawn.
    paused: bool,
    frame: usize,
}

/// Shared handle to the status area. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Screen {
    state: Arc<Mutex<State>>,
}

impl Screen {
    /// A screen with a live spinner when `live` (stderr is a terminal with colour allowed);
    /// otherwise spinners are silently skipped.
    pub fn new(live: bool) -> Self {
        let state = Arc::new(Mutex::new(State { live, ..State::default() }));
        if live {
            let weak = Arc::downgrade(&state);
            // The ticker ends by itself when the last handle is dropped.
            let _ = std::thread::Builder::new().name("tackle-spinner".into()).spawn(move || tick(weak));
        }
        Self { state }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Shows (or relabels) the spinner; the clock keeps running across relabels within a wait.
    pub fn spin(&self, label: &str) {
        let mut s = self.lock();
        match &mut s.spinner {
            Some(sp) => sp.label = label.to_owned(),
            None => s.spinner = Some(Spinner { label: label.to_owned(), since: Instant::now() }),
        }
        if s.live && !s.paused {
            draw(&mut s);
        }
    }

    /// Removes the spinner.
    pub fn stop(&self) {
        let mut s = self.lock();
        s.spinner = None;
        erase(&mut s);
    }

    /// Writes with the spinner out of the way, and draws it again after.
    pub fn write(&self, f: impl FnOnce()) {
        let mut s = self.lock();
        erase(&mut s);
        f();
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        if s.live && !s.paused && s.spinner.is_some() {
            draw(&mut s);
        }
    }

    /// Hands the terminal to a prompt until the guard is dropped.
    pub fn pause(&self) -> Paused<'_> {
        let mut s = self.lock();
        erase(&mut s);
        s.paused = true;
        Paused { screen: self }
    }
}

/// The terminal belongs to a prompt while this lives.
pub struct Paused<'a> {
    screen: &'a Screen,
}

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        let mut s = self.screen.lock();
        s.paused = false;
        if let Some(sp) = &mut s.spinner {
            // The wait for the person is not the model's time.
            sp.since = Instant::now();
        }
    }
}

fn erase(s: &mut State) {
    if s.drawn {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
        s.drawn = false;
    }
}

fn draw(s: &mut State) {
    let Some(sp) = &s.spinner else { return };
    let frame = FRAMES[s.frame % FRAMES.len()];
    let secs = sp.since.elapsed().as_secs_f64();
    let line = format!(
        "\r\x1b[2K\x1b[36m{frame}\x1b[0m {} \x1b[2m{secs:.1}s · Ctrl-C to interrupt\x1b[0m",
        sp.label
    );
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{line}");
    let _ = err.flush();
    s.drawn = true;
}

fn tick(state: Weak<Mutex<State>>) {
    loop {
        std::thread::sleep(TICK);
        let Some(state) = state.upgrade() else { return };
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        if s.spinner.is_some() && !s.paused {
            s.frame += 1;
            draw(&mut s);
        }
    }
}

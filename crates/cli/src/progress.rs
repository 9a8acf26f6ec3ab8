//! The progress bar long commands draw on standard error (`build`, `db build`, `db write`, `db
//! build-part`, `db commit`, `verify`, `db verify`, `db dump --salvage`): only when standard
//! error is a terminal and `--quiet` is not given. Nothing else changes with it: standard
//! output, and what a pipe or a file receives on standard error, are the same either way.

use std::cell::Cell;
use std::io::{self, IsTerminal};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often the bar is moved: every this many bytes of work.
const PROGRESS_STEP: u64 = 1 << 20;

/// A progress bar counting bytes on standard error, or nothing.
pub struct Progress {
    bar: Option<ProgressBar>,
    /// Position last shown.
    shown: Cell<u64>,
    /// Whether the bar has been drawn once.
    drawn: Cell<bool>,
}

impl Progress {
    /// A bar for work of `total` bytes, when standard error is a terminal and not `quiet`;
    /// none for work of unknown size (`None`, as a stream).
    pub fn new(total: Option<u64>, quiet: bool) -> Progress {
        let show = !quiet && io::stderr().is_terminal();
        let bar = total.filter(|_| show).map(|len| {
            let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template(
                "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        Progress {
            bar,
            shown: Cell::new(0),
            drawn: Cell::new(false),
        }
    }

    /// A bar for work whose size the first [`report`](Self::report) gives.
    pub fn counting(quiet: bool) -> Progress {
        Progress::new(Some(0), quiet)
    }

    /// Moves the bar to `position` bytes.
    pub fn update(&self, position: u64) {
        self.update_with(position, String::new);
    }

    /// Moves the bar to `position` bytes and shows what was done so far.
    pub fn update_with(&self, position: u64, done: impl FnOnce() -> String) {
        if let Some(bar) = &self.bar {
            if position.saturating_sub(self.shown.get()) >= PROGRESS_STEP || !self.drawn.get() {
                let message = done();
                if !message.is_empty() {
                    bar.set_message(message);
                }
                bar.set_position(position);
                self.shown.set(position);
                self.drawn.set(true);
            }
        }
    }

    /// Moves the bar to `done` bytes of `total`, as a progress callback of the database
    /// crate reports them; the first report draws the bar.
    pub fn report(&self, done: u64, total: u64) {
        if let Some(bar) = &self.bar {
            if bar.length() != Some(total) {
                bar.set_length(total);
            }
            self.update(done);
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    /// A command that fails leaves no bar above its error message.
    fn drop(&mut self) {
        self.finish();
    }
}

//! Removing the process's temporaries when it is told to end.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::remove_temporaries;

/// Makes SIGINT, SIGTERM and SIGHUP remove every registered temporary (see
/// [`remove_temporaries`]) and run `extra`, then end the process as the signal would have
/// ended it. The signals are handled on a thread of this function's own (`signal-hook`'s
/// iterator), where taking a lock and deleting files is safe.
///
/// # Errors
/// The error setting up the signal handling.
pub fn clean_up_on_signals(extra: impl Fn() + Send + 'static) -> io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("leveltable-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                ENDING.store(true, Ordering::SeqCst);
                remove_temporaries();
                extra();
                // Restores the default action and raises the signal again, so the shell
                // sees the process end by it; exit the conventional way if that fails.
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128_i32.saturating_add(signal));
            }
        })?;
    Ok(())
}

/// Set once a signal is being handled by [`clean_up_on_signals`]'s thread.
static ENDING: AtomicBool = AtomicBool::new(false);

/// Waits, never returning, while the process is ending by a signal that
/// [`clean_up_on_signals`] is handling; returns at once otherwise.
///
/// The removal of the temporaries makes the work still running on other threads fail (its
/// files are gone, and no new temporary may be made). Call this before reporting such an
/// error and exiting: the process then ends by the signal, as the caller's parent expects,
/// not with an error code and a message about a file the clean-up removed.
pub fn wait_if_ending_by_signal() {
    if ENDING.load(Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
}

/// Sets the returned flag when SIGINT, SIGTERM or SIGHUP arrives, instead of ending the
/// process: for a command that runs until it is told to stop, then ends as usual (flushing
/// its output, exit code 0). `signal-hook` sets the flag from the handler.
///
/// # Errors
/// The error setting up the signal handling.
pub fn stop_flag_on_signals() -> io::Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register(signal, std::sync::Arc::clone(&flag))?;
    }
    Ok(flag)
}

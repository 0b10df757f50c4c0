//! What happens when the user interrupts a run (Ctrl-C, SIGTERM): every registered cleanup
//! runs — a temporary output folder is removed, a calibration schema dropped — and the process
//! exits with 130, saying what is true afterwards. One handler for the process, installed on
//! first use.
//!
//! Putting results in place and undoing them must never interleave: a cleanup that removes a
//! temporary folder while the commit exchanges it into place would delete the new results
//! with the old. So a commit runs inside [`hold_off`]: an interrupt that arrives during it
//! waits for it to finish, and then reports the results as in place ([`note_done`]) rather
//! than undone; an interrupt that arrived before it stops it from starting.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};

/// A cleanup and what it tells the user it did.
type Entry = (u64, String, Arc<dyn Fn() + Send + Sync>);

static CLEANUPS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
/// What the run has finished for good ("the new results are in place in …"), told on an
/// interrupt after the commit.
static DONE: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Held by a commit and by the handler: the two exclude each other.
static EXCLUSIVE: Mutex<()> = Mutex::new(());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
static HANDLER: Once = Once::new();
/// Set when the user interrupts: the handler is cleaning up and will exit the process.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// A registered cleanup; dropping it unregisters it (the work it undoes is done, or undone).
#[derive(Debug)]
pub struct Cleanup(u64);

impl Drop for Cleanup {
    fn drop(&mut self) {
        lock(&CLEANUPS).retain(|(id, _, _)| *id != self.0);
    }
}

/// Runs `cleanup` if the process is interrupted before the returned guard is dropped; `note`
/// says what it undid ("nothing was written").
pub fn on_interrupt(
    note: impl Into<String>,
    cleanup: impl Fn() + Send + Sync + 'static,
) -> Cleanup {
    install_handler();
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    lock(&CLEANUPS).push((id, note.into(), Arc::new(cleanup)));
    Cleanup(id)
}

/// Keeps interrupts out while it lives: an interrupt that arrives meanwhile waits, then runs
/// the cleanups still registered. Taken by a commit around the step that puts results in
/// place, together with dropping that output's [`Cleanup`] and calling [`note_done`].
#[derive(Debug)]
pub struct HoldOff(#[allow(dead_code)] MutexGuard<'static, ()>);

/// Starts a section no interrupt may cut into. When the user has interrupted already, never
/// returns: the handler is undoing the run and exits the process.
pub fn hold_off() -> HoldOff {
    let guard = lock(&EXCLUSIVE);
    if INTERRUPTED.load(Ordering::SeqCst) {
        drop(guard);
        // The handler, free to run now, undoes the run and exits the process.
        loop {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    HoldOff(guard)
}

/// Records what the run has finished for good, told if an interrupt comes later.
pub fn note_done(what: String) {
    lock(&DONE).push(what);
}

/// If the user interrupted, waits for the handler to finish its cleanups and exit with 130:
/// a run that fails or ends because its resources are being undone must not exit first
/// with another code.
pub fn wait_if_interrupted() {
    while INTERRUPTED.load(Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Whether the user has interrupted the run (the handler is undoing it).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// A lock that a panic elsewhere does not make unusable (the data are plain lists).
fn lock<T>(mutex: &'static Mutex<T>) -> MutexGuard<'static, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn run_cleanups_and_exit() {
    stop(None, 130);
}

/// Stops the run as an interrupt would — every registered cleanup runs, a commit in progress
/// first finishes — then prints `error: {reason}; ` and what is true, and exits with `code`.
/// For a run that must not go on (it passed its memory budget).
pub fn abort(reason: &str, code: i32) -> ! {
    install_handler();
    stop(Some(reason), code)
}

/// Installs the process's interrupt handler, once. If another handler is installed (a library
/// user's), it keeps its own behaviour.
fn install_handler() {
    HANDLER.call_once(|| {
        let _ = ctrlc::set_handler(run_cleanups_and_exit);
    });
}

fn stop(reason: Option<&str>, code: i32) -> ! {
    // Set before waiting, so the main thread, whatever it finishes meanwhile, waits for us.
    INTERRUPTED.store(true, Ordering::SeqCst);
    let _exclusive = lock(&EXCLUSIVE);
    let cleanups: Vec<Entry> = lock(&CLEANUPS).clone();
    let mut notes: Vec<String> = lock(&DONE).clone();
    for (_, note, cleanup) in &cleanups {
        cleanup();
        if !notes.contains(note) {
            notes.push(note.clone());
        }
    }
    let what = reason.unwrap_or("interrupted");
    let line = if notes.is_empty() {
        format!("error: {what}")
    } else {
        format!("error: {what}; {}", notes.join("; "))
    };
    crate::stdout::eprint_line(&line);
    std::process::exit(code);
}

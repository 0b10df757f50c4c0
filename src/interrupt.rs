//! What happens when the user interrupts a run (Ctrl-C, SIGTERM): every registered cleanup
//! runs — a temporary output folder is removed, a calibration schema dropped — and the process
//! exits with 130, saying what was undone. One handler for the process, installed on first use.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};

/// A cleanup and what it tells the user it did.
type Entry = (u64, &'static str, Arc<dyn Fn() + Send + Sync>);

static CLEANUPS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
static HANDLER: Once = Once::new();
/// Set when the user interrupts: the handler is cleaning up and will exit the process.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// A registered cleanup; dropping it unregisters it (the work it undoes is done, or undone).
#[derive(Debug)]
pub struct Cleanup(u64);

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Ok(mut cleanups) = CLEANUPS.lock() {
            cleanups.retain(|(id, _, _)| *id != self.0);
        }
    }
}

/// Runs `cleanup` if the process is interrupted before the returned guard is dropped; `note`
/// says what it undid ("nothing was written").
pub fn on_interrupt(note: &'static str, cleanup: impl Fn() + Send + Sync + 'static) -> Cleanup {
    HANDLER.call_once(|| {
        // If another handler is installed (a library user's), it keeps its own behaviour.
        let _ = ctrlc::set_handler(run_cleanups_and_exit);
    });
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut cleanups) = CLEANUPS.lock() {
        cleanups.push((id, note, Arc::new(cleanup)));
    }
    Cleanup(id)
}

/// If the user interrupted, waits for the handler to finish its cleanups and exit with 130:
/// a run that fails or ends because its resources are being undone must not exit first
/// with another code.
pub fn wait_if_interrupted() {
    while INTERRUPTED.load(Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn run_cleanups_and_exit() {
    INTERRUPTED.store(true, Ordering::SeqCst);
    let cleanups: Vec<Entry> = CLEANUPS.lock().map(|c| c.clone()).unwrap_or_default();
    let mut notes: Vec<&str> = Vec::new();
    for (_, note, cleanup) in &cleanups {
        cleanup();
        if !notes.contains(note) {
            notes.push(note);
        }
    }
    if notes.is_empty() {
        eprintln!("error: interrupted");
    } else {
        eprintln!("error: interrupted; {}", notes.join("; "));
    }
    std::process::exit(130);
}

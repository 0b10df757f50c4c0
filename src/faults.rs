//! Fault injection for the tests of what a signal or a kill at a precise moment leaves behind.
//! `SHARDSIM_FAULT=PLACE:SIGNAL` (for example `commit-exchanged:INT`, `staging-made:KILL`)
//! makes the process send itself `SIGNAL` (INT, TERM or KILL) when it reaches `PLACE` and, once
//! the interrupt handler has started, go on; unset (always, outside tests), [`at`] costs one
//! cached look-up. The places are named
//! where the code calls [`at`]; docs/testing.md lists them.

use std::sync::OnceLock;

/// The place and signal `SHARDSIM_FAULT` names, read once.
fn planned() -> Option<&'static (String, String)> {
    static PLAN: OnceLock<Option<(String, String)>> = OnceLock::new();
    PLAN.get_or_init(|| {
        let value = std::env::var("SHARDSIM_FAULT").ok()?;
        let (place, signal) = value.rsplit_once(':')?;
        Some((place.to_owned(), signal.to_owned()))
    })
    .as_ref()
}

/// Whether the plan names `place` with `what` (a fault that is not a signal, such as
/// `memory-watch:TIGHT`: the memory watch holds the run to 1 MiB).
pub fn planned_at(place: &str, what: &str) -> bool {
    planned().is_some_and(|(p, w)| p == place && w == what)
}

/// Sends the planned signal to this process if the plan names `place`.
pub fn at(place: &str) {
    if let Some((planned, signal)) = planned()
        && planned == place
    {
        raise(signal);
    }
}

#[cfg(target_os = "linux")]
fn raise(signal: &str) {
    use rustix::process::{Signal, getpid, kill_process};
    let signal = match signal {
        "INT" => Signal::INT,
        "TERM" => Signal::TERM,
        "KILL" => Signal::KILL,
        _ => return,
    };
    if kill_process(getpid(), signal).is_ok() {
        // The handler runs on its own thread: the place is "the signal has arrived" only
        // once it has started (it then waits for any commit in progress).
        for _ in 0..1000 {
            if crate::interrupt::interrupted() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn raise(_: &str) {}

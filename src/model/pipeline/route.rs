//! The chain of an update's work after its row's hold, built once from the machine: its CPU
//! on the shared cores (with `[cpu]`), the WAL flush that covers its commit (with `[wal]`),
//! then the commit. A new stage of the database's work is a [`Hop`], its place in
//! [`Route::of`], and its resource's file.

/// A stage of an update's work after its hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hop {
    /// A slice of CPU on one of the shared cores.
    Cpu,
    /// The WAL flush covering the commit.
    Flush,
    /// The commit: the row goes to the next waiter, the client gets its answer.
    Commit,
}

/// Which stage follows which, for one machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Route {
    /// The first stage after the hold.
    pub(crate) after_hold: Hop,
    /// The stage after the CPU (when there is a CPU stage).
    pub(crate) after_cpu: Hop,
}

impl Route {
    /// The route of a machine with (or without) shared cores and a WAL.
    pub(super) fn of(has_cpu: bool, has_wal: bool) -> Route {
        let after_cpu = if has_wal { Hop::Flush } else { Hop::Commit };
        Route {
            after_hold: if has_cpu { Hop::Cpu } else { after_cpu },
            after_cpu,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_route_skips_the_stages_a_machine_lacks() {
        let both = Route::of(true, true);
        assert_eq!((both.after_hold, both.after_cpu), (Hop::Cpu, Hop::Flush));
        assert_eq!(Route::of(false, true).after_hold, Hop::Flush);
        assert_eq!(Route::of(true, false).after_cpu, Hop::Commit);
        assert_eq!(Route::of(false, false).after_hold, Hop::Commit);
    }
}

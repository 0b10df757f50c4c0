//! The one schema calibration touches: `shardsim_calibration` (a database, on MariaDB and
//! MySQL), with a marker table saying shardsim made it and a table of counter rows `(post,
//! shard, count)`. A schema of that name without the marker is someone else's and is refused;
//! the schema is dropped at the end, on an error and on Ctrl-C. One calibration (or
//! validation) at a time holds the server's lock of that name while its schema exists, so a
//! second one on the same server is refused rather than dropping the first one's tables; a run
//! that was killed lets go of the lock with its connection, and its leftover is replaced.

use super::backend::{DbFailure, Ownership, SCHEMA, Session, Target};
use crate::interrupt::{self, Cleanup};

/// The schema while it exists: dropped when this is dropped (or the process interrupted).
pub struct OwnSchema {
    target: Target,
    dropped: bool,
    _on_interrupt: Cleanup,
    /// The connection holding the run's lock, closed after the schema is dropped.
    lock: Box<dyn Session>,
}

impl std::fmt::Debug for OwnSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnSchema")
            .field("target", &self.target)
            .field("dropped", &self.dropped)
            .finish_non_exhaustive()
    }
}

impl OwnSchema {
    /// Creates the schema with `rows` counter rows of post 1 (a leftover of an interrupted
    /// run of shardsim is replaced; a foreign schema of the same name is refused).
    pub fn create(target: &Target, rows: u32) -> Result<OwnSchema, DbFailure> {
        let mut session = target.connect()?;
        let fail = |message: String| target.failure(message);
        if !session.lock_the_run().map_err(fail)? {
            return Err(target.failure(format!(
                "another shardsim calibrate or validate is running on this server (it holds the lock {SCHEMA}): wait for it to finish"
            )));
        }
        match session.ownership().map_err(fail)? {
            Ownership::Absent => {}
            Ownership::Ours => session.drop_schema().map_err(fail)?,
            Ownership::Foreign => {
                return Err(target.failure(format!(
                    "a schema named {SCHEMA} exists and shardsim did not create it (no marker table): refusing to touch it; drop or rename it yourself"
                )));
            }
        }
        let on_interrupt = {
            let target = target.clone();
            interrupt::on_interrupt("the calibration schema was dropped", move || {
                if let Ok(mut session) = target.connect() {
                    let _ = drop_if_ours(session.as_mut());
                }
            })
        };
        // Made before the tables, so that tables made only in part are dropped too.
        let mut schema = OwnSchema {
            target: target.clone(),
            dropped: false,
            _on_interrupt: on_interrupt,
            lock: session,
        };
        schema.lock.create_schema(rows).map_err(fail)?;
        Ok(schema)
    }

    /// Drops the schema now.
    pub fn drop_now(mut self) -> Result<(), DbFailure> {
        self.dropped = true;
        let mut session = self.target.connect()?;
        drop_if_ours(session.as_mut()).map_err(|message| self.target.failure(message))
    }
}

impl Drop for OwnSchema {
    fn drop(&mut self) {
        if !self.dropped
            && let Ok(mut session) = self.target.connect()
        {
            let _ = drop_if_ours(session.as_mut());
        }
    }
}

/// Drops the schema if it is shardsim's (never someone else's).
fn drop_if_ours(session: &mut dyn Session) -> Result<(), String> {
    if session.ownership()? == Ownership::Ours {
        session.drop_schema()?;
    }
    Ok(())
}

//! The one schema calibration touches: `shardsim_calibration` (a database, on MariaDB and
//! MySQL), with a marker table saying shardsim made it and a table of counter rows `(post,
//! shard, count)`. A schema of that name without the marker is someone else's and is refused;
//! the schema is dropped at the end, on an error and on Ctrl-C.

use super::backend::{DbFailure, Ownership, SCHEMA, Session, Target};
use crate::interrupt::{self, Cleanup};

/// The schema while it exists: dropped when this is dropped (or the process interrupted).
#[derive(Debug)]
pub struct OwnSchema {
    target: Target,
    dropped: bool,
    _on_interrupt: Cleanup,
}

impl OwnSchema {
    /// Creates the schema with `rows` counter rows of post 1 (a leftover of an interrupted
    /// run of shardsim is replaced; a foreign schema of the same name is refused).
    pub fn create(target: &Target, rows: u32) -> Result<OwnSchema, DbFailure> {
        let mut session = target.connect()?;
        let fail = |message: String| target.failure(message);
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
        let schema = OwnSchema {
            target: target.clone(),
            dropped: false,
            _on_interrupt: on_interrupt,
        };
        session.create_schema(rows).map_err(fail)?;
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

//! The one schema calibration touches: `shardsim_calibration`, with a marker table saying
//! shardsim made it and a table of counter rows `(post, shard, count)`. A schema of that name
//! without the marker is someone else's and is refused; the schema is dropped at the end, on
//! an error and on Ctrl-C.

use postgres::Client;

use super::conn::{DbFailure, Target};
use crate::interrupt::{self, Cleanup};

/// The schema's name.
pub const SCHEMA: &str = "shardsim_calibration";
/// The counter rows' table, qualified.
pub const COUNTERS: &str = "shardsim_calibration.counters";
/// What the marker table holds.
const MARK: &str = "created by shardsim calibrate; dropped when it ends";

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
        let mut client = target.connect()?;
        let fail = |err: postgres::Error| target.failure(&err);
        match ownership(&mut client).map_err(fail)? {
            Ownership::Absent => {}
            Ownership::Ours => drop_schema(&mut client).map_err(fail)?,
            Ownership::Foreign => {
                return Err(DbFailure {
                    target: target.shown().to_owned(),
                    message: format!(
                        "a schema named {SCHEMA} exists and shardsim did not create it (no marker table): refusing to touch it; drop or rename it yourself"
                    ),
                });
            }
        }
        let on_interrupt = {
            let target = target.clone();
            interrupt::on_interrupt("the calibration schema was dropped", move || {
                if let Ok(mut client) = target.connect() {
                    let _ = drop_schema(&mut client);
                }
            })
        };
        let schema = OwnSchema {
            target: target.clone(),
            dropped: false,
            _on_interrupt: on_interrupt,
        };
        client
            .batch_execute(&format!(
                "CREATE SCHEMA {SCHEMA};
                 CREATE TABLE {SCHEMA}.shardsim_marker (note text NOT NULL);
                 INSERT INTO {SCHEMA}.shardsim_marker VALUES ('{MARK}');
                 CREATE TABLE {COUNTERS} (post int NOT NULL, shard int NOT NULL,
                     count bigint NOT NULL DEFAULT 0, PRIMARY KEY (post, shard));
                 INSERT INTO {COUNTERS} (post, shard) SELECT 1, s FROM generate_series(0, {}) AS s;",
                rows.max(1) - 1
            ))
            .map_err(fail)?;
        Ok(schema)
    }

    /// Drops the schema now.
    pub fn drop_now(mut self) -> Result<(), DbFailure> {
        self.dropped = true;
        let mut client = self.target.connect()?;
        drop_schema(&mut client).map_err(|err| self.target.failure(&err))
    }
}

impl Drop for OwnSchema {
    fn drop(&mut self) {
        if !self.dropped
            && let Ok(mut client) = self.target.connect()
        {
            let _ = drop_schema(&mut client);
        }
    }
}

/// Whose the schema of that name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// There is none.
    Absent,
    /// Shardsim's (it has the marker).
    Ours,
    /// Someone else's.
    Foreign,
}

/// Whether the schema exists and is shardsim's.
pub fn ownership(client: &mut Client) -> Result<Ownership, postgres::Error> {
    let exists: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
            &[&SCHEMA],
        )?
        .get(0);
    if !exists {
        return Ok(Ownership::Absent);
    }
    let marked: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'shardsim_marker')",
            &[&SCHEMA],
        )?
        .get(0);
    Ok(if marked {
        Ownership::Ours
    } else {
        Ownership::Foreign
    })
}

/// Drops the schema if it is shardsim's (never someone else's).
fn drop_schema(client: &mut Client) -> Result<(), postgres::Error> {
    if ownership(client)? == Ownership::Ours {
        client.batch_execute(&format!("DROP SCHEMA {SCHEMA} CASCADE"))?;
    }
    Ok(())
}

//! `events.csv`: every increment with its row, start, wait and hold, for small traces and for
//! explaining a single wait. Each shard count streams its rows into its own part file while
//! the engines run; [`merge_parts`] joins them in shard-count order under one header.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::model::{Arrival, Grant, KeyCounts, NO_USER, Observer};
use crate::scenario::Scenario;
use crate::time::fmt_ms;

/// The columns of `events.csv`, in order.
pub const EVENT_COLUMNS: [&str; 9] = [
    "shards",
    "t_ms",
    "key",
    "user",
    "slot",
    "start_ms",
    "wait_ms",
    "hold_ms",
    "key_count",
];

/// An observer writing one shard count's increments as CSV rows (no header).
#[derive(Debug)]
pub struct EventLog<'a> {
    writer: csv::Writer<BufWriter<File>>,
    scenario: &'a Scenario,
    /// The policy, written first when a run compares several.
    policy: Option<String>,
    shards: String,
    error: Option<io::Error>,
}

impl<'a> EventLog<'a> {
    /// Creates the part file at `path` for the variant labelled `shards` (a shard count, or
    /// `adaptive`) of `policy`, named in a first column when the run compares policies.
    pub fn create(
        path: &Path,
        scenario: &'a Scenario,
        policy: crate::model::Policy,
        shards: &str,
    ) -> io::Result<Self> {
        let file = File::create(path)?;
        Ok(EventLog {
            writer: csv::Writer::from_writer(BufWriter::new(file)),
            scenario,
            policy: scenario.compares_policies().then(|| policy.to_string()),
            shards: shards.to_owned(),
            error: None,
        })
    }

    /// Flushes the part file, reporting the first write error.
    pub fn close(mut self) -> io::Result<()> {
        if let Some(err) = self.error.take() {
            return Err(err);
        }
        self.writer.flush()
    }
}

impl Observer for EventLog<'_> {
    fn on_increment(&mut self, arrival: &Arrival, grant: &Grant, rows: &dyn KeyCounts) {
        if self.error.is_some() {
            return;
        }
        let user = if arrival.user == NO_USER {
            String::new()
        } else {
            arrival.user.to_string()
        };
        let policy = self.policy.iter().cloned();
        let record = policy.chain([
            self.shards.clone(),
            fmt_ms(arrival.at),
            self.scenario.key_name(arrival.key).into_owned(),
            user,
            grant.slot.to_string(),
            fmt_ms(grant.start),
            fmt_ms(grant.start - arrival.at),
            fmt_ms(arrival.hold),
            rows.total(arrival.key).to_string(),
        ]);
        if let Err(err) = self.writer.write_record(record) {
            self.error = Some(err.into());
        }
    }
}

/// Writes `target` as the header (with a first `policy` column when the run compares
/// policies) followed by every part in order, deleting the parts.
pub fn merge_parts(target: &Path, parts: &[PathBuf], with_policy: bool) -> io::Result<()> {
    let mut out = BufWriter::new(File::create(target)?);
    if with_policy {
        write!(out, "policy,")?;
    }
    writeln!(out, "{}", EVENT_COLUMNS.join(","))?;
    for part in parts {
        io::copy(&mut File::open(part)?, &mut out)?;
        std::fs::remove_file(part)?;
    }
    out.flush()
}

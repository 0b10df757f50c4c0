//! Which of `summary.csv`'s columns a run writes: each column belongs to a feature (the
//! replications' intervals, the clients, batching, the pool, many keys, reads, responses, the
//! machine, its WAL, skip-locked, the likes table, stalls), and a feature's columns are written
//! only when the run has the feature. A column of a feature the run has is written even where
//! its value is undefined (an empty cell): its absence would say the feature is missing.

use super::summary::SummaryRow;

/// A feature of a run that brings its own columns to `summary.csv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// Every run: the rows' load, waits, backlog and burst.
    Always,
    /// Two replications or more: the 95% intervals of the waits.
    Intervals,
    /// Likes counted by clients or batching app servers.
    Likes,
    /// `[client]` timeouts and retries.
    Clients,
    /// `[batching]`.
    Batching,
    /// `[pool]`.
    Pool,
    /// `[[neighbours]]` on the pool.
    Neighbours,
    /// More than one key, or adaptive rows.
    Keys,
    /// `[reads]`.
    Reads,
    /// Responses as the client sees them: a closed loop, or open arrivals on a machine.
    Responses,
    /// A closed loop (`[arrivals] clients`).
    ClosedLoop,
    /// `[machine]`.
    Machine,
    /// `[wal]` on the machine.
    Wal,
    /// `skip-locked`.
    SkipLocked,
    /// `[likes_table]`.
    LikesTable,
    /// `[stalls]`.
    Stalls,
    /// An open stream on a machine probed for metastable points ([`crate::stability`]).
    Stability,
    /// A closed loop on a machine: its knee ([`crate::stability::knee`]).
    Knee,
    /// A calibration's band: the run simulated at its ends ([`super::band`]).
    Band,
}

impl Feature {
    /// Every feature with columns of its own.
    pub const WITH_COLUMNS: [Feature; 18] = [
        Feature::Intervals,
        Feature::Likes,
        Feature::Clients,
        Feature::Batching,
        Feature::Pool,
        Feature::Neighbours,
        Feature::Keys,
        Feature::Reads,
        Feature::Responses,
        Feature::ClosedLoop,
        Feature::Machine,
        Feature::Wal,
        Feature::SkipLocked,
        Feature::LikesTable,
        Feature::Stalls,
        Feature::Stability,
        Feature::Knee,
        Feature::Band,
    ];

    /// The feature's name, as docs/outputs.md's table of features names it.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Always => "every run",
            Feature::Intervals => "intervals",
            Feature::Likes => "likes",
            Feature::Clients => "clients",
            Feature::Batching => "batching",
            Feature::Pool => "pool",
            Feature::Neighbours => "neighbours",
            Feature::Keys => "keys",
            Feature::Reads => "reads",
            Feature::Responses => "responses",
            Feature::ClosedLoop => "closed loop",
            Feature::Machine => "machine",
            Feature::Wal => "WAL",
            Feature::SkipLocked => "skip-locked",
            Feature::LikesTable => "likes table",
            Feature::Stalls => "stalls",
            Feature::Stability => "stability",
            Feature::Knee => "client knee",
            Feature::Band => "calibration band",
        }
    }

    /// The feature `column` of `summary.csv` belongs to.
    pub fn of(column: &str) -> Feature {
        use Feature::*;
        match column {
            _ if column.starts_with("wait_")
                && (column.ends_with("_lo") || column.ends_with("_hi")) =>
            {
                Intervals
            }
            "likes" | "likes_per_s" | "pending_likes" => Likes,
            "attempts" | "attempts_per_s" | "amplification" | "timeouts" | "user_failures"
            | "succeeded" | "duplicates" | "count_drift" | "goodput_per_s" => Clients,
            "db_writes" | "db_writes_per_s" | "lost_likes" | "at_risk_mean" | "at_risk_max"
            | "count_delay_p50_ms" | "count_delay_p99_ms" | "count_delay_max_ms" => Batching,
            "like_connection_wait_p99_ms" => Pool,
            "neighbour_wait_mean_ms" | "neighbour_wait_p99_ms" => Neighbours,
            "hot_key_share" | "mode" | "rows_total" | "max_key_rows" => Keys,
            "read_requests_per_s"
            | "rows_read_per_s"
            | "rows_per_read"
            | "cache_hit_ratio"
            | "staleness_mean_ms"
            | "staleness_p99_ms"
            | "staleness_likes_mean"
            | "staleness_likes_p99"
            | "read_lock_wait_p99_ms" => Reads,
            "response_mean_ms" | "response_p50_ms" | "response_p99_ms" | "response_p999_ms" => {
                Responses
            }
            "clients" => ClosedLoop,
            "cpu_utilization" | "bottleneck" => Machine,
            "fsyncs_per_commit" => Wal,
            "tries_per_update" => SkipLocked,
            "stalls" | "stalled_s" | "wait_p99_without_stalls_ms" => Stalls,
            "stability"
            | "advertised_capacity_per_s"
            | "hidden_capacity_per_s"
            | "trigger"
            | "recovery_s" => Stability,
            "best_clients" | "best_clients_per_s" => Knee,
            "throughput_band_lo_per_s"
            | "throughput_band_hi_per_s"
            | "response_p99_band_lo_ms"
            | "response_p99_band_hi_ms"
            | "band_coverage" => Band,
            _ if LIKES_TABLE.contains(&column) => LikesTable,
            _ => Always,
        }
    }

    /// Whether any of `rows` has the feature.
    pub fn in_any(self, rows: &[SummaryRow]) -> bool {
        rows.iter().any(|row| self.in_row(row))
    }

    /// Whether `row`'s run has the feature.
    fn in_row(self, row: &SummaryRow) -> bool {
        let extended = row.extended.as_ref();
        let machine = row.machine.as_ref();
        match self {
            Feature::Always => true,
            Feature::Intervals => row.waits_lo.is_some(),
            Feature::Likes => extended.is_some_and(|e| e.client.is_some() || e.batching.is_some()),
            Feature::Clients => extended.is_some_and(|e| e.client.is_some()),
            Feature::Batching => extended.is_some_and(|e| e.batching.is_some()),
            Feature::Pool => extended.is_some_and(|e| e.pool.is_some()),
            Feature::Neighbours => {
                extended.is_some_and(|e| e.pool.as_ref().is_some_and(|p| !p.neighbours.is_empty()))
            }
            Feature::Keys => row.adaptive() || row.keys_touched > 1,
            Feature::Reads => extended.is_some_and(|e| e.reads.is_some()),
            Feature::Responses => {
                row.closed.is_some() || machine.is_some_and(|m| m.responses.is_some())
            }
            Feature::ClosedLoop => row.closed.is_some(),
            Feature::Machine => machine.is_some(),
            Feature::Wal => machine.is_some_and(|m| m.fsyncs_per_commit.is_some()),
            Feature::SkipLocked => row.tries_per_update.is_some(),
            Feature::LikesTable => row.likes.is_some(),
            Feature::Stalls => machine.is_some_and(|m| m.stalls.is_some()),
            Feature::Stability => row.stability().is_some(),
            Feature::Knee => row.knee().is_some(),
            Feature::Band => row.band.is_some(),
        }
    }
}

/// The likes table's columns.
const LIKES_TABLE: &[&str] = &[
    "likes_stored",
    "likes_counted",
    "repeats_rejected",
    "crashed_likes",
    "withdrawn_likes",
    "insert_wait_p50_ms",
    "insert_wait_p99_ms",
    "insert_wait_p999_ms",
    "hot_partition_share",
    "hot_partition_utilization",
    "like_latency_p50_ms",
    "like_latency_p99_ms",
    "drift_final",
    "drift_max",
    "reconciled_likes",
];

#[cfg(test)]
mod tests {
    use super::Feature;
    use crate::figures::record::SummaryRecord;

    /// docs/outputs.md's table of features: each feature's name and the columns it lists.
    fn documented() -> Vec<(String, Vec<String>)> {
        let text = include_str!("../../docs/outputs.md");
        let table = text
            .split("| feature | when | its columns |")
            .nth(1)
            .expect("docs/outputs.md has the table of features");
        table
            .lines()
            .skip(2)
            .take_while(|line| line.starts_with('|'))
            .map(|line| {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                let columns = cells[3]
                    .split('`')
                    .skip(1)
                    .step_by(2)
                    .map(str::to_owned)
                    .collect();
                (cells[1].to_owned(), columns)
            })
            .collect()
    }

    #[test]
    fn the_documented_table_of_features_lists_each_features_columns() {
        let documented = documented();
        let names: Vec<&str> = documented.iter().map(|(name, _)| name.as_str()).collect();
        let features: Vec<&str> = Feature::WITH_COLUMNS.iter().map(|f| f.name()).collect();
        assert_eq!(names, features);
        for (feature, (_, listed)) in Feature::WITH_COLUMNS.iter().zip(&documented) {
            let columns: Vec<&str> = SummaryRecord::COLUMNS
                .iter()
                .map(|&(name, _)| name)
                .filter(|name| Feature::of(name) == *feature)
                .collect();
            // The table names each column in backticks; a section (`[pool]`), a value
            // (`static`) or a column of every run (`wait_p99_ms`) in backticks is not one.
            let listed: Vec<&str> = listed
                .iter()
                .map(String::as_str)
                .filter(|name| SummaryRecord::COLUMNS.iter().any(|&(c, _)| c == *name))
                .filter(|name| Feature::of(name) != Feature::Always)
                .collect();
            assert_eq!(listed, columns, "the {} feature's columns", feature.name());
        }
    }
}

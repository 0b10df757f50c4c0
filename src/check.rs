//! Latency regression gates: a run's summary against a committed baseline, column by column.
//!
//! A column passes when `|new − old| ≤ max(abs, rel × |old|)`. Wait and backlog columns are
//! better lower, throughput and completions better higher; the columns that describe the
//! offered load and the capacity (arrivals, rates, ceiling, utilization) must not move at all
//! beyond tolerance, since a change there means the scenario or the model changed. Interval
//! bounds, the seed and other bookkeeping columns are not compared.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{InputError, clip};
use crate::figures::columns::Feature;
use crate::figures::record::SummaryRecord;
use crate::scenario::file::CheckTable;
use crate::stability::Stability;

/// Default relative tolerance.
pub const DEFAULT_REL: f64 = 0.05;
/// Default absolute tolerance of the millisecond columns.
pub const DEFAULT_ABS_MS: f64 = 0.05;
/// Default absolute tolerance of the count columns ([`COUNT_COLUMNS`]).
pub const DEFAULT_ABS_COUNT: f64 = 2.0;

/// Columns that count a few discrete things (queued updates, failures, lost likes), where a
/// relative tolerance alone would call a move of one a large change.
pub const COUNT_COLUMNS: [&str; 5] = [
    "backlog_max",
    "backlog_final",
    "user_failures",
    "count_drift",
    "lost_likes",
];

// Which way a column may move: declared beside each column, in [`SummaryRecord`].
pub use crate::figures::record::Check as Direction;

/// The compared columns of `summary.csv`, in column order, with their directions. A
/// feature's columns are missing (or, in an older baseline, empty) for scenarios without the
/// feature, and compared when set.
pub fn compared() -> impl Iterator<Item = (&'static str, Direction)> + Clone {
    SummaryRecord::COLUMNS
        .iter()
        .copied()
        .filter(|&(_, check)| check != Direction::Unchecked)
}

/// The tolerances given on the command line (each overrides the scenario's `[check]`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Flags {
    /// `--rel`.
    pub(crate) rel: Option<f64>,
    /// `--abs-ms`.
    pub(crate) abs_ms: Option<f64>,
    /// `--abs-count`.
    pub(crate) abs_count: Option<f64>,
}

/// How far each column may move.
#[derive(Debug, Clone, PartialEq)]
pub struct Tolerances {
    rel: f64,
    abs_ms: f64,
    abs_count: f64,
    columns: BTreeMap<String, (Option<f64>, Option<f64>)>,
}

impl Tolerances {
    /// Tolerances from the flags, then the scenario's `[check]`, then the defaults; names a
    /// per-column entry that is not a compared column.
    pub fn resolve(
        flags: Flags,
        table: &CheckTable,
        scenario: &Path,
    ) -> Result<Tolerances, InputError> {
        for (flag, value) in [
            ("--rel", flags.rel),
            ("--abs-ms", flags.abs_ms),
            ("--abs-count", flags.abs_count),
        ] {
            if let Some(v) = value.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                return Err(InputError::flag(
                    flag,
                    format!("must be a finite number ≥ 0, got {v}"),
                ));
            }
        }
        let mut columns = BTreeMap::new();
        for (name, limits) in table.columns.iter().flatten() {
            if !compared().any(|(column, _)| column == name) {
                let known: Vec<&str> = compared().map(|(c, _)| c).collect();
                return Err(InputError::scenario(
                    scenario,
                    format!("check.columns.{name}"),
                    format!("is not a compared column; allowed are {}", known.join(", ")),
                ));
            }
            columns.insert(name.clone(), (limits.rel, limits.abs));
        }
        Ok(Tolerances {
            rel: flags.rel.or(table.rel).unwrap_or(DEFAULT_REL),
            abs_ms: flags.abs_ms.or(table.abs_ms).unwrap_or(DEFAULT_ABS_MS),
            abs_count: flags
                .abs_count
                .or(table.abs_count)
                .unwrap_or(DEFAULT_ABS_COUNT),
            columns,
        })
    }

    /// The largest allowed move of `column` from `old`.
    pub fn limit(&self, column: &str, old: f64) -> f64 {
        let (rel, abs) = self.columns.get(column).copied().unwrap_or((None, None));
        let default_abs = if column.ends_with("_ms") {
            self.abs_ms
        } else if COUNT_COLUMNS.contains(&column) {
            self.abs_count
        } else {
            0.0
        };
        abs.unwrap_or(default_abs)
            .max(rel.unwrap_or(self.rel) * old.abs())
    }
}

/// What happened to one column of one shard count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Did not move at all.
    Unchanged,
    /// Moved, but within tolerance.
    Within,
    /// Moved the wrong way beyond tolerance.
    Regression,
    /// Moved the right way beyond tolerance.
    Improvement,
    /// A column with no better direction (the offered load, the capacity) moved beyond
    /// tolerance, or a behaviour was switched on or off: the scenario or the model changed.
    Changed,
}

impl Status {
    /// Whether the value moved beyond its tolerance (either way).
    pub fn is_beyond(self) -> bool {
        matches!(
            self,
            Status::Regression | Status::Improvement | Status::Changed
        )
    }
}

impl Status {
    /// The word shown in the diff table.
    pub fn label(self) -> &'static str {
        match self {
            Status::Unchanged => "unchanged",
            Status::Within => "within tolerance",
            Status::Regression => "REGRESSION",
            Status::Improvement => "improved",
            Status::Changed => "CHANGED",
        }
    }
}

/// One compared column of one shard count.
#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    /// The policy, when the summaries compare several.
    pub(crate) policy: Option<String>,
    /// The shard count.
    pub(crate) shards: u32,
    /// Whether it is the adaptive run.
    pub(crate) adaptive: bool,
    /// The column.
    pub(crate) column: &'static str,
    /// The baseline's value (`None`: empty, the behaviour was off).
    pub(crate) old: Option<f64>,
    /// This run's value (`None`: empty).
    pub(crate) new: Option<f64>,
    /// The largest allowed move.
    pub(crate) limit: f64,
    /// The verdict.
    pub(crate) status: Status,
}

/// A row of a summary: its policy (empty in a summary without the column; led by the
/// configuration's `field=value`s in a sweep's), its shard count and whether it is the
/// adaptive run.
pub type RowId = (String, u32, bool);

/// A parsed summary: per row, the compared columns' values (`None` where empty).
pub type Summary = BTreeMap<RowId, BTreeMap<&'static str, Option<f64>>>;

/// Parses a summary CSV (a baseline or this run's), naming the file and line of any problem.
/// `swept` names the columns that tell a sweep's configurations apart (the sweep's fields);
/// every column is found by name, so a baseline whose columns were reordered reads the same.
pub fn parse_summary(path: &Path, text: &str, swept: &[String]) -> Result<Summary, InputError> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader
        .headers()
        .map_err(|err| InputError::trace(path, 1, format!("malformed CSV header: {err}")))?
        .clone();
    let columns = Columns::find(path, &header, swept)?;
    let mut summary = Summary::new();
    for (number, record) in reader.records().enumerate() {
        let line = number as u64 + 2;
        let record =
            record.map_err(|err| InputError::trace(path, line, format!("malformed CSV: {err}")))?;
        let (id, values) = columns.read_row(path, line, &record, swept)?;
        if summary.insert(id.clone(), values).is_some() {
            return Err(InputError::trace(
                path,
                line,
                format!(
                    "shard count {} of policy {:?} appears twice",
                    id.1,
                    clip(&id.0)
                ),
            ));
        }
    }
    Ok(summary)
}

/// The columns of a baseline's `baseline_header` that this run's `current_header` does not
/// have: a feature's columns an older baseline wrote empty for a scenario without the feature
/// (`check` reads them as empty, and says which it ignored).
pub fn ignored_columns(baseline_header: &str, current_header: &str) -> Vec<String> {
    let current: Vec<&str> = current_header.split(',').collect();
    baseline_header
        .split(',')
        .filter(|column| !current.contains(column))
        .map(str::to_owned)
        .collect()
}

/// Where a summary's columns are: the row's identity and every compared column.
struct Columns {
    mode: Option<usize>,
    policy: Option<usize>,
    swept: Vec<usize>,
    shards: usize,
    /// Each compared column's position ([`usize::MAX`]: a feature's column the summary does
    /// not have, read as empty).
    compared: Vec<(&'static str, usize)>,
}

impl Columns {
    /// Finds the columns in `header`, each by name, refusing a repeated one.
    fn find(
        path: &Path,
        header: &csv::StringRecord,
        swept: &[String],
    ) -> Result<Columns, InputError> {
        let at_line_1 = |message: String| InputError::trace(path, 1, message);
        // A swept field may also be a column of its own (a sweep over `policy`).
        for (at, column) in header.iter().enumerate() {
            let repeated = header.iter().take(at).any(|earlier| earlier == column);
            if repeated && !swept.iter().any(|field| field == column) {
                return Err(at_line_1(format!(
                    "the header names the column {:?} twice: each column once",
                    clip(column)
                )));
            }
        }
        let index = |column: &str| header.iter().position(|h| h == column);
        let swept = swept
            .iter()
            .map(|field| {
                index(field).ok_or_else(|| at_line_1(format!(
                    "the header has no {:?} column, which this sweep varies; regenerate the baseline with --update",
                    clip(field)
                )))
            })
            .collect::<Result<Vec<usize>, InputError>>()?;
        let shards = index("shards").ok_or_else(|| {
            at_line_1("the header has no shards column: is this a summary.csv?".into())
        })?;
        let mut compared = Vec::new();
        for (column, _) in self::compared() {
            // A feature's column is written only when the run has the feature: missing with
            // every other column of its feature, it reads as empty, as an older baseline's
            // empty column does. Missing beside the others, the baseline was cut.
            let feature = Feature::of(column);
            let has_feature = || {
                SummaryRecord::COLUMNS
                    .iter()
                    .any(|&(other, _)| Feature::of(other) == feature && index(other).is_some())
            };
            let at = match index(column) {
                Some(at) => at,
                None if feature != Feature::Always && !has_feature() => usize::MAX,
                None => {
                    return Err(at_line_1(format!(
                        "the header has no {column} column{}; regenerate the baseline with --update",
                        if feature == Feature::Always {
                            String::new()
                        } else {
                            format!(
                                " though it has the other columns of the {} feature",
                                feature.name()
                            )
                        }
                    )));
                }
            };
            compared.push((column, at));
        }
        Ok(Columns {
            mode: index("mode"),
            policy: index("policy"),
            swept,
            shards,
            compared,
        })
    }

    /// One row's identity and compared values (`None` where empty).
    fn read_row(
        &self,
        path: &Path,
        line: u64,
        record: &csv::StringRecord,
        swept: &[String],
    ) -> Result<(RowId, BTreeMap<&'static str, Option<f64>>), InputError> {
        let field = |at: usize| record.get(at).unwrap_or_default();
        let shards: u32 = field(self.shards).parse().map_err(|_| {
            InputError::trace(
                path,
                line,
                format!("shards {:?} is not a shard count", clip(field(self.shards))),
            )
        })?;
        let mut values = BTreeMap::new();
        for &(column, at) in &self.compared {
            let text = field(at);
            let value = if text.is_empty() {
                None
            } else {
                let number = match column {
                    // A stability is compared by its rank: stable, metastable, collapsed.
                    "stability" => Stability::from_name(text).map(|s| f64::from(s.rank())),
                    _ => text.parse::<f64>().ok().filter(|v| v.is_finite()),
                };
                Some(number.ok_or_else(|| {
                    InputError::trace(
                        path,
                        line,
                        match column {
                            "stability" => format!(
                                "stability {:?} is not one of stable, metastable, collapsed",
                                clip(text)
                            ),
                            _ => format!(
                                "{column} {:?} is not a finite number (an undefined figure is an empty cell)",
                                clip(text)
                            ),
                        },
                    )
                })?)
            };
            values.insert(column, value);
        }
        let adaptive = self.mode.is_some_and(|at| field(at) == "adaptive");
        let mut policy = self
            .policy
            .map_or_else(String::new, |at| field(at).to_owned());
        if !swept.is_empty() {
            let configuration: Vec<String> = swept
                .iter()
                .zip(&self.swept)
                .map(|(name, &at)| format!("{name}={}", field(at)))
                .collect();
            policy = format!("{} {policy}", configuration.join(" "));
        }
        Ok(((policy, shards, adaptive), values))
    }
}

/// Compares this run with the baseline; both must cover the same shard counts.
pub fn compare(
    baseline_path: &Path,
    baseline: &Summary,
    current: &Summary,
    tolerances: &Tolerances,
) -> Result<Vec<Move>, InputError> {
    let several = |summary: &Summary| {
        let first = summary.keys().next().map(|id| &id.0);
        summary.keys().any(|id| Some(&id.0) != first)
    };
    let compares = several(baseline) || several(current);
    if baseline.keys().ne(current.keys()) {
        let message = mismatch(baseline, current, compares);
        return Err(InputError::file(baseline_path, message));
    }
    let mut moves = Vec::new();
    for (id, values) in current {
        let policy = compares.then(|| id.0.clone());
        for (column, direction) in compared() {
            let (old, new) = (baseline[id][column], values[column]);
            if old.is_none() && new.is_none() {
                continue;
            }
            let (status, limit) = judge(column, direction, old, new, tolerances);
            moves.push(Move {
                policy: policy.clone(),
                shards: id.1,
                adaptive: id.2,
                column,
                old,
                new,
                limit,
                status,
            });
        }
    }
    Ok(moves)
}

/// How a column moved from `old` to `new`, and the tolerance it was judged by. A value that
/// appears or disappears is a change of scenario (a behaviour was switched on or off).
fn judge(
    column: &str,
    direction: Direction,
    old: Option<f64>,
    new: Option<f64>,
    tolerances: &Tolerances,
) -> (Status, f64) {
    let (Some(before), Some(after)) = (old, new) else {
        return (Status::Changed, 0.0);
    };
    let limit = tolerances.limit(column, before);
    let beyond = (after - before).abs() > limit;
    let worse = match direction {
        Direction::LowerIsBetter => Some(after > before),
        Direction::HigherIsBetter => Some(after < before),
        Direction::Fixed | Direction::Unchecked => None,
    };
    let status = match (beyond, worse) {
        _ if before == after => Status::Unchanged,
        (false, _) => Status::Within,
        (true, Some(true)) => Status::Regression,
        (true, Some(false)) => Status::Improvement,
        (true, None) => Status::Changed,
    };
    (status, limit)
}

/// Why a baseline and this run cover different rows: another policy, none named, or other
/// shard counts.
fn mismatch(baseline: &Summary, current: &Summary, compares: bool) -> String {
    let label = |(policy, shards, adaptive): &RowId| {
        let row = crate::model::Rows::of(*shards, *adaptive).to_string();
        if compares {
            format!("{policy} {row}")
        } else {
            row
        }
    };
    let names = |summary: &Summary| -> String {
        summary
            .keys()
            .map(label)
            .collect::<Vec<String>>()
            .join(", ")
    };
    let policies = |summary: &Summary| -> Vec<String> {
        let mut policies: Vec<String> = summary.keys().map(|id| id.0.clone()).collect();
        policies.dedup();
        policies
    };
    let (old, new) = (names(baseline), names(current));
    if old == new && policies(baseline) == [String::new()] {
        format!(
            "names no policy (its policy column is missing or empty) but the run is for {:?}; regenerate the baseline with --update",
            clip(&policies(current).join(","))
        )
    } else if old == new {
        format!(
            "is for policy {:?} but the run is for {:?}; pass the baseline's --policy, or --update the baseline",
            clip(&policies(baseline).join(",")),
            clip(&policies(current).join(","))
        )
    } else {
        format!(
            "has shard counts [{}] but the run has [{}]; compare like with like or --update the baseline",
            clip(&old),
            clip(&new)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tolerances() -> Tolerances {
        Tolerances::resolve(
            Flags::default(),
            &CheckTable::default(),
            Path::new("t.toml"),
        )
        .unwrap()
    }

    #[test]
    fn limits_take_the_larger_of_absolute_and_relative() {
        let t = tolerances();
        assert_eq!(t.limit("wait_p99_ms", 0.1), 0.05);
        assert!((t.limit("wait_p99_ms", 10.0) - 0.5).abs() < 1e-12);
        assert_eq!(t.limit("backlog_max", 0.0), DEFAULT_ABS_COUNT);
        assert_eq!(
            t.limit("throughput_per_s", 0.0),
            0.0,
            "no absolute slack outside the ms and count columns"
        );
    }

    #[test]
    fn classifies_moves_by_direction() {
        let row = |p99: f64, throughput: f64, arrivals: f64| {
            let mut values: BTreeMap<&'static str, Option<f64>> =
                compared().map(|(c, _)| (c, Some(1.0))).collect();
            values.insert("wait_p99_ms", Some(p99));
            values.insert("throughput_per_s", Some(throughput));
            values.insert("arrivals", Some(arrivals));
            Summary::from([((String::new(), 4, false), values)])
        };
        let baseline = row(10.0, 100.0, 1000.0);
        let t = tolerances();
        let status = |current: &Summary, column: &str| {
            compare(Path::new("b.csv"), &baseline, current, &t)
                .unwrap()
                .into_iter()
                .find(|m| m.column == column)
                .map(|m| m.status)
        };
        assert_eq!(
            status(&row(10.4, 100.0, 1000.0), "wait_p99_ms"),
            Some(Status::Within)
        );
        assert_eq!(
            status(&row(10.6, 100.0, 1000.0), "wait_p99_ms"),
            Some(Status::Regression)
        );
        assert_eq!(
            status(&row(9.0, 100.0, 1000.0), "wait_p99_ms"),
            Some(Status::Improvement)
        );
        assert_eq!(
            status(&row(10.0, 90.0, 1000.0), "throughput_per_s"),
            Some(Status::Regression)
        );
        assert_eq!(
            status(&row(10.0, 100.0, 900.0), "arrivals"),
            Some(Status::Changed),
            "the offered load has no better direction"
        );
        assert_eq!(
            status(&row(10.0, 100.0, 1000.0), "wait_p99_ms"),
            Some(Status::Unchanged)
        );
    }

    #[test]
    fn rejects_a_baseline_with_other_shard_counts() {
        let summary =
            |shards: u32| Summary::from([((String::new(), shards, false), BTreeMap::new())]);
        let err = compare(Path::new("b.csv"), &summary(4), &summary(8), &tolerances()).unwrap_err();
        assert!(err.to_string().contains("[4] but the run has [8]"));
    }

    #[test]
    fn a_baseline_of_another_policy_is_refused_naming_both() {
        let summary =
            |policy: &str| Summary::from([((policy.to_owned(), 4, false), BTreeMap::new())]);
        let err = compare(
            Path::new("b.csv"),
            &summary("random"),
            &summary("earliest-free"),
            &tolerances(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("\"random\"")
                && err.contains("\"earliest-free\"")
                && err.contains("--policy"),
            "{err}"
        );
    }

    fn summary_text(columns: &[&str], row: impl Fn(&str) -> String) -> String {
        let values: Vec<String> = columns.iter().map(|c| row(c)).collect();
        format!("{}\n{}\n", columns.join(","), values.join(","))
    }

    #[test]
    fn reordered_columns_read_the_same_and_a_repeated_column_is_refused() {
        let mut columns: Vec<&str> = vec!["hold.ms", "scenario", "policy", "shards"];
        columns.extend(compared().map(|(c, _)| c));
        let cell = |c: &str| match c {
            "hold.ms" => "0.5".to_owned(),
            "scenario" => "s".to_owned(),
            "policy" => "random".to_owned(),
            "shards" => "4".to_owned(),
            "wait_p99_ms" => "7.5".to_owned(),
            "stability" => "stable".to_owned(),
            _ => "1".to_owned(),
        };
        let swept = vec!["hold.ms".to_owned()];
        let text = summary_text(&columns, cell);
        let parsed = parse_summary(Path::new("b.csv"), &text, &swept).unwrap();
        let mut reordered = columns.clone();
        reordered.reverse();
        let again = parse_summary(Path::new("b.csv"), &summary_text(&reordered, cell), &swept);
        assert_eq!(again.unwrap(), parsed);
        let key = ("hold.ms=0.5 random".to_owned(), 4, false);
        assert_eq!(parsed[&key]["wait_p99_ms"], Some(7.5));
        let mut repeated = columns.clone();
        repeated.push("wait_p99_ms");
        let err = parse_summary(Path::new("b.csv"), &summary_text(&repeated, cell), &swept)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 1") && err.contains("\"wait_p99_ms\" twice"),
            "{err}"
        );
    }
}

#[cfg(test)]
mod count_tests {
    use super::*;

    #[test]
    fn a_backlog_of_three_against_two_is_within_tolerance() {
        let t = Tolerances::resolve(
            Flags::default(),
            &CheckTable::default(),
            Path::new("t.toml"),
        )
        .unwrap();
        let summary = |backlog: f64| {
            let values: BTreeMap<&'static str, Option<f64>> = compared()
                .map(|(c, _)| (c, Some(if c == "backlog_max" { backlog } else { 1.0 })))
                .collect();
            Summary::from([((String::new(), 16, false), values)])
        };
        let moves = compare(Path::new("b.csv"), &summary(3.0), &summary(2.0), &t).unwrap();
        let backlog = moves.iter().find(|m| m.column == "backlog_max").unwrap();
        assert_eq!(backlog.status, Status::Within);
    }

    #[test]
    fn a_non_finite_baseline_value_is_bad_input() {
        let header = compared().map(|(c, _)| c).collect::<Vec<_>>().join(",");
        let values = compared()
            .map(|(c, _)| if c == "utilization" { "NaN" } else { "1" })
            .collect::<Vec<_>>()
            .join(",");
        let text = format!("shards,{header}\n4,{values}\n");
        let err = parse_summary(Path::new("b.csv"), &text, &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("utilization") && err.contains("finite"),
            "{err}"
        );
    }
}

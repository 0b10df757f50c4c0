//! Calibrated sections in a scenario: `include = "calibration.toml"` (relative to the
//! scenario) or `--calibration FILE` adds a calibration's tables — `[hold]`, `[machine]`,
//! `[wal]`, `[client]`, `[stalls]` — to the scenario's. The scenario's own fields win; tables merge field
//! by field, so a scenario can keep its hold distribution and take the machine.
//!
//! A calibration's `[spread]` (how much slower and faster than fitted its database may be,
//! and the share of measurements that band is meant to hold) is not merged: it is read out beside the text, and a caller that answers over
//! it asks for the calibration with every time scaled ([`Overrides::calibration_scale`]).
//!
//! [`Overrides::calibration_scale`]: super::Overrides::calibration_scale

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use toml::Table;

use crate::error::InputError;

/// The largest calibration file read (one is a few hundred bytes).
const MAX_CALIBRATION_BYTES: u64 = 1 << 20;

/// A scenario's text with its calibrations merged in, and where each merged field came from.
#[derive(Debug)]
pub struct Merged<'a> {
    /// The scenario text to parse.
    pub(crate) text: Cow<'a, str>,
    /// Each field (a dotted path, such as `machine.cores` or `client.overhead`) a calibration
    /// added, and that calibration's file.
    added: Vec<(String, PathBuf)>,
    /// Each field a calibration gives that the scenario sets itself (its own value is used),
    /// and that calibration's file.
    kept: Vec<(String, PathBuf)>,
    /// The fields a `[sweep]` sets.
    swept: Vec<String>,
    /// The first calibration's `[spread]`, if it has one.
    pub(crate) spread: Option<CalibrationSpread>,
}

/// A calibration's `[spread]`: every time of its machine may be `slower` (≥ 1) to `faster`
/// (≤ 1) times as long, a band meant to hold `coverage` of its database's measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrationSpread {
    /// The slow end's factor on every time.
    pub(crate) slower: f64,
    /// The fast end's factor.
    pub(crate) faster: f64,
    /// The share of measurements the band is meant to hold; `None` for a calibration of
    /// the old kind, whose spread is the drift between two of its runs and states none.
    pub(crate) coverage: Option<f64>,
    /// The calibration file it comes from.
    pub(crate) file: PathBuf,
}

/// The tables of a calibration whose times a scale multiplies: every field named `ms` or
/// `…_ms` in them (the stalls are their own evidence and keep theirs).
const SCALED_TABLES: [&str; 4] = ["hold", "machine", "wal", "client"];
/// The least and the most coverage a calibration's band may state.
pub const COVERAGE_RANGE: (f64, f64) = (0.5, 0.99);
/// The widest factor a spread may give.
const MAX_SPREAD: f64 = 10.0;

impl Merged<'_> {
    /// Notes the fields a `[sweep]` sets: an error in one of them (or within one) is the
    /// scenario's, whatever a calibration added.
    pub fn swept<'f>(&mut self, fields: impl IntoIterator<Item = &'f String>) {
        self.swept.extend(fields.into_iter().cloned());
    }

    /// The scenario's own fields that a calibration also gives, as `field (file)`: the
    /// scenario's values are used, and the user should know (a `[hold] ms` of the scenario
    /// already counts the commit the calibration's machine adds again).
    pub fn kept(&self) -> Vec<String> {
        self.kept
            .iter()
            .map(|(field, file)| format!("{field} ({})", file.display()))
            .collect()
    }

    /// Whether the text is the scenario as written (it includes no calibration).
    pub fn verbatim(&self) -> bool {
        matches!(self.text, Cow::Borrowed(_))
    }

    /// `error` naming the calibration file when its field came from one: the scenario does
    /// not have that field, so the file to fix is the calibration.
    pub fn blame(&self, error: InputError) -> InputError {
        let InputError::Scenario { field, message, .. } = &error else {
            return error;
        };
        if self.swept.iter().any(|swept| within(field, swept)) {
            return error;
        }
        match self.added.iter().find(|(added, _)| within(field, added)) {
            Some((_, file)) => InputError::scenario(file, field.as_str(), message.as_str()),
            None => error,
        }
    }
}

/// Whether the field at dotted path `field` is `outer` or lies within it.
fn within(field: &str, outer: &str) -> bool {
    field
        .strip_prefix(outer)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
}

/// The scenario text with its included calibration (and `calibration`, from the command line)
/// merged in; unchanged when it includes nothing (or is not valid TOML: the parser then says
/// why, with the right line).
pub fn merged<'a>(
    path: &Path,
    text: &'a str,
    calibration: Option<&Path>,
    scale: f64,
) -> Result<Merged<'a>, InputError> {
    let unchanged = || Merged {
        text: Cow::Borrowed(text),
        added: Vec::new(),
        kept: Vec::new(),
        swept: Vec::new(),
        spread: None,
    };
    let Ok(mut table) = text.parse::<Table>() else {
        return Ok(unchanged());
    };
    let included = match table.remove("include") {
        None => None,
        Some(toml::Value::String(file)) => {
            let base = path.parent().unwrap_or(Path::new("."));
            Some(base.join(file))
        }
        Some(_) => {
            return Err(InputError::scenario(
                path,
                "include",
                "must be the path of a calibration file, e.g. include = \"calibration.toml\"",
            ));
        }
    };
    if included.is_none() && calibration.is_none() {
        return Ok(unchanged());
    }
    let sources: Vec<(PathBuf, bool)> = calibration
        .map(|file| (file.to_path_buf(), true))
        .into_iter()
        .chain(included.map(|file| (file, false)))
        .collect();
    let (mut added, mut kept) = (Vec::new(), Vec::new());
    let mut spread = None;
    for (file, from_flag) in sources {
        let blame = |message: String| {
            if from_flag {
                InputError::flag("--calibration", format!("{}: {message}", file.display()))
            } else {
                InputError::scenario(path, "include", format!("{}: {message}", file.display()))
            }
        };
        let mut sections = read(&file).map_err(blame)?;
        // What the calibration warns of is validate's to read, not a scenario's field.
        sections.remove("warnings");
        if let Some(table) = sections.remove("spread") {
            let read = read_spread(table, &file).map_err(blame)?;
            spread.get_or_insert(read);
        }
        scale_times(&mut sections, scale);
        let (mut fields, mut own) = (Vec::new(), Vec::new());
        merge(&mut table, sections, "", &mut fields, &mut own);
        added.extend(fields.into_iter().map(|field| (field, file.clone())));
        kept.extend(own.into_iter().map(|field| (field, file.clone())));
    }
    Ok(Merged {
        text: Cow::Owned(table.to_string()),
        added,
        kept,
        swept: Vec::new(),
        spread,
    })
}

/// The `[spread]` of the calibration file at `path`, checked as an include checks it; `None`
/// when the file cannot be read, is not TOML, or has no valid `[spread]` (a file `validate`
/// was given is checked as an include before it gets here).
pub fn spread_of(path: &Path) -> Option<CalibrationSpread> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut table: Table = text.parse().ok()?;
    read_spread(table.remove("spread")?, path).ok()
}

/// A calibration's `[spread]`: `slower` (1 to [`MAX_SPREAD`]), `faster` (its inverse to 1)
/// and, from a calibration that states it, `coverage` (0.5 to 0.99); nothing else.
fn read_spread(table: toml::Value, file: &Path) -> Result<CalibrationSpread, String> {
    let toml::Value::Table(table) = table else {
        return Err(
            "`spread` must be a table: [spread] with slower, faster and coverage".to_owned(),
        );
    };
    if let Some(key) = table
        .keys()
        .find(|k| !matches!(k.as_str(), "slower" | "faster" | "coverage"))
    {
        return Err(format!(
            "spread.{key}: [spread] has only slower, faster and coverage"
        ));
    }
    let factor = |key: &str, low: f64, high: f64| -> Result<f64, String> {
        let value = match table.get(key) {
            Some(toml::Value::Float(v)) => *v,
            Some(toml::Value::Integer(v)) => *v as f64,
            _ => {
                return Err(format!(
                    "spread.{key}: must be a number from {low} to {high}"
                ));
            }
        };
        if (low..=high).contains(&value) {
            Ok(value)
        } else {
            Err(format!(
                "spread.{key}: must be a number from {low} to {high}, got {value}"
            ))
        }
    };
    let (low, high) = COVERAGE_RANGE;
    let coverage = match table.contains_key("coverage") {
        true => Some(factor("coverage", low, high)?),
        false => None,
    };
    Ok(CalibrationSpread {
        slower: factor("slower", 1.0, MAX_SPREAD)?,
        faster: factor("faster", 1.0 / MAX_SPREAD, 1.0)?,
        coverage,
        file: file.to_path_buf(),
    })
}

/// Every time (a field named `ms` or ending in `_ms`) of a calibration's [`SCALED_TABLES`]
/// `scale` times as long.
fn scale_times(sections: &mut Table, scale: f64) {
    fn scale_table(table: &mut Table, scale: f64) {
        for (key, value) in table.iter_mut() {
            match value {
                toml::Value::Table(inner) => scale_table(inner, scale),
                toml::Value::Float(v) if key == "ms" || key.ends_with("_ms") => *v *= scale,
                toml::Value::Integer(v) if key == "ms" || key.ends_with("_ms") => {
                    *value = toml::Value::Float(*v as f64 * scale)
                }
                _ => {}
            }
        }
    }
    if scale == 1.0 {
        return;
    }
    for name in SCALED_TABLES {
        if let Some(toml::Value::Table(table)) = sections.get_mut(name) {
            scale_table(table, scale);
        }
    }
}

/// A calibration file's tables.
fn read(file: &Path) -> Result<Table, String> {
    let metadata = std::fs::metadata(file).map_err(|err| format!("cannot read it: {err}"))?;
    if !metadata.is_file() || metadata.len() > MAX_CALIBRATION_BYTES {
        return Err(format!(
            "must be a calibration file (a regular file of at most {} KiB)",
            MAX_CALIBRATION_BYTES >> 10
        ));
    }
    let text = std::fs::read_to_string(file).map_err(|err| format!("cannot read it: {err}"))?;
    let table: Table = text
        .parse()
        .map_err(|err: toml::de::Error| format!("not TOML: {}", err.message().trim()))?;
    if let Some(key) = table.keys().find(|key| {
        !matches!(
            key.as_str(),
            "hold" | "machine" | "wal" | "client" | "stalls" | "spread" | "warnings"
        )
    }) {
        return Err(format!(
            "holds `{key}`; a calibration gives only [hold], [machine], [wal], [client], [stalls] and [spread]"
        ));
    }
    Ok(table)
}

/// Adds `extra`'s fields to `table` where `table` has none; tables merge recursively. The
/// dotted path (under `prefix`) of each field added goes to `added`, of each that `table`
/// already sets to `kept`.
fn merge(
    table: &mut Table,
    extra: Table,
    prefix: &str,
    added: &mut Vec<String>,
    kept: &mut Vec<String>,
) {
    for (key, value) in extra {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match (table.get_mut(&key), value) {
            (Some(toml::Value::Table(mine)), toml::Value::Table(theirs)) => {
                merge(mine, theirs, &path, added, kept)
            }
            (Some(_), _) => kept.push(path),
            (None, value) => {
                table.insert(key, value);
                added.push(path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Overrides, Scenario};

    /// A folder holding `calibration` as `calibration.toml`, and the path of a scenario beside
    /// it (the folder lives as long as the returned guard).
    fn beside_calibration(calibration: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("calibration.toml"), calibration).unwrap();
        let scenario = dir.path().join("s.toml");
        (dir, scenario)
    }

    #[test]
    fn a_calibrations_warnings_are_validates_and_not_the_scenarios() {
        let (_dir, scenario) = beside_calibration("warnings = [\"moved\"]\n\n[hold]\nms = 0.05\n");
        let text = "include = \"calibration.toml\"\nshards = [1]\n";
        let merged = merged(&scenario, text, None, 1.0).unwrap();
        let table: Table = merged.text.parse().unwrap();
        assert!(table.get("warnings").is_none(), "{table}");
        assert_eq!(table["hold"]["ms"].as_float(), Some(0.05));
    }

    #[test]
    fn the_scenarios_own_fields_win_and_tables_merge() {
        let (dir, scenario) = beside_calibration(
            "[hold]\nms = 0.05\nper_waiter_ms = 0.004\n[machine]\ncores = 2\n[machine.cpu]\nms = 0.1\n",
        );
        let text = "include = \"calibration.toml\"\nshards = [1]\n[hold]\nms = 1\n";
        let merged = merged(&scenario, text, None, 1.0).unwrap();
        let table: Table = merged.text.parse().unwrap();
        assert_eq!(
            table["hold"]["ms"].as_integer(),
            Some(1),
            "the scenario's hold"
        );
        assert_eq!(table["hold"]["per_waiter_ms"].as_float(), Some(0.004));
        let file = dir.path().join("calibration.toml").display().to_string();
        assert_eq!(merged.kept(), [format!("hold.ms ({file})")]);
        assert_eq!(table["machine"]["cores"].as_integer(), Some(2));
        assert!(table.get("include").is_none());
        let err = merged_err(&scenario, "include = \"missing.toml\"\n");
        assert!(
            err.contains("include: ") && err.contains("missing.toml"),
            "{err}"
        );
    }

    #[test]
    fn an_error_in_a_calibrations_field_names_the_calibration() {
        let dir = tempfile::tempdir().unwrap();
        let calibration = dir.path().join("calibration.toml");
        std::fs::write(
            &calibration,
            "[machine]\ncores = 0\n[machine.cpu]\nms = \"fast\"\n[wal]\nflush_ms = 0.1\n",
        )
        .unwrap();
        let scenario = dir.path().join("s.toml");
        let error = |text: &str, flag: bool| {
            let overrides = Overrides {
                calibration: flag.then(|| calibration.clone()),
                ..Overrides::default()
            };
            let text = if flag {
                text.to_string()
            } else {
                format!("include = \"calibration.toml\"\n{text}")
            };
            Scenario::parse_grid(&scenario, &text, &overrides)
                .map(|_| ())
                .unwrap_err()
                .to_string()
        };
        let cal = calibration.display().to_string();
        let own = scenario.display().to_string();
        for flag in [true, false] {
            // A wrong type in the calibration: its file and field, and no line (the merged
            // text's line numbers are in neither file).
            let typed = error(
                "shards = [1]\nduration_s = 1\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 1\n",
                flag,
            );
            assert_eq!(
                typed,
                format!(
                    "{cal}: machine.cpu.ms: must be a number of milliseconds (e.g. 1 or 0.5), \
                     written without quotes or a unit, got string \"fast\""
                )
            );
            // A value out of range in the calibration, once the types are right.
            let ranged = error(
                "shards = [1]\nduration_s = 1\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 1\n[machine.cpu]\nms = 0.1\n",
                flag,
            );
            assert!(
                ranged.starts_with(&format!("{cal}: machine.cores: ")),
                "{ranged}"
            );
            // The scenario's own field, though its table took the calibration's others.
            let mine = error(
                "shards = [1]\nduration_s = 1\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 1\n[machine]\ncores = 1\n[machine.cpu]\nms = -1\n",
                flag,
            );
            assert!(
                mine.starts_with(&format!("{own}: machine.cpu.ms: ")),
                "{mine}"
            );
            // A swept field is the scenario's, whatever the calibration gave.
            let swept = error(
                "shards = [1]\nduration_s = 1\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 1\n[machine.cpu]\nms = 0.1\n[sweep]\n\"machine.cores\" = [1, 0]\n",
                flag,
            );
            assert!(swept.starts_with(&format!("{own}: ")), "{swept}");
        }
    }

    #[test]
    fn a_spread_is_read_out_and_a_scale_lengthens_every_calibrated_time_but_the_stalls() {
        let dir = tempfile::tempdir().unwrap();
        let calibration = dir.path().join("calibration.toml");
        std::fs::write(
            &calibration,
            "[hold]\nms = 2\n[machine]\ncores = 2\nwake_ms = 0.5\n[machine.cpu]\nms = 0.25\n\
             [client.overhead]\nmedian_ms = 1.0\np99_ms = 4.0\n[stalls]\nevery_s = 2.0\n\
             [stalls.duration]\nms = 3.0\n[spread]\nslower = 1.1\nfaster = 0.9\n",
        )
        .unwrap();
        let scenario = dir.path().join("s.toml");
        let merged = merged(
            &scenario,
            "shards = [1]\n[machine]\nwake_ms = 1.0\n",
            Some(&calibration),
            2.0,
        )
        .unwrap();
        let spread = merged.spread.clone().unwrap();
        assert_eq!((spread.slower, spread.faster), (1.1, 0.9));
        assert_eq!(
            spread.coverage, None,
            "a calibration of the old kind states none"
        );
        assert_eq!(spread.file, calibration);
        let table: Table = merged.text.parse().unwrap();
        assert!(table.get("spread").is_none());
        assert_eq!(table["hold"]["ms"].as_float(), Some(4.0));
        assert_eq!(table["machine"]["cpu"]["ms"].as_float(), Some(0.5));
        assert_eq!(table["client"]["overhead"]["p99_ms"].as_float(), Some(8.0));
        assert_eq!(
            table["machine"]["cores"].as_integer(),
            Some(2),
            "not a time"
        );
        assert_eq!(
            table["machine"]["wake_ms"].as_float(),
            Some(1.0),
            "the scenario's own"
        );
        assert_eq!(table["stalls"]["every_s"].as_float(), Some(2.0));
        assert_eq!(table["stalls"]["duration"]["ms"].as_float(), Some(3.0));
        // A hostile spread: one line naming the file and the field.
        for (spread, says) in [
            (
                "slower = 0.5\nfaster = 0.9",
                "spread.slower: must be a number from 1 to 10, got 0.5",
            ),
            (
                "slower = 1.1\nfaster = \"fast\"",
                "spread.faster: must be a number from 0.1 to 1",
            ),
            (
                "slower = 1.1\nfaster = 0.9\nseed = 1",
                "spread.seed: [spread] has only slower, faster and coverage",
            ),
            (
                "slower = 1.1\nfaster = 0.9\ncoverage = 1.5",
                "spread.coverage: must be a number from 0.5 to 0.99, got 1.5",
            ),
        ] {
            std::fs::write(&calibration, format!("[spread]\n{spread}\n")).unwrap();
            let err = super::merged(&scenario, "shards = [1]\n", Some(&calibration), 1.0)
                .unwrap_err()
                .to_string();
            assert_eq!(
                err,
                format!("--calibration: {}: {says}", calibration.display()),
                "{spread}"
            );
        }
        // A band states its coverage.
        std::fs::write(
            &calibration,
            "[spread]\nslower = 1.2\nfaster = 0.95\ncoverage = 0.9\n",
        )
        .unwrap();
        let banded = super::merged(&scenario, "shards = [1]\n", Some(&calibration), 1.0).unwrap();
        assert_eq!(banded.spread.unwrap().coverage, Some(0.9));
    }

    fn merged_err(path: &Path, text: &str) -> String {
        merged(path, text, None, 1.0).unwrap_err().to_string()
    }
}

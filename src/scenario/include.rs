//! Calibrated sections in a scenario: `include = "calibration.toml"` (relative to the
//! scenario) or `--calibration FILE` adds a calibration's tables — `[hold]`, `[machine]`,
//! `[wal]`, `[client]`, `[stalls]` — to the scenario's. The scenario's own fields win; tables merge field
//! by field, so a scenario can keep its hold distribution and take the machine.

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
    pub text: Cow<'a, str>,
    /// Each field (a dotted path, such as `machine.cores` or `client.overhead`) a calibration
    /// added, and that calibration's file.
    added: Vec<(String, PathBuf)>,
    /// Each field a calibration gives that the scenario sets itself (its own value is used),
    /// and that calibration's file.
    kept: Vec<(String, PathBuf)>,
    /// The fields a `[sweep]` sets.
    swept: Vec<String>,
}

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
) -> Result<Merged<'a>, InputError> {
    let unchanged = || Merged {
        text: Cow::Borrowed(text),
        added: Vec::new(),
        kept: Vec::new(),
        swept: Vec::new(),
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
    for (file, from_flag) in sources {
        let sections = read(&file).map_err(|message| {
            if from_flag {
                InputError::flag("--calibration", format!("{}: {message}", file.display()))
            } else {
                InputError::scenario(path, "include", format!("{}: {message}", file.display()))
            }
        })?;
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
    })
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
            "hold" | "machine" | "wal" | "client" | "stalls"
        )
    }) {
        return Err(format!(
            "holds `{key}`; a calibration gives only [hold], [machine], [wal], [client] and [stalls]"
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

    #[test]
    fn the_scenarios_own_fields_win_and_tables_merge() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("calibration.toml"),
            "[hold]\nms = 0.05\nper_waiter_ms = 0.004\n[machine]\ncores = 2\n[machine.cpu]\nms = 0.1\n",
        )
        .unwrap();
        let scenario = dir.path().join("s.toml");
        let text = "include = \"calibration.toml\"\nshards = [1]\n[hold]\nms = 1\n";
        let merged = merged(&scenario, text, None).unwrap();
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

    fn merged_err(path: &Path, text: &str) -> String {
        merged(path, text, None).unwrap_err().to_string()
    }
}

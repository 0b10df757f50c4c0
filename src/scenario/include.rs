//! Calibrated sections in a scenario: `include = "calibration.toml"` (relative to the
//! scenario) or `--calibration FILE` adds a calibration's tables — `[hold]`, `[machine]`,
//! `[wal]`, `[client]` — to the scenario's. The scenario's own fields win; tables merge field
//! by field, so a scenario can keep its hold distribution and take the machine.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use toml::Table;

use crate::error::InputError;

/// The largest calibration file read (one is a few hundred bytes).
const MAX_CALIBRATION_BYTES: u64 = 1 << 20;

/// The scenario text with its included calibration (and `calibration`, from the command line)
/// merged in; unchanged when it includes nothing (or is not valid TOML: the parser then says
/// why, with the right line).
pub fn merged<'a>(
    path: &Path,
    text: &'a str,
    calibration: Option<&Path>,
) -> Result<Cow<'a, str>, InputError> {
    let Ok(mut table) = text.parse::<Table>() else {
        return Ok(Cow::Borrowed(text));
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
        return Ok(Cow::Borrowed(text));
    }
    let sources: Vec<(PathBuf, bool)> = calibration
        .map(|file| (file.to_path_buf(), true))
        .into_iter()
        .chain(included.map(|file| (file, false)))
        .collect();
    for (file, from_flag) in sources {
        let sections = read(&file).map_err(|message| {
            if from_flag {
                InputError::flag("--calibration", format!("{}: {message}", file.display()))
            } else {
                InputError::scenario(path, "include", format!("{}: {message}", file.display()))
            }
        })?;
        merge(&mut table, sections);
    }
    Ok(Cow::Owned(table.to_string()))
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
    if let Some(key) = table
        .keys()
        .find(|key| !matches!(key.as_str(), "hold" | "machine" | "wal" | "client"))
    {
        return Err(format!(
            "holds `{key}`; a calibration gives only [hold], [machine], [wal] and [client]"
        ));
    }
    Ok(table)
}

/// Adds `extra`'s fields to `table` where `table` has none; tables merge recursively.
fn merge(table: &mut Table, extra: Table) {
    for (key, value) in extra {
        match (table.get_mut(&key), value) {
            (Some(toml::Value::Table(mine)), toml::Value::Table(theirs)) => merge(mine, theirs),
            (Some(_), _) => {}
            (None, value) => {
                table.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let table: Table = merged.parse().unwrap();
        assert_eq!(
            table["hold"]["ms"].as_integer(),
            Some(1),
            "the scenario's hold"
        );
        assert_eq!(table["hold"]["per_waiter_ms"].as_float(), Some(0.004));
        assert_eq!(table["machine"]["cores"].as_integer(), Some(2));
        assert!(table.get("include").is_none());
        let err = merged_err(&scenario, "include = \"missing.toml\"\n");
        assert!(
            err.contains("include: ") && err.contains("missing.toml"),
            "{err}"
        );
    }

    fn merged_err(path: &Path, text: &str) -> String {
        merged(path, text, None).unwrap_err().to_string()
    }
}

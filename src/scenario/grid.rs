//! Grid sweeps: a scenario's `[sweep]` table names scenario fields by their path and the values
//! to try,
//!
//! ```toml
//! [sweep]
//! "hold.ms" = [0.2, 0.5, 1, 2]
//! "arrivals.scale" = [1, 1.5, 2]
//! policy = ["earliest-free", "random"]
//! ```
//!
//! and every combination is a configuration: the scenario with those fields set, resolved and
//! validated exactly as a scenario file of its own (so a configuration's rows are those of a
//! run of that file). Fields vary in the order written, the last fastest; the shard counts stay
//! the innermost dimension inside each configuration.

use std::path::Path;

use toml::Value;

use super::file::ScenarioFile;
use super::{Overrides, Scenario, validate};
use crate::error::InputError;

/// Most configurations one grid may have.
pub const MAX_CONFIGURATIONS: usize = 100_000;

/// Fields a sweep may not set: the output's name, the sweep itself, and the shard counts,
/// which every configuration already runs through (the innermost dimension).
const UNSWEPT: [&str; 3] = ["name", "sweep", "shards"];

/// Every configuration of a scenario's grid (one, with no swept fields, without `[sweep]`).
#[derive(Debug, Clone)]
pub struct Grid {
    /// The swept fields' paths, in the file's order (the first varies slowest).
    pub(crate) fields: Vec<String>,
    /// Every configuration, in grid order.
    pub configurations: Vec<Configuration>,
}

/// One point of a grid.
#[derive(Debug, Clone)]
pub struct Configuration {
    /// Its position in grid order (0-based): the stable identity partitions split by.
    pub(crate) index: usize,
    /// Its value of each swept field, as written in the CSV columns.
    pub(crate) values: Vec<String>,
    /// The scenario with those values set, resolved.
    pub scenario: Scenario,
}

impl Grid {
    /// Whether the scenario sweeps any field.
    pub fn is_sweep(&self) -> bool {
        !self.fields.is_empty()
    }

    /// `hold.ms = 2, policy = random` for configuration `values`.
    pub fn describe(&self, values: &[String]) -> String {
        self.fields
            .iter()
            .zip(values)
            .map(|(field, value)| format!("{field} = {value}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Expands `file`'s `[sweep]` into its configurations, each resolved with `overrides`.
pub(super) fn expand(
    path: &Path,
    mut file: ScenarioFile,
    overrides: &Overrides,
) -> Result<Grid, InputError> {
    let Some(sweep) = file.sweep.take() else {
        let scenario = validate::resolve(path, file, overrides)?;
        return Ok(Grid {
            fields: Vec::new(),
            configurations: vec![Configuration {
                index: 0,
                values: Vec::new(),
                scenario,
            }],
        });
    };
    let entries = check_entries(path, &sweep)?;
    if overrides.traffic.is_some() && entries.iter().any(|(f, _)| f == "arrivals.scale") {
        return Err(InputError::flag(
            "--traffic",
            "the scenario sweeps arrivals.scale; leave out --traffic or the sweep entry",
        ));
    }
    let base = Value::try_from(&file).map_err(|err| {
        InputError::scenario(path, "sweep", format!("cannot expand the scenario: {err}"))
    })?;
    check_each_value(path, &base, &entries)?;
    let count = entries.iter().map(|(_, values)| values.len()).product();
    let fields: Vec<String> = entries.iter().map(|(field, _)| field.clone()).collect();
    let configurations = (0..count)
        .map(|index| configuration(path, &base, &entries, index, overrides))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Grid {
        fields,
        configurations,
    })
}

/// Each swept value, set alone on the base scenario, must make a valid scenario file (so a
/// bad value is named by its entry, not by a configuration).
fn check_each_value(
    path: &Path,
    base: &Value,
    entries: &[(String, Vec<Value>)],
) -> Result<(), InputError> {
    for (field, values) in entries {
        for value in values {
            let mut one = base.clone();
            set(&mut one, field, value.clone()).map_err(|m| entry_error(path, field, m))?;
            one.try_into::<ScenarioFile>().map_err(|err| {
                entry_error(
                    path,
                    field,
                    format!("the value {}: {}", show(value), err.message()),
                )
            })?;
        }
    }
    Ok(())
}

/// Configuration number `index` of the grid (the last entry varying fastest), resolved.
fn configuration(
    path: &Path,
    base: &Value,
    entries: &[(String, Vec<Value>)],
    index: usize,
    overrides: &Overrides,
) -> Result<Configuration, InputError> {
    let mut value = base.clone();
    let mut shown = Vec::with_capacity(entries.len());
    let mut rest = index;
    let mut digits = vec![0; entries.len()];
    for (slot, (_, values)) in entries.iter().enumerate().rev() {
        digits[slot] = rest % values.len();
        rest /= values.len();
    }
    for ((field, values), &digit) in entries.iter().zip(&digits) {
        set(&mut value, field, values[digit].clone()).map_err(|m| entry_error(path, field, m))?;
        shown.push(show(&values[digit]));
    }
    let describe = || {
        entries
            .iter()
            .zip(&shown)
            .map(|((f, _), v)| format!("{f} = {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let configured: ScenarioFile = value.try_into().map_err(|err: toml::de::Error| {
        InputError::scenario(
            path,
            "sweep",
            format!("the configuration {}: {}", describe(), err.message()),
        )
    })?;
    let scenario = validate::resolve(path, configured, overrides)
        .map_err(|err| in_configuration(err, &describe()))?;
    Ok(Configuration {
        index,
        values: shown,
        scenario,
    })
}

/// The `[sweep]` entries as (path, values), checked: a known kind of path, a non-empty list of
/// numbers, strings or booleans, and a grid of at most [`MAX_CONFIGURATIONS`].
fn check_entries(
    path: &Path,
    sweep: &toml::Table,
) -> Result<Vec<(String, Vec<Value>)>, InputError> {
    if sweep.is_empty() {
        return Err(InputError::scenario(
            path,
            "sweep",
            "is empty: name fields and their values, e.g. \"hold.ms\" = [0.2, 1]",
        ));
    }
    let mut entries = Vec::with_capacity(sweep.len());
    let mut count: usize = 1;
    for (field, values) in sweep {
        let values = check_entry(field, values).map_err(|m| entry_error(path, field, m))?;
        count = count.saturating_mul(values.len());
        if count > MAX_CONFIGURATIONS {
            return Err(InputError::scenario(
                path,
                "sweep",
                format!("makes more than {MAX_CONFIGURATIONS} configurations; sweep fewer values"),
            ));
        }
        entries.push((field.clone(), values.clone()));
    }
    Ok(entries)
}

/// One `[sweep]` entry: a field path that may be swept, and a non-empty list of distinct
/// numbers, strings or booleans.
fn check_entry<'a>(field: &str, values: &'a Value) -> Result<&'a Vec<Value>, String> {
    let segments: Vec<&str> = field.split('.').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err("is not a field path: use the table and field, e.g. \"hold.ms\"".into());
    }
    if UNSWEPT.contains(&segments[0]) {
        return Err(
            "cannot be swept: every configuration runs the scenario's shard counts under its own name"
                .into(),
        );
    }
    let Value::Array(values) = values else {
        return Err("must be a list of the values to try, e.g. [0.2, 1]".into());
    };
    if values.is_empty() {
        return Err("is an empty list: give at least one value".into());
    }
    if let Some(bad) = values.iter().find(|v| {
        !matches!(
            v,
            Value::Integer(_) | Value::Float(_) | Value::String(_) | Value::Boolean(_)
        )
    }) {
        return Err(format!(
            "has the value {bad}: a swept value is a number, a string or a boolean"
        ));
    }
    if values
        .iter()
        .enumerate()
        .any(|(i, v)| values[..i].contains(v))
    {
        return Err("lists a value twice: give each once".into());
    }
    Ok(values)
}

fn entry_error(path: &Path, field: &str, message: String) -> InputError {
    InputError::scenario(path, format!("sweep.\"{field}\""), message)
}

/// `err` with the configuration it arose in.
fn in_configuration(err: InputError, configuration: &str) -> InputError {
    match err {
        InputError::Scenario {
            file,
            field,
            message,
        } => InputError::Scenario {
            file,
            field,
            message: format!("{message} (in the [sweep] configuration {configuration})"),
        },
        other => other,
    }
}

/// Sets the field at dotted `path` in `table` to `value`, creating tables on the way. A path
/// through a value that is not a table — a number (`hold.ms.x`) or a list (`arrivals.profile.
/// seconds`, a list of tables) — names no field, and is refused saying what is there.
fn set(table: &mut Value, path: &str, value: Value) -> Result<(), String> {
    let mut at = table;
    let segments: Vec<&str> = path.split('.').collect();
    for (depth, segment) in segments[..segments.len() - 1].iter().enumerate() {
        let Value::Table(inner) = at else {
            return Err("names no field of the scenario".into());
        };
        at = inner
            .entry(segment.to_string())
            .or_insert_with(|| Value::Table(toml::Table::new()));
        if !at.is_table() {
            let reached = segments[..=depth].join(".");
            let what = match at {
                Value::Array(_) => "a list, whose items a [sweep] entry cannot reach",
                _ => "a single value, not a table",
            };
            return Err(format!(
                "{reached} is {what}: sweep a field of a table (e.g. \"hold.ms\") or \"{reached}\" itself"
            ));
        }
    }
    if let Value::Table(inner) = at {
        inner.insert(segments[segments.len() - 1].to_owned(), value);
    }
    Ok(())
}

/// A swept value as its CSV cell: numbers in their shortest form (`1`, `0.2`), strings bare.
fn show(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Integer(n) => n.to_string(),
        Value::Float(x) => x.to_string(),
        Value::Boolean(b) => b.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_creates_and_replaces_nested_fields() {
        let mut table: Value = toml::from_str("[hold]\nms = 1\n").unwrap();
        set(&mut table, "hold.ms", Value::Float(2.5)).unwrap();
        set(&mut table, "arrivals.scale", Value::Integer(2)).unwrap();
        set(&mut table, "policy", Value::String("random".into())).unwrap();
        assert_eq!(table["hold"]["ms"], Value::Float(2.5));
        assert_eq!(table["arrivals"]["scale"], Value::Integer(2));
        assert_eq!(table["policy"], Value::String("random".into()));
    }

    #[test]
    fn values_show_in_their_shortest_form() {
        assert_eq!(show(&Value::Float(1.0)), "1");
        assert_eq!(show(&Value::Float(0.2)), "0.2");
        assert_eq!(show(&Value::Integer(16)), "16");
        assert_eq!(show(&Value::String("random".into())), "random");
    }
}

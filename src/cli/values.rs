//! Parsers of flag values, each with its own one-line message of what is allowed; and the one
//! place that turns a clap usage error into a one-line `error:` that names the flag.

use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::error::clip;
use crate::model::Policy;

/// The most worker threads `--threads` accepts.
pub const MAX_THREADS: usize = 256;
/// The most shard counts a key may have.
pub const MAX_SHARDS: u32 = 1 << 20;

fn number<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("must be {what}, got {:?}", clip(text)))
}

/// A shard count, 1 to 1,048,576.
pub fn shard_count(text: &str) -> Result<u32, String> {
    let what = "whole numbers from 1 to 1048576";
    let value: u32 = number(text, what)?;
    if value == 0 || value > MAX_SHARDS {
        return Err(format!("must be {what}, got {value}"));
    }
    Ok(value)
}

/// A connection pool's size, 1 to 1,000,000.
pub fn pool_size(text: &str) -> Result<u32, String> {
    let what = "whole numbers from 1 to 1000000";
    let value: u32 = number(text, what)?;
    if value == 0 || value > crate::scenario::MAX_POOL {
        return Err(format!("must be {what}, got {value}"));
    }
    Ok(value)
}

/// A seed: any whole number from 0 to 2⁶⁴ − 1.
pub fn seed(text: &str) -> Result<u64, String> {
    number(text, "a whole number from 0 to 18446744073709551615")
}

/// Replications, 1 to 10,000.
pub fn replications(text: &str) -> Result<u32, String> {
    let what = "a whole number from 1 to 10000";
    let value: u32 = number(text, what)?;
    if value == 0 || value > 10_000 {
        return Err(format!("must be {what}, got {value}"));
    }
    Ok(value)
}

/// Worker threads, 1 to [`MAX_THREADS`].
pub fn threads(text: &str) -> Result<usize, String> {
    let what = format!("a whole number from 1 to {MAX_THREADS}");
    let value: usize = number(text, &what)?;
    if value == 0 || value > MAX_THREADS {
        return Err(format!("must be {what}, got {value}"));
    }
    Ok(value)
}

/// A slot-choice policy by name.
pub fn policy(text: &str) -> Result<Policy, String> {
    text.parse().map_err(|_| {
        let names: Vec<&str> = Policy::ALL.iter().map(|p| p.name()).collect();
        format!(
            "unknown policy {:?}: allowed are {}",
            clip(text),
            names.join(", ")
        )
    })
}

fn finite(text: &str, what: &str) -> Result<f64, String> {
    let value: f64 = number(text, what)?;
    if !value.is_finite() {
        return Err(format!("must be {what}, got {value}"));
    }
    Ok(value)
}

/// A finite number above 0.
pub fn positive(text: &str) -> Result<f64, String> {
    let what = "a finite number > 0";
    let value = finite(text, what)?;
    if value <= 0.0 {
        return Err(format!("must be {what}, got {value}"));
    }
    Ok(value)
}

/// A what-if traffic scale: more than 0, at most 1000.
pub fn traffic(text: &str) -> Result<f64, String> {
    let value = positive(text)?;
    let max = crate::scenario::MAX_TRAFFIC_FACTOR;
    if value > max {
        return Err(format!("must be at most {max}, got {value}"));
    }
    Ok(value)
}

/// A finite number of at least 0.
pub fn non_negative(text: &str) -> Result<f64, String> {
    let what = "a finite number ≥ 0";
    let value = finite(text, what)?;
    if value < 0.0 {
        return Err(format!("must be {what}, got {value}"));
    }
    Ok(value)
}

/// A utilization in (0, 1].
pub fn utilization(text: &str) -> Result<f64, String> {
    let what = "a number in (0, 1]";
    let value = finite(text, what)?;
    if !(value > 0.0 && value <= 1.0) {
        return Err(format!("must be {what}, got {value}"));
    }
    Ok(value)
}

fn bounded_seconds(text: &str, low: f64) -> Result<f64, String> {
    let what = format!("a number of seconds from {low} to 1000000");
    let value = finite(text, &what)?;
    if !(low..=1e6).contains(&value) {
        return Err(format!("must be {what}, got {value}"));
    }
    Ok(value)
}

/// `plan --duration-s`: 0.001 to 1,000,000 s.
pub fn plan_duration(text: &str) -> Result<f64, String> {
    bounded_seconds(text, 0.001)
}

/// `plan --warmup-s`: 0 to 1,000,000 s.
pub fn plan_warmup(text: &str) -> Result<f64, String> {
    bounded_seconds(text, 0.0)
}

/// A memory size in bytes: a whole number with an optional unit (`B`, `KiB`, `MiB`, `GiB`,
/// `TiB`, or `K`, `M`, `G`, `T` meaning the same binary units; `KB`, `MB`, `GB` are decimal).
pub fn memory(text: &str) -> Result<u64, String> {
    let what = "a size such as 4GiB, 512MiB or 1000000000 (bytes), at least 16MiB";
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (digits, unit) = trimmed.split_at(split);
    let value: f64 = number(digits, what)?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024.0 * 1024.0,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tib" => 1024.0f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        _ => return Err(format!("must be {what}, got {:?}", clip(text))),
    };
    let bytes = value * scale;
    if !(16.0 * 1024.0 * 1024.0..1e18).contains(&bytes) {
        return Err(format!("must be {what}, got {:?}", clip(text)));
    }
    Ok(bytes as u64)
}

/// `--watch` of calibrate: a duration of 10 s to 24 h, in seconds (`600`, `600s`, `10m`,
/// `1h 30m`: humantime's forms, or a plain number of seconds).
pub fn watch(text: &str) -> Result<f64, String> {
    let trimmed = text.trim();
    let seconds = match trimmed.parse::<f64>() {
        Ok(seconds) => seconds,
        Err(_) => humantime::parse_duration(trimmed)
            .map_err(|_| {
                format!(
                    "expected a duration such as 600s, 10m or 1h, got {:?}",
                    clip(text)
                )
            })?
            .as_secs_f64(),
    };
    if (10.0..=86_400.0).contains(&seconds) {
        Ok(seconds)
    } else {
        Err(format!("must be from 10 s to 24 h, got {}", clip(text)))
    }
}

/// `--duration-s` of calibrate: 0.5 to 60 seconds.
pub fn calibration_seconds(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("expected seconds, got {:?}", clip(text)))?;
    if (0.5..=60.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!("must be from 0.5 to 60 seconds, got {value}"))
    }
}

/// `--coverage` of calibrate: the band's share, 0.5 to 0.99 (or 50% to 99%).
pub fn coverage(text: &str) -> Result<f64, String> {
    let trimmed = text.trim();
    let (number, scale) = match trimmed.strip_suffix('%') {
        Some(percent) => (percent, 0.01),
        None => (trimmed, 1.0),
    };
    let value = number
        .trim()
        .parse::<f64>()
        .map(|v| v * scale)
        .map_err(|_| format!("expected a share such as 0.9 or 90%, got {:?}", clip(text)))?;
    let (low, high) = crate::calibrate::spread::COVERAGE_RANGE;
    if (low..=high).contains(&value) {
        Ok(value)
    } else {
        Err(format!(
            "must be from {low} to {high} (a share of the measurements), got {value}"
        ))
    }
}

/// `--max-rows` of calibrate: 2 to 4096.
pub fn calibration_rows(text: &str) -> Result<u32, String> {
    whole_number(text, 2, 4096, "")
}

/// One client count of calibrate's `--clients`: 1 to 256.
pub fn client_counts(text: &str) -> Result<u32, String> {
    whole_number(text, 1, 256, "each client count ")
}

/// `--repeats` of validate: 1 to 10.
pub fn validation_repeats(text: &str) -> Result<u32, String> {
    whole_number(text, 1, 10, "")
}

/// `--cores`: 1 to [`MAX_CORES`](crate::scenario::MAX_CORES) (4096).
pub fn cores(text: &str) -> Result<u32, String> {
    whole_number(text, 1, crate::scenario::MAX_CORES, "")
}

/// A whole number from `low` to `high`; `what` starts the message ("each client count ").
fn whole_number(text: &str, low: u32, high: u32, what: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(value) if (low..=high).contains(&value) => Ok(value),
        _ => Err(format!(
            "{what}must be a whole number from {low} to {high}, got {:?}",
            clip(text)
        )),
    }
}

/// A clap error as one line in the tool's words: `--flag: what is wrong` for a bad value;
/// otherwise clap's own message (every line of it up to the usage, so a missing argument is
/// named and the allowed values are listed), with only the user's echoed values clipped, and
/// the subcommand whose `--help` tells more (from clap's usage line, else `subcommand`, the
/// one the command line named).
pub fn one_line(err: &clap::Error, subcommand: Option<&str>) -> String {
    let flag = match err.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => arg.split([' ', '=']).next().unwrap_or(arg).to_owned(),
        _ => String::new(),
    };
    let source = std::error::Error::source(err).map(ToString::to_string);
    if let (ErrorKind::ValueValidation, Some(message)) = (err.kind(), source)
        && !flag.is_empty()
    {
        return format!("{flag}: {message}");
    }
    let text = err.render().to_string();
    let mut parts: Vec<&str> = Vec::new();
    let named = subcommand.map(|name| format!("shardsim {name}"));
    let mut command = named.as_deref().unwrap_or("shardsim");
    for line in text.lines().map(str::trim) {
        if let Some(usage) = line.strip_prefix("Usage: ") {
            command = usage;
            break;
        }
        if line.starts_with("For more information") {
            break;
        }
        // A tip that repeats a long value says nothing the first line did not.
        let long_tip = line.starts_with("tip:") && line.chars().count() > 100;
        if !line.is_empty() && !long_tip {
            parts.push(line);
        }
    }
    let message = clip_quoted(&parts.join(" "));
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    format!("{message} (see {} --help)", subcommand_of(command))
}

/// `shardsim run` from a usage line such as `shardsim run [OPTIONS] <SCENARIO>`.
fn subcommand_of(usage: &str) -> String {
    usage
        .split(' ')
        .take_while(|word| !word.is_empty() && !word.starts_with(['<', '[', '-']))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Clips every value clap quoted (`'…'`) to [`clip`]'s length, leaving the message's own words
/// whole.
fn clip_quoted(message: &str) -> String {
    let pieces: Vec<&str> = message.split('\'').collect();
    if pieces.len() < 3 {
        return message.to_owned();
    }
    pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| {
            let quoted = i % 2 == 1 && i + 1 < pieces.len();
            if quoted {
                clip(piece).into_owned()
            } else {
                (*piece).to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_and_decimal_units() {
        assert_eq!(memory("4GiB"), Ok(4 << 30));
        assert_eq!(memory("512M"), Ok(512 << 20));
        assert_eq!(memory("2GB"), Ok(2_000_000_000));
        assert!(memory("1k").is_err(), "below the floor");
        assert!(memory("lots").is_err());
    }

    #[test]
    fn a_watch_is_a_duration_of_ten_seconds_to_a_day() {
        assert_eq!(watch("10m"), Ok(600.0));
        assert_eq!(watch("600"), Ok(600.0));
        assert_eq!(watch("1h 30m"), Ok(5400.0));
        assert_eq!(watch("5s"), Err("must be from 10 s to 24 h, got 5s".into()));
        assert!(watch("2d").is_err(), "beyond a day");
        assert!(
            watch("soon")
                .unwrap_err()
                .contains("such as 600s, 10m or 1h")
        );
    }

    #[test]
    fn values_say_what_is_allowed() {
        assert_eq!(
            threads("0"),
            Err("must be a whole number from 1 to 256, got 0".into())
        );
        assert!(
            shard_count("abc")
                .unwrap_err()
                .contains("whole numbers from 1")
        );
        assert!(positive("nan").unwrap_err().contains("finite number > 0"));
        assert!(utilization("1.5").is_err());
    }

    fn usage_error(args: &[&str]) -> String {
        use clap::Parser;
        let err = crate::cli::Cli::try_parse_from(args).unwrap_err();
        one_line(&err, args.get(1).copied())
    }

    #[test]
    fn usage_errors_name_the_missing_argument_and_the_allowed_values() {
        let missing = usage_error(&["shardsim", "run"]);
        assert!(missing.contains("<SCENARIO>"), "{missing}");
        assert!(missing.ends_with("(see shardsim run --help)"), "{missing}");
        let merge = usage_error(&["shardsim", "merge", "x"]);
        assert!(merge.contains("--out <DIR>"), "{merge}");
        let colour = usage_error(&["shardsim", "run", "x.toml", "--color", "sometimes"]);
        assert!(colour.contains("auto, always, never"), "{colour}");
        let shell = usage_error(&["shardsim", "completions", "tcsh"]);
        assert!(shell.contains("bash") && shell.contains("zsh"), "{shell}");
        let no_value = usage_error(&["shardsim", "run", "x.toml", "--shards"]);
        assert!(no_value.contains("--shards <N,N,...>"), "{no_value}");
        for line in [missing, merge, colour, shell, no_value] {
            assert!(!line.contains('\n') && !line.contains("…"), "{line}");
        }
        let long = format!("--{}", "x".repeat(5000));
        let unknown = usage_error(&["shardsim", "run", "x.toml", &long]);
        assert!(
            unknown.len() < 300 && unknown.contains("5002 characters"),
            "{unknown}"
        );
    }
}

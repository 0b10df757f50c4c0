//! Mutated scenarios and traces through validation: whatever the bytes, validation ends in a
//! scenario or in a one-line error (never a panic), and the command line answers a bad trace
//! with exit 2 and writes nothing. The same inputs feed the cargo-fuzz targets in `fuzz/`.

use std::fs;
use std::path::Path;

use proptest::prelude::*;
use shardsim::budget;
use shardsim::scenario::{Overrides, Scenario};

use crate::common::{repo, shardsim, stderr};

/// Values that probe the edges of every field.
const TOKENS: [&str; 24] = [
    "0",
    "-1",
    "1e309",
    "nan",
    "inf",
    "-0.0",
    "18446744073709551616",
    "4294967296",
    "1e-12",
    "\"\"",
    "[]",
    "[0]",
    "{}",
    "true",
    "\"random\"",
    "\"lognormal\"",
    "[[hold]]",
    "[slo]",
    "\n",
    "=",
    "\"/dev/zero\"",
    "1048577",
    "0.000001",
    "\u{0}",
];

fn shipped_scenarios() -> Vec<String> {
    let mut texts: Vec<String> = fs::read_dir(repo("scenarios"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .map(|path| fs::read_to_string(path).unwrap())
        .collect();
    texts.sort();
    texts
}

/// One edit of a text: replace, delete or insert at a position.
#[derive(Debug, Clone)]
enum Edit {
    Replace(usize, usize, &'static str),
    Delete(usize, usize),
    Insert(usize, &'static str),
    Byte(usize, u8),
}

fn edit() -> impl Strategy<Value = Edit> {
    let token = prop::sample::select(&TOKENS[..]);
    prop_oneof![
        (any::<usize>(), 1..12usize, token.clone())
            .prop_map(|(at, len, t)| Edit::Replace(at, len, t)),
        (any::<usize>(), 1..40usize).prop_map(|(at, len)| Edit::Delete(at, len)),
        (any::<usize>(), token).prop_map(|(at, t)| Edit::Insert(at, t)),
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Edit::Byte(at, b)),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    for edit in edits {
        let at = |pos: usize, bytes: &Vec<u8>| pos % (bytes.len() + 1);
        match *edit {
            Edit::Replace(pos, len, token) => {
                let start = at(pos, &bytes);
                let end = (start + len).min(bytes.len());
                bytes.splice(start..end, token.bytes());
            }
            Edit::Delete(pos, len) => {
                let start = at(pos, &bytes);
                let end = (start + len).min(bytes.len());
                bytes.drain(start..end);
            }
            Edit::Insert(pos, token) => {
                let start = at(pos, &bytes);
                bytes.splice(start..start, token.bytes());
            }
            Edit::Byte(pos, byte) => {
                if !bytes.is_empty() {
                    let i = pos % bytes.len();
                    bytes[i] = byte;
                }
            }
        }
    }
    bytes
}

/// Validation's contract for any input: a scenario (whose cost can be estimated and judged),
/// or one line naming the file.
fn validates_or_explains(dir: &Path, bytes: &[u8]) -> Result<(), TestCaseError> {
    let path = dir.join("mutated.toml");
    let text = String::from_utf8_lossy(bytes);
    match Scenario::parse(&path, &text, &Overrides::default()) {
        Ok(scenario) => {
            let estimate = budget::estimate(&scenario, 2);
            let _ = budget::admit(&scenario, &estimate, &budget::Budget::of(Some(8 << 30)));
        }
        Err(err) => {
            let message = err.to_string();
            prop_assert!(!message.contains('\n'), "one line: {message:?}");
            prop_assert!(
                message.len() <= 1000,
                "readable: {} characters",
                message.len()
            );
            // The scenario, or the trace it names.
            let folder = dir.display().to_string();
            prop_assert!(message.contains(&folder), "names the file: {message}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn mutated_scenarios_validate_or_give_one_line(
        which in 0..shipped_scenarios().len(),
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let texts = shipped_scenarios();
        let dir = tempfile::tempdir().unwrap();
        // A scenario may name a trace beside it.
        fs::copy(repo("scenarios/seed-example.csv"), dir.path().join("seed-example.csv")).unwrap();
        let bytes = apply(&texts[which], &edits);
        validates_or_explains(dir.path(), &bytes)?;
    }
}

const TRACE_SCENARIO: &str =
    "shards = [1, 2]\npolicy = \"hash-user\"\n[hold]\nms = 10\n[arrivals]\ntrace = \"t.csv\"\n";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn mutated_traces_run_or_exit_2_with_one_line_and_no_output(
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let trace = fs::read_to_string(repo("scenarios/seed-example.csv")).unwrap()
            .replace("t_ms,key", "t_ms,key,user")
            .lines()
            .enumerate()
            .map(|(i, line)| if i == 0 { line.to_owned() } else { format!("{line},{i}") })
            .collect::<Vec<_>>()
            .join("\n");
        fs::write(dir.path().join("test.toml"), TRACE_SCENARIO).unwrap();
        fs::write(dir.path().join("t.csv"), apply(&trace, &edits)).unwrap();
        let output = shardsim(dir.path(), &["run", "test.toml", "--out", "out", "--quiet", "--no-fail"]);
        let message = stderr(&output);
        prop_assert!(!message.contains("panicked"), "{message}");
        match output.status.code() {
            Some(0) => prop_assert!(dir.path().join("out/summary.csv").exists()),
            Some(2) => {
                prop_assert_eq!(message.lines().count(), 1, "{}", message);
                prop_assert!(!dir.path().join("out").exists(), "nothing written");
            }
            other => prop_assert!(false, "exit {:?}: {}", other, message),
        }
    }
}

//! Any bytes as a `check` baseline, compared with a real summary: a comparison or a one-line
//! error, never a panic (reordered, missing, repeated or garbled columns and rows).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use shardsim::check::{self, Flags, Tolerances};
use shardsim::scenario::file::CheckTable;

/// A real summary's header and one row, the reference the fuzzed baseline is compared with.
const CURRENT: &str = include_str!("../../scenarios/baselines/seed-example.csv");

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let one_line = |message: String| {
        assert!(!message.contains('\n'), "one line: {message:?}");
        assert!(message.chars().count() <= 1000, "readable: {message:?}");
    };
    let swept: Vec<String> = Vec::new();
    let current = check::parse_summary(Path::new("current"), CURRENT, &swept)
        .expect("the shipped baseline parses");
    match check::parse_summary(Path::new("baseline.csv"), text, &swept) {
        Err(err) => one_line(err.to_string()),
        Ok(baseline) => {
            let tolerances = Tolerances::resolve(
                Flags::default(),
                &CheckTable::default(),
                Path::new("s.toml"),
            )
            .expect("default tolerances");
            if let Err(err) =
                check::compare(Path::new("baseline.csv"), &baseline, &current, &tolerances)
            {
                one_line(err.to_string());
            }
        }
    }
});

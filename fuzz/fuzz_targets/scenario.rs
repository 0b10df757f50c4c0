//! Any bytes as a scenario file: validation ends in a scenario or a one-line error, and a
//! valid scenario's cost can always be estimated and judged.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use shardsim::budget;
use shardsim::scenario::{Overrides, Scenario};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match Scenario::parse(Path::new("fuzz.toml"), &text, &Overrides::default()) {
        Ok(scenario) => {
            let estimate = budget::estimate(&scenario, 2);
            let _ = budget::admit(&scenario, &estimate, &budget::Budget::of(Some(8 << 30)));
        }
        Err(err) => {
            let message = err.to_string();
            assert!(!message.contains('\n'), "one line: {message:?}");
            assert!(message.chars().count() <= 1000, "readable: {message:?}");
        }
    }
});

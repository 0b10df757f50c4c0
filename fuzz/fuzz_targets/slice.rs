//! Any bytes as a slice's `partition.json` and `runs.jsonl`: `merge`'s reading of slices ends
//! in slices or a one-line error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shardsim::partition;

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (manifest, runs) = data.split_at(split);
    let dir = std::env::temp_dir().join(format!("shardsim-fuzz-slice-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    std::fs::write(dir.join(partition::MANIFEST), manifest).expect("writable");
    std::fs::write(dir.join(partition::RUNS), runs.get(1..).unwrap_or_default()).expect("writable");
    if let Err(err) = partition::read_slices(std::slice::from_ref(&dir)) {
        let message = err.to_string();
        assert!(!message.contains('\n'), "one line: {message:?}");
        assert!(message.chars().count() <= 1000, "readable: {message:?}");
    }
});

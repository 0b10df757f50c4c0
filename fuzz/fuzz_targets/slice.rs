//! Any bytes as a slice's `partition.json` and `runs.jsonl`: `merge`'s reading of slices ends
//! in a merged folder or a one-line error, never a panic. The manifest is tried as given, then
//! (when it parses) made consistent with a small grid and the runs' bytes, so that the runs
//! themselves are parsed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shardsim::merge::{MergeRequest, merge};
use shardsim::partition::{self, Fingerprint, Manifest};

const GRID: &str = "name = \"grid\"\nshards = [1, 2]\nduration_s = 1\nreplications = 2\n\
    [hold]\ndist = \"constant\"\nms = 1\n[arrivals]\nrate_per_s = 100\n[pool]\nsize = 4\n\
    [[neighbours]]\nname = \"feed\"\nrate_per_s = 20\nhold_ms = 2\n[sweep]\n\"hold.ms\" = [0.5, 1]\n";

fn one_line(result: anyhow::Result<()>) {
    if let Err(err) = result {
        let message = err.to_string();
        assert!(!message.contains('\n'), "one line: {message:?}");
        assert!(message.chars().count() <= 1000, "readable: {message:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("shardsim-fuzz-slice-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    merge_as_slice(data, &dir);
    let _ = std::fs::remove_dir_all(&dir);
});

/// Merges `data` (a manifest, a zero byte, runs) as a slice in `dir`.
fn merge_as_slice(data: &[u8], dir: &std::path::Path) {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (manifest, runs) = data.split_at(split);
    let runs = runs.get(1..).unwrap_or_default();
    let slice = dir.join("slice-0");
    std::fs::create_dir_all(&slice).expect("writable");
    std::fs::write(dir.join("grid.toml"), GRID).expect("writable");
    std::fs::write(slice.join(partition::MANIFEST), manifest).expect("writable");
    std::fs::write(slice.join(partition::RUNS), runs).expect("writable");
    std::fs::write(slice.join("scenario.toml"), GRID).expect("writable");
    let out = dir.join("out");
    let request = |partial| MergeRequest {
        parts: std::slice::from_ref(&slice),
        out_dir: &out,
        rerun: None,
        slices: None,
        partial,
        print: false,
    };
    one_line(merge(&request(false)));
    let Ok(mut claimed) = serde_json::from_slice::<Manifest>(manifest) else {
        return;
    };
    claimed.scenario_path = dir.join("grid.toml");
    claimed.fingerprint = partition::run_fingerprint(GRID, &claimed.overrides);
    let mut hash = Fingerprint::new();
    hash.add(runs);
    claimed.runs_fingerprint = hash.finish();
    let text = serde_json::to_string(&claimed).expect("a manifest serialises");
    std::fs::write(slice.join(partition::MANIFEST), text).expect("writable");
    one_line(merge(&request(true)));
    one_line(merge(&request(false)));
}

//! Any bytes as a trace file (plain or compressed, times in any format it detects): the scan
//! before a run ends in a trace or a one-line error naming the line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shardsim::arrivals::trace;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("shardsim-fuzz-{}.csv", std::process::id()));
    std::fs::write(&path, data).expect("the temporary folder is writable");
    match trace::scan(
        &path,
        1_000_000_000,
        None,
        shardsim::arrivals::Traffic::AS_RECORDED,
        &trace::TraceTime::default(),
    ) {
        Ok(info) => assert!(info.arrivals > 0),
        Err(err) => {
            let message = err.to_string();
            assert!(!message.contains('\n'), "one line: {message:?}");
            assert!(message.chars().count() <= 1000, "readable: {message:?}");
        }
    }
});

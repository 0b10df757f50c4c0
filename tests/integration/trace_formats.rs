//! Traces as users have them: wall-clock times in every format, lines out of order within a
//! window, gzip and zstd files, each replayed against times worked out by hand.

use std::fs;
use std::io::Write;

use shardsim::arrivals::ArrivalSource;
use shardsim::scenario::{Overrides, Scenario};

use crate::cli::{assert_mentions, rejects};

/// Three likes 1.5 ms and 2 s apart, on the night of 2025-11-29 at 14:12:07.123 UTC.
const EXPECTED_NS: [u64; 3] = [0, 1_500_000, 2_001_500_000];

/// The replayed arrival times of `trace` (written to `name`) under `[arrivals]` `extra`.
fn replayed(name: &str, trace: &[u8], extra: &str) -> Result<Vec<u64>, String> {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(name), trace).unwrap();
    let text = format!("shards = [2]\n[hold]\nms = 1\n[arrivals]\ntrace = \"{name}\"\n{extra}");
    let scenario = Scenario::parse(&dir.path().join("test.toml"), &text, &Overrides::default())
        .map_err(|err| err.to_string())?;
    let mut source =
        ArrivalSource::open(scenario.stream_plan(), scenario.seed()).map_err(|e| e.to_string())?;
    let mut arrivals = Vec::new();
    source
        .fill(&mut arrivals, usize::MAX)
        .map_err(|e| e.to_string())?;
    Ok(arrivals.iter().map(|a| a.at).collect())
}

fn csv(header: &str, times: [&str; 3]) -> Vec<u8> {
    format!(
        "{header},key\n{},p\n{},p\n{},q\n",
        times[0], times[1], times[2]
    )
    .into_bytes()
}

#[test]
fn every_time_format_replays_the_same_night_from_its_first_line() {
    let cases: [(&str, [&str; 3], &str); 7] = [
        (
            "timestamp",
            [
                "2025-11-29T19:42:07.123+05:30",
                "2025-11-29T19:42:07.1245+05:30",
                "2025-11-29T19:42:09.1245+05:30",
            ],
            "",
        ),
        (
            "time",
            [
                "2025-11-29 14:12:07.123000 UTC",
                "2025-11-29 14:12:07.124500 UTC",
                "2025-11-29 14:12:09.124500 UTC",
            ],
            "",
        ),
        (
            "ts",
            ["1764425527.123", "1764425527.1245", "1764425529.1245"],
            "",
        ),
        (
            "ts",
            ["1764425527123", "1764425527124.5", "1764425529124.5"],
            "",
        ),
        (
            "at",
            ["1764425527123000", "1764425527124500", "1764425529124500"],
            "time_column = \"at\"\ntime_format = \"epoch-us\"\n",
        ),
        (
            "t",
            [
                "29/Nov/2025:19:42:07.123 +0530",
                "29/Nov/2025:19:42:07.1245 +0530",
                "29/Nov/2025:19:42:09.1245 +0530",
            ],
            "time_column = \"t\"\ntime_format = \"%d/%b/%Y:%H:%M:%S%.f %z\"\n",
        ),
        ("t_ms", ["0", "1.5", "2001.5"], ""),
    ];
    for (header, times, extra) in cases {
        assert_eq!(
            replayed("trace.csv", &csv(header, times), extra),
            Ok(EXPECTED_NS.to_vec()),
            "{header} {times:?}"
        );
    }
}

#[test]
fn compressed_traces_replay_as_the_plain_one() {
    let plain = csv(
        "ts",
        ["1764425527.123", "1764425527.1245", "1764425529.1245"],
    );
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(&plain).unwrap();
    let gzip = gzip.finish().unwrap();
    let zstd = zstd::encode_all(&plain[..], 3).unwrap();
    for (name, bytes) in [("trace.csv.gz", &gzip), ("trace.csv.zst", &zstd)] {
        assert_eq!(
            replayed(name, bytes, ""),
            Ok(EXPECTED_NS.to_vec()),
            "{name}"
        );
    }
    // Cut short, the archive is refused in one line that says how far it got.
    let cut = &gzip[..gzip.len() - 12];
    let message = replayed("trace.csv.gz", cut, "").unwrap_err();
    assert!(
        message.contains("cannot read the trace after line"),
        "{message}"
    );
}

#[test]
fn lines_out_of_order_within_the_window_replay_in_order_and_further_back_is_refused() {
    let shuffled = b"ts_ms,key\n1764425527124.5,p\n1764425527123,p\n1764425529124.5,q\n";
    assert_eq!(
        replayed(
            "trace.csv",
            shuffled,
            "time_column = \"ts_ms\"\nreorder_window_s = 0.01\n"
        ),
        Ok(EXPECTED_NS.to_vec())
    );
    let message = replayed("trace.csv", shuffled, "time_column = \"ts_ms\"\n").unwrap_err();
    assert!(
        message.contains("line 3") && message.contains("1.5 ms before line 2's"),
        "{message}"
    );
    let late = b"ts_ms,key\n1764425529124.5,p\n1764425527123,p\n";
    let message = replayed(
        "trace.csv",
        late,
        "time_column = \"ts_ms\"\nreorder_window_s = 1\n",
    )
    .unwrap_err();
    assert!(
        message.contains("line 3") && message.contains("more than arrivals.reorder_window_s (1 s)"),
        "{message}"
    );
}

#[test]
fn a_time_that_could_be_several_units_or_formats_is_refused_naming_what_was_tried() {
    for (trace, words) in [
        (
            &b"ts,key\n1764425,p\n"[..],
            &["line 2", "ambiguous", "epoch-ms"][..],
        ),
        (b"ts,key\n5000000000,p\n", &["line 2", "year 2128"]),
        (
            b"timestamp,key\n2025-11-29T19:42:07+05:30,p\n1764425527,p\n",
            &["line 3", "is not rfc3339 like the lines before it"],
        ),
    ] {
        let message = replayed("trace.csv", trace, "").unwrap_err();
        for word in words {
            assert!(message.contains(word), "{word}: {message}");
        }
    }
    let message = replayed("trace.csv", b"ts,key\n1,p\n", "time_format = \"%H:%M\"\n").unwrap_err();
    assert!(
        message.contains("arrivals.time_format") && message.contains("no zone"),
        "{message}"
    );
}

#[test]
fn a_bad_trace_format_is_one_line_exit_2_and_nothing_written() {
    let scenario = "shards = [2]\n[hold]\nms = 1\n[arrivals]\ntrace = \"trace.csv\"\ntime_format = \"seconds\"\n";
    let message = rejects(&[("test.toml", scenario), ("trace.csv", "ts\n1\n")], &[]);
    assert_mentions(&message, &["test.toml", "arrivals.time_format", "rfc3339"]);
    let no_trace = "shards = [2]\nduration_s = 1\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 10\nreorder_window_s = 1\n";
    let message = rejects(&[("test.toml", no_trace)], &[]);
    assert_mentions(
        &message,
        &["arrivals.reorder_window_s", "set arrivals.trace too"],
    );
}

/// The final's profile written as a dashboard's per-second export (wall-clock times, one count
/// a second): the same night, offered as the same Poisson rates.
fn final_counts_csv() -> String {
    let rates = [2000, 2800, 3600, 4300, 5000, 4500, 3700, 3000, 2400, 2000];
    let mut text = String::from("timestamp,count\n");
    for (minute, rate) in rates.iter().enumerate() {
        for second in 0..60 {
            let at = 1_795_960_800 + minute * 60 + second; // 2026-11-29T14:00:00Z
            text += &format!("{at}.000,{rate}\n");
        }
    }
    text
}

#[test]
fn a_counts_export_replays_as_the_profile_it_counts() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("peak.csv"), final_counts_csv()).unwrap();
    let text = "shards = [8]\n[hold]\nms = 1\n[arrivals]\ncounts = \"peak.csv\"\n";
    let counts =
        Scenario::parse(&dir.path().join("test.toml"), text, &Overrides::default()).unwrap();
    let profile = Scenario::load(
        &crate::common::repo("scenarios/final.toml"),
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(counts.duration_s(), 600.0);
    assert_eq!(counts.peak_offered_per_s(), 5000.0);
    assert_eq!(counts.expected_arrivals(), profile.expected_arrivals());
    // Minutes of counts as rates per second, from a header naming the rate instead.
    fs::write(
        dir.path().join("minutes.csv"),
        "time,rate\n2026-11-29T14:00:00Z,2000\n2026-11-29T14:01:00Z,5000\n",
    )
    .unwrap();
    let text = "shards = [8]\n[hold]\nms = 1\n[arrivals]\ncounts = \"minutes.csv\"\n";
    let minutes =
        Scenario::parse(&dir.path().join("test.toml"), text, &Overrides::default()).unwrap();
    assert_eq!(minutes.duration_s(), 120.0);
    assert_eq!(minutes.expected_arrivals(), 420_000);
}

#[test]
fn a_bad_counts_file_is_one_line_exit_2_and_nothing_written() {
    let scenario = "shards = [2]\n[hold]\nms = 1\n[arrivals]\ncounts = \"peak.csv\"\n";
    for (counts, words) in [
        (
            "ts,count\n1795960800,1\n1795960801,-2\n",
            &["peak.csv: line 3", "≥ 0"][..],
        ),
        (
            "ts,count\n1795960800,1\n1795960801,1\n1795960803,1\n",
            &["peak.csv: line 4", "a gap of 1 intervals"],
        ),
        (
            "ts,count\n1795960800,1\n1795960801,1\n1795960801,1\n",
            &["peak.csv: line 4", "repeats the interval of line 3"],
        ),
        (
            "ts,likes\n1795960800,1\n",
            &["peak.csv: line 1", "arrivals.count_column"],
        ),
    ] {
        let message = rejects(&[("test.toml", scenario), ("peak.csv", counts)], &[]);
        assert_mentions(&message, words);
    }
    let stray = "shards = [2]\nduration_s = 1\n[hold]\nms = 1\n[arrivals]\nrate_per_s = 10\ninterval_s = 60\n";
    let message = rejects(&[("test.toml", stray)], &[]);
    assert_mentions(
        &message,
        &["arrivals.interval_s", "set arrivals.counts too"],
    );
}

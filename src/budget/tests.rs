use super::*;
use std::path::Path;

fn scenario(replications: u32, window_s: f64) -> Scenario {
    let text = format!(
        "shards = [1, 2, 4]\nduration_s = 600\nwindow_s = {window_s}\nreplications = {replications}\n\
         [hold]\nms = 1\n[arrivals]\nrate_per_s = 10\n"
    );
    Scenario::parse(Path::new("t.toml"), &text, &Default::default()).unwrap()
}

#[test]
fn replications_beyond_the_first_cost_only_their_summaries() {
    // Measured: 1,000 replications of this scenario peak at 24 MB, 3,000 at 35 MB; the
    // estimate lies between the peak and three times it.
    let mb = |r| crate::time::ns_to_ms(estimate(&scenario(r, 1.0), 2).fixed_bytes);
    assert!((24.0..72.0).contains(&mb(1000)), "{} MB", mb(1000));
    assert!((35.0..105.0).contains(&mb(3000)), "{} MB", mb(3000));
    assert!(
        (mb(3000) - mb(1000)) < 40.0,
        "grows by kilobytes a replication"
    );
    assert_eq!(
        estimate(&scenario(10_000, 1.0), 2).largest.0,
        "replications"
    );
}

#[test]
fn the_fluid_queue_grows_past_the_rows_ceiling_and_drains_below_it() {
    let segments = |rates: &[f64]| -> Vec<RateSegment> {
        rates
            .iter()
            .enumerate()
            .map(|(i, &rate_per_s)| RateSegment {
                end: (i as u64 + 1) * 60_000_000_000,
                rate_per_s,
            })
            .collect()
    };
    // One row at 1 ms serves 1,000 a second: 1,500 for a minute queues 30,000, and 800 for
    // the next drains 200 a second, so 150 s later it is empty.
    let q = fluid_over(
        &segments(&[1500.0, 800.0, 800.0, 800.0]),
        1.0,
        1000.0,
        None,
        None,
    );
    assert!((q.most_queued - 30_000.0).abs() < 1e-6, "{q:?}");
    assert!(
        (q.busy_arrivals - (90_000.0 + 800.0 * 150.0)).abs() < 1e-6,
        "{q:?}"
    );
    // Below the ceiling nothing queues; batching caps what reaches the rows.
    let calm = fluid_over(&segments(&[900.0]), 1.0, 1000.0, None, None);
    assert_eq!(calm.most_queued, 0.0);
    let batched = fluid_over(&segments(&[5000.0]), 1.0, 1000.0, Some(20.0), None);
    assert_eq!(batched.most_queued, 0.0);
    // Locking reads that hold the rows half the time halve the likes' ceiling.
    let reads = LockingReads {
        per_like: 1.0,
        hold_s: 0.5 / 700.0,
        jobs: 2.0,
    };
    let shared = fluid_over(&segments(&[700.0]), 1.0, 1000.0, None, Some(reads));
    assert!(
        (shared.most_queued - 200.0 * 60.0).abs() < 1e-6,
        "{shared:?}"
    );
}

#[test]
fn the_default_budget_is_the_least_of_half_the_machine_the_cgroup_and_slurm() {
    let meminfo = "MemTotal:       16777216 kB\nMemFree: 1 kB\n";
    let vars = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    };
    let none = vars(&[]);
    let half = budget_from(Some(meminfo), None, &none);
    assert_eq!(half.bytes, 8 << 30);
    assert!(half.source.contains("half of this machine"), "{half:?}");
    let cgroup = budget_from(Some(meminfo), Some(4 << 30), &none);
    assert_eq!(cgroup.bytes, 4 << 30);
    assert!(cgroup.source.contains("cgroup"), "{cgroup:?}");
    let per_node = vars(&[("SLURM_MEM_PER_NODE", "2048")]);
    let slurm = budget_from(Some(meminfo), Some(4 << 30), &per_node);
    assert_eq!(slurm.bytes, 2 << 30);
    assert!(slurm.source.contains("SLURM_MEM_PER_NODE"), "{slurm:?}");
    let per_cpu = vars(&[("SLURM_MEM_PER_CPU", "1000"), ("SLURM_CPUS_ON_NODE", "2")]);
    assert_eq!(budget_from(Some(meminfo), None, &per_cpu).bytes, 2000 << 20);
    // A larger limit than half the machine does not raise the budget.
    let big = vars(&[("SLURM_MEM_PER_NODE", "65536")]);
    assert_eq!(
        budget_from(Some(meminfo), Some(64 << 30), &big).bytes,
        8 << 30
    );
    assert_eq!(budget_from(None, None, &none).bytes, FALLBACK_BUDGET);
}

#[test]
fn a_run_over_the_budget_is_refused_naming_the_field() {
    let big = scenario(3, 0.0001);
    let err = admit(&big, &estimate(&big, 2), &Budget::of(Some(4 << 30))).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("window_s") && text.contains("--max-memory"),
        "{text}"
    );
    let small = scenario(1, 1.0);
    let limit = admit(&small, &estimate(&small, 2), &Budget::of(Some(4 << 30))).unwrap();
    assert_eq!(limit, MAX_QUEUED, "a small run leaves the full queue limit");
}

//! The exact model: the seed's example, and the engine against a plain reference model over
//! random operation sequences.

use proptest::prelude::*;
use shardsim::model::clients::{ClientPolicy, Features, OnTimeout, Pool};
use shardsim::model::rows::{SkipLocked, mix64};
use shardsim::model::{
    Arrival, Engine, EngineConfig, Grant, KeyCounts, NoEvents, Observer, Pipeline, Policy,
    ShardedCounter, SimTime, ms,
};

#[test]
fn reproduces_the_seed_example_exactly() {
    // ["ShardedCounter","increment","increment","increment","increment","get","increment"]
    // [[2,10],["p",0],["p",0],["p",0],["p",5],["p"],["q",0]] → [null,0,0,10,5,4,0]
    let mut counter = ShardedCounter::new(2, ms(10));
    assert_eq!(counter.increment("p", ms(0)), Ok(0));
    assert_eq!(counter.increment("p", ms(0)), Ok(0));
    assert_eq!(counter.increment("p", ms(0)), Ok(ms(10)));
    assert_eq!(counter.increment("p", ms(5)), Ok(ms(5)));
    assert_eq!(counter.get("p"), 4);
    assert_eq!(counter.increment("q", ms(0)), Ok(0));
    assert_eq!(counter.get("q"), 1);
    assert_eq!(counter.get("unknown"), 0);
}

/// The seed's reference solution, transcribed as plainly as possible: a linear scan for the
/// earliest-free slot, and the other policies by their definitions.
struct Reference {
    shards: usize,
    policy: Policy,
    free_at: Vec<Vec<SimTime>>,
    counts: Vec<u64>,
    cursors: Vec<usize>,
}

impl Reference {
    fn new(shards: usize, policy: Policy, keys: usize) -> Self {
        Reference {
            shards,
            policy,
            free_at: vec![vec![0; shards]; keys],
            counts: vec![0; keys],
            cursors: vec![0; keys],
        }
    }

    fn increment(&mut self, arrival: &Arrival) -> (usize, SimTime) {
        let key = arrival.key as usize;
        let free = &mut self.free_at[key];
        let slot = match self.policy {
            Policy::EarliestFree => {
                let mut best = 0;
                for i in 1..self.shards {
                    if free[i] < free[best] {
                        best = i;
                    }
                }
                best
            }
            Policy::Random => ((arrival.random_bits as u128 * self.shards as u128) >> 64) as usize,
            Policy::RoundRobin => {
                let slot = self.cursors[key];
                self.cursors[key] = (slot + 1) % self.shards;
                slot
            }
            Policy::HashUser => (mix64(arrival.user) % self.shards as u64) as usize,
            Policy::PowerOfTwo => {
                let first = ((arrival.random_bits & 0xFFFF_FFFF) * self.shards as u64) >> 32;
                let second = ((arrival.random_bits >> 32) * self.shards as u64) >> 32;
                if free[second as usize] < free[first as usize] {
                    second as usize
                } else {
                    first as usize
                }
            }
            Policy::SkipLocked => {
                let (slot, ready) = skip_locked_reference(free, arrival);
                let start = ready.max(free[slot]);
                free[slot] = start + arrival.hold;
                self.counts[key] += 1;
                return (slot, start);
            }
        };
        let start = arrival.at.max(free[slot]);
        free[slot] = start + arrival.hold;
        self.counts[key] += 1;
        (slot, start)
    }
}

/// The `skip-locked` settings of the property tests: two tries, 3 ns each.
const SKIP_LOCKED: SkipLocked = SkipLocked {
    tries: 2,
    try_ns: 3,
};

/// `skip-locked` by its definition: the rows in the order start, start + stride, … (mod N),
/// the stride the first from the drawn one prime to N; try k at `at + 3k` takes a free row,
/// and after the tries the update waits for the last row from `at + 3 × tries`.
fn skip_locked_reference(free: &[SimTime], arrival: &Arrival) -> (usize, SimTime) {
    let n = free.len() as u64;
    let start = ((arrival.random_bits & 0xFFFF_FFFF) * n) >> 32;
    let drawn = ((arrival.random_bits >> 32) * n) >> 32;
    let coprime = |s: u64| {
        (1..=s)
            .filter(|d| s.is_multiple_of(*d) && n.is_multiple_of(*d))
            .count()
            == 1
    };
    let stride = if n == 1 {
        1
    } else {
        (0..n - 1)
            .map(|k| (drawn + k) % (n - 1) + 1)
            .find(|&s| coprime(s))
            .expect("1 is prime to n")
    };
    let tries = (SKIP_LOCKED.tries as u64).min(n);
    let order: Vec<usize> = (0..tries)
        .map(|k| ((start + k * stride) % n) as usize)
        .collect();
    for (k, &slot) in order.iter().enumerate() {
        let at = arrival.at + k as u64 * SKIP_LOCKED.try_ns;
        if free[slot] <= at {
            return (slot, at);
        }
    }
    (
        *order.last().expect("at least one try"),
        arrival.at + tries * SKIP_LOCKED.try_ns,
    )
}

/// Records every decision of the engine, and the key's total after it.
#[derive(Default)]
struct Recorder(Vec<(Grant, u64)>);

impl Observer for Recorder {
    fn on_increment(&mut self, arrival: &Arrival, grant: &Grant, rows: &dyn KeyCounts) {
        self.0.push((*grant, rows.total(arrival.key)));
    }
}

/// An observer that looks at nothing but is not silent: the engine stays on its general path.
struct Watching;

impl Observer for Watching {
    fn on_increment(&mut self, _: &Arrival, _: &Grant, _: &dyn KeyCounts) {}
}

/// Every decision as (arrival time, key, arrival's random bits, user, hold, start, slot).
#[derive(Default)]
struct Decisions(Vec<(SimTime, u32, u64, u64, SimTime, SimTime, u32)>);

impl Observer for Decisions {
    fn on_increment(&mut self, arrival: &Arrival, grant: &Grant, _: &dyn KeyCounts) {
        self.0.push((
            arrival.at,
            arrival.key,
            arrival.random_bits,
            arrival.user,
            arrival.hold,
            grant.start,
            grant.slot,
        ));
    }
}

/// An engine of `shards` rows per key, measuring everything, three hot keys reported.
fn test_config(shards: u32, policy: Policy, horizon: SimTime, window: SimTime) -> EngineConfig {
    EngineConfig {
        skip_locked: SKIP_LOCKED,
        shards,
        policy,
        horizon,
        window,
        key_hint: 1,
        measure_from: 0,
        features: Default::default(),
        seed: 1,
        hot_keys: 3,
        adaptive: None,
        hot_key: 0,
        queue_limit: u64::MAX,
        likes: None,
    }
}

fn policy() -> impl Strategy<Value = Policy> {
    prop::sample::select(Policy::ALL.to_vec())
}

/// The policies the event-driven pipeline runs (power-of-two and skip-locked choose by the
/// rows' free times: exact core only).
fn pipeline_policy() -> impl Strategy<Value = Policy> {
    prop::sample::select(
        Policy::ALL
            .into_iter()
            .filter(|p| !matches!(p, Policy::PowerOfTwo | Policy::SkipLocked))
            .collect::<Vec<_>>(),
    )
}

/// Random arrival sequences: small gaps (many ties and queues), a few keys and users.
fn arrivals() -> impl Strategy<Value = Vec<Arrival>> {
    prop::collection::vec((0u64..8, 0u32..3, 0u64..25, any::<u64>(), 0u64..6), 1..120).prop_map(
        |steps| {
            let mut now = 0;
            steps
                .into_iter()
                .map(|(gap, key, hold, random_bits, user)| {
                    now += gap;
                    Arrival {
                        at: now,
                        hold,
                        random_bits,
                        user,
                        key,
                        endpoint: 0,
                    }
                })
                .collect()
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn the_engine_matches_the_reference_model(
        shards in 1u32..6,
        policy in policy(),
        arrivals in arrivals(),
        window in 1u64..20,
        extra in 0u64..40,
        chunk in 1usize..50,
    ) {
        let last = arrivals.last().unwrap().at;
        let horizon = last + 1 + extra;
        let config = test_config(shards, policy, horizon, window);
        let mut engine = Engine::new(config, Recorder::default());
        for part in arrivals.chunks(chunk) {
            engine.feed(part);
        }
        let (run, recorder) = engine.finish();

        let mut reference = Reference::new(shards as usize, policy, 3);
        let mut starts = Vec::new();
        // Every arrival observed once: the zip below must not stop early.
        prop_assert_eq!(recorder.0.len(), arrivals.len());
        for (arrival, (grant, total)) in arrivals.iter().zip(&recorder.0) {
            let (slot, start) = reference.increment(arrival);
            prop_assert_eq!((grant.slot as usize, grant.start), (slot, start));
            prop_assert_eq!(*total, reference.counts[arrival.key as usize]);
            starts.push(start);
        }
        prop_assert_eq!(run.arrivals, arrivals.len() as u64);
        // Per-key statistics: every touched key, most increments first, ties by key id.
        let mut per_key: Vec<(u64, u32, u64)> = (0..3u32)
            .map(|key| {
                let of_key = arrivals.iter().zip(&starts).filter(|(a, _)| a.key == key);
                let count = of_key.clone().count() as u64;
                let max_wait = of_key.map(|(a, &s)| s - a.at).max().unwrap_or(0);
                (count, key, max_wait)
            })
            .filter(|&(count, _, _)| count > 0)
            .collect();
        per_key.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let reported: Vec<(u64, u32, u64)> =
            run.hot_keys.iter().map(|k| (k.arrivals, k.key, k.max_wait_ns)).collect();
        prop_assert_eq!(reported, per_key);
        let completed = arrivals.iter().zip(&starts).filter(|&(a, &s)| s + a.hold <= horizon).count();
        prop_assert_eq!(run.completed, completed as u64);
        let waits: Vec<u64> = arrivals.iter().zip(&starts).map(|(a, &s)| s - a.at).collect();
        prop_assert_eq!(run.waits.max_ns(), *waits.iter().max().unwrap());
        let mean = (waits.iter().sum::<u64>() as f64 / waits.len() as f64).round() as u64;
        prop_assert_eq!(run.waits.summary().mean_ns, mean);

        // Backlog after arrival i: earlier-or-same arrivals whose hold starts later than t_i.
        let backlog_max = (0..arrivals.len())
            .map(|i| (0..=i).filter(|&j| starts[j] > arrivals[i].at).count() as u64)
            .max()
            .unwrap();
        prop_assert_eq!(run.backlog_max, backlog_max);
        let pending_at = |t: SimTime| {
            arrivals.iter().zip(&starts).filter(|&(a, &s)| a.at < t && s >= t).count() as u64
        };
        prop_assert_eq!(run.backlog_final, pending_at(horizon));

        prop_assert_eq!(run.windows.len(), horizon.div_ceil(window) as usize);
        for (k, row) in run.windows.iter().enumerate() {
            let (begin, end) = (k as u64 * window, (k as u64 + 1) * window);
            let arrived = arrivals.iter().filter(|a| a.at >= begin && a.at < end).count() as u64;
            let started = starts.iter().filter(|&&s| s >= begin && s < end.min(horizon)).count() as u64;
            prop_assert_eq!(row.arrivals, arrived);
            prop_assert_eq!(row.started, started);
            prop_assert_eq!(row.backlog, pending_at(end.min(horizon)));
            let window_max = arrivals.iter().zip(&waits)
                .filter(|(a, _)| a.at >= begin && a.at < end)
                .map(|(_, &w)| w)
                .max();
            prop_assert_eq!(row.wait_max_ns(), window_max);
        }
    }

    #[test]
    fn the_one_key_fast_path_matches_the_general_path(
        shards in prop::sample::select(vec![1u32, 2, 3, 4, 8, 16]),
        arrivals in arrivals(),
        one_key in any::<bool>(),
        window in 1u64..20,
        extra in 0u64..40,
        warm_up in 0u64..30,
        queue_limit in prop::sample::select(vec![2u64, 5, 20, u64::MAX]),
        huge_hold_at in prop::option::of(0usize..120),
        chunk in prop_oneof![1usize..50, Just(usize::MAX)],
        policy in prop::sample::select(vec![Policy::EarliestFree, Policy::Random]),
    ) {
        // A silent observer lets the engine take its one-key loop; one that watches keeps it
        // on the general path. Every figure of the run must be the same, whatever interrupts
        // the loop: another key, the warm-up, saturation, a hold too long for packed rows.
        let mut arrivals = arrivals;
        if one_key {
            arrivals.iter_mut().for_each(|a| a.key = 0);
        }
        if let Some(at) = huge_hold_at.filter(|&at| at < arrivals.len()) {
            arrivals[at].hold = 1 << 58;
        }
        let horizon = arrivals.last().unwrap().at + 1 + extra;
        let config = EngineConfig {
            policy,
            hot_keys: 0,
            measure_from: warm_up,
            queue_limit,
            ..test_config(shards, policy, horizon, window)
        };
        let mut fast = Engine::new(config.clone(), NoEvents);
        let mut general = Engine::new(config, Watching);
        for part in arrivals.chunks(chunk) {
            fast.feed(part);
            general.feed(part);
        }
        let (fast, _) = fast.finish();
        let (general, _) = general.finish();
        let (fast, general) = (format!("{fast:?}"), format!("{general:?}"));
        let first_difference = fast.bytes().zip(general.bytes()).position(|(a, b)| a != b);
        let around = |text: &str, at: usize| text[at.saturating_sub(120)..(at + 80).min(text.len())].to_string();
        prop_assert!(
            fast == general,
            "fast: …{}…\ngeneral: …{}…",
            first_difference.map_or_else(String::new, |at| around(&fast, at)),
            first_difference.map_or_else(String::new, |at| around(&general, at)),
        );
    }

    #[test]
    fn the_pipeline_matches_the_fast_path(
        shards in 1u32..6,
        policy in pipeline_policy(),
        arrivals in arrivals(),
        window in 1u64..20,
        extra in 0u64..40,
        chunk in 1usize..50,
    ) {
        // Without machine sections the event-driven pipeline must decide every update as the
        // closed form does: the same start for each arrival, the same figures and windows.
        let last = arrivals.last().unwrap().at;
        let horizon = last + 1 + extra;
        let config = test_config(shards, policy, horizon, window);
        let mut engine = Engine::new(config.clone(), Decisions::default());
        let mut pipeline = Pipeline::new(config, Default::default(), Decisions::default());
        for part in arrivals.chunks(chunk) {
            engine.feed(part);
            pipeline.feed(part);
        }
        let (fast, mut fast_decisions) = engine.finish();
        let (event, mut event_decisions) = pipeline.finish();
        // The pipeline grants in time order, the closed form in arrival order. Under
        // earliest-free, rows of one key released at the same instant with updates waiting
        // may go to them in another order (the same starts, other slot labels).
        for decisions in [&mut fast_decisions, &mut event_decisions] {
            if policy == Policy::EarliestFree {
                decisions.0.iter_mut().for_each(|d| d.6 = 0);
            }
            decisions.0.sort_unstable();
        }
        prop_assert_eq!(fast_decisions.0, event_decisions.0);
        prop_assert_eq!(fast.arrivals, event.arrivals);
        prop_assert_eq!(fast.completed, event.completed);
        prop_assert_eq!(fast.waits.summary(), event.waits.summary());
        prop_assert_eq!(fast.backlog_max, event.backlog_max);
        prop_assert_eq!(fast.backlog_final, event.backlog_final);
        prop_assert_eq!(fast.windows, event.windows);
        prop_assert_eq!(fast.hot_keys, event.hot_keys);
        prop_assert_eq!(fast.keys_touched, event.keys_touched);
    }

    #[test]
    fn client_behaviours_that_never_fire_change_nothing(
        shards in 1u32..5,
        policy in pipeline_policy(),
        arrivals in arrivals(),
        retries in 0u32..3,
        idempotent in any::<bool>(),
        cancel in any::<bool>(),
        extra in 0u64..40,
    ) {
        // A deadline longer than any wait can be (the horizon plus every hold) and a pool
        // with a connection for every arrival are never felt: the pipeline with them must
        // give the closed form's figures exactly.
        let last = arrivals.last().unwrap().at;
        let horizon = last + 1 + extra;
        let longest_wait = horizon + arrivals.iter().map(|a| a.hold).sum::<u64>();
        let features = Features {
            client: Some(ClientPolicy {
                timeout: longest_wait + 1,
                on_timeout: if cancel { OnTimeout::Cancel } else { OnTimeout::Orphan },
                retries,
                backoff: 1,
                idempotent,
            }),
            pool: Some(Pool { size: arrivals.len() as u32, neighbours: Vec::new() }),
            ..Features::default()
        };
        let plain = test_config(shards, policy, horizon, 5);
        let config = EngineConfig { features: std::sync::Arc::new(features), ..plain.clone() };
        let mut engine = Engine::new(plain, NoEvents);
        let mut pipeline = Pipeline::new(config, Default::default(), NoEvents);
        engine.feed(&arrivals);
        pipeline.feed(&arrivals);
        let (fast, _) = engine.finish();
        let (event, _) = pipeline.finish();
        let client = event.extended.as_ref().and_then(|e| e.client).expect("a client policy");
        prop_assert_eq!(client.counts.timeouts, 0);
        prop_assert_eq!(client.counts.attempts, client.counts.likes);
        prop_assert_eq!(fast.waits.summary(), event.waits.summary());
        prop_assert_eq!(fast.arrivals, event.arrivals);
        prop_assert_eq!(fast.completed, event.completed);
        prop_assert_eq!(fast.backlog_max, event.backlog_max);
        prop_assert_eq!(fast.backlog_final, event.backlog_final);
        prop_assert_eq!(fast.windows, event.windows);
    }

    #[test]
    fn a_cancelled_update_never_waits_past_its_deadline(
        shards in 1u32..5,
        policy in pipeline_policy(),
        arrivals in arrivals(),
        timeout in 1u64..30,
        retries in 0u32..3,
        extra in 0u64..40,
    ) {
        // Under cancel an update that has not taken its row by its deadline leaves the line:
        // no wait recorded is longer than the deadline, and every like is accounted for.
        let last = arrivals.last().unwrap().at;
        let horizon = last + 1 + extra;
        let features = Features {
            client: Some(ClientPolicy {
                timeout,
                on_timeout: OnTimeout::Cancel,
                retries,
                backoff: 1,
                idempotent: true,
            }),
            ..Features::default()
        };
        let config = EngineConfig {
            features: std::sync::Arc::new(features),
            ..test_config(shards, policy, horizon, 5)
        };
        let mut pipeline = Pipeline::new(config, Default::default(), NoEvents);
        pipeline.feed(&arrivals);
        let (event, _) = pipeline.finish();
        prop_assert!(event.waits.max_ns() <= timeout);
        // Every like ends succeeded or failed, or its retry is pending; every attempt either
        // ran or timed out (a cancelled one never runs).
        let client = event.extended.as_ref().and_then(|e| e.client.as_ref());
        prop_assert!(client.is_some(), "the client's figures are reported");
        let n = &client.unwrap().counts;
        prop_assert_eq!(n.likes, arrivals.len() as u64);
        prop_assert_eq!(n.likes, n.succeeded + n.failed + n.pending);
        prop_assert_eq!(n.attempts, n.executions + n.timeouts);
    }

    #[test]
    fn the_counter_matches_the_seed_reference(
        slots in 1u32..5,
        hold in 0u64..30,
        ops in prop::collection::vec((0u8..4, 0u64..10, any::<bool>()), 1..150),
    ) {
        // Each op: a key, a time step and whether it is a get; time never decreases per key.
        let mut counter = ShardedCounter::new(slots, hold);
        let mut reference = Reference::new(slots as usize, Policy::EarliestFree, 4);
        let mut now = [0u64; 4];
        for (key, step, is_get) in ops {
            let name = format!("k{key}");
            if is_get {
                prop_assert_eq!(counter.get(&name), reference.counts[key as usize]);
                continue;
            }
            now[key as usize] += step;
            let arrival = Arrival { at: now[key as usize], hold, random_bits: 0, user: 0, key: u32::from(key), endpoint: 0 };
            let (_, start) = reference.increment(&arrival);
            prop_assert_eq!(counter.increment(&name, arrival.at), Ok(start - arrival.at));
        }
    }
}

mod adaptive {
    use shardsim::model::adaptive::{AdaptivePolicy, GrowWhen};
    use shardsim::model::{Arrival, Engine, EngineConfig, Grant, KeyCounts, Observer, Policy, ms};

    #[derive(Default)]
    struct Slots(Vec<(u64, u32, u64)>);

    impl Observer for Slots {
        fn on_increment(&mut self, arrival: &Arrival, grant: &Grant, _: &dyn KeyCounts) {
            self.0
                .push((arrival.at, grant.slot, grant.start - arrival.at));
        }
    }

    #[test]
    fn a_key_grows_when_its_signal_crosses_and_writers_see_it_after_their_cache() {
        // One key, 10 ms holds, a like every 5 ms: one row is offered twice what it can take,
        // so nearly every wait in the first second passes 5 ms. The window ends at 1 s: the
        // first like after it closes the window, the growth to 2 rows is published at 1 s and
        // writers use it from 1.5 s (their cache lives 0.5 s).
        let policy = AdaptivePolicy {
            start: 1,
            max: 4,
            factor: 2.0,
            grow_when: GrowWhen::P99Wait(ms(5)),
            window: ms(1000),
            cache_ttl: ms(500),
            mean_hold_ns: 10e6,
        };
        let config = EngineConfig {
            shards: 1,
            policy: Policy::EarliestFree,
            skip_locked: super::SKIP_LOCKED,
            horizon: ms(3000),
            window: ms(1000),
            key_hint: 1,
            measure_from: 0,
            features: Default::default(),
            seed: 1,
            hot_keys: 0,
            adaptive: Some(policy),
            hot_key: 0,
            queue_limit: u64::MAX,
            likes: None,
        };
        let arrivals: Vec<Arrival> = (0..600)
            .map(|i| Arrival {
                at: ms(i * 5),
                hold: ms(10),
                random_bits: 0,
                user: 0,
                key: 0,
                endpoint: 0,
            })
            .collect();
        let mut engine = Engine::new(config, Slots::default());
        for (done, chunk) in arrivals.chunks(1).enumerate() {
            engine.feed(chunk);
            // Counts are conserved across growth: after every increment the rows hold them all.
            assert_eq!(engine.rows().grand_total(), done as u64 + 1);
        }
        let (run, slots) = engine.finish();
        let first = run.growths[0];
        assert_eq!(
            (first.published, first.effective, first.from, first.to),
            (ms(1000), ms(1500), 1, 2)
        );
        let slot_at = |t: u64| slots.0.iter().find(|s| s.0 == ms(t)).unwrap().1;
        assert_eq!(
            slot_at(1495),
            0,
            "writers still use one row before their cache expires"
        );
        assert_eq!(slot_at(1500), 1, "the new row, free at once, from 1.5 s");
        // Still overloaded with 2 rows (2 × 100/s < 200/s): it grows again at 2 s, to 4.
        assert_eq!(run.growths.len(), 2);
        assert_eq!((run.growths[1].published, run.growths[1].to), (ms(2000), 4));
        assert_eq!(run.rows_total, 4);
        assert_eq!(run.windows.last().unwrap().rows, 4);
        assert!(slots.0.iter().filter(|s| s.0 >= ms(2500)).all(|s| s.1 < 4));
    }
}

//! The sweep: every shard count of a scenario simulated over one arrival stream.
//!
//! The stream is generated once, in chunks, and each chunk is fed to every shard count's
//! engine in parallel while the next chunk is generated, so all shard counts see exactly the
//! same arrivals and hold draws (common random numbers) and a difference between two shard
//! counts is caused by the shard count alone. Each engine is sequential, so the results do not
//! depend on the number of threads. Replications repeat the sweep with independent seeds
//! derived from the scenario's, in a fixed order.

use rayon::prelude::*;

use crate::arrivals::ArrivalSource;
use crate::error::InputError;
use std::sync::Arc;

use crate::model::{
    Arrival, Engine, EngineConfig, MachineModel, NoEvents, Observer, Pipeline, ShardRun,
};
use crate::scenario::{ArrivalPlan, ClosedLoop, Scenario, Variant};

/// Arrivals generated per chunk.
const CHUNK: usize = 1 << 14;

/// Told how far each shard count has got: once per chunk of arrivals, never per event.
pub trait SweepProgress: Sync {
    /// Shard count number `shard_index` (in scenario order) simulated `increments` more.
    fn advanced(&self, shard_index: usize, increments: u64);
}

/// Progress that nobody watches.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl SweepProgress for NoProgress {
    fn advanced(&self, _: usize, _: u64) {}
}

/// The engine settings for one variant (shard count or adaptive) of `scenario` in
/// replication `replication`.
pub fn engine_config(scenario: &Scenario, variant: Variant, replication: u32) -> EngineConfig {
    EngineConfig {
        shards: variant.shards(),
        policy: variant.policy,
        skip_locked: scenario.skip_locked(),
        horizon: scenario.horizon(),
        window: scenario.window(),
        key_hint: scenario.key_count(),
        measure_from: scenario.warmup(),
        features: std::sync::Arc::clone(scenario.features()),
        seed: scenario.replication_seed(replication),
        hot_keys: if scenario.key_count() > 1 {
            scenario.keys().report_top
        } else {
            0
        },
        adaptive: if variant.adaptive() {
            scenario.adaptive()
        } else {
            None
        },
        hot_key: scenario.hot_key(),
        queue_limit: scenario.queue_limit(),
        likes: scenario.likes().cloned(),
    }
}

/// Simulates replication `replication` of every shard count of `scenario` on the current rayon
/// pool, each with its observer (one per shard count, in the scenario's order), reporting to
/// `progress`; returns the runs in that order.
pub fn run<O: Observer + Send>(
    scenario: &Scenario,
    replication: u32,
    observers: Vec<O>,
    progress: &dyn SweepProgress,
) -> Result<Vec<(ShardRun, O)>, InputError> {
    run_variants(
        scenario,
        &scenario.variants(),
        replication,
        observers,
        progress,
    )
}

/// Simulates replication `replication` of `variants` of `scenario` (some of its shard counts
/// and policies, over the same arrival stream as all of them) as [`run`] does.
fn run_variants<O: Observer + Send>(
    scenario: &Scenario,
    variants: &[Variant],
    replication: u32,
    observers: Vec<O>,
    progress: &dyn SweepProgress,
) -> Result<Vec<(ShardRun, O)>, InputError> {
    assert_eq!(observers.len(), variants.len(), "one observer per variant");
    let engines: Vec<Simulator<O>> = variants
        .iter()
        .copied()
        .zip(observers)
        .map(|(variant, observer)| {
            let config = engine_config(scenario, variant, replication);
            if scenario.pipeline() {
                Simulator::on_pipeline(scenario, config, observer)
            } else {
                Simulator::Exact(Box::new(Engine::new(config, observer)))
            }
        })
        .collect();
    if let ArrivalPlan::Closed(closed) = &scenario.arrivals() {
        return run_closed(scenario, replication, closed, engines, progress);
    }
    feed_and_finish(scenario, replication, engines, progress)
}

/// Runs a closed loop's clients on every shard count's pipeline. Each shard count's clients
/// follow its own rows: no shared stream, but every client's draws are the same in every shard
/// count.
fn run_closed<O: Observer + Send>(
    scenario: &Scenario,
    replication: u32,
    closed: &ClosedLoop,
    mut engines: Vec<Simulator<O>>,
    progress: &dyn SweepProgress,
) -> Result<Vec<(ShardRun, O)>, InputError> {
    let seed = scenario.replication_seed(replication);
    if scenario.has_open_requests() {
        // Reads and the neighbours' requests arrive as an open stream beside the clients.
        for engine in &mut engines {
            engine.start_clients(closed, scenario, seed);
        }
        return feed_and_finish(scenario, replication, engines, progress);
    }
    Ok(engines
        .into_par_iter()
        .enumerate()
        .map(|(index, engine)| {
            let mut report = |served: u64| progress.advanced(index, served);
            engine.run_closed(closed, scenario, seed, &mut report)
        })
        .collect())
}

/// Feeds the scenario's open arrival stream to every engine, chunk by chunk, then finishes
/// them; returns the runs in the engines' order.
fn feed_and_finish<O: Observer + Send>(
    scenario: &Scenario,
    replication: u32,
    mut engines: Vec<Simulator<O>>,
    progress: &dyn SweepProgress,
) -> Result<Vec<(ShardRun, O)>, InputError> {
    let mut source = ArrivalSource::open(
        scenario.stream_plan(),
        scenario.replication_seed(replication),
    )?;
    let mut current: Vec<Arrival> = Vec::with_capacity(CHUNK);
    let mut next: Vec<Arrival> = Vec::with_capacity(CHUNK);
    source.fill(&mut current, CHUNK)?;
    while !current.is_empty() {
        let (filled, ()) = rayon::join(
            || source.fill(&mut next, CHUNK),
            || {
                engines
                    .par_iter_mut()
                    .enumerate()
                    .for_each(|(index, engine)| {
                        engine.feed(&current);
                        progress.advanced(index, current.len() as u64);
                    })
            },
        );
        filled?;
        std::mem::swap(&mut current, &mut next);
    }
    Ok(engines.into_par_iter().map(Simulator::finish).collect())
}

/// One shard count's simulation: the exact core's closed form, or the event-driven pipeline
/// — with stalls, beside a twin without them (same arrivals and draws) whose p99 wait says
/// what the stalls cost.
enum Simulator<O: Observer> {
    Exact(Box<Engine<O>>),
    Pipeline(Box<Pipeline<O>>, Option<Box<Pipeline<NoEvents>>>),
}

impl<O: Observer> Simulator<O> {
    /// The pipeline for `config` on the scenario's machine, with its stall-free twin when the
    /// machine stalls.
    fn on_pipeline(scenario: &Scenario, config: EngineConfig, observer: O) -> Self {
        let machine = Arc::clone(scenario.machine());
        let twin = machine.stalls.as_ref().map(|_| {
            let calm = Arc::new(MachineModel {
                stalls: None,
                ..(*machine).clone()
            });
            Box::new(Pipeline::new(config.clone(), calm, NoEvents))
        });
        Simulator::Pipeline(Box::new(Pipeline::new(config, machine, observer)), twin)
    }

    fn feed(&mut self, arrivals: &[Arrival]) {
        match self {
            Simulator::Exact(engine) => engine.feed(arrivals),
            Simulator::Pipeline(pipeline, twin) => {
                pipeline.feed(arrivals);
                if let Some(twin) = twin {
                    twin.feed(arrivals);
                }
            }
        }
    }

    fn finish(self) -> (ShardRun, O) {
        match self {
            Simulator::Exact(engine) => engine.finish(),
            Simulator::Pipeline(pipeline, twin) => {
                with_twin(pipeline.finish(), twin.map(|twin| twin.finish().0))
            }
        }
    }

    /// Starts a closed loop that runs beside an open stream of other requests.
    fn start_clients(&mut self, closed: &ClosedLoop, scenario: &Scenario, seed: u64) {
        let popularity = scenario.keys().popularity();
        let Simulator::Pipeline(pipeline, twin) = self else {
            unreachable!("a scenario puts its closed loop on the pipeline")
        };
        pipeline.start_clients(closed, scenario.hold(), popularity, seed);
        if let Some(twin) = twin {
            twin.start_clients(closed, scenario.hold(), popularity, seed);
        }
    }

    /// Runs a closed loop alone until the horizon.
    fn run_closed(
        self,
        closed: &ClosedLoop,
        scenario: &Scenario,
        seed: u64,
        progress: &mut dyn FnMut(u64),
    ) -> (ShardRun, O) {
        let popularity = scenario.keys().popularity();
        let Simulator::Pipeline(pipeline, twin) = self else {
            unreachable!("a scenario puts its closed loop on the pipeline")
        };
        let run = pipeline.run_closed(closed, scenario.hold(), popularity, seed, progress);
        let twin = twin.map(|twin| {
            let mut silent = |_: u64| {};
            twin.run_closed(closed, scenario.hold(), popularity, seed, &mut silent)
                .0
        });
        with_twin(run, twin)
    }
}

/// A run with its stall-free twin's p99 wait, when it has one.
fn with_twin<O>((mut run, observer): (ShardRun, O), twin: Option<ShardRun>) -> (ShardRun, O) {
    if let (Some(twin), Some(machine)) = (twin, run.machine.as_mut()) {
        machine.wait_p99_without_stalls_ns = Some(twin.waits.summary().p99_ns);
    }
    (run, observer)
}

/// Every replication of every shard count: `result[shard_index][replication]`. Replication 0
/// uses `observers` (say, to write events); the others observe nothing.
pub fn run_replications<O: Observer + Send>(
    scenario: &Scenario,
    observers: Vec<O>,
    progress: &dyn SweepProgress,
) -> Result<(Vec<Vec<ShardRun>>, Vec<O>), InputError> {
    run_replications_of(scenario, &scenario.variants(), observers, progress)
}

/// Every replication of `variants` of `scenario` (some of its shard counts and policies), as
/// [`run_replications`] gives them: `result[variant_index][replication]`, each run exactly as
/// a sweep of every variant gives it.
pub fn run_replications_of<O: Observer + Send>(
    scenario: &Scenario,
    variants: &[Variant],
    observers: Vec<O>,
    progress: &dyn SweepProgress,
) -> Result<(Vec<Vec<ShardRun>>, Vec<O>), InputError> {
    // Replications run in batches of one per thread, so at most that many are in flight (the
    // memory budget counts on it): the first, with the observers, beside the next ones; only
    // the first keeps its time series.
    let threads = rayon::current_num_threads().max(1);
    let rest: Vec<u32> = (1..scenario.replications()).collect();
    let (beside_first, later) = rest.split_at((threads - 1).min(rest.len()));
    let (first, beside) = rayon::join(
        || run_variants(scenario, variants, 0, observers, progress),
        || run_silent(scenario, variants, beside_first, progress),
    );
    let first = first?;
    let mut runs: Vec<Vec<ShardRun>> = Vec::with_capacity(first.len());
    let mut observers = Vec::with_capacity(first.len());
    for (run, observer) in first {
        runs.push(vec![run]);
        observers.push(observer);
    }
    let mut add = |done: Vec<Vec<(ShardRun, NoEvents)>>| {
        for replication in done {
            for (index, (mut run, _)) in replication.into_iter().enumerate() {
                slim_later_replication(&mut run);
                runs[index].push(run);
            }
        }
    };
    add(beside?);
    for batch in later.chunks(threads) {
        add(run_silent(scenario, variants, batch, progress)?);
    }
    Ok((runs, observers))
}

/// Simulates `replications` of `variants` in parallel, observing nothing; returns each
/// replication's runs, in the order given.
fn run_silent(
    scenario: &Scenario,
    variants: &[Variant],
    replications: &[u32],
    progress: &dyn SweepProgress,
) -> Result<Vec<Vec<(ShardRun, NoEvents)>>, InputError> {
    replications
        .par_iter()
        .map(|&replication| {
            let silent = vec![NoEvents; variants.len()];
            run_variants(scenario, variants, replication, silent, progress)
        })
        .collect()
}

/// Only the first replication's series and histograms are shown or pooled beyond their
/// figures: a later replication keeps its summaries (the behaviours' pooled histograms stay).
fn slim_later_replication(run: &mut ShardRun) {
    run.windows = Vec::new();
    run.waits.freeze();
    if let Some(closed) = run.closed.as_mut() {
        closed.responses.freeze();
    }
    if let Some(responses) = run.machine.as_mut().and_then(|m| m.responses.as_mut()) {
        responses.freeze();
    }
}

/// Simulates the replications `replications` of every shard count of `scenario` (in
/// parallel, one per thread at a time), each as [`run_replications`] leaves it — the first
/// whole, later ones slimmed — so that a partition's slices, joined, summarise to the same
/// rows. Returns, per replication in the order given, its runs in the scenario's order.
pub fn run_some_replications(
    scenario: &Scenario,
    replications: &[u32],
) -> Result<Vec<Vec<ShardRun>>, InputError> {
    let mut out = Vec::with_capacity(replications.len());
    for batch in replications.chunks(rayon::current_num_threads().max(1)) {
        let done = run_silent(scenario, &scenario.variants(), batch, &NoProgress)?;
        for (&replication, runs) in batch.iter().zip(done) {
            out.push(
                runs.into_iter()
                    .map(|(mut run, _)| {
                        if replication > 0 {
                            slim_later_replication(&mut run);
                        }
                        run
                    })
                    .collect(),
            );
        }
    }
    Ok(out)
}

//! Progress bars on standard error: one per shard count, counting simulated increments against
//! the expected total, with rate and ETA. The only place that builds indicatif bars. They stay
//! hidden for the first half second (short runs never show them), when standard error is not
//! a terminal, and with `--quiet`. The sweep reports once per chunk of arrivals, never per
//! event, so the engine does not slow down.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::scenario::Scenario;
use crate::sweep::SweepProgress;

/// How long a run goes before its bars appear.
const SHOW_AFTER: Duration = Duration::from_millis(500);

/// The bars of one sweep.
#[derive(Debug)]
pub struct ProgressBars {
    multi: MultiProgress,
    bars: Vec<ProgressBar>,
    started: Instant,
    may_show: bool,
    shown: AtomicBool,
}

impl ProgressBars {
    /// Bars for every shard count of `scenario`; `may_show` is false when quiet or when
    /// standard error is not a terminal.
    pub fn new(scenario: &Scenario, may_show: bool) -> Self {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::hidden());
        // `wide_bar` takes what the terminal's width leaves, so a bar never wraps.
        let style = ProgressStyle::with_template(
            "{prefix} [{wide_bar:.cyan/blue}] {percent:>3}% {rate:>9} eta {eta:>3}",
        )
        .expect("the template is valid")
        .with_key(
            "rate",
            |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{:.1} M/s", state.per_sec() / 1e6);
            },
        )
        .progress_chars("=> ");
        // Every replication feeds the same shard count's bar.
        let total = scenario
            .expected_arrivals()
            .saturating_mul(u64::from(scenario.replications()))
            .max(1);
        let variants = scenario.variants();
        let labels: Vec<String> = variants
            .iter()
            .map(|variant| {
                let rows = variant.rows.legend();
                if scenario.compares_policies() {
                    format!("{} {rows}", variant.policy.name())
                } else {
                    rows
                }
            })
            .collect();
        let width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        let bars = labels
            .iter()
            .map(|label| {
                let bar = multi.add(ProgressBar::new(total));
                bar.set_style(style.clone());
                bar.set_prefix(format!("{label:>width$}"));
                bar
            })
            .collect();
        ProgressBars {
            multi,
            bars,
            started: Instant::now(),
            may_show,
            shown: AtomicBool::new(false),
        }
    }

    /// Removes the bars from the terminal.
    pub fn finish(&self) {
        for bar in &self.bars {
            bar.finish_and_clear();
        }
        let _ = self.multi.clear();
    }
}

impl SweepProgress for ProgressBars {
    fn advanced(&self, shard_index: usize, increments: u64) {
        self.bars[shard_index].inc(increments);
        if self.may_show
            && self.started.elapsed() >= SHOW_AFTER
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            self.multi.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}

/// A bar over the steps of a calibration or a validation (runs of real load, then the fit),
/// with the step under way and the time elapsed and left. On a terminal it replaces the
/// step lines; elsewhere (a log, CI) the steps are printed one a line; `--quiet` shows neither.
#[derive(Debug)]
pub struct StepBar {
    bar: Option<ProgressBar>,
    quiet: bool,
    steps_done: AtomicBool,
}

impl StepBar {
    /// A bar of `steps` steps.
    pub fn new(steps: u64, quiet: bool) -> Self {
        use std::io::IsTerminal;
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(steps);
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg:40} [{wide_bar:.cyan/blue}] {pos}/{len} {elapsed_precise} eta {eta}",
                )
                .expect("the template is valid")
                .progress_chars("=> "),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        StepBar {
            bar,
            quiet,
            steps_done: AtomicBool::new(false),
        }
    }

    /// A step begins (the one before it is done).
    pub fn step(&self, what: &str) {
        match &self.bar {
            Some(bar) => {
                if self.steps_done.swap(true, Ordering::Relaxed) {
                    bar.inc(1);
                }
                bar.set_message(what.to_owned());
            }
            None if !self.quiet => crate::stdout::eprint_line(what),
            None => {}
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

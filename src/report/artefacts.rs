//! The files `shardsim run` writes, each a type that says when it applies and renders its
//! bytes from the results, listed once in [`RUN_ARTEFACTS`] (as hyperfine lists its
//! exporters). Rendering does no I/O: a run writes every artefact that applies into its staging
//! folder (`events.csv`, streamed while the engines run, is the one file written elsewhere).

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::model::ShardRun;
use crate::model::regions::RegionsRun;
use crate::scenario::{ArrivalPlan, Scenario};

use super::chart::{self, Chart};
use super::{csv, html, regions};
use crate::figures::{SummaryRow, by_policy};

/// Traces up to this size are copied into the output folder so that it reproduces the run
/// alone; larger ones are referred to by absolute path.
pub const MAX_TRACE_COPY_BYTES: u64 = 64 << 20;

/// What a run's artefacts are rendered from.
pub struct RunResults<'a> {
    /// The scenario as run.
    pub(crate) scenario: &'a Scenario,
    /// Each shard count's summary (over its replications).
    pub(crate) rows: &'a [SummaryRow],
    /// Each shard count's first replication: the time series and charts show one run.
    pub(crate) first: Vec<ShardRun>,
    /// With `[regions]`: each shard count's regions under each merge rule.
    pub(crate) regions: &'a [Vec<RegionsRun>],
    charts: OnceCell<Vec<Chart>>,
}

impl<'a> RunResults<'a> {
    /// The results of a run: `runs` holds each shard count's replications.
    pub fn new(
        scenario: &'a Scenario,
        rows: &'a [SummaryRow],
        runs: &[Vec<ShardRun>],
        regions: &'a [Vec<RegionsRun>],
    ) -> Self {
        RunResults {
            scenario,
            rows,
            first: runs.iter().map(|reps| reps[0].clone()).collect(),
            regions,
            charts: OnceCell::new(),
        }
    }

    /// The run's charts, rendered once for every artefact that shows them.
    pub fn charts(&self) -> anyhow::Result<&[Chart]> {
        if let Some(charts) = self.charts.get() {
            return Ok(charts);
        }
        let recommended: Vec<_> = by_policy(self.scenario, self.rows)
            .iter()
            .map(|g| (g.policy, g.recommendation.shards()))
            .collect();
        let charts = chart::render_all(self.scenario, self.rows, &self.first, &recommended)
            .map_err(anyhow::Error::msg)?;
        Ok(self.charts.get_or_init(|| charts))
    }
}

/// One file of an artefact.
pub enum OutputFile {
    /// A file rendered in memory.
    Bytes(String, Vec<u8>),
    /// A copy of a file the run read (a trace, so the folder reproduces the run alone).
    Copy(String, PathBuf),
}

/// A file (or family of files) a run writes.
pub trait Artefact: Sync {
    /// What it is, for error messages: a file name or a family's pattern.
    fn name(&self) -> &'static str;

    /// Whether this run writes it (by default every run does).
    fn applies(&self, _results: &RunResults) -> bool {
        true
    }

    /// Its files, rendered from the results.
    fn render(&self, results: &RunResults) -> anyhow::Result<Vec<OutputFile>>;
}

/// Every artefact of `shardsim run`, in the order they are written.
pub const RUN_ARTEFACTS: &[&dyn Artefact] = &[
    &SummaryCsv,
    &TimeseriesCsv,
    &NeighboursCsv,
    &KeysCsv,
    &GrowthCsv,
    &RegionsCsv,
    &Charts,
    &ReportPage,
    &ResolvedScenario,
];

fn bytes(name: &str, bytes: Vec<u8>) -> anyhow::Result<Vec<OutputFile>> {
    Ok(vec![OutputFile::Bytes(name.to_string(), bytes)])
}

/// `summary.csv`: one row per shard count (and policy).
struct SummaryCsv;

impl Artefact for SummaryCsv {
    fn name(&self) -> &'static str {
        "summary.csv"
    }

    fn render(&self, results: &RunResults) -> anyhow::Result<Vec<OutputFile>> {
        let scenario = results.scenario;
        let warmup_s = crate::time::ns_to_s(scenario.warmup());
        bytes(
            self.name(),
            csv::summary_csv(results.rows, scenario.seed(), warmup_s),
        )
    }
}

/// `timeseries.csv`: every window of every shard count.
struct TimeseriesCsv;

impl Artefact for TimeseriesCsv {
    fn name(&self) -> &'static str {
        "timeseries.csv"
    }

    fn render(&self, results: &RunResults) -> anyhow::Result<Vec<OutputFile>> {
        bytes(
            self.name(),
            csv::timeseries_csv(results.scenario, &results.first),
        )
    }
}

/// `neighbours.csv`, with a connection pool: each endpoint's connection waits.
struct NeighboursCsv;

impl Artefact for NeighboursCsv {
    fn name(&self) -> &'static str {
        "neighbours.csv"
    }

    fn applies(&self, results: &RunResults) -> bool {
        results.scenario.features().pool.is_some()
    }

    fn render(&self, results: &RunResults) -> anyhow::Result<Vec<OutputFile>> {
        bytes(self.name(), csv::neighbours_csv(results.rows))
    }
}

/// `keys.csv`, with many keys: each key's figures.
struct KeysCsv;

impl Artefact for KeysCsv {
    fn name(&self) -> &'static str {
        "keys.csv"
    }

    fn applies(&self, results: &RunResults) -> bool {
        results.scenario.key_count() > 1
    }

    fn render(&self, results: &RunResults) -> anyhow::Result<Vec<OutputFile>> {
        let csv = csv::keys_csv(results.scenario, results.rows, &results.first);
        bytes(self.name(), csv)
    }
}

/// `growth.csv`, with `[adaptive]`: each change of the row count.
struct GrowthCsv;

impl Artefact for GrowthCsv {
    fn name(&self) -> &'static str {
        "growth.csv"
    }

    fn applies(&self, results: &RunResults) -> bool {
        results.scenario.adaptive().is_some()
    }

    fn render(&self, results: &RunResults) -> anyhow::Result<Vec<OutputFile>> {
        bytes(
            self.name(),
            csv::growth_csv(results.scenario, &results.first),
        )
    }
}

/// `regions.csv`, with `[regions]`: each region's figures under each merge rule.
struct RegionsCsv;

impl Artefact for RegionsCsv {
    fn name(&self) -> &'static str {
        "regions.csv"
    }

    fn applies(&self, results: &RunResults) -> bool {
        results.scenario.regions().is_some()
    }

    fn render(&self, results: &RunResults) -> anyhow::Result<Vec<OutputFile>> {
        let variants = results.scenario.variants();
        bytes(
            self.name(),
            regions::regions_csv(&variants, results.regions),
        )
    }
}

/// Every chart, as `NAME.svg` and `NAME.png`.
struct Charts;

impl Artefact for Charts {
    fn name(&self) -> &'static str {
        "the charts (*.svg, *.png)"
    }

    fn render(&self, results: &RunResults) -> anyhow::Result<Vec<OutputFile>> {
        let mut files = Vec::new();
        for chart in results.charts()? {
            let svg = chart.svg.as_bytes().to_vec();
            files.push(OutputFile::Bytes(format!("{}.svg", chart.name), svg));
            files.push(OutputFile::Bytes(
                format!("{}.png", chart.name),
                chart.png.clone(),
            ));
        }
        Ok(files)
    }
}

/// `report.html`: the summary, readings and charts on one page.
struct ReportPage;

impl Artefact for ReportPage {
    fn name(&self) -> &'static str {
        "report.html"
    }

    fn render(&self, results: &RunResults) -> anyhow::Result<Vec<OutputFile>> {
        let scenario = results.scenario;
        let more: Vec<_> = scenario
            .regions()
            .iter()
            .map(|_| regions::table(&scenario.variants(), results.regions))
            .collect();
        let page = html::render(scenario, results.rows, results.charts()?, &more);
        bytes(self.name(), page.into_bytes())
    }
}

/// `scenario.toml`: the scenario as resolved, so the folder repeats the run; a small trace
/// is copied beside it.
struct ResolvedScenario;

impl Artefact for ResolvedScenario {
    fn name(&self) -> &'static str {
        "scenario.toml"
    }

    fn render(&self, results: &RunResults) -> anyhow::Result<Vec<OutputFile>> {
        let scenario = results.scenario;
        let mut files = Vec::new();
        let mut resolved = scenario.resolved();
        if let ArrivalPlan::Trace(info) = &scenario.arrivals() {
            let (name, copy) = place_trace(&info.path)?;
            files.extend(copy);
            let trace = resolved.arrivals.get_or_insert_with(Default::default);
            trace.trace = Some(name);
            // How its times were read, the detected format written out.
            let time = info.time();
            trace.time_column.clone_from(&time.column);
            trace.time_format = time.format.as_ref().map(ToString::to_string);
            trace.reorder_window_s =
                (time.reorder_window > 0).then(|| time.reorder_window as f64 / 1e9);
        }
        let toml = toml::to_string(&resolved).context("cannot render scenario.toml")?;
        let mut header = format!(
            "# The scenario as resolved by shardsim {} from {}: defaults filled in, the seed used.\n\
             # `shardsim run scenario.toml` in this folder repeats the run.\n",
            env!("CARGO_PKG_VERSION"),
            scenario.path().display()
        );
        if !scenario.calibration_kept().is_empty() {
            header.push_str(&format!(
                "# The scenario's own values were used over its calibration's for: {}.\n",
                scenario.calibration_kept().join(", ")
            ));
        }
        header.push('\n');
        files.push(OutputFile::Bytes(
            self.name().to_string(),
            format!("{header}{toml}").into_bytes(),
        ));
        Ok(files)
    }
}

/// How `scenario.toml` names a trace: a small one by the file name of its copy (returned),
/// a large one by its absolute path.
pub fn place_trace(trace: &Path) -> anyhow::Result<(String, Option<OutputFile>)> {
    let size = std::fs::metadata(trace)?.len();
    if size <= MAX_TRACE_COPY_BYTES {
        let name = trace
            .file_name()
            .map_or_else(|| "trace.csv".into(), |n| n.to_string_lossy().into_owned());
        let copy = OutputFile::Copy(name.clone(), trace.to_path_buf());
        return Ok((name, Some(copy)));
    }
    Ok((std::fs::canonicalize(trace)?.display().to_string(), None))
}

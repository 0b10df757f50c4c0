//! Partitions: a grid sweep too big for one machine runs as M slices — the tasks of a job
//! array on Slurm or a Kubernetes Indexed Job — and `shardsim merge` joins them.
//!
//! The units of work are the grid's configurations × replications, in grid order (each
//! configuration's replications together). Slice K of M (K from 0, as a job array's task
//! index and an Indexed Job's completion index count) holds the units whose index is K modulo
//! M: a stable assignment that depends on nothing but the grid (not on threads,
//! machines or timing), and that spreads neighbouring, similarly expensive units over the
//! slices. A slice's folder holds its units' runs (`runs.jsonl`: every shard count's results,
//! histograms included, as the single run keeps them) and `partition.json`, which names the
//! scenario (its path, and a fingerprint of its text and the command line's overrides), the
//! seed, the shardsim version and the slice; the merge reloads the scenario, refuses slices that
//! do not belong together, and summarises every configuration's replications exactly as the
//! single run does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::InputError;

/// The manifest's file name in a slice's folder.
pub const MANIFEST: &str = "partition.json";

/// Slice `slice` of `slices`, numbered from 0 as Slurm's array tasks and Kubernetes'
/// completion indexes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// Which slice, 0 … `slices` − 1.
    pub(crate) slice: usize,
    /// How many slices.
    pub(crate) slices: usize,
}

/// Most slices a grid may be split into.
pub const MAX_SLICES: usize = 1_000_000;

impl Partition {
    /// Parses `K/M` (K from 0 to M − 1), or `auto` / `auto/M`: K from a scheduler's task index,
    /// looked up by `env` — Slurm's `SLURM_ARRAY_TASK_ID` or Kubernetes' `JOB_COMPLETION_INDEX` —
    /// and M from `auto/M` or `SHARDSIM_PARTITIONS`. A job array's own task count is never taken
    /// for M: re-running one task of a sweep makes an array of one.
    pub fn parse(
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Partition, InputError> {
        let flag = |message: String| InputError::flag("--partition", message);
        let number = |name: &str, value: &str| -> Result<usize, InputError> {
            value
                .trim()
                .parse::<usize>()
                .map_err(|_| flag(format!("{name} is {value:?}, not a whole number")))
        };
        let (slice, slices) = if let Some(rest) = text.strip_prefix("auto") {
            let count = match rest.strip_prefix('/') {
                Some(m) => number("the count after auto/", m)?,
                None if rest.is_empty() => match env("SHARDSIM_PARTITIONS") {
                    Some(m) => number("SHARDSIM_PARTITIONS", &m)?,
                    None => {
                        return Err(flag(
                            "auto needs the slice count: auto/M, or SHARDSIM_PARTITIONS=M (a job array's task count is not it: a re-run of one task is an array of one)".into(),
                        ));
                    }
                },
                None => return Err(flag(format!("{text:?} is not K/M, auto or auto/M"))),
            };
            let index = ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"]
                .into_iter()
                .find_map(|name| env(name).map(|value| (name, value)));
            let Some((name, value)) = index else {
                return Err(flag(
                    "auto needs a scheduler's task index: SLURM_ARRAY_TASK_ID (Slurm job array) or JOB_COMPLETION_INDEX (Kubernetes Indexed Job); neither is set".into(),
                ));
            };
            (number(name, &value)?, count)
        } else {
            let Some((k, m)) = text.split_once('/') else {
                return Err(flag(format!(
                    "{text:?} is not K/M (e.g. 3/8: slice 3 of 8, numbered from 0), auto or auto/M"
                )));
            };
            (number("K", k)?, number("M", m)?)
        };
        if slices == 0 || slices > MAX_SLICES {
            return Err(flag(format!(
                "the slice count must be from 1 to {MAX_SLICES}, got {slices}"
            )));
        }
        if slice >= slices {
            return Err(flag(format!(
                "slice {slice} is outside 0 … {} (slices are numbered from 0, as job array and completion indexes are)",
                slices - 1
            )));
        }
        Ok(Partition { slice, slices })
    }

    /// Whether this slice holds the unit at grid position `index`.
    pub fn holds(&self, index: usize) -> bool {
        index % self.slices == self.slice
    }
}

/// A slice's runs file in its folder.
pub const RUNS: &str = "runs.jsonl";
/// A partial merge's finished configurations, one [`ConfigBlock`] a line.
///
/// [`ConfigBlock`]: crate::report::grid::ConfigBlock
pub const BLOCKS: &str = "blocks.jsonl";

/// What a slice's folder holds, in `partition.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The shardsim version that wrote it.
    pub(crate) shardsim: String,
    /// The scenario's name.
    pub(crate) scenario: String,
    /// The scenario file, absolute (the merge reloads it).
    pub scenario_path: PathBuf,
    /// The command line's overrides the slice ran with.
    pub overrides: crate::scenario::Overrides,
    /// A fingerprint of the version, the scenario's text and the overrides.
    pub fingerprint: String,
    /// The seed.
    pub(crate) seed: u64,
    /// Which slice, from 0.
    pub(crate) slice: usize,
    /// How many slices.
    pub(crate) slices: usize,
    /// The grid's configurations in all.
    pub(crate) configurations: usize,
    /// The grid's units (configurations × replications) in all.
    pub(crate) units: usize,
    /// The swept fields.
    pub(crate) fields: Vec<String>,
    /// How a configuration's recommendation is chosen (for the merged terminal grid).
    pub(crate) target: String,
    /// Shard counts per configuration.
    pub(crate) shard_counts: usize,
    /// The units whose runs it holds in `runs.jsonl`, in grid order: (configuration,
    /// replication).
    pub(crate) held: Vec<(usize, u32)>,
    /// The [`fingerprint`] of its `runs.jsonl`, which the merge verifies.
    pub runs_fingerprint: String,
    /// A partial merge's: the slices it joined (a slice's folder leaves it empty: it covers
    /// its own `slice`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) covers: Vec<usize>,
    /// A partial merge's: the configurations it finished, whose blocks `blocks.jsonl` holds in
    /// grid order (their units are no longer in `held`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) finished: Vec<usize>,
    /// The [`fingerprint`] of its `blocks.jsonl` (a partial merge's).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) blocks_fingerprint: String,
}

impl Manifest {
    /// The slices this folder stands for: its own, or those a partial merge joined.
    pub fn covered(&self) -> Vec<usize> {
        if self.covers.is_empty() {
            vec![self.slice]
        } else {
            self.covers.clone()
        }
    }
}

/// One unit's results, a line of `runs.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UnitRuns {
    /// Its configuration's grid index.
    pub(crate) configuration: usize,
    /// Its replication.
    pub(crate) replication: u32,
    /// Every shard count's run, in the scenario's order.
    pub(crate) runs: Vec<crate::model::ShardRun>,
}

/// The units of a grid: (configuration, replication), in grid order.
pub fn units(grid: &crate::scenario::grid::Grid) -> Vec<(usize, u32)> {
    grid.configurations
        .iter()
        .flat_map(|c| (0..c.scenario.replications()).map(move |r| (c.index, r)))
        .collect()
}

/// The fingerprint a slice records of what it ran: this shardsim's version, the scenario's
/// text and the command line's overrides. A merge recomputes it to refuse a changed scenario.
pub fn run_fingerprint(text: &str, overrides: &crate::scenario::Overrides) -> String {
    let overrides = format!("{overrides:?}");
    fingerprint(&[env!("CARGO_PKG_VERSION"), text, &overrides])
}

/// A stable 64-bit fingerprint of `parts` (FNV-1a, each part ended by a 0xff byte), as hex.
pub fn fingerprint(parts: &[&str]) -> String {
    let mut hash = Fingerprint::new();
    for part in parts {
        hash.add(part.as_bytes());
        hash.end_part();
    }
    hash.value()
}

/// [`fingerprint`] computed piece by piece.
#[derive(Debug, Clone, Copy)]
pub struct Fingerprint(u64);

impl Fingerprint {
    /// Nothing added yet.
    pub fn new() -> Fingerprint {
        Fingerprint(0xcbf2_9ce4_8422_2325)
    }

    /// Adds bytes of the current part.
    pub fn add(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// Ends the current part.
    pub fn end_part(&mut self) {
        self.add(&[0xff]);
    }

    /// The fingerprint of one part made of everything added.
    pub fn finish(mut self) -> String {
        self.end_part();
        self.value()
    }

    fn value(self) -> String {
        format!("{:016x}", self.0)
    }
}

impl Default for Fingerprint {
    fn default() -> Self {
        Fingerprint::new()
    }
}

/// One folder a merge reads: a slice's, or a partial merge's.
#[derive(Debug, Clone)]
pub struct Input {
    /// The folder.
    pub(crate) folder: PathBuf,
    /// Its `partition.json`.
    pub(crate) manifest: Manifest,
}

/// Reads the manifests of `folders` — each a slice's or a partial merge's folder, or a folder
/// of slices (`parts/`, its `slice-*` folders) — and verifies each folder's files against the
/// fingerprints its manifest recorded (streamed: nothing is held). Refuses a folder that is not
/// a slice, slices of different scenarios, seeds, versions or slice counts, and a slice given
/// twice. A slice that is missing (unless `partial`), whose folder cannot be read as a slice's
/// or whose files changed since it was written is refused with every other such slice in one
/// message, by the numbers a re-run takes, after `rerun` when it is given (the command that
/// re-runs slices, given their numbers). `expected` is the slice count when the caller knows
/// it (the deploy scripts do): it names the missing slices even when none could be read.
pub fn read_inputs(
    folders: &[PathBuf],
    partial: bool,
    rerun: Option<&str>,
    expected: Option<usize>,
) -> Result<Vec<Input>, InputError> {
    let folders = expand_parts(folders)?;
    let (mut inputs, mut by_slice, mut broken) = read_manifests(&folders)?;
    let recorded = inputs
        .first()
        .map(|first| (first.folder.clone(), first.manifest.clone()));
    let mut changed = Vec::new();
    inputs.retain(|input| match verify(input) {
        Ok(()) => true,
        Err(problem) => {
            changed.push((input.manifest.covered(), problem));
            false
        }
    });
    broken.extend(changed);
    // Which input holds each slice, now that the changed ones are dropped.
    by_slice.clear();
    for (index, input) in inputs.iter().enumerate() {
        for slice in input.manifest.covered() {
            by_slice.insert(slice, index);
        }
    }
    let slices = match (recorded, expected) {
        (Some((folder, manifest)), Some(count)) if manifest.slices != count => {
            return Err(InputError::file(
                &folder,
                format!(
                    "is slice {} of {}, not of the {count} slices --slices names: merge the slices of one run",
                    describe_covered(&manifest),
                    manifest.slices
                ),
            ));
        }
        (Some((_, manifest)), _) => manifest.slices,
        (None, Some(count)) => count,
        (None, None) if broken.is_empty() => {
            return Err(InputError::flag("merge", "name the slices' folders"));
        }
        (None, None) => {
            let (covered, reason) = &broken[0];
            let first = covered.first().copied().unwrap_or(0);
            return Err(InputError::flag(
                "merge",
                format!(
                    "no slice could be read (slice {first}: {reason}); re-run the sweep, or pass --slices M to have every slice to re-run named"
                ),
            ));
        }
    };
    let missing: Vec<usize> = (0..slices)
        .filter(|k| !by_slice.contains_key(k) && !broken.iter().any(|(c, _)| c.contains(k)))
        .collect();
    if !broken.is_empty() || (!missing.is_empty() && !partial) {
        return Err(unusable_slices(
            &missing,
            &broken,
            slices,
            folders.len(),
            rerun,
        ));
    }
    // The input holding the lowest slice comes first: the merge takes the scenario's copy from
    // it, whatever the order the folders were named in.
    let Some(&first) = by_slice.values().next() else {
        return Err(InputError::flag("merge", "name the slices' folders"));
    };
    inputs.swap(0, first);
    Ok(inputs)
}

/// Checks an input's files against the fingerprints its manifest recorded; what is wrong, in
/// a few words, when they do not match.
fn verify(input: &Input) -> Result<(), String> {
    let manifest = &input.manifest;
    let mut files = vec![(RUNS, &manifest.runs_fingerprint)];
    if !manifest.finished.is_empty() {
        files.push((BLOCKS, &manifest.blocks_fingerprint));
    }
    for (name, recorded) in files {
        let path = input.folder.join(name);
        match std::fs::metadata(&path) {
            Err(_) => return Err(format!("its {name} is missing")),
            Ok(meta) if !meta.is_file() => {
                return Err(format!("its {name} is not a regular file"));
            }
            Ok(_) => {}
        }
        let found =
            fingerprint_file(&path).map_err(|err| format!("its {name} cannot be read: {err}"))?;
        if found != *recorded {
            return Err(format!(
                "its {name} changed since the slice wrote it: the fingerprint differs from partition.json's"
            ));
        }
    }
    Ok(())
}

/// Why a `slice-K` entry's manifest cannot be read, in a few words.
fn manifest_problem(folder: &Path) -> String {
    if !folder.is_dir() {
        "a file stands in its folder's place".into()
    } else if !folder.join(MANIFEST).exists() {
        format!("its {MANIFEST} is missing")
    } else {
        format!("its {MANIFEST} cannot be read")
    }
}

/// The slices a manifest stands for, as a message names them.
fn describe_covered(manifest: &Manifest) -> String {
    let covered: Vec<String> = manifest.covered().iter().map(usize::to_string).collect();
    covered.join(", ")
}

/// [`fingerprint`] of a file's whole text, read in pieces.
pub fn fingerprint_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hash = Fingerprint::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hash.add(&buffer[..read]);
    }
    Ok(hash.finish())
}

/// `folders` with each folder of slices (no manifest of its own, `slice-*` folders inside)
/// replaced by those slices' folders.
fn expand_parts(folders: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
    let mut expanded = Vec::with_capacity(folders.len());
    for folder in folders {
        if folder.join(MANIFEST).exists() || !folder.is_dir() {
            expanded.push(folder.clone());
            continue;
        }
        let entries = std::fs::read_dir(folder)
            .map_err(|err| InputError::file(folder, format!("cannot be read: {err}")))?;
        let paths: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.path())
            .collect();
        let empty = paths.is_empty();
        let mut slices: Vec<PathBuf> = paths
            .into_iter()
            .filter(|path| slice_number(path).is_some())
            .collect();
        if slices.is_empty() && !empty {
            // Not a folder of slices either: read_manifest names what it lacks. An empty one
            // is a folder of slices none of which was written.
            expanded.push(folder.clone());
            continue;
        }
        slices.sort();
        expanded.extend(slices);
    }
    Ok(expanded)
}

/// The refusal that names every slice the merge cannot use — missing, unreadable or changed —
/// and how to re-run them all.
fn unusable_slices(
    missing: &[usize],
    broken: &[(Vec<usize>, String)],
    slices: usize,
    given: usize,
    rerun: Option<&str>,
) -> InputError {
    let list = |numbers: &[usize]| {
        numbers
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    match missing {
        [] => {}
        [one] => parts.push(format!("slice {one} of {slices} is missing")),
        several => parts.push(format!("slices {} of {slices} are missing", list(several))),
    }
    // Slices with the same problem are named together, in the order of their first slice.
    let mut by_reason: Vec<(&str, Vec<usize>)> = Vec::new();
    for (covered, reason) in broken {
        match by_reason.iter_mut().find(|(r, _)| r == reason) {
            Some((_, slices)) => slices.extend(covered),
            None => by_reason.push((reason, covered.clone())),
        }
    }
    for (reason, mut covered) in by_reason {
        covered.sort_unstable();
        let which = match covered.as_slice() {
            [one] => format!("slice {one}"),
            several => format!("slices {}", list(several)),
        };
        parts.push(format!("{which}: {reason}"));
    }
    let mut all: Vec<usize> = missing.to_vec();
    all.extend(
        broken
            .iter()
            .flat_map(|(covered, _)| covered.iter().copied()),
    );
    all.sort_unstable();
    all.dedup();
    let numbers: Vec<String> = all.iter().map(usize::to_string).collect();
    let how = match rerun {
        Some(command) => format!("re-run them: {command} {}", numbers.join(",")),
        None => format!(
            "re-run {} (shardsim run … --partition K/{slices}) and merge again",
            if all.len() == 1 { "it" } else { "each" }
        ),
    };
    InputError::flag(
        "merge",
        format!(
            "{} ({given} given; slices are numbered 0 … {}): {how}",
            parts.join("; "),
            slices.saturating_sub(1)
        ),
    )
}

/// Slices the merge cannot use, each with the reason: the slices a folder stands for.
type Broken = Vec<(Vec<usize>, String)>;

/// What [`read_manifests`] found: the readable inputs, which input holds each slice, and the
/// slices whose folders could not be read.
type Manifests = (Vec<Input>, BTreeMap<usize, usize>, Broken);

/// Every folder's manifest, checked to be of one run, and which of them holds each slice:
/// each slice once. A `slice-K` folder (or file) whose manifest cannot be read is set aside
/// as slice K with the reason, so that it is named with the others.
fn read_manifests(folders: &[PathBuf]) -> Result<Manifests, InputError> {
    let mut inputs: Vec<Input> = Vec::with_capacity(folders.len());
    let mut by_slice: BTreeMap<usize, usize> = BTreeMap::new();
    let mut broken = Broken::new();
    for folder in folders {
        let manifest = match (read_manifest(folder), slice_number(folder)) {
            (Ok(manifest), _) => manifest,
            (Err(_), Some(slice)) => {
                broken.push((vec![slice], manifest_problem(folder)));
                continue;
            }
            (Err(err), None) => return Err(err),
        };
        if let Some(first) = inputs.first() {
            let head = &first.manifest;
            let differs = [
                (head.shardsim != manifest.shardsim, "shardsim version"),
                (
                    head.fingerprint != manifest.fingerprint,
                    "scenario or command line",
                ),
                (head.seed != manifest.seed, "seed"),
                (head.slices != manifest.slices, "slice count"),
            ];
            if let Some((_, what)) = differs.iter().find(|(d, _)| *d) {
                return Err(InputError::file(
                    folder,
                    format!(
                        "is a slice of another run than {} (its {what} differs): merge the slices of one run",
                        first.folder.display()
                    ),
                ));
            }
        }
        for slice in manifest.covered() {
            if slice >= manifest.slices {
                return Err(InputError::file(
                    folder,
                    format!(
                        "names slice {slice} of {}: not a slice of this run",
                        manifest.slices
                    ),
                ));
            }
            if let Some(&other) = by_slice.get(&slice) {
                let holder = inputs.get(other).map_or(folder, |input| &input.folder);
                return Err(InputError::file(
                    folder,
                    format!(
                        "holds slice {slice} of {}, as {} does: give each slice once",
                        manifest.slices,
                        holder.display()
                    ),
                ));
            }
            by_slice.insert(slice, inputs.len());
        }
        inputs.push(Input {
            folder: folder.clone(),
            manifest,
        });
    }
    Ok((inputs, by_slice, broken))
}

/// K of a folder named `slice-K`, as the deploy scripts name a slice's folder.
fn slice_number(folder: &Path) -> Option<usize> {
    let name = folder.file_name()?.to_str()?;
    let digits = name.strip_prefix("slice-")?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

fn read_manifest(folder: &Path) -> Result<Manifest, InputError> {
    let path = folder.join(MANIFEST);
    if folder.exists() && !folder.is_dir() {
        return Err(InputError::file(
            folder,
            "is not a folder, so not a slice's output: re-run that slice",
        ));
    }
    if !path.exists() {
        return Err(InputError::file(
            folder,
            format!(
                "is not a slice's output (it has no {MANIFEST}); run shardsim run --partition K/M first"
            ),
        ));
    }
    let text = crate::input::read_text(
        &path,
        crate::input::MAX_MANIFEST_BYTES,
        "a slice's manifest",
    )?;
    serde_json::from_str(&text)
        .map_err(|err| InputError::file(&path, format!("is not a partition manifest: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn explicit_slices_count_from_zero_and_hold_every_mth_unit() {
        let p = Partition::parse("2/7", &env(&[])).unwrap();
        assert_eq!(
            p,
            Partition {
                slice: 2,
                slices: 7
            }
        );
        let held: Vec<usize> = (0..20).filter(|&i| p.holds(i)).collect();
        assert_eq!(held, [2, 9, 16]);
        for bad in ["3/3", "4/3", "0/0", "x/2", "3", "auto/x", "-1/3"] {
            assert!(Partition::parse(bad, &env(&[])).is_err(), "{bad}");
        }
    }

    #[test]
    fn auto_takes_the_index_from_the_scheduler_and_the_count_from_the_user() {
        let slurm = env(&[
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_COUNT", "8"),
        ]);
        assert_eq!(
            Partition::parse("auto/8", &slurm).unwrap(),
            Partition {
                slice: 5,
                slices: 8
            }
        );
        // A re-run of task 7 alone: Slurm says MIN 7, COUNT 1; the slice is still 7 of 16.
        let rerun = env(&[
            ("SLURM_ARRAY_TASK_ID", "7"),
            ("SLURM_ARRAY_TASK_MIN", "7"),
            ("SLURM_ARRAY_TASK_COUNT", "1"),
            ("SHARDSIM_PARTITIONS", "16"),
        ]);
        assert_eq!(
            Partition::parse("auto", &rerun).unwrap(),
            Partition {
                slice: 7,
                slices: 16
            }
        );
        let err = Partition::parse("auto", &slurm).unwrap_err().to_string();
        assert!(err.contains("auto/M"), "{err}");
        let past = Partition::parse("auto/4", &slurm).unwrap_err().to_string();
        assert!(past.contains("outside 0 … 3"), "{past}");
        let k8s = env(&[("JOB_COMPLETION_INDEX", "0")]);
        assert_eq!(
            Partition::parse("auto/3", &k8s).unwrap(),
            Partition {
                slice: 0,
                slices: 3
            }
        );
        let k8s_env = env(&[("JOB_COMPLETION_INDEX", "2"), ("SHARDSIM_PARTITIONS", "3")]);
        assert_eq!(
            Partition::parse("auto", &k8s_env).unwrap(),
            Partition {
                slice: 2,
                slices: 3
            }
        );
        assert!(Partition::parse("auto", &k8s).is_err(), "a count is needed");
        assert!(
            Partition::parse("auto/3", &env(&[])).is_err(),
            "no scheduler"
        );
    }

    #[test]
    fn fingerprints_are_stable_and_tell_inputs_apart() {
        assert_eq!(fingerprint(&["a", "b"]), fingerprint(&["a", "b"]));
        assert_ne!(fingerprint(&["a", "b"]), fingerprint(&["ab", ""]));
        assert_eq!(fingerprint(&[]), "cbf29ce484222325");
    }
}

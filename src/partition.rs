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
    pub slice: usize,
    /// How many slices.
    pub slices: usize,
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
    pub shardsim: String,
    /// The scenario's name.
    pub scenario: String,
    /// The scenario file, absolute (the merge reloads it).
    pub scenario_path: PathBuf,
    /// The command line's overrides the slice ran with.
    pub overrides: crate::scenario::Overrides,
    /// A fingerprint of the version, the scenario's text and the overrides.
    pub fingerprint: String,
    /// The seed.
    pub seed: u64,
    /// Which slice, from 0.
    pub slice: usize,
    /// How many slices.
    pub slices: usize,
    /// The grid's configurations in all.
    pub configurations: usize,
    /// The grid's units (configurations × replications) in all.
    pub units: usize,
    /// The swept fields.
    pub fields: Vec<String>,
    /// How a configuration's recommendation is chosen (for the merged terminal grid).
    pub target: String,
    /// Shard counts per configuration.
    pub shard_counts: usize,
    /// The units whose runs it holds in `runs.jsonl`, in grid order: (configuration,
    /// replication).
    pub held: Vec<(usize, u32)>,
    /// The [`fingerprint`] of its `runs.jsonl`, which the merge verifies.
    pub runs_fingerprint: String,
    /// A partial merge's: the slices it joined (a slice's folder leaves it empty: it covers
    /// its own `slice`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub covers: Vec<usize>,
    /// A partial merge's: the configurations it finished, whose blocks `blocks.jsonl` holds in
    /// grid order (their units are no longer in `held`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finished: Vec<usize>,
    /// The [`fingerprint`] of its `blocks.jsonl` (a partial merge's).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub blocks_fingerprint: String,
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
    pub configuration: usize,
    /// Its replication.
    pub replication: u32,
    /// Every shard count's run, in the scenario's order.
    pub runs: Vec<crate::model::ShardRun>,
}

/// The units of a grid: (configuration, replication), in grid order.
pub fn units(grid: &crate::scenario::grid::Grid) -> Vec<(usize, u32)> {
    grid.configurations
        .iter()
        .flat_map(|c| (0..c.scenario.replications).map(move |r| (c.index, r)))
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
    pub folder: PathBuf,
    /// Its `partition.json`.
    pub manifest: Manifest,
}

/// Reads the manifests of `folders` — each a slice's or a partial merge's folder, or a folder
/// of slices (`parts/`, its `slice-*` folders) — and verifies each folder's files against the
/// fingerprints its manifest recorded (streamed: nothing is held). Refuses a folder that is not
/// a slice, slices of different scenarios, seeds, versions or slice counts, and a slice given
/// twice; unless `partial`, also missing slices, named all at once by the numbers a re-run
/// takes, after `rerun` when it is given (the command that re-runs slices, given their
/// numbers).
pub fn read_inputs(
    folders: &[PathBuf],
    partial: bool,
    rerun: Option<&str>,
) -> Result<Vec<Input>, InputError> {
    let folders = expand_parts(folders)?;
    let (mut inputs, by_slice) = read_manifests(&folders)?;
    // The input holding the lowest slice comes first: the merge takes the scenario's copy from
    // it, whatever the order the folders were named in.
    let Some(&first) = by_slice.values().next() else {
        return Err(InputError::flag("merge", "name the slices' folders"));
    };
    inputs.swap(0, first);
    let head = &inputs[0].manifest;
    let missing: Vec<String> = (0..head.slices)
        .filter(|k| !by_slice.contains_key(k))
        .map(|k| k.to_string())
        .collect();
    if !missing.is_empty() && !partial {
        return Err(missing_slices(&missing, head, rerun));
    }
    for input in &inputs {
        verify(input)?;
    }
    Ok(inputs)
}

/// Checks an input's files against the fingerprints its manifest recorded.
fn verify(input: &Input) -> Result<(), InputError> {
    let manifest = &input.manifest;
    let mut files = vec![(RUNS, &manifest.runs_fingerprint)];
    if !manifest.finished.is_empty() {
        files.push((BLOCKS, &manifest.blocks_fingerprint));
    }
    for (name, recorded) in files {
        let path = input.folder.join(name);
        let found = fingerprint_file(&path)
            .map_err(|err| InputError::file(&path, format!("cannot be read: {err}")))?;
        if found != *recorded {
            return Err(InputError::file(
                &path,
                format!(
                    "changed since slice {} of {} wrote it (its fingerprint is not the one partition.json records): re-run that slice",
                    describe_covered(manifest),
                    manifest.slices
                ),
            ));
        }
    }
    Ok(())
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
        let mut slices: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok())
            .filter(|entry| {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                name.strip_prefix("slice-")
                    .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
            })
            .map(|entry| entry.path())
            .collect();
        if slices.is_empty() {
            // Not a folder of slices either: read_manifest names what it lacks.
            expanded.push(folder.clone());
            continue;
        }
        slices.sort();
        expanded.extend(slices);
    }
    Ok(expanded)
}

/// The refusal that names every missing slice, and how to re-run them.
fn missing_slices(missing: &[String], head: &Manifest, rerun: Option<&str>) -> InputError {
    let given = head.slices - missing.len();
    let which = match missing {
        [one] => format!("slice {one} of {} is missing", head.slices),
        several => format!(
            "slices {} of {} are missing",
            several.join(", "),
            head.slices
        ),
    };
    let how = match rerun {
        Some(command) => format!("re-run them: {command} {}", missing.join(",")),
        None => format!(
            "re-run each (shardsim run … --partition K/{}) and merge again",
            head.slices
        ),
    };
    InputError::flag(
        "merge",
        format!(
            "{which} ({given} given; slices are numbered 0 … {}): {how}",
            head.slices - 1
        ),
    )
}

/// Every folder's manifest, checked to be of one run, and which of them holds each slice:
/// each slice once.
fn read_manifests(folders: &[PathBuf]) -> Result<(Vec<Input>, BTreeMap<usize, usize>), InputError> {
    let mut inputs: Vec<Input> = Vec::with_capacity(folders.len());
    let mut by_slice: BTreeMap<usize, usize> = BTreeMap::new();
    for folder in folders {
        let manifest = read_manifest(folder)?;
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
    Ok((inputs, by_slice))
}

fn read_manifest(folder: &Path) -> Result<Manifest, InputError> {
    let path = folder.join(MANIFEST);
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

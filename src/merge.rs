//! `shardsim merge`: joins the slices of a partitioned sweep (see [`crate::partition`]) into
//! the output one run would have written, byte for byte.
//!
//! The merge streams: it verifies each folder's files by their fingerprints, then walks the
//! grid's configurations in order, reading each one's units (a line of some slice's
//! `runs.jsonl` each) only when it summarises that configuration, and writes its rows to the
//! output files at once. It holds one configuration's runs at a time, whatever the number of
//! slices or configurations.
//!
//! A merge can itself be split: `--partial` joins any group of slices into a folder that
//! stands for them all — every configuration whose units the group holds entirely is
//! summarised (its rows kept in `blocks.jsonl`), the units of the others are passed on as they
//! are — and a later merge takes such folders beside plain slices. A configuration's rows are
//! the same wherever they are summarised, so merging the merges is byte-identical to one merge.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::output::Staging;
use crate::partition::{self, BLOCKS, Fingerprint, Input, MANIFEST, Manifest, RUNS, UnitRuns};
use crate::report::grid::{BlockSink, ConfigBlock};
use crate::scenario::Scenario;
use crate::scenario::grid::Grid;
use crate::stats::WaitStats;

/// What `shardsim merge` was asked.
#[derive(Debug)]
pub struct MergeRequest<'a> {
    /// The slices' folders, partial merges' folders, or folders of slices.
    pub parts: &'a [PathBuf],
    /// The output folder.
    pub out_dir: &'a Path,
    /// The command that re-runs slices given their numbers, named with missing slices.
    pub rerun: Option<&'a str>,
    /// The slice count, when the caller knows it: names every missing slice even when none
    /// could be read.
    pub slices: Option<usize>,
    /// Join only these slices, for a later merge (missing slices allowed).
    pub partial: bool,
    /// Whether to print.
    pub print: bool,
}

/// Joins the slices in `request.parts` into `request.out_dir`: the output of the run that was
/// partitioned, or with `partial` a folder a later merge takes as those slices. The scenario
/// is reloaded from where the slices ran it, and must be unchanged.
pub fn merge(request: &MergeRequest<'_>) -> anyhow::Result<()> {
    let out_dir = request.out_dir;
    crate::output::check_destination(out_dir)?;
    if let Some(part) = request
        .parts
        .iter()
        .find(|part| crate::grid::overlaps(out_dir, part))
    {
        return Err(InputError::flag(
            "--out",
            format!(
                "{} would replace the slice {} it merges: name a folder outside the slices",
                out_dir.display(),
                part.display()
            ),
        )
        .into());
    }
    let inputs = partition::read_inputs(
        request.parts,
        request.partial,
        request.rerun,
        request.slices,
    )?;
    let head = inputs[0].manifest.clone();
    let grid = reload_grid(&head)?;
    let sources = Sources::of(&grid, &inputs)?;
    let staging = Staging::prepare(out_dir)?;
    let toml = crate::input::read_text(
        &inputs[0].folder.join("scenario.toml"),
        crate::input::MAX_SCENARIO_BYTES,
        "the slice's scenario.toml",
    )?;
    staging.write("scenario.toml", toml.as_bytes())?;
    let mut cursors: Vec<Cursor> = inputs.iter().map(Cursor::new).collect();
    if request.partial {
        write_partial(&grid, &sources, &mut cursors, &inputs, &staging)?;
        staging.commit()?;
        if request.print {
            crate::stdout::print(format!(
                "wrote {} (a partial merge: merge it with the other slices)\n",
                out_dir.display()
            ))?;
        }
        return Ok(());
    }
    let sweep_csv = write_merged(&grid, &sources, &mut cursors, &staging)?;
    let text = crate::grid::finish(&staging, &head, &sweep_csv, true)?;
    staging.commit()?;
    if request.print {
        crate::stdout::print(&text)?;
        crate::stdout::print(format!("wrote {}\n", out_dir.display()))?;
    }
    Ok(())
}

/// The grid the slices ran, reloaded from the scenario file they recorded, which must be
/// unchanged (the same text, overrides and shardsim version).
fn reload_grid(head: &Manifest) -> anyhow::Result<Grid> {
    let path = &head.scenario_path;
    let text = crate::input::read_text(
        path,
        crate::input::MAX_SCENARIO_BYTES,
        "the slices' scenario",
    )?;
    if partition::run_fingerprint(&text, &head.overrides) != head.fingerprint {
        return Err(InputError::file(
            path,
            "changed since the slices ran it (or this shardsim is another version): re-run the slices",
        )
        .into());
    }
    let grid = Scenario::load_grid(path, &head.overrides)?;
    if partition::units(&grid).len() != head.units {
        return Err(InputError::file(
            path,
            "does not have the units the slices ran: re-run the slices",
        )
        .into());
    }
    Ok(grid)
}

/// Which input holds each unit's runs and each finished configuration's rows.
#[derive(Debug)]
struct Sources {
    /// Per unit in grid order, the input holding its runs.
    unit: Vec<Option<usize>>,
    /// Per configuration, the input holding its finished rows.
    block: Vec<Option<usize>>,
    /// Per configuration, the grid-order index of its first unit.
    first_unit: Vec<usize>,
}

impl Sources {
    fn of(grid: &Grid, inputs: &[Input]) -> Result<Sources, InputError> {
        let mut first_unit = Vec::with_capacity(grid.configurations.len());
        let mut units = 0;
        for configuration in &grid.configurations {
            first_unit.push(units);
            units += configuration.scenario.replications() as usize;
        }
        let mut sources = Sources {
            unit: vec![None; units],
            block: vec![None; grid.configurations.len()],
            first_unit,
        };
        for (i, input) in inputs.iter().enumerate() {
            let foreign = || {
                InputError::file(
                    &input.folder,
                    "holds a unit or configuration the grid does not have, or one another folder holds too: merge the slices of one run, each once",
                )
            };
            for &(configuration, replication) in &input.manifest.held {
                let reps = grid
                    .configurations
                    .get(configuration)
                    .map_or(0, |c| c.scenario.replications());
                if replication >= reps {
                    return Err(foreign());
                }
                let slot =
                    &mut sources.unit[sources.first_unit[configuration] + replication as usize];
                if slot.replace(i).is_some() {
                    return Err(foreign());
                }
            }
            for &configuration in &input.manifest.finished {
                match sources.block.get_mut(configuration) {
                    Some(slot) if slot.is_none() => *slot = Some(i),
                    _ => return Err(foreign()),
                }
            }
        }
        let twice = sources
            .block
            .iter()
            .enumerate()
            .find_map(|(configuration, block)| {
                let held = sources
                    .units_of(grid, configuration)
                    .any(|u| sources.unit[u].is_some());
                block.filter(|_| held)
            });
        if let Some(i) = twice {
            return Err(InputError::file(
                &inputs[i].folder,
                "finished a configuration whose units another folder holds too: merge the slices of one run, each once",
            ));
        }
        Ok(sources)
    }

    /// The grid-order indexes of a configuration's units.
    fn units_of(&self, grid: &Grid, configuration: usize) -> std::ops::Range<usize> {
        let first = self.first_unit[configuration];
        first..first + grid.configurations[configuration].scenario.replications() as usize
    }

    /// Whether some input holds every unit of `configuration`.
    fn complete(&self, grid: &Grid, configuration: usize) -> bool {
        self.units_of(grid, configuration)
            .all(|u| self.unit[u].is_some())
    }
}

/// Writes the merged `summary.csv`, `timeseries.csv` and `sweep.csv`, one configuration at a
/// time; returns `sweep.csv`.
fn write_merged(
    grid: &Grid,
    sources: &Sources,
    cursors: &mut [Cursor],
    staging: &Staging,
) -> anyhow::Result<Vec<u8>> {
    let create = |name: &str| -> anyhow::Result<BufWriter<File>> {
        Ok(BufWriter::new(File::create(staging.path(name))?))
    };
    let mut sink = BlockSink::new(
        &grid.fields,
        create("summary.csv")?,
        create("timeseries.csv")?,
        create("sweep.csv")?,
    );
    for configuration in &grid.configurations {
        let block = if let Some(input) = sources.block[configuration.index] {
            cursors[input].next_block(configuration.index)?
        } else {
            summarise(grid, sources, cursors, configuration.index)?
        };
        sink.push(&block)?;
    }
    sink.finish()?;
    Ok(std::fs::read(staging.path("sweep.csv"))?)
}

/// Reads a configuration's units from the slices holding them and summarises them.
fn summarise(
    grid: &Grid,
    sources: &Sources,
    cursors: &mut [Cursor],
    configuration: usize,
) -> anyhow::Result<ConfigBlock> {
    let config = &grid.configurations[configuration];
    let mut runs: Vec<Vec<crate::model::ShardRun>> =
        vec![Vec::new(); config.scenario.variants().len()];
    for (replication, unit) in sources.units_of(grid, configuration).enumerate() {
        let Some(input) = sources.unit[unit] else {
            return Err(InputError::flag(
                "merge",
                format!(
                    "replication {replication} of configuration {configuration} is in none of the slices: merge every slice"
                ),
            )
            .into());
        };
        let cursor = &mut cursors[input];
        let read = cursor.next_unit((configuration, replication as u32))?;
        if read
            .runs
            .iter()
            .flat_map(|run| run.pooled_waits())
            .any(WaitStats::is_frozen)
        {
            return Err(InputError::file(
                &cursor.runs.path,
                format!(
                    "holds frozen statistics where configuration {configuration}'s replications are pooled, which no slice writes: re-run that slice"
                ),
            )
            .into());
        }
        if read.runs.len() != runs.len() {
            return Err(InputError::file(
                &cursor.runs.path,
                format!(
                    "holds {} shard counts for configuration {configuration}, not the scenario's {}: re-run the slices",
                    read.runs.len(),
                    runs.len()
                ),
            )
            .into());
        }
        for (index, run) in read.runs.into_iter().enumerate() {
            runs[index].push(run);
        }
    }
    Ok(crate::grid::block_of(grid, config, runs)?)
}

/// Writes a partial merge: the finished configurations' rows to `blocks.jsonl`, the units of
/// the others as they are to `runs.jsonl`, and the manifest naming every slice it joined.
fn write_partial(
    grid: &Grid,
    sources: &Sources,
    cursors: &mut [Cursor],
    inputs: &[Input],
    staging: &Staging,
) -> anyhow::Result<()> {
    let mut runs = FingerprintedFile::create(&staging.path(RUNS))?;
    let mut blocks = FingerprintedFile::create(&staging.path(BLOCKS))?;
    let mut manifest = inputs[0].manifest.clone();
    manifest.held.clear();
    manifest.finished.clear();
    for configuration in &grid.configurations {
        let c = configuration.index;
        if let Some(input) = sources.block[c] {
            let cursor = &mut cursors[input];
            cursor.expect_block(c)?;
            cursor.blocks.copy_line(&mut blocks)?;
        } else if sources.complete(grid, c) {
            let block = summarise(grid, sources, cursors, c)?;
            blocks.write((serde_json::to_string(&block)? + "\n").as_bytes())?;
        } else {
            for (replication, unit) in sources.units_of(grid, c).enumerate() {
                if let Some(input) = sources.unit[unit] {
                    let unit = (c, replication as u32);
                    let cursor = &mut cursors[input];
                    cursor.expect_unit(unit)?;
                    cursor.runs.copy_line(&mut runs)?;
                    manifest.held.push(unit);
                }
            }
            continue;
        }
        manifest.finished.push(c);
    }
    let mut covers: Vec<usize> = inputs.iter().flat_map(|i| i.manifest.covered()).collect();
    covers.sort_unstable();
    manifest.slice = covers[0];
    manifest.covers = covers;
    manifest.runs_fingerprint = runs.finish()?;
    manifest.blocks_fingerprint = blocks.finish()?;
    staging.write(
        MANIFEST,
        serde_json::to_string_pretty(&manifest)?.as_bytes(),
    )?;
    Ok(())
}

/// A file written line by line, fingerprinted as it goes.
struct FingerprintedFile {
    out: BufWriter<File>,
    hash: Fingerprint,
}

impl FingerprintedFile {
    fn create(path: &Path) -> std::io::Result<FingerprintedFile> {
        Ok(FingerprintedFile {
            out: BufWriter::new(File::create(path)?),
            hash: Fingerprint::new(),
        })
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.hash.add(bytes);
        self.out.write_all(bytes)
    }

    fn finish(mut self) -> std::io::Result<String> {
        self.out.flush()?;
        Ok(self.hash.finish())
    }
}

/// Where the merge is in one input's files: the next unit's line and the next block's.
#[derive(Debug)]
struct Cursor {
    runs: LineReader,
    blocks: LineReader,
    held: std::vec::IntoIter<(usize, u32)>,
    finished: std::vec::IntoIter<usize>,
}

impl Cursor {
    fn new(input: &Input) -> Cursor {
        Cursor {
            runs: LineReader::new(input.folder.join(RUNS)),
            blocks: LineReader::new(input.folder.join(BLOCKS)),
            held: input.manifest.held.clone().into_iter(),
            finished: input.manifest.finished.clone().into_iter(),
        }
    }

    /// Checks that the next unit is `unit` (the merge asks in grid order, the order every
    /// input holds its units in).
    fn expect_unit(&mut self, unit: (usize, u32)) -> Result<(), InputError> {
        if self.held.next() == Some(unit) {
            Ok(())
        } else {
            Err(self.runs.changed())
        }
    }

    /// The next unit's runs, which must be `unit`'s.
    fn next_unit(&mut self, unit: (usize, u32)) -> Result<UnitRuns, InputError> {
        self.expect_unit(unit)?;
        let read: UnitRuns = self.runs.parse_line("a unit's runs")?;
        if (read.configuration, read.replication) != unit {
            return Err(self.runs.changed());
        }
        Ok(read)
    }

    /// Checks that the next finished configuration is `configuration`.
    fn expect_block(&mut self, configuration: usize) -> Result<(), InputError> {
        if self.finished.next() == Some(configuration) {
            Ok(())
        } else {
            Err(self.blocks.changed())
        }
    }

    /// The next finished configuration's rows, which must be `configuration`'s.
    fn next_block(&mut self, configuration: usize) -> Result<ConfigBlock, InputError> {
        self.expect_block(configuration)?;
        let block: ConfigBlock = self.blocks.parse_line("a merge's rows")?;
        if block.index != configuration {
            return Err(self.blocks.changed());
        }
        Ok(block)
    }
}

/// Reads a file line by line, opening it for each line at the offset where the last ended,
/// so that a merge of any number of slices holds no file open, and never a whole line in
/// memory: a line is parsed or copied as it is read.
#[derive(Debug)]
struct LineReader {
    path: PathBuf,
    offset: u64,
}

impl LineReader {
    fn new(path: PathBuf) -> LineReader {
        LineReader { path, offset: 0 }
    }

    fn open(&self) -> Result<BufReader<File>, InputError> {
        let fail =
            |err: std::io::Error| InputError::file(&self.path, format!("cannot be read: {err}"));
        let mut file = File::open(&self.path).map_err(fail)?;
        file.seek(SeekFrom::Start(self.offset)).map_err(fail)?;
        Ok(BufReader::with_capacity(1 << 16, file))
    }

    /// Parses the next line as one JSON value of `what`.
    fn parse_line<T: serde::de::DeserializeOwned>(&mut self, what: &str) -> Result<T, InputError> {
        let mut values = serde_json::Deserializer::from_reader(self.open()?).into_iter::<T>();
        let value = match values.next() {
            Some(Ok(value)) => value,
            Some(Err(err)) => {
                return Err(InputError::file(
                    &self.path,
                    format!("is not {what}: {err}"),
                ));
            }
            None => return Err(self.changed()),
        };
        // The value, then its newline.
        self.offset += values.byte_offset() as u64 + 1;
        Ok(value)
    }

    /// Copies the next line, with its newline, to `out`.
    fn copy_line(&mut self, out: &mut FingerprintedFile) -> anyhow::Result<()> {
        let mut reader = self.open()?;
        loop {
            let buffer = reader.fill_buf()?;
            if buffer.is_empty() {
                return Err(self.changed().into());
            }
            let (chunk, done) = match buffer.iter().position(|&b| b == b'\n') {
                Some(end) => (&buffer[..=end], true),
                None => (buffer, false),
            };
            out.write(chunk)?;
            let length = chunk.len();
            reader.consume(length);
            self.offset += length as u64;
            if done {
                return Ok(());
            }
        }
    }

    fn changed(&self) -> InputError {
        InputError::file(
            &self.path,
            "does not hold what its partition.json lists (changed or cut short): re-run that slice",
        )
    }
}

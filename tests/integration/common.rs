//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use shardsim::model::{NoEvents, ShardRun};
use shardsim::scenario::{Overrides, Scenario};

/// Whether the tests run in CI (`CI=true`, as `.ci/run` is run): there a test whose server or
/// facility is missing fails instead of skipping.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| value == "true")
}

/// Makes a named pipe at `path` (opening it for reading would wait for a writer).
pub fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// A path inside the repository.
pub fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Runs the `shardsim` binary with `args` in the folder `cwd`.
pub fn shardsim(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shardsim"))
        .args(args)
        .current_dir(cwd)
        .env_remove("RAYON_NUM_THREADS")
        .output()
        .expect("the shardsim binary runs")
}

/// Writes `text` as `test.toml` in `dir` and runs `shardsim run test.toml --out out` there,
/// plus `args`.
pub fn run_text(dir: &Path, text: &str, args: &[&str]) -> Output {
    std::fs::write(dir.join("test.toml"), text).expect("the test folder is writable");
    let mut all = vec!["run", "test.toml", "--out", "out"];
    all.extend_from_slice(args);
    shardsim(dir, &all)
}

/// The process's standard error as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A scenario from TOML text (as if read from `dir/test.toml`).
pub fn scenario(dir: &Path, text: &str) -> Scenario {
    Scenario::parse(&dir.join("test.toml"), text, &Overrides::default())
        .unwrap_or_else(|err| panic!("valid test scenario: {err}"))
}

/// A scenario from TOML text (as if read from `dir/test.toml`), on the queued row stage (the
/// event-driven pipeline) whatever its sections (`--engine event`).
pub fn on_pipeline(dir: &Path, text: &str) -> Scenario {
    let overrides = Overrides {
        event_path: true,
        ..Overrides::default()
    };
    Scenario::parse(&dir.join("test.toml"), text, &overrides)
        .unwrap_or_else(|err| panic!("valid test scenario: {err}"))
}

/// Simulates every shard count of `scenario` and returns the runs.
pub fn simulate(scenario: &Scenario) -> Vec<ShardRun> {
    let observers = vec![NoEvents; scenario.variants().len()];
    shardsim::sweep::run(scenario, 0, observers, &shardsim::sweep::NoProgress)
        .expect("the sweep runs")
        .into_iter()
        .map(|(run, _)| run)
        .collect()
}

/// The values of `column` in a CSV's `text`, one a row (plain CSV: no quoted commas).
pub fn csv_column(text: &str, column: &str) -> Vec<String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let at = header
        .iter()
        .position(|name| *name == column)
        .unwrap_or_else(|| panic!("no column {column} in {header:?}"));
    lines
        .map(|line| line.split(',').nth(at).unwrap_or_default().to_string())
        .collect()
}

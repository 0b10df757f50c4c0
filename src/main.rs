//! The `shardsim` binary: parse the command line, run the app, map the outcome to an exit code.

use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use shardsim::{app, cli::Cli, cli::values, error};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => {
            // --help and --version print on standard output and succeed.
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            let subcommand = std::env::args()
                .nth(1)
                .filter(|name| Cli::command().find_subcommand(name).is_some());
            shardsim::stdout::eprint_line(&format!(
                "error: {}",
                values::one_line(&err, subcommand.as_deref())
            ));
            return ExitCode::from(error::EXIT_BAD_INPUT);
        }
    };
    let outcome = app::run(cli);
    shardsim::interrupt::wait_if_interrupted();
    if std::env::var_os("SHARDSIM_REPORT_MEMORY").is_some() {
        // For the tests that hold the memory estimate to the measured peak.
        let peak = shardsim::budget::peak_resident_bytes().unwrap_or(0);
        shardsim::stdout::eprint_line(&format!("memory: peak {peak} bytes"));
    }
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            shardsim::stdout::eprint_line(&format!("error: {err:#}"));
            ExitCode::from(error::exit_code(&err))
        }
    }
}

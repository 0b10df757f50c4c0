//! The `shardsim` binary: parse the command line, run the app, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;
use shardsim::{app, cli::Cli, error};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match app::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(error::exit_code(&err))
        }
    }
}

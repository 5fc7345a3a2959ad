//! `braid`: bond several network links into one faster, sturdier, encrypted connection.

mod sim;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// braid bonds several network links into one encrypted multipath connection.
#[derive(Parser)]
#[command(name = "braid", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the deterministic simulator: one bulk stream over emulated links, in virtual time.
    Sim(sim::SimArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim(args) => sim::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("braid: {e:#}");
            ExitCode::from(2)
        }
    }
}

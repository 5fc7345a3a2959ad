//! Command-line arguments of `braid lab`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `braid lab …`: emulated links in network namespaces; braid side by side with single-link
/// TCP, kernel MPTCP and aggligator.
#[derive(Debug, Args)]
pub struct LabArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: LabCommand,
}

/// The `braid lab` subcommands.
#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Build the lab a scenario file describes, run every contender over it and write a
    /// report (needs root).
    Run(RunArgs),
    /// Parse a scenario file and print what a run would do (no root needed).
    Check {
        /// Scenario file (TOML).
        file: PathBuf,
    },
    /// Remove namespaces, processes and directories left behind by interrupted lab runs
    /// (needs root).
    Clean,
    /// Rebuild report.md, the plots and summary.json of a finished run from its results.json
    /// (no root needed).
    Report {
        /// The run's report directory.
        dir: PathBuf,
        /// Print the summary as one JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
}

/// Arguments of `braid lab run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario file (TOML); see crates/braid-lab/README.md for the format.
    pub file: PathBuf,
    /// Print the summary as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Report directory [default: lab-out/<scenario name>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run only these contenders instead of the scenario's: singles, mptcp, aggligator,
    /// braid (the scenario's schedulers), braid:<scheduler>, braid-tun (the scenario's
    /// braid_tun schedulers, else edpf) or braid-tun:<scheduler>; comma-separated.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub contenders: Option<Vec<String>>,
    /// Run only these workloads (names as in the report, e.g. bulk-up,cut-up).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub workloads: Option<Vec<String>>,
    /// Override every workload's duration (e.g. 5s).
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Override the number of runs per contender and workload (median reported).
    #[arg(long, value_name = "N")]
    pub repeats: Option<u32>,
    /// braid binary [default: $BRAID_BIN, else `braid` next to this executable].
    #[arg(long, value_name = "PATH")]
    pub braid: Option<PathBuf>,
    /// agg-tunnel binary [default: agg-tunnel on PATH or in ~/.cargo/bin].
    #[arg(long, value_name = "PATH")]
    pub agg_tunnel: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

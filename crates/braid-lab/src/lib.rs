//! braid lab: network namespaces and emulated links; braid side by side with kernel MPTCP,
//! aggligator and single links.
//!
//! `braid lab run FILE.toml` builds a client and a server namespace joined by the scenario's
//! links (rate, one-way delay, jitter, loss, cut/restore), runs every workload through every
//! contender one after another over the same links, tears everything down, and writes a
//! report (markdown table, SVG plots, JSON). The scenario format and the required packages are
//! documented in `crates/braid-lab/README.md`.
//!
//! The `braid` binary wires its `lab` subcommand to [`LabArgs`] and [`run`]:
//!
//! ```no_run
//! # use clap::Parser;
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(subcommand)]
//!     cmd: Cmd,
//! }
//! #[derive(clap::Subcommand)]
//! enum Cmd {
//!     /// Emulated-link lab.
//!     Lab(braid_lab::LabArgs),
//! }
//! fn main() -> anyhow::Result<()> {
//!     let Cmd::Lab(args) = Cli::parse().cmd;
//!     std::process::exit(braid_lab::run(args)?);
//! }
//! ```
//!
//! Exit codes: [`EXIT_OK`], [`EXIT_CHECK_FAILED`] (a `[checks]` threshold was missed or could
//! not be evaluated), [`EXIT_LEFTOVERS`] (teardown could not remove something),
//! [`EXIT_INTERRUPTED`] (a signal; everything was still torn down). Errors (bad scenario, not
//! root, missing tools, lab build failure) are returned as `Err`.

#![warn(missing_docs)]

mod checks;
pub mod cli;
pub mod contender;
pub mod iperf;
pub mod metrics;
mod overrides;
pub mod recovery;
pub mod report;
pub mod results;
mod runner;
pub use runner::load_scenario;
pub mod scenario;
pub mod summary;
pub mod sys;
pub mod topo;
pub mod transfer;

pub use cli::{LabArgs, LabCommand, RunArgs};

/// Every workload ran; checks passed; nothing left behind.
pub const EXIT_OK: i32 = 0;
/// A `[checks]` threshold was missed (or could not be evaluated).
pub const EXIT_CHECK_FAILED: i32 = 2;
/// Teardown left a namespace, process or directory behind.
pub const EXIT_LEFTOVERS: i32 = 3;
/// Interrupted by SIGINT/SIGTERM/SIGHUP (after a full teardown).
pub const EXIT_INTERRUPTED: i32 = 130;

/// Runs `braid lab …` and returns the process exit code.
pub fn run(args: LabArgs) -> anyhow::Result<i32> {
    match args.command {
        LabCommand::Run(a) => runner::run(a),
        LabCommand::Check { file } => check(&file),
        LabCommand::Clean => clean(),
        LabCommand::Report { dir, json } => runner::rebuild_report(&dir, json),
    }
}

fn check(file: &std::path::Path) -> anyhow::Result<i32> {
    use scenario::units::{format_duration, format_rate};
    use scenario::LabLink;
    let s = runner::load_scenario(file)?;
    println!("scenario {} ({})", s.name, file.display());
    for (k, l) in s.links.iter().enumerate() {
        println!(
            "  link {}: {} one-way {} jitter {} loss {}% queue {}{}{}{}",
            k + 1,
            format_rate(l.start_rate() as f64),
            format_duration(l.delay),
            format_duration(l.jitter),
            l.loss_percent(),
            format_duration(l.queue_time()),
            l.cut_at().map(|c| format!(" cut at {}", format_duration(c))).unwrap_or_default(),
            l.restore_at().map(|r| format!(" restore at {}", format_duration(r))).unwrap_or_default(),
            l.rate_changes()
                .iter()
                .map(|(at, bps)| format!(" {} at {}", format_rate(*bps as f64), format_duration(*at)))
                .collect::<String>(),
        );
    }
    for w in &s.workloads {
        println!("  workload {} for {}", w.name(), format_duration(w.duration));
    }
    let names: Vec<String> = overrides::contender_list(&s).iter().map(|c| c.name()).collect();
    println!("  contenders: {}", names.join(", "));
    println!("  repeats: {}", s.repeats);
    if let Some(r) = s.checks.min_braid_ratio {
        println!("  check: braid bulk ratio to the sum of singles >= {r}");
    }
    Ok(EXIT_OK)
}

fn clean() -> anyhow::Result<i32> {
    runner::require_root("braid lab clean")?;
    let removed = topo::stale::sweep()?;
    if removed.is_empty() {
        println!("nothing to clean");
    }
    for r in removed {
        println!("removed {r}");
    }
    Ok(EXIT_OK)
}

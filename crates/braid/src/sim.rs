//! `braid sim`: the simulator on the command line.

use anyhow::{bail, Context};
use braid_core::cc::Algorithm;
use braid_core::scheduler::Kind;
use braid_core::{AckPath, SessionConfig};
use braid_sim::units::{parse_duration, parse_rate};
use braid_sim::{LinkSpec, SimConfig};
use clap::Args;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `braid sim`.
#[derive(Args, Debug)]
#[command(
    after_help = "LINK is RATE/DELAY[/key=value...], DELAY one-way: e.g. 20mbit/10ms, \
5mbit/40ms/loss=1%/jitter=2ms. Keys: loss=P%, jitter=D, queue=BYTES|Np|D, ge=P:R:L% \
(Gilbert-Elliott), dup=P%, reorder=P%, capacity=R@T,R@T..., down=T-T,..."
)]
pub struct SimArgs {
    /// A link (repeat for each): RATE/DELAY[/key=value...].
    #[arg(long = "link", value_name = "LINK", required = true)]
    links: Vec<String>,
    /// Packet scheduler.
    #[arg(long, default_value = "minrtt", value_parser = parse_scheduler, help = scheduler_help())]
    scheduler: Kind,
    /// Congestion controller of every path: bbr, cubic or newreno.
    #[arg(long, default_value = "bbr", value_parser = parse_cc)]
    congestion: Algorithm,
    /// Virtual duration of the run.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    duration: Duration,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Cut link I at time T (0-based link index): I@T, e.g. 0@10s.
    #[arg(long = "cut", value_name = "I@T")]
    cuts: Vec<String>,
    /// Restore link I at time T: I@T.
    #[arg(long = "restore", value_name = "I@T")]
    restores: Vec<String>,
    /// Transfer exactly this many bytes (e.g. 50MB) instead of running for the whole duration.
    #[arg(long, value_parser = parse_size)]
    bytes: Option<u64>,
    /// Where acknowledgements travel: lowest-rtt (seed 003) or same-path.
    #[arg(long, default_value = "lowest-rtt", value_parser = parse_ack_path)]
    ack_path: AckPath,
    /// Disable blackout freeze (a silent path's congestion state collapses like TCP's).
    #[arg(long)]
    no_blackout_freeze: bool,
    /// Enable loss discrimination (random losses do not cut the window).
    #[arg(long)]
    loss_discrimination: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

fn scheduler_help() -> String {
    let names: Vec<String> = Kind::ALL
        .iter()
        .map(|(n, _, d)| format!("{n} ({d})"))
        .collect();
    format!("Packet scheduler: {}", names.join("; "))
}

fn parse_scheduler(s: &str) -> Result<Kind, String> {
    s.parse()
}

fn parse_cc(s: &str) -> Result<Algorithm, String> {
    s.parse()
}

fn parse_ack_path(s: &str) -> Result<AckPath, String> {
    match s {
        "lowest-rtt" => Ok(AckPath::LowestRtt),
        "same-path" => Ok(AckPath::SamePath),
        _ => Err(format!("'{s}': use lowest-rtt or same-path")),
    }
}

/// Sizes such as `50MB`, `1.5GB`, `700kB`, `1000`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = [
        ("GB", 1e9),
        ("MB", 1e6),
        ("kB", 1e3),
        ("KB", 1e3),
        ("B", 1.0),
    ]
    .iter()
    .find_map(|(u, m)| t.strip_suffix(u).map(|n| (n, *m)))
    .unwrap_or((t, 1.0));
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 50MB)"))?;
    if v <= 0.0 || !v.is_finite() {
        return Err(format!("size '{s}' must be positive"));
    }
    Ok((v * mult) as u64)
}

fn parse_event(s: &str, what: &str, links: usize) -> anyhow::Result<(usize, Duration)> {
    let (i, t) = s
        .split_once('@')
        .with_context(|| format!("--{what} '{s}': expected I@T, e.g. 0@10s"))?;
    let i: usize = i
        .parse()
        .with_context(|| format!("--{what} '{s}': '{i}' is not a link index"))?;
    if i >= links {
        bail!(
            "--{what} '{s}': link {i} does not exist (links are numbered 0 to {})",
            links - 1
        );
    }
    let t = parse_duration(t).map_err(|e| anyhow::anyhow!("--{what} '{s}': {e}"))?;
    Ok((i, t))
}

/// Builds the run from the arguments.
pub fn config(args: &SimArgs) -> anyhow::Result<SimConfig> {
    let mut links = Vec::new();
    for l in &args.links {
        links.push(LinkSpec::parse(l).map_err(|e| anyhow::anyhow!("--link '{l}': {e}"))?);
    }
    let mut cuts: Vec<(usize, Duration)> = Vec::new();
    for c in &args.cuts {
        cuts.push(parse_event(c, "cut", links.len())?);
    }
    for r in &args.restores {
        let (i, t) = parse_event(r, "restore", links.len())?;
        let Some(pos) = cuts.iter().position(|(ci, ct)| *ci == i && *ct < t) else {
            bail!("--restore '{r}': link {i} has no earlier --cut to undo");
        };
        let (_, from) = cuts.remove(pos);
        links[i].down.push((from, t));
    }
    for (i, from) in cuts {
        links[i].down.push((from, Duration::MAX));
    }
    let session = SessionConfig {
        scheduler: args.scheduler,
        congestion: args.congestion,
        ack_path: args.ack_path,
        blackout_freeze: !args.no_blackout_freeze,
        loss_discrimination: args.loss_discrimination,
        ..SessionConfig::default()
    };
    let _ = parse_rate; // rates are parsed inside link specs
    Ok(SimConfig {
        links,
        duration: args.duration,
        seed: args.seed,
        session,
        bulk_bytes: args.bytes,
    })
}

/// Runs `braid sim`.
pub fn run(args: SimArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&args)?;
    let report = braid_sim::run(&cfg)?;
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_table());
    }
    Ok(if report.intact {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

//! Scenarios: what links to build, which workloads to run over them and which contenders to
//! compare. A scenario is read from a TOML file; the format is documented in the crate README
//! (`crates/braid-lab/README.md`) and summarised here:
//!
//! ```toml
//! name = "two"                 # optional; defaults to the file name
//! description = "..."          # optional
//! duration = "10s"             # default duration of every workload
//! repeats = 1                  # runs per contender and workload; the median is reported
//!
//! [[link]]                     # one table per link; link i gets 10.0.i.1 (client) / 10.0.i.2
//! rate = "20mbit"              # both directions (htb + bfifo at both ends)
//! delay = "5ms"                # ONE-WAY propagation delay (RTT = 2 x delay)
//! jitter = "1ms"               # optional, extra delay uniform in [0, jitter], order kept
//! loss = "1%"                  # optional, random loss in EACH direction
//! queue = "100ms"              # optional, bottleneck queue depth in time at the link rate
//! cut_at = "10s"               # optional, only used by workloads of kind "cut"
//! restore_at = "20s"           # optional, needs cut_at
//! capacity = "50kbit@10s"      # optional rate changes RATE@TIME,... (cut workloads, as cuts)
//!
//! [[workload]]
//! kind = "bulk"                # bulk | cbr | cut
//! direction = "both"           # up (client -> server) | down | both
//! duration = "10s"             # optional override
//! # rate = "4mbit"             # cbr only: sending rate
//! # packet_size = 1200         # cbr only: UDP payload bytes
//!
//! [contenders]
//! singles = true               # TCP over each link alone, and their sum
//! mptcp = true                 # kernel MPTCP over all links
//! aggligator = true            # agg-tunnel, when installed
//! braid = ["minrtt"]           # one braid run per scheduler name
//!
//! [checks]
//! min_braid_ratio = 0.85       # exit code 2 if a braid bulk ratio to the sum of singles is lower
//!
//! [share]                      # optional: seed 000's piconet (see topo/lan.rs)
//! neighbours = 3               # the last 3 links are neighbours' WANs, shared with `braid share`
//! lan_rate = "100mbit"         # the LAN (a bridge) joining client and neighbours
//! ```

mod parse;
pub mod units;

pub use parse::{parse_scenario, ScenarioError};

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Most links a scenario may have (kernel MPTCP allows 8 subflows; addresses are 10.0.i.x).
pub const MAX_LINKS: usize = 8;

/// A parsed, validated scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// Short name, used in reports and output directory names.
    pub name: String,
    /// Free text from the file.
    pub description: String,
    /// The emulated links; link `i` (1-based) is `10.0.i.1` ↔ `10.0.i.2`.
    pub links: Vec<LinkSpec>,
    /// Workloads in file order (a `direction = "both"` entry becomes two workloads).
    pub workloads: Vec<Workload>,
    /// Which contenders run.
    pub contenders: Contenders,
    /// Runs per contender and workload; the median (by goodput) is reported.
    pub repeats: u32,
    /// Pass/fail thresholds turned into the exit code.
    pub checks: Checks,
    /// Neighbours sharing their links (seed 000's piconet), if any.
    #[serde(default)]
    pub share: Option<ShareSpec>,
}

/// A piconet: the last `neighbours` links leave from neighbour namespaces that run
/// `braid share`, joined to the client by a LAN; the client keeps the first links as its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareSpec {
    /// How many of the links (the last ones) are neighbours' WANs.
    pub neighbours: usize,
    /// The LAN's rate in bits per second, each port, both directions.
    pub lan_rate_bps: u64,
}

/// One emulated link: the simulator's link spec, of which the lab emulates the rate (htb), the
/// one-way delay and jitter (VDE wirefilter), random loss (nftables), the queue (bfifo), one
/// outage per link and rate changes (`capacity=`, htb's rate changed in place), the last two
/// during a `cut` workload; the parser refuses the other options.
pub use braid_sim::LinkSpec;

/// The link options the lab can emulate (names as in a link spec string).
pub const LAB_OPTIONS: &[&str] = &["jitter", "loss", "queue", "down", "capacity"];

/// What the lab reads of a [`LinkSpec`] beyond its fields.
pub trait LabLink {
    /// Random loss in percent, each direction.
    fn loss_percent(&self) -> f64;
    /// When a `cut` workload cuts this link, relative to the start of the transfer.
    fn cut_at(&self) -> Option<Duration>;
    /// When a `cut` workload restores it (None: it stays down).
    fn restore_at(&self) -> Option<Duration>;
    /// The rate a transfer starts at (what htb is set to when the link is built; a `capacity=`
    /// entry at 0 s overrides the link's rate).
    fn start_rate(&self) -> u64;
    /// The rate changes a `cut` workload applies after the start: (when, bits per second).
    fn rate_changes(&self) -> &[(Duration, u64)];
    /// When this link's schedule (cut, restore, rate changes) ends; None without one.
    fn schedule_end(&self) -> Option<Duration>;
    /// Whether this link needs the VDE path (user-space delay) rather than a plain veth pair.
    fn needs_delay_emulation(&self) -> bool;
    /// The bottleneck queue (bfifo) as time at the link rate.
    fn queue_time(&self) -> Duration;
}

/// The end of an outage that is never restored.
pub const NEVER: Duration = Duration::MAX;

impl LabLink for LinkSpec {
    fn loss_percent(&self) -> f64 {
        self.loss * 100.0
    }

    fn cut_at(&self) -> Option<Duration> {
        self.down.first().map(|(from, _)| *from)
    }

    fn restore_at(&self) -> Option<Duration> {
        self.down.first().map(|(_, to)| *to).filter(|to| *to != NEVER)
    }

    fn start_rate(&self) -> u64 {
        self.rate_at(Duration::ZERO)
    }

    fn rate_changes(&self) -> &[(Duration, u64)] {
        let first_later =
            self.capacity.iter().position(|(at, _)| !at.is_zero()).unwrap_or(self.capacity.len());
        &self.capacity[first_later..]
    }

    fn schedule_end(&self) -> Option<Duration> {
        let last_change = self.rate_changes().last().map(|(at, _)| *at);
        self.restore_at().or(self.cut_at()).max(last_change)
    }

    fn needs_delay_emulation(&self) -> bool {
        !self.delay.is_zero() || !self.jitter.is_zero()
    }

    fn queue_time(&self) -> Duration {
        Duration::from_secs_f64(self.queue_bytes() as f64 * 8.0 / self.rate_bps as f64)
    }
}

/// What traffic a workload sends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// Bulk TCP (iperf3), as fast as the contender goes.
    Bulk,
    /// Constant-bit-rate UDP (iperf3 -u): goodput, loss and jitter.
    Cbr {
        /// Sending rate in bits per second.
        rate_bps: u64,
        /// UDP payload bytes per packet.
        packet_size: u32,
    },
    /// Bulk TCP while the links' schedule (`cut_at` / `restore_at`, `capacity`) is applied;
    /// measures recovery.
    Cut,
}

/// Which way the workload's data flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Client namespace sends to the server namespace.
    Up,
    /// Server namespace sends to the client namespace (iperf3 `-R`).
    Down,
}

impl Direction {
    /// `up` or `down`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Up => "up",
            Direction::Down => "down",
        }
    }
}

/// One workload, run once per contender (times `repeats`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Traffic type.
    pub kind: WorkloadKind,
    /// Data direction.
    pub direction: Direction,
    /// Transfer length.
    pub duration: Duration,
    /// TCP flows at once (iperf3 `-P`); 1 but for `parallel = N` on a bulk workload.
    #[serde(default = "one_flow")]
    pub parallel: u32,
}

fn one_flow() -> u32 {
    1
}

impl Workload {
    /// Stable name used in reports and file names, e.g. `bulk-up`, `bulk-p8-up` (8 parallel
    /// flows), `cbr-4mbit-down`, `cut-up`.
    pub fn name(&self) -> String {
        match self.kind {
            WorkloadKind::Bulk if self.parallel > 1 => {
                format!("bulk-p{}-{}", self.parallel, self.direction.as_str())
            }
            WorkloadKind::Bulk => format!("bulk-{}", self.direction.as_str()),
            WorkloadKind::Cut => format!("cut-{}", self.direction.as_str()),
            WorkloadKind::Cbr { rate_bps, .. } => {
                format!("cbr-{}-{}", units::tc_rate(rate_bps), self.direction.as_str())
            }
        }
    }
}

/// The contenders a scenario asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contenders {
    /// TCP over each link alone, and their sum.
    pub singles: bool,
    /// Kernel MPTCP over all links.
    pub mptcp: bool,
    /// aggligator's agg-tunnel (skipped when not installed).
    pub aggligator: bool,
    /// braid, once per scheduler name.
    pub braid: Vec<String>,
    /// braid in TUN mode (`braid client --tun`), once per scheduler name.
    #[serde(default)]
    pub braid_tun: Vec<String>,
}

impl Contenders {
    /// Whether none is enabled.
    pub fn is_empty(&self) -> bool {
        !self.singles && !self.mptcp && !self.aggligator && self.braid.is_empty() && self.braid_tun.is_empty()
    }
}

/// Pass/fail thresholds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Checks {
    /// Lowest acceptable ratio of braid's bulk goodput to the sum of singles.
    pub min_braid_ratio: Option<f64>,
}

impl Scenario {
    /// Sum of the link rates in bits per second.
    pub fn total_rate_bps(&self) -> u64 {
        self.links.iter().map(|l| l.rate_bps).sum()
    }

    /// How many links leave from the client's own namespace (all but the neighbours').
    pub fn own_links(&self) -> usize {
        self.links.len() - self.share.map_or(0, |s| s.neighbours)
    }
}

#[cfg(test)]
mod tests;

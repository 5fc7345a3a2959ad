//! What a lab run records: one [`RunRecord`] per transfer, one [`Row`] per contender and
//! workload (the median of the repeats, with ratios), and the [`LabReport`] holding them all.

use serde::{Deserialize, Serialize};

use crate::iperf::{Sample, UdpStats};
use crate::scenario::{Scenario, Workload};
use crate::transfer::AppliedEvent;

/// Whether a contender ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Ran and measured.
    Ok,
    /// Tried and failed (the reason says why); no figures.
    Failed,
    /// Not attempted (the reason says why); no figures.
    Skipped,
}

/// One transfer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// Contender name.
    pub contender: String,
    /// Workload name.
    pub workload: String,
    /// 1-based repeat number.
    pub repeat: u32,
    /// Outcome.
    pub status: Status,
    /// Why it failed or was skipped.
    pub reason: Option<String>,
    /// Goodput at the receiver.
    pub goodput_bps: Option<f64>,
    /// TCP segments retransmitted by the sending namespace's kernel.
    pub retransmits: Option<u64>,
    /// UDP loss and jitter.
    pub udp: Option<UdpStats>,
    /// MPTCP subflows that joined.
    pub mptcp_joins: Option<u64>,
    /// Link events applied.
    pub events: Vec<AppliedEvent>,
    /// Receiver goodput per interval.
    pub series: Vec<Sample>,
    /// Remarks.
    pub notes: Vec<String>,
    /// iperf3's JSON, relative to the output directory.
    pub raw_file: Option<String>,
}

impl RunRecord {
    /// A record without figures.
    pub fn without_figures(
        contender: &str,
        workload: &str,
        repeat: u32,
        status: Status,
        reason: String,
    ) -> RunRecord {
        RunRecord {
            contender: contender.into(),
            workload: workload.into(),
            repeat,
            status,
            reason: Some(reason),
            goodput_bps: None,
            retransmits: None,
            udp: None,
            mptcp_joins: None,
            events: Vec::new(),
            series: Vec::new(),
            notes: Vec::new(),
            raw_file: None,
        }
    }
}

/// One contender in one workload: the median run and the derived figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// Contender name (`sum-of-singles` for the computed sum).
    pub name: String,
    /// Workload name.
    pub workload: String,
    /// Outcome (of the median run; `failed` only if no run succeeded).
    pub status: Status,
    /// Why it failed or was skipped.
    pub reason: Option<String>,
    /// Median goodput.
    pub goodput_bps: Option<f64>,
    /// Goodput ÷ sum of single-link goodputs.
    pub ratio_to_sum_of_singles: Option<f64>,
    /// Goodput ÷ link rates (time-weighted when links are cut).
    pub ratio_to_link_rates: Option<f64>,
    /// Cut workloads: time until the per-100 ms goodput stays ≥ 90% of the surviving capacity
    /// (worst cut of a run; median over runs).
    pub recovery_ms: Option<f64>,
    /// Cut workloads: whether a recovery time applies and was not reached.
    pub not_recovered: bool,
    /// Cut workloads: the recovery time measured on a centred 0.5 s average.
    pub recovery_avg_ms: Option<f64>,
    /// Cut workloads: the 0.5 s average did not recover.
    pub not_recovered_avg: bool,
    /// Cut workloads: time after a restore until the 0.5 s average goodput stays ≥ 90% of
    /// the full capacity.
    pub restore_ms: Option<f64>,
    /// Cut workloads: a restore happened and full goodput was not reached before the test
    /// (or the next event) ended.
    pub not_restored: bool,
    /// Cut workloads: mean goodput over the first second after a cut ÷ the surviving capacity
    /// (worst cut of a run; median over runs) — the figure a user sees.
    #[serde(default)]
    pub first_second_share: Option<f64>,
    /// Cut workloads: mean goodput from one second after a cut to the next event ÷ the
    /// surviving capacity (worst cut; median over runs).
    #[serde(default)]
    pub settled_share: Option<f64>,
    /// Kernel TCP retransmissions (not meaningful for braid, which runs over UDP).
    pub retransmits: Option<u64>,
    /// UDP loss percent.
    pub udp_lost_percent: Option<f64>,
    /// UDP jitter.
    pub udp_jitter_ms: Option<f64>,
    /// MPTCP subflows joined.
    pub mptcp_joins: Option<u64>,
    /// Successful runs / attempted runs.
    pub runs_ok: u32,
    /// Attempted runs.
    pub runs: u32,
    /// Series of the median run (for the plot).
    #[serde(skip)]
    pub series: Vec<Sample>,
    /// Link events of the median run.
    pub events: Vec<AppliedEvent>,
    /// Remarks collected from the runs.
    pub notes: Vec<String>,
}

/// All rows and runs of one workload.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadResult {
    /// Workload name.
    pub name: String,
    /// The workload.
    pub workload: Workload,
    /// Per-contender rows, in run order, with `sum-of-singles` after the singles. Absent
    /// when read back for `braid lab report`, which recomputes them from the runs.
    #[serde(default, skip_deserializing)]
    pub rows: Vec<Row>,
    /// Where the surviving capacity for recovery times came from.
    pub capacity_source: Option<String>,
}

/// Everything a run produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabReport {
    /// The scenario as run (after command-line overrides).
    pub scenario: Scenario,
    /// Machine description (kernel, CPUs, tool versions).
    pub machine: Vec<String>,
    /// Per-workload results.
    pub workloads: Vec<WorkloadResult>,
    /// Every transfer.
    pub runs: Vec<RunRecord>,
    /// Notes about the run as a whole (skipped contenders, interruption, leftovers).
    pub notes: Vec<String>,
    /// Whether the run was interrupted before finishing.
    pub interrupted: bool,
}

//! From transfers to table rows: the median of the repeats, the sum of singles, the ratios and
//! the recovery times.

use std::time::Duration;

use crate::contender::Contender;
use crate::metrics::{median_index, ratio, TCP_EFFICIENCY};
use crate::recovery::{describe, median, run_times, RunTimes, Timing};
use crate::results::{Row, RunRecord, Status, WorkloadResult};
use crate::scenario::LabLink;
use crate::scenario::{Scenario, Workload, WorkloadKind};

/// Name of the computed sum-of-singles row.
pub const SUM_OF_SINGLES: &str = "sum-of-singles";

/// Per-link capacity used as "surviving capacity" for recovery times, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Capacity {
    /// Bits per second of single-link TCP on each link, uncut.
    pub per_link_bps: Vec<f64>,
    /// Human-readable origin.
    pub source: String,
}

/// The capacity reference for `workload`: single-link goodputs of a finished bulk workload in
/// the same direction if there is one, else this workload's singles on links it never cuts,
/// else the link rates times the TCP payload share (1448/1514).
pub fn reference_capacity(
    scenario: &Scenario,
    workload: &Workload,
    done: &[WorkloadResult],
    current: &[Row],
) -> Capacity {
    let single = |rows: &[Row], i: usize| {
        rows.iter()
            .find(|r| r.name == Contender::Single(i).name() && r.status == Status::Ok)
            .and_then(|r| r.goodput_bps)
    };
    let bulk = done
        .iter()
        .find(|w| w.workload.kind == WorkloadKind::Bulk && w.workload.direction == workload.direction);
    let mut sources = Vec::new();
    let per_link_bps = scenario
        .links
        .iter()
        .enumerate()
        .map(|(k, link)| {
            let i = k + 1;
            if let Some(v) = bulk.and_then(|w| single(&w.rows, i)) {
                sources.push(format!("link {i}: tcp-link{i} in {}", w_name(bulk)));
                return v;
            }
            if link.schedule_end().is_none() {
                if let Some(v) = single(current, i) {
                    sources.push(format!("link {i}: tcp-link{i} in this workload"));
                    return v;
                }
            }
            sources.push(format!("link {i}: rate x 1448/1514"));
            link.start_rate() as f64 * TCP_EFFICIENCY
        })
        .collect();
    Capacity { per_link_bps, source: sources.join("; ") }
}

fn w_name(w: Option<&WorkloadResult>) -> String {
    w.map(|w| w.name.clone()).unwrap_or_default()
}

/// The link rate a contender could use during `workload`: each link's rate averaged over the
/// test, through its rate changes and without the time it was cut (`only` restricts to one
/// link).
pub fn available_rate(scenario: &Scenario, workload: &Workload, only: Option<usize>) -> f64 {
    let dur = workload.duration;
    scenario
        .links
        .iter()
        .enumerate()
        .filter(|(k, _)| only.is_none_or(|i| i == k + 1))
        .map(|(_, l)| {
            if workload.kind != WorkloadKind::Cut {
                return l.start_rate() as f64;
            }
            // The rate is constant between the schedule's times.
            let mut times: Vec<Duration> = l.rate_changes().iter().map(|(at, _)| *at).collect();
            times.extend(l.cut_at());
            times.extend(l.restore_at());
            times.retain(|t| *t < dur);
            times.push(Duration::ZERO);
            times.push(dur);
            times.sort();
            times.dedup();
            let down =
                |t: Duration| l.cut_at().is_some_and(|c| c <= t && l.restore_at().is_none_or(|r| t < r));
            let bits: f64 = times
                .windows(2)
                .filter(|w| !down(w[0]))
                .map(|w| l.rate_at(w[0]) as f64 * (w[1] - w[0]).as_secs_f64())
                .sum();
            bits / dur.as_secs_f64().max(1e-9)
        })
        .sum()
}

/// Rows for one workload: one per contender (median of its runs), plus the sum of singles.
pub fn summarize(
    scenario: &Scenario,
    workload: &Workload,
    contenders: &[Contender],
    runs: &[RunRecord],
    capacity: Option<&Capacity>,
) -> Vec<Row> {
    let name = workload.name();
    // CBR sends at a fixed rate: ratios to capacity or to the singles say nothing there.
    let cbr = matches!(workload.kind, WorkloadKind::Cbr { .. });
    let mut rows: Vec<Row> = contenders
        .iter()
        .map(|c| {
            let mine: Vec<&RunRecord> =
                runs.iter().filter(|r| r.workload == name && r.contender == c.name()).collect();
            let mut row = median_row(&c.name(), &name, &mine);
            let only = match c {
                Contender::Single(i) => Some(*i),
                _ => None,
            };
            if !cbr {
                row.ratio_to_link_rates =
                    row.goodput_bps.and_then(|g| ratio(g, available_rate(scenario, workload, only)));
            }
            if workload.kind == WorkloadKind::Cut && c.is_multipath() && row.status == Status::Ok {
                if let Some(cap) = capacity {
                    apply_recovery(&mut row, &mine, &cap.per_link_bps);
                }
            }
            row
        })
        .collect();

    let singles: Vec<usize> = rows
        .iter()
        .enumerate()
        .filter(|(k, _)| matches!(contenders[*k], Contender::Single(_)))
        .map(|(k, _)| k)
        .collect();
    if !cbr && singles.len() == scenario.links.len() && !singles.is_empty() {
        let sum = sum_row(&name, singles.iter().map(|&k| &rows[k]));
        let sum_bps = sum.goodput_bps;
        let at = singles.last().map(|k| k + 1).unwrap_or(0);
        rows.insert(at, sum);
        for r in rows.iter_mut() {
            r.ratio_to_sum_of_singles = r.goodput_bps.zip(sum_bps).and_then(|(g, s)| ratio(g, s));
        }
        if let Some(r) = rows.get_mut(at) {
            r.ratio_to_link_rates =
                r.goodput_bps.and_then(|g| ratio(g, available_rate(scenario, workload, None)));
        }
    }
    rows
}

fn median_row(contender: &str, workload: &str, runs: &[&RunRecord]) -> Row {
    let ok: Vec<&RunRecord> =
        runs.iter().copied().filter(|r| r.status == Status::Ok && r.goodput_bps.is_some()).collect();
    let mut notes: Vec<String> = runs.iter().flat_map(|r| r.notes.iter().cloned()).collect();
    notes.dedup();
    let mut row = Row {
        name: contender.into(),
        workload: workload.into(),
        status: Status::Skipped,
        reason: None,
        goodput_bps: None,
        ratio_to_sum_of_singles: None,
        ratio_to_link_rates: None,
        recovery_ms: None,
        not_recovered: false,
        recovery_avg_ms: None,
        not_recovered_avg: false,
        restore_ms: None,
        not_restored: false,
        first_second_share: None,
        settled_share: None,
        retransmits: None,
        udp_lost_percent: None,
        udp_jitter_ms: None,
        mptcp_joins: None,
        runs_ok: ok.len() as u32,
        runs: runs.len() as u32,
        series: Vec::new(),
        events: Vec::new(),
        notes,
    };
    let goodputs: Vec<f64> = ok.iter().filter_map(|r| r.goodput_bps).collect();
    let Some(m) = median_index(&goodputs).map(|i| ok[i]) else {
        let first = runs.first();
        row.status = first.map(|r| r.status).unwrap_or(Status::Skipped);
        row.reason = first.and_then(|r| r.reason.clone());
        return row;
    };
    row.status = Status::Ok;
    row.goodput_bps = m.goodput_bps;
    row.retransmits = m.retransmits;
    row.udp_lost_percent = m.udp.map(|u| u.lost_percent);
    row.udp_jitter_ms = m.udp.map(|u| u.jitter_ms);
    row.mptcp_joins = m.mptcp_joins;
    row.series = m.series.clone();
    row.events = m.events.clone();
    if ok.len() < runs.len() {
        row.reason = runs
            .iter()
            .find(|r| r.status != Status::Ok)
            .and_then(|r| r.reason.clone())
            .map(|r| format!("{} of {} runs failed: {r}", runs.len() - ok.len(), runs.len()));
    }
    row
}

fn sum_row<'a>(workload: &str, singles: impl Iterator<Item = &'a Row>) -> Row {
    let singles: Vec<&Row> = singles.collect();
    let mut row = median_row(SUM_OF_SINGLES, workload, &[]);
    if let Some(bad) = singles.iter().find(|r| r.status != Status::Ok) {
        row.status = Status::Failed;
        row.reason = Some(format!("{} has no result", bad.name));
        return row;
    }
    row.status = Status::Ok;
    row.goodput_bps = Some(singles.iter().filter_map(|r| r.goodput_bps).sum());
    row.retransmits = singles.iter().map(|r| r.retransmits).sum();
    row.runs_ok = singles.iter().map(|r| r.runs_ok).min().unwrap_or(0);
    row.runs = singles.iter().map(|r| r.runs).max().unwrap_or(0);
    row
}

/// Fills the recovery figures from every successful run (median over repeats).
fn apply_recovery(row: &mut Row, runs: &[&RunRecord], capacity: &[f64]) {
    let times: Vec<RunTimes> = runs
        .iter()
        .filter(|r| r.status == Status::Ok)
        .map(|r| run_times(&r.series, &r.events, capacity))
        .collect();
    let pick = |f: fn(&RunTimes) -> Option<Timing>| median(&times.iter().map(f).collect::<Vec<_>>());
    let recovery = pick(|t| t.recovery);
    let recovery_avg = pick(|t| t.recovery_avg);
    let restore = pick(|t| t.restore);
    row.recovery_ms = recovery.and_then(Timing::ms);
    row.not_recovered = recovery == Some(Timing::NotReached);
    row.recovery_avg_ms = recovery_avg.and_then(Timing::ms);
    row.not_recovered_avg = recovery_avg == Some(Timing::NotReached);
    row.restore_ms = restore.and_then(Timing::ms);
    row.not_restored = restore == Some(Timing::NotReached);
    let share = |f: fn(&RunTimes) -> Option<f64>| {
        let v: Vec<f64> = times.iter().filter_map(f).collect();
        median_index(&v).map(|i| v[i])
    };
    row.first_second_share = share(|t| t.first_second);
    row.settled_share = share(|t| t.settled);
    if times.len() > 1 {
        let list = |f: fn(&RunTimes) -> Option<Timing>| {
            times.iter().map(|t| describe(f(t))).collect::<Vec<_>>().join(", ")
        };
        row.notes.push(format!(
            "per run: recovery {}; recovery (0.5 s avg) {}; back to full {}",
            list(|t| t.recovery),
            list(|t| t.recovery_avg),
            list(|t| t.restore)
        ));
    }
}

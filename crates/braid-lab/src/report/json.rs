//! The one-object summary printed by `--json` and written as `summary.json`:
//! `{"scenario":…, "links":[…], "contenders":[{"name":…, "workload":…, "goodput_bps":…,
//! "ratio_to_sum_of_singles":…, "recovery_ms":…, …}]}`.

use serde_json::{json, Value};

use crate::results::LabReport;
use crate::scenario::LabLink;

/// Builds the summary object.
pub fn summary(report: &LabReport, checks: &[String]) -> Value {
    let links: Vec<Value> = report
        .scenario
        .links
        .iter()
        .enumerate()
        .map(|(k, l)| {
            json!({
                "link": k + 1,
                "rate_bps": l.rate_bps,
                "delay_ms": l.delay.as_secs_f64() * 1e3,
                "jitter_ms": l.jitter.as_secs_f64() * 1e3,
                "loss_percent": l.loss_percent(),
                "queue_ms": l.queue_time().as_secs_f64() * 1e3,
                "cut_at_s": l.cut_at().map(|d| d.as_secs_f64()),
                "restore_at_s": l.restore_at().map(|d| d.as_secs_f64()),
                "start_rate_bps": l.start_rate(),
                "rate_changes": l.rate_changes().iter().map(|(at, bps)| json!({"at_s": at.as_secs_f64(), "bps": bps})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let contenders: Vec<Value> = report
        .workloads
        .iter()
        .flat_map(|w| w.rows.iter())
        .map(|r| {
            json!({
                "name": r.name,
                "workload": r.workload,
                "status": r.status,
                "reason": r.reason,
                "goodput_bps": r.goodput_bps,
                "ratio_to_sum_of_singles": r.ratio_to_sum_of_singles,
                "ratio_to_link_rates": r.ratio_to_link_rates,
                "recovery_ms": r.recovery_ms,
                "not_recovered": r.not_recovered,
                "recovery_avg_ms": r.recovery_avg_ms,
                "not_recovered_avg": r.not_recovered_avg,
                "restore_ms": r.restore_ms,
                "not_restored": r.not_restored,
                "first_second_share": r.first_second_share,
                "settled_share": r.settled_share,
                "retransmits": r.retransmits,
                "udp_lost_percent": r.udp_lost_percent,
                "udp_jitter_ms": r.udp_jitter_ms,
                "runs": r.runs,
                "runs_ok": r.runs_ok,
            })
        })
        .collect();
    json!({
        "scenario": report.scenario.name,
        "links": links,
        "contenders": contenders,
        "interrupted": report.interrupted,
        "failed_checks": checks,
        "notes": report.notes,
    })
}

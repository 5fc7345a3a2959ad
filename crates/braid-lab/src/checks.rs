//! The scenario's `[checks]`, evaluated against the results. A check that cannot be evaluated
//! (braid skipped or failed) fails: CI must not pass because braid did not run.

use crate::report::markdown::one_line;
use crate::results::{LabReport, Status};
use crate::scenario::WorkloadKind;

/// Failed checks, one line each (empty when all pass or none are configured).
pub fn evaluate(report: &LabReport) -> Vec<String> {
    let mut failed = Vec::new();
    let Some(min) = report.scenario.checks.min_braid_ratio else {
        return failed;
    };
    let mut seen = 0;
    for w in report.workloads.iter().filter(|w| w.workload.kind == WorkloadKind::Bulk) {
        for r in w.rows.iter().filter(|r| r.name.starts_with("braid-")) {
            seen += 1;
            match (r.status, r.ratio_to_sum_of_singles) {
                (Status::Ok, Some(x)) if x >= min => {}
                (Status::Ok, Some(x)) => {
                    failed.push(format!("{} {}: ratio to the sum of singles {x:.3} < {min}", w.name, r.name))
                }
                (Status::Ok, None) => failed.push(format!(
                    "{} {}: no sum of singles to compare with (run the singles too)",
                    w.name, r.name
                )),
                (_, _) => failed.push(format!(
                    "{} {}: no result ({})",
                    w.name,
                    r.name,
                    one_line(r.reason.as_deref().unwrap_or_default(), 300)
                )),
            }
        }
    }
    if seen == 0 && !report.interrupted {
        failed.push(format!("min_braid_ratio = {min} is set but no bulk workload ran a braid contender"));
    }
    failed
}

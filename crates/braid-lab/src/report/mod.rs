//! Writing a run's report directory:
//!
//! | file | contents |
//! | --- | --- |
//! | `report.md` | links and one table per workload |
//! | `goodput-<workload>.svg` | goodput over time per contender (0.5 s average) |
//! | `summary.json` | the `--json` summary object |
//! | `results.json` | everything: scenario, rows, every run with its time series |
//! | `raw/<workload>/<contender>-<n>.json` | iperf3's own JSON output |

pub mod json;
pub mod markdown;
pub mod svg;

use std::path::Path;

use anyhow::{Context, Result};

use crate::iperf::Sample;
use crate::metrics::{centred_average, AVERAGE_HALF_WINDOW};
use crate::results::{LabReport, Status};

/// Writes report.md, the SVGs, summary.json and results.json into `dir`.
pub fn write(dir: &Path, report: &LabReport, checks: &[String]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut svgs = Vec::new();
    for w in &report.workloads {
        // Plotted as a centred 0.5 s average: 100 ms samples of a multipath receiver swing
        // several-fold with reordering and would hide everything else (they are all in
        // results.json).
        let plotted: Vec<(&str, Vec<Sample>)> = w
            .rows
            .iter()
            .filter(|r| r.status == Status::Ok && !r.series.is_empty())
            .map(|r| (r.name.as_str(), centred_average(&r.series, AVERAGE_HALF_WINDOW)))
            .collect();
        let lines: Vec<svg::Line> = plotted.iter().map(|(name, series)| svg::Line { name, series }).collect();
        if lines.is_empty() {
            continue;
        }
        let events = w.rows.iter().find(|r| !r.events.is_empty()).map(|r| r.events.as_slice()).unwrap_or(&[]);
        let file = format!("goodput-{}.svg", w.name);
        let title = format!("{} — {} (receiver goodput, 0.5 s average)", report.scenario.name, w.name);
        write_file(&dir.join(&file), &svg::render(&title, &lines, events))?;
        svgs.push((w.name.clone(), file));
    }
    write_file(&dir.join("report.md"), &markdown::render(report, &svgs, checks))?;
    write_file(
        &dir.join("summary.json"),
        &(serde_json::to_string_pretty(&json::summary(report, checks))? + "\n"),
    )?;
    write_file(&dir.join("results.json"), &(serde_json::to_string_pretty(report)? + "\n"))?;
    Ok(())
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

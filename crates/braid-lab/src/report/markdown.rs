//! The human-readable report: links, then one table per workload.

use std::fmt::Write;

use crate::results::{LabReport, Row, Status, WorkloadResult};
use crate::scenario::units::{format_duration, format_rate};
use crate::scenario::LabLink;
use crate::scenario::WorkloadKind;

/// Renders the whole report as markdown. `svgs` maps workload names to plot file names.
pub fn render(report: &LabReport, svgs: &[(String, String)], checks: &[String]) -> String {
    let s = &report.scenario;
    let mut o = String::new();
    let _ = writeln!(o, "# braid lab: {}\n", s.name);
    if !s.description.is_empty() {
        let _ = writeln!(o, "{}\n", s.description.trim());
    }
    if report.interrupted {
        let _ = writeln!(o, "**Interrupted** — only the runs that finished are shown.\n");
    }
    let _ = writeln!(o, "Machine: {}\n", report.machine.join("; "));
    let _ = writeln!(
        o,
        "Delays are one-way (RTT = 2 × delay); loss applies in each direction. Repeats per contender: {} (median shown).\n",
        s.repeats
    );
    o.push_str(&links_table(report));
    for w in &report.workloads {
        o.push_str(&workload_section(w, svgs));
    }
    if !checks.is_empty() {
        o.push_str("\n## Failed checks\n\n");
        for c in checks {
            let _ = writeln!(o, "- {c}");
        }
    }
    if !report.notes.is_empty() {
        o.push_str("\n## Notes\n\n");
        for n in &report.notes {
            let _ = writeln!(o, "- {n}");
        }
    }
    o
}

fn links_table(report: &LabReport) -> String {
    let mut o = String::from(
        "## Links\n\n| link | client / server | rate | one-way delay | jitter | loss | queue | cut / restore; rate changes |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for (k, l) in report.scenario.links.iter().enumerate() {
        let i = k + 1;
        let mut cut = match (l.cut_at(), l.restore_at()) {
            (Some(c), Some(r)) => format!("{} / {}", format_duration(c), format_duration(r)),
            (Some(c), None) => format!("{} / —", format_duration(c)),
            _ => "—".into(),
        };
        for (at, bps) in l.rate_changes() {
            let _ = write!(cut, "; {} at {}", format_rate(*bps as f64), format_duration(*at));
        }
        let _ = writeln!(
            o,
            "| {i} | 10.0.{i}.1 / 10.0.{i}.2 | {} | {} | {} | {}% | {} | {cut} |",
            format_rate(l.start_rate() as f64),
            format_duration(l.delay),
            format_duration(l.jitter),
            l.loss_percent(),
            format_duration(l.queue_time()),
        );
    }
    o
}

fn workload_section(w: &WorkloadResult, svgs: &[(String, String)]) -> String {
    let mut o = String::new();
    let wl = &w.workload;
    let what = match wl.kind {
        WorkloadKind::Bulk => "bulk TCP (iperf3, CUBIC)".to_string(),
        WorkloadKind::Cut => "bulk TCP while links are cut and restored".to_string(),
        WorkloadKind::Cbr { rate_bps, packet_size } => {
            format!("CBR UDP at {} ({packet_size}-byte payloads)", format_rate(rate_bps as f64))
        }
    };
    let _ = writeln!(
        o,
        "\n## {} — {what}, {}, {}\n",
        w.name,
        match wl.direction {
            crate::scenario::Direction::Up => "client → server",
            crate::scenario::Direction::Down => "server → client",
        },
        format_duration(wl.duration)
    );
    let cbr = matches!(wl.kind, WorkloadKind::Cbr { .. });
    let cut = wl.kind == WorkloadKind::Cut;
    let header: Vec<&str> = if cbr {
        vec!["contender", "goodput", "UDP loss", "jitter"]
    } else if cut {
        vec![
            "contender",
            "goodput",
            "÷ sum of singles",
            "÷ link rates",
            "recovery (100 ms)",
            "recovery (0.5 s avg)",
            "1st s after cut ÷ surviving",
            "then ÷ surviving",
            "back to full after restore (0.5 s avg)",
            "retransmits",
        ]
    } else {
        vec!["contender", "goodput", "÷ sum of singles", "÷ link rates", "recovery", "retransmits"]
    };
    let _ = writeln!(o, "| {} |", header.join(" | "));
    let _ = writeln!(o, "|{}", " --- |".repeat(header.len()));
    for r in &w.rows {
        let cells = row_cells(r, cut, cbr);
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
    if cbr {
        o.push_str("\nIn CBR workloads `tcp-link<i>` is iperf3 UDP over link i alone, and `mptcp` carries the UDP datagrams over its first link only (MPTCP is TCP; only iperf3's control connection is multipath).\n");
    }
    if let Some((_, file)) = svgs.iter().find(|(n, _)| *n == w.name) {
        let _ = writeln!(o, "\n![goodput over time, {}]({file})", w.name);
    }
    if let Some(src) = &w.capacity_source {
        let _ = writeln!(o, "\nSurviving capacity for recovery times: {src}.");
    }
    let notes: Vec<String> = w
        .rows
        .iter()
        .flat_map(|r| {
            let mut v: Vec<String> = r.notes.iter().map(|n| format!("{}: {n}", r.name)).collect();
            if let Some(j) = r.mptcp_joins {
                v.push(format!(
                    "{}: {j} MP_JOIN subflow(s) over iperf3's control and data connections",
                    r.name
                ));
            }
            if let Some(reason) = &r.reason {
                if r.status != Status::Skipped {
                    v.push(format!("{}: {}", r.name, one_line(reason, 800)));
                }
            }
            v
        })
        .collect();
    if !notes.is_empty() {
        o.push('\n');
        for n in notes {
            let _ = writeln!(o, "- {n}");
        }
    }
    o
}

/// Collapses whitespace (tables and lists need one line) and shortens to `max` characters.
pub fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = flat.replace('|', "/");
    if flat.chars().count() > max {
        let cut: String = flat.chars().take(max).collect();
        format!("{cut}…")
    } else {
        flat
    }
}

fn row_cells(r: &Row, cut: bool, cbr: bool) -> Vec<String> {
    let columns = if cbr {
        4
    } else if cut {
        10
    } else {
        6
    };
    let mut cells = vec![r.name.clone()];
    if r.status != Status::Ok {
        let what = if r.status == Status::Skipped { "skipped" } else { "FAILED" };
        let reason = r.reason.as_deref().unwrap_or_default();
        cells.push(format!("{what}: {}", one_line(reason, 120)));
        cells.resize(columns, String::new());
        return cells;
    }
    let dash = || "—".to_string();
    let f = |v: Option<f64>, fmt: &dyn Fn(f64) -> String| v.map(fmt).unwrap_or_else(dash);
    let secs = |ms: f64| format!("{:.2} s", ms / 1e3);
    cells.push(f(r.goodput_bps, &format_rate));
    if cbr {
        cells.push(f(r.udp_lost_percent, &|x| format!("{x:.2}%")));
        cells.push(f(r.udp_jitter_ms, &|x| format!("{x:.2} ms")));
        return cells;
    }
    cells.push(f(r.ratio_to_sum_of_singles, &|x| format!("{x:.3}")));
    cells.push(f(r.ratio_to_link_rates, &|x| format!("{x:.3}")));
    cells.push(if r.not_recovered { "not recovered".into() } else { f(r.recovery_ms, &secs) });
    if cut {
        cells.push(if r.not_recovered_avg { "not recovered".into() } else { f(r.recovery_avg_ms, &secs) });
        cells.push(f(r.first_second_share, &|x| format!("{x:.2}")));
        cells.push(f(r.settled_share, &|x| format!("{x:.2}")));
        cells.push(if r.not_restored { "not within the test".into() } else { f(r.restore_ms, &secs) });
    }
    cells.push(r.retransmits.map(|x| x.to_string()).unwrap_or_else(dash));
    cells
}

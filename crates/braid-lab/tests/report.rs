//! Report generation from synthetic runs (no root): rows, sum of singles, ratios, recovery,
//! and the files written (markdown table, SVG, summary JSON).

use braid_lab::contender::Contender;
use braid_lab::iperf::Sample;
use braid_lab::results::{LabReport, RunRecord, Status, WorkloadResult};
use braid_lab::scenario::parse_scenario;
use braid_lab::summary::{reference_capacity, summarize, SUM_OF_SINGLES};
use braid_lab::transfer::{Action, AppliedEvent};

const SCENARIO: &str = r#"
name = "unit"
duration = "4s"
[[link]]
rate = "20mbit"
delay = "5ms"
cut_at = "1s"
restore_at = "2s"
[[link]]
rate = "5mbit"
[[workload]]
kind = "bulk"
[[workload]]
kind = "cut"
duration = "4s"
[contenders]
singles = true
mptcp = true
braid = ["minrtt"]
[checks]
min_braid_ratio = 0.85
"#;

/// A flat series at `bps` from 0 to `secs` in 100 ms steps, with `dips` (start, end, bps).
fn series(bps: f64, secs: f64, dips: &[(f64, f64, f64)]) -> Vec<Sample> {
    let n = (secs * 10.0).round() as usize;
    (0..n)
        .map(|i| {
            let start = i as f64 / 10.0;
            let v = dips
                .iter()
                .find(|(a, b, _)| start + 1e-9 >= *a && start + 1e-9 < *b)
                .map(|d| d.2)
                .unwrap_or(bps);
            Sample { start, end: start + 0.1, bps: v }
        })
        .collect()
}

fn run(
    contender: &str,
    workload: &str,
    goodput: f64,
    s: Vec<Sample>,
    events: Vec<AppliedEvent>,
) -> RunRecord {
    let mut r = RunRecord::without_figures(contender, workload, 1, Status::Ok, String::new());
    r.reason = None;
    r.goodput_bps = Some(goodput);
    r.retransmits = Some(3);
    r.series = s;
    r.events = events;
    r
}

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("braid-lab-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn rows_ratios_recovery_and_files() {
    let scenario = parse_scenario("unit.toml", SCENARIO, "unit").unwrap();
    let contenders =
        vec![Contender::Single(1), Contender::Single(2), Contender::Mptcp, Contender::Braid("minrtt".into())];
    let bulk = &scenario.workloads[0];
    let cut = &scenario.workloads[1];
    let bulk_runs = vec![
        run("tcp-link1", "bulk-up", 19e6, series(19e6, 4.0, &[]), vec![]),
        run("tcp-link2", "bulk-up", 5e6, series(5e6, 4.0, &[]), vec![]),
        run("mptcp", "bulk-up", 22e6, series(22e6, 4.0, &[]), vec![]),
        RunRecord::without_figures(
            "braid-minrtt",
            "bulk-up",
            1,
            Status::Failed,
            "braid client exited (exit status: 1):\nno | route".into(),
        ),
    ];
    let bulk_rows = summarize(&scenario, bulk, &contenders, &bulk_runs, None);
    let names: Vec<&str> = bulk_rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["tcp-link1", "tcp-link2", SUM_OF_SINGLES, "mptcp", "braid-minrtt"]);
    let sum = &bulk_rows[2];
    assert_eq!(sum.goodput_bps, Some(24e6));
    assert_eq!(sum.retransmits, Some(6));
    let mptcp = &bulk_rows[3];
    assert!((mptcp.ratio_to_sum_of_singles.unwrap() - 22.0 / 24.0).abs() < 1e-9);
    assert!((mptcp.ratio_to_link_rates.unwrap() - 22.0 / 25.0).abs() < 1e-9);
    assert!((bulk_rows[0].ratio_to_link_rates.unwrap() - 0.95).abs() < 1e-9);
    assert_eq!(bulk_rows[4].status, Status::Failed);
    assert_eq!(bulk_rows[4].goodput_bps, None);

    let ev = |link, action, at_s| AppliedEvent { link, action, planned_s: at_s, at_s };
    let events = vec![ev(1, Action::Cut, 1.0), ev(1, Action::Restore, 2.0)];
    // mptcp: nothing for 0.3 s after the cut, then the survivor's 5 Mbit/s; full again 0.5 s
    // after the restore.
    let mptcp_cut = series(22e6, 4.0, &[(1.0, 1.3, 0.0), (1.3, 2.0, 5e6), (2.0, 2.5, 8e6)]);
    let cut_runs = vec![
        run("tcp-link1", "cut-up", 12e6, series(19e6, 4.0, &[(1.0, 2.5, 0.0)]), events.clone()),
        run("tcp-link2", "cut-up", 5e6, series(5e6, 4.0, &[]), events.clone()),
        run("mptcp", "cut-up", 16e6, mptcp_cut, events.clone()),
        RunRecord::without_figures("braid-minrtt", "cut-up", 1, Status::Skipped, "not built".into()),
    ];
    let done = vec![WorkloadResult {
        name: "bulk-up".into(),
        workload: bulk.clone(),
        rows: bulk_rows.clone(),
        capacity_source: None,
    }];
    let first = summarize(&scenario, cut, &contenders, &cut_runs, None);
    let cap = reference_capacity(&scenario, cut, &done, &first);
    assert_eq!(cap.per_link_bps, [19e6, 5e6]);
    let cut_rows = summarize(&scenario, cut, &contenders, &cut_runs, Some(&cap));
    let m = cut_rows.iter().find(|r| r.name == "mptcp").unwrap();
    assert!((m.recovery_ms.unwrap() - 300.0).abs() < 1e-6, "{:?}", m.recovery_ms);
    assert!(!m.not_recovered);
    // 0.5 s trailing average reaches 90% of 24 Mbit/s once the window holds 22 Mbit/s only.
    assert!(m.restore_ms.is_some_and(|ms| ms > 500.0 && ms < 1100.0), "{:?}", m.restore_ms);
    // What a user sees: 0.3 s of nothing then 5 of 5 Mbit/s in the first second; the restore
    // comes at its end, so nothing is left to call settled.
    assert!((m.first_second_share.unwrap() - 0.7).abs() < 1e-9, "{:?}", m.first_second_share);
    assert_eq!(m.settled_share, None);
    // Time-weighted link rate: link 1 is down for 1 s of 4.
    assert!((m.ratio_to_link_rates.unwrap() - 16e6 / (15e6 + 5e6)).abs() < 1e-9);
    let single = cut_rows.iter().find(|r| r.name == "tcp-link1").unwrap();
    assert_eq!(single.recovery_ms, None);

    let report = LabReport {
        scenario: scenario.clone(),
        machine: vec!["test machine".into()],
        workloads: vec![
            done[0].clone(),
            WorkloadResult {
                name: "cut-up".into(),
                workload: cut.clone(),
                rows: cut_rows,
                capacity_source: Some(cap.source.clone()),
            },
        ],
        runs: bulk_runs.into_iter().chain(cut_runs).collect(),
        notes: vec!["braid-minrtt skipped: not built".into()],
        interrupted: false,
    };
    let dir = temp_dir("report");
    let checks = vec!["bulk-up braid-minrtt: no result".to_string()];
    braid_lab::report::write(&dir, &report, &checks).unwrap();

    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("| contender | goodput | ÷ sum of singles | ÷ link rates | recovery | retransmits |"));
    assert!(md.contains("| mptcp | 22.00 Mbit/s | 0.917 | 0.880 | — | 3 |"), "{md}");
    assert!(md.contains("| sum-of-singles | 24.00 Mbit/s | 1.000 | 0.960 | — | 6 |"), "{md}");
    assert!(md.contains("| mptcp | 16.00 Mbit/s |"), "{md}");
    assert!(
        md.contains(
            "| recovery (100 ms) | recovery (0.5 s avg) | 1st s after cut ÷ surviving | then ÷ surviving | back to full after restore (0.5 s avg) |"
        ),
        "{md}"
    );
    assert!(md.contains("| 0.30 s |"), "{md}");
    assert!(md.contains("| 0.70 | — |"), "{md}");
    // A multi-line reason with a pipe stays inside one table row.
    assert!(
        md.contains("| braid-minrtt | FAILED: braid client exited (exit status: 1): no / route |"),
        "{md}"
    );
    assert!(md.contains("![goodput over time, cut-up](goodput-cut-up.svg)"));
    assert!(md.contains("## Failed checks"));

    let svg = std::fs::read_to_string(dir.join("goodput-cut-up.svg")).unwrap();
    assert!(svg.contains("<polyline") && svg.contains("cut link 1") && svg.contains("restore link 1"));

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["scenario"], "unit");
    assert_eq!(summary["links"].as_array().unwrap().len(), 2);
    let c = summary["contenders"].as_array().unwrap();
    let m = c.iter().find(|c| c["name"] == "mptcp" && c["workload"] == "cut-up").unwrap();
    assert_eq!(m["goodput_bps"], 16e6);
    assert!((m["recovery_ms"].as_f64().unwrap() - 300.0).abs() < 1e-6);
    assert!(m["ratio_to_sum_of_singles"].as_f64().is_some());
    let b = c.iter().find(|c| c["name"] == "braid-minrtt").unwrap();
    assert!(b["goodput_bps"].is_null());
    assert_eq!(b["status"], "failed");
    let full: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(full["runs"].as_array().unwrap().len(), 8);

    // `braid lab report DIR` recomputes the same report from results.json (the check fails:
    // braid has no result, so the exit code says so).
    std::fs::remove_file(dir.join("report.md")).unwrap();
    let code = braid_lab::run(braid_lab::LabArgs {
        command: braid_lab::LabCommand::Report { dir: dir.clone(), json: false },
    })
    .unwrap();
    assert_eq!(code, braid_lab::EXIT_CHECK_FAILED);
    let again = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let before_checks = |t: &str| t.split("## Failed checks").next().unwrap_or_default().to_string();
    assert_eq!(before_checks(&again), before_checks(&md));
    assert!(
        again
            .contains("- bulk-up braid-minrtt: no result (braid client exited (exit status: 1): no / route)"),
        "{again}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cbr_rows_have_no_ratios_and_a_udp_table() {
    let text = "[[link]]\nrate = \"10mbit\"\n[[link]]\nrate = \"5mbit\"\n[[workload]]\nkind = \"cbr\"\nrate = \"4mbit\"\n[contenders]\nsingles = true\n";
    let scenario = parse_scenario("cbr.toml", text, "cbr").unwrap();
    let w = &scenario.workloads[0];
    let mut runs = Vec::new();
    for (i, loss) in [(1, 0.0), (2, 2.5)] {
        let mut r = run(&format!("tcp-link{i}"), &w.name(), 4e6, series(4e6, 2.0, &[]), vec![]);
        r.udp = Some(braid_lab::iperf::UdpStats { lost_percent: loss, jitter_ms: 0.25, packets: 800 });
        runs.push(r);
    }
    let contenders = [Contender::Single(1), Contender::Single(2)];
    let rows = summarize(&scenario, w, &contenders, &runs, None);
    assert_eq!(rows.len(), 2, "no sum of singles for CBR");
    assert!(rows.iter().all(|r| r.ratio_to_sum_of_singles.is_none() && r.ratio_to_link_rates.is_none()));
    let report = LabReport {
        scenario: scenario.clone(),
        machine: vec![],
        workloads: vec![WorkloadResult { name: w.name(), workload: w.clone(), rows, capacity_source: None }],
        runs,
        notes: vec![],
        interrupted: true,
    };
    let dir = temp_dir("cbr");
    braid_lab::report::write(&dir, &report, &[]).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("| contender | goodput | UDP loss | jitter |"), "{md}");
    assert!(md.contains("| tcp-link2 | 4.00 Mbit/s | 2.50% | 0.25 ms |"), "{md}");
    assert!(md.contains("**Interrupted**"));
    std::fs::remove_dir_all(&dir).unwrap();
}

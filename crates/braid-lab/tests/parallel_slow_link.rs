//! Root-only: eight TCP flows (iperf3 -P 8) over one 2 Mbit/s, 80 ms link alone, 10 s, both
//! directions. The link's own queue drops packets locally; before the lab raised
//! `tcp_retries2` a starved flow was aborted with ETIMEDOUT 8.1 s in and the run failed
//! ("unable to write to stream socket: Connection timed out"). Skipped with a message when not
//! root or a tool is missing; fails instead under `CI=true` or `BRAID_ROOT_TESTS=1`.

mod common;

const SCENARIO: &str = r#"
name = "p8slow"
duration = "10s"
[[link]]
rate = "2mbit"
delay = "80ms"
[[workload]]
kind = "bulk"
direction = "both"
parallel = 8
[contenders]
singles = true
"#;

#[test]
fn eight_flows_over_a_2mbit_link_complete_both_ways() {
    if let Some(why) = common::skip_reason(&["ip", "tc", "iperf3", "vde_switch", "wirefilter"]) {
        eprintln!("skipping: {why}");
        return;
    }
    let common::Ran { dir, out } = common::run_scenario("p8slow", SCENARIO, None);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for workload in ["bulk-p8-up", "bulk-p8-down"] {
        let row = summary["contenders"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["workload"] == workload && r["name"] == "tcp-link1")
            .unwrap_or_else(|| panic!("no tcp-link1 row for {workload}: {summary}"));
        assert_eq!(row["status"], "ok", "{workload}: {row}");
        let g = row["goodput_bps"].as_f64().unwrap();
        // Eight CUBIC flows fill an htb at 2 Mbit/s to ~0.95 of it.
        assert!(g > 1.6e6 && g < 2.05e6, "{workload}: {g} bit/s");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

//! Root-only end-to-end tests: a two-link lab running single-link TCP and kernel MPTCP for a
//! few seconds through the public entry point, and the stale sweep. Both check that nothing
//! is left behind. Skipped (with a message) when not root or when a tool is missing.

mod common;

use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use braid_lab::topo::{stale, Names};

const SCENARIO: &str = r#"
name = "itest"
duration = "3s"
[[link]]
rate = "20mbit"
delay = "5ms"
[[link]]
rate = "5mbit"
[[workload]]
kind = "bulk"
[contenders]
singles = true
mptcp = true
"#;

/// Every lab run starts with the stale sweep, which would remove the stale run that
/// `sweep_removes_a_stale_run` plants before that test's own sweep sees it (CI caught the
/// race): the two tests take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn two_links_single_tcp_and_mptcp_then_nothing_left() {
    if let Some(why) = common::skip_reason(&["ip", "tc", "iperf3", "mptcpize", "vde_switch", "wirefilter"]) {
        eprintln!("skipping: {why}");
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let common::Ran { dir, out } = common::run_scenario("itest", SCENARIO, None);

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let rows = summary["contenders"].as_array().unwrap();
    let goodput = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .and_then(|r| r["goodput_bps"].as_f64())
            .unwrap_or_else(|| panic!("no goodput for {name}: {summary}"))
    };
    let (l1, l2, mp) = (goodput("tcp-link1"), goodput("tcp-link2"), goodput("mptcp"));
    // Single TCP reaches ~0.95 of an htb rate; allow for a busy CI machine.
    assert!(l1 > 14e6 && l1 < 20.5e6, "link 1: {l1}");
    assert!(l2 > 3.5e6 && l2 < 5.2e6, "link 2: {l2}");
    assert!(mp > l1 * 0.8, "mptcp {mp} vs best link {l1}");
    assert!(std::fs::read_to_string(out.join("report.md")).unwrap().contains("| mptcp |"));
    assert!(out.join("goodput-bulk-up.svg").exists());

    let id = Names::for_pid(std::process::id()).id;
    assert!(
        !stale::lab_namespaces().iter().any(|n| n.starts_with(&format!("{id}-"))),
        "namespaces left: {:?}",
        stale::lab_namespaces()
    );
    assert!(stale::pids_mentioning(&format!("{id}/")).is_empty(), "processes left");
    assert!(!Names::for_pid(std::process::id()).dir.exists(), "scratch dir left");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sweep_removes_a_stale_run() {
    if let Some(why) = common::skip_reason(&["ip", "sleep"]) {
        eprintln!("skipping: {why}");
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // A PID above the usual pid_max range cannot belong to a live process.
    let dead = 4_190_000 + std::process::id() % 4000;
    let names = Names::for_pid(dead);
    let ok = |args: &[&str]| {
        assert!(Command::new(args[0]).args(&args[1..]).status().unwrap().success(), "{args:?}")
    };
    ok(&["ip", "netns", "add", &names.cli]);
    std::fs::create_dir_all(&names.dir).unwrap();
    let mut inside = Command::new("ip").args(["netns", "exec", &names.cli, "sleep", "60"]).spawn().unwrap();
    // Stands for a wirefilter: a root-namespace process whose command line names the scratch
    // directory. The trailing `:` keeps the shell from exec-ing sleep (which would drop $0).
    let marker = names.dir.join("sock");
    let mut outside =
        Command::new("sh").args(["-c", "sleep 60; :", &marker.display().to_string()]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(200));

    let removed = stale::sweep().unwrap();
    assert!(removed.iter().any(|r| r.contains(&names.cli)), "{removed:?}");
    assert!(!stale::lab_namespaces().contains(&names.cli));
    assert!(!names.dir.exists());
    // Both processes were killed by the sweep; reap them.
    let a = inside.wait().unwrap();
    let b = outside.wait().unwrap();
    assert!(!a.success() && !b.success());
}

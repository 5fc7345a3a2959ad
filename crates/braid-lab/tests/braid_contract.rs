//! Root-only: runs the braid contender against `tests/fake-braid.py`, a test double that
//! checks the command-line contract (genkey/pubkey, server and client arguments) and forwards
//! the port with plain TCP. This exercises key generation, start-up, readiness checks, the
//! forward and the status snapshot before the real daemon exists; the double's figures are
//! only checked for being non-zero. Skipped when not root or when python3/iperf3 are missing.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

const SCENARIO: &str = r#"
name = "contract"
duration = "2s"
[[link]]
rate = "10mbit"
[[link]]
rate = "5mbit"
delay = "10ms"
[[workload]]
kind = "bulk"
direction = "both"
[contenders]
singles = false
braid = ["minrtt"]
"#;

#[test]
fn braid_contender_follows_the_cli_contract() {
    if let Some(why) = common::skip_reason(&["ip", "tc", "iperf3", "python3", "vde_switch", "wirefilter"]) {
        eprintln!("skipping: {why}");
        return;
    }
    let fake = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake-braid.py");
    let mut perm = std::fs::metadata(&fake).unwrap().permissions();
    perm.set_mode(0o755);
    std::fs::set_permissions(&fake, perm).unwrap();

    let common::Ran { dir, out } = common::run_scenario("contract", SCENARIO, Some(fake));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for w in ["bulk-up", "bulk-down"] {
        let row = summary["contenders"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "braid-minrtt" && r["workload"] == w)
            .unwrap_or_else(|| panic!("no braid row for {w}: {summary}"));
        assert_eq!(row["status"], "ok", "{row}");
        assert!(row["goodput_bps"].as_f64().unwrap() > 1e6, "{row}");
        // braid's figure is its sender's lost packets, which the double's status lacks (and
        // kernel TCP retransmits are not its figure).
        assert!(row["retransmits"].is_null());
        // The snapshot is the sending side's: the client uploads, the server downloads.
        let status = out.join(format!("raw/{w}/braid-minrtt-1-status.json"));
        let body = std::fs::read_to_string(&status).unwrap();
        if w == "bulk-up" {
            assert!(body.contains("\"scheduler\": \"minrtt\""), "{body}");
            assert!(body.contains("10.0.2.1"), "{body}");
        } else {
            assert!(body.contains("\"role\": \"server\""), "{body}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

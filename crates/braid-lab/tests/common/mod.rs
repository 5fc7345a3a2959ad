//! Helpers shared by the root-only integration tests.
//!
//! Each test binary uses a part of them.
#![allow(dead_code)]

/// Why a root-only test cannot run here (not root, or a tool missing), or `None`. Under
/// `CI=true` or `BRAID_ROOT_TESTS=1` a test that cannot run fails here instead of skipping.
pub fn skip_reason(tools: &[&str]) -> Option<String> {
    let why = why_not(tools)?;
    let must = std::env::var("CI").is_ok_and(|v| v == "true")
        || std::env::var("BRAID_ROOT_TESTS").is_ok_and(|v| v == "1");
    assert!(!must, "this root test must run here (CI or BRAID_ROOT_TESTS=1) but cannot: {why}");
    Some(why)
}

fn why_not(tools: &[&str]) -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("needs root (network namespaces)".into());
    }
    let missing: Vec<&str> =
        tools.iter().copied().filter(|t| braid_lab::sys::cmd::which(t).is_none()).collect();
    if !missing.is_empty() {
        return Some(format!("missing tools: {}", missing.join(", ")));
    }
    None
}

/// A finished `braid lab run` of `scenario` (TOML text) in a fresh scratch directory named
/// after `name` and this process.
pub struct Ran {
    /// The scratch directory (the caller removes it when done).
    pub dir: std::path::PathBuf,
    /// The run's `--out` directory, inside `dir`.
    pub out: std::path::PathBuf,
}

/// Writes `scenario` to a scratch directory and runs it quietly (with `braid` as the braid
/// binary when given); asserts the run's exit code is `EXIT_OK`.
pub fn run_scenario(name: &str, scenario: &str, braid: Option<std::path::PathBuf>) -> Ran {
    let dir = std::env::temp_dir().join(format!("braid-lab-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, scenario).unwrap();
    let out = dir.join("out");
    let code = braid_lab::run(braid_lab::LabArgs {
        command: braid_lab::LabCommand::Run(braid_lab::RunArgs {
            file,
            json: false,
            out: Some(out.clone()),
            contenders: None,
            workloads: None,
            duration: None,
            repeats: None,
            braid,
            agg_tunnel: None,
            quiet: true,
        }),
    })
    .expect("lab run");
    assert_eq!(code, braid_lab::EXIT_OK);
    Ran { dir, out }
}

/// A link of `rate_mbit` Mbit/s and `delay_ms` one way, 100 ms queue, no loss or cut.
pub fn link(rate_mbit: u64, delay_ms: u64) -> braid_lab::scenario::LinkSpec {
    braid_lab::scenario::LinkSpec::new(rate_mbit * 1_000_000, std::time::Duration::from_millis(delay_ms))
}

//! Short commands (ip, tc, nft, ethtool, sysctl, braid genkey) run to completion with a time
//! limit; output captured; failures reported with the command line and its stderr.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::proc::describe;

/// Default time limit for a configuration command.
pub const SHORT: Duration = Duration::from_secs(10);

/// What a finished command printed.
#[derive(Debug, Clone)]
pub struct Output {
    /// Exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    /// Captured standard output.
    pub stdout: String,
    /// Captured standard error.
    pub stderr: String,
}

impl Output {
    /// Whether the command exited with status 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// Runs `cmd` to completion (killing it after `limit`), feeding `input` on stdin. Does not
/// look at the interrupt flag: teardown runs commands after a signal too.
pub fn run_with(mut cmd: Command, input: Option<&str>, limit: Duration) -> Result<Output> {
    let line = describe(&cmd);
    cmd.stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().with_context(|| format!("cannot run `{line}`"))?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        // Inputs are small rule sets; a failed write shows up as the command's error.
        let _ = stdin.write_all(text.as_bytes());
    }
    let mut out_pipe = child.stdout.take().ok_or_else(|| anyhow!("no stdout pipe"))?;
    let mut err_pipe = child.stderr.take().ok_or_else(|| anyhow!("no stderr pipe"))?;
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out_pipe.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err_pipe.read_to_end(&mut s);
        s
    });
    let end = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let stdout = String::from_utf8_lossy(&out_reader.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    let Some(status) = status else {
        bail!("`{line}` did not finish within {}s", limit.as_secs_f64());
    };
    Ok(Output { code: status.code(), stdout, stderr })
}

/// Runs a command given as program and arguments; fails unless it exits 0.
pub fn run_ok(args: &[&str]) -> Result<String> {
    run_ok_input(args, None)
}

/// Like [`run_ok`], feeding `input` on stdin.
pub fn run_ok_input(args: &[&str], input: Option<&str>) -> Result<String> {
    let (program, rest) = args.split_first().ok_or_else(|| anyhow!("empty command"))?;
    let mut cmd = Command::new(program);
    cmd.args(rest);
    let out = run_with(cmd, input, SHORT)?;
    if !out.success() {
        bail!(
            "`{}` failed ({}): {}",
            args.join(" "),
            out.code.map(|c| format!("exit {c}")).unwrap_or_else(|| "killed".into()),
            out.stderr.trim()
        );
    }
    Ok(out.stdout)
}

/// Runs `program args…` inside network namespace `ns` via `ip netns exec`; fails unless it
/// exits 0.
pub fn in_ns(ns: &str, args: &[&str]) -> Result<String> {
    let mut full = vec!["ip", "netns", "exec", ns];
    full.extend_from_slice(args);
    run_ok(&full)
}

/// Like [`in_ns`], feeding `input` on stdin (e.g. `nft -f -`).
pub fn in_ns_input(ns: &str, args: &[&str], input: &str) -> Result<String> {
    let mut full = vec!["ip", "netns", "exec", ns];
    full.extend_from_slice(args);
    run_ok_input(&full, Some(input))
}

/// Finds `program` on PATH (or accepts it as a path); `None` when it is not executable.
pub fn which(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
    };
    if program.contains('/') {
        let p = std::path::PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|p| executable(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_output_and_status() {
        let out = run_ok(&["sh", "-c", "echo hi; echo err >&2"]).unwrap();
        assert_eq!(out.trim(), "hi");
        let e = run_ok(&["sh", "-c", "echo nope >&2; exit 3"]).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("exit 3") && msg.contains("nope"), "{msg}");
    }

    #[test]
    fn feeds_stdin() {
        let out = run_ok_input(&["cat"], Some("abc")).unwrap();
        assert_eq!(out, "abc");
    }

    #[test]
    fn kills_after_limit() {
        let mut cmd = Command::new("sleep");
        cmd.arg("5");
        let start = Instant::now();
        let e = run_with(cmd, None, Duration::from_millis(100)).unwrap_err();
        assert!(e.to_string().contains("did not finish"));
        assert!(start.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn finds_programs() {
        assert!(which("sh").is_some());
        assert!(which("no-such-program-braid").is_none());
    }
}

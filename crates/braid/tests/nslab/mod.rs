//! What every root namespace test needs: quiet commands, code run inside a namespace, and a
//! client's path list from its status document. Each namespace lab (`tunlab`, `sharelab`,
//! `hotplug.rs`) builds on these.
#![allow(dead_code)]

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};

/// Runs a command quietly; true when it succeeded.
pub fn sh(args: &[&str]) -> bool {
    Command::new(args[0])
        .args(&args[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs a command quietly; panics naming it when it fails.
pub fn must(args: &[&str]) {
    assert!(sh(args), "command failed: {}", args.join(" "));
}

/// Runs `f` on a thread inside network namespace `ns`.
pub fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let fd = File::open(&path).expect("namespace file");
        // SAFETY: setns on the current thread with a valid namespace descriptor.
        let r = unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns failed");
        f()
    })
}

/// The first session's paths in a status document: (link label, state).
pub fn paths_of(status: &serde_json::Value) -> Vec<(String, String)> {
    status["sessions"][0]["paths"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| {
                    (
                        p["link"].as_str().unwrap_or("").to_string(),
                        p["state"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A TCP source in `ns` on `addr` sending `total` bytes of 0x5a to its first connection.
pub fn source(ns: &str, addr: &str, total: usize) -> std::thread::JoinHandle<usize> {
    let addr = addr.to_string();
    in_netns(ns, move || {
        let l = std::net::TcpListener::bind(&addr).unwrap();
        let (mut conn, _) = l.accept().unwrap();
        let chunk = vec![0x5a_u8; 64 * 1024];
        let mut sent = 0usize;
        while sent < total {
            if std::io::Write::write_all(&mut conn, &chunk).is_err() {
                return sent;
            }
            sent += chunk.len();
        }
        sent
    })
}

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

/// How long a [`source`] waits for its connection before it gives up (sending nothing).
pub const SOURCE_ACCEPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// A TCP source in `ns` on `addr` sending `total` bytes of 0x5a to its first connection.
///
/// It listens before this returns: a reader started next would otherwise race the thread's
/// `setns` and `bind`, and under load lose (the server's connect refused, the source then
/// waiting in `accept` for ever). The wait for a connection is bounded by
/// [`SOURCE_ACCEPT_TIMEOUT`]; a source that saw none returns 0.
pub fn source(ns: &str, addr: &str, total: usize) -> std::thread::JoinHandle<usize> {
    let addr = addr.to_string();
    let (bound, ready) = std::sync::mpsc::channel();
    let handle = in_netns(ns, move || {
        let l = std::net::TcpListener::bind(&addr).unwrap();
        l.set_nonblocking(true).unwrap();
        bound.send(()).unwrap();
        let deadline = std::time::Instant::now() + SOURCE_ACCEPT_TIMEOUT;
        let mut conn = loop {
            match l.accept() {
                Ok((conn, _)) => break conn,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if std::time::Instant::now() > deadline {
                        eprintln!("source on {addr}: no connection within {SOURCE_ACCEPT_TIMEOUT:?}");
                        return 0;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => panic!("accept on {addr}: {e}"),
            }
        };
        conn.set_nonblocking(false).unwrap();
        let chunk = vec![0x5a_u8; 64 * 1024];
        let mut sent = 0usize;
        while sent < total {
            if std::io::Write::write_all(&mut conn, &chunk).is_err() {
                return sent;
            }
            sent += chunk.len();
        }
        sent
    });
    // An Err means the thread ended before listening (its bind panicked): join shows why.
    let _ = ready.recv();
    handle
}
